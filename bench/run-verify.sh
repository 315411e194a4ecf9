#!/usr/bin/env bash
# What the host's own verification of a provider's claim costs, per
# provider, against that provider's own execution cycle measured in the same
# run, all through the cordon command of a build tree:
#   cold     cordon probe --fresh P: the provider's probe (its claim) and the
#            host's verification (a second probe execution through the
#            provider's provision, import and exec)
#   cached   cordon probe P with the verified facts in the probe cache
#   cycle    cordon provision (probe cached) + cordon exec -- true + cordon
#            terminate: what one execution of that provider costs
# Runs are interleaved (cold, cached, cycle, cold, ...). Reports medians and
# the ratios cold/cycle and cached/cycle. Writes
# bench/results/verify-<date>.json and .md and prints the table.
#
#   bash bench/run-verify.sh BUILD_DIR [RUNS] [PROVIDER...]
#
# PROVIDER defaults to trusted-local runc docker. Images: $CORDON_RUNC_IMAGE_MINIMAL
# (else $CORDON_RUNC_IMAGE) and $CORDON_DOCKER_IMAGE_MINIMAL (else
# $CORDON_DOCKER_IMAGE_TOOLCHAIN); a provider without its image is left out
# and says so. runc and docker need root and, for docker, a running dockerd.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:?usage: run-verify.sh BUILD_DIR [RUNS] [PROVIDER...]}" && pwd)
runs=${2:-10}
shift $(( $# >= 2 ? 2 : $# ))
providers=("$@")
[ ${#providers[@]} -gt 0 ] || providers=(trusted-local runc docker)
make -C "$build" -s cordon cordon-observe cordon-init trusted-local.la runc.la docker.la

work=$(mktemp -d "${TMPDIR:-/tmp}/cordon-verifybench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/providers"
for p in "${providers[@]}"; do
  ln -s "$build/.libs/$p.so" "$work/providers/$p.so"
done
export CORDON_PROVIDER_PATH="$work/providers" CORDON_OBSERVER="$build/cordon-observe" \
  CORDON_INIT="$build/cordon-init" LD_LIBRARY_PATH="$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cordon=("$build/.libs/cordon")
[ -x "${cordon[0]}" ] || cordon=("$build/cordon")

stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p bench/results
python3 - "$work" "$runs" "bench/results/verify-$stamp" "${cordon[0]}" "${providers[@]}" <<'PY'
import json, os, statistics, subprocess, sys, time

work, runs, out, cordon = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
providers = sys.argv[5:]
images = {
    "runc": os.environ.get("CORDON_RUNC_IMAGE_MINIMAL") or os.environ.get("CORDON_RUNC_IMAGE"),
    "docker": os.environ.get("CORDON_DOCKER_IMAGE_MINIMAL") or os.environ.get("CORDON_DOCKER_IMAGE_TOOLCHAIN"),
}
limits = ["--cpus", "1", "--memory", "256M", "--disk", "64M", "--pids", "128",
          "--runtime", "5m", "--max-output", "1M"]

def run(args, state):
    t = time.perf_counter()
    p = subprocess.run([cordon, "--state-dir", state] + args, capture_output=True, text=True)
    ms = (time.perf_counter() - t) * 1000
    if p.returncode != 0:
        raise SystemExit(f"run-verify: {' '.join(args)} failed ({p.returncode}): {p.stdout[-400:]} {p.stderr[-400:]}")
    return ms, p.stdout

def med(xs):
    return round(statistics.median(xs), 2)

results = {}
for prov in providers:
    if prov in images and not images[prov]:
        print(f"run-verify: {prov}: no image in the environment, left out")
        continue
    state = os.path.join(work, "state-" + prov)
    os.makedirs(state, exist_ok=True)
    config = {"image": images[prov]} if prov in images else {}
    probe = ["probe", prov, "--json"] + (["--provider-config", json.dumps(config)] if config else [])
    prov_args = ["provision", "--provider", prov, "--json"] + limits
    if prov in images:
        prov_args += ["--image", images[prov]]
    else:
        prov_args += ["--isolation", "none", "--allow-unsafe-local"]
    cold, cached, cycle, verified = [], [], [], None
    run(probe + ["--fresh"], state)            # warm the page cache, the image and the provider
    for _ in range(runs):
        ms, text = run(probe + ["--fresh"], state)
        cold.append(ms)
        facts = json.loads(text)["probes"][0]
        verified = facts.get("verification", {}).get("status")
        ms, text = run(probe, state)
        if not json.loads(text)["probes"][0].get("cached"):
            raise SystemExit(f"run-verify: {prov}: the second probe was not cached")
        cached.append(ms)
        t0, text = run(prov_args, state)
        eid = json.loads(text)["execution_id"]
        t1, _ = run(["exec", eid, "--json", "--", "true"], state)
        t2, _ = run(["terminate", eid, "--json"], state)
        cycle.append(t0 + t1 + t2)
    r = {"runs": runs, "verification": verified, "image": images.get(prov),
         "cold_probe_p50_ms": med(cold), "cached_probe_p50_ms": med(cached), "cycle_p50_ms": med(cycle),
         "cold_over_cycle": round(med(cold) / med(cycle), 2),
         "cached_over_cycle": round(med(cached) / med(cycle), 2),
         "cold_ms": [round(x, 2) for x in cold], "cached_ms": [round(x, 2) for x in cached],
         "cycle_ms": [round(x, 2) for x in cycle]}
    results[prov] = r

doc = {"cpus": os.cpu_count(), "load_average": os.getloadavg(), "providers": results}
json.dump(doc, open(out + ".json", "w"), indent=2)
lines = [f"# Host verification cost ({os.cpu_count()} cores, load {os.getloadavg()[0]:.2f})", "",
         "| provider | verdict | cold probe p50 ms | cached probe p50 ms | cycle p50 ms | cold / cycle | cached / cycle |",
         "|---|---|---|---|---|---|---|"]
for prov, r in results.items():
    lines.append(f"| {prov} | {r['verification']} | {r['cold_probe_p50_ms']} | {r['cached_probe_p50_ms']} | "
                 f"{r['cycle_p50_ms']} | **{r['cold_over_cycle']}** | {r['cached_over_cycle']} |")
lines += ["", f"{runs} interleaved runs of each; cycle = cordon provision (probe cached) + "
          "cordon exec -- true + cordon terminate."]
open(out + ".md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
