#!/usr/bin/env bash
# h3.sh: HTTP/3 over QUIC, each built-in program against ngtcp2's own example peer (Debian's
# ngtcp2-server and ngtcp2-client, the same ngtcp2 0.12 and GnuTLS underneath). Debian's
# h2load is built without QUIC, so it cannot be the HTTP/3 peer.
#
#   server: loadlab-target --h3 against gtlsserver (serving a file of the target's body),
#           loadlab-load --protocol h3 as the client of both: req/s and the server's CPU
#           time per request (from /proc/PID/stat over the run).
#   client: loadlab-load --protocol h3 against gtlsclient, both sending N requests on one
#           connection to gtlsserver: req/s and requests per CPU-second of the client (user +
#           system from /usr/bin/time). gtlsclient opens every stream the server allows at once
#           (gtlsserver allows 100); loadlab-load keeps CLIENT_STREAMS in flight (default 100).
# Runs alternate (loadlab, peer, loadlab, ...) so drift in the machine hits both alike. The
# server runs on the last core, the clients on core 0 (taskset).
#
# Environment:
#   BUILD_DIR       build tree with bin/loadlab-load and bin/loadlab-target (default: build)
#   DURATION        seconds per server run (integer, default 5)
#   RUNS            runs per tool (default 3)
#   CONNS, STREAMS  the server comparison's client: connections and streams each (10, 10)
#   REQUESTS        the client comparison: requests on its one connection (default 100000)
#   CLIENT_STREAMS  loadlab-load's streams in the client comparison (default 100)
#   PIN             1 (default): the server on the last core, the clients on core 0
#
# Only 127.0.0.1 is ever loaded.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
source "$here/bench/lib.sh"
common_knobs h3
CONNS=${CONNS:-10}
STREAMS=${STREAMS:-10}
REQUESTS=${REQUESTS:-100000}
CLIENT_STREAMS=${CLIENT_STREAMS:-100}
pin_sides 1
load=$BUILD_DIR/bin/loadlab-load
target=$BUILD_DIR/bin/loadlab-target
need_binaries h3 "$load" "$target"
need_tools h3 /usr/sbin/gtlsserver:ngtcp2-server /usr/bin/gtlsclient:ngtcp2-client /usr/bin/time:time

work_dir
self_signed_pair "$work"
mkdir -p "$work/htdocs"
body="Have Fun ~ Tester !"  # loadlab-target's default body
printf '%s' "$body" >"$work/htdocs/index.html"
port=$(free_port)
url="https://127.0.0.1:$port/"

start_server() {  # start_server loadlab|gtlsserver
  case $1 in
    loadlab) "${server_pin[@]}" "$target" --threads 1 --h3 --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" \
      --listen "127.0.0.1:$port" >"$work/server.out" 2>&1 & ;;
    gtlsserver) "${server_pin[@]}" gtlsserver -q -d "$work/htdocs" 127.0.0.1 "$port" "$work/key.pem" \
      "$work/cert.pem" >"$work/server.out" 2>&1 & ;;
  esac
  server_pid=$!
  for _ in $(seq 50); do
    "$load" "$url" --protocol h3 --insecure -n 1 --timeout 500 2>/dev/null | grep -q '200=1' && return 0
    sleep 0.1
  done
  echo "h3: $1 did not answer on $url: $(cat "$work/server.out")" >&2
  exit 1
}

: >"$work/results"
echo "server comparison: $CONNS connections x $STREAMS streams, ${DURATION}s x $RUNS runs; client comparison: $REQUESTS requests on 1 connection" >&2
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq "$RUNS"); do
  for server in loadlab gtlsserver; do
    start_server "$server"
    before=$(cpu_ticks "$server_pid")
    "${client_pin[@]}" "$load" "$url" --protocol h3 --insecure -c "$CONNS" --streams "$STREAMS" -d "$DURATION" \
      >"$work/out" 2>&1 || true
    after=$(cpu_ticks "$server_pid")
    stop_pid "$server_pid"
    server_pid=""
    reqps=$(rate_of loadlab "$work/out")
    [[ -n $reqps ]] || { echo "h3: no rate against $server:" >&2; cat "$work/out" >&2; continue; }
    cpu=$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" 'BEGIN { print t / hz }')
    echo "server $server $reqps $cpu" >>"$work/results"
    printf '  server %-10s %10.0f req/s  server cpu %5.2f s  %s\n' "$server" "$reqps" "$cpu" \
      "$(grep -E '^  (Errors|Status):' "$work/out" | tr -s ' ' | tr '\n' ' ')" >&2
  done
done

start_server gtlsserver
for r in $(seq "$RUNS"); do
  for tool in loadlab gtlsclient; do
    start=$(date +%s.%N)
    case $tool in
      loadlab) /usr/bin/time -o "$work/time" -f '%U %S %e' "${client_pin[@]}" "$load" "$url" --protocol h3 \
        --insecure -c 1 --streams "$CLIENT_STREAMS" --total "$REQUESTS" >"$work/out" 2>&1 || true ;;
      gtlsclient) /usr/bin/time -o "$work/time" -f '%U %S %e' "${client_pin[@]}" gtlsclient -q \
        --exit-on-all-streams-close -n "$REQUESTS" --timeout 60s 127.0.0.1 "$port" "$url" >"$work/out" 2>&1 || true ;;
    esac
    wall=$(awk '{ print $3 }' "$work/time")
    cpu=$(cpu_of "$work/time")
    reqps=$(awk -v n="$REQUESTS" -v w="$wall" 'BEGIN { print (w > 0 ? n / w : 0) }')
    echo "client $tool $reqps $cpu" >>"$work/results"
    printf '  client %-10s %10.0f req/s  client cpu %5.2f s\n' "$tool" "$reqps" "$cpu" >&2
  done
done
stop_pid "$server_pid"
server_pid=""
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

awk -v duration="$DURATION" -v requests="$REQUESTS" "$AWK_MEDIAN"'
{
  k = $1 SUBSEP $2
  rate[k] = rate[k] " " $3
  # server: CPU microseconds per request; client: requests per CPU-second
  per[k] = per[k] " " ($1 == "server" ? ($3 > 0 ? $4 * 1e6 / ($3 * duration) : 0) : ($4 > 0 ? requests / $4 : 0))
  runs[k]++
}
END {
  printf "%-7s %-11s %5s %12s %16s %10s %10s\n", "side", "tool", "runs", "req/s", "cost", "x peer", "x peer cost"
  split("server loadlab gtlsserver client loadlab gtlsclient", t, " ")
  for (i = 1; i <= 6; i += 3) {
    side = t[i]; ours = side SUBSEP t[i + 1]; peer = side SUBSEP t[i + 2]
    if (!(ours in runs) || !(peer in runs)) continue
    pr = median(rate[peer]); pc = median(per[peer])
    for (j = 1; j <= 2; j++) {
      k = side SUBSEP t[i + j]
      r = median(rate[k]); c = median(per[k])
      # server cost: lower is better, so the ratio is peer / ours; client: higher is better
      if (side == "server") x = c > 0 ? pc / c : 0
      else x = pc > 0 ? c / pc : 0
      unit = side == "server" ? "us/r" : "r/cs"
      printf "%-7s %-11s %5d %12.0f %11.2f %s %10.2f %10.2f\n", side, t[i + j], runs[k], r, c, unit,
        (pr > 0 ? r / pr : 0), x
    }
  }
}' "$work/results"
