#!/bin/sh
# Runs a command in a cage of its own, beside a canary, and reports what
# the command did to them: for selftest.sh, which runs the contract suite
# against a provider that executes on the host as root, so that even a
# suite that signals or fills what it should not cannot reach the machine.
#
#   tests/contract/cage.sh WORKDIR TIMEOUT_S COMMAND [ARG...]
#
# The cage: new pid and mount namespaces (unshare --pid --fork --mount-proc
# --kill-child), a private small tmpfs over /dev/shm, /tmp and
# /sys/fs/cgroup and over every other writable tmpfs, and a memory cgroup
# with a limit, removed afterwards: cgroup v1's memory controller
# (/sys/fs/cgroup/memory/cordon-selftest-RANDOM) where it is mounted, else
# a child of the cgroup v2 root with memory.max (the root must have memory
# in its cgroup.subtree_control, as systemd sets it). Inside, before the
# command, a canary process beats every 0.1 s and records the most each of
# the three tmpfs held, and the cage reports every writable tmpfs the
# command can reach ("cage: tmpfs MOUNTPOINT SOURCE SIZE_KB"). From
# outside, the cage is killed when the canary stops beating for STALE_S
# seconds, after TIMEOUT_S, or when this script is interrupted; every
# process left in the cgroup is killed and the cgroup removed on every
# exit. WORKDIR (made by the caller, on a disk, not under /tmp)
# receives the command's output (run.log) and the canary's file; the
# report goes to stdout as "cage: KEY VALUE" lines. Needs root. Exits 0
# when the cage ran and reported, whatever the command did; 2 when the
# cage could not be built; 130 when interrupted.
set -u
work=$1
timeout_s=$2
shift 2
tmpfs_size=64m
memory_limit=$((1024 * 1024 * 1024))
stale_s=15

# ---- inside: PID 1 of the cage -------------------------------------------
if [ "${CORDON_CAGE_INSIDE:-}" = 1 ]; then
    # Every writable tmpfs the command could see gets a small one of its
    # own, the three named first (they must exist and be private).
    for mp in /dev/shm /tmp /sys/fs/cgroup; do
        mount -t tmpfs -o size=$tmpfs_size,mode=1777 cordon-cage "$mp" || exit 2
    done
    # rest is the optional fields, then "- TYPE SOURCE SUPEROPTS"; with no
    # optional field (a private mount, as all are after unshare) it starts
    # with the "-". The table is read before the first mount: each mount
    # adds a line, which a loop reading it live would mount over again.
    table=$(cat /proc/self/mountinfo)
    echo "$table" | while read -r _ _ _ _ mp opts rest; do
        case "$rest" in "- tmpfs cordon-cage "* | *" - tmpfs cordon-cage "*) continue ;; esac
        case "$rest" in "- tmpfs "* | *" - tmpfs "*) ;; *) continue ;; esac
        case "$mp" in /dev/shm | /tmp | /sys/fs/cgroup) continue ;; esac
        case ",$opts," in *,rw,*) ;; *) continue ;; esac
        mount -t tmpfs -o size=$tmpfs_size cordon-cage "$mp" 2>/dev/null
    done
    # What the command can reach at each writable tmpfs's mount point
    # (df resolves the path to the mount on top; one hidden under another
    # cage tmpfs is not reachable).
    while read -r _ _ _ _ mp opts rest; do
        case "$rest" in "- tmpfs "* | *" - tmpfs "*) ;; *) continue ;; esac
        case ",$opts," in *,rw,*) ;; *) continue ;; esac
        [ -d "$mp" ] || continue
        echo "cage: tmpfs $(df -k --output=target,source,size "$mp" | tail -n 1 | tr -s ' ')"
    done </proc/self/mountinfo | sort -u
    used() { df -k --output=used /dev/shm /tmp /sys/fs/cgroup | tail -n 3 | tr '\n' ' '; }
    echo "cage: before_kb $(used)"
    (
        # The canary: beats, and keeps the most each tmpfs held.
        n=0; a=0; b=0; c=0
        while :; do
            # shellcheck disable=SC2046
            set -- $(used)
            [ "$1" -gt "$a" ] && a=$1; [ "$2" -gt "$b" ] && b=$2; [ "$3" -gt "$c" ] && c=$3
            n=$((n + 1))
            echo "$n $a $b $c" >"$work/canary.new" && mv "$work/canary.new" "$work/canary"
            sleep 0.1
        done
    ) &
    canary=$!
    echo "$canary" >"$work/canary.pid"
    mkdir -p "$work/tmp"
    TMPDIR=$work/tmp "$@" >"$work/run.log" 2>&1
    echo "cage: command_rc $?"
    # After the command: alive, not stopped, still beating.
    read -r beats _ 2>/dev/null <"$work/canary" || beats=0
    sleep 1
    read -r beats2 _ 2>/dev/null <"$work/canary" || beats2=0
    state=$(sed 's/^.*) \(.\).*/\1/' "/proc/$canary/stat" 2>/dev/null)
    echo "cage: canary_state ${state:-gone}"
    echo "cage: canary_beats $beats $beats2"
    echo "cage: after_kb $(used)"
    echo "cage: most_kb $(cut -d' ' -f2-4 "$work/canary")"
    echo "cage: fill_files $(find /dev/shm /tmp /sys/fs/cgroup -maxdepth 1 -name '.cordon-fill-*' | wc -l)"
    kill -KILL "$canary"
    echo "cage: done"
    exit 0
fi

# ---- outside ---------------------------------------------------------------
[ "$(id -u)" = 0 ] || { echo "cage: error the cage needs root"; exit 2; }
cg_id=cordon-selftest-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
if [ -w /sys/fs/cgroup/memory/cgroup.procs ]; then
    cg_v=1
    cg=/sys/fs/cgroup/memory/$cg_id
elif [ -f /sys/fs/cgroup/cgroup.controllers ] &&
    grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
    cg_v=2
    cg=/sys/fs/cgroup/$cg_id
else
    echo "cage: error no memory cgroup: neither v1's at /sys/fs/cgroup/memory nor v2's" \
        "memory controller in /sys/fs/cgroup/cgroup.subtree_control"
    exit 2
fi
mkdir "$cg" || exit 2
cage=
# shellcheck disable=SC2317 # (run by the traps)
stop_cage() {
    # unshare's --kill-child takes the cage's PID 1, and with it every
    # process of the cage. What is still in the cgroup (only the cage's
    # processes can be) is killed too: by cgroup.kill on v2, else each
    # pid seen in the cgroup right before it is signalled.
    [ -z "$cage" ] || kill -KILL "$cage" 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        procs=$(cat "$cg/cgroup.procs" 2>/dev/null)
        [ -n "$procs" ] || return 0
        if [ -f "$cg/cgroup.kill" ]; then
            echo 1 >"$cg/cgroup.kill"
        else
            for p in $procs; do
                grep -q "/$cg_id\$" "/proc/$p/cgroup" 2>/dev/null && kill -KILL "$p" 2>/dev/null
            done
        fi
        sleep 0.5
    done
}
# shellcheck disable=SC2317
cleanup() {
    stop_cage
    # The cgroup goes once the kernel has let go of its processes.
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        rmdir "$cg" 2>/dev/null && return 0
        sleep 0.5
    done
    echo "cage: error cannot remove $cg"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
if [ $cg_v = 1 ]; then
    echo $memory_limit >"$cg/memory.limit_in_bytes" || exit 2
else
    echo $memory_limit >"$cg/memory.max" || exit 2
fi
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
# Into the cgroup first (its own pid: $$ of a subshell is its parent's),
# then exec unshare, so that $cage is unshare's pid and every process of
# the cage is charged to the cgroup.
sh -c 'echo $$ >"$1/cgroup.procs" || exit 2; shift; exec "$@"' cage-enter "$cg" \
    env CORDON_CAGE_INSIDE=1 unshare --pid --fork --mount-proc --kill-child \
    sh "$self" "$work" "$timeout_s" "$@" >"$work/cage.out" 2>&1 &
cage=$!
# The canary from outside, where nothing in the cage can stop the watch.
last=; stale=0; waited=0; why=
while kill -0 "$cage" 2>/dev/null; do
    sleep 1
    waited=$((waited + 1))
    read -r beats _ 2>/dev/null <"$work/canary" || beats=
    if [ -n "$beats" ] && [ "$beats" = "$last" ]; then stale=$((stale + 1)); else stale=0; fi
    last=$beats
    if [ $stale -ge $stale_s ]; then why="the canary stopped beating for ${stale_s} s"; fi
    if [ $waited -ge "$timeout_s" ]; then why="the cage ran past ${timeout_s} s"; fi
    if [ -n "$why" ]; then
        # unshare's --kill-child takes the cage's PID 1, and with it
        # every process of the cage.
        kill -KILL "$cage" 2>/dev/null
        break
    fi
done
wait "$cage" 2>/dev/null
# Reaped: its pid may be another process's from now on.
cage=
cat "$work/cage.out"
[ -z "$why" ] || echo "cage: killed $why"
if [ $cg_v = 1 ]; then
    echo "cage: memory_failcnt $(cat "$cg/memory.failcnt")"
    echo "cage: memory_oom_kill $(sed -n 's/^oom_kill //p' "$cg/memory.oom_control")"
    echo "cage: memory_max_usage $(cat "$cg/memory.max_usage_in_bytes") limit $memory_limit"
else
    # v2: "max" counts the times usage reached memory.max; memory.peak is
    # there from Linux 5.19.
    echo "cage: memory_failcnt $(sed -n 's/^max //p' "$cg/memory.events")"
    echo "cage: memory_oom_kill $(sed -n 's/^oom_kill //p' "$cg/memory.events")"
    echo "cage: memory_max_usage $(cat "$cg/memory.peak" 2>/dev/null || echo unknown) limit $memory_limit"
fi
echo "cage: host_fill_files $(find /dev/shm /sys/fs/cgroup -maxdepth 1 -name '.cordon-fill-*' 2>/dev/null | wc -l)"
exit 0
