#!/usr/bin/env bash
# The docker provider against the docker command, measured in the same run
# with hyperfine (bench/docker-cycle.c drives docker.so through the sdk):
#   cycle       provision + exec `true` + terminate  vs  docker run --rm IMAGE true
#               (target: ratio <= 1.0)
#   exec        exec `true` in a provisioned execution  vs  docker exec ID true
#               (target: ratio <= 0.6); both as one process per exec, and ours
#               also as ten execs in one process (a long-lived host)
#   concurrent  16 code runs at once on this machine (provision, land a python
#               file, run it, terminate): throughput and p50/p95 latency
# Writes bench/results/docker-<date>.json (hyperfine's exports and the ratios)
# and bench/results/docker-<date>.md, and prints the table.
#
#   bash bench/run-docker.sh BUILD_DIR [RUNS]
#
# BUILD_DIR is a configured build tree (the driver is built there on demand).
# The images are the test images of tests/images/build-images.sh --docker,
# or CORDON_DOCKER_IMAGE_MINIMAL / CORDON_DOCKER_IMAGE_TOOLCHAIN when set.
# A daemon is started with tests/mechanism/dockerd.sh when none answers, and
# stopped again at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
build=$(cd "${1:?usage: run-docker.sh BUILD_DIR [RUNS]}" && pwd)
runs=${2:-20}
command -v hyperfine >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q hyperfine >/dev/null
make -C "$build" -s docker.la bench/docker-cycle cordon-observe

started_daemon=false
if ! bash tests/mechanism/dockerd.sh status; then
  bash tests/mechanism/dockerd.sh start
  started_daemon=true
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/cordon-dockerbench.XXXXXX")
driver=(false)
minimal=${CORDON_DOCKER_IMAGE_MINIMAL:-}
toolchain=${CORDON_DOCKER_IMAGE_TOOLCHAIN:-}
cleanup() {
  if [ -s "$work/state.json" ]; then "${driver[@]}" --image "$minimal" terminate "$work/state.json" || true; fi
  rm -rf "$work"
  if $started_daemon; then bash tests/mechanism/dockerd.sh stop; fi
}
trap cleanup EXIT

if [ -z "$minimal" ] || [ -z "$toolchain" ]; then
  images=$(bash tests/images/build-images.sh --docker)
  minimal=$(awk '$1 == "minimal" { print $4 }' <<<"$images")
  toolchain=$(awk '$1 == "toolchain" { print $4 }' <<<"$images")
fi
[ -n "$minimal" ] && [ -n "$toolchain" ] || { echo "run-docker: no test image ids" >&2; exit 1; }

# The driver itself, not libtool's wrapper script (whose shell would be timed too).
export LD_LIBRARY_PATH="$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
driver=("$build/bench/.libs/docker-cycle" --provider "$build/.libs/docker.so"
        --observer "$build/cordon-observe")
[ -x "${driver[0]}" ] || driver[0]="$build/bench/docker-cycle"
q() { printf '%q ' "$@"; }
stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p bench/results
json="bench/results/docker-$stamp.json"
md="bench/results/docker-$stamp.md"

hyperfine -N --warmup 3 --runs "$runs" --export-json "$work/cycle.json" \
  -n cordon-cycle "$(q "${driver[@]}" --image "$minimal" cycle)" \
  -n docker-run "docker run --rm $minimal true" \
  -n docker-run-network-none "docker run --rm --network none $minimal true"

"${driver[@]}" --image "$minimal" provision "$work/state.json"
cid=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["container_id"])' "$work/state.json")
hyperfine -N --warmup 5 --runs "$((runs * 2))" --export-json "$work/exec.json" \
  -n cordon-exec "$(q "${driver[@]}" --image "$minimal" exec "$work/state.json")" \
  -n docker-exec "docker exec $cid true" \
  -n cordon-exec-x10-one-process "$(q "${driver[@]}" --image "$minimal" exec "$work/state.json" 10)"
"${driver[@]}" --image "$minimal" terminate "$work/state.json"

"${driver[@]}" --image "$toolchain" concurrent 16 examples/python/hello.py >"$work/concurrent.json"

python3 - "$work" "$json" "$md" "$(nproc)" "$(docker version --format '{{.Server.Version}}')" <<'EOF'
import json, sys
work, out_json, out_md, cores, server = sys.argv[1:6]
cycle = {r["command"]: r for r in json.load(open(f"{work}/cycle.json"))["results"]}
exe = {r["command"]: r for r in json.load(open(f"{work}/exec.json"))["results"]}
conc = json.load(open(f"{work}/concurrent.json"))
ms = lambda r: r["mean"] * 1000
per_exec_x10 = ms(exe["cordon-exec-x10-one-process"]) / 10
ratios = {
    "cycle_vs_docker_run": ms(cycle["cordon-cycle"]) / ms(cycle["docker-run"]),
    "cycle_vs_docker_run_network_none": ms(cycle["cordon-cycle"]) / ms(cycle["docker-run-network-none"]),
    "exec_vs_docker_exec": ms(exe["cordon-exec"]) / ms(exe["docker-exec"]),
    "exec_in_one_process_vs_docker_exec": per_exec_x10 / ms(exe["docker-exec"]),
}
doc = {"docker_server": server, "cores": int(cores), "cycle": cycle, "exec": exe,
       "concurrent": conc, "ratios": ratios,
       "targets": {"cycle_vs_docker_run": 1.0, "exec_vs_docker_exec": 0.6}}
json.dump(doc, open(out_json, "w"), indent=1)
row = lambda name, r: f"| {name} | {ms(r):.1f} ± {r['stddev'] * 1000:.1f} |"
lines = [
    f"# docker provider vs the docker command (Docker {server}, {cores} cores)", "",
    "| command | mean ms |", "|---|---|",
    *[row(k, v) for k, v in cycle.items()], *[row(k, v) for k, v in exe.items()], "",
    f"- cycle (provision + exec true + terminate) / docker run --rm: "
    f"**{ratios['cycle_vs_docker_run']:.2f}** (target <= 1.0; vs --network none: "
    f"{ratios['cycle_vs_docker_run_network_none']:.2f})",
    f"- exec / docker exec, one process each: **{ratios['exec_vs_docker_exec']:.2f}** (target <= 0.6)",
    f"- exec in a long-lived process ({per_exec_x10:.1f} ms each) / docker exec: "
    f"**{ratios['exec_in_one_process_vs_docker_exec']:.2f}**",
    f"- 16 concurrent code runs: {conc['throughput_per_s']:.2f} runs/s, p50 {conc['p50_ms']} ms, "
    f"p95 {conc['p95_ms']} ms, wall {conc['wall_ms']} ms, failed {conc['failed']}",
]
open(out_md, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
echo "results: $json $md"
