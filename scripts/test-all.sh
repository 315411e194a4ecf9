#!/usr/bin/env bash
# Set everything up and run every test: unit (Criterion), provider mechanism
# tests on the real host, the contract suite against each provider and its
# self-test, make distcheck, and a leave-no-trace check. Ends with one line
# "cordon: N passed, N failed" summing every Criterion suite and check.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
BUILD=${BUILD:-_build}
passed=0
failed=0
note() { printf '\n== %s\n' "$*"; }
check() { # name, then a command: counts as one test
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "check ok: $name"; else failed=$((failed + 1)); echo "check FAILED: $name"; fi
}

snapshot_tmp() { ls -1d /tmp/cordon-* /tmp/cordon.* 2>/dev/null | sort; }
before_tmp=$(snapshot_tmp)

note "setup"
if ! bash scripts/setup.sh; then
  echo "setup failed"
  echo "cordon: 0 passed, 1 failed"
  exit 1
fi

note "unit, mechanism and contract suites (make check)"
( cd "$BUILD" && make -j"$(nproc)" check ) 
check_rc=$?
# Sum every Criterion synthesis line of the suites make check ran.
while read -r line; do
  t=$(sed -n 's/.*Tested: \([0-9]*\).*/\1/p' <<<"$line")
  p=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$line")
  f=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$line")
  c=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$line")
  passed=$((passed + p)); failed=$((failed + f + c))
done < <(find "$BUILD/tests" -name '*.log' -exec grep -h 'Synthesis: Tested' {} + 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g')
for log in $(find "$BUILD/tests" -name '*.log' ! -name 'test-suite.log' | sort); do
  note "log: ${log#$BUILD/}"
  tail -n 40 "$log"
done
if [ $check_rc -ne 0 ]; then
  failed=$((failed + 1)); echo "check FAILED: make check exited $check_rc"
fi

note "make distcheck"
check "make distcheck" bash -c "cd '$BUILD' && make -j$(nproc) distcheck >'$top/$BUILD/distcheck.out' 2>&1 || { tail -n 60 '$top/$BUILD/distcheck.out'; exit 1; }"

note "leave no trace"
no_trace() {
  local bad=0 after
  if [ -d /run/cordon/trusted-local ] && [ -n "$(ls -A /run/cordon/trusted-local)" ]; then
    echo "left behind: $(ls /run/cordon/trusted-local)"; bad=1
  fi
  if grep -q cordon /proc/mounts; then echo "left behind: mounts"; grep cordon /proc/mounts; bad=1; fi
  if pgrep -f cordon-observe >/dev/null; then echo "left behind: cordon-observe processes"; bad=1; fi
  after=$(snapshot_tmp)
  if [ "$after" != "$before_tmp" ]; then echo "left behind in /tmp:"; comm -13 <(echo "$before_tmp") <(echo "$after"); bad=1; fi
  return $bad
}
check "leave no trace" no_trace

echo
echo "cordon: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
