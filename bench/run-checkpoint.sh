#!/usr/bin/env bash
# Checkpoint and restore throughput against `tar -c | tar -x` on the same
# ~200 MiB tree (many 1-16 KiB files, some 1-4 MiB, a few 32 MiB), measured
# in the same run (bench/checkpoint-bench.c). Target: ratio >= 0.7.
# Writes bench/results/checkpoint-<date>.json and prints the table.
#
#   bash bench/run-checkpoint.sh BUILD_DIR [MIB] [ROUNDS]
#
# BUILD_DIR is a configured build tree (the bench is built there on demand).
# The tree lives under ${TMPDIR:-/var/tmp} (a real disk, like the state
# directory; /tmp may be a tmpfs) and is removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: run-checkpoint.sh BUILD_DIR [MIB] [ROUNDS]}
mib=${2:-200}
rounds=${3:-5}
command -v tar >/dev/null || { echo "run-checkpoint: tar(1) is needed" >&2; exit 1; }
make -C "$build" -s bench/checkpoint-bench
work=$(mktemp -d "${TMPDIR:-/var/tmp}/cordon-ckbench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p bench/results
out="bench/results/checkpoint-$(date +%Y%m%d-%H%M%S).json"
"$build/bench/checkpoint-bench" --dir "$work/run" --mib "$mib" --rounds "$rounds" --json "$out"
echo "results: $out"
