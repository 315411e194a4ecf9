#!/bin/sh
# make check: the contract suite against every provider we ship, then the
# suite's self-test (a lying fixture provider must fail it).
set -u
status=0
contract=${CORDON_CONTRACT:?}
dir=${CORDON_TEST_PROVIDER_DIR:?}
for so in "$dir/trusted-local.so"; do
  echo "== cordon-contract --provider $so"
  "$contract" --provider "$so" --config '{"allow_unsafe_local": true}' || status=1
done
echo "== contract self-test"
# The self-test runs the suite against a provider that must fail it; its
# Criterion summary is expected to show failures, so it is renamed here and
# not summed with the real suites.
out=$(sh "$(dirname "$0")/selftest.sh" 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/Synthesis:/self-test run:/'
[ $rc -eq 0 ] || status=1
exit $status
