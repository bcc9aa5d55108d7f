#!/usr/bin/env bash
# The nightly A/B against the last good build (regression.ab_last_good, docs/nightly.md) on real
# runs of this machine; figures: docs/measurements/verdicts-ab.md. A repository of the commit
# server (tests/data/commit_server) whose first commit is good, and one night of it in a history
# (OUT/base.db). Each trial copies that history and runs one night of a new commit, as the
# nightly would (`loadlab run --history --baseline history`): an A/A trial a commit that changes
# nothing, an A/B trial one whose busy loop does STEP_PCT % more rounds per request, alternating;
# the night's own A/B against the good commit gives its verdict.
#
#   bench/nightly_ab.sh OUT [TRIALS]     TRIALS A/A nights and as many A/B nights
#
#   MODE=qps (default)         the cell's requests per second, PAIRS pairs of WINDOW_S windows
#   MODE=instructions          its instructions per request under callgrind
#   STEP_PCT (3)               the A/B commit's extra busy-loop rounds, in %
#   PAIRS (qps 60, instructions 3)   THRESHOLD_PCT (qps 2, instructions 1)
#   WORK (100000)              busy-loop rounds per request at the good commit
#   WINDOW_S (0.5)  CPUS ('{"target": "1", "load": "1"}': both on CPU 1, as bench/verdicts.sh ab)
#   ESTIMATE (trimmed)         regression.ab_estimate: trimmed or mean
#   KINDS ("ab aa")            the kinds of night each trial runs: "aa" for A/A nights only
#   BIN (build/bin)
#
# Prints one line per trial and a summary per kind: nights with a regression, the change and the
# minimum detectable change (median, range), minutes a night. Resumable: a finished trial is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
OUT=${1:?usage: bench/nightly_ab.sh OUT [TRIALS]}
TRIALS=${2:-10}
MODE=${MODE:-qps}
STEP_PCT=${STEP_PCT:-3}
WORK=${WORK:-100000}
WINDOW_S=${WINDOW_S:-0.5}
CPUS=${CPUS:-'{"target": "1", "load": "1"}'}
ESTIMATE=${ESTIMATE:-trimmed}
KINDS=${KINDS:-ab aa}
if [ "$MODE" = instructions ]; then PAIRS=${PAIRS:-3}; THRESHOLD_PCT=${THRESHOLD_PCT:-1}
else PAIRS=${PAIRS:-60}; THRESHOLD_PCT=${THRESHOLD_PCT:-2}; fi
BIN=${BIN:-build/bin}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
REPO=$OUT/repo
g=(git -C "$REPO" -c user.name=bench -c user.email=bench@loadlab.invalid)

make_repo() {
  [ -d "$REPO/.git" ] && return 0
  mkdir -p "$REPO"
  cp tests/data/commit_server/{server.c,work.h,Makefile} "$REPO"/
  echo "#define WORK_ITERATIONS $WORK" > "$REPO/work.h"
  "${g[@]}" init -q -b main && "${g[@]}" add -A && "${g[@]}" commit -qm good && "${g[@]}" tag good
}

# The branch "nightly" at a new commit after good: the same code (aa) or STEP_PCT % more work (ab).
tonight() {
  "${g[@]}" checkout -q -B nightly good
  if [ "$1" = ab ]; then
    echo "#define WORK_ITERATIONS $(awk "BEGIN{printf \"%d\", $WORK * (1 + $STEP_PCT / 100)}")" > "$REPO/work.h"
    "${g[@]}" commit -qam "$2: $STEP_PCT % more work"
  else
    "${g[@]}" commit -q --allow-empty -m "$2: nothing changed"
  fi
}

scenario() {
  local metric='"metric": "qps"' extra=''
  if [ "$MODE" = instructions ]; then
    metric='"metric": "instructions"'; extra='"instructions": {"requests": [100, 600]},'
  fi
  cat > "$OUT/scenario.json" <<JSON
{"name": "nightly-ab-bench", "targets": [{"name": "cs", "catalog": "cs", "commit": "nightly"}],
 "matrix": {"threads": [1]}, "load": {"duration_s": $WINDOW_S, "warmup_s": 0.2}, $extra
 "repetitions": $PAIRS, "placement": {"cpus": $CPUS},
 "regression": {$metric, "threshold_pct": $THRESHOLD_PCT, "ab_last_good": "all",
                "ab_estimate": "$ESTIMATE"}}
JSON
}

# night NAME DB: one night of the branch as it is, into history DB.
night() {
  local start; start=$(date +%s)
  "$BIN/loadlab" --log-level warn run "$OUT/scenario.json" --lab "$OUT/lab.json" --history "$2" \
      --baseline history --out "$OUT/$1" --quiet > "$OUT/$1.log" 2>&1 || echo $? > "$OUT/$1.status"
  echo $(( $(date +%s) - start )) > "$OUT/$1.seconds"
}

make_repo
scenario
start_source_agent
if [ ! -f "$OUT/base.db" ]; then
  "${g[@]}" checkout -q -B nightly good
  rm -rf "$OUT/base" && night base "$OUT/base.tmp.db" && mv "$OUT/base.tmp.db" "$OUT/base.db"
fi
for i in $(seq 1 "$TRIALS"); do
  for kind in $KINDS; do
    name=$kind-$(printf '%03d' "$i")
    [ -f "$OUT/$name/result.json" ] && grep -q '"finished_at"' "$OUT/$name/result.json" && continue
    rm -rf "${OUT:?}/$name"
    tonight "$kind" "$name"
    cp "$OUT/base.db" "$OUT/$name.db"
    night "$name" "$OUT/$name.db"
    rm -f "$OUT/$name.db"
    python3 - "$OUT/$name/result.json" "$name" "$(cat "$OUT/$name.seconds")" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); c = j["verdicts"]["cells"][0]
print(f'{sys.argv[2]}: {c["verdict"]:12s} change {c.get("change_pct", float("nan")):+6.2f} %  '
      f'mdc {c.get("mdc_pct", float("nan")):5.2f} %  pairs {len(c.get("pairs", []))}+{len(c.get("confirm_pairs", []))}  '
      f'{int(sys.argv[3]) / 60:.1f} min')
PY
  done
done
python3 - "$OUT" "$MODE" "$STEP_PCT" "$THRESHOLD_PCT" "$PAIRS" "$ESTIMATE" <<'PY'
import glob, json, os, statistics, sys
out, mode, step, threshold, pairs, estimate = sys.argv[1:]
for kind in ("aa", "ab"):
    rows = []
    for f in sorted(glob.glob(f"{out}/{kind}-*/result.json")):
        j = json.load(open(f))
        if "finished_at" not in j: continue
        c = j["verdicts"]["cells"][0]
        secs = int(open(f.replace("/result.json", ".seconds")).read())
        rows.append((c["verdict"], c.get("change_pct"), c.get("mdc_pct"), secs, "pairs" in c and bool(c["pairs"])))
    if not rows: continue
    alarms = sum(r[0] == "regression" for r in rows)
    ch = [r[1] for r in rows if r[1] is not None]; md = [r[2] for r in rows if r[2] is not None]
    print(f"{kind}: {len(rows)} nights ({mode}, step {step} %, threshold {threshold} %, {pairs} pairs, "
          f"{estimate}), "
          f"{alarms} regression ({100 * alarms / len(rows):.0f} %), {sum(not r[4] for r in rows)} without an A/B; "
          f"change median {statistics.median(ch):+.2f} % ({min(ch):+.2f} .. {max(ch):+.2f}), "
          f"mdc median {statistics.median(md):.2f} % ({min(md):.2f} .. {max(md):.2f}); "
          f"{statistics.mean(r[3] for r in rows) / 60:.1f} min a night")
PY
