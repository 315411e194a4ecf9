#!/usr/bin/env bash
# exec into a running execution, through the resident agent, against the
# mechanism's own exec, all in the same run, interleaved:
#   cordon exec ID -- true        the cordon command (agent: the default)
#   cordon exec ID -- true        the same with exec_agent false (runc: setns,
#                                 docker: the Engine API's exec)
#   runc exec ID true             / docker exec ID true: the mechanism's CLI
#   cordon_exec_json              the library call, from bench/exec-bench.c
#   /bin/true                     the harness's own cost of starting a program
# and, once, the cost of one fork and exec of true inside the sandbox. The
# machine's process start is the floor under every exec figure: cordon's
# own share is the CLI less both, the library call less the sandbox's.
# Reports medians (p50) and p95 of RUNS (>= 30) runs each, and the ratios.
# Writes bench/results/exec-<date>.json and .md and prints the table.
#
#   bash bench/run-exec.sh BUILD_DIR [RUNS] [PROVIDER...]
#
# PROVIDER: runc and/or docker (default: both). Images as in run-verify.sh:
# $CORDON_RUNC_IMAGE_MINIMAL (else $CORDON_RUNC_IMAGE) and
# $CORDON_DOCKER_IMAGE_MINIMAL (else $CORDON_DOCKER_IMAGE_TOOLCHAIN).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:?usage: run-exec.sh BUILD_DIR [RUNS] [PROVIDER...]}" && pwd)
runs=${2:-30}
shift $(( $# >= 2 ? 2 : $# ))
providers=("$@")
[ ${#providers[@]} -gt 0 ] || providers=(runc docker)
make -C "$build" -s cordon cordon-observe cordon-init bench/exec-bench \
  $(for p in "${providers[@]}"; do echo "$p.la"; done)

work=$(mktemp -d "${TMPDIR:-/tmp}/cordon-execbench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/providers"
for p in "${providers[@]}"; do
  ln -s "$build/.libs/$p.so" "$work/providers/$p.so"
done
export CORDON_PROVIDER_PATH="$work/providers" CORDON_OBSERVER="$build/cordon-observe" \
  CORDON_INIT="$build/cordon-init" LD_LIBRARY_PATH="$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cordon="$build/.libs/cordon"
[ -x "$cordon" ] || cordon="$build/cordon"
bench="$build/bench/.libs/exec-bench"
[ -x "$bench" ] || bench="$build/bench/exec-bench"

stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p bench/results
python3 - "$work" "$runs" "bench/results/exec-$stamp" "$cordon" "$bench" "${providers[@]}" <<'PY'
import json, os, statistics, subprocess, sys, time

work, runs, out, cordon, bench = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
providers = sys.argv[6:]
images = {
    "runc": os.environ.get("CORDON_RUNC_IMAGE_MINIMAL") or os.environ.get("CORDON_RUNC_IMAGE"),
    "docker": os.environ.get("CORDON_DOCKER_IMAGE_MINIMAL") or os.environ.get("CORDON_DOCKER_IMAGE_TOOLCHAIN"),
}
limits = ["--cpus", "1", "--memory", "256M", "--disk", "64M", "--pids", "128",
          "--runtime", "10m", "--max-output", "1M"]

def timed(argv):
    t = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True)
    ms = (time.perf_counter() - t) * 1000
    if p.returncode != 0:
        raise SystemExit(f"run-exec: {' '.join(argv)} failed ({p.returncode}): {p.stdout[-400:]} {p.stderr[-400:]}")
    return ms, p.stdout

def stats(xs):
    xs = sorted(xs)
    return {"p50_ms": round(statistics.median(xs), 2), "p95_ms": round(xs[int(len(xs) * 0.95) - 1], 2),
            "mean_ms": round(statistics.mean(xs), 2)}

results = {}
for prov in providers:
    if not images.get(prov):
        print(f"run-exec: {prov}: no image in the environment, left out")
        continue
    ids = {}
    states = {}
    for mode, agent in (("agent", True), ("fallback", False)):
        state = os.path.join(work, f"state-{prov}-{mode}")
        os.makedirs(state)
        cfg = os.path.join(state, "config.json")
        json.dump({"provider_configs": {prov: {"exec_agent": agent}}}, open(cfg, "w"))
        base = [cordon, "--state-dir", state, "--config", cfg]
        _, text = timed(base + ["provision", "--provider", prov, "--json", "--image", images[prov]] + limits)
        ids[mode] = json.loads(text)["execution_id"]
        states[mode] = base
    pid_of = {}
    if prov == "runc":
        mech = lambda eid: ["runc", "--root", "/run/cordon-runc", "exec", "--user",
                            uid_of(eid), eid, "true"]
    else:
        mech = lambda eid: ["docker", "exec", container_of(eid), "true"]
    def uid_of(eid):
        st = json.load(open(f"/run/cordon-runc/{eid}/state.json"))
        for line in open(f"/proc/{st['init_process_pid']}/status"):
            if line.startswith("Uid:"):
                u = line.split()[1]
                return f"{u}:{u}"
    def container_of(eid):
        return subprocess.run(["docker", "ps", "-q", "--filter", f"label=org.cordon.execution-id={eid}"],
                              capture_output=True, text=True, check=True).stdout.split()[0]
    mech_argv = mech(ids["agent"])
    facts = json.loads(timed(states["agent"] + ["probe", prov, "--json"])[1])["probes"][0]
    exec_path = facts.get("mechanism_facts", {}).get("exec_path")
    series = {"cordon_exec_agent": [], "cordon_exec_fallback": [], "mechanism_exec": [],
              "host_spawn": []}
    for i in range(runs + 3):                  # 3 warm-up rounds, not counted
        a, _ = timed(states["agent"] + ["exec", ids["agent"], "--", "true"])
        f, _ = timed(states["fallback"] + ["exec", ids["fallback"], "--", "true"])
        m, _ = timed(mech_argv)
        h, _ = timed(["/bin/true"])
        if i >= 3:
            series["cordon_exec_agent"].append(a)
            series["cordon_exec_fallback"].append(f)
            series["mechanism_exec"].append(m)
            series["host_spawn"].append(h)
    # The floor inside: what one fork and exec of true costs in this
    # sandbox (a shell loop of 200, timed by the sandbox's own clock).
    _, text = timed(states["agent"] + ["exec", ids["agent"], "--", "sh", "-c",
                    'i=0; s=$(date +%s%N); while [ $i -lt 200 ]; do /usr/bin/true; i=$((i+1)); done; '
                    'e=$(date +%s%N); echo $(( (e - s) / 200 ))'])
    sandbox_spawn = round(int(text.strip().splitlines()[-1]) / 1e6, 3)
    lib = json.loads(timed([bench, states["agent"][2], ids["agent"], str(runs)])[1])
    libf = json.loads(timed([bench, states["fallback"][2], ids["fallback"], str(runs)])[1])
    for mode in ids:
        timed(states[mode] + ["terminate", ids[mode], "--json"])
    r = {k: stats(v) for k, v in series.items()}
    r["library_agent"] = lib
    r["library_fallback"] = libf
    r["exec_path_fact"] = exec_path
    r["runs"] = runs
    r["agent_over_mechanism"] = round(r["cordon_exec_agent"]["p50_ms"] / r["mechanism_exec"]["p50_ms"], 3)
    r["sandbox_spawn_ms"] = sandbox_spawn
    # What cordon itself adds: the CLI less its own start (the harness's
    # spawn of /bin/true) and less the command's (true in the sandbox);
    # the library call less the command's.
    r["cli_own_ms"] = round(r["cordon_exec_agent"]["p50_ms"] - r["host_spawn"]["p50_ms"] - sandbox_spawn, 2)
    r["library_own_ms"] = round(r["library_agent"]["p50_ms"] - sandbox_spawn, 3)
    r["raw_ms"] = {k: [round(x, 2) for x in v] for k, v in series.items()}
    results[prov] = r

doc = {"cpus": os.cpu_count(), "load_average": os.getloadavg(), "providers": results}
json.dump(doc, open(out + ".json", "w"), indent=2)
lines = [f"# exec through the resident agent ({os.cpu_count()} cores, load {os.getloadavg()[0]:.2f})", "",
         "| provider | exec_path | cordon exec (agent) p50 / p95 ms | cordon exec (exec_agent false) p50 ms | "
         "mechanism's exec p50 ms | cordon_exec_json (agent) p50 / p95 ms | cordon_exec_json (fallback) p50 ms | agent / mechanism |",
         "|---|---|---|---|---|---|---|---|"]
for prov, r in results.items():
    lines.append(f"| {prov} | {r['exec_path_fact']} | **{r['cordon_exec_agent']['p50_ms']}** / {r['cordon_exec_agent']['p95_ms']} | "
                 f"{r['cordon_exec_fallback']['p50_ms']} | {r['mechanism_exec']['p50_ms']} | "
                 f"**{r['library_agent']['p50_ms']}** / {r['library_agent']['p95_ms']} | "
                 f"{r['library_fallback']['p50_ms']} | {r['agent_over_mechanism']} |")
lines += ["", "The floors, in the same run: what starting any program costs here, and what cordon adds to it.", "",
          "| provider | /bin/true from the harness p50 ms | fork+exec of true in the sandbox ms | cordon exec less both ms | cordon_exec_json less the sandbox's ms |",
          "|---|---|---|---|---|"]
for prov, r in results.items():
    lines.append(f"| {prov} | {r['host_spawn']['p50_ms']} | {r['sandbox_spawn_ms']} | **{r['cli_own_ms']}** | "
                 f"**{r['library_own_ms']}** |")
lines += ["", f"{runs} interleaved runs of each CLI (after 3 warm-up rounds); the library call "
          f"{runs} times in a row on one context; mechanism = `runc exec` / `docker exec` into the "
          "same execution. The sandbox's floor is a shell loop of 200 `/usr/bin/true` inside the "
          "agent's execution, timed by its own clock."]
open(out + ".md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
echo "results: bench/results/exec-$stamp.{json,md}"
