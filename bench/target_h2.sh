#!/usr/bin/env bash
# HTTP/2 in loadlab-target against nghttpd (nghttp2's own server, package nghttp2-server), with
# h2load as the client: h2c (prior knowledge) and h2 (TLS, ALPN), and loadlab's own HTTP/1.1
# path (h2load --h1, pipelining STREAMS deep) as a yardstick. Server pinned to one core, client
# to another (taskset); each run on a freshly started single-threaded server.
#
# A run: h2load -t1 -c CONNS (default 10) -m STREAMS (default 10) -D DURATION after a 1 s
# warm-up, on a body of BODY_SIZE bytes (default 19, the target's default body's size; nghttpd
# serves a file of that size, loadlab the same as its configured body, --body-size). Prints median
# req/s, median server CPU % (utime+stime from /proc/PID/stat; 100 = one core) and median server
# CPU per request (us: the steadier figure on a busy machine, where the client may set req/s).
#
# Env: BUILD_DIR (default <repo>/build), DURATION (5), RUNS (3), CONNS, STREAMS, BODY_SIZE,
# SERVER_CPU (0), CLIENT_CPU (1), SERVERS (default "loadlab-h2c nghttpd-h2c loadlab-h2
# nghttpd-h2 loadlab-h1").
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
DURATION=${DURATION:-5}
RUNS=${RUNS:-3}
CONNS=${CONNS:-10}
STREAMS=${STREAMS:-10}
BODY_SIZE=${BODY_SIZE:-19}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
HOST=127.0.0.1 # loopback only
read -r -a SERVERS <<<"${SERVERS:-loadlab-h2c nghttpd-h2c loadlab-h2 nghttpd-h2 loadlab-h1}"

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_setup target_h2

need_tools target_h2 h2load:nghttp2-client nghttpd:nghttp2-server openssl:openssl taskset:util-linux
TARGET=$BUILD_DIR/bin/loadlab-target
need_binaries target_h2 "$TARGET"
self_signed_pair "$WORK"
mkdir -p "$WORK/docroot"
head -c "$BODY_SIZE" /dev/zero | tr '\0' x >"$WORK/docroot/body"
CLK_TCK=$(getconf CLK_TCK)

# start_server NAME PORT -> sets SERVER_PID
start_server() {
  local name=$1 port=$2
  local tls=(--tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem")
  local target=("$TARGET" --listen "$HOST:$port" --threads 1 --body-size "$BODY_SIZE")
  case $name in
    loadlab-h2c | loadlab-h1) taskset -c "$SERVER_CPU" "${target[@]}" >"$WORK/server.out" 2>&1 & ;;
    loadlab-h2) taskset -c "$SERVER_CPU" "${target[@]}" "${tls[@]}" >"$WORK/server.out" 2>&1 & ;;
    nghttpd-h2c) taskset -c "$SERVER_CPU" nghttpd --no-tls -a "$HOST" -d "$WORK/docroot" "$port" >"$WORK/server.out" 2>&1 & ;;
    nghttpd-h2) taskset -c "$SERVER_CPU" nghttpd -a "$HOST" -d "$WORK/docroot" "$port" "$WORK/key.pem" "$WORK/cert.pem" >"$WORK/server.out" 2>&1 & ;;
  esac
  SERVER_PID=$!
  await_server "$name" "$port"
}

# h2load_run NAME URL SECONDS -> the client's output
h2load_run() {
  local name=$1 url=$2 seconds=$3
  local args=(-t 1 -c "$CONNS" -m "$STREAMS" -D "$seconds")
  [[ $name == loadlab-h1 ]] && args+=(--h1)
  taskset -c "$CLIENT_CPU" h2load "${args[@]}" "$url" 2>&1
}

# run_once NAME -> prints "qps cpu_pct"
run_once() {
  local name=$1 port scheme=http path=/
  [[ $name == *-h2 ]] && scheme=https
  [[ $name == nghttpd-* ]] && path=/body
  port=$(free_port)
  start_server "$name" "$port"
  local url="$scheme://$HOST:$port$path"
  h2load_run "$name" "$url" 1 >/dev/null # warm-up
  local t0 c0 t1 c1 out qps
  c0=$(cpu_ticks "$SERVER_PID")
  t0=$(date +%s.%N)
  out=$(h2load_run "$name" "$url" "$DURATION")
  t1=$(date +%s.%N)
  c1=$(cpu_ticks "$SERVER_PID")
  stop_server
  qps=$(sed -n 's/^finished in [^,]*, \([0-9.]*\) req\/s.*/\1/p' <<<"$out")
  if [[ -z $qps ]] || ! grep -q "^status codes: [0-9]* 2xx, 0 3xx, 0 4xx, 0 5xx" <<<"$out" ||
    grep -E "^requests:" <<<"$out" | awk '{ exit !($10 + $12 + $14 > 0) }'; then
    log "$name: the client reported errors:"
    echo "$out" >&2
  fi
  awk -v q="${qps:-0}" -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v hz="$CLK_TCK" \
    'BEGIN { printf "%.0f %.1f\n", q, 100 * (c1 - c0) / hz / (t1 - t0) }'
}

RESULTS=$WORK/results # lines: server run qps cpu us_per_request
: >"$RESULTS"
log "load average before: $(cut -d' ' -f1-3 /proc/loadavg); server on cpu $SERVER_CPU, client on cpu $CLIENT_CPU; ${DURATION}s x $RUNS runs"
for run in $(seq 1 "$RUNS"); do
  for name in "${SERVERS[@]}"; do
    read -r q cpu < <(run_once "$name")
    us=$(awk -v q="$q" -v cpu="$cpu" 'BEGIN { printf "%.2f", (q > 0 ? cpu * 10000 / q : 0) }')
    log "run $run $name: $q req/s, cpu $cpu %, $us us of server cpu per request"
    echo "$name $run $q $cpu $us" >>"$RESULTS"
  done
done

echo
echo "HTTP/2 on $HOST: h2load -t1 -c$CONNS -m$STREAMS, ${BODY_SIZE}-byte body, ${DURATION}s runs, median of $RUNS;"
echo "one server thread on cpu $SERVER_CPU, the client on cpu $CLIENT_CPU; us/req = server cpu per request."
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf "%-12s %10s %8s %8s\n" server "req/s" "cpu%" "us/req"
for name in "${SERVERS[@]}"; do
  q=$(awk -v n="$name" '$1 == n { print $3 }' "$RESULTS" | median)
  cpu=$(awk -v n="$name" '$1 == n { print $4 }' "$RESULTS" | median)
  us=$(awk -v n="$name" '$1 == n { print $5 }' "$RESULTS" | median)
  printf "%-12s %10.0f %8.1f %8.2f\n" "$name" "$q" "$cpu" "$us"
done
