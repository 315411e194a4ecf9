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
# (v1, /sys/fs/cgroup/memory/cordon-selftest-RANDOM) with a limit, removed
# afterwards. Inside, before the command, a canary process beats every
# 0.1 s and records the most each of the three tmpfs held. From outside,
# the cage is killed when the canary stops beating for STALE_S seconds or
# after TIMEOUT_S. WORKDIR (made by the caller, on a disk, not under /tmp)
# receives the command's output (run.log) and the canary's file; the
# report goes to stdout as "cage: KEY VALUE" lines. Needs root. Exits 0
# when the cage ran and reported, whatever the command did; 2 when the
# cage could not be built.
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
    while read -r _ _ _ _ mp opts rest; do
        case "$rest" in *' - tmpfs '*) ;; *) continue ;; esac
        case "$mp" in /dev/shm | /tmp | /sys/fs/cgroup) continue ;; esac
        case ",$opts," in *,rw,*) ;; *) continue ;; esac
        mount -t tmpfs -o size=$tmpfs_size cordon-cage "$mp" 2>/dev/null
    done </proc/self/mountinfo
    used() { df -k --output=used /dev/shm /tmp /sys/fs/cgroup | tail -n 3 | tr '\n' ' '; }
    echo "cage: before_kb $(used)"
    (
        # The canary: beats, and keeps the most each tmpfs held.
        n=0; a=0; b=0; c=0
        while :; do
            set -- $(used)
            [ "$1" -gt $a ] && a=$1; [ "$2" -gt $b ] && b=$2; [ "$3" -gt $c ] && c=$3
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
    read -r beats _ <"$work/canary" 2>/dev/null || beats=0
    sleep 1
    read -r beats2 _ <"$work/canary" 2>/dev/null || beats2=0
    state=$(sed 's/^.*) \(.\).*/\1/' "/proc/$canary/stat" 2>/dev/null)
    echo "cage: canary_state ${state:-gone}"
    echo "cage: canary_beats $beats $beats2"
    echo "cage: after_kb $(used)"
    echo "cage: most_kb $(cut -d' ' -f2-4 "$work/canary")"
    echo "cage: fill_files $(ls -a /dev/shm /tmp /sys/fs/cgroup | grep -c '^\.cordon-fill-')"
    kill -KILL "$canary"
    echo "cage: done"
    exit 0
fi

# ---- outside ---------------------------------------------------------------
[ "$(id -u)" = 0 ] || { echo "cage: error the cage needs root"; exit 2; }
cg_root=/sys/fs/cgroup/memory
[ -w "$cg_root/cgroup.procs" ] ||
    { echo "cage: error no memory cgroup (v1) at $cg_root"; exit 2; }
cg=$cg_root/cordon-selftest-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
mkdir "$cg" || exit 2
cleanup() {
    # The cage's processes are gone once unshare is (--kill-child); the
    # cgroup goes once the kernel has let go of them.
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        rmdir "$cg" 2>/dev/null && return 0
        sleep 0.5
    done
    echo "cage: error cannot remove $cg"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
echo $memory_limit >"$cg/memory.limit_in_bytes" || exit 2
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
    read -r beats _ <"$work/canary" 2>/dev/null || beats=
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
cat "$work/cage.out"
[ -z "$why" ] || echo "cage: killed $why"
echo "cage: memory_failcnt $(cat "$cg/memory.failcnt")"
echo "cage: memory_oom_kill $(sed -n 's/^oom_kill //p' "$cg/memory.oom_control")"
echo "cage: memory_max_usage $(cat "$cg/memory.max_usage_in_bytes") limit $memory_limit"
echo "cage: host_fill_files $(ls -a /dev/shm /sys/fs/cgroup 2>/dev/null | grep -c '^\.cordon-fill-')"
exit 0
