#!/bin/sh
# docs/man/cordon-contract.1 describes exactly the checks that
# `cordon-contract --list` shows: a check added, renamed or removed without
# its entry in CHECKS fails here. Runs from make check (no root, no
# provider: --list runs nothing) and from selftest.sh.
#
#   tests/contract/man-lists-checks.sh [CORDON-CONTRACT [MAN-PAGE]]
#
# CORDON-CONTRACT defaults to $CORDON_CONTRACT (make check sets it), else
# ./cordon-contract; MAN-PAGE to the source tree's. Prints the names that
# differ, then "contract-man: N passed, N failed"; exits 1 when the two
# disagree, and also when --list names no check or fewer than it counts
# (a --list that prints nothing must not agree with an empty man page).
set -u
contract=${1:-${CORDON_CONTRACT:-./cordon-contract}}
man=${2:-$(dirname "$0")/../../docs/man/cordon-contract.1}
# Criterion draws its tree in ASCII ("|-- NAME") in the C locale; the
# names sort the same on both sides.
LC_ALL=C
export LC_ALL

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cordon-contract-man.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 99' INT TERM

fail() {
    echo "FAILED: $1"
    [ $# -lt 2 ] || sed 's/^/    /' "$2"
    echo "contract-man: 0 passed, 1 failed"
    exit 1
}

[ -r "$man" ] || fail "no man page at $man"
"$contract" --list >"$tmp/raw" 2>&1 || fail "$contract --list exited $?" "$tmp/raw"
sed -n 's/^[|`]-- //p' "$tmp/raw" | sort >"$tmp/list"
listed=$(wc -l <"$tmp/list")
counted=$(sed -n 's/^contract: \([0-9][0-9]*\) tests\{0,1\}$/\1/p' "$tmp/raw")
[ "$listed" -gt 0 ] || fail "$contract --list names no check" "$tmp/raw"
[ "$listed" = "${counted:-none}" ] ||
    fail "$contract --list counts ${counted:-no} checks but names $listed" "$tmp/raw"

# Each check is a ".B NAME" right after a .TP or .TQ in CHECKS.
awk '/^\.SH CHECKS/ { c = 1; next } /^\.SH/ { c = 0 }
     c && (prev == ".TP" || prev == ".TQ") && /^\.B / { print $2 } { prev = $0 }' "$man" |
    sort >"$tmp/man"
if ! diff "$tmp/list" "$tmp/man" >"$tmp/diff"; then
    sed -i '1i < in --list only, > in the man page only' "$tmp/diff"
    fail "cordon-contract(1) and --list disagree" "$tmp/diff"
fi
echo "ok: cordon-contract(1) lists exactly the $listed checks --list shows"
echo "contract-man: 1 passed, 0 failed"
