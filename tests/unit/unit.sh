#!/bin/sh
# make check: the unit suite without the suites that need root. A suite
# whose name ends in _root needs root (a mount namespace, the trusted-local
# uid pool); tests/unit/unit-root.sh runs those from make check-integration.
exec "${CORDON_UNIT_TESTS:-./tests/unit/unit-tests}" --filter '!(*_root)/*' "$@"
