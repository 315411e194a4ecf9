#!/usr/bin/env bash
# Leave no trace, judged per run: what a test run left on the machine is
# what exists after it and did not exist before it.
#   scripts/leftovers.sh snapshot FILE   write every cordon object the machine
#                                        has now to FILE
#   scripts/leftovers.sh compare FILE [--all]
#                                        name each object there now: one that
#                                        FILE has is "not ours" (the machine had
#                                        it before: a real execution of an
#                                        installed cordon, or what earlier work
#                                        left; at most 5 of a kind are named
#                                        without --all), one that FILE lacks is
#                                        "left behind"; exits 1 when any is
# scripts/test-all.sh takes the snapshot once the reclaim step (which
# removes earlier leftovers in CI only) and its Docker daemon are done, and
# compares at its end. It removes nothing.
#
# The objects, each known by an identity the kernel or the daemon does not
# give twice, so that a new object with an old one's name is still new:
#   tmp            /tmp/cordon-*, /tmp/cordon.*, and on the host's tmpfs
#                  the fill files and the observer's (/tmp/.cordon-fill-*,
#                  /dev/shm/.cordon-fill-*, /tmp/.cordon-observe-*) and
#                  anything /dev/shm/*cordon*, dot files too; the host's
#                  canary directories /run/cordon-observe-*
#                                                        path, inode, birth time
#   trusted-local  /run/cordon/trusted-local/*           path, inode, birth time
#   bubblewrap     /run/cordon/bubblewrap/*              path, inode, birth time
#   uid            /run/cordon/uids/* (pool uids taken)  path, inode, birth time
#   cgroup         cgroups named cordon or cordon-*      path, inode (kernfs's id)
#   mount          mounts naming cordon                  mount id, point, source
#   runc           containers in /run/cordon-runc (runc.so's root; the
#                  tests use it too)                     id, creation time
#   runc-state     state directories /run/cordon-runc/*, listed directly
#                  (runc list leaves out one it cannot read)
#                                                        path, inode, birth time
#   container      docker containers labelled org.cordon.execution-id   id
#   volume         docker volumes labelled org.cordon.execution-id      name
#   process        cordon-observe (the program itself, not a command
#                  naming it), the observer under its random name
#                  (./ and 16 hex digits) and its children, cordon-init,
#                  runsc, containerd-shim (not zombies)
#                                                        pid, start time
#   stopped        every process stopped (state T), whoever's: a stopped
#                  host process is what a destructive check that reached
#                  the host leaves             pid, start time
# gVisor's processes (sandbox, gofer, a hung `runsc start`) and containerd
# shims are there because a runsc container whose start failed once left
# all of them running, unknown to the daemon. A shim of a container the
# daemon knows without cordon's label (a developer's own) is not counted.
# Zombies are not counted: a shim or runsc that exited waits for this
# machine's init to reap it, which can take seconds.
# Docker objects are those of the daemon the docker command reaches
# (DOCKER_HOST, else /var/run/docker.sock). When that is a daemon of
# tests/mechanism/private-dockerd.sh (DOCKER_HOST unix://DIR/docker.sock,
# with DIR/exec), as in scripts/test-all.sh, the shims and runsc processes
# of the machine's other daemons (whose command lines do not name DIR/)
# are theirs and not counted: a developer's containers come and go during
# a run; nor is the daemon's own mount of its data root, DIR/data. A cordon object made during the
# run by something other than the run (another cordon on the machine) is
# counted as the run's: a snapshot cannot tell them apart.
# CORDON_LEFTOVERS_ONLY=ERE looks only at the objects whose line (kind,
# identity, description) matches it: tests/leave-no-trace.sh judges its own
# objects alone that way, whatever else runs on the machine.
set -uo pipefail

usage() { echo "usage: $0 snapshot FILE, or compare FILE [--all]" >&2; exit 2; }
[ $# -eq 2 ] || { [ $# -eq 3 ] && [ "$1" = compare ] && [ "$3" = --all ]; } || usage
shown=5
[ "${3:-}" != --all ] || shown=
tab=$'\t'

# KIND<TAB>IDENTITY<TAB>WHAT, for a file or directory (none once it is gone).
path_line() { # kind, path
  local id
  id=$(stat -c "%n:%i:%W" -- "$2" 2>/dev/null) || return 0
  printf '%s\t%s\t%s\n' "$1" "$id" "$2"
}

# pid's state, parent and start time (fields 3, 4 and 22 of
# /proc/PID/stat, after the command name, which may hold spaces), and
# nothing for a zombie or a process gone.
stat_of() {
  local rest
  rest=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  rest=${rest##*) }
  # shellcheck disable=SC2086
  set -- $rest
  [ "$1" != Z ] || return 0
  echo "$1 $2 ${20}"
}

list() {
  local f p pp t cmd label docker_up observers procs own=''
  # The private daemon's directory (DIR/), which its shims' and runsc's
  # command lines name (-address DIR/exec/containerd/..., --root
  # DIR/exec/...), and whose data root dockerd mounts on itself.
  case ${DOCKER_HOST:-} in
    unix:///*/docker.sock)
      own=${DOCKER_HOST#unix://}
      own=${own%/docker.sock}/
      [ -d "${own}exec" ] || own=''
      ;;
  esac
  for f in /tmp/cordon-* /tmp/cordon.* /tmp/.cordon-fill-* /tmp/.cordon-observe-* \
    /dev/shm/*cordon* /dev/shm/.*cordon* /run/cordon-observe-*; do
    if [ -e "$f" ] || [ -L "$f" ]; then path_line tmp "$f"; fi
  done
  for f in /run/cordon/trusted-local/* /run/cordon/bubblewrap/* /run/cordon/uids/*; do
    [ -e "$f" ] || continue
    case $f in
      /run/cordon/uids/*) path_line uid "$f" ;;
      /run/cordon/bubblewrap/*) path_line bubblewrap "$f" ;;
      *) path_line trusted-local "$f" ;;
    esac
  done
  find /sys/fs/cgroup -maxdepth 3 -type d \( -name 'cordon-*' -o -name cordon \) \
    -printf "cgroup$tab%p:%i$tab%p\n" 2>/dev/null
  # The kernel gives a freed mount id again: the mount point and source are
  # part of the identity.
  # The daemon's own data-root mount is the daemon's, not an object in it.
  awk -v t="$tab" -v skip="${own:+${own}data}" \
    '/cordon/ && $5 != skip { print "mount" t $1 ":" $5 ":" $(NF - 1) t $5 " (" $(NF - 2) " " $(NF - 1) ")" }' \
    /proc/self/mountinfo
  if [ -d /run/cordon-runc ] && command -v runc >/dev/null; then
    runc --root /run/cordon-runc list 2>/dev/null |
      awk -v t="$tab" 'NR > 1 { print "runc" t $1 " " $5 t $1 " (" $3 ")" }'
  fi
  for f in /run/cordon-runc/*; do
    if [ -e "$f" ]; then path_line runc-state "$f"; fi
  done
  docker_up=false
  if command -v docker >/dev/null && timeout 30 docker version >/dev/null 2>&1; then
    docker_up=true
    timeout 30 docker ps -a --no-trunc --filter label=org.cordon.execution-id \
      --format "container$tab{{.ID}}$tab{{.Names}} ({{.Status}}, host instance {{.Label \"org.cordon.host\"}})" 2>/dev/null
    timeout 30 docker volume ls --filter label=org.cordon.execution-id \
      --format "volume$tab{{.Name}}$tab{{.Name}}" 2>/dev/null
  fi
  # Every process once: pid, state, parent, start time, command line.
  procs=$(for p in /proc/[0-9]*; do
    p=${p#/proc/}
    t=$(stat_of "$p")
    [ -n "$t" ] || continue
    cmd=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)
    printf '%s %s %s\n' "$p" "$t" "${cmd:0:160}"
  done)
  awk -v t="$tab" '$2 ~ /^T/ { print "stopped" t $1 ":" $4 t $0 }' <<<"$procs"
  # The observer's children: by their parent, whatever their command line.
  observers=" $(awk '$5 ~ /^\.\/[0-9a-f]+$/ && length($5) == 18 { print $1 }' <<<"$procs" | tr '\n' ' ') "
  while read -r p _ pp t cmd; do
    [[ $cmd =~ (^[^\ ]*cordon-observe( |$)|^\./[0-9a-f]{16}( |$)|^[^\ ]*cordon-init( |$)|^runsc|/runsc\ |containerd-shim) ]] ||
      [[ $observers == *" $pp "* ]] || continue
    # (the whole command line: $cmd is cut at 160 bytes)
    if [ -n "$own" ] && [[ $cmd =~ (^runsc|/runsc\ |containerd-shim) ]] &&
      [[ $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) != *"$own"* ]]; then
      continue
    fi
    if $docker_up && [[ $cmd =~ containerd-shim.*\ -id\ ([0-9a-f]{64}) ]] &&
      label=$(timeout 30 docker inspect --type container --format \
        '{{index .Config.Labels "org.cordon.execution-id"}}' "${BASH_REMATCH[1]}" 2>/dev/null) &&
      [ -z "$label" ]; then
      continue
    fi
    printf 'process\t%s\t%s\n' "$p:$t" "$cmd"
  done <<<"$procs"
}

# The objects on stdin (their WHAT fields): all, or the first $shown and
# how many more.
some() {
  awk -F"$tab" -v m="$shown" '{ n++; if (m == "" || n <= m + 0) print "    " $3 }
                              END { if (m != "" && n > m + 0) print "    ... and " n - m " more" }'
}

# list, restricted to CORDON_LEFTOVERS_ONLY when set.
objects() {
  if [ -n "${CORDON_LEFTOVERS_ONLY:-}" ]; then
    list | grep -E -- "$CORDON_LEFTOVERS_ONLY"
  else
    list
  fi | sort -u
}

snapshot() {
  objects >"$1.tmp" && mv "$1.tmp" "$1"
  echo "leftovers: snapshot of $(wc -l <"$1") cordon object(s) on this machine in $1"
}

compare() {
  local before=$1 now kind new old bad=0
  [ -f "$before" ] || { echo "leftovers: no snapshot $before (take one with: $0 snapshot $before)" >&2; return 2; }
  now=$(objects)
  for kind in tmp trusted-local bubblewrap uid cgroup mount runc runc-state container volume process stopped; do
    # identities (KIND<TAB>ID) the snapshot has
    new=$(awk -F"$tab" -v k="$kind" 'NR == FNR { seen[$1 FS $2] = 1; next }
                                     $1 == k && !(($1 FS $2) in seen)' "$before" - <<<"$now")
    old=$(awk -F"$tab" -v k="$kind" 'NR == FNR { seen[$1 FS $2] = 1; next }
                                     $1 == k && (($1 FS $2) in seen)' "$before" - <<<"$now")
    if [ -n "$old" ]; then
      echo "leftovers: not ours (there before this run, not judged): $(wc -l <<<"$old") $kind(s):"
      some <<<"$old"
    fi
    if [ -n "$new" ]; then
      echo "leftovers: left behind by this run: $(wc -l <<<"$new") $kind(s):"
      shown='' some <<<"$new"
      bad=1
    fi
  done
  [ $bad -eq 1 ] || echo "leftovers: nothing left behind by this run"
  return $bad
}

case $1 in
  snapshot) snapshot "$2" ;;
  compare) compare "$2" ;;
  *) usage ;;
esac
