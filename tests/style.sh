#!/bin/sh
# make check's layout check: first scripts/check-style.sh finds what it
# promises (a tree with one problem of each kind, and one waived, gives
# exactly these lines and exit 1; the same tree fixed gives exit 0), then
# it passes on this source tree.
#
# The check runs from here, not as a test in scripts/: a test's log goes
# beside it in the build tree, and automake would then distribute the
# build tree's scripts/ (logs and all) with the source's.
set -u
check=$(cd "$(dirname "$0")/.." && pwd)/scripts/check-style.sh
dir=$(mktemp -d "${TMPDIR:-/tmp}/check-style-selftest.XXXXXX") || exit 99
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/scripts" "$dir/docs" "$dir/_build"
printf 'int a;\t/* tab */\nint b; \n' >"$dir/a.c"
printf '/* %0120d */\n' 0 >"$dir/b.h"
printf 'no final newline' >"$dir/docs/c.md"
printf 'all:\n\ttrue\n' >"$dir/Makefile.am"
printf 'x \n' >"$dir/scripts/d.sh"
printf 'scripts/d.sh trailing-whitespace 1\n' >"$dir/scripts/style-waivers"
printf 'int c;\t\n' >"$dir/_build/e.c"
printf '%0200d\n' 0 >"$dir/docs/f.md"
expected='a.c:1: tab: a tab (indent with spaces)
a.c:2: trailing-whitespace: whitespace at the end of the line
b.h:1: long-line: 126 columns, over 120
docs/c.md:1: no-final-newline: the last line does not end in a newline
scripts/d.sh:1: trailing-whitespace: whitespace at the end of the line (waived)
check-style: 7 files, 4 problems, 1 waived'
got=$("$check" "$dir")
rc=$?
fail=0
if [ "$got" != "$expected" ] || [ $rc -ne 1 ]; then
  printf 'check-style-selftest: a broken tree: exit %d, got\n%s\nwanted\n%s\n' $rc "$got" "$expected"
  fail=1
fi
printf 'int a;\nint b;\n' >"$dir/a.c"
printf '/* short */\n' >"$dir/b.h"
printf 'final newline\n' >"$dir/docs/c.md"
got=$("$check" "$dir")
rc=$?
if [ $rc -ne 0 ]; then
  printf 'check-style-selftest: a fixed tree: exit %d\n%s\n' $rc "$got"
  fail=1
fi
[ $fail -eq 0 ] && echo "check-style-selftest: 2 passed, 0 failed"
"$check" "$(dirname "$check")/.." || fail=1
exit $fail
