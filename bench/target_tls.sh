#!/usr/bin/env bash
# The cost of TLS in loadlab-target: plain HTTP vs HTTPS on the same server, and HTTPS against
# Go net/http, each server pinned to one core and the client to another (taskset).
#
# Cases, RUNS runs each (default 3) of DURATION seconds (default 5), servers alternating, each
# run on a freshly started single-threaded server (--threads 1; GOMAXPROCS=1 for Go):
#   keepalive  h2load --h1 -c CONNS (default 10) -t 1 -D DURATION, after a 1 s warm-up:
#              requests on open connections (TLS = record encryption only)
#   close      wrk -t1 -c CONNS with "Connection: close": a TCP connection, a TLS handshake and
#              a request each. wrk resumes each connection's previous session when it
#              reconnects, so over TLS these are mostly resumed handshakes (TLS 1.3 PSK with
#              ECDHE); loadlab-tls's stats line (tls_handshakes, tls_resumed) shows how many.
# Servers: loadlab (plain), loadlab-tls, gohttp-tls (Go net/http ListenAndServeTLS), and
# loadlab-base (plain, the binary BASE_TARGET: a build from before a change, to check that the
# plain path kept its speed); the HTTPS servers share one ECDSA P-256 certificate made by
# openssl(1). Prints median req/s, median server CPU % (utime+stime from /proc/PID/stat; 100 =
# one core), median server CPU per request (us: the steadier figure on a busy machine, where
# the client rather than the server may set the req/s), and both relative to plain loadlab.
#
# Env: BUILD_DIR (default <repo>/build), DURATION, RUNS, CONNS, SERVER_CPU (default 0),
# CLIENT_CPU (default 1), SERVERS (default "loadlab loadlab-tls gohttp-tls"), CASES (default
# "keepalive close"), PEER_DIR (where the Go peer is built; default a temp dir), BASE_TARGET.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
DURATION=${DURATION:-5}
RUNS=${RUNS:-3}
CONNS=${CONNS:-10}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
HOST=127.0.0.1 # loopback only
read -r -a SERVERS <<<"${SERVERS:-loadlab loadlab-tls gohttp-tls}"
read -r -a CASES <<<"${CASES:-keepalive close}"

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# --- every process we start is recorded and killed by pid on exit --------------------------
bench_setup target_tls

# --- tools ---------------------------------------------------------------------------------
need_tools target_tls h2load:nghttp2-client wrk:wrk openssl:openssl taskset:util-linux
TARGET=$BUILD_DIR/bin/loadlab-target
need_binaries target_tls "$TARGET"
if [[ " ${SERVERS[*]} " == *" loadlab-base "* && ! -x ${BASE_TARGET:-} ]]; then
  echo "loadlab-base needs BASE_TARGET, an executable loadlab-target" >&2
  exit 1
fi
if [[ " ${SERVERS[*]} " == *" gohttp-tls "* ]]; then
  command -v go >/dev/null || { echo "missing go (apt-get install golang-go), or SERVERS without gohttp-tls" >&2; exit 1; }
  PEER_DIR=${PEER_DIR:-$WORK/peers}
  mkdir -p "$PEER_DIR"
  export GOCACHE=${GOCACHE:-$WORK/gocache}
  log "building the Go peer in $PEER_DIR"
  GO111MODULE=off go build -o "$PEER_DIR/gohttp" "$ROOT/bench/peers/gohttp/main.go"
fi
self_signed_pair "$WORK"

# --- one run -------------------------------------------------------------------------------
CLK_TCK=$(getconf CLK_TCK)

# start_server NAME PORT -> sets SERVER_PID
start_server() {
  local name=$1 port=$2
  case $name in
    loadlab) taskset -c "$SERVER_CPU" "$TARGET" --listen "$HOST:$port" --threads 1 >"$WORK/server.out" 2>&1 & ;;
    loadlab-base) taskset -c "$SERVER_CPU" "$BASE_TARGET" --listen "$HOST:$port" --threads 1 >"$WORK/server.out" 2>&1 & ;;
    loadlab-tls)
      taskset -c "$SERVER_CPU" "$TARGET" --listen "$HOST:$port" --threads 1 \
        --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem" >"$WORK/server.out" 2>&1 &
      ;;
    gohttp-tls)
      GOMAXPROCS=1 taskset -c "$SERVER_CPU" "$PEER_DIR/gohttp" -addr "$HOST:$port" \
        -tls-cert "$WORK/cert.pem" -tls-key "$WORK/key.pem" >"$WORK/server.out" 2>&1 &
      ;;
  esac
  SERVER_PID=$!
  await_server "$name" "$port"
}

# client CASE URL SECONDS -> prints the client's output
client() {
  local case=$1 url=$2 seconds=$3
  case $case in
    keepalive) taskset -c "$CLIENT_CPU" h2load --h1 -t 1 -c "$CONNS" -D "$seconds" "$url" 2>&1 ;;
    close) taskset -c "$CLIENT_CPU" wrk -t 1 -c "$CONNS" -d "${seconds}s" -H "Connection: close" "$url" 2>&1 ;;
  esac
}

qps_of() {
  case $1 in
    keepalive) awk '/^finished in/ { gsub(",", "", $4); print $4 }' ;;
    close) awk '/^Requests\/sec:/ { print $2 }' ;;
  esac
}

errors_in() {
  case $1 in
    keepalive) { grep -E "^requests:" || true; } | awk '{ if ($10 + $12 + $14 > 0) print }' ;; # failed, errored, timeout
    close) grep -E "Non-2xx|Socket errors" || true ;;
  esac
}

# run_once CASE NAME -> prints "qps cpu_pct"
run_once() {
  local case=$1 name=$2 port scheme=https
  [[ $name == loadlab || $name == loadlab-base ]] && scheme=http
  port=$(free_port)
  start_server "$name" "$port"
  local url="$scheme://$HOST:$port/"
  client "$case" "$url" 1 >/dev/null # warm-up
  local t0 c0 t1 c1 out qps
  c0=$(cpu_ticks "$SERVER_PID")
  t0=$(date +%s.%N)
  out=$(client "$case" "$url" "$DURATION")
  t1=$(date +%s.%N)
  c1=$(cpu_ticks "$SERVER_PID")
  if [[ $name == loadlab-tls ]]; then
    log "$name stats: $(curl -sk "${url}__loadlab/stats" 2>/dev/null || echo '?')"
  fi
  stop_server
  qps=$(qps_of "$case" <<<"$out")
  local errors
  errors=$(errors_in "$case" <<<"$out")
  if [[ -z $qps || -n $errors ]]; then
    log "$name/$case: the client reported errors:"
    echo "$out" >&2
  fi
  awk -v q="${qps:-0}" -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v hz="$CLK_TCK" \
    'BEGIN { printf "%.0f %.1f\n", q, 100 * (c1 - c0) / hz / (t1 - t0) }'
}

# --- the matrix ----------------------------------------------------------------------------
RESULTS=$WORK/results # lines: case server run qps cpu us_per_request
: >"$RESULTS"
log "load average before: $(cut -d' ' -f1-3 /proc/loadavg); server on cpu $SERVER_CPU, client on cpu $CLIENT_CPU; ${DURATION}s x $RUNS runs"
for run in $(seq 1 "$RUNS"); do
  for case in "${CASES[@]}"; do
    for name in "${SERVERS[@]}"; do
      read -r q cpu < <(run_once "$case" "$name")
      us=$(awk -v q="$q" -v cpu="$cpu" 'BEGIN { printf "%.2f", (q > 0 ? cpu * 10000 / q : 0) }')
      log "run $run $case $name: $q req/s, cpu $cpu %, $us us of server cpu per request"
      echo "$case $name $run $q $cpu $us" >>"$RESULTS"
    done
  done
done

echo
echo "TLS cost on $HOST: ${DURATION}s runs, median of $RUNS; one server thread on cpu $SERVER_CPU, the client on cpu $CLIENT_CPU;"
echo "keepalive = h2load --h1 -t1 -c$CONNS; close = wrk -t1 -c$CONNS, Connection: close (a handshake per request)."
echo "cpu% = server utime+stime over the run (100 = one core); us/req = server cpu per request."
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf "%-10s %-12s %10s %8s %8s %10s %10s\n" case server "req/s" "cpu%" "us/req" "req/plain" "us/plain"
for case in "${CASES[@]}"; do
  pq=$(awk -v k="$case" '$1 == k && $2 == "loadlab" { print $4 }' "$RESULTS" | median)
  pu=$(awk -v k="$case" '$1 == k && $2 == "loadlab" { print $6 }' "$RESULTS" | median)
  for name in "${SERVERS[@]}"; do
    q=$(awk -v k="$case" -v n="$name" '$1 == k && $2 == n { print $4 }' "$RESULTS" | median)
    cpu=$(awk -v k="$case" -v n="$name" '$1 == k && $2 == n { print $5 }' "$RESULTS" | median)
    us=$(awk -v k="$case" -v n="$name" '$1 == k && $2 == n { print $6 }' "$RESULTS" | median)
    awk -v c="$case" -v n="$name" -v q="$q" -v cpu="$cpu" -v us="$us" -v pq="${pq:-0}" -v pu="${pu:-0}" \
      'BEGIN { printf "%-10s %-12s %10.0f %8.1f %8.2f %10.2f %10.2f\n", c, n, q, cpu, us, (pq > 0 ? q / pq : 0), (pu > 0 ? us / pu : 0) }'
  done
done
