#!/usr/bin/env bash
# Memory of loadlab-target and loadlab-load against their peers, side by side in one run
# (issue 26). Every process's memory is polled from /proc/PID/status every 50 ms while it works:
# peak VmRSS, and at that peak RssAnon (its own memory) and RssFile (mapped files: its shared
# libraries). Servers run on SERVER_CPU (default 0), clients on CLIENT_CPU (default 1),
# taskset; one server thread (GOMAXPROCS=1), one client thread; each run on a fresh process,
# servers (or clients) alternating run by run; medians of RUNS (default 3) runs.
#
#   server  loadlab-target against fasthttp and Go net/http over HTTP/1.1 at CONNS (default
#           "10 100") connections of wrk for DURATION s (default 3), and against Go net/http over
#           HTTPS (wrk over TLS); then IDLE (default "1000 10000") idle keep-alive connections
#           (each has had one request answered): the server's memory per connection, (RSS with
#           them - RSS idle) / N; and IDLE_TLS (default 1000) over TLS, against Go net/http.
#   client  loadlab-load against wrk over HTTP/1.1 at CLIENT_CONNS (default "10 100 1000"), and
#           against h2load over HTTPS (HTTP/1.1) and over h2 (TLS, ALPN) at 10 and 100, all
#           against one loadlab-target (plain or --tls) for DURATION s.
#
#   bench/footprint.sh [server|client|all]        (default all)
#
# Env: BUILD_DIR (default <repo>/build), RUNS, DURATION, CONNS, IDLE, IDLE_TLS, CLIENT_CONNS, SERVER_CPU,
# CLIENT_CPU, PEER_DIR (where the Go peers are built; default a temp dir). Needs wrk, h2load,
# golang-go and golang-github-valyala-fasthttp-dev (installed when missing, as root).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
RUNS=${RUNS:-3}
DURATION=${DURATION:-3}
CONNS=${CONNS:-10 100}
IDLE=${IDLE:-1000 10000}
IDLE_TLS=${IDLE_TLS:-1000}
CLIENT_CONNS=${CLIENT_CONNS:-10 100 1000}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
HOST=127.0.0.1
PART=${1:-all}
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_setup footprint
case $PART in server | client | all) ;; *) sed -n '2,22p' "$0" >&2; exit 2 ;; esac

need_pkgs=()
command -v wrk >/dev/null || need_pkgs+=(wrk)
command -v h2load >/dev/null || need_pkgs+=(nghttp2-client)
command -v go >/dev/null || need_pkgs+=(golang-go)
[[ -d /usr/share/gocode/src/github.com/valyala/fasthttp ]] || need_pkgs+=(golang-github-valyala-fasthttp-dev)
if ((${#need_pkgs[@]})); then
  [[ $(id -u) -eq 0 ]] || { echo "missing packages; run: sudo apt-get install -y ${need_pkgs[*]}" >&2; exit 1; }
  log "installing ${need_pkgs[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
BIN=$BUILD_DIR/bin
for b in loadlab-target loadlab-target-secure loadlab-load; do
  [[ -x $BIN/$b ]] || { echo "footprint.sh: $BIN/$b not found; build it first" >&2; exit 1; }
done
PEER_DIR=${PEER_DIR:-$WORK/peers}
mkdir -p "$PEER_DIR"
export GOCACHE=${GOCACHE:-$WORK/gocache}
GO111MODULE=off GOPATH=/usr/share/gocode go build -o "$PEER_DIR/fasthttp" "$ROOT/bench/peers/fasthttp/main.go"
GO111MODULE=off go build -o "$PEER_DIR/gohttp" "$ROOT/bench/peers/gohttp/main.go"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

# mem_poll PID OUT: until PID exits or OUT.stop appears, the peak VmRSS and RssAnon/RssFile at
# that peak, in kB, into OUT ("rss anon file").
mem_poll() {
  local pid=$1 out=$2 peak=0 anon=0 file=0 rss a f
  while kill -0 "$pid" 2>/dev/null && [[ ! -e $out.stop ]]; do
    read -r rss a f < <(awk '/^VmRSS:/ {r=$2} /^RssAnon:/ {a=$2} /^RssFile:/ {f=$2} END {print r+0, a+0, f+0}' \
      "/proc/$pid/status" 2>/dev/null || echo "0 0 0")
    if ((rss > peak)); then peak=$rss anon=$a file=$f; fi
    sleep 0.05
  done
  echo "$peak $anon $file" >"$out"
}

# start_server NAME PORT (sets SERVER_PID): loadlab, loadlab-tls, fasthttp, gohttp, gohttp-tls.
start_server() {
  local name=$1 port=$2
  case $name in
    loadlab) taskset -c "$SERVER_CPU" "$BIN/loadlab-target" --listen "$HOST:$port" --threads 1 >"$WORK/server.out" 2>&1 & ;;
    loadlab-tls)
      taskset -c "$SERVER_CPU" "$BIN/loadlab-target" --listen "$HOST:$port" --threads 1 --tls-cert "$WORK/cert.pem" \
        --tls-key "$WORK/key.pem" >"$WORK/server.out" 2>&1 &
      ;;
    fasthttp | gohttp)
      GOMAXPROCS=1 taskset -c "$SERVER_CPU" "$PEER_DIR/$name" -addr "$HOST:$port" >"$WORK/server.out" 2>&1 &
      ;;
    gohttp-tls)
      GOMAXPROCS=1 taskset -c "$SERVER_CPU" "$PEER_DIR/gohttp" -addr "$HOST:$port" -tls-cert "$WORK/cert.pem" \
        -tls-key "$WORK/key.pem" >"$WORK/server.out" 2>&1 &
      ;;
  esac
  SERVER_PID=$!
  await_server "$name" "$port"
}

# server_loaded NAME CONNS: the server's memory under wrk -c CONNS for DURATION s.
server_loaded() {
  local name=$1 conns=$2 port scheme=http poller
  port=$(free_port)
  start_server "$name" "$port"
  [[ $name == *-tls ]] && scheme=https
  mem_poll "$SERVER_PID" "$WORK/mem" &
  poller=$!
  taskset -c "$CLIENT_CPU" wrk -t 1 -c "$conns" -d "${DURATION}s" "$scheme://$HOST:$port/" >"$WORK/wrk.out" 2>&1 || true
  touch "$WORK/mem.stop"
  wait "$poller"
  rm -f "$WORK/mem.stop"
  stop_server
  cat "$WORK/mem"
}

# idle_conns PORT N SECONDS [tls]: N keep-alive connections (over TLS: each handshaken), one
# request answered on each, then held SECONDS; prints "ready" when they are all answered.
IDLE_CLIENT='
import selectors, socket, ssl, sys, time
port, n, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
tls = len(sys.argv) > 4 and sys.argv[4] == "tls"
ctx = ssl.create_default_context()
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
sel, socks, left = selectors.DefaultSelector(), [], 0
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    if tls:
        s = ctx.wrap_socket(s)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
    socks.append(s)
left, deadline = n, time.time() + 60
while left and time.time() < deadline:
    for key, _ in sel.select(1):
        try:
            got = key.fileobj.recv(65536)
        except ssl.SSLWantReadError:  # a TLS record not yet whole (or a session ticket)
            continue
        if got:
            sel.unregister(key.fileobj)
            left -= 1
print("ready" if not left else f"only {n - left} of {n} answered", flush=True)
time.sleep(hold)
'

# server_idle NAME N: the server's RSS idle, then with N idle connections (kB, VmRSS and RssAnon).
server_idle() {
  local name=$1 n=$2 port before after
  port=$(free_port)
  start_server "$name" "$port"
  sleep 0.3
  before=$(awk '/^VmRSS:/ {r=$2} /^RssAnon:/ {a=$2} END {print r, a}' "/proc/$SERVER_PID/status")
  local mode=plain
  [[ $name == *-tls ]] && mode=tls
  taskset -c "$CLIENT_CPU" python3 -c "$IDLE_CLIENT" "$port" "$n" 3 "$mode" >"$WORK/idle.out" 2>&1 &
  local client=$!
  PIDS+=("$client")
  for _ in $(seq 600); do grep -q . "$WORK/idle.out" && break; sleep 0.1; done
  sleep 0.5
  after=$(awk '/^VmRSS:/ {r=$2} /^RssAnon:/ {a=$2} END {print r, a}' "/proc/$SERVER_PID/status")
  grep -q ready "$WORK/idle.out" || log "$name: $(cat "$WORK/idle.out")"
  stop_pid "$client"
  stop_server
  echo "$before $after"
}

# client_run NAME CONNS SERVER: a client's memory against a fresh loadlab-target (plain, or
# --tls for https); NAME: loadlab, wrk, loadlab-https, h2load-https, loadlab-h2, h2load-h2.
client_run() {
  local name=$1 conns=$2 port server=loadlab
  [[ $name == *https || $name == *h2 ]] && server=loadlab-tls
  port=$(free_port)
  start_server "$server" "$port"
  local url="http://$HOST:$port/" surl="https://$HOST:$port/"
  local -a cmd
  case $name in
    loadlab) cmd=("$BIN/loadlab-load" -t 1 -c "$conns" -d "$DURATION" "$url") ;;
    wrk) cmd=(wrk -t 1 -c "$conns" -d "${DURATION}s" "$url") ;;
    loadlab-https) cmd=("$BIN/loadlab-load" -t 1 -c "$conns" -d "$DURATION" --insecure "$surl") ;;
    h2load-https) cmd=(h2load --h1 -t 1 -c "$conns" -D "$DURATION" "$surl") ;;
    loadlab-h2) cmd=("$BIN/loadlab-load" -t 1 -c "$conns" -d "$DURATION" --insecure --protocol h2 "$surl") ;;
    h2load-h2) cmd=(h2load -t 1 -c "$conns" -D "$DURATION" "$surl") ;;
  esac
  taskset -c "$CLIENT_CPU" "${cmd[@]}" >"$WORK/client.out" 2>&1 &
  local client=$!
  PIDS+=("$client")
  mem_poll "$client" "$WORK/mem"
  wait "$client" || log "$name -c $conns: exit $? ($(tail -1 "$WORK/client.out"))"
  stop_server
  cat "$WORK/mem"
}

RESULTS=$WORK/results # lines: case name run rss anon file (kB)
: >"$RESULTS"
log "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; ${DURATION}s x $RUNS runs"
for run in $(seq "$RUNS"); do
  if [[ $PART != client ]]; then
    for c in $CONNS; do
      for s in loadlab fasthttp gohttp; do echo "target-h1-c$c $s $run $(server_loaded "$s" "$c")" >>"$RESULTS"; done
    done
    for s in loadlab-tls gohttp-tls; do echo "target-https-c100 $s $run $(server_loaded "$s" 100)" >>"$RESULTS"; done
    for n in $IDLE; do
      for s in loadlab fasthttp; do
        read -r b_rss b_anon a_rss a_anon < <(server_idle "$s" "$n")
        echo "target-idle-$n $s $run $(((a_rss - b_rss) * 1000 / n)) $(((a_anon - b_anon) * 1000 / n)) 0" >>"$RESULTS"
      done
    done
    for n in $IDLE_TLS; do
      for s in loadlab-tls gohttp-tls; do
        read -r b_rss b_anon a_rss a_anon < <(server_idle "$s" "$n")
        echo "target-idle-tls-$n $s $run $(((a_rss - b_rss) * 1000 / n)) $(((a_anon - b_anon) * 1000 / n)) 0" >>"$RESULTS"
      done
    done
  fi
  if [[ $PART != server ]]; then
    for c in $CLIENT_CONNS; do
      for s in loadlab wrk; do echo "load-h1-c$c $s $run $(client_run "$s" "$c")" >>"$RESULTS"; done
    done
    for c in 10 100; do
      for s in loadlab-https h2load-https loadlab-h2 h2load-h2; do
        echo "load-${s#*-}-c$c ${s%%-*} $run $(client_run "$s" "$c")" >>"$RESULTS"
      done
    done
  fi
  log "run $run of $RUNS done"
done

# Medians per case and program, and each against its case's peer (fasthttp, gohttp, wrk, h2load).
awk "$AWK_MEDIAN"'
{ k = $1 " " $2; rss[k] = rss[k] " " $4; anon[k] = anon[k] " " $5; file[k] = file[k] " " $6
  if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
END {
  printf "%-12s %-10s %12s %12s %12s %10s\n", "case", "program", "peak RSS kB", "own (anon)", "files", "RSS/peer"
  for (i = 1; i <= n; i++) {
    split(order[i], p, " "); c = p[1]; m = median(rss[order[i]]); peer = ""
    for (j = 1; j <= n; j++) { split(order[j], q, " "); if (q[1] == c && q[2] ~ /^(fasthttp|gohttp-tls|wrk|h2load)$/) peer = q[2] }
    ratio = peer != "" && peer != p[2] ? sprintf("%.2f", m / median(rss[c " " peer])) : "-"
    if (c ~ /idle/) printf "%-12s %-10s %12s %12s %12s %10s   (bytes per connection)\n", c, p[2], m, median(anon[order[i]]), "-", ratio
    else printf "%-12s %-10s %12s %12s %12s %10s\n", c, p[2], m, median(anon[order[i]]), median(file[order[i]]), ratio
  }
}' "$RESULTS"
