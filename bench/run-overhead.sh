#!/usr/bin/env bash
# What cordon adds to running a python hello through trusted-local, against
# python3 running the same file directly, measured in the same run with
# hyperfine. Also the floor: a bare spawn of a static binary (cordon-observe
# --idle with 0 seconds). Writes bench/results/overhead-<date>.json and
# prints a table with ratios and added milliseconds.
#
#   bash bench/run-overhead.sh [RUNS]        (after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200}
prefix=${PREFIX:-/usr/local}
cordon=${CORDON:-$prefix/bin/cordon}
observer=${CORDON_OBSERVER:-$prefix/libexec/cordon/cordon-observe}
command -v hyperfine >/dev/null || { apt-get update -q && apt-get install -y -q hyperfine; }
state=$(mktemp -d /tmp/cordon-bench.XXXXXX)
trap 'rm -rf "$state"' EXIT
hello=bench/hello.py
# the python the sandbox runs (the PATH trusted-local gives it), not a shim
python=$(PATH=/usr/local/bin:/usr/bin:/bin command -v python3)
# Warm the probe cache once: the measured runs reuse the cached facts and
# only re-check availability, as every later run does in real use.
"$cordon" --state-dir "$state" probe trusted-local >/dev/null
mkdir -p bench/results
out="bench/results/overhead-$(date +%Y%m%d-%H%M%S).json"
hyperfine -N --warmup 10 --runs "$runs" --export-json "$out" \
  -n spawn-floor "$observer --idle floor 0" \
  -n python3 "$python $hello" \
  -n cordon "$cordon --state-dir $state run -q --isolation none --allow-unsafe-local --provider trusted-local $hello" >/dev/null
python3 - "$out" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
py, co, fl = r["python3"], r["cordon"], r["spawn-floor"]
ms = lambda x: x * 1000
print(f"{'command':<14}{'mean ms':>10}{'median ms':>11}{'stddev':>9}")
for name in ("spawn-floor", "python3", "cordon"):
    x = r[name]
    print(f"{name:<14}{ms(x['mean']):>10.2f}{ms(x['median']):>11.2f}{ms(x['stddev']):>9.2f}")
print(f"cordon / python3 (median): {co['median'] / py['median']:.2f}x")
print(f"added by cordon (median):  {ms(co['median'] - py['median']):.2f} ms   (target: at most 3 ms)")
PY
echo "results: $out"
