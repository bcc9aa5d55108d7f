# Shared by the bench scripts (sourced): stopping what they started, and the median of
# their summaries.

# stop_pid PID: SIGTERM, up to 5 s to go, then SIGKILL; reaps it. Nothing if PID is empty.
stop_pid() {
  local pid=$1
  [[ -n $pid ]] || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# An awk function for the summaries: median(" 3 1 2") = 2 (a space-separated list).
AWK_MEDIAN='
function median(list,   n, a, i, j, t) {
  n = split(list, a, " ")
  for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}'

# common_knobs NAME: the knobs of every comparison script, with their defaults and checks
# (NAME prefixes the messages): BUILD_DIR (default $here/build), DURATION seconds per run
# (an integer, default 5), RUNS per case (default 3). Exits 2 on a bad value.
common_knobs() {
  local name=$1
  BUILD_DIR=${BUILD_DIR:-$here/build}
  DURATION=${DURATION:-5}
  RUNS=${RUNS:-3}
  [[ $DURATION =~ ^[0-9]+$ && $DURATION -ge 1 ]] || { echo "$name: DURATION must be an integer >= 1" >&2; exit 2; }
  [[ $RUNS =~ ^[0-9]+$ && $RUNS -ge 1 ]] || { echo "$name: RUNS must be an integer >= 1" >&2; exit 2; }
}

# work_dir: makes $work (a temp folder) and, on exit, stops $client_pid and $server_pid
# (set them when starting those) and removes $work.
work_dir() {
  work=$(mktemp -d)
  server_pid=""
  client_pid=""
  trap '[[ -n $client_pid ]] && kill "$client_pid" 2>/dev/null && wait "$client_pid" 2>/dev/null; stop_pid "$server_pid"; rm -rf "$work"' EXIT
  trap 'exit 130' INT TERM
}

# wait_client: waits for the load tool started in the background as $client_pid.
wait_client() {
  wait "$client_pid" || true
  client_pid=""
}

# rate_of TOOL OUT: the req/s in the output OUT of loadlab-load, wrk ("Requests/sec:") or
# h2load ("finished in …, N req/s"); empty when there is none.
rate_of() {
  case $1 in
    loadlab | wrk) sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$2" ;;
    h2load) sed -n 's/^finished in [^,]*, \([0-9.]*\) req\/s.*/\1/p' "$2" ;;
  esac
}

# cpu_of TIMEFILE: user + system seconds from /usr/bin/time -f '%U %S …' output.
cpu_of() {
  tail -1 "$1" | awk '{ print $1 + $2 }'
}
