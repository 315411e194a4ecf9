#!/usr/bin/env bash
# Set everything up, then run examples/python/hello.py through cordon with
# --isolation required: the program's output, then which provider ran it and
# why. The sandbox is runc's, from a rootfs built here with mmdebstrap from
# Debian packages; no Docker daemon is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
PREFIX=${PREFIX:-/usr/local}
echo "building the python rootfs (mmdebstrap, cached after the first time)..." >&2
read -r _ tar digest < <(bash tests/images/build-images.sh python)
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
# Only runc proves all four isolation axes here, so it is the one selected;
# trusted-local is probed too and skipped with its reason.
"$PREFIX/bin/cordon" run --isolation required --image "$tar@sha256:$digest" \
    --workspace "$ws" --output primes.txt examples/python/hello.py -- from-the-readme
echo "declared output collected: $(cat "$ws/output/primes.txt")"
