#!/usr/bin/env bash
# Set everything up and run every test: unit (Criterion), provider mechanism
# tests on the real host, the contract suite against each provider and its
# self-test, the kill battery, the unit and contract suites again under
# ASan+UBSan+LSan, every fuzz target, the Debian packages in a clean root
# (scripts/debian-check.sh), make distcheck, and a leave-no-trace
# check. Each phase says its name when it starts and its wall seconds when
# it ends; a table of them comes just before the last line,
# "cordon: N passed, N failed", which sums every Criterion suite and check.
# A skipped test is a failure (scripts/criterion-count.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
BUILD=${BUILD:-_build}
passed=0
failed=0
note() { printf '\n== %s\n' "$*"; }
phase_names=() phase_secs=() phase_name='' phase_t0=0
phase() { # name, what it does: ends the phase under way, starts this one
  phase_end
  phase_name=$1 phase_t0=$SECONDS
  note "$1: $2"
}
phase_end() {
  [ -n "$phase_name" ] || return 0
  phase_names+=("$phase_name") phase_secs+=($((SECONDS - phase_t0)))
  echo "== $phase_name: done in $((SECONDS - phase_t0)) s"
  phase_name=''
}
finish() { # the phases' times, then the last line; its status is the run's
  phase_end
  echo
  echo "phases (wall seconds):"
  for i in "${!phase_names[@]}"; do printf '  %-24s %6d\n' "${phase_names[$i]}" "${phase_secs[$i]}"; done
  printf '  %-24s %6d\n' total "$SECONDS"
  echo
  echo "cordon: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
check() { # name, then a command: counts as one test
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "check ok: $name"; else failed=$((failed + 1)); echo "check FAILED: $name"; fi
}

# Adds a script's "PREFIX: N passed, N failed" line to the totals. Fewer
# than MIN passing means part of it did not run, which is no pass.
add_summary() { # prefix, output file, min, what the failure line says
  local p f
  p=$(sed -n "s/^$1: \([0-9]*\) passed, \([0-9]*\) failed\$/\1/p" "$2")
  f=$(sed -n "s/^$1: \([0-9]*\) passed, \([0-9]*\) failed\$/\2/p" "$2")
  if [ -z "$p" ] || [ "$p" -lt "$3" ]; then
    failed=$((failed + 1)); echo "check FAILED: $1: $4"
  fi
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
}

# This run's id: it names what the run makes where a name is free to
# choose (the directories of its Docker daemon and of the docker daemon
# test's).
CORDON_TEST_RUN_ID=${CORDON_TEST_RUN_ID:-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')}
export CORDON_TEST_RUN_ID
echo "test run $CORDON_TEST_RUN_ID"

phase setup "leftovers of a killed run, then the packages and the build (scripts/setup.sh)"

# What a run killed part-way on this machine left (its sandboxes, mounts,
# cgroups) is reclaimed first in CI. Elsewhere they may be real executions
# or other cordon work: only named, unless asked. Either way the
# leave-no-trace check at the end judges what appeared after its snapshot
# (scripts/leftovers.sh), and names the rest "not ours".
reclaim=(--dry-run)
[ "${CI:-}" = true ] || [ "${CORDON_RECLAIM_LEFTOVERS:-}" = 1 ] && reclaim=()
bash scripts/reclaim-leftovers.sh "${reclaim[@]}"

if ! bash scripts/setup.sh; then
  echo "setup failed"
  failed=1
  finish
  exit 1
fi

phase images "a Docker daemon of the run's own, and the test images"
# The docker tier runs on a daemon of the run's own, started here whatever
# daemon the machine runs (tests/mechanism/private-dockerd.sh): its own
# socket, data root, exec root, pid file and containerd, all in docker_dir,
# no bridge or iptables rules, the test runtimes (cordon-test-runc, runsc)
# registered. DOCKER_HOST names it to everything that reaches Docker:
# docker.so (the docker suites, the contract runs, the kill battery, the
# sanitizer build's contract run), the docker command in the tests and
# scripts (reclaim, leftovers, build-images.sh's import) and tests/need.sh.
# The machine's own daemon, if it has one, is never reached, and its pids
# are checked to be the same at the end. The run's daemon is stopped and
# its directory removed at the end (and by the trap on any other exit).
# The directory is a dot directory: scripts/leftovers.sh judges cordon's
# objects in the daemon, not the daemon's own files.
docker_dir="${TMPDIR:-/tmp}/.cordon-dockerd-$CORDON_TEST_RUN_ID"
export DOCKER_HOST="unix://$docker_dir/docker.sock"
docker_log="$top/$BUILD/dockerd.log" # its log, kept when it is removed
# dockerd processes other than the run's: the machine's, whose pids must
# not change (a zombie is not one).
machine_dockerds() {
  local p
  for p in $(ps -C dockerd -o stat=,pid= | awk '$1 !~ /^Z/ { print $2 }'); do
    tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q -e "$docker_dir/" -e '/cordon-dockerd-' ||
      printf '%s ' "$p"
  done
  echo
}
machine_dockerds_before=$(machine_dockerds)
echo "the machine's dockerd pids (never touched): ${machine_dockerds_before:-none}"
docker_start() { bash tests/mechanism/private-dockerd.sh start "$docker_dir" --test-runtimes; }
# Stops the run's daemon and removes its directory, keeping its log.
docker_remove() {
  [ -d "$docker_dir" ] || return 0
  cp "$docker_dir/dockerd.log" "$docker_log" 2>/dev/null
  bash tests/mechanism/private-dockerd.sh remove "$docker_dir"
}
# The docker daemon test's private daemon, if that test died before its
# fini: stopped and its directory removed. Prints what it removed.
remove_private_daemons() {
  local d
  for d in "${TMPDIR:-/tmp}/cordon-dockerd-$CORDON_TEST_RUN_ID".*; do
    [ -d "$d" ] || continue
    echo "$d"
    bash tests/mechanism/private-dockerd.sh remove "$d" >/dev/null 2>&1
  done
}
trap 'remove_private_daemons >/dev/null; docker_remove >/dev/null 2>&1' EXIT
# containerd's socket, the longest path under it, must fit a sockaddr_un.
ttrpc=/exec/containerd/containerd.sock.ttrpc
if [ $((${#docker_dir} + ${#ttrpc})) -gt 107 ]; then
  echo "the run's Docker daemon: $docker_dir is too long for a socket path: set TMPDIR to a shorter one"
fi
check "a Docker daemon of the run's own answers (tests/mechanism/private-dockerd.sh)" docker_start
bash scripts/reclaim-leftovers.sh "${reclaim[@]}" --docker
# Every cordon object on the machine now (the run's daemon answers, so its
# containers are in it): the leave-no-trace check judges only newer ones.
mkdir -p "$BUILD"
bash scripts/leftovers.sh snapshot "$BUILD/leftovers.before"
# Rootfs tarballs from Debian packages (mmdebstrap), cached by recipe, and
# imported into the run's daemon; every test pins them by digest.
images=$(bash tests/images/build-images.sh) || { echo "building test images failed"; images=""; }
# A daemon that died or a failed import is said with its cause, then the
# daemon is started again and the import tried once more.
docker_diagnose() {
  echo "== docker: $1"
  timeout 10 docker version >/dev/null 2>&1 && echo "the run's daemon answers" || echo "the run's daemon does not answer"
  pgrep -a dockerd || echo "no dockerd process"
  df -h "$docker_dir" /var/cache 2>/dev/null || true
  tail -n 40 "$docker_dir/dockerd.log" 2>/dev/null || true
}
import_images() { bash tests/images/build-images.sh --docker 2>"$BUILD/image-import.err"; }
if ! docker_images=$(import_images); then
  cat "$BUILD/image-import.err"
  docker_diagnose "importing test images failed; starting the daemon again"
  bash tests/mechanism/private-dockerd.sh stop "$docker_dir" || true
  docker_start || docker_diagnose "the run's daemon did not start again"
  docker_images=$(import_images) ||
    { cat "$BUILD/image-import.err"; docker_diagnose "importing test images failed twice"; docker_images=""; }
fi
echo "$docker_images"
[ -n "$docker_images" ] && images=$docker_images
field() { awk -v n="$1" -v c="$2" '$1 == n { print $c }' <<<"$images"; }
export CORDON_DOCKER_IMAGE_MINIMAL=$(field minimal 4)
export CORDON_DOCKER_IMAGE_TOOLCHAIN=$(field toolchain 4)
export CORDON_RUNC_IMAGE="$(field toolchain 2)@sha256:$(field toolchain 3)"
export CORDON_RUNC_IMAGE_MINIMAL="$(field minimal 2)@sha256:$(field minimal 3)"

# Without them the docker and runc suites cannot run: that is a failure.
check "docker test images imported" test -n "$CORDON_DOCKER_IMAGE_TOOLCHAIN" -a -n "$CORDON_DOCKER_IMAGE_MINIMAL"
check "runc test rootfs built" test -n "$(field toolchain 3)"

phase "make check" "the unit suite without root, the harness and man-page checks"
# Logs of an earlier run (or of suites since renamed) would be summed below
# as if this run had made them.
find "$BUILD/tests" \( -name '*.log' -o -name '*.trs' \) -delete 2>/dev/null
rm -f "$BUILD/test-suite.log" "$BUILD/test-suite-integration.log"
( cd "$BUILD" && make -j"$(nproc)" check )
check_rc=$?
phase "make check-integration" "the root unit suites, the mechanism suites, the contract suite"
( cd "$BUILD" && make -j"$(nproc)" check-integration )
integration_rc=$?
# A suite that could not run here (not root, no daemon, no runc) is a SKIP
# in automake's summary: here that is a failure, with its reason.
for suite_log in test-suite.log test-suite-integration.log; do
  if [ ! -f "$BUILD/$suite_log" ]; then
    failed=$((failed + 1)); echo "check FAILED: $suite_log was not written"; continue
  fi
  skips=$(sed -n 's/^# SKIP: *\([0-9]*\)$/\1/p' "$BUILD/$suite_log")
  if [ "${skips:-0}" -ne 0 ]; then
    failed=$((failed + skips)); echo "check FAILED: $suite_log: $skips suite(s) skipped:"
    grep -h '^SKIP: ' "$BUILD/$suite_log" || true
  fi
done

phase headers "what a provider author compiles, from the installed package; what the libraries export"
bash scripts/check-headers.sh --installed --exports "$BUILD/.libs" >"$BUILD/headers.out" 2>&1
headers_rc=$?
cat "$BUILD/headers.out"
if [ $headers_rc -ne 0 ]; then
  failed=$((failed + 1)); echo "check FAILED: headers: scripts/check-headers.sh exited $headers_rc"
fi
add_summary headers "$BUILD/headers.out" 9 "not every compile ran (exit $headers_rc)"

phase python "the installed binding under trusted-local and runc (Debian's python3)"
BUILD="$BUILD" bash scripts/python-check.sh >"$BUILD/python.out" 2>&1
python_rc=$?
tail -n 60 "$BUILD/python.out"
add_summary python "$BUILD/python.out" 44 "not every test ran (exit $python_rc)"

phase "kill battery" "SIGKILL cordon mid-operation, then gc (installed build)"
# N=6 per provider keeps this to about two minutes; N=50 is the full battery.
check "kill battery leaves nothing (seed 1, N=6 per provider)" bash scripts/kill-battery.sh -n 6 -s 1

phase "docker daemon" "the daemon stopped during a run (a private daemon of the test's own)"
# The whole name: Criterion's --filter matched nothing with 'docker_daemon/*',
# and a test that does not run must not pass for one that did. The test
# starts, stops and restarts a daemon of its own beside the machine's
# (tests/mechanism/private-dockerd.sh), whose pids it checks are unchanged.
( cd "$BUILD" && CORDON_DOCKER_STOP_DAEMON=1 CRITERION_VERBOSITY_LEVEL=1 ./tests/mechanism/docker-tests \
    --filter 'docker_daemon/stopped_daemon_is_a_clear_error_and_reclaim_works_after_restart' ) \
  >"$BUILD/tests/docker-daemon.log" 2>&1
daemon_rc=$?
cat "$BUILD/tests/docker-daemon.log"
[ $daemon_rc -eq 0 ] || { failed=$((failed + 1)); echo "check FAILED: docker daemon test exited $daemon_rc"; }
grep -q 'Tested: 1 | Passing: 1 ' "$BUILD/tests/docker-daemon.log" ||
  { failed=$((failed + 1)); echo "check FAILED: the docker daemon test did not run and pass"; }
private_left=$(remove_private_daemons)
[ -z "$private_left" ] ||
  { failed=$((failed + 1)); echo "check FAILED: the docker daemon test left its private daemon: $private_left"; }

phase counts "every Criterion suite's passes, failures and skips, from its log"
# Each suite make check and make check-integration ran wrote its own log
# under $BUILD/tests (tests/unit/unit.sh.log, tests/unit/unit-root.sh.log,
# ...), the docker daemon test too; the old ones were deleted above, so none
# is counted twice. A skipped test is a failure, with its name and reason,
# unless scripts/allowed-skips names it.
mapfile -t suite_logs < <(find "$BUILD/tests" -name '*.log' | sort)
for log in "${suite_logs[@]}"; do
  note "log: ${log#"$BUILD"/}"
  tail -n 40 "$log"
done
note "skips and totals of the Criterion suites (scripts/criterion-count.sh)"
bash scripts/criterion-count.sh -C "$BUILD" "${suite_logs[@]}" >"$BUILD/criterion.out"
cat "$BUILD/criterion.out"
# The unit suite alone is over a thousand tests.
add_summary criterion "$BUILD/criterion.out" 1000 "the suites did not all run"
if [ $check_rc -ne 0 ]; then
  failed=$((failed + 1)); echo "check FAILED: make check exited $check_rc"
fi
# make check's man-page check prints its own count; a run that never
# reached it (no Criterion) counts as a failure here.
add_summary contract-man "$BUILD/tests/contract/man-lists-checks.sh.log" 1 "cordon-contract(1) was not checked against --list"
# The test of the count above: a skip in its fixture suite must be a failure.
add_summary count-skips "$BUILD/tests/unit/count-skips.sh.log" 8 "scripts/criterion-count.sh was not tested"
if [ $integration_rc -ne 0 ]; then
  failed=$((failed + 1)); echo "check FAILED: make check-integration exited $integration_rc"
fi

phase sanitizers "unit and contract suites in an ASan+UBSan+LSan build of their own"
SAN_BUILD="$BUILD-asan" bash scripts/sanitize.sh >"$BUILD/sanitize.out" 2>&1
san_rc=$?
grep '^sanitize:' "$BUILD/sanitize.out" || tail -n 40 "$BUILD/sanitize.out"
[ $san_rc -eq 0 ] || grep -v '^sanitize: [0-9]* passed' "$BUILD/sanitize.out" | head -n 120
# The unit suite alone is over a thousand tests.
add_summary sanitize "$BUILD/sanitize.out" 1000 "the suites did not all run (exit $san_rc)"

phase fuzz "every libFuzzer target for 60 s (clang, ASan+UBSan, a tree of its own)"
FUZZ_BUILD="$BUILD-fuzz" bash scripts/fuzz.sh -t 60 >"$BUILD/fuzz.out" 2>&1
fuzz_rc=$?
grep '^fuzz:' "$BUILD/fuzz.out" || tail -n 40 "$BUILD/fuzz.out"
[ $fuzz_rc -eq 0 ] || { grep -A30 'FAILED' "$BUILD/fuzz.out" | head -n 60; }
add_summary fuzz "$BUILD/fuzz.out" 7 "not every target ran (exit $fuzz_rc)"

phase debian "the packages, built and installed into a clean bookworm root"
# make check ran above on this tree: the package build skips its own run of
# it (dh_auto_test), which a debian-check.sh run alone keeps.
DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }nocheck" \
  bash scripts/debian-check.sh >"$BUILD/debian.out" 2>&1
deb_rc=$?
grep '^debian:' "$BUILD/debian.out" || tail -n 40 "$BUILD/debian.out"
[ $deb_rc -eq 0 ] || tail -n 80 "$BUILD/debian.out"
add_summary debian "$BUILD/debian.out" 29 "not every check ran (exit $deb_rc)"

phase distcheck "make distcheck"
check "make distcheck" bash -c "cd '$BUILD' && make -j$(nproc) distcheck >'$top/$BUILD/distcheck.out' 2>&1 || { tail -n 60 '$top/$BUILD/distcheck.out'; exit 1; }"

phase "leave no trace" "what this run made is gone"
# What earlier cordon work left is "not ours" there, whatever this run does.
check "leave no trace: earlier cordon work is not ours (tests/leave-no-trace.sh)" bash tests/leave-no-trace.sh
# Only what appeared after the snapshot fails; the rest is named "not ours".
check "leave no trace" bash scripts/leftovers.sh compare "$BUILD/leftovers.before"
check "the run's Docker daemon stopped and its directory removed" docker_remove
machine_dockerds_after=$(machine_dockerds)
echo "the machine's dockerd pids now: ${machine_dockerds_after:-none}"
check "the machine's Docker daemons untouched (the same pids)" \
  test "$machine_dockerds_before" = "$machine_dockerds_after"

finish
