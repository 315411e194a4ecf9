#!/usr/bin/env bash
# scripts/leftovers.sh on a machine where cordon was used before this run:
# what earlier work left (a stray /tmp/cordon-contract-run.* directory, a
# cordon-* cgroup, a stopped docker container labelled with another host
# instance, a stopped process) is "not ours" and passes; what is made after
# the snapshot fails, a cgroup removed and made again under an old one's
# name included, and so do a fill file left on /dev/shm, a stopped process
# and an observer under its random name. Makes those objects itself and
# removes them at the end, on every path.
# Needs root, a Docker daemon that answers and CORDON_DOCKER_IMAGE_MINIMAL
# (the image the stopped container is created from; it never runs). Every
# object's name holds leave-no-trace-<run id>, and the script judges those
# alone (CORDON_LEFTOVERS_ONLY), so that cordon work running beside it on
# the machine cannot change its outcome.
# Prints "leave-no-trace: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
id=${CORDON_TEST_RUN_ID:-$$}
tag=leave-no-trace-$id
export CORDON_LEFTOVERS_ONLY="$tag"
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
bad() { failed=$((failed + 1)); echo "FAILED: $*"; }
expect() { # what, then a command: one test
  local what=$1; shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}

old_tmp='' new_tmp='' cg='' ctr='' new_ctr='' out='' fill='' pids=''
work=$(mktemp -d /var/tmp/leave-no-trace.XXXXXX) || exit 1
cleanup() {
  local p
  # Only the processes this script started, by the pids it recorded.
  # (stderr: bash reports each killed job.)
  for p in $pids; do
    pkill -KILL -P "$p"
    kill -KILL "$p"
    wait "$p"
  done 2>/dev/null
  [ -z "$fill" ] || rm -f "$fill"
  [ -z "$old_tmp" ] || rm -rf "$old_tmp"
  [ -z "$new_tmp" ] || rm -rf "$new_tmp"
  [ -z "$cg" ] || ! [ -d "$cg" ] || rmdir "$cg"
  [ -z "$ctr" ] || docker rm -f "$ctr" >/dev/null
  [ -z "$new_ctr" ] || docker rm -f "$new_ctr" >/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# A cgroup hierarchy to make a cgroup in: v2's root, else a v1 controller's.
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  cg_root=/sys/fs/cgroup
else
  cg_root=/sys/fs/cgroup/pids
fi

# A stopped container labelled as cordon labels its own (name, host instance).
labelled_container() {
  docker create --network none --name "$1" --label "org.cordon.execution-id=$1" \
    --label "org.cordon.host=$2" "$CORDON_DOCKER_IMAGE_MINIMAL" true
}

# A process of this script's named NAME, stopped; its pid in $started.
started=''
stopped_process() { # name
  (exec -a "$1" sleep 600) &
  started=$!
  pids="$pids $started"
  running_as "$started" "$1"
  kill -STOP "$started"
}
# Wait until pid runs under name (after its exec), at most 5 s.
running_as() { # pid, name
  local _
  for _ in $(seq 50); do
    [[ $(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) != "$2 "* ]] || return 0
    sleep 0.1
  done
  bad "process $1 never ran as $2"
}

# The machine before this run: what earlier cordon work left.
old_tmp=$(mktemp -d "/tmp/cordon-contract-run.$tag.XXXXXX") || exit 1
stopped_process "sleep-old-$tag"
cg=$cg_root/cordon-$tag
mkdir "$cg" || { bad "could not make the cgroup $cg"; cg=''; }
if [ -z "${CORDON_DOCKER_IMAGE_MINIMAL:-}" ]; then
  bad "CORDON_DOCKER_IMAGE_MINIMAL is not set: no image to create the labelled container from"
elif ! ctr=$(labelled_container "cordon-$tag" "another-host-instance-$id"); then
  bad "docker create of a labelled container failed"; ctr=''
fi
bash scripts/leftovers.sh snapshot "$work/before" >/dev/null

# The objects named in one section ("not ours" or "left behind") of a
# compare's output.
section() { # heading, output
  awk -v h="$1" '/^leftovers: / { on = index($0, h) > 0; next } on' <<<"$2"
}
# name is named in the section, or not.
named() { grep -qF -- "$2" <<<"$(section "$1" "$3")"; }

# compare's exit status is the one wanted, and each object is named under
# heading ("not ours" or "left behind"); its output stays in $out.
judge() { # what, wanted exit status, heading, objects...
  local what=$1 want=$2 heading=$3 rc o
  shift 3
  out=$(bash scripts/leftovers.sh compare "$work/before" --all)
  rc=$?
  echo "$out"
  expect "$what: compare exits $want (it exited $rc)" [ $rc -eq "$want" ]
  for o in "$@"; do
    [ -z "$o" ] || expect "$o is named $heading" named "$heading" "$o" "$out"
  done
}

# 1. This run left nothing: the earlier objects are named, not judged.
judge "nothing made since the snapshot" 0 "not ours" "$old_tmp" "$cg" "${ctr:+cordon-$tag}" \
  "sleep-old-$tag"

# 2. This run leaves a directory, a cgroup under an old one's name, and a
# container.
new_tmp=$(mktemp -d "/tmp/cordon-contract-run.$tag.XXXXXX") || exit 1
if [ -n "$cg" ] && ! { rmdir "$cg" && mkdir "$cg"; }; then bad "could not make $cg again"; fi
if [ -n "$ctr" ] && ! new_ctr=$(labelled_container "cordon-$tag-new" "$id"); then
  bad "docker create of a second labelled container failed"; new_ctr=''
fi
fill=/dev/shm/.cordon-fill-$tag
: >"$fill" || bad "could not make $fill"
stopped_process "sleep-new-$tag"
# The observer under a random name, its command line naming this run.
(exec -a ./0123456789abcdef sh -c 'sleep 600; :' "$tag") &
pids="$pids $!"
running_as $! ./0123456789abcdef
judge "leftovers of this run" 1 "left behind" "$new_tmp" "$cg" "${new_ctr:+cordon-$tag-new}" \
  "$fill" "sleep-new-$tag" "./0123456789abcdef -c sleep 600; : $tag"
expect "$old_tmp, there before, is still not ours" named "not ours" "$old_tmp" "$out"
expect "the stopped sleep-new-$tag is left behind as stopped" \
  grep -qE "^leftovers: left behind by this run: 1 stopped" <<<"$out"

echo "leave-no-trace: $passed passed, $failed failed"
[ $failed -eq 0 ]
