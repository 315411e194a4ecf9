#!/bin/sh
# Self-test of cordon-contract: the suite must fail a provider that lies
# about its isolation and one that leaves an execution's processes on the
# host, and pass an honest one.
#
#   tests/contract/selftest.sh [BUILDDIR]
#
# BUILDDIR (default: $abs_top_builddir, else the current directory) holds
# cordon-contract, cordon-observe, .libs/trusted-local.so and the fixture
# providers under tests/fixtures/.libs/ (built by `make check`; built here
# when missing). Prints one line per check, then "N passed, N failed";
# exits non-zero if any check failed.
set -u

builddir=${1:-${abs_top_builddir:-.}}
builddir=$(cd "$builddir" && pwd) || exit 2
contract=$builddir/cordon-contract
observer=$builddir/cordon-observe
honest=$builddir/.libs/trusted-local.so
liar=$builddir/tests/fixtures/.libs/liar.so
leaker=$builddir/tests/fixtures/.libs/leaker.so
deaf=$builddir/tests/fixtures/.libs/deaf.so
refuser=$builddir/tests/fixtures/.libs/refuser.so
synthetic=$builddir/tests/fixtures/.libs/synthetic.so

missing=
for f in "$contract" "$observer" "$honest" "$liar" "$leaker" "$deaf" "$refuser" \
         "$synthetic"; do
    [ -e "$f" ] || missing=yes
done
if [ -n "$missing" ]; then
    echo "selftest: building what is missing in $builddir"
    make -C "$builddir" cordon-contract cordon-observe trusted-local.la \
        tests/fixtures/liar.la tests/fixtures/leaker.la \
        tests/fixtures/deaf.la tests/fixtures/refuser.la tests/fixtures/synthetic.la >/dev/null || exit 2
fi

log=$(mktemp "${TMPDIR:-/tmp}/cordon-contract-selftest.XXXXXX") || exit 2
trap 'rm -f "$log"' EXIT INT TERM
passed=0
failed=0

ok() { echo "selftest: ok: $1"; passed=$((passed + 1)); }
not_ok() {
    echo "selftest: FAILED: $1"
    sed 's/^/    /' "$log" | tail -n 40
    failed=$((failed + 1))
}

# run NAME.so [extra options...]: the suite's output goes to $log, the
# exit status to $rc.
run() {
    provider=$1
    shift
    "$contract" --provider "$provider" --observer "$observer" --ascii "$@" >"$log" 2>&1
    rc=$?
}

# The liar forwards to trusted-local but claims all four axes: the suite
# must fail it, and the claims check must be among the failures.
run "$liar"
if [ "$rc" -eq 0 ]; then
    not_ok "liar.so passed the contract (exit 0)"
elif ! grep -q '\[FAIL\] contract::claims_hold_under_independent_observation' "$log"; then
    not_ok "liar.so failed (exit $rc), but not the claims check"
else
    ok "liar.so fails the contract (exit $rc), the claims check among the failures"
fi

# The leaker forwards to trusted-local but its exec kills only the process
# group and its terminate forgets processes: a setsid child outlives the
# execution. The leaked-process check must be among the failures.
run "$leaker"
if [ "$rc" -eq 0 ]; then
    not_ok "leaker.so passed the contract (exit 0)"
elif ! grep -q '\[FAIL\] contract::terminate_leaves_no_detached_child_on_the_host' "$log"; then
    not_ok "leaker.so failed (exit $rc), but not the leaked-process check"
else
    ok "leaker.so fails the contract (exit $rc), the leaked-process check among the failures"
fi

# One check each, for a fault only that check can see: an exec that waits
# for its program and never watches cancel_fd cannot stop an endless
# writer by the output budget; an exec that refuses every request must not
# pass the bad-request table.
run "$deaf" --filter 'contract/output_budget_stops_the_exec'
if [ "$rc" -ne 0 ] && grep -q '\[FAIL\] contract::output_budget_stops_the_exec' "$log"; then
    ok "deaf.so fails output_budget_stops_the_exec"
else
    not_ok "deaf.so (exit $rc) did not fail output_budget_stops_the_exec"
fi
run "$refuser" --filter 'bad_exec_request_is_refused*'
if [ "$rc" -ne 0 ] && grep -q '\[FAIL\] contract::bad_exec_request_is_refused__' "$log"; then
    ok "refuser.so fails bad_exec_request_is_refused"
else
    not_ok "refuser.so (exit $rc) did not fail bad_exec_request_is_refused"
fi

# The honest provider passes.
run "$honest"
if [ "$rc" -eq 0 ]; then
    ok "trusted-local.so passes the contract"
else
    not_ok "trusted-local.so fails the contract (exit $rc)"
fi

# Facts that were not observed fail the "observed" rule, unless the caller
# accepts them explicitly.
run "$synthetic"
if [ "$rc" -ne 0 ] && grep -q '\[FAIL\] contract::probe_facts_are_observed' "$log"; then
    ok "synthetic.so fails the observed rule without --allow-synthetic"
else
    not_ok "synthetic.so (exit $rc) did not fail probe_facts_are_observed"
fi
run "$synthetic" --allow-synthetic
if [ "$rc" -eq 0 ]; then
    ok "synthetic.so passes with --allow-synthetic"
else
    not_ok "synthetic.so fails with --allow-synthetic (exit $rc)"
fi

# --filter takes the names the suite prints, and a filter that selects
# nothing fails instead of passing.
for name in contract::reclaim_of_unknown_id_succeeds reclaim_of_unknown_id_succeeds; do
    run "$honest" --filter "$name"
    if [ "$rc" -eq 0 ] && grep -q 'Tested: 1 | Passing: 1 ' "$log"; then
        ok "--filter $name runs that one check"
    else
        not_ok "--filter $name (exit $rc) did not run exactly that check"
    fi
done
run "$honest" --filter contract::no_such_check
if [ "$rc" -eq 1 ] && grep -q 'selects no check' "$log"; then
    ok "a filter that selects no check fails the run"
else
    not_ok "--filter contract::no_such_check exited $rc without saying it selects no check"
fi

# The man page describes exactly the checks --list shows (make check runs
# the same script).
if sh "$(dirname "$0")/man-lists-checks.sh" "$contract" >"$log" 2>&1; then
    ok "$(sed -n 's/^ok: //p' "$log")"
else
    not_ok "$(sed -n 's/^FAILED: //p' "$log")"
fi

# The plain summary line, for the runner that sums every suite.
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
