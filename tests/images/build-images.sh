#!/usr/bin/env bash
# Build the test rootfs tarballs offline-friendly, from Debian packages only
# (mmdebstrap, with this machine's own apt sources), cached by their recipe:
#   minimal    sh, sleep, tar, coreutils (the execution-host tests)
#   toolchain  python3, nodejs, golang, g++ (the four adapters)
#   python     python3 only (the README's example)
# Names on the command line pick images (default: minimal and toolchain).
# Prints "NAME PATH SHA256" per image. With --docker, also imports each into
# the Docker daemon the docker command reaches (DOCKER_HOST, else
# /var/run/docker.sock; scripts/test-all.sh names its own daemon's) with
# docker import, and prints its image id as a fourth column. The cache lives in $CORDON_IMAGE_CACHE (default
# /var/cache/cordon-images); a recipe change builds a new tarball.
set -euo pipefail
cache=${CORDON_IMAGE_CACHE:-/var/cache/cordon-images}
docker_import=false
if [ "${1:-}" = "--docker" ]; then docker_import=true; shift; fi
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(minimal toolchain)
command -v mmdebstrap >/dev/null || {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap >/dev/null
}
sources=$(ls /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1 || true)
[ -n "$sources" ] || sources=/etc/apt/sources.list
mkdir -p "$cache"
declare -A include=(
  [minimal]="coreutils,tar,procps"
  [toolchain]="coreutils,tar,procps,python3-minimal,nodejs,golang-go,g++,libc6-dev"
  [python]="python3-minimal"
)
for name in "${names[@]}"; do
  [ -n "${include[$name]:-}" ] || { echo "build-images: unknown image $name" >&2; exit 2; }
  recipe="bookworm minbase ${include[$name]}"
  key=$(printf '%s' "$recipe" | sha256sum | cut -c1-16)
  tar="$cache/$name-$key.tar"
  # one builder at a time per image (tests and helpers may race)
  exec 9>"$cache/.$name.lock"
  flock 9
  if [ ! -f "$tar" ] || [ ! -s "$tar" ]; then
    rm -rf "$tar" "$tar.tmp"
    # mmdebstrap writes a tar that its own tests verify; publish atomically.
    mmdebstrap --quiet --format=tar --variant=minbase --include="${include[$name]}" \
      bookworm "$tar.tmp" "$sources" >&2
    mv "$tar.tmp" "$tar"
  fi
  exec 9>&-
  [ -s "$tar.sha256" ] && [ "$tar.sha256" -nt "$tar" ] || sha256sum "$tar" | cut -d' ' -f1 >"$tar.sha256"
  digest=$(cat "$tar.sha256")
  if $docker_import; then
    ref="cordon-test-$name:$key"
    id=$(docker image inspect --format '{{.Id}}' "$ref" 2>/dev/null || true)
    if [ -z "$id" ]; then
      docker import "$tar" "$ref" >/dev/null
      id=$(docker image inspect --format '{{.Id}}' "$ref")
    fi
    echo "$name $tar $digest $id"
  else
    echo "$name $tar $digest"
  fi
done
