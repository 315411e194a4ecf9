#!/usr/bin/env bash
# One command's latency from an agent's Python, against the CLI and the
# mechanism, all in the same run, interleaved, in one execution:
#   Sandbox.commands.run(["true"])   the binding (cordon.Sandbox), in one
#                                    Python process, as an agent calls it
#   cordon exec ID -- true           the cordon command
#   runc exec ID true                the mechanism's own CLI (runc only)
#   /bin/true                        the harness's cost of starting a program
# Reports medians (p50) and p95 of RUNS (>= 30) runs each, and the ratios.
# Writes bench/results/python-exec-<date>.json and .md and prints the table.
#
#   bash bench/run-python-exec.sh BUILD_DIR [RUNS] [PROVIDER...]
#
# PROVIDER: runc, docker, bubblewrap (default: runc). Images as in
# run-exec.sh: $CORDON_RUNC_IMAGE_MINIMAL (else $CORDON_RUNC_IMAGE),
# $CORDON_DOCKER_IMAGE_MINIMAL (else $CORDON_DOCKER_IMAGE_TOOLCHAIN);
# bubblewrap uses the host's /usr.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
build=$(cd "${1:?usage: run-python-exec.sh BUILD_DIR [RUNS] [PROVIDER...]}" && pwd)
runs=${2:-30}
shift $(( $# >= 2 ? 2 : $# ))
providers=("$@")
[ ${#providers[@]} -gt 0 ] || providers=(runc)
make -C "$build" -s cordon cordon-observe cordon-init libcordon.la \
  $(for p in "${providers[@]}"; do echo "$p.la"; done)

work=$(mktemp -d "${TMPDIR:-/tmp}/cordon-pybench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/providers"
for p in "${providers[@]}"; do
  ln -s "$build/.libs/$p.so" "$work/providers/$p.so"
done
# The binding from the source tree, on this build's library.
export CORDON_PROVIDER_PATH="$work/providers" CORDON_OBSERVER="$build/cordon-observe" \
  CORDON_INIT="$build/cordon-init" LD_LIBRARY_PATH="$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  CORDON_LIBRARY="$build/.libs/libcordon.so.0" PYTHONPATH="$top/python"
cordon="$build/.libs/cordon"
[ -x "$cordon" ] || cordon="$build/cordon"

stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p bench/results
python3 - "$work" "$runs" "bench/results/python-exec-$stamp" "$cordon" "${providers[@]}" <<'PY'
import json, os, statistics, subprocess, sys, time

import cordon

work, runs, out, cli = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
providers = sys.argv[5:]
images = {
    "runc": os.environ.get("CORDON_RUNC_IMAGE_MINIMAL") or os.environ.get("CORDON_RUNC_IMAGE"),
    "docker": os.environ.get("CORDON_DOCKER_IMAGE_MINIMAL") or os.environ.get("CORDON_DOCKER_IMAGE_TOOLCHAIN"),
    "bubblewrap": None,
}

def timed(argv):
    t = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True)
    ms = (time.perf_counter() - t) * 1000
    if p.returncode != 0:
        raise SystemExit(f"run-python-exec: {' '.join(argv)} failed ({p.returncode}): {p.stderr[-400:]}")
    return ms

def stats(xs):
    xs = sorted(xs)
    return {"p50_ms": round(statistics.median(xs), 2), "p95_ms": round(xs[int(len(xs) * 0.95) - 1], 2)}

def runc_uid(eid):
    st = json.load(open(f"/run/cordon-runc/{eid}/state.json"))
    for line in open(f"/proc/{st['init_process_pid']}/status"):
        if line.startswith("Uid:"):
            u = line.split()[1]
            return f"{u}:{u}"

results = {}
for prov in providers:
    if prov != "bubblewrap" and not images.get(prov):
        print(f"run-python-exec: {prov}: no image in the environment, left out")
        continue
    state = os.path.join(work, f"state-{prov}")
    extra = {"best_effort_limits": ["cpus", "disk_bytes"]} if prov == "bubblewrap" and os.geteuid() else {}
    sbx = cordon.Sandbox.create(provider=prov, image=images.get(prov), state_dir=state, timeout=600, **extra)
    try:
        base = [cli, "--state-dir", state]
        mech = (["runc", "--root", "/run/cordon-runc", "exec", "--user", runc_uid(sbx.sandbox_id),
                 sbx.sandbox_id, "true"] if prov == "runc" else None)
        series = {"python_commands_run": [], "cli_exec": [], "host_spawn": []}
        if mech:
            series["mechanism_exec"] = []
        for i in range(runs + 3):                  # 3 warm-up rounds, not counted
            t = time.perf_counter()
            sbx.commands.run(["true"])
            p = (time.perf_counter() - t) * 1000
            c = timed(base + ["exec", sbx.sandbox_id, "--", "true"])
            m = timed(mech) if mech else None
            h = timed(["/bin/true"])
            if i >= 3:
                series["python_commands_run"].append(p)
                series["cli_exec"].append(c)
                series["host_spawn"].append(h)
                if mech:
                    series["mechanism_exec"].append(m)
    finally:
        sbx.kill()
    r = {k: stats(v) for k, v in series.items()}
    r["runs"] = runs
    r["python_over_cli"] = round(r["python_commands_run"]["p50_ms"] / r["cli_exec"]["p50_ms"], 3)
    if mech:
        r["python_over_mechanism"] = round(r["python_commands_run"]["p50_ms"] / r["mechanism_exec"]["p50_ms"], 3)
    results[prov] = r

json.dump(results, open(out + ".json", "w"), indent=1)
lines = ["| provider | Python commands.run p50 (p95) | cordon exec p50 (p95) | mechanism exec p50 | "
         "/bin/true p50 | Python / CLI | Python / mechanism |", "|---|---|---|---|---|---|---|"]
for prov, r in results.items():
    m = r.get("mechanism_exec")
    lines.append(f"| {prov} | {r['python_commands_run']['p50_ms']} ({r['python_commands_run']['p95_ms']}) ms | "
                 f"{r['cli_exec']['p50_ms']} ({r['cli_exec']['p95_ms']}) ms | "
                 f"{str(m['p50_ms']) + ' ms' if m else '-'} | {r['host_spawn']['p50_ms']} ms | "
                 f"{r['python_over_cli']} | {r.get('python_over_mechanism', '-')} |")
open(out + ".md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
