#!/usr/bin/env bash
# Regenerate debian/libcordon0.symbols and debian/libcordon-sdk1.symbols
# from what the libraries export now (after a change to the exported set,
# e.g. a linker version script). Run as root on Debian 12:
#   scripts/update-symbols.sh             build the packages in a temporary copy first
#   scripts/update-symbols.sh --from DIR  use DIR, a tree dpkg-buildpackage -b has built
# Every symbol is recorded with the current upstream version; review the diff:
# a symbol that disappears is an ABI break (a new soname, see Makefile.am).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
tree=
if [ "${1:-}" = "--from" ]; then
  tree=$(cd "$2" && pwd)
else
  work=$(mktemp -d /tmp/cordon-symbols.XXXXXX)
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/cordon"
  git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$work/cordon"
  # The current files would fail the build on a removed symbol: start empty.
  rm -f "$work"/cordon/debian/*.symbols
  (cd "$work/cordon" && dpkg-buildpackage -us -uc -b -j"$(nproc)" >"$work/build.log" 2>&1) ||
    { tail -n 40 "$work/build.log"; exit 1; }
  tree=$work/cordon
fi
version=$(cd "$tree" && dpkg-parsechangelog -S Version | sed 's/-[^-]*$//')
for pkg in libcordon0:libcordon-dev libcordon-sdk1:libcordon-sdk-dev; do
  dev=${pkg#*:} pkg=${pkg%%:*}
  # -O reads a file that exists as the basis of the new one: start afresh.
  rm -f "$top/debian/$pkg.symbols"
  (cd "$tree" && dpkg-gensymbols -q -p"$pkg" -P"debian/$pkg" -v"$version" -c0 -O"$top/debian/$pkg.symbols")
  # The -dev package whose Build-Depends a dependent package's version comes
  # from; a tree built with the current files (--from) already names it.
  grep -q '^\* Build-Depends-Package:' "$top/debian/$pkg.symbols" ||
    sed -i "1a * Build-Depends-Package: $dev" "$top/debian/$pkg.symbols"
  echo "debian/$pkg.symbols: $(grep -c '^ ' "$top/debian/$pkg.symbols") symbols"
done
git -C "$top" diff --stat -- debian/*.symbols || true
