#!/usr/bin/env bash
# Install what cordon needs on Debian 12 (as root), then build and install it
# under $PREFIX (default /usr/local). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
PREFIX=${PREFIX:-/usr/local}
BUILD=${BUILD:-_build}

packages=(
  build-essential autoconf automake libtool pkg-config
  libltdl-dev libcjson-dev libarchive-dev libseccomp-dev libcap-dev libgit2-dev
  libcriterion-dev libcurl4-openssl-dev
  python3 nodejs golang-go g++ git
  docker.io tini runc runsc mmdebstrap curl bubblewrap
  clang libclang-rt-14-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

[ -x configure ] || ./autogen.sh
mkdir -p "$BUILD"
cd "$BUILD"
# Debian's python3, not whichever python3 comes first in PATH: the binding
# goes where that interpreter reads it (configure.ac).
[ -f Makefile ] || "$top"/configure --prefix="$PREFIX" --enable-werror PYTHON="${PYTHON:-/usr/bin/python3}"
make -j"$(nproc)"
make install >/dev/null
ldconfig
echo "setup: cordon installed under $PREFIX"
