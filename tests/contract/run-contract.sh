#!/bin/sh
# make check: the contract suite against every provider we ship, then the
# suite's self-test (a lying fixture provider must fail it).
set -u
status=0
contract=${CORDON_CONTRACT:?}
dir=${CORDON_TEST_PROVIDER_DIR:?}
# The providers this tree built (make check sets it; configure can leave
# docker and runc out). One not built is skipped and says so.
built=" ${CORDON_BUILT_PROVIDERS:-trusted-local docker runc bubblewrap} "
built() {
  case $built in
    *" $1 "*) return 0 ;;
  esac
  echo "skipped: $1.so was not built (configure --disable-provider-$1)"
  return 1
}

echo "== cordon-contract --provider trusted-local.so"
"$contract" --provider "$dir/trusted-local.so" --config '{"allow_unsafe_local": true}' || status=1

# docker and runc need their pinned test images; a missing image is a
# failure, not a skip (scripts/test-all.sh builds them).
echo "== cordon-contract --provider docker.so"
if ! built docker; then
  :
elif [ -n "${CORDON_DOCKER_IMAGE_TOOLCHAIN:-}" ]; then
  "$contract" --provider "$dir/docker.so" --config "{\"image\": \"$CORDON_DOCKER_IMAGE_TOOLCHAIN\"}" \
    --image "$CORDON_DOCKER_IMAGE_TOOLCHAIN" || status=1
else
  echo "FAILED: CORDON_DOCKER_IMAGE_TOOLCHAIN is not set (run scripts/test-all.sh)"; status=1
fi
# The same provider under gVisor (runsc, registered in the test daemons:
# tests/mechanism/private-dockerd.sh runtimes), on the daemon DOCKER_HOST names:
# every contract holds through the Sentry too.
echo "== cordon-contract --provider docker.so (runtime runsc)"
if ! built docker; then
  :
elif [ -n "${CORDON_DOCKER_IMAGE_TOOLCHAIN:-}" ]; then
  "$contract" --provider "$dir/docker.so" \
    --config "{\"image\": \"$CORDON_DOCKER_IMAGE_TOOLCHAIN\", \"runtime\": \"runsc\"}" \
    --image "$CORDON_DOCKER_IMAGE_TOOLCHAIN" || status=1
else
  echo "FAILED: CORDON_DOCKER_IMAGE_TOOLCHAIN is not set (run scripts/test-all.sh)"; status=1
fi
echo "== cordon-contract --provider runc.so"
if ! built runc; then
  :
elif [ -n "${CORDON_RUNC_IMAGE:-}" ]; then
  "$contract" --provider "$dir/runc.so" --config "{\"image\": \"$CORDON_RUNC_IMAGE\"}" \
    --image "$CORDON_RUNC_IMAGE" ${CORDON_INIT:+--init "$CORDON_INIT"} || status=1
else
  echo "FAILED: CORDON_RUNC_IMAGE is not set (run scripts/test-all.sh)"; status=1
fi

# bubblewrap needs no image (the host's /usr), and no root: as root, then
# as uid 65534 with a home of its own, as an ordinary user runs it.
echo "== cordon-contract --provider bubblewrap.so"
if built bubblewrap; then
  "$contract" --provider "$dir/bubblewrap.so" || status=1
  echo "== cordon-contract --provider bubblewrap.so (as uid 65534)"
  if [ "$(id -u)" -eq 0 ]; then
    bwhome=$(mktemp -d) && chown 65534:65534 "$bwhome" &&
      setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$bwhome" TMPDIR="$bwhome" \
        "$contract" --provider "$dir/bubblewrap.so" || status=1
    rm -rf "$bwhome"
  else
    echo "skipped: not root, the run above was already an ordinary user's"
  fi
fi

echo "== contract self-test"
# The self-test runs the suite against a provider that must fail it; its
# Criterion summary is expected to show failures, so it is renamed here and
# not summed with the real suites.
out=$(sh "$(dirname "$0")/selftest.sh" 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/Synthesis:/self-test run:/'
[ $rc -eq 0 ] || status=1
exit $status
