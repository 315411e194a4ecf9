#!/bin/sh
# make check-integration: the unit suites that need root (their names end
# in _root); tests/need.sh skips them (exit 77) when not run as root.
exec "${CORDON_UNIT_TESTS:-./tests/unit/unit-tests}" --filter '*_root/*' "$@"
