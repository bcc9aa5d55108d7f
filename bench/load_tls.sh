#!/usr/bin/env bash
# load_tls.sh: loadlab-load against h2load (--h1) over HTTPS, same server, same connections,
# runs alternated so drift in the machine hits both tools alike; with keep-alive and with a
# new connection (TCP connect + TLS handshake) per request.
#
# Prints per tool and mode: median req/s and median requests per CPU-second of the load
# generator (user + system time from /usr/bin/time), and the ratios to the reference tool.
#
# keepalive: loadlab-load -c CONNS against h2load --h1 -c CONNS.
# noka (a new connection, TCP connect + full TLS handshake, per request): h2load has no
# such mode (it does not reconnect after "Connection: close"), so the reference is
# `openssl s_time -new -www /` (one connection at a time, same libssl, version forced),
# against loadlab-load -c 1 --no-keepalive.
#
# Environment:
#   BUILD_DIR   build tree with bin/loadlab-load (default: build)
#   SERVER_CMD  the HTTPS server to start, a shell command in which {PORT}, {CERT} and {KEY}
#               are replaced by a free port on 127.0.0.1 and a self-signed certificate made
#               here (EC P-256, SAN IP:127.0.0.1). Default: the Go net/http peer of
#               bench/peers/gohttp built here, GOMAXPROCS=1.
#   DURATION    seconds per run (integer, default 5)
#   RUNS        runs per tool and mode (default 3)
#   CONNS       connections of the keepalive mode (default 10); noka runs one
#   TLS_VERSION 1.2 or 1.3 (default 1.3): forced in loadlab-load. h2load cannot force a
#               version (it takes the highest): for 1.2, give a SERVER_CMD limited to 1.2.
#               The version h2load negotiated is printed with each of its runs.
#   VERIFY      0 (default): loadlab-load with --insecure, as h2load does not verify
#               certificates; 1: loadlab-load verifies against the certificate (--ca)
#   MODES       "keepalive noka" (default both; noka = a connection per request)
#   PIN         1 (default): the server on the last core, the clients on core 0 (taskset)
#
# Only 127.0.0.1 is ever loaded.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
source "$here/bench/lib.sh"
common_knobs load_tls
CONNS=${CONNS:-10}
TLS_VERSION=${TLS_VERSION:-1.3}
MODES=${MODES:-"keepalive noka"}
VERIFY=${VERIFY:-0}
pin_sides 1
load=$BUILD_DIR/bin/loadlab-load
need_binaries load_tls "$load"
[[ $TLS_VERSION == 1.2 || $TLS_VERSION == 1.3 ]] || { echo "load_tls: TLS_VERSION must be 1.2 or 1.3" >&2; exit 2; }
need_tools load_tls h2load:nghttp2-client openssl:openssl /usr/bin/time:time

work_dir

self_signed_pair "$work"
if [[ -z ${SERVER_CMD:-} ]]; then
  command -v go >/dev/null || { echo "load_tls: go missing (or set SERVER_CMD)" >&2; exit 2; }
  GO111MODULE=off go build -o "$work/gohttp" "$here/bench/peers/gohttp/main.go"
  SERVER_CMD="GOMAXPROCS=1 $work/gohttp -addr 127.0.0.1:{PORT} -tls-cert {CERT} -tls-key {KEY}"
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cmd=${SERVER_CMD//\{PORT\}/$port}
cmd=${cmd//\{CERT\}/$work/cert.pem}
cmd=${cmd//\{KEY\}/$work/key.pem}
"${server_pin[@]}" bash -c "exec env $cmd" >"$work/server.out" 2>&1 &
server_pid=$!
url="https://127.0.0.1:$port/"
for _ in $(seq 50); do
  "$load" "$url" -n 1 --ca "$work/cert.pem" >/dev/null 2>&1 && break
  sleep 0.1
done
"$load" "$url" -n 1 --ca "$work/cert.pem" >/dev/null 2>&1 ||
  { echo "load_tls: server did not answer on $url: $(cat "$work/server.out")" >&2; exit 1; }

verify=(--insecure)
[[ $VERIFY == 1 ]] && verify=(--ca "$work/cert.pem")
# run TOOL MODE -> appends "tool mode reqps cpu_s" to $work/results
run() {
  local tool=$1 mode=$2 out=$work/out time=$work/time reqps ka=() c=$CONNS
  if [[ $mode == noka ]]; then ka=(--no-keepalive); c=1; fi
  local timed=(/usr/bin/time -o "$time" -f '%U %S %e' "${client_pin[@]}")
  case $tool in
    loadlab) "${timed[@]}" "$load" "$url" -c "$c" -d "$DURATION" "${verify[@]}" --tls-version "$TLS_VERSION" \
      "${ka[@]}" >"$out" 2>&1 &
      ;;
    h2load) "${timed[@]}" h2load --h1 -c "$c" -D "$DURATION" "$url" >"$out" 2>&1 &
      ;;
    s_time) "${timed[@]}" openssl s_time -connect "127.0.0.1:$port" -new -www / -time "$DURATION" \
      "-tls${TLS_VERSION/./_}" >"$out" 2>&1 &
      ;;
  esac
  client_pid=$!
  wait_client
  reqps=$(rate_of "$tool" "$out")
  # s_time's own "real seconds" are whole seconds: its count over the process's wall time.
  [[ $tool == s_time ]] && reqps=$(awk -v wall="$(tail -1 "$time" | cut -d' ' -f3)" \
    '/connections in [0-9.]+ real seconds/ { print $1 / wall }' "$out")
  [[ -n $reqps ]] || { echo "load_tls: $tool $mode gave no rate:" >&2; cat "$out" >&2; return; }
  local cpu errors
  cpu=$(cpu_of "$time")
  errors=$(grep -E '^  Errors:|^requests:|^TLS Protocol:|real seconds' "$out" | tr -s ' ' | tr '\n' ' ' || true)
  echo "$tool $mode $reqps $cpu" >>"$work/results"
  printf '  %-8s %-9s %10.0f req/s  cpu %5.2f s  %s\n' "$tool" "$mode" "$reqps" "$cpu" "$errors" >&2
}

: >"$work/results"
echo "server: $cmd (pinned: $PIN); $CONNS connections, TLS $TLS_VERSION; ${DURATION}s x $RUNS runs" >&2
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for mode in $MODES; do
  tools="loadlab h2load"
  [[ $mode == noka ]] && tools="loadlab s_time"
  for r in $(seq "$RUNS"); do
    for tool in $tools; do run "$tool" "$mode"; done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

awk "$AWK_MEDIAN"'
{
  key = $1 SUBSEP $2
  rate[key] = rate[key] " " $3
  eff[key] = eff[key] " " ($4 > 0 ? $3 * '"$DURATION"' / $4 : 0)
  runs[key]++
  if (!($2 in seen)) { seen[$2] = 1; modes[++nm] = $2 }
  if ($1 != "loadlab") ref[$2] = $1
}
END {
  printf "%-8s %-9s %5s %12s %14s %10s %10s\n", "tool", "mode", "runs", "req/s", "req/CPU-s", "x ref r/s", "x ref eff"
  for (mi = 1; mi <= nm; mi++) {
    m = modes[mi]
    hk = ref[m] SUBSEP m
    hr = (hk in runs) ? median(rate[hk]) : 0; he = (hk in runs) ? median(eff[hk]) : 0
    nt = split("loadlab " ref[m], tl, " ")
    for (ti = 1; ti <= nt; ti++) {
      k = tl[ti] SUBSEP m
      if (!(k in runs)) continue
      r = median(rate[k]); e = median(eff[k])
      printf "%-8s %-9s %5d %12.0f %14.0f %10.2f %10.2f\n", tl[ti], m, runs[k], r, e, hr ? r / hr : 0, he ? e / he : 0
    }
  }
}' "$work/results"
