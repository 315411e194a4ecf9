#!/usr/bin/env bash
# An isolated python hello on runc with a warm pool, without one, and host
# python3, all in the same run, interleaved:
#   /usr/bin/python3 bench/hello.py                       the host
#   cordon run --isolation required --provider runc ...   no pool (fresh sandbox)
#   the same after `cordon pool fill --size 1` (untimed)  a warm run (claims it)
# and a burst: `cordon pool fill --size 16`, then 16 concurrent runs of the
# same, each timed; their p95 against the warm run's p50.
# Reports medians (p50) and p95 of RUNS (>= 30) runs each, and the ratios.
# Writes bench/results/pool-<date>.json and .md and prints the table.
#
#   bash bench/run-pool.sh BUILD_DIR [RUNS] [BURSTS]
#
# Image: $CORDON_RUNC_IMAGE (the toolchain image, with python3).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:?usage: run-pool.sh BUILD_DIR [RUNS] [BURSTS]}" && pwd)
runs=${2:-30}
bursts=${3:-3}
: "${CORDON_RUNC_IMAGE:?set CORDON_RUNC_IMAGE to the toolchain image}"
make -C "$build" -s cordon cordon-observe cordon-init runc.la

work=$(mktemp -d "${TMPDIR:-/tmp}/cordon-poolbench.XXXXXX")
cleanup() {
  "$cordon" --state-dir "$work/state" pool drain >/dev/null 2>&1 || true
  rm -rf "$work"
}
mkdir -p "$work/providers" "$work/state"
ln -s "$build/.libs/runc.so" "$work/providers/runc.so"
export CORDON_PROVIDER_PATH="$work/providers" CORDON_OBSERVER="$build/cordon-observe" \
  CORDON_INIT="$build/cordon-init" LD_LIBRARY_PATH="$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cordon="$build/.libs/cordon"
[ -x "$cordon" ] || cordon="$build/cordon"
trap cleanup EXIT

stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p bench/results
python3 - "$work" "$runs" "$bursts" "bench/results/pool-$stamp" "$cordon" <<'PY'
import concurrent.futures, json, os, statistics, subprocess, sys, time

work, runs, bursts, out, cordon = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
image = os.environ["CORDON_RUNC_IMAGE"]
hello = os.path.abspath("bench/hello.py")
base = [cordon, "--state-dir", os.path.join(work, "state")]
# The pool key is the run's: provider, its config with the image, limits
# (the run defaults with --timeout), layout. fill and run say the same.
same = ["--provider", "runc", "--isolation", "required", "--image", image, "--timeout", "30s"]

def timed(argv, want_pooled=None):
    t = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True)
    ms = (time.perf_counter() - t) * 1000
    if p.returncode != 0:
        raise SystemExit(f"run-pool: {' '.join(argv)} failed ({p.returncode}): {p.stdout[-400:]} {p.stderr[-400:]}")
    if want_pooled is not None:
        doc = json.loads(p.stdout)
        claimed.append(doc["meta"]["execution_id"])
        pooled = bool(doc["meta"].get("pooled"))
        if pooled != want_pooled or doc["stdout"] != "hello\n":
            raise SystemExit(f"run-pool: pooled {pooled}, wanted {want_pooled}: {p.stdout[-400:]}")
    return ms

claimed = []   # every run's execution id: none may appear twice

def stats(xs):
    xs = sorted(xs)
    return {"p50_ms": round(statistics.median(xs), 2), "p95_ms": round(xs[max(0, int(len(xs) * 0.95) - 1)], 2),
            "mean_ms": round(statistics.mean(xs), 2), "n": len(xs)}

run = base + ["run"] + same + ["--json", hello]
fill = lambda n: timed(base + ["pool", "fill"] + same + ["--size", str(n)])
series = {"host_usr_bin_python3": [], "cordon_run_no_pool": [], "cordon_run_warm_pool": []}
fill_one = []
for i in range(runs + 3):                      # 3 warm-up rounds, not counted
    h = timed(["/usr/bin/python3", hello])
    c = timed(run, want_pooled=False)
    f = fill(1)
    w = timed(run, want_pooled=True)
    if i >= 3:
        series["host_usr_bin_python3"].append(h)
        series["cordon_run_no_pool"].append(c)
        series["cordon_run_warm_pool"].append(w)
        fill_one.append(f)

burst, fill16 = [], []
for b in range(bursts):
    fill16.append(fill(16))
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        burst += list(ex.map(lambda _: timed(run, want_pooled=True), range(16)))

if len(set(claimed)) != len(claimed):
    raise SystemExit("run-pool: an execution was used by two runs")
r = {k: stats(v) for k, v in series.items()}
r["pool_fill_size_1"] = stats(fill_one)
r["pool_fill_size_16"] = stats(fill16)
r["burst_16_concurrent_warm"] = stats(burst)
host, warm, cold = (r[k]["p50_ms"] for k in ("host_usr_bin_python3", "cordon_run_warm_pool", "cordon_run_no_pool"))
r["warm_over_host"] = round(warm / host, 3)
r["no_pool_over_host"] = round(cold / host, 3)
r["warm_over_no_pool"] = round(warm / cold, 3)
r["burst_p95_over_warm_p50"] = round(r["burst_16_concurrent_warm"]["p95_ms"] / warm, 3)
r["runs"] = runs
r["bursts"] = bursts
r["raw_ms"] = {k: [round(x, 2) for x in v] for k, v in list(series.items()) + [("burst", burst)]}
doc = {"cpus": os.cpu_count(), "load_average": os.getloadavg(), "image": image, "results": r}
json.dump(doc, open(out + ".json", "w"), indent=2)
lines = [f"# cordon run on runc with a warm pool ({os.cpu_count()} cores, load {os.getloadavg()[0]:.2f})", "",
         "| | p50 ms | p95 ms | p50 / host /usr/bin/python3 |", "|---|---|---|---|"]
for k in ("host_usr_bin_python3", "cordon_run_no_pool", "cordon_run_warm_pool", "burst_16_concurrent_warm"):
    lines.append(f"| {k} | **{r[k]['p50_ms']}** | {r[k]['p95_ms']} | {round(r[k]['p50_ms'] / host, 2)} |")
lines += ["", f"warm / no pool: {r['warm_over_no_pool']}; burst p95 / one warm run's p50: "
          f"**{r['burst_p95_over_warm_p50']}**; pool fill --size 1 p50 {r['pool_fill_size_1']['p50_ms']} ms, "
          f"--size 16 p50 {r['pool_fill_size_16']['p50_ms']} ms.", "",
          f"{runs} interleaved rounds (after 3 warm-up rounds) of: host /usr/bin/python3, a run with an empty pool, "
          f"pool fill --size 1 (untimed in the run), a run that claims it. Then {bursts} bursts: pool fill "
          "--size 16, 16 concurrent runs that each claim one. Every run is `cordon run --isolation required "
          "--provider runc --json bench/hello.py`, checked for \"hello\" and for meta.pooled."]
open(out + ".md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
echo "results: bench/results/pool-$stamp.{json,md}"
