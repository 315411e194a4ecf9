#!/usr/bin/env bash
# Collecting one declared output beside 20,000 undeclared files, against
# collecting it alone: the run's collect step (its own timing, from the
# result's meta.events) and the whole run, medians of RUNS interleaved runs
# per provider. Providers with export_files read only the declared path,
# so the two should cost the same; the program's own time to create the
# files is in the whole run, not in the collect step.
#
#   bash bench/run-collect.sh [RUNS] [PROVIDER...]   (default 10, trusted-local;
#                                                     runc needs CORDON_RUNC_IMAGE)
# Uses the installed cordon (or $CORDON). Writes bench/results/collect-<time>.md.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
shift || true
providers=("$@")
[ ${#providers[@]} -gt 0 ] || providers=(trusted-local)
cordon=${CORDON:-$(command -v cordon)}
work=$(mktemp -d /tmp/bench-collect.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 0711 "$work"
mkdir -p "$work/state" bench/results
cat >"$work/one.py" <<'EOF'
open('../output/result.txt', 'w').write('42\n')
EOF
cat >"$work/many.py" <<'EOF'
import os
os.makedirs('../output/scratch')
for i in range(20000):
    open('../output/scratch/%d' % i, 'w').close()
open('../output/result.txt', 'w').write('42\n')
EOF

median() { sort -n | awk '{ a[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# One run: prints "collect_ms total_ms status".
one_run() {
  local bundle=$1; shift
  local ws; ws=$(mktemp -d "$work/ws.XXXXXX"); chmod 0711 "$ws"
  local t0 t1 out
  t0=$(date +%s%N)
  out=$("$cordon" --state-dir "$work/state" run "$@" --workspace "$ws" --output result.txt \
          --json "$bundle" 2>/dev/null || true)
  t1=$(date +%s%N)
  rm -rf "$ws"
  python3 -c '
import json, sys
d = json.loads(sys.argv[1])
c = [e["ms"] for e in d.get("meta", {}).get("events", []) if e.get("step") == "collect"]
print("%.3f %.3f %s" % (c[0] if c else float("nan"), (int(sys.argv[2]) - int(sys.argv[3])) / 1e6, d.get("status")))
' "$out" "$t1" "$t0"
}

report=bench/results/collect-$(date +%Y%m%d-%H%M%S).md
{
  echo "# collect: one declared output, alone and beside 20,000 undeclared files"
  echo
  echo "$runs interleaved runs per case; $(nproc) cores; load $(cut -d' ' -f1 /proc/loadavg)"
  echo
  echo "| provider | case | status | collect p50 ms | run p50 ms |"
  echo "|---|---|---|---|---|"
} >"$report"
for p in "${providers[@]}"; do
  case $p in
    trusted-local) sel=(--provider trusted-local --isolation none --allow-unsafe-local) ;;
    runc) sel=(--provider runc --image "${CORDON_RUNC_IMAGE:?runc needs CORDON_RUNC_IMAGE}") ;;
    docker) sel=(--provider docker --image "${CORDON_DOCKER_IMAGE_TOOLCHAIN:?docker needs CORDON_DOCKER_IMAGE_TOOLCHAIN}") ;;
    *) echo "run-collect: unknown provider $p" >&2; exit 2 ;;
  esac
  one_run "$work/one.py" "${sel[@]}" >/dev/null   # warm the probe cache
  : >"$work/one.txt"; : >"$work/many.txt"
  for ((i = 0; i < runs; i++)); do
    one_run "$work/one.py" "${sel[@]}" >>"$work/one.txt"
    one_run "$work/many.py" "${sel[@]}" >>"$work/many.txt"
  done
  for c in one many; do
    st=$(awk '{ print $3 }' "$work/$c.txt" | sort | uniq -c | awk '{ printf "%s%s x%s", sep, $2, $1; sep = ", " }')
    cm=$(awk '{ print $1 }' "$work/$c.txt" | median)
    rm_=$(awk '{ print $2 }' "$work/$c.txt" | median)
    label=$([ $c = one ] && echo "1 file" || echo "1 file + 20,000 undeclared")
    echo "| $p | $label | $st | $cm | $rm_ |" >>"$report"
  done
done
cat "$report"
echo "written: $report"
