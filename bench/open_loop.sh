#!/usr/bin/env bash
# open_loop.sh: how close to the closed-loop maximum loadlab-load's open loop (--rate) holds
# its rate, and what it costs per request.
#
# Measures the closed-loop maximum (same threads, connections, target and cores), then asks
# for 10 %, 20 % ... 100 % of it and prints, per step: requested and achieved rate, whether
# it was held within 1 %, the client's CPU per request (user + system, /usr/bin/time) and its
# ratio to the closed loop's, and the corrected p50/p99. Last line: the highest rate held
# within 1 % (every lower step held too) as a fraction of the closed-loop maximum. wrk
# (closed loop) runs beside it as the peer: its req/s and CPU per request on the same target
# and cores.
#
# Environment:
#   BUILD_DIR  build tree with bin/loadlab-load and bin/loadlab-target (default: build)
#   DURATION   seconds per run (default 3)
#   THREADS    load threads (default 1); CONNS connections (default 10)
#   STEPS      percentages of the closed-loop maximum (default "10 20 30 40 50 60 70 80 85 90 95 100")
#   PIN        1 (default on 2+ cores): target on core 0, client on core 1 (taskset)
#   SAME_RATE  connection counts c (e.g. "1 2 3 4 5"; default none): after the steps, a closed
#              loop of c connections, then the open loop of CONNS connections asked for the
#              rate it reached, and the ratio of their CPU per request
#
# Only 127.0.0.1 is ever loaded. Installs wrk and time with apt-get when missing and root.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$here/build}
DURATION=${DURATION:-3}
THREADS=${THREADS:-1}
CONNS=${CONNS:-10}
STEPS=${STEPS:-"10 20 30 40 50 60 70 80 85 90 95 100"}
SAME_RATE=${SAME_RATE:-}
PIN=${PIN:-$([ "$(nproc)" -ge 2 ] && echo 1 || echo 0)}
target_pin=(); client_pin=()
if [ "$PIN" = 1 ]; then target_pin=(taskset -c 0); client_pin=(taskset -c 1); fi

load=$BUILD_DIR/bin/loadlab-load
target_bin=$BUILD_DIR/bin/loadlab-target
for b in "$load" "$target_bin"; do
  [[ -x $b ]] || { echo "open_loop: $b not found; build it or set BUILD_DIR" >&2; exit 2; }
done
need=()
command -v wrk >/dev/null || need+=(wrk)
command -v jq >/dev/null || need+=(jq)
[[ -x /usr/bin/time ]] || need+=(time)
if ((${#need[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "open_loop: missing ${need[*]}; run: sudo apt-get install -y ${need[*]}" >&2; exit 2
  fi
fi

work=$(mktemp -d)
target_pid=""
cleanup() {
  if [[ -n $target_pid ]]; then
    kill "$target_pid" 2>/dev/null || true
    wait "$target_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"${target_pin[@]}" "$target_bin" --listen 127.0.0.1:0 --threads 1 >"$work/target.out" 2>"$work/target.err" &
target_pid=$!
port=""
for _ in $(seq 50); do
  port=$(sed -n '1s/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/target.out")
  [[ -n $port ]] && break
  sleep 0.1
done
[[ -n $port ]] || { echo "open_loop: target did not start: $(cat "$work/target.err")" >&2; exit 1; }
url="http://127.0.0.1:$port/"

# load CONNECTIONS [--rate R] -> "qps achieved held requests cpu_s p50 p99" of one loadlab-load run
load() {
  local conns=$1
  shift
  /usr/bin/time -o "$work/time" -f '%U %S' "${client_pin[@]}" "$load" "$url" -t "$THREADS" -c "$conns" \
    -d "$DURATION" --json "$@" >"$work/out" 2>/dev/null || true
  local cpu
  cpu=$(awk '{print $1 + $2}' "$work/time" | tail -1)
  # The JSON is the protocol's LoadResult (proto3 JSON: 64-bit counts are strings).
  jq -r --arg cpu "$cpu" '[.qps, (if .rate > 0 then .achieved_rate else .qps end),
       (.rate_not_held | not), (.requests | tonumber), $cpu,
       .latency.p50_us, .latency.p99_us] | map(tostring) | join(" ")' "$work/out"
}

echo "target: loadlab-target --threads 1 $([ "$PIN" = 1 ] && echo 'on core 0, client on core 1'); $THREADS thread(s), $CONNS connections, ${DURATION}s a run"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# The closed-loop maximum: the median of three runs (a one-core target's capacity moves by
# several per cent from run to run on a VM).
for i in 1 2 3; do load "$CONNS"; done | sort -g -k1,1 | sed -n 2p >"$work/closed"
read -r max _ _ max_requests max_cpu _ _ <"$work/closed"
closed_cost=$(awk -v c="$max_cpu" -v n="$max_requests" 'BEGIN{printf "%.2f", c * 1e6 / n}')
/usr/bin/time -o "$work/wtime" -f '%U %S' "${client_pin[@]}" wrk -t "$THREADS" -c "$CONNS" -d "${DURATION}s" "$url" >"$work/wrk" 2>/dev/null || true
wrk_rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$work/wrk")
wrk_cost=$(awk -v r="$wrk_rps" -v d="$DURATION" '{printf "%.2f", ($1 + $2) * 1e6 / (r * d)}' "$work/wtime" | tail -1)
printf 'closed loop (median of 3): loadlab-load %.0f req/s, %s us CPU/request; wrk %.0f req/s, %s us CPU/request\n' \
  "$max" "$closed_cost" "$wrk_rps" "$wrk_cost"
printf '%5s %10s %10s %8s %5s %11s %9s %8s %8s\n' "step" "requested" "achieved" "ach/req" "held" "us CPU/req" "x closed" "p50 us" "p99 us"
best=0
failed=0
for pct in $STEPS; do
  rate=$(awk -v m="$max" -v p="$pct" 'BEGIN{printf "%.0f", m * p / 100}')
  read -r qps achieved held requests cpu p50 p99 < <(load "$CONNS" --rate "$rate")
  cost=$(awk -v c="$cpu" -v n="$requests" 'BEGIN{printf "%.2f", (n > 0) ? c * 1e6 / n : 0}')
  within=$(awk -v a="$achieved" -v r="$rate" 'BEGIN{print (a >= 0.99 * r) ? "yes" : "no"}')
  if [[ $within == yes && $failed == 0 ]]; then best=$rate; else failed=1; fi
  printf '%4s%% %10s %10.0f %8.3f %5s %11s %9.2f %8s %8s\n' "$pct" "$rate" "$achieved" \
    "$(awk -v a="$achieved" -v r="$rate" 'BEGIN{print a / r}')" "$within" "$cost" \
    "$(awk -v c="$cost" -v k="$closed_cost" 'BEGIN{print c / k}')" "$p50" "$p99"
done
if [[ -n $SAME_RATE ]]; then
  # The open loop against a closed loop at the same rate: a closed loop of c connections runs
  # at whatever rate the target gives it; the open loop (CONNS connections) is asked for that.
  echo "same rate: closed loop of c connections, then the open loop of $CONNS connections at its rate"
  printf '%4s %10s %11s %11s %8s %12s %12s\n' "c" "req/s" "closed us" "open us" "open/cl" "closed p50" "open p50"
  for c in $SAME_RATE; do
    read -r cq _ _ creq ccpu cp50 _ < <(load "$c")
    crate=$(awk -v q="$cq" 'BEGIN{printf "%.0f", q}')
    read -r _ _ _ oreq ocpu op50 _ < <(load "$CONNS" --rate "$crate")
    awk -v c="$c" -v r="$crate" -v cc="$ccpu" -v cn="$creq" -v oc="$ocpu" -v on="$oreq" -v cp="$cp50" -v op="$op50" \
      'BEGIN{a = cc * 1e6 / cn; b = oc * 1e6 / on; printf "%4s %10s %11.2f %11.2f %8.2f %12s %12s\n", c, r, a, b, b / a, cp, op}'
  done
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v b="$best" -v m="$max" 'BEGIN{printf "highest rate held within 1%%: %.0f req/s = %.2f of the closed-loop maximum\n", b, b / m}'
