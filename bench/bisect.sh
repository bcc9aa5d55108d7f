#!/usr/bin/env bash
# `loadlab bisect`'s accuracy on real runs of this machine (figures: docs/measurements/bisect.md).
# Each trial makes a repository of COMMITS commits after a good one (tests/data/commit_server),
# one of them, at a position drawn from the trial's number, adding STEP_PCT % to the server's busy
# loop per request; an agent builds them, and `loadlab bisect` searches from the good commit to the
# last. A trial is right when it names that commit.
#
#   bench/bisect.sh OUT [TRIALS]
#
#   MODE=instructions (default) the cell's instructions per request under callgrind, threshold 1 %
#   MODE=qps                    its requests per second, A/B pairs, threshold THRESHOLD_PCT
#   STEP_PCT (2)                the busy loop's growth at the bad commit
#   COMMITS (31)                commits after the good one (32 in the repository)
#   PAIRS (3 for instructions, 20 for qps)   a step's pairs (doubled while inconclusive)
#   THRESHOLD_PCT (1 for instructions, STEP_PCT/2 for qps)
#   WORK (100000)               busy-loop rounds per request at the good commit
#   CPUS (none)                 the scenario's placement.cpus, e.g. '{"target": "1", "load": "1"}'
#
# Prints one line per trial (expected, named, steps, minutes) and a summary; each trial's bisect
# folder stays in OUT/trial-N (result.json, report.html). Resumable: a finished trial is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
OUT=${1:?usage: bench/bisect.sh OUT [TRIALS]}
TRIALS=${2:-10}
MODE=${MODE:-instructions}
STEP_PCT=${STEP_PCT:-2}
COMMITS=${COMMITS:-31}
WORK=${WORK:-100000}
if [ "$MODE" = instructions ]; then PAIRS=${PAIRS:-3}; THRESHOLD_PCT=${THRESHOLD_PCT:-1}
else PAIRS=${PAIRS:-20}; THRESHOLD_PCT=${THRESHOLD_PCT:-$(awk "BEGIN{print $STEP_PCT/2}")}; fi
BIN=${BIN:-build/bin}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# The repository of trial $1: the good commit, then COMMITS commits, the one at $2 (1-based) adding work.
make_repo() {
  local repo=$1 bad_at=$2 g=(git -C "$1" -c user.name=bench -c user.email=bench@loadlab.invalid)
  rm -rf "$repo" && mkdir -p "$repo"
  cp tests/data/commit_server/{server.c,work.h,Makefile} "$repo"/
  echo "#define WORK_ITERATIONS $WORK" > "$repo/work.h"
  "${g[@]}" init -q -b main && "${g[@]}" add -A && "${g[@]}" commit -qm good && "${g[@]}" tag good
  for i in $(seq 1 "$COMMITS"); do
    if [ "$i" = "$bad_at" ]; then
      echo "#define WORK_ITERATIONS $(awk "BEGIN{printf \"%d\", $WORK * (1 + $STEP_PCT / 100)}")" > "$repo/work.h"
      "${g[@]}" commit -qam "commit $i: more work"
    else
      "${g[@]}" commit -q --allow-empty -m "commit $i"
    fi
  done
}

scenario() {
  local extra='"regression": {"metric": "qps", "threshold_pct": '"$THRESHOLD_PCT"'}'
  [ "$MODE" = instructions ] &&
    extra='"instructions": {"requests": [100, 600]}, "regression": {"metric": "instructions", "threshold_pct": '"$THRESHOLD_PCT"'}'
  [ -n "${CPUS:-}" ] && extra+=', "placement": {"cpus": '"$CPUS"'}'
  cat > "$OUT/scenario.json" <<JSON
{"name": "bisect-bench", "targets": [{"name": "cs", "catalog": "cs", "commit": "main"}],
 "matrix": {"threads": [1]}, "load": {"duration_s": 0.5, "warmup_s": 0.1}, $extra}
JSON
}

right=0; done_trials=0; total_steps=0; total_s=0
scenario
for trial in $(seq 1 "$TRIALS"); do
  bad_at=$(( (trial * 7919) % COMMITS + 1 ))
  dir="$OUT/trial-$trial"
  if [ ! -f "$dir/result.json" ] || ! grep -q '"finished_at"' "$dir/result.json"; then
    make_repo "$OUT/repo" "$bad_at"
    rm -rf "$OUT/cache" "$dir"
    [ -n "${AGENT:-}" ] && kill "$AGENT" 2>/dev/null; start_source_agent
    start=$(date +%s)
    "$BIN/loadlab" --log-level warn bisect "$OUT/scenario.json" --cell cs/t1 --good good --bad main \
        --lab "$OUT/lab.json" --pairs "$PAIRS" --out "$dir" > "$dir.log" 2>&1 || true
    echo $(( $(date +%s) - start )) > "$dir.seconds"
  fi
  named=$(python3 -c "import json,sys; j=json.load(open('$dir/result.json')); print((j.get('first_bad') or {}).get('subject',''), len(j['steps']))")
  steps=${named##* }; subject=${named% *}
  seconds=$(cat "$dir.seconds" 2>/dev/null || echo 0)
  ok=no; [ "$subject" = "commit $bad_at: more work" ] && ok=yes && right=$((right + 1))
  done_trials=$((done_trials + 1)); total_steps=$((total_steps + steps)); total_s=$((total_s + seconds))
  printf 'trial %2d: bad at %2d, named "%s", %d steps, %.1f min, %s\n' "$trial" "$bad_at" "$subject" "$steps" \
      "$(awk "BEGIN{print $seconds/60}")" "$ok"
done
printf '%s, step %s %%, threshold %s %%, %s pairs: %d of %d right, %.1f steps and %.1f min a trial\n' \
    "$MODE" "$STEP_PCT" "$THRESHOLD_PCT" "$PAIRS" "$right" "$done_trials" \
    "$(awk "BEGIN{print $total_steps/$done_trials}")" "$(awk "BEGIN{print $total_s/$done_trials/60}")"
