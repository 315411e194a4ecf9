#!/usr/bin/env bash
# Start or stop a Docker daemon on the machine's socket for working on the
# docker provider by hand (scripts/test-all.sh runs its docker tier on a
# daemon of its own: tests/mechanism/private-dockerd.sh).
#   dockerd.sh start   if the socket does not answer: install docker.io (and
#                      runsc) when missing, start dockerd with the test
#                      runtimes cordon-test-runc (runc) and runsc (gVisor)
#                      registered (private-dockerd.sh runtimes), wait up to
#                      90 s for it
#   dockerd.sh stop    stop the daemon this script started (none else), wait
#                      for it to exit
#   dockerd.sh status  exit 0 when the socket answers
# The daemon's log is $CORDON_DOCKERD_LOG (default /tmp/cordon-dockerd.log),
# its pid file $CORDON_DOCKERD_PID (default /tmp/cordon-dockerd.pid): a pid
# file there means "this script started it".
set -euo pipefail
sock=${CORDON_DOCKER_SOCKET:-/var/run/docker.sock}
log=${CORDON_DOCKERD_LOG:-/tmp/cordon-dockerd.log}
pidfile=${CORDON_DOCKERD_PID:-/tmp/cordon-dockerd.pid}

answering() {
  [ -S "$sock" ] || return 1
  if command -v curl >/dev/null; then
    curl -fsS --max-time 5 --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1
  else
    timeout 10 docker -H "unix://$sock" version >/dev/null 2>&1
  fi
}

ours() { # prints the pid of a daemon this script started and that still runs
  local pid
  [ -s "$pidfile" ] || return 1
  pid=$(cat "$pidfile")
  [ -d "/proc/$pid" ] && grep -q dockerd "/proc/$pid/cmdline" 2>/dev/null || return 1
  echo "$pid"
}

start() {
  if answering; then
    echo "dockerd: $sock already answers"
    return 0
  fi
  # A daemon someone else started (a package's init script, say) may still
  # be coming up: removing its socket under it would leave nothing answering.
  if pgrep -x dockerd >/dev/null && ! ours >/dev/null; then
    echo "dockerd: a daemon not started here runs; waiting for it to answer" >&2
    for _ in $(seq 1 60); do
      answering && { echo "dockerd: $sock answers (a daemon not started here)"; return 0; }
      pgrep -x dockerd >/dev/null || break
      sleep 0.5
    done
  fi
  if ! command -v dockerd >/dev/null; then
    echo "dockerd: not installed; installing docker.io" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io >&2
  fi
  if ! command -v runsc >/dev/null; then
    echo "dockerd: runsc not installed; installing runsc" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q runsc >&2
  fi
  local config attempt pid
  config="${pidfile%.pid}.json"
  # cordon's containers have network none: a second attempt starts the daemon
  # without the bridge and iptables rules, so a host whose netfilter refuses
  # them still gets a daemon.
  local -a extra=()
  for attempt in 1 2; do
    clear_stale
    [ "$attempt" -eq 1 ] || extra=(--iptables=false --bridge=none)
    # Written for each attempt: stopping a failed one removes it.
    bash "$(dirname "$0")/private-dockerd.sh" runtimes >"$config" || return 1
    setsid dockerd --config-file "$config" "${extra[@]}" >"$log" 2>&1 </dev/null &
    pid=$!
    # setsid forks when it leads its process group (a shell with job
    # control): the daemon is then its child, and $! a pid that is gone.
    sleep 0.2
    grep -q dockerd "/proc/$pid/cmdline" 2>/dev/null || pid=$(pgrep -n -x dockerd || echo "$pid")
    echo "$pid" >"$pidfile"
    for _ in $(seq 1 180); do
      answering && { echo "dockerd: started (pid $(cat "$pidfile"), log $log)"; return 0; }
      ours >/dev/null || break
      sleep 0.5
    done
    echo "dockerd: attempt $attempt: exited, or no answer on $sock within 90 s; the end of $log:" >&2
    tail -n 30 "$log" >&2 || true
    stop >&2 || true
    cp "$log" "$log.attempt$attempt" 2>/dev/null || true
  done
  return 1
}

# What a daemon that died without cleaning up leaves behind makes the next
# one hang or refuse to start: its socket, its pid file, and its containerd.
clear_stale() {
  local pid
  if [ -S "$sock" ] && ! ours >/dev/null; then
    rm -f "$sock"
  fi
  if [ -s /var/run/docker.pid ] && ! [ -d "/proc/$(cat /var/run/docker.pid)" ]; then
    rm -f /var/run/docker.pid
  fi
  if ! pgrep -x dockerd >/dev/null; then
    for pid in $(pgrep -f 'containerd --config /var/run/docker/containerd' || true); do
      echo "dockerd: stopping a stale containerd (pid $pid)" >&2
      kill -TERM "$pid" 2>/dev/null || true
    done
    for _ in $(seq 1 20); do
      pgrep -f 'containerd --config /var/run/docker/containerd' >/dev/null || break
      sleep 0.5
    done
    pkill -KILL -f 'containerd --config /var/run/docker/containerd' 2>/dev/null || true
  fi
}

stop() {
  local pid
  if ! pid=$(ours); then
    rm -f "$pidfile"
    echo "dockerd: no daemon started by this script"
    return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 60); do
    [ -d "/proc/$pid" ] || break
    sleep 0.5
  done
  if [ -d "/proc/$pid" ]; then
    echo "dockerd: pid $pid still runs after 30 s; sending SIGKILL" >&2
    kill -KILL "$pid" || true
  fi
  rm -f "$pidfile" "${pidfile%.pid}.json"
  echo "dockerd: stopped (pid $pid)"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) answering ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
