#!/usr/bin/env bash
# Nightly verdicts measured on real nights of this machine (their figures:
# docs/measurements/verdicts.md). Each part is resumable and adds to OUT:
#
#   bench/verdicts.sh record OUT [NIGHTS]   NIGHTS real nights of the bench matrix, unchanged code
#   bench/verdicts.sh slow OUT [NIGHTS]     NIGHTS more nights of a slower build of the server
#                                           (SLOW_WORK_US of CPU per request more): the catalog
#                                           changes, the scenario does not
#   bench/verdicts.sh size OUT              the slower build's true size per cell: an A/B run of
#                                           the two builds, interleaved A B B A, every cell of the
#                                           matrix on the nights' placement (AB_PAIRS_SIZE pairs, 20)
#   bench/verdicts.sh replay OUT            the verdict procedure over every night, night by night
#                                           as the nightly would: false alarms per 100 nights,
#                                           inconclusive share, each cell's minimum detectable
#                                           change, the slowed nights caught
#   bench/verdicts.sh ab OUT [RUNS] [AB_RUNS]
#                                           RUNS A/A runs (one build twice) and AB_RUNS (RUNS/3) A/B
#                                           runs (a build AB_WORK_US slower), alternating, of the
#                                           delay-0 cells, each AB_PAIRS pairs A B, B A, ... (and
#                                           AB_PAIRS more where the first say regression: the
#                                           controller's confirmation): runs that alarm, each
#                                           cell's change
#   bench/verdicts.sh power OUT [NIGHTS]  NIGHTS nights of unchanged code (into the history, as `record`),
#                                           and after every POWER_EVERY-th (2) from night POWER_FROM (5)
#                                           on, one slowed night (POWER_WORK_US in turn, "4 8 400" µs of
#                                           CPU per request more) judged live against a copy of the
#                                           history, so that each is a first slowed night (4 and 8 µs
#                                           are about 10 and 20 % of a delay-0 cell here; the delay-2
#                                           cells' timer hides most of a CPU cost, 400 µs is several
#                                           %); every 10th night an A B B A run of one level gives its
#                                           true size
#   bench/verdicts.sh power-summary OUT     false alarms of the unchanged nights; per cell and level, the
#                                           true size and the slowed nights caught (live verdicts)
#   bench/verdicts.sh export OUT FILE       the nights of unchanged code as CSV for the tests
#                                           (tests/data/verdicts)
#
# The bench matrix: a catalog target (loadlab-target, one thread) at delay 0 and 2 ms × 1 and 4
# client threads, 3 s measured after 0.5 s warm-up, 3 repetitions; every cell is measured again
# at the end of each night on fresh targets (execution.confirm.every_cell), so that the replay
# has the confirmation the nightly would take whatever it decides; a cell measured while other
# work ran on its CPUs is measured again first (execution.remeasure_disturbed: each night is judged
# against the recording's history as it runs). One agent on 127.0.0.1 (the
# scenario's default placement: target and load on CPUs of their own), restarted each night.
#
# Knobs: BUILD_DIR (build), GAP_S (pause between nights, default 60: nights spread over hours;
# AA_BETWEEN=1 runs an A/A run of the `ab` part instead of the pause, AB_BETWEEN=1 an A/B run),
# SLOW_WORK_US (1000), AB_WORK_US (1.5: about 5 % of a delay-0 request on this VM), AB_B_ARGS (more argv for B's target, as JSON strings:
# '"--body-size", "2048"' makes B slower by a body rather than CPU work), WINDOW_S (3), REPS (3),
# AB_PAIRS (20), AB_WINDOW_S (0.5), AB_NEIGHBOUR_S (unset: none; else a `yes` on CPU
# AB_NEIGHBOUR_CPU (1, the pairs' CPU) for that many seconds of each A/A and A/B run, from a
# random second of its first 20: the runs' own CPU disturbed),
# AB_THRESHOLD_PCT (2), AB_DELAYS (the A/B runs' delays, "0"), AB_CPUS (the A/B runs' placement.cpus: target and load both on CPU 1,
# which removes the VM's cross-CPU wake-ups from a ping-pong cell's spread). The machine may do
# other work meanwhile: that is the noise a nightly on a shared machine sees.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD_DIR=${BUILD_DIR:-$HERE/../build}
GAP_S=${GAP_S:-60}
SLOW_WORK_US=${SLOW_WORK_US:-1000}
AB_WORK_US=${AB_WORK_US:-1.5}
WINDOW_S=${WINDOW_S:-3}
REPS=${REPS:-3}
AB_PAIRS=${AB_PAIRS:-20}
HOST=127.0.0.1
source "$HERE/lib.sh"

usage() {
  sed -n '2,20p' "$0" >&2
  exit 2
}

write_scenario() {
  cat >"$1" <<EOF
{
  "name": "verdict-bench",
  "description": "bench/verdicts.sh: 4 cells of a one-thread catalog target, nights of unchanged code",
  "targets": [{"name": "server", "catalog": "bench-server", "server_threads": 1}],
  "matrix": {"delay_ms": [0, 2], "threads": [1, 4]},
  "load": {"duration_s": $WINDOW_S, "warmup_s": 0.5, "connections_per_thread": 1},
  "repetitions": $REPS,
  "execution": {"confirm": {"repetitions": $REPS, "every_cell": true}}
}
EOF
}

# catalog_entry NAME WORK_US [EXTRA]: a loadlab-target that burns WORK_US of CPU per request;
# EXTRA: more of its argv, as JSON strings ("--body-size", "4096").
catalog_entry() {
  cat <<EOF
"$1": {"argv": ["$BIN/loadlab-target", "--listen", "{host}:{port}", "--threads", "{threads}",
                "--delay-ms", "{delay_ms}", "--work-us", "$2"${3:+, $3}],
       "readiness": {"type": "http", "path": "/"}}
EOF
}

# start_agent OUT CATALOG_JSON: an agent on a free port of 127.0.0.1 and OUT/lab.json for it.
start_agent() {
  local out=$1 port
  echo "$2" >"$out/catalog.json"
  port=$(free_port)
  "$BIN/loadlab-agent" --listen "$HOST:$port" --name bench --catalog "$out/catalog.json" \
    --log-level warn >>"$out/agent.log" 2>&1 &
  AGENT=$!
  PIDS+=("$AGENT")
  for _ in $(seq 100); do port_open "$port" && break; sleep 0.1; done
  cat >"$out/lab.json" <<EOF
{"agents": [{"name": "bench", "address": "$HOST:$port", "roles": ["target", "load"]}]}
EOF
}

# night OUT N WORK_US: one night, judged against the nights before it as a nightly is (OUT/record.db),
# so that a disturbed cell is measured again as a nightly's would be; its exit status is kept in
# OUT/nights/N.status (the replay judges every night again, from the folders).
night() {
  local out=$1 n=$2 work_us=$3 id
  id=$(printf '%03d' "$n")
  [[ -f $out/nights/$id.status ]] && return 0
  rm -rf "$out/nights/$id"
  start_agent "$out" "{\"targets\": {$(catalog_entry bench-server "$work_us")}}"
  local status=0
  "$BIN/loadlab" run "$out/scenario.json" --lab "$out/lab.json" --out "$out/nights/$id" \
    --history "$out/record.db" --baseline history --quiet --log-level warn >"$out/nights/$id.log" 2>&1 || status=$?
  stop_pid "$AGENT"
  echo "$status work_us=$work_us $(date -u +%FT%TZ)" >"$out/nights/$id.status"
  log "night $n (work_us $work_us): exit $status"
}

next_night() {
  local last
  last=$(ls "$1/nights" 2>/dev/null | sed -n 's/^\([0-9]\{3\}\)\.status$/\1/p' | sort | tail -1)
  echo $((10#${last:-0} + 1))
}

# record OUT NIGHTS WORK_US: nights, each followed by the gap: GAP_S of rest, or with
# AA_BETWEEN=1 an A/A run instead (so that both spread over the same hours).
record() {
  local out=$1 nights=$2 work_us=$3 first
  mkdir -p "$out/nights"
  [[ -f $out/scenario.json ]] || write_scenario "$out/scenario.json"
  first=$(next_night "$out")
  for n in $(seq "$first" $((first + nights - 1))); do
    night "$out" "$n" "$work_us"
    if [[ ${AA_BETWEEN:-0} == 1 ]]; then
      ab_run "$out" "aa-$(printf '%03d' "$n")" 0 0
    elif [[ ${AB_BETWEEN:-0} == 1 ]]; then
      ab_run "$out" "ab-$(printf '%03d' "$n")" 0 "$AB_WORK_US"
    else
      sleep "$GAP_S"
    fi
  done
}

# slowed_night OUT N WORK_US: a night of a build WORK_US slower, judged against a copy of the
# history (OUT/record.db), which it leaves as it was.
slowed_night() {
  local out=$1 n=$2 work_us=$3 id status=0
  id=$(printf '%03d' "$n")
  [[ -f $out/slowed/$id.status ]] && return 0
  rm -rf "$out/slowed/$id"
  python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).backup(sqlite3.connect(sys.argv[2]))' \
    "$out/record.db" "$out/slowed/history.db"
  start_agent "$out" "{\"targets\": {$(catalog_entry bench-server "$work_us")}}"
  "$BIN/loadlab" run "$out/scenario.json" --lab "$out/lab.json" --out "$out/slowed/$id" \
    --history "$out/slowed/history.db" --baseline history --quiet --log-level warn >"$out/slowed/$id.log" 2>&1 || status=$?
  stop_pid "$AGENT"
  rm -f "$out/slowed/history.db"
  echo "$status work_us=$work_us $(date -u +%FT%TZ)" >"$out/slowed/$id.status"
  log "slowed night $n (work_us $work_us): exit $status"
}

# power OUT NIGHTS: see the usage above. Resumes where it stopped (the night before the next, so
# that a slowed night cut short is taken again).
power() {
  local out=$1 nights=$2 first n levels every=${POWER_EVERY:-2}
  read -r -a levels <<<"${POWER_WORK_US:-4 8 400}"
  mkdir -p "$out/nights" "$out/slowed"
  [[ -f $out/scenario.json ]] || write_scenario "$out/scenario.json"
  first=$(next_night "$out")
  ((first == 1)) || first=$((first - 1))
  for n in $(seq "$first" $((first + nights - 1))); do
    night "$out" "$n" 0
    if ((n % 10 == 0)); then
      # The true size of one level, in turn: every cell, on the nights' placement.
      local level=${levels[$(((n / 10) % ${#levels[@]}))]} name
      name=size-$(printf '%03d' "$n")
      AB_PAIRS=${AB_PAIRS_SIZE:-20} AB_DELAYS="0, 2" AB_CPUS='{"target": "0", "load": "1"}' \
        ab_run "$out" "$name" 0 "$level"
      echo "$level" >"$out/$name.work_us"
    fi
    ((n >= ${POWER_FROM:-5} && n % every == 0)) || continue
    slowed_night "$out" "$n" "${levels[$(((n / every) % ${#levels[@]}))]}"
  done
}

# power_summary OUT: what `power` recorded, from each night's own verdicts (the nightly's, live).
power_summary() {
  python3 - "$1" <<'EOF'
import glob, json, os, statistics, sys
out = sys.argv[1]

def nights(folder):
    """(night, work_us, exit status, {cell: verdict}) of each finished night in folder."""
    found = []
    for s in sorted(glob.glob(f"{out}/{folder}/*.status")):
        status, work = open(s).read().split()[:2]
        result = s[: -len(".status")] + "/result.json"
        cells = {}
        if os.path.exists(result):
            cells = {c["key"]: c for c in json.load(open(result)).get("verdicts", {}).get("cells", [])}
        found.append((os.path.basename(s)[:3], work.split("=")[1], int(status), cells))
    return found

def median(xs):
    return statistics.median(xs) if xs else float("nan")

plain, slowed = nights("nights"), nights("slowed")
times = sorted(open(s).read().split()[2] for s in glob.glob(f"{out}/*/*.status"))
print(f"{len(plain)} nights of unchanged code, {len(slowed)} slowed nights, {times[0]} .. {times[-1]}")
alarms = [n for n, _, status, _ in plain if status == 1]
judged = [n for n, _, _, cells in plain if any(c["verdict"] != "inconclusive" for c in cells.values())]
print(f"unchanged code: nights with a regression {len(alarms)} of {len(judged)} judged "
      f"({', '.join(alarms) or 'none'}); exit statuses {sorted({s for _, _, s, _ in plain})}")
keys = sorted({k for *_, cells in plain for k in cells})
for k in keys:
    v = [cells[k]["verdict"] for *_, cells in plain if k in cells]
    mdc = [cells[k]["mdc_pct"] for *_, cells in plain if k in cells and "mdc_pct" in cells[k]]
    counts = ", ".join(f"{x} {v.count(x)}" for x in sorted(set(v)))
    print(f"  {k:14s} {counts}; mdc median {median(mdc):.1f} %{' (last %.1f %%)' % mdc[-1] if mdc else ''}")
# The true size of each level per cell: the A B B A runs' change, median over the runs.
size = {}
for f in sorted(glob.glob(f"{out}/size-*/result.json")):
    if not os.path.exists(f[: -len("/result.json")] + ".work_us"):
        continue  # still running
    level = open(f[: -len("/result.json")] + ".work_us").read().strip()
    for c in json.load(open(f)).get("ab", {}).get("cells", []):
        size.setdefault((level, c["key"].split("/", 1)[1]), []).append(-c["change_pct"])
print("slowed nights, per level and cell: true size (A B B A runs), caught of judged, mdc median")
for level in sorted({w for _, w, _, _ in slowed}, key=float):
    mine = [cells for _, w, _, cells in slowed if w == level]
    for k in keys:
        v = [c[k] for c in mine if k in c and c[k]["verdict"] != "inconclusive"]
        true = size.get((level, k.split("/", 1)[1]), [])
        caught = sum(c["verdict"] == "regression" for c in v)
        print(f"  +{level:>5s} us {k:14s} true {median(true):5.1f} % ({len(true)} runs); caught {caught} of "
              f"{len(v)} ({100.0 * caught / max(1, len(v)):.0f} %); mdc median "
              f"{median([c['mdc_pct'] for c in v if 'mdc_pct' in c]):.1f} %; changes "
              f"{' '.join('%+.1f' % c['change_pct'] for c in v if 'change_pct' in c)}")
EOF
}

# ab_run OUT NAME WORK_A WORK_B: one interleaved run of the delay-0 cells, A against B.
ab_run() {
  local out=$1 name=$2
  [[ -f $out/$name/result.json ]] && return 0
  # B's extra argv only where B is another build (an A/A run is the same build twice).
  local b_args=${AB_B_ARGS:-}
  [[ $name != aa-* ]] || b_args=
  start_agent "$out" "{\"targets\": {$(catalog_entry server-a "$3"), $(catalog_entry server-b "$4" "$b_args")}}"
  local cpus=${AB_CPUS:-'{"target": "1", "load": "1"}'}
  cat >"$out/ab.json" <<EOF
{"name": "verdict-ab", "targets": [{"name": "a", "catalog": "server-a", "server_threads": 1},
                                   {"name": "b", "catalog": "server-b", "server_threads": 1}],
 "matrix": {"delay_ms": [${AB_DELAYS:-0}], "threads": [1, 4]},
 "load": {"duration_s": ${AB_WINDOW_S:-0.5}, "warmup_s": 0.2, "connections_per_thread": 1},
 "repetitions": $AB_PAIRS, "ab": {"a": "a", "b": "b"}, "regression": {"threshold_pct": ${AB_THRESHOLD_PCT:-2}, "ab_estimate": "mean"},
 "placement": {"cpus": $cpus}}
EOF
  local status=0 neighbour=
  if [[ -n ${AB_NEIGHBOUR_S:-} ]]; then
    # A neighbour on the pairs' CPU for AB_NEIGHBOUR_S, from a random second of the run's first 20.
    (sleep $((RANDOM % 20)) && exec timeout "$AB_NEIGHBOUR_S" taskset -c "${AB_NEIGHBOUR_CPU:-1}" yes >/dev/null) &
    neighbour=$!
    PIDS+=("$neighbour")
  fi
  "$BIN/loadlab" run "$out/ab.json" --lab "$out/lab.json" --out "$out/$name" --quiet --log-level warn \
    >"$out/$name.log" 2>&1 || status=$?
  [[ -z $neighbour ]] || stop_pid "$neighbour"
  stop_pid "$AGENT"
  echo "$status" >"$out/$name.status"
}

# The verdicts of A/B runs named PREFIX-*: runs with a regression, and each cell's changes.
ab_summary() {
  local out=$1 prefix=$2
  python3 - "$out" "$prefix" <<'EOF'
import glob, json, sys, statistics
out, prefix = sys.argv[1], sys.argv[2]
runs = sorted(glob.glob(f"{out}/{prefix}-*/result.json"))
alarms, changes, mdcs, caught, left_out = 0, {}, {}, {}, {}
for f in runs:
    ab = json.load(open(f)).get("ab", {})
    alarms += any(c["verdict"] == "regression" for c in ab.get("cells", []))
    for c in ab.get("cells", []):
        left_out.setdefault(c["key"], []).append(sum(bool(p.get("left_out")) for p in c.get("pairs", [])))
        changes.setdefault(c["key"], []).append(c.get("change_pct", float("nan")))
        mdcs.setdefault(c["key"], []).append(c.get("mdc_pct", float("nan")))
        caught.setdefault(c["key"], []).append(c["verdict"] == "regression")
print(f"{prefix}: {len(runs)} runs, {alarms} with a regression ({100.0 * alarms / max(1, len(runs)):.1f} %)")
for k in sorted(changes):
    print(f"  {k:10s} change median {statistics.median(changes[k]):+6.2f} % "
          f"(min {min(changes[k]):+.2f}, max {max(changes[k]):+.2f}), mdc median {statistics.median(mdcs[k]):.2f} %, "
          f"regression in {sum(caught[k])} of {len(caught[k])}; pairs left out (busy) per run: "
          f"median {statistics.median(left_out[k])}, max {max(left_out[k])}")
EOF
}

# replay OUT: a history made afresh from the nights (in the order they ran), replayed.
replay() {
  local out=$1 db=$out/replay.db
  rm -f "$db"
  local folders=()
  for s in "$out"/nights/*.status; do folders+=("${s%.status}"); done
  "$BIN/loadlab" history "$db" add "${folders[@]}" >/dev/null
  "$BIN/loadlab" history "$db" --verdicts
  "$BIN/loadlab" history "$db" --verdicts --csv >"$out/replay.csv"
  python3 - "$out" <<'EOF'
import csv, glob, json, os, sys
out = sys.argv[1]
slow = {}
for s in sorted(glob.glob(f"{out}/nights/*.status")):
    status, work, *_ = open(s).read().split()
    slow[os.path.basename(s)[:3]] = work != "work_us=0"
# The slower build's true size per cell, from the interleaved run (bench/verdicts.sh size).
size = {}
if os.path.exists(f"{out}/size/result.json"):
    for c in json.load(open(f"{out}/size/result.json"))["ab"]["cells"]:
        size[c["key"].split("/", 1)[1]] = -c["change_pct"]
rows = list(csv.DictReader(open(f"{out}/replay.csv")))
runs = sorted({int(r["run_id"]) for r in rows})
night_of = {}  # run id -> night folder name, by order
folders = sorted(k for k in slow)
for run, folder in zip(runs, folders):
    night_of[run] = folder
normal = [r for r in rows if not slow[night_of[int(r["run_id"])]]]
slowed = [r for r in rows if slow[night_of[int(r["run_id"])]]]
alarm_nights = {r["run_id"] for r in normal if r["verdict"] == "regression"}
normal_nights = {r["run_id"] for r in normal}
inconclusive = sum(r["verdict"] == "inconclusive" for r in normal)
print(f"\nunchanged code: {len(normal_nights)} nights, {len(normal)} cell-nights; nights with a regression: "
      f"{len(alarm_nights)} ({100.0 * len(alarm_nights) / max(1, len(normal_nights)):.1f} per 100); "
      f"inconclusive: {inconclusive} ({100.0 * inconclusive / max(1, len(normal)):.1f} %)")
why = {}
for r in normal:
    if r["verdict"] != "inconclusive": continue
    reason = r["reason"]
    kind = ("few nights" if "nights of history" in reason or "no earlier night" in reason or "1 night of" in reason
            else "busy machine" if "machine was busy" in reason
            else "machines changed" if "machines changed" in reason
            else "steal" if "hypervisor" in reason else "other")
    why[kind] = why.get(kind, 0) + 1
print("  inconclusive because:", ", ".join(f"{k} {v}" for k, v in sorted(why.items())))
for r in normal:
    if r["verdict"] == "regression":
        print(f"  false alarm: night {night_of[int(r['run_id'])]} {r['cell']}: {r['reason']}")
if slowed:
    print(f"slowed build: {len({r['run_id'] for r in slowed})} nights")
    for cell in sorted({r["cell"] for r in slowed}):
        mine = [r for r in slowed if r["cell"] == cell]
        true = size.get(cell.split("/", 1)[1])
        over = [r for r in mine if true is not None and r["mdc_pct"] not in ("", "-") and true > float(r["mdc_pct"])]
        caught = sum(r["verdict"] == "regression" for r in over)
        verdicts = {}
        for r in mine: verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
        print(f"  {cell:14s} true slowdown {'%.1f %%' % true if true is not None else '?':>8s}; "
              f"nights where it exceeds the mdc: {len(over)}, caught {caught}; all verdicts {verdicts}")
EOF
}

[[ $# -ge 2 ]] || usage
cmd=$1 out=$2
mkdir -p "$out"
out=$(cd "$out" && pwd)
# The binaries are copied once: a rebuild of the tree while nights are recorded changes nothing,
# and every night runs the same build (the replay reads what they wrote with the tree's).
BIN=$out/bin
if [[ ! -x $BIN/loadlab ]]; then
  mkdir -p "$BIN"
  for b in loadlab loadlab-agent loadlab-target loadlab-load; do
    [[ -x $BUILD_DIR/bin/$b ]] || { echo "$BUILD_DIR/bin/$b is missing: build first" >&2; exit 2; }
    cp "$BUILD_DIR/bin/$b" "$BIN/"
  done
fi
bench_setup verdicts
case $cmd in
  record) record "$out" "${3:-100}" 0 ;;
  slow) record "$out" "${3:-30}" "$SLOW_WORK_US" ;;
  power) power "$out" "${3:-100}" ;;
  power-summary) power_summary "$out" ;;
  size)
    # Every cell, on the nights' placement (target and load on CPUs of their own).
    AB_PAIRS=${AB_PAIRS_SIZE:-20} AB_DELAYS="0, 2" AB_CPUS='{"target": "0", "load": "1"}' \
      ab_run "$out" size 0 "$SLOW_WORK_US"
    python3 -c "import json,sys; [print(c['key'], '%+.1f %%' % c['change_pct'], c['verdict']) for c in json.load(open(sys.argv[1]))['ab']['cells']]" "$out/size/result.json"
    ;;
  replay)
    BIN=$(cd "$BUILD_DIR/bin" && pwd)
    replay "$out"
    ;;
  ab)
    runs=${3:-100}
    ab_runs=${4:-$(((runs + 2) / 3))}
    # Alternating, so that both kinds see the same hours of the machine.
    for i in $(seq "$((runs > ab_runs ? runs : ab_runs))"); do
      ((i > ab_runs)) || ab_run "$out" "ab-$(printf '%03d' "$i")" 0 "$AB_WORK_US"
      ((i > runs)) || ab_run "$out" "aa-$(printf '%03d' "$i")" 0 0
    done
    ab_summary "$out" aa
    ab_summary "$out" ab
    ;;
  export)
    [[ $# -ge 3 ]] || usage
    BIN=$(cd "$BUILD_DIR/bin" && pwd)
    replay "$out" >/dev/null
    python3 - "$out" "$3" <<'EOF'
import os, sqlite3, sys, csv
out, dest = sys.argv[1], sys.argv[2]
db = sqlite3.connect(f"{out}/replay.db")
# Unchanged code only: the nights of the slower build (their .status says work_us > 0) are left out.
slowed = {r for r, folder in db.execute("SELECT id, run_folder FROM runs")
          if os.path.exists(f"{folder}.status") and "work_us=0" not in open(f"{folder}.status").read()}
fp = {(r, n): f for r, n, f in db.execute("SELECT run_id, name, fingerprint FROM run_agents")}
w = csv.writer(open(dest, "w", newline=""))
w.writerow(["night", "started_at", "cell", "phase", "qps", "steal_pct", "wait_pct", "busy", "fingerprint",
            "settings", "target_build", "other_pct"])
rows = db.execute("""SELECT r.id, r.started_at, c.key, p.phase, p.qps, p.steal_pct, p.wait_pct, p.flags, c.settings,
                            p.target_build, p.other_pct
                     FROM runs r JOIN cells c ON c.run_id = r.id JOIN repetitions p ON p.cell_id = c.id
                     ORDER BY r.started_at, r.id, c.key, p.phase DESC, p.idx""")
for run, started, key, phase, qps, steal, wait, flags, settings, build, other in rows:
    if run in slowed:
        continue
    w.writerow([run, started, key, phase, round(qps, 1), round(steal or 0, 2),
                "" if wait is None else round(wait, 2), int("busy-machine:" in flags),
                fp.get((run, "bench"), ""), settings, build, "" if other is None else round(other, 2)])
EOF
    ;;
  *) usage ;;
esac
