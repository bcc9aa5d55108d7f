#!/usr/bin/env bash
# loadlab-target against fasthttp and Go net/http, driven by wrk on 127.0.0.1.
#
# For each server thread count (THREADS, default "1 2": GOMAXPROCS=T for the Go servers,
# --threads T for loadlab-target) and connection count (CONNS, default "10 100"), RUNS runs
# (default 3) of DURATION seconds (default 10), servers alternating run by run, each run on a
# freshly started server. Then a delay case: DELAY_MS (default 10) at DELAY_CONNS (default 100)
# connections. Prints median req/s, median server CPU % (utime+stime from /proc/PID/stat over
# the wrk run; 100 = one core), median peak RSS (VmHWM) and ratios against fasthttp.
#
# Env: BUILD_DIR (default <repo>/build), DURATION, RUNS, THREADS, CONNS, WRK_THREADS (default
# 2), DELAY_MS, DELAY_CONNS, SERVERS (default "loadlab fasthttp gohttp"), TARGET_ARGS (extra
# loadlab-target flags), PEER_DIR (where the Go peers are built; default a temp dir).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
DURATION=${DURATION:-10}
RUNS=${RUNS:-3}
THREADS=${THREADS:-"1 2"}
CONNS=${CONNS:-"10 100"}
WRK_THREADS=${WRK_THREADS:-2}
TARGET_ARGS=${TARGET_ARGS:-} # extra loadlab-target flags, e.g. "--acceptor reuseport"
DELAY_MS=${DELAY_MS:-10}
DELAY_CONNS=${DELAY_CONNS:-100}
HOST=127.0.0.1 # loopback only
read -r -a SERVERS <<<"${SERVERS:-loadlab fasthttp gohttp}"

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# --- every process we start is recorded and killed by pid on exit --------------------------
bench_setup target_vs_peers

# --- tools ---------------------------------------------------------------------------------
need_pkgs=()
command -v go >/dev/null || need_pkgs+=(golang-go)
command -v wrk >/dev/null || need_pkgs+=(wrk)
[[ -d /usr/share/gocode/src/github.com/valyala/fasthttp ]] || need_pkgs+=(golang-github-valyala-fasthttp-dev)
if ((${#need_pkgs[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    log "installing ${need_pkgs[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
  else
    echo "missing packages; run: sudo apt-get install -y ${need_pkgs[*]}" >&2
    exit 1
  fi
fi

TARGET=$BUILD_DIR/bin/loadlab-target
if [[ ! -x $TARGET ]]; then
  log "building loadlab-target in $BUILD_DIR"
  [[ -f $BUILD_DIR/build.ninja || -f $BUILD_DIR/Makefile ]] ||
    cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" --target loadlab-target >/dev/null
fi

PEER_DIR=${PEER_DIR:-$WORK/peers}
mkdir -p "$PEER_DIR"
export GOCACHE=${GOCACHE:-$WORK/gocache}
log "building Go peers in $PEER_DIR"
# fasthttp from Debian's package: GOPATH mode, sources under /usr/share/gocode/src.
GO111MODULE=off GOPATH=/usr/share/gocode go build -o "$PEER_DIR/fasthttp" "$ROOT/bench/peers/fasthttp/main.go"
GO111MODULE=off go build -o "$PEER_DIR/gohttp" "$ROOT/bench/peers/gohttp/main.go"

# --- one run -------------------------------------------------------------------------------
CLK_TCK=$(getconf CLK_TCK)

# start_server NAME THREADS DELAY_MS PORT -> sets SERVER_PID
start_server() {
  local name=$1 threads=$2 delay=$3 port=$4
  case $name in
    loadlab)
      "$TARGET" --listen "$HOST:$port" --threads "$threads" --delay-ms "$delay" $TARGET_ARGS >"$WORK/server.out" 2>&1 &
      ;;
    fasthttp | gohttp)
      GOMAXPROCS=$threads "$PEER_DIR/$name" -addr "$HOST:$port" -delay-ms "$delay" >"$WORK/server.out" 2>&1 &
      ;;
  esac
  SERVER_PID=$!
  await_server "$name" "$port"
}

# run_once NAME THREADS CONNS DELAY -> prints "qps cpu_pct rss_mb"
run_once() {
  local name=$1 threads=$2 conns=$3 delay=$4 port attempt
  for attempt in 1 2 3; do
    port=$(free_port)
    start_server "$name" "$threads" "$delay" "$port" && break
    stop_server
    ((attempt < 3)) || return 1
  done
  local wt=$WRK_THREADS
  ((wt > conns)) && wt=$conns
  # Short warm-up so every server has its connections and buffers before the window.
  wrk -t "$wt" -c "$conns" -d 1s "http://$HOST:$port/test/fun" >/dev/null 2>&1
  local t0 c0 t1 c1 out qps
  c0=$(cpu_ticks "$SERVER_PID")
  t0=$(date +%s.%N)
  out=$(wrk -t "$wt" -c "$conns" -d "${DURATION}s" "http://$HOST:$port/test/fun" 2>&1)
  t1=$(date +%s.%N)
  c1=$(cpu_ticks "$SERVER_PID")
  local rss
  rss=$(vmhwm_kb "$SERVER_PID")
  stop_server
  qps=$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")
  if [[ -z $qps ]] || grep -q "Non-2xx\|Socket errors" <<<"$out"; then
    log "$name: wrk reported errors:"
    echo "$out" >&2
  fi
  awk -v q="${qps:-0}" -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v hz="$CLK_TCK" -v rss="$rss" \
    'BEGIN { printf "%.0f %.1f %.1f\n", q, 100 * (c1 - c0) / hz / (t1 - t0), rss / 1024 }'
}

# --- the matrix ----------------------------------------------------------------------------
RESULTS=$WORK/results # lines: case name run qps cpu rss
: >"$RESULTS"
CASES=()
for t in $THREADS; do
  for c in $CONNS; do CASES+=("$t:$c:0"); done
  CASES+=("$t:$DELAY_CONNS:$DELAY_MS")
done

log "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; wrk -t$WRK_THREADS; ${DURATION}s x $RUNS runs"
for run in $(seq 1 "$RUNS"); do
  for case in "${CASES[@]}"; do
    IFS=: read -r t c d <<<"$case"
    for name in "${SERVERS[@]}"; do
      read -r q cpu rss < <(run_once "$name" "$t" "$c" "$d")
      log "run $run threads $t conns $c delay ${d}ms $name: $q req/s, cpu $cpu %, rss $rss MB"
      echo "$case $name $run $q $cpu $rss" >>"$RESULTS"
    done
  done
done

echo
echo "loadlab-target vs peers on $HOST: ${DURATION}s runs, median of $RUNS, servers alternating;"
echo "every server gets the same thread count (GOMAXPROCS=T for Go, --threads T for loadlab-target);"
echo "wrk -t$WRK_THREADS on the same $(nproc)-core machine. cpu% = server utime+stime over the run (100 = one core)."
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf "%-8s %-6s %-6s %-9s %10s %8s %8s %10s %10s\n" threads conns delay server "req/s" "cpu%" "RSS MB" "req/s/fh" "RSS/fh"
for case in "${CASES[@]}"; do
  IFS=: read -r t c d <<<"$case"
  fq=$(awk -v k="$case" -v n=fasthttp '$1 == k && $2 == n { print $4 }' "$RESULTS" | median)
  fr=$(awk -v k="$case" -v n=fasthttp '$1 == k && $2 == n { print $6 }' "$RESULTS" | median)
  for name in "${SERVERS[@]}"; do
    q=$(awk -v k="$case" -v n="$name" '$1 == k && $2 == n { print $4 }' "$RESULTS" | median)
    cpu=$(awk -v k="$case" -v n="$name" '$1 == k && $2 == n { print $5 }' "$RESULTS" | median)
    rss=$(awk -v k="$case" -v n="$name" '$1 == k && $2 == n { print $6 }' "$RESULTS" | median)
    awk -v t="$t" -v c="$c" -v d="${d}ms" -v n="$name" -v q="$q" -v cpu="$cpu" -v rss="$rss" -v fq="$fq" -v fr="$fr" \
      'BEGIN { printf "%-8s %-6s %-6s %-9s %10.0f %8.1f %8.1f %10.2f %10.2f\n", t, c, d, n, q, cpu, rss, (fq > 0 ? q / fq : 0), (fr > 0 ? rss / fr : 0) }'
  done
done
if ((DELAY_MS > 0)); then
  echo
  echo "delay case: ${DELAY_CONNS} connections at ${DELAY_MS} ms can do at most $((DELAY_CONNS * 1000 / DELAY_MS)) req/s (closed loop)."
fi
