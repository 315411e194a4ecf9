#!/bin/sh
# make check-integration runs each suite through this (its LOG_COMPILER):
# a suite that needs what this host lacks exits 77, automake's SKIP, with a
# line saying why; otherwise the suite runs as it is. Every suite here needs
# root (the trusted-local uid pool in /run/cordon/uids and its mounts, the
# Docker socket, runc's containers); the docker suite a daemon that answers,
# the runc suite a runc binary, the bubblewrap suite bwrap, the contract run
# each when those providers
# were built (CORDON_BUILT_PROVIDERS).
set -u
test=$1
name=${test##*/}
skip() {
  echo "SKIP: $name: $*"
  exit 77
}
docker_answers() {
  sock=/var/run/docker.sock
  case ${DOCKER_HOST:-} in
    unix://*) sock=${DOCKER_HOST#unix://} ;;
    ?*) return 1 ;;
  esac
  CORDON_DOCKER_SOCKET=$sock bash "$(dirname "$0")/mechanism/dockerd.sh" status
}
bwrap_found() {
  [ -x /usr/bin/bwrap ]
}
runc_found() {
  command -v runc >/dev/null 2>&1 || [ -x /usr/bin/runc ] || [ -x /usr/sbin/runc ] ||
    [ -x /usr/local/bin/runc ] || [ -x /usr/local/sbin/runc ]
}
built() {
  case " ${CORDON_BUILT_PROVIDERS:-} " in
    *" $1 "*) return 0 ;;
  esac
  return 1
}

# It needs nothing: it says that nothing was built.
[ "$name" = no-criterion.sh ] && exec "$@"
[ "$(id -u)" -eq 0 ] || skip "needs root (uid $(id -u)): run make check-integration as root"
case $name in
  docker-tests)
    docker_answers || skip "needs a Docker daemon: none answers at ${DOCKER_HOST:-/var/run/docker.sock}"
    # Suite docker_daemon stops a daemon: scripts/test-all.sh runs it alone,
    # with CORDON_DOCKER_STOP_DAEMON=1. Left out here, so that it is not a skip.
    [ "${CORDON_DOCKER_STOP_DAEMON:-}" = 1 ] || set -- "$@" --filter '!(docker_daemon)/*' ;;
  runc-tests)
    runc_found || skip "needs runc: not in PATH nor in /usr/bin, /usr/sbin, /usr/local/bin, /usr/local/sbin" ;;
  bubblewrap-tests)
    bwrap_found || skip "needs bwrap: /usr/bin/bwrap is missing (apt-get install bubblewrap)" ;;
  run-contract.sh)
    if built docker && ! docker_answers; then
      skip "the docker provider was built and needs a Docker daemon: none answers at ${DOCKER_HOST:-/var/run/docker.sock}"
    fi
    if built runc && ! runc_found; then
      skip "the runc provider was built and needs runc: not found"
    fi
    if built bubblewrap && ! bwrap_found; then
      skip "the bubblewrap provider was built and needs /usr/bin/bwrap: not found"
    fi ;;
esac
exec "$@"
