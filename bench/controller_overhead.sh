#!/usr/bin/env bash
# The controller's own cost, against doing the same by hand.
#
# 1. Validating and expanding a 10 000-cell scenario (goal < 1 s).
# 2. Per-cell overhead: N one-cell runs' worth of work (start loadlab-target, wait for it,
#    run loadlab-load --total 20, stop it) done by a shell loop — the peer — and by
#    `loadlab run` with an embedded agent over gRPC. The difference per cell is what the
#    controller, agent, gRPC streams, sampling and result files add (goal < 100 ms).
#
# Env: BUILD_DIR (default build), CELLS (default 20), RUNS (default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
CELLS=${CELLS:-20}
RUNS=${RUNS:-3}
BIN=$BUILD_DIR/bin
[ -x "$BIN/loadlab" ] || cmake --build "$BUILD_DIR" -j2
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# --- 1. a 10 000-cell scenario: 10 targets x 100 delays x 10 thread counts -------------
{
  printf '{"name": "big", "targets": ['
  for t in $(seq 0 9); do printf '%s{"name": "t%d", "builtin": "hello"}' "$([ "$t" = 0 ] || echo ,)" "$t"; done
  printf '], "matrix": {"delay_ms": [%s], "threads": [1,2,3,4,5,6,7,8,9,10]},' "$(seq -s, 0 99)"
  printf ' "load": {"requests_per_thread": 100}}\n'
} > "$work/big.json"
times=()
for r in $(seq "$RUNS"); do
  t0=$(now); "$BIN/loadlab" validate "$work/big.json" > "$work/cells.txt"; t1=$(now)
  times+=("$(echo "$t1 - $t0" | bc -l)")
done
cells=$(grep -c '^  ' "$work/cells.txt")
validate_s=$(printf '%s\n' "${times[@]}" | median)
printf 'validate + expand %d cells: median %.3f s over %d runs (goal < 1 s)\n' "$cells" "$validate_s" "$RUNS"

# --- 2. per-cell overhead ----------------------------------------------------------------
by_hand() {
  for c in $(seq "$CELLS"); do
    "$BIN/loadlab-target" --listen 127.0.0.1:0 --threads 1 > "$work/t.out" &
    local tp=$!; pids+=("$tp")
    until grep -q '^listening on ' "$work/t.out" 2>/dev/null; do sleep 0.001; done
    ep=$(head -1 "$work/t.out" | cut -d' ' -f3)
    "$BIN/loadlab-load" "http://$ep/" -t 1 --total 20 --json-events > /dev/null
    kill "$tp"; wait "$tp" 2>/dev/null || true
  done
}
# One cell repeated CELLS times: every repetition starts, loads and stops its own target.
printf '{"name": "overhead", "targets": [{"name": "b", "builtin": "hello", "server_threads": 1}],
  "matrix": {"delay_ms": [0], "threads": [1]}, "load": {"total_requests": 20}, "repetitions": %d}\n' "$CELLS" > "$work/cells.json"
hand=(); ctl=()
for r in $(seq "$RUNS"); do
  t0=$(now); by_hand; t1=$(now); hand+=("$(echo "($t1 - $t0) / $CELLS * 1000" | bc -l)")
  rm -rf "$work/out"
  t0=$(now); "$BIN/loadlab" --log-level warn run "$work/cells.json" --out "$work/out" --quiet > /dev/null; t1=$(now)
  ctl+=("$(echo "($t1 - $t0) / $CELLS * 1000" | bc -l)")
done
hand_ms=$(printf '%s\n' "${hand[@]}" | median)
ctl_ms=$(printf '%s\n' "${ctl[@]}" | median)
printf 'per cell, %d cells, median of %d runs:\n' "$CELLS" "$RUNS"
printf '  by hand (shell: start target, wait, load, stop): %7.1f ms\n' "$hand_ms"
printf '  loadlab run (embedded agent over gRPC):          %7.1f ms\n' "$ctl_ms"
printf '  controller overhead per cell:                    %7.1f ms (goal < 100 ms); ratio %.2f\n' \
  "$(echo "$ctl_ms - $hand_ms" | bc -l)" "$(echo "$ctl_ms / $hand_ms" | bc -l)"
