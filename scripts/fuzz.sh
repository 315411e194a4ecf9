#!/usr/bin/env bash
# Build the libFuzzer targets in a tree of their own and run each one.
#   scripts/fuzz.sh [-t SECONDS] [-j JOBS] [TARGET...]
#       configure $FUZZ_BUILD (default _build-fuzz) with CC=clang
#       --enable-fuzz --disable-shared, build, and run every target (or the
#       ones named, e.g. fuzz-tar) for SECONDS (default 60), JOBS at a time
#       (default: the number of cores)
#   scripts/fuzz.sh --run CORPUS_DIR TARGET...
#       what `make fuzz` calls inside such a tree
# Each target starts from its seed corpus, tests/fuzz/corpus/<name>, plus
# what earlier runs found ($FUZZ_BUILD/fuzz-work/<name>). Prints one line per
# target: seconds, executions, corpus size, findings. A finding (crash,
# sanitizer report, timeout, out-of-memory) leaves its reproducer in
# $FUZZ_BUILD/fuzz-work/findings/ and makes the script exit 1; rerun it with
# `tests/fuzz/<name> <file>` in that tree. Ends with "fuzz: N passed, N failed".
set -uo pipefail

run_targets() {
  local corpus=$1; shift
  local seconds=${FUZZ_SECONDS:-60} jobs=${FUZZ_JOBS:-$(nproc)}
  local work=fuzz-work pids=() t
  mkdir -p "$work/findings"
  for t in "$@"; do
    local name=${t##*/}
    mkdir -p "$work/$name"
    [ -d "$corpus/$name" ] || { echo "fuzz: $name: no seed corpus at $corpus/$name" >&2; return 1; }
    # Each target's whole output goes to its log; the summary line is ours.
    ( "$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$work/findings/$name-" \
        "$work/$name" "$corpus/$name" >"$work/$name.log" 2>&1
      echo $? >"$work/$name.rc" ) &
    pids+=($!)
    if [ ${#pids[@]} -ge "$jobs" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
  done
  wait
  local passed=0 failed=0
  for t in "$@"; do
    local name=${t##*/} rc execs units
    rc=$(cat "$work/$name.rc" 2>/dev/null || echo 1)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$name.log" | tail -n1)
    units=$(ls -1 "$work/$name" "$corpus/$name" | grep -vc ':$')
    if [ "$rc" -eq 0 ] && grep -q '^Done [0-9]* runs' "$work/$name.log"; then
      passed=$((passed + 1))
      echo "fuzz: $name: ${seconds} s, ${execs:-?} executions, $units inputs in the corpus, no finding"
    else
      failed=$((failed + 1))
      echo "fuzz: $name: FAILED (exit $rc) after ${execs:-?} executions; the end of $work/$name.log:"
      grep -E 'ERROR|SUMMARY|runtime error|==[0-9]+==|Test unit written|abort' "$work/$name.log" | head -n 20
      tail -n 30 "$work/$name.log"
    fi
  done
  echo "fuzz: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

if [ "${1:-}" = "--run" ]; then
  shift
  run_targets "$@"
  exit
fi

seconds=60
jobs=$(nproc)
while getopts "t:j:" o; do
  case $o in
    t) seconds=$OPTARG ;;
    j) jobs=$OPTARG ;;
    *) echo "usage: $0 [-t SECONDS] [-j JOBS] [TARGET...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
cd "$(dirname "$0")/.."
top=$(pwd)
build=${FUZZ_BUILD:-_build-fuzz}
command -v clang >/dev/null && [ -n "$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null)" ] || {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends clang libclang-rt-14-dev >/dev/null
}
[ -x configure ] || ./autogen.sh
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ]; then
  "$top/configure" CC=clang CFLAGS="-O1 -g" --enable-fuzz --disable-shared >configure.out 2>&1 ||
    { tail -n 30 configure.out; echo "fuzz: 0 passed, 1 failed"; exit 1; }
fi
targets=()
if [ $# -gt 0 ]; then for t in "$@"; do targets+=("tests/fuzz/${t#tests/fuzz/}"); done; fi
make -j"$(nproc)" ${targets[@]+"${targets[@]}"} $( [ $# -gt 0 ] || echo fuzz-targets ) >make.out 2>&1 ||
  { tail -n 40 make.out; echo "fuzz: 0 passed, 1 failed"; exit 1; }
[ ${#targets[@]} -gt 0 ] || targets=($(make -s print-fuzz-targets))
FUZZ_SECONDS=$seconds FUZZ_JOBS=$jobs run_targets "$top/tests/fuzz/corpus" "${targets[@]}"
