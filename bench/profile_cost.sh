#!/usr/bin/env bash
# What profiling a cell costs (a scenario's `profile`, docs/profiles.md): the same two cells of
# the built-in target run without a profile and profiled at each frequency, in rotating order,
# round after round, on the embedded agent: a closed loop (its requests per second) and an open
# loop at RATE (the server's and the client's CPU per request). Figures:
# docs/measurements/profiles.md.
#
#   bench/profile_cost.sh [ROUNDS]        ROUNDS (10) rounds of every variant
#
#   FREQS ("99 999 4999")   the frequencies profiled, besides no profile
#   CALL_GRAPH (fp)         fp or dwarf
#   RATE (10000)            the open loop's requests per second
#   DURATION (3)            each cell's window, s
#   CPUS ('{"target": "1", "load": "0"}')   placement.cpus
#   BIN (build/bin)
#
# Prints each run's figures, then per variant the medians and their ratio to no profile.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ROUNDS=${1:-10}
FREQS=${FREQS:-99 999 4999}
CALL_GRAPH=${CALL_GRAPH:-fp}
RATE=${RATE:-10000}
DURATION=${DURATION:-3}
CPUS=${CPUS:-'{"target": "1", "load": "0"}'}
BIN=${BIN:-build/bin}
bench_setup loadlab-profile-cost
cat > "$WORK/s.json" <<EOF
{"name": "profile-cost", "targets": [{"name": "hello", "builtin": "hello", "server_threads": 1}],
 "matrix": {"rate": [0, $RATE]}, "load": {"duration_s": $DURATION, "warmup_s": 0.5, "connections": 10},
 "placement": {"cpus": $CPUS}}
EOF
variants=(off $FREQS)
for ((round = 0; round < ROUNDS; ++round)); do
  n=${#variants[@]}
  for ((i = 0; i < n; ++i)); do
    v=${variants[$(((i + round) % n))]}  # each round starts one variant later
    out="$WORK/r$round-$v"
    args=()
    [ "$v" != off ] && args=(--set "profile={\"frequency_hz\": $v, \"call_graph\": \"$CALL_GRAPH\"}")
    "$BIN/loadlab" run "$WORK/s.json" ${args[@]+"${args[@]}"} --out "$out" --quiet --log-level warn > /dev/null
    /usr/bin/python3 - "$out/result.json" "$v" "$round" >> "$WORK/figures.tsv" <<'PY'
import json, sys
cells = json.load(open(sys.argv[1]))["cells"]
for c in cells:
    r = c["repetitions"][0]
    why = r["server"].get("profile", {}).get("unavailable", "")
    if sys.argv[2] != "off" and why:
        sys.exit(f"{c['cell']['key']} at {sys.argv[2]} Hz: profile unavailable: {why}")
    q = r["qps"]
    per = lambda side: r[side]["cpu_pct"] / 100 * 1e6 / q if q else 0  # CPU µs a request
    print(sys.argv[3], sys.argv[2], c["cell"]["key"], f"{q:.0f}", f"{per('server'):.2f}", f"{per('client'):.2f}",
          r["server"].get("profile", {}).get("samples", 0), sep="\t")
PY
    tail -n 2 "$WORK/figures.tsv" | sed 's/^/[run] /' >&2
  done
done
/usr/bin/python3 - "$WORK/figures.tsv" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
by = {}
for rnd, v, key, qps, srv, cli, samples in rows:
    by.setdefault((key, v), []).append((float(qps), float(srv), float(cli), int(samples)))
keys = sorted({k for k, _ in by})
print("cell\tvariant\tqps\tratio\tsrv µs/req\tratio\tcli µs/req\tratio\tsamples")
for key in keys:
    base = [statistics.median(x[i] for x in by[(key, "off")]) for i in range(3)]
    for v in [v for k, v in by if k == key]:
        m = [statistics.median(x[i] for x in by[(key, v)]) for i in range(4)]
        print(key, v, f"{m[0]:.0f}", f"{m[0] / base[0]:.3f}", f"{m[1]:.2f}", f"{m[1] / base[1]:.3f}",
              f"{m[2]:.2f}", f"{m[2] / base[2]:.3f}", f"{m[3]:.0f}", sep="\t")
PY
