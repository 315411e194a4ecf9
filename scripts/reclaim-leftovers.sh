#!/usr/bin/env bash
# Reclaim what an earlier test run on this machine left behind when it was
# killed part-way (a CI run, or a session stopped in the middle of a
# mechanism suite): cordon's runc containers, the processes and cgroups of
# its sandboxes, its mounts, trusted-local's and bubblewrap's execution
# directories, and the Docker daemons of its own that a killed test run
# left running, and,
# with --docker (once a daemon answers), docker containers and volumes that
# carry cordon's execution label in the daemon the docker command reaches
# (DOCKER_HOST: scripts/test-all.sh names its own daemon's, so that the
# machine's daemon is never looked at).
#   scripts/reclaim-leftovers.sh [--dry-run] [--docker]
# scripts/test-all.sh runs it before it takes its "before" snapshots, so
# that its leave-no-trace check judges that run alone and that no earlier
# sandbox holds a cgroup name or a mount a test expects to be free. It
# touches nothing but cordon's own names: the runc root /run/cordon-runc,
# cgroups named cordon or cordon-*, mounts whose path contains "cordon",
# /run/cordon/trusted-local, /run/cordon/bubblewrap, docker objects labelled
# org.cordon.execution-id, and the test runs' Docker daemons, whose
# directories are TMPDIR/.cordon-dockerd-<run id> (test-all.sh's) and
# TMPDIR/cordon-dockerd-<run id>.* (the docker daemon test's), stopped by
# tests/mechanism/private-dockerd.sh, which signals only the processes that
# name their directory. Those are also where real executions of an
# installed cordon live: on a machine that has some, run it with --dry-run
# (test-all.sh does, unless CI=true or CORDON_RECLAIM_LEFTOVERS=1), which
# only names what it would reclaim. Pool uids (/run/cordon/uids) are left
# to `cordon gc`; test-all.sh counts only the ones its own run takes.
# One line for each kind it found; always exits 0.
set -uo pipefail
runc_root=/run/cordon-runc
dry=0
if [ "${1:-}" = "--dry-run" ]; then dry=1; shift; fi
said() { if [ $dry -eq 1 ]; then echo "reclaim-leftovers (dry run, nothing done): $*"; else echo "reclaim-leftovers: $*"; fi; }
# Runs its arguments unless this is a dry run.
act() { [ $dry -eq 1 ] || "$@"; }

if [ "${1:-}" = "--docker" ]; then
  command -v docker >/dev/null || exit 0
  ids=$(timeout 30 docker ps -aq --filter label=org.cordon.execution-id 2>/dev/null)
  if [ -n "$ids" ]; then
    said "docker: removing $(wc -w <<<"$ids") container(s) of an earlier run"
    # shellcheck disable=SC2086
    act timeout 120 docker rm -f -v $ids >/dev/null 2>&1 || said "docker: rm -f failed for some"
  fi
  vols=$(timeout 30 docker volume ls -q --filter label=org.cordon.execution-id 2>/dev/null)
  if [ -n "$vols" ]; then
    said "docker: removing $(wc -w <<<"$vols") volume(s) of an earlier run"
    # shellcheck disable=SC2086
    act timeout 60 docker volume rm -f $vols >/dev/null 2>&1 || said "docker: volume rm failed for some"
  fi
  exit 0
fi

# The Docker daemons of earlier test runs, with their containers: before
# the runc and cgroup steps, which would otherwise find their sandboxes
# under a daemon that restarts them. Run before this run starts its own.
for d in "${TMPDIR:-/tmp}"/.cordon-dockerd-* "${TMPDIR:-/tmp}"/cordon-dockerd-*.*; do
  [ -d "$d" ] || continue
  said "docker: removing the test daemon $d of an earlier run$(pgrep -f -- "$d/" >/dev/null && echo ' (still running)')"
  act bash "$(dirname "$0")/../tests/mechanism/private-dockerd.sh" remove "$d" >/dev/null 2>&1 ||
    said "docker: $d could not be removed"
done

# runc containers: killed and deleted by the runtime that knows them.
if [ -d "$runc_root" ] && command -v runc >/dev/null; then
  ids=$(runc --root "$runc_root" list -q 2>/dev/null)
  if [ -n "$ids" ]; then
    said "runc: deleting $(wc -w <<<"$ids") container(s) of an earlier run"
    for id in $ids; do
      act runc --root "$runc_root" kill "$id" KILL >/dev/null 2>&1
      act runc --root "$runc_root" delete --force "$id" >/dev/null 2>&1 ||
        said "runc: could not delete $id"
    done
  fi
fi

# Sandbox cgroups (every controller hierarchy, v1 or v2): their processes
# killed, then the directories removed, deepest first.
cgroups=$(find /sys/fs/cgroup -maxdepth 3 -type d \( -name 'cordon-*' -o -name cordon \) 2>/dev/null |
  sort -r)
if [ -n "$cgroups" ]; then
  said "cgroups: removing $(wc -l <<<"$cgroups") of an earlier run"
  [ $dry -eq 1 ] && cgroups=
  for cg in $cgroups; do
    find "$cg" -name cgroup.procs 2>/dev/null | while read -r procs; do
      while read -r pid; do kill -KILL "$pid" 2>/dev/null; done <"$procs"
    done
  done
  [ -z "$cgroups" ] || sleep 0.5
  for cg in $cgroups; do
    find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null
    [ -d "$cg" ] && said "cgroups: $cg remains"
  done
fi

# Mounts: innermost first, detached if busy.
mounts=$(awk '$2 ~ /cordon/ { print $2 }' /proc/mounts | sort -r)
if [ -n "$mounts" ]; then
  said "mounts: unmounting $(wc -l <<<"$mounts") of an earlier run"
  for m in $mounts; do
    m=$(printf '%b' "$m") # /proc/mounts escapes spaces as \040
    act umount "$m" 2>/dev/null || act umount -l "$m" 2>/dev/null || said "mounts: $m stays mounted"
  done
fi

# trusted-local's and bubblewrap's execution directories (their mounts are
# gone above).
for p in trusted-local bubblewrap; do
  if [ -d /run/cordon/$p ] && [ -n "$(ls -A /run/cordon/$p)" ]; then
    said "$p: removing $(ls -A /run/cordon/$p | wc -l) execution director(ies) of an earlier run"
    act find /run/cordon/$p -mindepth 1 -maxdepth 1 -exec rm -rf --one-file-system {} + 2>/dev/null
  fi
done
exit 0
