#!/usr/bin/env bash
# load_h2.sh: loadlab-load --protocol h2 against h2load, HTTP/2 on the same server with the
# same connections and streams per connection, runs alternated so drift in the machine hits
# both tools alike; h2c (prior knowledge, http://) and h2 over TLS (ALPN, https://).
#
# Prints per tool and mode: median req/s and median requests per CPU-second of the load
# generator (user + system time from /usr/bin/time), and the ratios to h2load.
# loadlab-load --protocol h2 -c CONNS --streams STREAMS -d DURATION against
# h2load -c CONNS -m STREAMS -D DURATION. When the server is the bottleneck (both tools at
# the same req/s), requests per CPU-second is the comparison that tells the clients apart.
#
# Environment:
#   BUILD_DIR   build tree with bin/loadlab-load (default: build)
#   SERVER_CMD  the HTTP/2 server, a shell command in which {PORT}, {TLS}, {CERT} and {KEY}
#               are replaced by a free port on 127.0.0.1, "--no-tls" for h2c (empty for h2)
#               and a self-signed certificate made here (EC P-256, SAN IP:127.0.0.1); it
#               must answer GET /. Default: nghttpd (Debian nghttp2-server), one worker,
#               serving a 13-byte index.html.
#   DURATION    seconds per run (integer, default 5)
#   RUNS        runs per tool and mode (default 3)
#   CONNS       connections (default 10)
#   STREAMS     concurrent streams per connection (default 10)
#   MODES       "h2c h2" (default both)
#   PIN         1 (default): the server on the last core, the clients on core 0 (taskset)
#
# Only 127.0.0.1 is ever loaded.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
source "$here/bench/lib.sh"
common_knobs load_h2
CONNS=${CONNS:-10}
STREAMS=${STREAMS:-10}
MODES=${MODES:-"h2c h2"}
PIN=${PIN:-1}
server_pin=(); client_pin=()
if [ "$PIN" = 1 ]; then
  server_pin=(taskset -c "$(($(nproc) - 1))"); client_pin=(taskset -c 0)
fi

load=$BUILD_DIR/bin/loadlab-load
[[ -x $load ]] || { echo "load_h2: $load not found; build it or set BUILD_DIR" >&2; exit 2; }
for t in h2load openssl /usr/bin/time; do
  command -v "$t" >/dev/null || { echo "load_h2: $t missing (apt-get install -y nghttp2-client openssl time)" >&2; exit 2; }
done

work_dir
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
if [[ -z ${SERVER_CMD:-} ]]; then
  command -v nghttpd >/dev/null || { echo "load_h2: nghttpd missing (apt-get install -y nghttp2-server) or set SERVER_CMD" >&2; exit 2; }
  mkdir "$work/docs" && echo 'Hello, world' >"$work/docs/index.html"
  SERVER_CMD="nghttpd -a 127.0.0.1 -n 1 -d $work/docs {TLS} {PORT} {KEY} {CERT}"
fi

# start_server MODE: the server for MODE on a free port; sets $url.
start_server() {
  local mode=$1 port cmd scheme=https tls="" insecure=(--insecure)
  [[ $mode == h2c ]] && { scheme=http; tls=--no-tls; insecure=(); }
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  cmd=${SERVER_CMD//\{PORT\}/$port}
  cmd=${cmd//\{TLS\}/$tls}
  if [[ $mode == h2c ]]; then cmd=${cmd//\{KEY\}/}; cmd=${cmd//\{CERT\}/}; fi
  cmd=${cmd//\{CERT\}/$work/cert.pem}
  cmd=${cmd//\{KEY\}/$work/key.pem}
  "${server_pin[@]}" bash -c "exec $cmd" >"$work/server.out" 2>&1 &
  server_pid=$!
  url="$scheme://127.0.0.1:$port/"
  for _ in $(seq 50); do
    "$load" "$url" --protocol h2 -n 1 "${insecure[@]}" >/dev/null 2>&1 && break
    sleep 0.1
  done
  "$load" "$url" --protocol h2 -n 1 "${insecure[@]}" >/dev/null 2>&1 ||
    { echo "load_h2: server did not answer on $url: $(cat "$work/server.out")" >&2; exit 1; }
  echo "server ($mode): $cmd (pinned: $PIN)" >&2
}

# run TOOL MODE -> appends "tool mode reqps cpu_s" to $work/results
run() {
  local tool=$1 mode=$2 out=$work/out time=$work/time reqps tls=()
  [[ $mode == h2 ]] && tls=(--insecure)  # h2load does not verify certificates either
  local timed=(/usr/bin/time -o "$time" -f '%U %S %e' "${client_pin[@]}")
  case $tool in
    loadlab) "${timed[@]}" "$load" "$url" --protocol h2 --streams "$STREAMS" -c "$CONNS" -d "$DURATION" \
      "${tls[@]}" >"$out" 2>&1 & ;;
    h2load) "${timed[@]}" h2load -c "$CONNS" -m "$STREAMS" -D "$DURATION" "$url" >"$out" 2>&1 & ;;
  esac
  client_pid=$!
  wait_client
  reqps=$(rate_of "$tool" "$out")
  [[ -n $reqps ]] || { echo "load_h2: $tool $mode gave no rate:" >&2; cat "$out" >&2; return; }
  local cpu errors
  cpu=$(cpu_of "$time")
  errors=$(grep -E '^  Errors:|^requests:|^TLS Protocol:' "$out" | tr -s ' ' | tr '\n' ' ' || true)
  echo "$tool $mode $reqps $cpu" >>"$work/results"
  printf '  %-8s %-4s %10.0f req/s  cpu %5.2f s  %s\n' "$tool" "$mode" "$reqps" "$cpu" "$errors" >&2
}

: >"$work/results"
echo "$CONNS connections x $STREAMS streams; ${DURATION}s x $RUNS runs" >&2
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for mode in $MODES; do
  start_server "$mode"
  for r in $(seq "$RUNS"); do
    for tool in loadlab h2load; do run "$tool" "$mode"; done
  done
  stop_pid "$server_pid"
  server_pid=""
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

awk "$AWK_MEDIAN"'
{
  key = $1 SUBSEP $2
  rate[key] = rate[key] " " $3
  eff[key] = eff[key] " " ($4 > 0 ? $3 * '"$DURATION"' / $4 : 0)
  runs[key]++
  if (!($2 in seen)) { seen[$2] = 1; modes[++nm] = $2 }
}
END {
  printf "%-8s %-4s %5s %12s %14s %10s %10s\n", "tool", "mode", "runs", "req/s", "req/CPU-s", "x h2load", "x eff"
  for (mi = 1; mi <= nm; mi++) {
    m = modes[mi]
    hk = "h2load" SUBSEP m
    hr = (hk in runs) ? median(rate[hk]) : 0; he = (hk in runs) ? median(eff[hk]) : 0
    for (ti = 1; ti <= 2; ti++) {
      t = ti == 1 ? "loadlab" : "h2load"
      k = t SUBSEP m
      if (!(k in runs)) continue
      r = median(rate[k]); e = median(eff[k])
      printf "%-8s %-4s %5d %12.0f %14.0f %10.2f %10.2f\n", t, m, runs[k], r, e, hr ? r / hr : 0, he ? e / he : 0
    }
  }
}' "$work/results"
