#!/usr/bin/env bash
# loadgen_vs_wrk.sh: loadlab-load against wrk and h2load (--h1), same target, same threads
# and connections, runs alternated so drift in the machine hits every tool alike.
#
# Prints per tool and connection count: median req/s, median requests per CPU-second
# (user + system time of the load generator from /usr/bin/time), peak RSS, and the ratios
# of loadlab-load to wrk. One extra run per tool at 1000 connections measures RSS.
#
# Environment:
#   BUILD_DIR  build tree with bin/loadlab-load and bin/loadlab-target (default: build)
#   DURATION   seconds per run (integer, default 5)
#   RUNS       runs per tool and connection count (default 3)
#   THREADS    load threads for every tool (default 1); the target runs 1 thread
#   CONNS      connection counts to compare (default "10 100")
#   RSS_CONNS  connection count of the RSS run (default 1000; empty to skip)
#   TARGET_DELAY_MS  --delay-ms of the target (default 0)
#   PIN        1: target pinned to the last core, clients to core 0 (taskset); default 0
#   TOOLS      the tools compared (default "loadlab wrk h2load"); each round runs them in turn,
#              every other round in reverse (A B, B A, ...), and the per-round ratio of
#              loadlab-load's requests per CPU-second to wrk's is printed with its spread
#   TARGET_THREADS   --threads of the target (default 1). With 2 on a 2-core machine the
#                    client and the target share the cores, and a client that needs less
#                    CPU per request leaves more to the target: req/s then shows it.
#
# Only 127.0.0.1 is ever loaded. Installs wrk, nghttp2-client (h2load) and time with
# apt-get when they are missing and we are root.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
source "$here/bench/lib.sh"
common_knobs loadgen_vs_wrk
THREADS=${THREADS:-1}
CONNS=${CONNS:-"10 100"}
RSS_CONNS=${RSS_CONNS-1000}
TARGET_DELAY_MS=${TARGET_DELAY_MS:-0}
TARGET_THREADS=${TARGET_THREADS:-1}
# PIN=1: the target on the last core, every client on core 0 (taskset), so no tool's
# scheduling luck decides where the target's threads run.
pin_sides 0
load=$BUILD_DIR/bin/loadlab-load
target_bin=$BUILD_DIR/bin/loadlab-target
need_binaries loadgen_vs_wrk "$load" "$target_bin"

need=()
command -v wrk >/dev/null || need+=(wrk)
command -v h2load >/dev/null || need+=(nghttp2-client)
[[ -x /usr/bin/time ]] || need+=(time)
if ((${#need[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null ||
      { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null; }
  else
    echo "loadgen_vs_wrk: missing ${need[*]}; run: sudo apt-get install -y ${need[*]}" >&2
    exit 2
  fi
fi

# 1000 connections need more descriptors than the usual soft limit, in every tool and the target.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

work_dir

"${server_pin[@]}" "$target_bin" --listen 127.0.0.1:0 --threads "$TARGET_THREADS" --delay-ms "$TARGET_DELAY_MS" >"$work/target.out" 2>"$work/target.err" &
server_pid=$!
port=""
for _ in $(seq 50); do
  port=$(sed -n '1s/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/target.out")
  [[ -n $port ]] && break
  sleep 0.1
done
[[ -n $port ]] || { echo "loadgen_vs_wrk: target did not start: $(cat "$work/target.err")" >&2; exit 1; }
url="http://127.0.0.1:$port/"

# run TOOL CONNS [ROUND] -> appends "tool conns reqps cpu_s rss_kb round" to $work/results
run() {
  local tool=$1 c=$2 round=${3:-0} out=$work/out time=$work/time reqps
  case $tool in
    loadlab) /usr/bin/time -o "$time" -f '%U %S %M' "${client_pin[@]}" "$load" "$url" -t "$THREADS" -c "$c" -d "$DURATION" >"$out" 2>/dev/null &
      ;;
    wrk) /usr/bin/time -o "$time" -f '%U %S %M' "${client_pin[@]}" wrk -t "$THREADS" -c "$c" -d "${DURATION}s" "$url" >"$out" 2>/dev/null &
      ;;
    h2load) /usr/bin/time -o "$time" -f '%U %S %M' "${client_pin[@]}" h2load --h1 -t "$THREADS" -c "$c" -D "$DURATION" "$url" >"$out" 2>/dev/null &
      ;;
  esac
  client_pid=$!
  wait_client
  reqps=$(rate_of "$tool" "$out")
  if [[ -z $reqps ]]; then
    echo "loadgen_vs_wrk: $tool -c $c gave no rate:" >&2
    cat "$out" >&2
    return
  fi
  local rss cpu
  rss=$(tail -1 "$time" | cut -d' ' -f3)
  cpu=$(cpu_of "$time")
  echo "$tool $c $reqps $cpu $rss $round" >>"$work/results"
  printf '  %-8s -c %-5s %10.0f req/s  cpu %5.2f s  rss %6d KB\n' "$tool" "$c" "$reqps" "$cpu" "$rss" >&2
}

tools=${TOOLS:-"loadlab wrk h2load"}
reversed=$(echo "$tools" | tr ' ' '\n' | tac | tr '\n' ' ')
: >"$work/results"
echo "target: loadlab-target --threads $TARGET_THREADS --delay-ms $TARGET_DELAY_MS on $url; $THREADS load thread(s); ${DURATION}s x $RUNS runs" >&2
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for c in $CONNS; do
  for r in $(seq "$RUNS"); do
    order=$tools
    ((r % 2)) || order=$reversed
    for tool in $order; do run "$tool" "$c" "$r"; done
  done
done
if [[ -n $RSS_CONNS ]]; then
  for tool in $tools; do run "$tool" "$RSS_CONNS"; done
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# Medians (req/s, req per CPU-second) and peak RSS per tool and connection count, and the
# loadlab/wrk ratios.
awk -v tools="$tools" "$AWK_MEDIAN"'
{
  key = $1 SUBSEP $2
  rate[key] = rate[key] " " $3
  eff[key] = eff[key] " " ($4 > 0 ? $3 * '"$DURATION"' / $4 : 0)
  if ($5 > rss[key]) rss[key] = $5
  runs[key]++
  if (!($2 in seen)) { seen[$2] = 1; conns[++nc] = $2 }
}
END {
  printf "%-8s %6s %5s %12s %14s %9s %9s %9s %9s\n", "tool", "conns", "runs", "req/s", "req/CPU-s", "RSS KB", "x wrk r/s", "x wrk eff", "x wrk RSS"
  nt = split(tools, tl, " ")
  for (ci = 1; ci <= nc; ci++) {
    c = conns[ci]
    wk = "wrk" SUBSEP c
    wr = (wk in runs) ? median(rate[wk]) : 0; we = (wk in runs) ? median(eff[wk]) : 0; ws = rss[wk]
    for (ti = 1; ti <= nt; ti++) {
      k = tl[ti] SUBSEP c
      if (!(k in runs)) continue
      r = median(rate[k]); e = median(eff[k])
      printf "%-8s %6s %5d %12.0f %14.0f %9d %9.2f %9.2f %9.2f\n", tl[ti], c, runs[k], r, e, rss[k], wr ? r / wr : 0, we ? e / we : 0, ws ? rss[k] / ws : 0
    }
  }
}' "$work/results"

# Per round, loadlab-load's requests per CPU-second over wrk's (the two ran next to each other):
# the median and the spread of the rounds.
awk "$AWK_MEDIAN"'
$6 > 0 && ($1 == "loadlab" || $1 == "wrk") { eff[$1 SUBSEP $2 SUBSEP $6] = $4 > 0 ? $3 / $4 : 0; cs[$2] = 1; rs[$6] = 1 }
END {
  for (c in cs) {
    list = ""; lo = 1e9; hi = 0; n = 0
    for (r in rs) {
      a = eff["loadlab" SUBSEP c SUBSEP r]; b = eff["wrk" SUBSEP c SUBSEP r]
      if (a > 0 && b > 0) { x = a / b; list = list " " x; n++; if (x < lo) lo = x; if (x > hi) hi = x }
    }
    if (n) printf "req/CPU-s x wrk at %s connections, %d rounds: median %.2f (%.2f .. %.2f)\n", c, n, median(list), lo, hi
  }
}' "$work/results"
