#!/usr/bin/env bash
# record.sh: records the outputs of the real wrk, hey and h2load (Debian's packages) against
# a local loadlab-target, as fixtures for tests/fast/external_tools. Each case is three files in
# <tool>/: CASE.stdout.txt and CASE.stderr.txt exactly as printed, and CASE.meta.txt with
# the tool's version, the command line, its exit status and the target's settings.
#
# Usage: tests/data/clients/record.sh [BUILD_DIR]   (needs bin/loadlab-target built)
# Only 127.0.0.1 is loaded; every run is bounded by a count or a few seconds. Fixtures
# derived from other versions' sources (files named *-src-*) are written by hand and not
# touched here.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
build=${1:-$root/build}
target_bin=$build/bin/loadlab-target
[[ -x $target_bin ]] || { echo "record.sh: $target_bin not found; build loadlab-target" >&2; exit 2; }
for t in wrk hey h2load; do
  command -v $t >/dev/null || { echo "record.sh: $t missing (apt-get install wrk hey nghttp2-client)" >&2; exit 2; }
done

work=$(mktemp -d)
target_pid=""
cleanup() {
  if [[ -n $target_pid ]]; then kill "$target_pid" 2>/dev/null || true; wait "$target_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

"$target_bin" --listen 127.0.0.1:0 --threads 1 --delay-ms 1 >"$work/target.out" 2>&1 &
target_pid=$!
for _ in $(seq 50); do grep -q '^listening on ' "$work/target.out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$work/target.out" | head -1)
[[ -n $port ]] || { echo "record.sh: target did not start" >&2; exit 1; }
url=http://127.0.0.1:$port/
# A port nothing listens on: bind one, note it, let it go.
refused=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

version_of() {
  case $1 in
    wrk) echo "wrk $(dpkg-query -W -f='${Version}' wrk) ($(wrk -v 2>/dev/null | head -1 | sed 's/ Copyright.*//'))" ;;
    hey) echo "hey $(dpkg-query -W -f='${Version}' hey)" ;;
    h2load) echo "$(h2load --version) (Debian $(dpkg-query -W -f='${Version}' nghttp2-client))" ;;
  esac
}

# record TOOL CASE NOTE -- ARGV...
record() {
  local tool=$1 name=$2 note=$3
  shift 4
  mkdir -p "$here/$tool"
  local rc=0
  timeout 60 "$@" >"$here/$tool/$name.stdout.txt" 2>"$here/$tool/$name.stderr.txt" || rc=$?
  {
    echo "tool: $tool"
    echo "version: $(version_of "$tool")"
    echo "source: recorded by tests/data/clients/record.sh on Debian 12"
    printf 'command:'; printf ' %q' "$@"; echo
    echo "exit_code: $rc"
    echo "target: loadlab-target --threads 1 --delay-ms 1 (127.0.0.1:$port)"
    echo "note: $note"
  } >"$here/$tool/$name.meta.txt"
  echo "recorded $tool/$name (exit $rc)"
}

slow='x-loadlab-delay-ms: 2000'
e503='x-loadlab-status: 503'

record wrk normal "closed loop, no --latency" -- wrk -t 1 -c 4 -d 2s "$url"
record wrk latency "with --latency" -- wrk -t 2 -c 4 -d 2s --latency "$url"
record wrk status503 "every answer 503" -- wrk -t 1 -c 2 -d 1s --latency -H "$e503" "$url"
record wrk close "Connection: close on every request" -- wrk -t 1 -c 2 -d 1s --latency -H 'Connection: close' "$url"
record wrk timeout "2 s server delay, 1 s client timeout" -- wrk -t 1 -c 2 -d 3s --latency --timeout 1s -H "$slow" "$url"
record wrk refused "nothing listens on the port" -- wrk -t 1 -c 2 -d 1s "http://127.0.0.1:$refused/"
record wrk badflag "unknown flag" -- wrk --bogus "$url"

record hey normal "request count" -- hey -n 200 -c 4 "$url"
record hey duration "duration, 2 cpus" -- hey -z 2s -c 4 -cpus 2 "$url"
record hey status503 "every answer 503" -- hey -n 40 -c 2 -H "$e503" "$url"
record hey timeout "2 s server delay, 1 s client timeout" -- hey -n 4 -c 2 -t 1 -H "$slow" "$url"
record hey refused "nothing listens on the port" -- hey -n 10 -c 2 "http://127.0.0.1:$refused/"
record hey badflag "unknown flag" -- hey -bogus "$url"

record h2load normal "request count, HTTP/1.1" -- h2load --h1 -n 200 -c 4 -t 2 "$url"
record h2load duration "duration with warm-up" -- h2load --h1 -D 2 --warm-up-time 1 -c 4 "$url"
record h2load rps "open loop: --rps per client" -- h2load --h1 -n 100 -c 2 --rps 50 "$url"
record h2load status503 "every answer 503" -- h2load --h1 -n 40 -c 2 -H "$e503" "$url"
record h2load close "Connection: close on every request" -- h2load --h1 -n 40 -c 2 -H 'Connection: close' "$url"
record h2load timeout "2 s server delay, 1 s inactivity timeout" -- h2load --h1 -n 4 -c 2 -N 1s -H "$slow" "$url"
record h2load refused "nothing listens on the port" -- h2load --h1 -n 10 -c 2 "http://127.0.0.1:$refused/"
record h2load badflag "unknown flag" -- h2load --bogus "$url"
