#!/usr/bin/env bash
# open_loop_peers.sh: loadlab-load's open loop (--rate) against wrk2 (-R) and h2load (--rps) at
# the same rates, on one loadlab-target thread: the clients' CPU per request, the evenness of
# their sends, and (MODES=instructions) their instructions per request under callgrind.
#
#   WRK2=/path/to/wrk2 bench/open_loop_peers.sh
#
# wrk2 is not packaged in Debian: build it from its public source (github.com/giltene/wrk2,
# `make`) outside the project and give its binary as WRK2; without it its rows are left out.
# h2load comes from Debian's nghttp2-client (installed when missing and root).
#
#   MODES ("cpu gaps")     cpu: user + system CPU of each client a request (/usr/bin/time), the
#                          clients alternating, RUNS rounds, the target on CPU 0 and the client
#                          on CPU 1; gaps: the sends' spacing on the loopback (tcpdump's
#                          timestamps of the requests' packets), each client once;
#                          instructions: callgrind, (I(3 D) - I(D)) / (requests(3 D) - requests(D)),
#                          target and client on CPU ${CG_CPU:-0}, at CG_RATES
#   RATES ("10000")        req/s; and FRACTIONS ("50 90"): % of wrk's closed-loop maximum
#   CONNS ("2 50")         connections (one thread each client)
#   GRANULARITIES ("0 250 1000")  loadlab-load --pace-granularity values, µs
#   DURATION (5)  RUNS (3)  CG_RATES ("1000")  CG_DURATION (2)
#
# Only 127.0.0.1 is ever loaded; every process is killed by pid at exit.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
BIN=${BIN:-$HERE/../build/bin}
MODES=${MODES:-cpu gaps}
RATES=${RATES:-10000}
FRACTIONS=${FRACTIONS:-50 90}
CONNS=${CONNS:-2 50}
GRANULARITIES=${GRANULARITIES:-0 250 1000}
DURATION=${DURATION:-5}
RUNS=${RUNS:-3}
CG_RATES=${CG_RATES:-1000}
CG_DURATION=${CG_DURATION:-2}
CG_CPU=${CG_CPU:-0}
WRK2=${WRK2:-}
need=()
command -v wrk >/dev/null || need+=(wrk)
command -v h2load >/dev/null || need+=(nghttp2-client)
command -v tcpdump >/dev/null || need+=(tcpdump)
[[ -x /usr/bin/time ]] || need+=(time)
if ((${#need[@]})); then
  [[ $(id -u) -eq 0 ]] || { echo "open_loop_peers: missing ${need[*]}; apt-get install them" >&2; exit 2; }
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
[[ -z $WRK2 || -x $WRK2 ]] || { echo "open_loop_peers: WRK2=$WRK2 is not an executable" >&2; exit 2; }
bench_setup loadlab-open-loop-peers

# start_target CPU: one loadlab-target thread on CPU; sets PORT.
start_target() {
  taskset -c "$1" "$BIN/loadlab-target" --listen 127.0.0.1:0 --threads 1 >"$WORK/target.out" 2>&1 &
  PIDS+=($!)
  TARGET=$!
  PORT=""
  for _ in $(seq 100); do
    PORT=$(sed -n '1s/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$WORK/target.out")
    [[ -n $PORT ]] && break
    sleep 0.1
  done
  [[ -n $PORT ]] || { echo "open_loop_peers: the target did not start" >&2; exit 1; }
}

# client NAME RATE CONNS SECONDS: the command line of one client run (NAME: loadlab-G, wrk2, h2load).
client() {
  local name=$1 rate=$2 c=$3 d=$4 url="http://127.0.0.1:$PORT/"
  case $name in
    loadlab-*) echo "$BIN/loadlab-load $url -t 1 -c $c -d $d --rate $rate --pace-granularity ${name#loadlab-}" ;;
    wrk2) echo "$WRK2 -t 1 -c $c -d ${d}s -R $rate --latency $url" ;;
    h2load) echo "h2load --h1 -t 1 -c $c -D $d --rps $(awk -v r="$rate" -v c="$c" 'BEGIN{printf "%g", r / c}') $url" ;;
  esac
}

# requests NAME OUTPUT: the requests a client's output says it made.
requests() {
  case $1 in
    loadlab-*) sed -n 's/^ *\([0-9]*\) requests in .*/\1/p' "$2" | head -1 ;;
    wrk2) sed -n 's/^ *\([0-9]*\) requests in .*/\1/p' "$2" | head -1 ;;
    h2load) sed -n 's/^requests: [0-9]* total, [0-9]* started, \([0-9]*\) done.*/\1/p' "$2" ;;
  esac
}

clients() {
  for g in $GRANULARITIES; do echo "loadlab-$g"; done
  [[ -n $WRK2 ]] && echo wrk2
  echo h2load
}

# The corrected p50 and p99 a client printed, µs ("- -" for h2load, which prints none).
latency() {
  local p50 p99
  case $1 in
    loadlab-*) read -r p50 p99 < <(sed -n 's/^ *Latency *p50 \([^ ]*\) *p90 [^ ]* *p99 \([^ ]*\).*/\1 \2/p' "$2") ;;
    wrk2) p50=$(awk '$1 == "50.000%" { print $2 }' "$2"); p99=$(awk '$1 == "99.000%" { print $2 }' "$2") ;;
    *) echo "- -"; return ;;
  esac
  for v in "$p50" "$p99"; do
    awk -v v="$v" 'BEGIN { u = 1; if (v ~ /us$/) u = 1; else if (v ~ /ms$/) u = 1000; else if (v ~ /s$/) u = 1e6
                           sub(/[a-z]+$/, "", v); printf "%.0f ", v * u }'
  done
  echo
}

# cpu_run NAME RATE CONNS: "requests cpu_us_per_request p50_us p99_us" of one pinned run.
cpu_run() {
  # shellcheck disable=SC2046
  /usr/bin/time -o "$WORK/time" -f '%U %S' taskset -c 1 $(client "$1" "$2" "$3" "$DURATION") >"$WORK/out" 2>&1 || true
  local n; n=$(requests "$1" "$WORK/out")
  echo "$(awk -v n="${n:-0}" '{ if (n > 0) printf "%d %.2f\n", n, ($1 + $2) * 1e6 / n; else print "0 nan" }' "$WORK/time" | tail -1) $(latency "$1" "$WORK/out")"
}

closed_max() {  # wrk's closed-loop req/s with CONNS, client on CPU 1
  taskset -c 1 wrk -t 1 -c "$1" -d "${DURATION}s" "http://127.0.0.1:$PORT/" | sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p'
}

mode_cpu() {
  start_target 0
  echo "CPU per request (µs, user + system), median of $RUNS alternating rounds; target on CPU 0, client on CPU 1, ${DURATION}s runs"
  printf '%-6s %8s %-14s %9s %10s %10s %8s %8s\n' conns rate client "req/s" "µs CPU/req" "range" "p50 µs" "p99 µs"
  for c in $CONNS; do
    local max rates; max=$(closed_max "$c")
    rates="$RATES $(for f in $FRACTIONS; do awk -v m="$max" -v f="$f" 'BEGIN{printf "%.0f ", m * f / 100}'; done)"
    echo "# $c connections: wrk's closed loop $max req/s; rates $rates"
    for rate in $rates; do
      for _ in $(seq "$RUNS"); do
        for name in $(clients); do echo "$name $(cpu_run "$name" "$rate" "$c")" >>"$WORK/cpu.$c.$rate"; done
      done
      for name in $(clients); do
        # The run of median CPU, with its latency.
        awk -v name="$name" '$1 == name { print $3, $2, $4, $5 }' "$WORK/cpu.$c.$rate" | sort -g |
          awk -v name="$name" -v c="$c" -v rate="$rate" -v d="$DURATION" '{ v[NR] = $1; n[NR] = $2; p[NR] = $3; q[NR] = $4 }
            END { m = int((NR + 1) / 2); printf "%-6s %8s %-14s %9.0f %10.2f %4.2f-%-5.2f %8s %8s\n", c, rate, name,
                  n[m] / d, v[m], v[1], v[NR], p[m], q[m] }'
      done
    done
  done
  kill "$TARGET"; wait "$TARGET" 2>/dev/null || true
}

# The sends' spacing: tcpdump's timestamps of the client's request packets to the target.
mode_gaps() {
  start_target 0
  echo "Send spacing on the loopback (gaps between request packets, µs), ${DURATION}s runs, one each"
  printf '%-6s %8s %-14s %8s %8s %8s %8s %8s %6s %s\n' conns rate client mean p10 p50 p90 p99 cv "max in 1 ms"
  for c in $CONNS; do
    for rate in $RATES; do
      for name in $(clients); do
        taskset -c 0 tcpdump -i lo -nn -tt --time-stamp-precision=nano -w "$WORK/cap" \
          "tcp dst port $PORT and (tcp[tcpflags] & tcp-push != 0)" 2>/dev/null &
        local dump=$!
        PIDS+=("$dump")
        sleep 1
        # shellcheck disable=SC2046
        taskset -c 1 $(client "$name" "$rate" "$c" "$DURATION") >/dev/null 2>&1 || true
        sleep 0.5
        kill -INT "$dump"; wait "$dump" 2>/dev/null || true
        tcpdump -r "$WORK/cap" -nn -tt --time-stamp-precision=nano 2>/dev/null | awk '{ print $1 }' |
          python3 "$HERE/send_gaps.py" "$c" "$rate" "$name"
      done
    done
  done
  kill "$TARGET"; wait "$TARGET" 2>/dev/null || true
}

# One callgrind count of a client run of SECONDS: "instructions requests".
cg_run() {
  local out=$WORK/cg.$RANDOM
  # shellcheck disable=SC2046
  taskset -c "$CG_CPU" valgrind --tool=callgrind --callgrind-out-file="$out" \
    $(client "$1" "$2" "$3" "$4") >"$WORK/out" 2>"$WORK/cg.err" || true
  echo "$(sed -n 's/^summary: *\([0-9]*\).*/\1/p;s/^totals: *\([0-9]*\).*/\1/p' "$out" | tail -1) $(requests "$1" "$WORK/out")"
}

mode_instructions() {
  start_target "$CG_CPU"
  echo "Instructions per request under callgrind: (I(3 D) - I(D)) / (requests(3 D) - requests(D)), D = ${CG_DURATION}s"
  printf '%-6s %8s %-14s %12s\n' conns rate client "instr/req"
  for c in $CONNS; do
    for rate in $CG_RATES; do
      for name in $(clients); do
        read -r i1 n1 < <(cg_run "$name" "$rate" "$c" "$CG_DURATION")
        read -r i2 n2 < <(cg_run "$name" "$rate" "$c" "$((3 * CG_DURATION))")
        awk -v a="$i1" -v b="$i2" -v m="$n1" -v n="$n2" -v c="$c" -v r="$rate" -v name="$name" \
          'BEGIN{printf "%-6s %8s %-14s %12.0f   (%d and %d requests)\n", c, r, name, (b - a) / (n - m), m, n}'
      done
    done
  done
  kill "$TARGET"; wait "$TARGET" 2>/dev/null || true
}

echo "open_loop_peers: $(date -u +%FT%TZ), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in $MODES; do "mode_$mode"; done
