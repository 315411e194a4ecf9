#!/usr/bin/env bash
# A Docker daemon of the tests' own, beside whatever daemon the machine runs:
# scripts/test-all.sh runs the whole docker tier on one (started with
# --test-runtimes, reached through DOCKER_HOST), and the test that must stop
# and restart its daemon (suite docker_daemon of tests/mechanism/test_docker.c)
# starts another. Everything it has lives in DIR:
#   private-dockerd.sh start DIR [--test-runtimes]
#                                         start dockerd on DIR/docker.sock
#                                         (data, exec root, pid file, log,
#                                         its own containerd all under DIR),
#                                         wait up to 60 s for it to answer;
#                                         with --test-runtimes, the runtimes
#                                         the docker tests use registered
#                                         (see runtimes)
#   private-dockerd.sh runtimes           print the daemon.json that registers
#                                         them: cordon-test-runc (runc) and
#                                         runsc (gVisor, with --network=none:
#                                         without it, containers with network
#                                         none fail to start on this kind of
#                                         host); tests/mechanism/dockerd.sh
#                                         starts its daemon with it too
#   private-dockerd.sh import DIR TARBALL docker import a rootfs tarball into
#                                         it; prints the image id
#   private-dockerd.sh stop DIR           stop that daemon (none else), keep DIR
#   private-dockerd.sh remove DIR         stop it, unmount what it left under
#                                         DIR, remove DIR
# It has no bridge, no iptables or masquerading rules and no IP forwarding
# (cordon's containers have network none), reads no /etc/docker/daemon.json,
# and starts its own containerd (dockerd's default without --containerd),
# whose socket and state are under DIR too: nothing of the machine's daemon
# or of its containerd is shared, and this script signals only the
# processes whose command line names DIR.
set -euo pipefail

usage() {
  echo "usage: $0 start DIR [--test-runtimes], stop|remove DIR, import DIR TARBALL, or runtimes" >&2
  exit 2
}

# The daemon.json of the runtimes the docker tests use.
runtimes() {
  local runc runsc
  runc=$(command -v runc || true)
  runsc=$(command -v runsc || true)
  [ -n "$runc" ] || { echo "private-dockerd: no runc binary for the cordon-test-runc runtime" >&2; return 1; }
  [ -n "$runsc" ] || { echo "private-dockerd: no runsc binary for the runsc runtime (Debian's runsc)" >&2; return 1; }
  printf '{"runtimes": {"cordon-test-runc": {"path": "%s"}, "runsc": {"path": "%s", "runtimeArgs": ["--network=none"]}}}\n' \
    "$runc" "$runsc"
}
if [ "${1:-}" = runtimes ]; then
  [ $# -eq 1 ] || usage
  runtimes
  exit
fi
[ $# -ge 2 ] || usage
verb=$1
dir=$2
case $dir in /*) ;; *) echo "private-dockerd: DIR must be absolute: $dir" >&2; exit 2 ;; esac
dir=${dir%/}
sock=$dir/docker.sock
pidfile=$dir/docker.pid

answering() {
  [ -S "$sock" ] && timeout 10 docker -H "unix://$sock" version >/dev/null 2>&1
}

# Pids of this daemon's processes, which all name DIR on their command
# line: dockerd itself, its containerd (--config DIR/exec/containerd/...)
# and containerd's shims (-address DIR/exec/containerd/containerd.sock).
pids_of_dir() {
  local p
  for p in $(pgrep -f -- "$dir/" || true); do
    grep -qx -e dockerd -e containerd -e 'containerd-shim.*' "/proc/$p/comm" 2>/dev/null && echo "$p"
  done
  return 0
}

start() {
  if answering; then echo "private-dockerd: $sock already answers"; return 0; fi
  command -v dockerd >/dev/null || { echo "private-dockerd: dockerd is not installed (docker.io)" >&2; return 1; }
  mkdir -p "$dir/data" "$dir/exec"
  if [ "${1:-}" = --test-runtimes ]; then
    runtimes >"$dir/daemon.json" || return 1
  else
    echo '{}' >"$dir/daemon.json"
  fi
  rm -f "$sock"
  setsid dockerd --config-file "$dir/daemon.json" --host "unix://$sock" \
    --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$pidfile" \
    --bridge=none --iptables=false --ip-masq=false --ip-forward=false --ip6tables=false \
    >>"$dir/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 1 120); do
    if answering; then
      echo "private-dockerd: started (pid $(cat "$pidfile"), socket $sock)"
      return 0
    fi
    # no process of it left (given a second to show up): it exited
    if [ "$SECONDS" -gt 1 ] && [ -z "$(pids_of_dir)" ]; then break; fi
    sleep 0.5
  done
  echo "private-dockerd: no answer on $sock; the end of $dir/dockerd.log:" >&2
  tail -n 30 "$dir/dockerd.log" >&2 || true
  stop >&2 || true
  return 1
}

stop() {
  local pids
  pids=$(pids_of_dir)
  [ -n "$pids" ] || { echo "private-dockerd: nothing runs under $dir"; return 0; }
  # dockerd first: it stops its containers and its containerd itself.
  for p in $pids; do
    if grep -qx dockerd "/proc/$p/comm" 2>/dev/null; then kill -TERM "$p" 2>/dev/null || true; fi
  done
  for _ in $(seq 1 60); do
    [ -n "$(pids_of_dir)" ] || break
    sleep 0.5
  done
  pids=$(pids_of_dir)
  if [ -n "$pids" ]; then
    echo "private-dockerd: still running after 30 s, sending SIGKILL:" "$pids" >&2
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.5
  fi
  rm -f "$pidfile"
  echo "private-dockerd: stopped"
}

remove() {
  local m
  [ -d "$dir" ] || return 0
  stop
  # A daemon that was killed leaves its overlay and netns mounts: innermost first.
  awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
    m=$(printf '%b' "$m") # /proc/mounts escapes spaces as \040
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null ||
      echo "private-dockerd: $m stays mounted" >&2
  done
  rm -rf --one-file-system "$dir"
  [ ! -e "$dir" ] || { echo "private-dockerd: $dir could not be removed" >&2; return 1; }
}

case $verb in
  start)
    [ $# -eq 2 ] || { [ $# -eq 3 ] && [ "$3" = --test-runtimes ]; } || usage
    start "${3:-}" ;;
  stop) stop ;;
  remove) remove ;;
  import)
    [ $# -eq 3 ] || usage
    # prints the new image's id
    docker -H "unix://$sock" import "$3"
    ;;
  *) usage ;;
esac
