# Sourced by the bench scripts that start servers and measure them (target_vs_peers.sh,
# target_tls.sh): process bookkeeping, ports, CPU counters and the median. Expects HOST.

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
