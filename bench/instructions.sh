#!/usr/bin/env bash
# instructions.sh: instructions per request of loadlab-target and of loadlab-load, counted by
# callgrind (valgrind), over HTTP/1.1, h2c, HTTP/3 and HTTPS (HTTP/1.1 over TLS 1.3), for two builds
# side by side. Instruction
# counts do not move with this machine's noise, so a refactoring that must not change the
# behaviour can be held to a few %: issue 25 asks within 3 %.
#
#   bench/instructions.sh BIN_A BIN_B      folders holding loadlab-target and loadlab-load
#
# Each figure is (I(N2) − I(N1)) / (N2 − N1): the difference of two runs of N1 and N2 sequential
# requests (one thread, one connection), so the start-up and the shutdown cancel out. The side
# measured runs under callgrind, the other natively; both are pinned to CPU ${CPU:-0}. Knobs:
# N1 (200), N2 (1200), CPU (0), PROTOCOLS ("h1 h2 h3 https"), SIDES ("target load").
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
[[ $# -eq 2 ]] || { sed -n '2,13p' "$0" >&2; exit 2; }
A=$(cd "$1" && pwd)
B=$(cd "$2" && pwd)
N1=${N1:-200}
N2=${N2:-1200}
CPU=${CPU:-0}
PROTOCOLS=${PROTOCOLS:-h1 h2 h3 https}
SIDES=${SIDES:-target load}
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind not found (apt-get install valgrind)" >&2; exit 2; }
bench_setup loadlab-instructions

# The target's flags and the load's URL and flags for a protocol.
target_flags() { case $1 in h3) echo "--h3" ;; https) echo "--tls" ;; *) echo "" ;; esac; }
load_args() {
  local port=$1 proto=$2
  case $proto in
    h1) echo "http://127.0.0.1:$port/" ;;
    h2) echo "http://127.0.0.1:$port/ --protocol h2" ;;
    h3) echo "https://127.0.0.1:$port/ --protocol h3 --insecure" ;;
    https) echo "https://127.0.0.1:$port/ --insecure" ;;
  esac
}

# The total instructions (Ir) of a callgrind output file.
total_ir() { sed -n 's/^totals: *\([0-9]*\).*/\1/p;s/^summary: *\([0-9]*\).*/\1/p' "$1" | tail -1; }

# The port the target started in the background announced (at most 60 s: callgrind is slow).
listening_port() {
  local line=""
  for _ in $(seq 600); do
    line=$(grep -m1 '^listening on ' "$WORK/target.out" || true)
    [[ -n $line ]] && break
    sleep 0.1
  done
  echo "${line##*:}"
}

# run_target BIN PROTO N: the target under callgrind answers N requests; prints its Ir.
run_target() {
  local bin=$1 proto=$2 n=$3 out=$WORK/t.$RANDOM port
  # shellcheck disable=SC2046
  # --trace-children: loadlab-target becomes loadlab-target-secure or -h3 (exec) for TLS and HTTP/3.
  taskset -c "$CPU" valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$out" "$bin/loadlab-target" --listen 127.0.0.1:0 \
    --threads 1 $(target_flags "$proto") >"$WORK/target.out" 2>"$WORK/target.err" &
  local pid=$!
  PIDS+=("$pid")
  port=$(listening_port)
  # shellcheck disable=SC2046
  taskset -c "$CPU" "$bin/loadlab-load" $(load_args "$port" "$proto") -t 1 -c 1 -n "$n" --timeout 30000 >/dev/null
  kill -TERM "$pid"
  wait "$pid" || true
  total_ir "$out"
}

# run_load BIN PROTO N: loadlab-load under callgrind sends N requests; prints its Ir.
run_load() {
  local bin=$1 proto=$2 n=$3 out=$WORK/l.$RANDOM port
  # shellcheck disable=SC2046
  taskset -c "$CPU" "$bin/loadlab-target" --listen 127.0.0.1:0 --threads 1 $(target_flags "$proto") \
    >"$WORK/target.out" 2>"$WORK/target.err" &
  local pid=$!
  PIDS+=("$pid")
  port=$(listening_port)
  # shellcheck disable=SC2046
  # --trace-children: loadlab-load becomes loadlab-load-secure or -h3 (exec) for TLS and HTTP/3.
  taskset -c "$CPU" valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$out" "$bin/loadlab-load" $(load_args "$port" "$proto") \
    -t 1 -c 1 -n "$n" --timeout 30000 >/dev/null 2>"$WORK/load.err"
  kill -TERM "$pid"
  wait "$pid" || true
  total_ir "$out"
}

per_request() {  # SIDE BIN PROTO
  local i1 i2
  i1=$("run_$1" "$2" "$3" "$N1")
  i2=$("run_$1" "$2" "$3" "$N2")
  echo $(((i2 - i1) / (N2 - N1)))
}

printf '%-8s %-5s %14s %14s %8s\n' side proto "A instr/req" "B instr/req" "B / A"
for side in $SIDES; do
  for proto in $PROTOCOLS; do
    a=$(per_request "$side" "$A" "$proto")
    b=$(per_request "$side" "$B" "$proto")
    printf '%-8s %-5s %14d %14d %8s\n' "$side" "$proto" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.3f", b/a}')"
  done
done
