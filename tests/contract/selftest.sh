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

# A log, as a failure shows it: indented, its Criterion markers "[" made
# "(" and its summary renamed, so that scripts/criterion-count.sh, which
# reads make check's log where this lands, counts none of the suite's
# skips, runs or sums here again. `selftest.sh --quote FILE` prints FILE
# so (tests/unit/count-skips.sh).
quote() { sed 's/^/    /; s/\[/(/g; s/Synthesis:/self-test run:/' "$1"; }
if [ "${1:-}" = --quote ]; then
    quote "$2"
    exit
fi

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
hostroot=$builddir/tests/fixtures/.libs/hostroot.so

missing=
for f in "$contract" "$observer" "$honest" "$liar" "$leaker" "$deaf" "$refuser" \
         "$synthetic" "$hostroot"; do
    [ -e "$f" ] || missing=yes
done
if [ -n "$missing" ]; then
    echo "selftest: building what is missing in $builddir"
    make -C "$builddir" cordon-contract cordon-observe trusted-local.la \
        tests/fixtures/liar.la tests/fixtures/leaker.la \
        tests/fixtures/deaf.la tests/fixtures/refuser.la tests/fixtures/synthetic.la \
        tests/fixtures/hostroot.la >/dev/null || exit 2
fi

log=$(mktemp "${TMPDIR:-/tmp}/cordon-contract-selftest.XXXXXX") || exit 2
cage='' hostfs=''
cleanup() {
    rm -f "$log"
    [ -z "$hostfs" ] || umount "$hostfs" 2>/dev/null
    [ -z "$cage" ] || rm -rf "$cage"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
passed=0
failed=0

ok() { echo "selftest: ok: $1"; passed=$((passed + 1)); }
not_ok() {
    echo "selftest: FAILED: $1"
    quote "$log" | tail -n 40
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

# The suite never harms the host it checks a provider from: hostroot.so
# runs every command on the host as root while claiming every axis, and
# the whole suite runs against it in a cage (cage.sh: its own pid and
# mount namespaces, small private tmpfs over /dev/shm, /tmp and
# /sys/fs/cgroup, a memory cgroup) beside a canary. The suite must fail
# it, its checks that signal or fill saying they were not run, and leave
# the canary beating and the tmpfs and memory as they were.
# A fill file a killed run left in the cage's /dev/shm must be gone too,
# and one on any other tmpfs must be left alone (the suite removes only
# its own, at the top of /dev/shm, /tmp, /run and $TMPDIR).
# A small tmpfs of the host's, mounted here for the run, must be covered
# by one of the cage's, like every writable tmpfs of the host's.
cage=$(mktemp -d "$builddir/cordon-cage.XXXXXX") || exit 2
if mkdir "$cage/hostfs" && mount -t tmpfs -o size=1m cordon-selftest-hostfs "$cage/hostfs"; then
    hostfs=$cage/hostfs
else
    not_ok "could not mount a tmpfs at $cage/hostfs"
fi
sh "$(dirname "$0")/cage.sh" "$cage" 600 sh -c 'o=$1/.cordon-fill-contract-0; shift
    : >/dev/shm/.cordon-fill-contract-0 && : >"$o" || exit 2
    "$@"; rc=$?
    [ -e "$o" ] && echo "selftest: the fill file elsewhere was kept"
    exit $rc' stale "$cage/hostfs" \
    "$contract" --provider "$hostroot" --observer "$observer" --ascii -j1 >"$cage/report" 2>&1
cage_value() { sed -n "s/^cage: $1 //p" "$cage/report" | head -n 1; }
show_cage() { cat "$cage/report" >"$log"; tail -n 30 "$cage/run.log" >>"$log" 2>/dev/null; }
show_cage
if grep -q '^cage: done' "$cage/report" && ! grep -q '^cage: killed' "$cage/report"; then
    ok "the cage ran the suite against hostroot.so to its end"
else
    not_ok "the cage did not run the suite to its end: $(cage_value killed)$(cage_value error)"
fi
# shellcheck disable=SC2046
set -- $(cage_value canary_beats) 0 0
state=$(cage_value canary_state)
case "$state" in
    [RSD]) if [ "$2" -gt "$1" ]; then ok "the canary beside the suite was never stopped or killed"
           else not_ok "the canary stopped beating ($1, then $2)"; fi ;;
    *) not_ok "the canary beside the suite is ${state:-not reported} (T: stopped)" ;;
esac
# Each tmpfs at most 1 MiB (1024 KiB) above what it held before, at any
# moment of the run, and back where it was after; no fill file anywhere.
# shellcheck disable=SC2046
set -- $(cage_value before_kb) $(cage_value most_kb) $(cage_value after_kb)
held=ok
if [ $# -ne 9 ]; then
    held="not reported"
else
    for i in 1 2 3; do
        eval "b=\${$i} m=\${$((i + 3))} a=\${$((i + 6))}"
        # shellcheck disable=SC2154 # (b, m and a are set by the eval)
        [ "$m" -le $((b + 1024)) ] && [ "$a" -le $((b + 1024)) ] || held="held $b, at most $m, after $a KiB"
    done
fi
if [ "$held" = ok ] && [ "$(cage_value fill_files)" = 0 ] && [ "$(cage_value host_fill_files)" = 0 ] &&
    grep -q 'removed /dev/shm/.cordon-fill-contract-0, left by an earlier run' "$cage/run.log"; then
    ok "/dev/shm, /tmp and /sys/fs/cgroup held what they held, the stale fill file removed"
else
    not_ok "a tmpfs beside the suite was written: $held; fill files $(cage_value fill_files) in the cage, $(cage_value host_fill_files) on the host"
fi
# Every writable tmpfs inside was the cage's own, no larger than its
# 64 MiB, the host's one mounted above among them.
tmpfs=$(sed -n 's/^cage: tmpfs //p' "$cage/report")
foreign=$(echo "$tmpfs" | awk '$2 != "cordon-cage" || $3 > 65536')
if [ -n "$tmpfs" ] && [ -z "$foreign" ] && echo "$tmpfs" | grep -q "^$cage/hostfs cordon-cage "; then
    ok "every writable tmpfs in the cage was its own ($(echo "$tmpfs" | wc -l), $cage/hostfs among them)"
else
    not_ok "a writable tmpfs in the cage was not its own: ${foreign:-none reported, or not $cage/hostfs}"
fi
if grep -q '^selftest: the fill file elsewhere was kept' "$cage/run.log"; then
    ok "the suite left a fill-named file on another tmpfs alone"
else
    not_ok "the suite removed a fill-named file outside /dev/shm, /tmp, /run and \$TMPDIR"
fi
if [ "$(cage_value memory_failcnt)" = 0 ] && [ "$(cage_value memory_oom_kill)" = 0 ]; then
    ok "the cage's memory never reached its limit ($(cage_value memory_max_usage))"
else
    not_ok "the cage's memory reached its limit: failcnt $(cage_value memory_failcnt), oom_kill $(cage_value memory_oom_kill)"
fi
# Each check that signals or fills failed, saying it was not run. The run
# above is -j1: with parallel workers another check's result line can come
# between a check's message and its own [FAIL], and this reading would miss it.
notrun=$(awk '/^\[(PASS|FAIL|SKIP)\]/ { if ($0 ~ /^\[FAIL\]/ && seen) print $2; seen = 0; next }
              /not run: the sandbox is not contained/ { seen = 1 }' "$cage/run.log" 2>/dev/null)
missing=
for check in attack_stopping_every_process_inside_does_not_stop_the_deadline \
             disk_budget_covers_every_writable_tmpfs attack_code_inside_cannot_stop_its_own_sandbox; do
    # shellcheck disable=SC2086,SC2116 # (one line of words)
    case " $(echo $notrun) " in *" contract::$check: "*) ;; *) missing="$missing $check" ;; esac
done
if [ "$(cage_value command_rc)" != 0 ] && [ -z "$missing" ]; then
    ok "hostroot.so fails the contract, its checks that signal or fill not run (not contained)"
else
    not_ok "hostroot.so (exit $(cage_value command_rc)): not failed as not contained:${missing:- (passed)}"
fi
umount "$hostfs" && hostfs=''
rm -rf "$cage" && cage=''

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
