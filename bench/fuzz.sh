#!/usr/bin/env bash
# fuzz.sh: builds the libFuzzer targets of tests/fuzz with clang (ASan + UBSan) and runs each
# for a time or a number of executions, then prints per target the executions, exec/s and
# what it found. See docs/fuzzing.md.
#
#   bench/fuzz.sh SECONDS [TARGET...]        each target for SECONDS (e.g. 60)
#   bench/fuzz.sh --runs N [TARGET...]       each target for N executions (e.g. 1000000)
#
# TARGETs: scenario lab agent_spec request response h2 h3 (default: all). A target with a
# dictionary (tests/fuzz/TARGET.dict) gets it with -dict.
# Environment:
#   BUILD_DIR  the clang build tree (default: build-fuzz; configured here when missing)
#   WORK       where the growing corpora, logs and findings go (default: $BUILD_DIR/fuzz-work)
#   NICE       niceness of the build and the fuzzers (default 10)
#   JOBS       build jobs (default 1)
#   FUZZ_ARGS  more libFuzzer flags, e.g. "-max_len=65536"
# A finding (crash, leak, UB, timeout, out of memory) is kept as WORK/artifacts/TARGET/*;
# replay it with `BUILD_DIR/bin/fuzz_TARGET FILE`. Exit status 1 when anything was found.
# The table gives per target the executions, exec/s, and the coverage reached: `cov` (edges of
# instrumented code covered) and `ft` (features: edges by hit count), from libFuzzer's last line.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$here/build-fuzz}
WORK=${WORK:-$BUILD_DIR/fuzz-work}
NICE=${NICE:-10}
JOBS=${JOBS:-1}
FUZZ_ARGS=${FUZZ_ARGS:-}
all_targets=(scenario lab agent_spec request response h2 h3)

usage() {
  echo "usage: $0 SECONDS [TARGET...] | $0 --runs N [TARGET...]  (targets: ${all_targets[*]})" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
if [[ $1 == --runs ]]; then
  [[ ${2:-} =~ ^[0-9]+$ ]] || usage
  limit=(-runs="$2")
  shift 2
else
  [[ $1 =~ ^[0-9]+$ ]] || usage
  limit=(-max_total_time="$1")
  shift
fi
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target $t" >&2; usage; }
done

command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (apt-get install clang)" >&2; exit 2; }
if [[ ! -f $BUILD_DIR/build.ninja ]]; then
  CC=clang CXX=clang++ cmake -S "$here" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DLOADLAB_FUZZ=ON >/dev/null
fi
nice -n "$NICE" cmake --build "$BUILD_DIR" -j"$JOBS" --target "${targets[@]/#/fuzz_}"

found=0
rows=()
for t in "${targets[@]}"; do
  corpus=$WORK/corpus/$t        # grows: the inputs the fuzzer found new coverage with
  artifacts=$WORK/artifacts/$t
  log=$WORK/$t.log
  mkdir -p "$corpus" "$artifacts"
  echo "fuzz.sh: $t (log: $log)" >&2
  rc=0
  dict=()
  [[ -f $here/tests/fuzz/$t.dict ]] && dict=(-dict="$here/tests/fuzz/$t.dict")
  # shellcheck disable=SC2086  # FUZZ_ARGS is a list of flags
  nice -n "$NICE" "$BUILD_DIR/bin/fuzz_$t" "${limit[@]}" -timeout=10 -print_final_stats=1 "${dict[@]}" \
    -artifact_prefix="$artifacts/" $FUZZ_ARGS "$corpus" "$here/tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\).*/\1/p' "$log" | tail -1)
  ft=$(sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\).*/\2/p' "$log" | tail -1)
  finding=$(sed -n 's/.*Test unit written to //p' "$log" | head -1)
  result=ok
  if [[ $rc -ne 0 || -n $finding ]]; then
    found=1
    what=$(grep -m1 -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" || echo "exit status $rc")
    result="FOUND: ${what} ${finding:+($finding)}"
  fi
  rows+=("$(printf '%-11s %12s %9s %7s %7s  %s' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$result")")
done

printf '%-11s %12s %9s %7s %7s  %s\n' target executions exec/s cov ft result
printf '%s\n' "${rows[@]}"
exit $found
