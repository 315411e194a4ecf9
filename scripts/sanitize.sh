#!/usr/bin/env bash
# The unit suite and the contract suite (against every provider we ship, and
# its self-test) in an ASan+UBSan build of their own, with LeakSanitizer on.
#   scripts/sanitize.sh
#       configures $SAN_BUILD (default _build-asan) with --enable-sanitizers,
#       builds it and runs `make check` there for those suites only. Needs
#       what the contract suite needs: a Docker daemon and the test images
#       in CORDON_DOCKER_IMAGE_* / CORDON_RUNC_IMAGE (scripts/test-all.sh
#       sets them up and calls this).
# Every sanitized process, the cordon commands the tests start included,
# writes its report to $SAN_BUILD/sanitizer-reports/ instead of stderr, so
# a report from a child whose stderr a test swallowed is still seen. Each
# report that holds an error (a leak, a memory error, undefined behaviour)
# counts as one failure. Leaks are suppressed only in third-party code
# (tests/sanitizers/lsan.supp says which, and why).
# Ends with "sanitize: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
build=${SAN_BUILD:-_build-asan}
[ -x configure ] || ./autogen.sh
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ]; then
  "$top/configure" CFLAGS="-O1 -g" --enable-sanitizers --enable-werror >configure.out 2>&1 ||
    { tail -n 30 configure.out; echo "sanitize: 0 passed, 1 failed"; exit 1; }
fi
make -j"$(nproc)" >make.out 2>&1 ||
  { tail -n 40 make.out; echo "sanitize: 0 passed, 1 failed"; exit 1; }

reports=$(pwd)/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
chmod 1777 "$reports"   # a provider may run a sanitized helper as another user
# detect_leaks is on by default on x86_64; said here so that it stays on.
# abort_on_error=0 and the default exit code let a test see a failing child.
export ASAN_OPTIONS="detect_leaks=1:log_path=$reports/asan:strict_string_checks=1:detect_stack_use_after_return=1"
export LSAN_OPTIONS="suppressions=$top/tests/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:log_path=$reports/ubsan"
# The unit suite whole: tests/unit/unit.sh (what make check runs) and
# tests/unit/unit-root.sh (its *_root suites, from make check-integration).
suites="tests/unit/unit.sh tests/unit/unit-root.sh tests/contract/run-contract.sh"
logs="tests/unit/unit.sh.log tests/unit/unit-root.sh.log tests/contract/run-contract.sh.log"
rm -f $logs
make check TESTS="$suites" >check.out 2>&1
check_rc=$?

# Every skip is a failure too, named with its reason (scripts/criterion-count.sh).
present=()
for log in $logs; do [ -f "$log" ] && present+=("$log"); done
bash "$top/scripts/criterion-count.sh" "${present[@]}" >count.out
sed 's/^/sanitize: /' count.out
passed=$(sed -n 's/^criterion: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p' count.out)
failed=$(sed -n 's/^criterion: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p' count.out)
echo "sanitize: Criterion: $passed passed, $failed failed (make check exited $check_rc)"
if [ "$check_rc" -ne 0 ]; then
  failed=$((failed + 1))
  grep -h -B2 -A12 -E 'FAIL|Failing: [1-9]|Crashing: [1-9]' $logs 2>/dev/null | head -n 80
fi
# A report that only warns (ASan notes a jump off the stack of a clone
# child, say) is not an error; one with ERROR or "runtime error" is.
bad=0
for f in "$reports"/*; do
  [ -e "$f" ] || continue
  if grep -q -E 'ERROR: |runtime error:' "$f"; then
    bad=$((bad + 1))
    echo "sanitize: report ${f##*/}:"
    head -n 40 "$f"
  fi
done
echo "sanitize: $bad sanitizer report(s) with an error"
failed=$((failed + bad))
echo "sanitize: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
