#!/usr/bin/env bash
# uring_probe.sh: how much an io_uring transport could lower loadlab-load's CPU per request
# (issue 26). Alternates, per round and connection count, loadlab-load, bench/uring_probe.cpp
# (the least an io_uring closed-loop client can do: no parser, no timing; with
# DEFER_TASKRUN) and wrk, against one loadlab-target thread on the last core, every client on
# core 0, and prints each tool's median requests per CPU-second (the process's own user +
# system time) and the per-round ratios probe / loadlab-load and loadlab-load / wrk.
#
# Environment: BUILD_DIR (build), DURATION (seconds a run, 4), RUNS (rounds, 5), CONNS
# ("10 100"). Needs liburing-dev (the probe) and wrk; only 127.0.0.1 is loaded.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
source "$here/bench/lib.sh"
RUNS=${RUNS:-5}
DURATION=${DURATION:-4}
common_knobs uring_probe
CONNS=${CONNS:-"10 100"}
load=$BUILD_DIR/bin/loadlab-load
target_bin=$BUILD_DIR/bin/loadlab-target
need_binaries uring_probe "$load" "$target_bin"
need_tools uring_probe wrk:wrk g++:g++ /usr/bin/time:time
[[ -f /usr/include/liburing.h ]] || { echo "uring_probe: liburing.h missing (apt-get install -y liburing-dev)" >&2; exit 2; }

work_dir
g++ -O2 -std=c++20 -o "$work/probe" "$here/bench/uring_probe.cpp" -luring
HOST=127.0.0.1
port=$(free_port)
taskset -c "$(($(nproc) - 1))" "$target_bin" --listen "$HOST:$port" --threads 1 >/dev/null 2>"$work/target.err" &
server_pid=$!
for _ in $(seq 50); do port_open "$port" && break; sleep 0.1; done
port_open "$port" || { echo "uring_probe: target did not start: $(cat "$work/target.err")" >&2; exit 1; }

# one TOOL CONNS ROUND: appends "tool conns req_per_cpu_s round" to $work/results.
one() {
  local tool=$1 c=$2 round=$3 n cpu
  case $tool in
    loadlab)
      /usr/bin/time -o "$work/time" -f '%U %S' taskset -c 0 "$load" "http://127.0.0.1:$port/" -t 1 -c "$c" \
        -d "$DURATION" --json >"$work/out" 2>/dev/null
      n=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['requests'])" "$work/out") ;;
    probe)
      /usr/bin/time -o "$work/time" -f '%U %S' taskset -c 0 "$work/probe" 127.0.0.1 "$port" "$c" "$DURATION" defer \
        >"$work/out"
      n=$(awk '{ for (i = 1; i < NF; i++) if ($i == "requests") print $(i + 1) }' "$work/out") ;;
    wrk)
      /usr/bin/time -o "$work/time" -f '%U %S' taskset -c 0 wrk -t 1 -c "$c" -d "${DURATION}s" \
        "http://127.0.0.1:$port/" >"$work/out" 2>/dev/null
      n=$(awk '/requests in/ { print $1 }' "$work/out") ;;
  esac
  cpu=$(awk '{ print $1 + $2 }' "$work/time")
  echo "$tool $c $(awk -v n="$n" -v c="$cpu" 'BEGIN { printf "%.0f", n / c }') $round" >>"$work/results"
}

: >"$work/results"
for round in $(seq "$RUNS"); do
  for c in $CONNS; do
    if ((round % 2)); then order="loadlab probe wrk"; else order="wrk probe loadlab"; fi
    for tool in $order; do one "$tool" "$c" "$round"; done
  done
done
python3 - "$work/results" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    tool, c, r, rnd = line.split()
    d[(tool, int(c))][int(rnd)] = int(r)
for c in sorted({k[1] for k in d}):
    l, p, w = d[("loadlab", c)], d[("probe", c)], d[("wrk", c)]
    print(f"{c} connections, requests per CPU-second (median of {len(l)} rounds): loadlab-load "
          f"{statistics.median(l.values()):.0f}, probe {statistics.median(p.values()):.0f}, wrk {statistics.median(w.values()):.0f}")
    pl = sorted(p[r] / l[r] for r in l)
    lw = sorted(l[r] / w[r] for r in l)
    print(f"  probe / loadlab-load per round: median {statistics.median(pl):.3f} ({pl[0]:.3f} .. {pl[-1]:.3f})")
    print(f"  loadlab-load / wrk per round:   median {statistics.median(lw):.3f} ({lw[0]:.3f} .. {lw[-1]:.3f})")
PY
