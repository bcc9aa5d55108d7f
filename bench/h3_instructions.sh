#!/usr/bin/env bash
# h3_instructions.sh: instructions per request of loadlab's HTTP/3 server and client against
# ngtcp2's gtlsserver and gtlsclient (Debian's ngtcp2-server and ngtcp2-client: the same ngtcp2,
# nghttp3 and GnuTLS underneath), counted by callgrind. h3.sh's CPU times move by several % between
# runs of one build on a shared VM; instruction counts do not, so they tell which side's code costs
# more where the CPU times cannot. The kernel's work (the sockets' system calls) is not counted.
#
#   server: the server under callgrind (loadlab-target --h3 --threads 1, or gtlsserver), loadlab-load
#           natively as the client of both: one connection of STREAMS streams (10)
#   client: the client under callgrind (loadlab-load --protocol h3 with CLIENT_STREAMS streams, or
#           gtlsclient, which opens every stream the server allows: 100), gtlsserver natively
#
# Each figure is (I(N2) - I(N1)) / (N2 - N1): the difference of two runs of N1 and N2 requests on
# one connection, so the start-up, the handshake and the shutdown cancel out. Everything on CPU
# ${CPU:-0}. Knobs: BUILD_DIR (build), N1 (1000), N2 (5000), STREAMS (10), CLIENT_STREAMS (100),
# CPU (0), SIDES ("server client"). Only 127.0.0.1 is loaded.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
source "$here/bench/lib.sh"
BUILD_DIR=${BUILD_DIR:-$here/build}
N1=${N1:-1000}
N2=${N2:-5000}
STREAMS=${STREAMS:-10}
CLIENT_STREAMS=${CLIENT_STREAMS:-100}
CPU=${CPU:-0}
SIDES=${SIDES:-server client}
load=$BUILD_DIR/bin/loadlab-load
target=$BUILD_DIR/bin/loadlab-target
need_binaries h3_instructions "$load" "$target"
need_tools h3_instructions valgrind:valgrind /usr/sbin/gtlsserver:ngtcp2-server /usr/bin/gtlsclient:ngtcp2-client ss:iproute2
bench_setup loadlab-h3-instructions
self_signed_pair "$WORK"
mkdir -p "$WORK/htdocs"
printf '%s' "Have Fun ~ Tester !" >"$WORK/htdocs/index.html"  # loadlab-target's default body
cg=(taskset -c "$CPU" valgrind --tool=callgrind --trace-children=yes)
pin=(taskset -c "$CPU")

# start_server NAME PORT [PREFIX...]: NAME (loadlab or gtlsserver) on 127.0.0.1:PORT, run under
# PREFIX; SERVER its pid, once its UDP socket is bound (at most 60 s: callgrind starts slowly).
start_server() {
  local name=$1 port=$2
  shift 2
  case $name in
    loadlab) "$@" "$target" --threads 1 --h3 --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem" \
      --listen "127.0.0.1:$port" >"$WORK/server.out" 2>&1 & ;;
    gtlsserver) "$@" /usr/sbin/gtlsserver -q -d "$WORK/htdocs" 127.0.0.1 "$port" "$WORK/key.pem" "$WORK/cert.pem" \
      >"$WORK/server.out" 2>&1 & ;;
  esac
  SERVER=$!
  PIDS+=("$SERVER")
  for _ in $(seq 600); do
    [[ -n $(ss -Hunl "sport = :$port") ]] && return 0
    kill -0 "$SERVER" 2>/dev/null || break
    sleep 0.1
  done
  echo "h3_instructions: $name did not bind 127.0.0.1:$port: $(cat "$WORK/server.out")" >&2
  exit 1
}

# client NAME PORT N STREAMS [PREFIX...]: NAME (loadlab or gtlsclient) sends N requests on one
# connection, run under PREFIX; fails when it exits non-zero, and loadlab-load also unless every
# request was answered 200.
client() {
  local name=$1 port=$2 n=$3 streams=$4
  shift 4
  case $name in
    loadlab) "$@" "$load" "https://127.0.0.1:$port/" --protocol h3 --insecure -t 1 -c 1 --streams "$streams" \
      -n "$n" --timeout 30000 >"$WORK/client.out" 2>&1 ;;
    gtlsclient) "$@" /usr/bin/gtlsclient -q --exit-on-all-streams-close -n "$n" --timeout 60s 127.0.0.1 "$port" \
      "https://127.0.0.1:$port/" >"$WORK/client.out" 2>&1 ;;
  esac || { echo "h3_instructions: $name failed: $(tail -5 "$WORK/client.out")" >&2; exit 1; }
  if [[ $name == loadlab ]] && ! grep -q "200=$n" "$WORK/client.out"; then
    echo "h3_instructions: not $n answers: $(grep -E 'Status|Errors' "$WORK/client.out")" >&2
    exit 1
  fi
}

# The total instructions (Ir) of a callgrind output file (one per process: the last, after exec).
total_ir() { sed -n 's/^totals: *\([0-9]*\).*/\1/p;s/^summary: *\([0-9]*\).*/\1/p' "$1" | tail -1; }

# count SIDE TOOL N: COUNT, the instructions of TOOL's side over N requests, start-up included.
# Run in this shell (not in $(...)), so that the server's pid is in PIDS when something fails.
count() {
  local side=$1 tool=$2 n=$3 port out
  port=$(HOST=127.0.0.1 free_port)
  out=$WORK/cg.$side.$tool.$n
  rm -f "$out".*
  if [[ $side == server ]]; then
    start_server "$tool" "$port" "${cg[@]}" --callgrind-out-file="$out.%p"
    client loadlab "$port" "$n" "$STREAMS" "${pin[@]}"
  else
    start_server gtlsserver "$port" "${pin[@]}"
    client "$tool" "$port" "$n" "$CLIENT_STREAMS" "${cg[@]}" --callgrind-out-file="$out.%p"
  fi
  kill -TERM "$SERVER"
  wait "$SERVER" 2>/dev/null || true
  # loadlab-target and loadlab-load exec their HTTP/3 program: the exec'd process's file is the
  # one with the requests; it is the larger.
  local f ir
  COUNT=0
  for f in "$out".*; do
    ir=$(total_ir "$f")
    ((ir > COUNT)) && COUNT=$ir
  done
  return 0
}

printf '%-7s %-11s %14s %10s\n' side tool "instr/req" "x peer"
for side in $SIDES; do
  peer=gtlsserver
  [[ $side == client ]] && peer=gtlsclient
  declare -A per=()
  for tool in loadlab "$peer"; do
    count "$side" "$tool" "$N1"
    i1=$COUNT
    count "$side" "$tool" "$N2"
    per[$tool]=$(((COUNT - i1) / (N2 - N1)))
  done
  for tool in loadlab "$peer"; do
    printf '%-7s %-11s %14d %10.3f\n' "$side" "$tool" "${per[$tool]}" \
      "$(awk -v a="${per[$tool]}" -v b="${per[$peer]}" 'BEGIN { print a / b }')"
  done
  unset per
done
