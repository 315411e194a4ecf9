#!/usr/bin/env bash
# The Python binding as a user gets it: the package `make install` put in
# pythondir, imported by Debian's python3 against the installed libcordon,
# its providers and helpers. Runs python/tests/test_cordon.py (unittest:
# errors, trusted-local, runc, the examples/python-adapter tool), then
# `python3 -c 'import cordon; ...'` running a program under runc.
#   scripts/python-check.sh        (as root, after scripts/setup.sh)
# Needs $CORDON_RUNC_IMAGE (TAR@sha256:DIGEST; scripts/test-all.sh exports
# it). $BUILD (default _build) is the configured tree that installed it;
# $PYTHON defaults to /usr/bin/python3. Ends with one line
# "python: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
BUILD=${BUILD:-_build}
PYTHON=${PYTHON:-/usr/bin/python3}
passed=0 failed=0
fail() { echo "python: $1"; echo "python: $passed passed, $((failed + 1)) failed"; exit 1; }

pydir=$(make -s --no-print-directory -C "$BUILD" print-pythondir 2>/dev/null) ||
  fail "cannot ask $BUILD where the binding is installed (configure, make install first)"
[ -f "$pydir/cordon/__init__.py" ] || fail "no cordon package in $pydir (configured --without-python?)"
[ -n "${CORDON_RUNC_IMAGE:-}" ] || fail "CORDON_RUNC_IMAGE is not set: the runc tests cannot run"
work=$(mktemp -d "${TMPDIR:-/tmp}/cordon-python.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

# From a directory of its own, so that nothing of the source tree is imported.
cd "$work"
PYTHONPATH=$pydir PYTHONDONTWRITEBYTECODE=1 "$PYTHON" "$top/python/tests/test_cordon.py" >"$work/unittest.out" 2>&1
cat "$work/unittest.out"
p=$(sed -n 's/^tests: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$work/unittest.out")
f=$(sed -n 's/^tests: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$work/unittest.out")
[ -n "$p" ] || { echo "python: the unittest run did not finish"; f=$((${f:-0} + 1)); }
passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))

# The installed package on its own: no PYTHONPATH when Debian's python3
# reads pythondir (a /usr or /usr/local prefix), else only pythondir.
if "$PYTHON" -c 'import sys; sys.exit(sys.argv[1] not in sys.path)' "$pydir"; then path=; else path=$pydir; fi
if CORDON_STATE_DIR="$work/state" PYTHONPATH=$path PYTHONDONTWRITEBYTECODE=1 "$PYTHON" -c '
import os, cordon
r = cordon.run(files={"main.py": "print(6 * 7)"}, providers=["runc"], image=os.environ["CORDON_RUNC_IMAGE"])
assert (r.status, r.stdout, r["meta"]["provider_id"]) == ("success", "42\n", "runc"), r
print("import cordon from", os.path.dirname(cordon.__file__), "ran under runc:", r.stdout.strip())
'; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "check FAILED: python3 -c 'import cordon; cordon.run(...)' under runc"
fi
echo "python: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
