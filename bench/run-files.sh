#!/usr/bin/env bash
# `cordon files` against the docker command, measured in the same run with
# hyperfine, into and out of the same container:
#   put   cordon files put ID big.bin --from FILE   vs  docker cp FILE CID:/workspace/big.bin
#   get   cordon files get ID big.bin --to FILE     vs  docker cp CID:/workspace/big.bin FILE
# with a file of MIB MiB (default 50) of random bytes and an execution whose
# max_output_bytes is 1 MiB (files do not go through the output budget).
# Both sides are a command started per copy; both talk to the same daemon
# through its archive API. Writes bench/results/files-<date>.json (hyperfine's
# exports and the ratios) and bench/results/files-<date>.md, and prints the
# table.
#
#   bash bench/run-files.sh BUILD_DIR [RUNS] [MIB]
#
# BUILD_DIR is a configured build tree (cordon and docker.so are built there
# on demand). Needs a running daemon and CORDON_DOCKER_IMAGE_MINIMAL (the
# test image of tests/images/build-images.sh --docker, which is used when
# the variable is not set).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:?usage: run-files.sh BUILD_DIR [RUNS] [MIB]}" && pwd)
runs=${2:-10}
mib=${3:-50}
command -v hyperfine >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q hyperfine >/dev/null
make -C "$build" -s cordon docker.la cordon-observe cordon-init

minimal=${CORDON_DOCKER_IMAGE_MINIMAL:-}
if [ -z "$minimal" ]; then
  minimal=$(bash tests/images/build-images.sh --docker | awk '$1 == "minimal" { print $4 }')
fi
[ -n "$minimal" ] || { echo "run-files: no test image id" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/cordon-filesbench.XXXXXX")
mkdir "$work/providers" "$work/state"
ln -s "$build/.libs/docker.so" "$work/providers/docker.so"
export CORDON_PROVIDER_PATH=$work/providers CORDON_STATE_DIR=$work/state
export CORDON_OBSERVER=$build/cordon-observe CORDON_INIT=$build/cordon-init
cordon=$build/cordon
id=
cleanup() {
  if [ -n "$id" ]; then "$cordon" terminate "$id" >/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# room for the file and its replacement on the workspace's share of the disk
id=$("$cordon" provision --provider docker --image "$minimal" --cpus 1 --memory 256M \
       --disk "$((mib * 3 + 64))M" --pids 64 --runtime 30m --max-output 1M)
cid=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["provider_state"]["container_id"])' \
        "$work/state/executions/$id/record.json")
head -c "$((mib << 20))" /dev/urandom >"$work/in.bin"
"$cordon" files put "$id" big.bin --from "$work/in.bin"

hyperfine -N --warmup 2 --runs "$runs" --export-json "$work/put.json" \
  -n cordon-files-put "$cordon files put $id big.bin --from $work/in.bin" \
  -n docker-cp-in "docker cp $work/in.bin $cid:/workspace/big.bin"
hyperfine -N --warmup 2 --runs "$runs" --export-json "$work/get.json" \
  -n cordon-files-get "$cordon files get $id big.bin --to $work/out-cordon.bin" \
  -n docker-cp-out "docker cp $cid:/workspace/big.bin $work/out-docker.bin"
# what both brought out is what went in
cmp "$work/in.bin" "$work/out-cordon.bin"
cmp "$work/in.bin" "$work/out-docker.bin"

stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p bench/results
json="bench/results/files-$stamp.json"
md="bench/results/files-$stamp.md"
python3 - "$work" "$json" "$md" "$(nproc)" "$(docker version --format '{{.Server.Version}}')" "$mib" <<'EOF'
import json, sys
work, out_json, out_md, cores, server, mib = sys.argv[1:7]
put = {r["command"]: r for r in json.load(open(f"{work}/put.json"))["results"]}
get = {r["command"]: r for r in json.load(open(f"{work}/get.json"))["results"]}
ms = lambda r: r["mean"] * 1000
ratios = {
    "put_vs_docker_cp_in": ms(put["cordon-files-put"]) / ms(put["docker-cp-in"]),
    "get_vs_docker_cp_out": ms(get["cordon-files-get"]) / ms(get["docker-cp-out"]),
}
doc = {"docker_server": server, "cores": int(cores), "mib": int(mib), "max_output_bytes": 1 << 20,
       "put": put, "get": get, "ratios": ratios}
json.dump(doc, open(out_json, "w"), indent=1)
mbs = lambda r: int(mib) / r["mean"]
row = lambda name, r: f"| {name} | {ms(r):.1f} ± {r['stddev'] * 1000:.1f} | {mbs(r):.0f} |"
lines = [
    f"# cordon files vs docker cp, {mib} MiB (Docker {server}, {cores} cores, max_output_bytes 1 MiB)", "",
    "| command | mean ms | MiB/s |", "|---|---|---|",
    *[row(k, v) for k, v in put.items()], *[row(k, v) for k, v in get.items()], "",
    f"- files put / docker cp in: **{ratios['put_vs_docker_cp_in']:.2f}**",
    f"- files get / docker cp out: **{ratios['get_vs_docker_cp_out']:.2f}**",
]
open(out_md, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
echo "results: $json $md"
