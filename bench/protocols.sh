#!/usr/bin/env bash
# protocols.sh: loadlab-load against h2load on the same loadlab-target, protocol by protocol:
# HTTPS/1.1 (h2load --h1), h2 (HTTP/2 over TLS, ALPN) and h2c (HTTP/2 with prior knowledge).
# Runs alternate (loadlab, h2load, loadlab, ...) so drift in the machine hits both tools alike.
#
# Prints per protocol and tool: median req/s and median requests per CPU-second of the load
# generator (user + system time from /usr/bin/time), and the ratios to h2load.
#
# The target runs on the last core, the clients on core 0 (taskset), so each side's cost is
# its own: with PIN=1 and one server thread the target may be what limits req/s; the
# requests per CPU-second of the client are then the comparison that says which client is
# cheaper.
#
# Environment:
#   BUILD_DIR      build tree with bin/loadlab-load and bin/loadlab-target (default: build)
#   DURATION       seconds per run (integer, default 5)
#   RUNS           runs per tool and protocol (default 3)
#   CONNS          connections (default 10)
#   STREAMS        HTTP/2 streams in flight per connection (h2load -m; default 10)
#   PROTOCOLS      "https h2 h2c" (default all three)
#   SERVER_THREADS the target's io threads (default 1)
#   PIN            1 (default): the target on the last core, the clients on core 0
#
# Only 127.0.0.1 is ever loaded.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
source "$here/bench/lib.sh"
common_knobs protocols
CONNS=${CONNS:-10}
STREAMS=${STREAMS:-10}
PROTOCOLS=${PROTOCOLS:-"https h2 h2c"}
SERVER_THREADS=${SERVER_THREADS:-1}
pin_sides 1
load=$BUILD_DIR/bin/loadlab-load
target=$BUILD_DIR/bin/loadlab-target
need_binaries protocols "$load" "$target"
for p in $PROTOCOLS; do
  [[ $p == https || $p == h2 || $p == h2c ]] || { echo "protocols: PROTOCOLS: $p is not https, h2 or h2c" >&2; exit 2; }
done
need_tools protocols h2load:nghttp2-client /usr/bin/time:time

work_dir
HOST=127.0.0.1
tls_port=$(free_port)
plain_port=$(free_port)
# Two targets, each alone on the server core in turn: one over TLS (https and h2 by ALPN),
# one plain (h2c by prior knowledge). Only the one a run needs is up.
start_target() {  # start_target tls|plain
  local flags=(--listen "$HOST:$plain_port")
  [[ $1 == tls ]] && flags=(--listen "$HOST:$tls_port" --tls)
  "${server_pin[@]}" "$target" --threads "$SERVER_THREADS" "${flags[@]}" >"$work/server.out" 2>&1 &
  server_pid=$!
  local url
  url=$(url_of "$([[ $1 == tls ]] && echo https || echo h2c)")
  for _ in $(seq 50); do
    "$load" "$url" -n 1 "${tls_flags[@]}" "${proto_flags[@]}" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "protocols: the target did not answer on $url: $(cat "$work/server.out")" >&2
  exit 1
}
url_of() {
  case $1 in
    https | h2) echo "https://127.0.0.1:$tls_port/" ;;
    h2c) echo "http://127.0.0.1:$plain_port/" ;;
  esac
}

# run TOOL PROTOCOL -> appends "tool protocol reqps cpu_s" to $work/results
run() {
  local tool=$1 p=$2 out=$work/out time=$work/time reqps url
  url=$(url_of "$p")
  local timed=(/usr/bin/time -o "$time" -f '%U %S %e' "${client_pin[@]}")
  case $tool/$p in
    loadlab/https) "${timed[@]}" "$load" "$url" -c "$CONNS" -d "$DURATION" --insecure >"$out" 2>&1 & ;;
    loadlab/*) "${timed[@]}" "$load" "$url" --protocol h2 --streams "$STREAMS" -c "$CONNS" -d "$DURATION" \
      "${tls_flags[@]}" >"$out" 2>&1 & ;;
    h2load/https) "${timed[@]}" h2load --h1 -c "$CONNS" -D "$DURATION" "$url" >"$out" 2>&1 & ;;
    h2load/*) "${timed[@]}" h2load -c "$CONNS" -m "$STREAMS" -D "$DURATION" "$url" >"$out" 2>&1 & ;;
  esac
  client_pid=$!
  wait_client
  reqps=$(rate_of "$tool" "$out")
  [[ -n $reqps ]] || { echo "protocols: $tool $p gave no rate:" >&2; cat "$out" >&2; return; }
  local cpu errors
  cpu=$(cpu_of "$time")
  errors=$(grep -E '^  Errors:|^requests:|^Application protocol:' "$out" | tr -s ' ' | tr '\n' ' ' || true)
  echo "$tool $p $reqps $cpu" >>"$work/results"
  printf '  %-8s %-6s %10.0f req/s  cpu %5.2f s  %s\n' "$tool" "$p" "$reqps" "$cpu" "$errors" >&2
}

: >"$work/results"
echo "target: $SERVER_THREADS thread(s) (pinned: $PIN); $CONNS connections, $STREAMS streams; ${DURATION}s x $RUNS runs" >&2
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for p in $PROTOCOLS; do
  proto_flags=() tls_flags=(--insecure)  # the target's own certificate: h2load does not verify either
  [[ $p != https ]] && proto_flags=(--protocol h2)
  [[ $p == h2c ]] && tls_flags=()
  start_target "$([[ $p == h2c ]] && echo plain || echo tls)"
  for r in $(seq "$RUNS"); do
    for tool in loadlab h2load; do run "$tool" "$p"; done
  done
  stop_pid "$server_pid"
  server_pid=""
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

awk "$AWK_MEDIAN"'
{
  key = $1 SUBSEP $2
  rate[key] = rate[key] " " $3
  eff[key] = eff[key] " " ($4 > 0 ? $3 * '"$DURATION"' / $4 : 0)
  runs[key]++
  if (!($2 in seen)) { seen[$2] = 1; protos[++np] = $2 }
}
END {
  printf "%-8s %-8s %5s %12s %14s %10s %10s\n", "protocol", "tool", "runs", "req/s", "req/CPU-s", "x h2load", "x h2l eff"
  for (pi = 1; pi <= np; pi++) {
    p = protos[pi]
    hk = "h2load" SUBSEP p
    hr = (hk in runs) ? median(rate[hk]) : 0; he = (hk in runs) ? median(eff[hk]) : 0
    split("loadlab h2load", tl, " ")
    for (ti = 1; ti <= 2; ti++) {
      k = tl[ti] SUBSEP p
      if (!(k in runs)) continue
      r = median(rate[k]); e = median(eff[k])
      printf "%-8s %-8s %5d %12.0f %14.0f %10.2f %10.2f\n", p, tl[ti], runs[k], r, e, hr ? r / hr : 0, he ? e / he : 0
    }
  }
}' "$work/results"
