#!/usr/bin/env bash
# The runc provider against the runc command, measured in the same run by
# bench/runc-cycle.c (runc.so driven through the sdk, as the host does):
#   cycle       provision + exec `true` + terminate  vs  `runc run` of the same
#               bundle running `true` (target: ratio <= 1.3), and vs the fewest
#               runtime commands of such a cycle run by hand (run --detach, exec,
#               kill, delete), all interleaved; with the mean of each phase
#   unpack      the first use of the image in a fresh state directory (verify
#               and unpack the rootfs tarball) against the warm use after it
#   concurrent  16 code runs at once (provision, land a python file, run it,
#               terminate): throughput and p50/p95 latency on this machine
# Writes bench/results/runc-<date>.json and bench/results/runc-<date>.md and
# prints the table.
#
#   bash bench/run-runc.sh BUILD_DIR [RUNS]
#
# BUILD_DIR is a configured build tree (the driver is built there on demand).
# The image is $CORDON_RUNC_IMAGE (/abs/rootfs.tar@sha256:<hex>), else the
# toolchain image of tests/images/build-images.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:?usage: run-runc.sh BUILD_DIR [RUNS]}" && pwd)
runs=${2:-30}
make -C "$build" -s runc.la cordon-init cordon-observe bench/runc-cycle

image=${CORDON_RUNC_IMAGE:-}
if [ -z "$image" ]; then
  image=$(bash tests/images/build-images.sh | awk '$1 == "toolchain" { print $2 "@sha256:" $3 }')
fi
[ -n "$image" ] || { echo "run-runc: no toolchain image" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/cordon-runcbench.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The driver itself, not libtool's wrapper script.
export LD_LIBRARY_PATH="$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
driver=("$build/bench/.libs/runc-cycle")
[ -x "${driver[0]}" ] || driver=("$build/bench/runc-cycle")
driver+=(--provider "$build/.libs/runc.so" --init "$build/cordon-init"
         --observer "$build/cordon-observe" --image "$image" --work "$work")

cycle=$("${driver[@]}" cycle "$runs")
unpack=$("${driver[@]}" unpack 3)
concurrent=$("${driver[@]}" concurrent 16)

stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p bench/results
json="bench/results/runc-$stamp.json"
md="bench/results/runc-$stamp.md"
runc_version=$(runc --version | head -n1)
python3 - "$json" "$md" "$runc_version" "$(nproc)" "$cycle" "$unpack" "$concurrent" <<'PY'
import json, sys
json_path, md_path, version, cpus = sys.argv[1:5]
cycle, unpack, conc = (json.loads(x) for x in sys.argv[5:8])
json.dump({"runc": version, "cpus": int(cpus), "cycle": cycle, "unpack": unpack,
           "concurrent": conc}, open(json_path, "w"), indent=2)
lines = [
    f"# runc provider vs the runc command ({version}, {cpus} cores)",
    "",
    "| measurement | mean ms | p50 ms | p95 ms |",
    "|---|---|---|---|",
    f"| cordon: provision + exec true + terminate | {cycle['cordon_mean_ms']:.1f} | "
    f"{cycle['cordon_p50_ms']} | {cycle['cordon_p95_ms']} |",
    f"| runc run (same bundle, true) | {cycle['runc_run_mean_ms']:.1f} | "
    f"{cycle['runc_run_p50_ms']} | {cycle['runc_run_p95_ms']} |",
    f"| runc run --detach + exec true + kill + delete, by hand | "
    f"{cycle['runc_steps_mean_ms']:.1f} | "
    f"{cycle['runc_steps_p50_ms']} | {cycle['runc_steps_p95_ms']} |",
    "",
    f"- cycle / runc run: **{cycle['ratio_mean']:.2f}** by mean, {cycle['ratio_p50']:.2f} by "
    f"median ({cycle['runs']} interleaved runs each; target <= 1.3)",
    f"- cycle / those runtime commands by hand: **{cycle['steps_ratio_mean']:.2f}** by mean "
    f"(exec enters the container itself and terminate needs no runtime command)",
    f"- where the cycle goes, by mean: provision {cycle['provision_mean_ms']:.1f} ms (one "
    f"`runc run --detach`, limit read-back, lo up), exec {cycle['exec_mean_ms']:.1f} ms, "
    f"terminate {cycle['terminate_mean_ms']:.1f} ms",
    f"- cold first use of the image ({unpack['tar_bytes'] / 1048576:.0f} MiB tarball, verified and "
    f"unpacked): {unpack['cold_mean_ms']:.0f} ms, of which unpacking "
    f"{unpack['unpack_ms']:.0f} ms ({unpack['unpack_mib_per_s']:.0f} MiB/s); warm: "
    f"{unpack['warm_mean_ms']:.0f} ms",
    f"- {conc['runs']} concurrent code runs on {conc['cpus']} cores: "
    f"{conc['runs_per_s']:.2f} runs/s, p50 {conc['p50_ms']} ms, p95 {conc['p95_ms']} ms, "
    f"wall {conc['wall_ms']} ms, failed {conc['failed']}",
]
open(md_path, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
echo "results: $json $md"
