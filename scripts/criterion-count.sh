#!/usr/bin/env bash
# Sums what Criterion suites did, from their logs, a skipped test counted
# as a failure:
#   scripts/criterion-count.sh [-C DIR] [-a ALLOWED] LOG...
# Each LOG holds the output of one or more Criterion runs made with
# CRITERION_VERBOSITY_LEVEL=1 (make check and make check-integration set it:
# Makefile.am's AM_TESTS_ENVIRONMENT). Prints each skip as
#   skip: WHERE: SUITE::TEST: REASON
# where WHERE is the log's path under DIR (default: the current directory),
# followed by " (SECTION)" when a line "== SECTION" came before it in the log
# (tests/contract/run-contract.sh names each provider so), and ends with
#   criterion: N passed, N failed
# Failed sums Failing and Crashing of every "Synthesis:" line and every skip.
#
# Why the verbose output: Criterion's summary leaves skipped tests out of
# "Tested", and its TAP, JSON and XML reports say "skipped" alike for a test
# that ran and called cr_skip_test without a reason and for one that a
# --filter left out (tests/unit/unit.sh runs all but the *_root suites).
# Only the verbose output tells them apart: "[SKIP] S::T: Test is disabled"
# for a test that was never run (filtered out, or .disabled), the skip's
# reason ("Test was skipped" when it gave none) for one that ran.
#
# A skip that may happen in a run is written, exactly as printed above
# without "skip: ", in ALLOWED (default: scripts/allowed-skips, beside this
# script), with a comment saying why; it is printed as "allowed skip:" and
# not counted. The same skip elsewhere (another provider's section, another
# reason) is still a failure.
#
# A log whose synthesis counts more tests than it has "[RUN ]" lines was not
# verbose: its skips cannot be seen, and that is one failure.
set -uo pipefail
dir=.
allowed=$(dirname "$0")/allowed-skips
while getopts C:a: opt; do
  case $opt in
    C) dir=$OPTARG ;;
    a) allowed=$OPTARG ;;
    *) echo "usage: $0 [-C DIR] [-a ALLOWED] LOG..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ -r "$allowed" ] || { echo "criterion-count: cannot read the allow-list $allowed" >&2; exit 2; }

passed=0 failed=0 skips=0
for log in "$@"; do
  where=${log#"$dir"/}
  # mawk has no \x escapes in regexps: the colours go first, by sed.
  while IFS=$'\t' read -r kind a b c d; do
    case $kind in
      skip)
        if grep -v '^#' "$allowed" | grep -qxF -- "$a"; then
          echo "allowed skip: $a"
        else
          echo "skip: $a"; skips=$((skips + 1))
        fi ;;
      sum)
        passed=$((passed + b)); failed=$((failed + c))
        if [ "$d" -lt "$a" ]; then
          failed=$((failed + 1))
          echo "criterion: $where: $a tests ran but only $d \"[RUN ]\" lines: not verbose" \
            "(CRITERION_VERBOSITY_LEVEL=1), so its skips cannot be counted"
        fi ;;
    esac
  done < <(sed 's/\x1b\[[0-9;]*m//g' "$log" | awk -v where="$where" '
    # A section of run-contract.sh: "== cordon-contract --provider docker.so".
    /^== / { section = " (" substr($0, 4) ")"; next }
    /\[RUN \] / { runs++ }
    # Unanchored: a line a test printed without its newline may come first.
    match($0, /\[SKIP\] [^ ]+: /) {
      rest = substr($0, RSTART + 7)
      i = index(rest, ": ")
      reason = substr(rest, i + 2)
      sub(/ +$/, "", reason)
      if (reason != "Test is disabled")
        printf "skip\t%s%s: %s: %s\n", where, section, substr(rest, 1, i - 1), reason
    }
    /Synthesis: Tested: / {
      n = split($0, f, /[|:] */)
      for (k = 1; k < n; k++) {
        v = f[k + 1] + 0
        if (f[k] ~ /Tested *$/) tested += v
        if (f[k] ~ /Passing *$/) passing += v
        if (f[k] ~ /(Failing|Crashing) *$/) failing += v
      }
    }
    END { printf "sum\t%d\t%d\t%d\t%d\n", tested, passing, failing, runs }')
done
echo "criterion: $skips skipped test(s), each counted as failed"
echo "criterion: $passed passed, $((failed + skips)) failed"
