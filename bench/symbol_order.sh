#!/usr/bin/env bash
# symbol_order.sh: writes the link order of loadlab-load's and loadlab-target's functions
# (programs/order_files/loadlab-load.order, programs/order_files/loadlab-target.order; issue 26).
#
# A program's code pages count in its RSS in 64 KB windows: the kernel maps the neighbours of
# each page a program touches ("fault-around"), so a few hundred functions scattered over 4 MB
# of text made 2.1 MB of loadlab-load's resident. The linker (lld, --symbol-ordering-file) puts
# the functions a run executes first and together; everything else follows.
#
# The functions are the ones callgrind (valgrind) sees run: loadlab-load closed loop at 1000
# connections with --json, closed loop at 10 connections with the table, open loop (--rate)
# with --json-events; loadlab-target under loadlab-load at 100 connections (keep-alive, then
# new connections), stopped with SIGTERM. Only symbols defined in the binary are kept.
# Symbols that later disappear are ignored at link time; rerun after large changes to the
# programs' code and commit the two files.
#
#   bench/symbol_order.sh [BUILD_DIR]     (default: build; needs valgrind)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=$(cd "${1:-$ROOT/build}" && pwd)
HOST=127.0.0.1
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
command -v valgrind >/dev/null || { echo "symbol_order.sh: valgrind not found (apt-get install valgrind)" >&2; exit 2; }
LOAD=$BUILD_DIR/bin/loadlab-load
TARGET=$BUILD_DIR/bin/loadlab-target
for b in "$LOAD" "$TARGET"; do
  [[ -x $b ]] || { echo "symbol_order.sh: $b not found; build it first" >&2; exit 2; }
done
bench_setup symbol-order

# order_of BINARY CALLGRIND_OUT... -> the binary's functions in the order callgrind met them
order_of() {
  local bin=$1
  shift
  python3 - "$bin" "$@" <<'PY'
import re, subprocess, sys
binary, outs = sys.argv[1], sys.argv[2:]
nm = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
defined = {f[2] for f in (l.split() for l in nm.splitlines()) if len(f) == 3 and f[1] in "tTwW"}
seen, order = set(), []
for out in outs:
    for line in open(out):
        m = re.match(r"^c?fn=\(\d+\) (.+)$", line.rstrip("\n"))
        if m and m.group(1) in defined and m.group(1) not in seen:
            seen.add(m.group(1))
            order.append(m.group(1))
print("\n".join(order))
PY
}

callgrind() { valgrind --tool=callgrind --demangle=no --callgrind-out-file="$1" "${@:2}"; }

# loadlab-load against a native target.
port=$(free_port)
"$TARGET" --listen "$HOST:$port" --threads 1 >"$WORK/server.out" 2>&1 &
SERVER_PID=$!
await_server loadlab-target "$port"
url=http://$HOST:$port/
log "loadlab-load under callgrind (three runs)"
callgrind "$WORK/load1" "$LOAD" "$url" -c 1000 -d 3 --json >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
callgrind "$WORK/load2" "$LOAD" "$url" -c 10 -d 2 >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
callgrind "$WORK/load3" "$LOAD" "$url" -c 100 -d 2 --rate 2000 --json-events >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
stop_server

# loadlab-target under callgrind, loaded natively.
port=$(free_port)
log "loadlab-target under callgrind"
# exec: SERVER_PID is valgrind's own pid, which the SIGTERM below reaches.
(exec valgrind --tool=callgrind --demangle=no --callgrind-out-file="$WORK/target" "$TARGET" --listen "$HOST:$port" \
  --threads 1 >"$WORK/server.out" 2>&1) &
SERVER_PID=$!
await_server loadlab-target "$port"
"$LOAD" "http://$HOST:$port/" -c 100 -d 3 >/dev/null
"$LOAD" "http://$HOST:$port/" -c 10 -n 200 --no-keepalive >/dev/null
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" || true
[[ -s $WORK/target ]] || { echo "symbol_order.sh: loadlab-target under callgrind wrote no profile: $(cat "$WORK/server.out")" >&2; exit 1; }

order_of "$LOAD" "$WORK/load1" "$WORK/load2" "$WORK/load3" >"$ROOT/programs/order_files/loadlab-load.order"
order_of "$TARGET" "$WORK/target" >"$ROOT/programs/order_files/loadlab-target.order"
wc -l "$ROOT/programs/order_files/loadlab-load.order" "$ROOT/programs/order_files/loadlab-target.order"
