#!/usr/bin/env bash
# Set everything up, then run examples/python/hello.py through cordon: the
# program's output, then which provider ran it and why.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
PREFIX=${PREFIX:-/usr/local}
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
# Only trusted-local is installed in this release: isolation "none" and the
# explicit consent to unprotected host execution are both required.
"$PREFIX/bin/cordon" run --isolation none --allow-unsafe-local --workspace "$ws" \
    --output primes.txt examples/python/hello.py -- from-the-readme
echo "declared output collected: $(cat "$ws/output/primes.txt")"
