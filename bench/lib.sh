# Sourced by the bench scripts: process bookkeeping, ports, CPU counters, knobs and medians.
# The first part serves the server comparisons (target_vs_peers.sh, target_tls.sh; expects
# HOST), the second the client comparisons (loadgen_vs_wrk.sh, load_tls.sh).

log() { echo "[bench] $*" >&2; }

# Every process a script starts goes into PIDS and is killed by pid on exit, with WORK, the
# script's temporary folder (made here, named after PREFIX).
bench_setup() {
  PIDS=()
  WORK=$(mktemp -d "/tmp/$1.XXXXXX")
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}
bench_cleanup() {
  for pid in "${PIDS[@]:-}"; do
    [[ -n "$pid" ]] && kill -KILL "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]:-}"; do
    [[ -n "$pid" ]] && wait "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
}

port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

free_port() {
  local port
  while true; do
    # Below the kernel's ephemeral range, so the clients' own ports never collide with it.
    port=$((10000 + RANDOM % 20000))
    port_open "$port" || { echo "$port"; return; }
  done
}

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
vmhwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }

# await_server NAME PORT: after `SERVER_PID=$!`, records it and waits until PORT accepts;
# fails (printing $WORK/server.out) when the server dies or 10 s pass.
await_server() {
  local name=$1 port=$2
  PIDS+=("$SERVER_PID")
  for _ in $(seq 1 200); do
    port_open "$port" && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.05
  done
  echo "server $name did not come up on $port:" >&2
  cat "$WORK/server.out" >&2
  return 1
}

stop_server() {
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  for _ in $(seq 1 40); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.05
  done
  kill -KILL "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# ---- client comparisons ----

# stop_pid PID: SIGTERM, up to 5 s to go, then SIGKILL; reaps it. Nothing if PID is empty.
stop_pid() {
  local pid=$1
  [[ -n $pid ]] || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# An awk function for the summaries: median(" 3 1 2") = 2 (a space-separated list).
AWK_MEDIAN='
function median(list,   n, a, i, j, t) {
  n = split(list, a, " ")
  for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}'

# common_knobs NAME: the knobs of every comparison script, with their defaults and checks
# (NAME prefixes the messages): BUILD_DIR (default $here/build), DURATION seconds per run
# (an integer, default 5), RUNS per case (default 3). Exits 2 on a bad value.
common_knobs() {
  local name=$1
  BUILD_DIR=${BUILD_DIR:-$here/build}
  DURATION=${DURATION:-5}
  RUNS=${RUNS:-3}
  [[ $DURATION =~ ^[0-9]+$ && $DURATION -ge 1 ]] || { echo "$name: DURATION must be an integer >= 1" >&2; exit 2; }
  [[ $RUNS =~ ^[0-9]+$ && $RUNS -ge 1 ]] || { echo "$name: RUNS must be an integer >= 1" >&2; exit 2; }
}

# pin_sides DEFAULT: the PIN knob (DEFAULT when unset). PIN=1: "${server_pin[@]}" runs a
# command on the last core and "${client_pin[@]}" on core 0 (taskset), so each side's cost is
# its own and no tool's scheduling luck decides where the other side's threads run.
pin_sides() {
  PIN=${PIN:-$1}
  server_pin=(); client_pin=()
  if [ "$PIN" = 1 ]; then
    server_pin=(taskset -c "$(($(nproc) - 1))"); client_pin=(taskset -c 0)
  fi
}

# need_binaries NAME PATH...: exits 2 unless every PATH (a build output) is executable.
need_binaries() {
  local name=$1 b
  shift
  for b in "$@"; do
    [[ -x $b ]] || { echo "$name: $b not found; build it or set BUILD_DIR" >&2; exit 2; }
  done
}

# need_tools NAME TOOL:PACKAGE...: exits 2, naming the Debian packages to install, unless
# every TOOL (a command, or an absolute path) is there.
need_tools() {
  local name=$1 pair missing=() packages=()
  shift
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null || { missing+=("${pair%%:*}"); packages+=("${pair#*:}"); }
  done
  [[ ${#missing[@]} == 0 ]] ||
    { echo "$name: ${missing[*]} missing (apt-get install -y ${packages[*]})" >&2; exit 2; }
}

# self_signed_pair DIR: DIR/key.pem and DIR/cert.pem, an EC P-256 pair for one day, valid
# for localhost and 127.0.0.1 (the servers' certificate in the TLS comparisons).
self_signed_pair() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$1/key.pem" -out "$1/cert.pem" 2>/dev/null
}

# work_dir: makes $work (a temp folder) and, on exit, stops $client_pid and $server_pid
# (set them when starting those) and removes $work.
work_dir() {
  work=$(mktemp -d)
  server_pid=""
  client_pid=""
  trap '[[ -n $client_pid ]] && kill "$client_pid" 2>/dev/null && wait "$client_pid" 2>/dev/null; stop_pid "$server_pid"; rm -rf "$work"' EXIT
  trap 'exit 130' INT TERM
}

# wait_client: waits for the load tool started in the background as $client_pid.
wait_client() {
  wait "$client_pid" || true
  client_pid=""
}

# rate_of TOOL OUT: the req/s in the output OUT of loadlab-load, wrk ("Requests/sec:") or
# h2load ("finished in …, N req/s"); empty when there is none.
rate_of() {
  case $1 in
    loadlab | wrk) sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$2" ;;
    h2load) sed -n 's/^finished in [^,]*, \([0-9.]*\) req\/s.*/\1/p' "$2" ;;
  esac
}

# cpu_of TIMEFILE: user + system seconds from /usr/bin/time -f '%U %S …' output.
cpu_of() {
  tail -1 "$1" | awk '{ print $1 + $2 }'
}

# start_source_agent: (bisect.sh, nightly_ab.sh) an agent on a loopback port whose catalog builds
# "cs", the commit server of tests/data/commit_server, from the repository OUT/repo; AGENT its
# pid (killed on exit), OUT/lab.json its lab, OUT/cache its build cache.
start_source_agent() {
  cat > "$OUT/catalog.json" <<JSON
{"targets": {"cs": {"source": {"repository": "$OUT/repo", "build": ["make"]},
                    "argv": ["{build_dir}/server", "{port}", "{host}"]}}}
JSON
  "$BIN/loadlab-agent" --listen 127.0.0.1:0 --name bench --catalog "$OUT/catalog.json" \
      --build-cache "$OUT/cache" > "$OUT/agent.log" 2>&1 &
  AGENT=$!
  trap 'kill $AGENT 2>/dev/null || true' EXIT
  for _ in $(seq 50); do grep -q "listening on" "$OUT/agent.log" && break; sleep 0.1; done
  local address; address=$(grep -o "listening on .*" "$OUT/agent.log" | head -1 | cut -d' ' -f3)
  echo "{\"agents\": [{\"name\": \"bench\", \"address\": \"$address\", \"roles\": [\"target\", \"load\"]}]}" > "$OUT/lab.json"
}
