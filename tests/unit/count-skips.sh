#!/usr/bin/env bash
# make check: the test of scripts/criterion-count.sh, the count of every
# Criterion suite scripts/test-all.sh and scripts/sanitize.sh run. Its
# fixture suite (tests/fixtures/skipping) has one test that passes, one that
# skips, one that skips without a reason and one to be left out by a filter:
# a skip must be a failure, named with its reason, and a test the filter
# left out nothing at all. Ends with "count-skips: N passed, N failed".
#   tests/unit/count-skips.sh [BUILDDIR]   (default: the current directory)
set -uo pipefail
fixture=${1:-.}/tests/fixtures/skipping
count=$(dirname "$0")/../../scripts/criterion-count.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/cordon-count-skips.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
# expect NAME WANT: the counter's output ($work/out) has the line WANT.
expect() {
  if grep -qxF -- "$2" "$work/out"; then
    passed=$((passed + 1)); echo "count-skips: ok: $1"
  else
    failed=$((failed + 1)); echo "count-skips: FAILED: $1: no line \"$2\" in:"
    # Printed so that no count of this test's own log takes it for a skip.
    sed 's/^/    /; s/\[/(/g' "$work/out"
  fi
}
# suite FILTER [ENV ARGUMENTS...]: the fixture's output, filtered, in $work/skip.log.
suite() {
  local filter=$1; shift
  env "$@" "$fixture" --filter "$filter" >"$work/skip.log" 2>&1
}
reason="deliberately skipped: the counting must make this a failure"
no_allow=$work/none
: >"$no_allow"

suite 'harness/!(filtered_out|skips_without_a_reason)' CRITERION_VERBOSITY_LEVEL=1
bash "$count" -C "$work" -a "$no_allow" "$work/skip.log" >"$work/out"
expect "a pass and a skip are 1 passed, 1 failed" "criterion: 1 passed, 1 failed"
expect "the skip is named with its reason" "skip: skip.log: harness::skips: $reason"

# Allowed where it happened, and only there.
echo "skip.log: harness::skips: $reason" >"$work/allowed"
bash "$count" -C "$work" -a "$work/allowed" "$work/skip.log" >"$work/out"
expect "a skip on the allow-list is not counted" "criterion: 1 passed, 0 failed"
echo "other.log: harness::skips: $reason" >"$work/allowed"
bash "$count" -C "$work" -a "$work/allowed" "$work/skip.log" >"$work/out"
expect "the same skip allowed in another log is counted" "criterion: 1 passed, 1 failed"

suite 'harness/skips_without_a_reason' CRITERION_VERBOSITY_LEVEL=1
bash "$count" -C "$work" -a "$no_allow" "$work/skip.log" >"$work/out"
expect "a skip without a reason is not taken for a test filtered out" "criterion: 0 passed, 1 failed"

# Without the verbose output the skip is invisible: that is a failure too.
suite 'harness/!(filtered_out|skips_without_a_reason)' -u CRITERION_VERBOSITY_LEVEL
bash "$count" -C "$work" -a "$no_allow" "$work/skip.log" >"$work/out"
expect "a log that is not verbose is a failure" "criterion: 1 passed, 1 failed"

# A failing self-test quotes the suite's log (a skip in it) into make
# check's log: its skips, runs and sums are not counted again.
suite 'harness/!(filtered_out|skips_without_a_reason)' CRITERION_VERBOSITY_LEVEL=1
sh "$(dirname "$0")/../contract/selftest.sh" --quote "$work/skip.log" >"$work/quoted.log"
bash "$count" -C "$work" -a "$no_allow" "$work/quoted.log" >"$work/out"
expect "a log the self-test quotes is not counted again" "criterion: 0 passed, 0 failed"

# Each entry of the real allow-list names a test that exists: one renamed
# or removed goes from the list too.
for p in "${1:-.}"/cordon-contract "${1:-.}"/tests/unit/unit-tests "${1:-.}"/tests/mechanism/*-tests; do
  [ -x "$p" ] && "$p" --list
done 2>/dev/null | awk '/^[^ ]+: [0-9]+ tests?$/ { suite = $1; sub(/:$/, "", suite); next }
                       NF >= 2 { print suite "::" $2 }' >"$work/known"
stale=0
while read -r entry; do
  name=$(grep -o -m1 '[A-Za-z0-9_]*::[A-Za-z0-9_]*: ' <<<"$entry")
  grep -qxF -- "${name%: }" "$work/known" || { stale=1; echo "count-skips: no such test: $entry"; }
done < <(grep -v -e '^#' -e '^$' "$(dirname "$0")/../../scripts/allowed-skips")
[ -s "$work/known" ] && [ $stale -eq 0 ] && passed=$((passed + 1)) || failed=$((failed + 1))
echo "count-skips: $([ $stale -eq 0 ] && echo ok || echo FAILED): scripts/allowed-skips names tests that exist"

echo "count-skips: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -eq 8 ]
