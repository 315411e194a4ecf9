#!/usr/bin/env bash
# The kill battery: SIGKILL `cordon` at random points of run, provision,
# exec, checkpoint, restore and terminate, N times per provider (seeded),
# then `cordon gc`, then terminate what gc rightly kept (executions whose
# record is ready and unexpired: a user's live sandboxes), and count what is
# left of each kind: containers, volumes, runc state, cgroups, mounts,
# records, partial checkpoint directories, uids taken from the pool, and
# processes running as a pool uid (zombies are dead and not counted).
# Every count must be 0.
#
#   kill-battery.sh [-n N] [-s SEED] [PROVIDER...]   (default: N=6, SEED=1,
#                                                      trusted-local runc docker)
#
# Uses the installed cordon (scripts/setup.sh), its own state directory
# under /tmp (removed at the end), and the test images of
# tests/images/build-images.sh: CORDON_RUNC_IMAGE and
# CORDON_DOCKER_IMAGE_TOOLCHAIN must be set for runc and docker (as
# scripts/test-all.sh sets them). Things of the whole machine (runc state,
# cgroups, mounts, the uid pool) are counted as the difference to what was
# there before. Prints one line per provider and exits 1 if any count is
# not 0.
set -uo pipefail
n=6
seed=1
while getopts "n:s:" opt; do
  case $opt in
    n) n=$OPTARG ;;
    s) seed=$OPTARG ;;
    *) echo "usage: $0 [-n N] [-s SEED] [PROVIDER...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
providers=("$@")
[ ${#providers[@]} -gt 0 ] || providers=(trusted-local runc docker)
cordon=${CORDON:-$(command -v cordon)}
[ -x "$cordon" ] || { echo "kill-battery: no cordon command (run scripts/setup.sh)" >&2; exit 2; }
RANDOM=$seed
state=$(mktemp -d /tmp/kill-battery.XXXXXX)
ws=$(mktemp -d /tmp/kill-battery-ws.XXXXXX)
trap 'rm -rf "$state" "$ws"' EXIT
chmod 0711 "$state" "$ws"
bundle=$ws/slow.py
cat >"$bundle" <<'EOF'
import time
open('../output/r.txt', 'w').write('42\n')
time.sleep(1)
EOF
limits=(--cpus 1 --memory 256M --disk 64M --pids 64 --runtime 5m --max-output 1M)
C() { "$cordon" --state-dir "$state" "$@"; }

select_args() { # provider -> the options that pick it (and its image)
  case $1 in
    trusted-local) sel=(--provider trusted-local --isolation none --allow-unsafe-local) ;;
    runc) sel=(--provider runc --image "${CORDON_RUNC_IMAGE:?runc needs CORDON_RUNC_IMAGE}") ;;
    docker) sel=(--provider docker --image "${CORDON_DOCKER_IMAGE_TOOLCHAIN:?docker needs CORDON_DOCKER_IMAGE_TOOLCHAIN}") ;;
    *) echo "kill-battery: unknown provider $1" >&2; exit 2 ;;
  esac
}

# Start "$@" in the background and SIGKILL it after 0..max ms.
kill_after() {
  local max=$1; shift
  "$@" >/dev/null 2>&1 &
  local pid=$! ms=$((RANDOM % max))
  sleep "$(printf '0.%03d' "$ms")"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  kills=$((kills + 1))
}

provision() { C provision "${sel[@]}" "${limits[@]}" 2>/dev/null; }

machine_snapshot() { # what the whole machine holds of cordon's, one line each
  { [ -d /run/cordon-runc ] && runc --root /run/cordon-runc list -q 2>/dev/null | sed 's/^/runc /'
    find /sys/fs/cgroup -maxdepth 3 -type d -name 'cordon*' 2>/dev/null | sed 's/^/cgroup /'
    grep cordon /proc/mounts | awk '{print "mount " $2}'
    for f in /run/cordon/uids/[0-9]*; do [ -f "$f" ] && echo "uid ${f##*/} $(cat "$f" 2>/dev/null)"; done
    # A zombie is dead: a terminated runc init waits there until the
    # machine's init, its parent since `runc run --detach`, reaps it.
    ps -e -o uid=,pid=,stat= | awk '$1 >= 1879048192 && $1 < 1879048192 + 65536 && $3 !~ /^Z/ { print "process " $2 }'
  } | sort
}

count() { # kind, then the lines new since the snapshot
  grep -c "^$1 " <<<"$2" || true
}

status=0
before=$(machine_snapshot)
for p in "${providers[@]}"; do
  select_args "$p"
  kills=0
  # The first provision verifies the provider; later ones use the cache, so
  # that most kills land in the operations rather than in verification.
  id=$(provision) && C terminate "$id" >/dev/null 2>&1
  for ((i = 0; i < n; i++)); do
    case $((RANDOM % 6)) in
      0) kill_after 3000 C run "${sel[@]}" --workspace "$ws" --output r.txt --timeout 10s "$bundle" ;;
      1) kill_after 2000 C provision "${sel[@]}" "${limits[@]}" ;;
      2) id=$(provision) && kill_after 1500 C exec "$id" -- sh -c 'sleep 3' ;;
      3) id=$(provision) && C exec "$id" -- sh -c 'echo x > f' >/dev/null 2>&1 &&
           kill_after 1500 C checkpoint "$id" ;;
      4) id=$(provision) && ck=$(C checkpoint "$id" 2>/dev/null) &&
           kill_after 2500 C restore "$ck" "${sel[@]}" ;;
      5) id=$(provision) && kill_after 1000 C terminate "$id" ;;
    esac
  done
  # A partial checkpoint is removed once it is 10 s old (its writer may be
  # about to lock a younger one).
  sleep 11
  C gc >/dev/null 2>&1
  # What gc rightly kept: ready, unexpired executions. A user terminates them.
  live=0
  for id in $(C ls --json 2>/dev/null | python3 -c 'import json,sys; print(" ".join(e["execution_id"] for e in json.load(sys.stdin).get("executions", [])))' 2>/dev/null); do
    C terminate "$id" >/dev/null 2>&1 && live=$((live + 1))
  done
  instance=$(cat "$state/instance-id" 2>/dev/null || echo none)
  containers=0 volumes=0
  if [ "$p" = docker ]; then
    containers=$(docker ps -aq --filter "label=org.cordon.host=$instance" 2>/dev/null | wc -l)
    volumes=$(docker volume ls -q --filter "label=org.cordon.host=$instance" 2>/dev/null | wc -l)
  fi
  new=$(comm -13 <(echo "$before") <(machine_snapshot))
  records=$(ls -A "$state/executions" 2>/dev/null | wc -l)
  partial=$(ls -A "$state/checkpoints" 2>/dev/null | grep -c '^\.' || true)
  line="containers=$containers volumes=$volumes runc=$(count runc "$new") cgroups=$(count cgroup "$new")"
  line+=" mounts=$(count mount "$new") records=$records checkpoints=$partial"
  line+=" uids=$(count uid "$new") processes=$(count process "$new")"
  echo "kill-battery: $p: $kills kills (seed $seed), $live live executions terminated after gc; left: $line"
  if grep -q '=[1-9]' <<<"$line"; then
    status=1
    sed 's/^/kill-battery:   left: /' <<<"$new"
  fi
done
exit $status
