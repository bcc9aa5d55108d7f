#!/usr/bin/env bash
# A lab of many agents on this machine (issue 28, docs/operations.md "How far one controller
# goes"; its figures: docs/measurements/lab-scale.md): N agent processes (one target agent, N-1
# load agents), a scenario of CELLS cells (server delays 1..CELLS ms) each spread over LOADS
# load agents, 2 × LOADS connections, 1 s windows after 0.3 s of warm-up. Prints the
# controller's CPU (user + system) and peak RSS (GNU time), the agents' RSS, and each
# repetition's window skew: reported, its uncertainty, the real one (every agent here reads the
# same CLOCK_MONOTONIC, so the truth is known), and how late the parts and the target opened
# after the instant they were sent.
#
# KILL_AT=S kills KILL_N load agents (default 5 % of N; SIGKILL to the agent's process group,
# its load workers with it) S seconds into the run and starts them again on the same ports a
# second later: the repetitions they were in are retried whole, and every cell must complete.
#
# Env: BUILD_DIR (default build), N (100), CELLS (10), LOADS (50), KILL_AT (none), KILL_N,
# RUN_FLAGS (before `run`, e.g. --log-level debug: each repetition's start margin on stderr).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
N=${N:-100}
CELLS=${CELLS:-10}
LOADS=${LOADS:-50}
KILL_AT=${KILL_AT:-}
KILL_N=${KILL_N:-$(((N + 19) / 20))}
BIN=$BUILD_DIR/bin
[ -x "$BIN/loadlab" ] || cmake --build "$BUILD_DIR" -j2
[ -x /usr/bin/time ] || { echo "lab_scale.sh: needs GNU time (apt-get install time)" >&2; exit 2; }
work=$(mktemp -d)
declare -A pids
cleanup() { for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

# I [LISTEN]: starts agent aI (in this shell, so that cleanup has its pid).
start_agent() {
  setsid "$BIN/loadlab-agent" --listen "${2:-127.0.0.1:0}" --name "a$1" --log-level warn \
    > "$work/a$1.out" 2> "$work/a$1.err" &
  pids[$1]=$!
  disown "$!"  # killed on purpose (KILL_AT): not reported as a job that died
}
wait_listening() {
  for _ in $(seq 400); do grep -q '^listening on ' "$work/a$1.out" && return; sleep 0.05; done
  echo "agent a$1 did not listen: $(cat "$work/a$1.err")" >&2
  exit 1
}
for i in $(seq 0 $((N - 1))); do start_agent "$i"; done
for i in $(seq 0 $((N - 1))); do wait_listening "$i"; done
{
  printf '{"agents": ['
  for i in $(seq 0 $((N - 1))); do
    addr=$(sed -n 's/^listening on //p' "$work/a$i.out")
    role=$([ "$i" = 0 ] && echo target || echo load)
    printf '%s{"name": "a%d", "address": "%s", "roles": ["%s"]}' "$([ "$i" = 0 ] || echo ,)" "$i" "$addr" "$role"
  done
  printf ']}\n'
} > "$work/lab.json"
cat > "$work/scale.json" << JSON
{"name": "lab$N", "targets": [{"name": "b", "builtin": "hello", "server_threads": 2}],
 "matrix": {"delay_ms": [$(seq -s, 1 "$CELLS")], "threads": [$LOADS]},
 "load": {"connections": $((2 * LOADS)), "duration_s": 1, "warmup_s": 0.3},
 "placement": {"load": {"agents": $LOADS}, "cpus": "none"}, "execution": {"retries": 2}}
JSON
rss_kb() { for p in "${pids[@]}"; do awk '/VmRSS/{print $2}' "/proc/$p/status" 2> /dev/null; done | awk '{s += $1} END {printf "%.1f MB each, %.0f MB in all", s / NR / 1024, s / 1024}'; }
echo "agents: $N ($LOADS load agents a cell, $CELLS cells), agents' RSS before: $(rss_kb)"

/usr/bin/time -v "$BIN/loadlab" ${RUN_FLAGS:-} run "$work/scale.json" --lab "$work/lab.json" --out "$work/out" \
  > "$work/run.out" 2> "$work/time.txt" &
run=$!
# The controller's threads and open files at their most (sampled every 100 ms).
(
  peak_threads=0 peak_fds=0
  while kill -0 "$run" 2> /dev/null; do
    c=$(pgrep -P "$run" -x loadlab | head -1 || true)
    if [ -n "$c" ]; then
      t=$(awk '/^Threads/{print $2}' "/proc/$c/status" 2> /dev/null || echo 0)
      f=$(ls "/proc/$c/fd" 2> /dev/null | wc -l)
      [ "${t:-0}" -gt "$peak_threads" ] && peak_threads=$t
      [ "$f" -gt "$peak_fds" ] && peak_fds=$f
    fi
    sleep 0.1
  done
  echo "controller: at most $peak_threads threads and $peak_fds open files" > "$work/peaks.txt"
) &
sampler=$!
if [ -n "$KILL_AT" ]; then
  sleep "$KILL_AT"
  victims=$(seq 1 $((N - 1)) | shuf -n "$KILL_N" --random-source=<(yes) | sort -n | tr '\n' ' ')
  for i in $victims; do kill -KILL -- "-${pids[$i]}" 2> /dev/null || true; done
  echo "killed at ${KILL_AT} s: $(for i in $victims; do printf 'a%s ' "$i"; done)"
  sleep 1
  for i in $victims; do
    start_agent "$i" "$(sed -n 's/^listening on //p' "$work/a$i.out")"
  done
  for i in $victims; do wait_listening "$i"; done
  echo "restarted on their ports"
fi
status=0
wait "$run" || status=$?
wait "$sampler" || true
cat "$work/peaks.txt"
echo "loadlab run: exit status $status; agents' RSS after: $(rss_kb)"
grep -E "User time|System time|Maximum resident|Elapsed" "$work/time.txt" | sed 's/^\s*/  /'
python3 - "$work/out/result.json" << 'PY'
import json, sys
r = json.load(open(sys.argv[1]))
done = sum(1 for c in r["cells"] if c.get("ok"))
print(f"cells: {done} of {len(r['cells'])} completed")
for c in r["cells"]:
    key = c["cell"].get("key", "?")
    if not c.get("ok"):
        print(f"  {key}: FAILED {c.get('error', '')[:200]}")
        continue
    for rep in c["repetitions"]:
        opens = [int(p["window_open_ns"]) for p in rep["load_parts"]] + [int(rep["server"]["opened_ns"])]
        late = sorted(p.get("window_open_ms", 0) for p in rep["load_parts"])
        print(f"  {key}: {rep['qps']:.0f} req/s, skew {rep.get('window_skew_ms', float('nan')):.2f}"
              f" ± {rep.get('window_skew_uncertainty_ms', float('nan')):.2f} ms reported,"
              f" {(max(opens) - min(opens)) / 1e6:.2f} ms real; opened after the instant: parts"
              f" {late[0]:.1f}-{late[-1]:.1f} ms (median {late[len(late) // 2]:.1f}),"
              f" target {rep.get('target_window_open_ms', 0):.1f} ms; attempts {rep.get('attempts', 1)}")
PY
exit "$status"
