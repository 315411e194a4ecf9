#!/usr/bin/env bash
# The Debian packages, built and installed into a clean bookworm root:
#   - build them (dpkg-buildpackage -b, in a copy of the tree) and print lintian -I;
#   - in a fresh minbase root (mmdebstrap, from this machine's apt sources):
#     (a) cordon + cordon-provider-trusted-local alone: `cordon providers`
#         lists only trusted-local, and an --allow-unsafe-local run works;
#     (b) adding cordon-provider-runc makes `cordon run --isolation required`
#         work with nothing else changed;
#     (c) a provider package built against another ABI major
#         (Depends: cordon-provider-abi-99) is refused next to this host;
#     (d) the autopkgtest (debian/tests/contract) passes there;
#     (e) examples/provider-hello builds there against only the installed
#         -dev packages and cordon.pc, warning-free, and passes cordon-contract;
#     (f) python3-cordon: `import cordon; cordon.run(...)` runs a program
#         under runc from the installed packages;
#   - in a second clean root with every build dependency but libcurl's and
#     Criterion's -dev packages:
#     (g) ./configure --disable-provider-docker --without-criterion succeeds
#         and make builds the host and the other two providers;
#   - in a third clean root, the first's packages and Debian's docker.io:
#     (h) cordon-provider-docker installs, and the autopkgtest passes against
#         it with the root's own dockerd.
# Run as root on Debian 12. Ends with "debian: N passed, N failed". Leaves no
# trace: the copy, the packages, the root and its mounts are removed on any
# exit. The base root is cached as a tarball in $CORDON_IMAGE_CACHE
# (/var/cache/cordon-images), keyed by its package list.
#   scripts/debian-check.sh [--debs DIR]   DIR: packages already built there (with their
#                                          .changes), instead of building them here
set -uo pipefail
debs_from=
if [ "${1:-}" = "--debs" ]; then debs_from=$(cd "$2" && pwd) || exit 2; fi
cd "$(dirname "$0")/.."
top=$(pwd)
cache=${CORDON_IMAGE_CACHE:-/var/cache/cordon-images}
passed=0
failed=0
check() { # name, then a command: counts as one check
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "debian: ok: $name"
  else failed=$((failed + 1)); echo "debian: FAILED: $name"; fi
}
finish() {
  echo "debian: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}
start=$(date +%s)

work=$(mktemp -d /tmp/cordon-debian.XXXXXX) || exit 1
root=$work/root
dockerd_pid=
# The daemon of (h) and every process of its mount namespace (containerd,
# its shims, containers): none outlives the check.
stop_dockerd() {
  local ns p i
  [ -n "$dockerd_pid" ] || return 0
  ns=$(readlink "/proc/$dockerd_pid/ns/mnt" 2>/dev/null)
  # Never this script's own namespace (the pid gone and taken by another).
  [ "$ns" != "$(readlink /proc/self/ns/mnt)" ] || ns=
  [ -n "$ns" ] && kill -TERM "$dockerd_pid" 2>/dev/null
  for i in $(seq 100); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.2; done
  if [ -n "$ns" ]; then
    for p in /proc/[0-9]*; do
      [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ] && kill -KILL "${p#/proc/}" 2>/dev/null
    done
  fi
  dockerd_pid=
}
cleanup() {
  # Everything mounted beneath the root, deepest first; then the files.
  local m
  stop_dockerd
  for m in $(awk -v r="$work" 'index($2, r "/") == 1 { print $2 }' /proc/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export DEBIAN_FRONTEND=noninteractive
tools=(debhelper dpkg-dev lintian mmdebstrap fakeroot build-essential)
missing=()
for p in "${tools[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "debian: installing ${missing[*]}"
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
fi

if [ -n "$debs_from" ]; then
  mkdir -p "$work/src"
  cp "$debs_from"/*.deb "$debs_from"/*.changes "$debs_from"/*.buildinfo "$work/src/"
else
  # A copy of the tree (tracked and new files, nothing ignored), so that the
  # source stays clean; the packages land next to it, in $work.
  mkdir -p "$work/src/cordon"
  if git rev-parse --git-dir >/dev/null 2>&1; then
    git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$work/src/cordon"
  else
    tar -C "$top" --exclude='./_build*' -cf - . | tar -C "$work/src/cordon" -xf -
  fi
  (cd "$work/src/cordon" && dpkg-checkbuilddeps >/dev/null 2>&1) ||
    apt-get build-dep -y -q "$work/src/cordon" >/dev/null ||
    { apt-get update -q >/dev/null && apt-get build-dep -y -q "$work/src/cordon" >/dev/null; }

  echo "== dpkg-buildpackage -us -uc -b"
  (cd "$work/src/cordon" && dpkg-buildpackage -us -uc -b -j"$(nproc)") >"$work/build.log" 2>&1
  build_rc=$?
  [ $build_rc -eq 0 ] || tail -n 60 "$work/build.log"
  check "the packages build (dpkg-buildpackage -b)" test $build_rc -eq 0
  [ $build_rc -eq 0 ] || finish
  echo "built in $(($(date +%s) - start)) s: $(cd "$work/src" && ls ./*.deb | tr '\n' ' ')"
fi

echo "== lintian -I"
lintian -I --pedantic "$work"/src/*.changes >"$work/lintian.out" 2>&1
cat "$work/lintian.out"
check "lintian: no error and no warning" bash -c "! grep -q '^[EW]: ' '$work/lintian.out'"

deb() { ls "$work"/src/"$1"_*.deb; }
abi=$(sed -n 's/^#define CORDON_ABI_MAJOR \([0-9]*\)$/\1/p' plugin-api/cordon/provider.h)
check "cordon provides cordon-provider-abi-$abi, the ABI major of provider.h" \
  bash -c "dpkg-deb -f '$(deb cordon)' Provides | grep -qx 'cordon-provider-abi-$abi'"
check "each provider package depends on cordon-provider-abi-$abi" bash -c "
  for p in trusted-local runc docker; do
    dpkg-deb -f \"\$(ls '$work'/src/cordon-provider-\${p}_*.deb)\" Depends | grep -q 'cordon-provider-abi-$abi' || exit 1
  done"

# ---- the clean root ---------------------------------------------------------
# Everything the packages depend on from Debian, and what the checks use
# (python for the bundles, gcc and make for the example, busybox and
# find for the autopkgtest's rootfs), comes in the cached base: installing
# our packages there then needs no download.
deps=$(for f in "$work"/src/*.deb; do dpkg-deb -f "$f" Depends; echo; done |
  tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/:any//; s/[[:space:]]//g' |
  grep -v -e '^$' -e '^cordon' -e '^libcordon' -e '^python3-cordon' | sort -u | tr '\n' ',')
include="${deps}python3-minimal,gcc,libc6-dev,make,pkgconf,busybox-static,findutils,dash"
key=$(printf 'bookworm minbase %s' "$include" | sha256sum | cut -c1-16)
base="$cache/debian-check-$key.tar"
sources=$(ls /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1 || true)
[ -n "$sources" ] || sources=/etc/apt/sources.list
mkdir -p "$cache"
exec 9>"$cache/.debian-check.lock"
flock 9
if [ ! -s "$base" ]; then
  echo "== mmdebstrap (cached after the first time): $include"
  rm -f "$base.tmp"
  mmdebstrap --quiet --format=tar --variant=minbase --include="$include" \
    bookworm "$base.tmp" "$sources" >"$work/mmdebstrap.log" 2>&1 && mv "$base.tmp" "$base"
fi
exec 9>&-
check "a clean bookworm root" test -s "$base"
[ -s "$base" ] || { tail -n 30 "$work/mmdebstrap.log"; finish; }
# runc needs /proc, /sys (and its cgroup tree) and /dev; the uid pool is
# the machine's own, shared with the host, so that an execution in the
# root never holds a uid that one outside holds too; the rootfs tarballs
# come from the image cache, read-only.
# The root is a mount point of its own: runc makes "/" a private mount
# before pivot_root, which fails (EINVAL) on a plain directory.
prepare_root() { # base tarball: unpacked into $root, mounted, the packages in /debs
  mkdir -p "$root" && tar -C "$root" -xf "$1" || return 1
  mount --bind "$root" "$root"
  mkdir -p /run/cordon/uids && chmod 0700 /run/cordon/uids
  mkdir -p "$root/run/cordon/uids" "$root$cache"
  mount -t proc proc "$root/proc"
  mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys"
  mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"
  mount --bind /run/cordon/uids "$root/run/cordon/uids"
  mount --bind -o ro "$cache" "$root$cache"
  mkdir -p "$root/debs"
  cp "$work"/src/*.deb "$root/debs/"
}
prepare_root "$base"
# Not chroot: in a chroot, runc's pivot_root attaches the container's root
# below the chroot directory, and a process that later enters the
# container's mount namespace (setns, as runc.so does for each exec) lands
# at the namespace's root, the host's "/", where /workspace is missing
# (ENOENT). A mount namespace of its own whose root is the clean root
# (pivot_root) gives runc the same start it has on a real machine.
in_root() {
  unshare --mount --propagation private -- /bin/sh -c '
    cd "$1" && shift && mkdir -p .pivot-old && pivot_root . .pivot-old &&
    cd / && umount -l /.pivot-old && rmdir /.pivot-old &&
    exec /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"' sh "$root" "$@"
}
install_debs() { # package names, from /debs (apt takes our own dependencies from there too)
  local p args=()
  for p in "$@"; do args+=("$(cd "$root" && ls ./debs/"$p"_*.deb | sed 's#^\.##')"); done
  in_root apt-get install -y -q --no-install-recommends "${args[@]}" >"$work/apt.log" 2>&1 ||
    { tail -n 20 "$work/apt.log"; return 1; }
}
echo 'print("hello from the Debian packages")' >"$root/tmp/main.py"

echo "== (a) cordon and cordon-provider-trusted-local alone"
check "(a) cordon and cordon-provider-trusted-local install" install_debs libcordon-sdk1 cordon cordon-provider-trusted-local
in_root cordon providers >"$work/providers.out" 2>&1
cat "$work/providers.out"
check "(a) cordon providers lists trusted-local only" \
  bash -c "[ \"\$(awk 'NF { print \$1 }' '$work/providers.out')\" = trusted-local ]"
in_root cordon run --isolation none --allow-unsafe-local /tmp/main.py >"$work/run-a.out" 2>&1
run_a=$?
cat "$work/run-a.out"
check "(a) an --allow-unsafe-local run works under trusted-local" \
  bash -c "[ $run_a -eq 0 ] && grep -q 'hello from the Debian packages' '$work/run-a.out' &&
           grep -q 'under trusted-local' '$work/run-a.out'"

echo "== (b) adding cordon-provider-runc"
read -r _ image digest < <(bash tests/images/build-images.sh python 2>"$work/images.err") ||
  cat "$work/images.err"
check "(b) cordon-provider-runc installs (and brings runc)" install_debs cordon-provider-runc
in_root cordon run --isolation required --image "$image@sha256:$digest" /tmp/main.py \
  >"$work/run-b.out" 2>&1
run_b=$?
cat "$work/run-b.out"
check "(b) cordon run --isolation required works under runc" \
  bash -c "[ $run_b -eq 0 ] && grep -q 'hello from the Debian packages' '$work/run-b.out' &&
           grep -q 'under runc \[isolated\]' '$work/run-b.out'"

echo "== (c) a provider built against ABI major 99"
mkdir -p "$work/fake/DEBIAN"
cat >"$work/fake/DEBIAN/control" <<EOF
Package: cordon-provider-fake
Version: 1.0
Architecture: all
Maintainer: cordon debian-check <nobody@invalid>
Depends: cordon-provider-abi-99
Description: a provider package for another provider ABI major
 Built by scripts/debian-check.sh; it must not install next to this host.
EOF
dpkg-deb --root-owner-group --build "$work/fake" "$root/debs/cordon-provider-fake_1.0_all.deb" >/dev/null
in_root apt-get install -y -q --no-install-recommends /debs/cordon-provider-fake_1.0_all.deb \
  >"$work/fake.out" 2>&1
fake_rc=$?
cat "$work/fake.out"
check "(c) apt refuses a provider for cordon-provider-abi-99" \
  bash -c "[ $fake_rc -ne 0 ] && grep -q 'cordon-provider-abi-99' '$work/fake.out' &&
           ! chroot '$root' dpkg-query -W -f='\${Status}' cordon-provider-fake 2>/dev/null | grep -q installed"

echo "== (d) the autopkgtest, debian/tests/contract"
# Run by hand inside the root: autopkgtest's null server would test this
# machine rather than the clean root, and its chroot server wants the
# source package and working apt sources inside the testbed. What
# autopkgtest adds (the Depends of debian/tests/control installed, a
# fresh AUTOPKGTEST_TMP, root) is done here the same way.
tdeps=$(sed -n 's/^Depends: //p' debian/tests/control | tr ',' '\n' | sed 's/[[:space:]]//g' |
  grep -e '^cordon' -e '^libcordon')
# shellcheck disable=SC2086
check "(d) the test's Depends install" install_debs $tdeps
mkdir -p "$root/autopkgtest/tmp"
cp -r debian/tests "$root/autopkgtest/"
in_root env AUTOPKGTEST_TMP=/autopkgtest/tmp sh /autopkgtest/tests/contract >"$work/autopkgtest.out" 2>&1
apt_rc=$?
grep -E '^(==|contract:)|Synthesis|\[FAIL\]' "$work/autopkgtest.out"
[ $apt_rc -eq 0 ] || tail -n 40 "$work/autopkgtest.out"
check "(d) the autopkgtest passes (trusted-local and runc)" \
  bash -c "[ $apt_rc -eq 0 ] && grep -q 'contract: ok: trusted-local' '$work/autopkgtest.out' &&
           grep -q 'contract: ok: runc' '$work/autopkgtest.out'"

echo "== (e) examples/provider-hello against the installed -dev packages"
check "(e) libcordon-sdk-dev and libcordon-dev install" install_debs libcordon0 libcordon-sdk-dev libcordon-dev
mkdir -p "$root/tmp/provider-hello"
cp examples/provider-hello/Makefile examples/provider-hello/hello.c "$root/tmp/provider-hello/"
in_root make -C /tmp/provider-hello CC=gcc CFLAGS="-O2 -Werror" >"$work/hello-build.out" 2>&1
hello_rc=$?
cat "$work/hello-build.out"
check "(e) provider-hello builds with gcc -Wall -Wextra -Werror from cordon.pc" test $hello_rc -eq 0
check "(e) hello.so exports only cordon_provider_init_v1" bash -c \
  "[ \"\$(nm -D --defined-only '$root/tmp/provider-hello/hello.so' | awk '{ print \$3 }')\" = cordon_provider_init_v1 ]"
in_root cordon-contract --provider /tmp/provider-hello/hello.so >"$work/hello-contract.out" 2>&1
hc_rc=$?
grep -E 'Synthesis|\[FAIL\]' "$work/hello-contract.out"
check "(e) provider-hello passes cordon-contract" \
  bash -c "[ $hc_rc -eq 0 ] && grep -q 'Failing: 0 | Crashing: 0' '$work/hello-contract.out'"
check "(e) libcordon.pc links a program against libcordon" bash -c "
  printf '#include <cordon/cordon.h>\nint main(void) { cordon_ctx_free(0); return 0; }\n' >'$root/tmp/host.c' &&
  chroot '$root' sh -c 'gcc -Wall -Wextra -Werror -o /tmp/host /tmp/host.c \$(pkg-config --cflags --libs libcordon) && /tmp/host'"

echo "== (f) python3-cordon: a program under runc from Python"
check "(f) python3-cordon installs" install_debs python3-cordon
cat >"$root/tmp/binding.py" <<'EOF'
import sys
import cordon

r = cordon.run({"main.py": "import os\nprint(6 * 7)\n"
                           "open('../output/answer.txt', 'w').write(str(os.getuid() != 0))\n"},
               language="python", isolation="required", image=sys.argv[1],
               outputs=["answer.txt"])
provider = r["meta"].get("provider_id")
print("python3-cordon: %s %s stdout=%r answer=%r" % (r.status, provider, r.stdout,
                                                    r.output("answer.txt")))
sys.exit(0 if (r.ok, provider, r.stdout, r.output("answer.txt")) == (True, "runc", "42\n", b"True")
         else 1)
EOF
in_root python3 /tmp/binding.py "$image@sha256:$digest" >"$work/python.out" 2>&1
py_rc=$?
cat "$work/python.out"
check "(f) import cordon; cordon.run(...) runs a program under runc from the package" \
  bash -c "[ $py_rc -eq 0 ] && grep -q '^python3-cordon: success runc' '$work/python.out'"

echo "== (g) configure --disable-provider-docker --without-criterion, without their -dev packages"
# A root of its own with every build dependency but libcurl's and
# Criterion's, as a distribution that leaves docker and the contract suite
# out builds. The tree comes from git, bootstrapped here.
binclude=gcc,libc6-dev,make,pkgconf,binutils,libarchive-dev,libcap-dev,libcjson-dev,libgit2-dev,libltdl-dev,libseccomp-dev
bkey=$(printf 'bookworm minbase %s' "$binclude" | sha256sum | cut -c1-16)
bbase="$cache/debian-check-build-$bkey.tar"
exec 9>"$cache/.debian-check.lock"
flock 9
if [ ! -s "$bbase" ]; then
  echo "== mmdebstrap (cached after the first time): $binclude"
  rm -f "$bbase.tmp"
  mmdebstrap --quiet --format=tar --variant=minbase --include="$binclude" \
    bookworm "$bbase.tmp" "$sources" >"$work/mmdebstrap-build.log" 2>&1 && mv "$bbase.tmp" "$bbase"
fi
exec 9>&-
broot=$work/broot
mkdir -p "$broot"
check "(g) a clean build root" tar -C "$broot" -xf "$bbase"
in_broot() { chroot "$broot" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
check "(g) the root has neither libcurl's nor Criterion's -dev package" bash -c "
  ! chroot '$broot' dpkg-query -W -f='\${Package} \${Status}\n' 'libcurl*-dev' libcriterion-dev 2>/dev/null |
    grep -q 'install ok installed' &&
  ! chroot '$broot' pkg-config --exists libcurl && ! chroot '$broot' pkg-config --exists criterion"
mkdir -p "$broot/src"
git ls-files -z | xargs -0 cp --parents -t "$broot/src"
(cd "$broot/src" && ./autogen.sh) >"$work/autogen.log" 2>&1 || tail -n 20 "$work/autogen.log"
in_broot sh -c 'cd /src && ./configure --disable-provider-docker --without-criterion --without-python' \
  >"$work/plain-configure.out" 2>&1
conf_rc=$?
[ $conf_rc -eq 0 ] || tail -n 30 "$work/plain-configure.out"
check "(g) ./configure --disable-provider-docker --without-criterion succeeds there" test $conf_rc -eq 0
in_broot sh -c "cd /src && make -j$(nproc)" >"$work/plain-make.out" 2>&1
make_rc=$?
[ $make_rc -eq 0 ] || tail -n 30 "$work/plain-make.out"
check "(g) make builds cordon, runc.so and trusted-local.so; no docker.so, no cordon-contract" bash -c "
  [ $make_rc -eq 0 ] && [ -e '$broot/src/.libs/runc.so' ] && [ -e '$broot/src/.libs/trusted-local.so' ] &&
  [ ! -e '$broot/src/.libs/docker.so' ] && [ ! -e '$broot/src/cordon-contract' ] &&
  chroot '$broot' /src/cordon --version >/dev/null"

echo "== (h) cordon-provider-docker in a root of its own, with Debian's docker.io"
# A third clean root: the first's packages and docker.io, whose daemon runs
# in the root's own mount namespace (its socket, images and containers are
# the root's, and the daemon binds cordon-init from the root's /usr/libexec
# as the provider names it). The autopkgtest there tests docker.
dinclude="$include,docker.io"
dkey=$(printf 'bookworm minbase %s' "$dinclude" | sha256sum | cut -c1-16)
dbase="$cache/debian-check-docker-$dkey.tar"
exec 9>"$cache/.debian-check.lock"
flock 9
if [ ! -s "$dbase" ]; then
  echo "== mmdebstrap (cached after the first time): $dinclude"
  rm -f "$dbase.tmp"
  mmdebstrap --quiet --format=tar --variant=minbase --include="$dinclude" \
    bookworm "$dbase.tmp" "$sources" >"$work/mmdebstrap-docker.log" 2>&1 && mv "$dbase.tmp" "$dbase"
fi
exec 9>&-
root=$work/droot   # from here on in_root and install_debs act on this root
check "(h) a clean root with docker.io" prepare_root "$dbase"
# shellcheck disable=SC2086
check "(h) cordon-provider-docker and the autopkgtest's Depends install" \
  install_debs libcordon-sdk1 cordon cordon-provider-docker $tdeps
dockerd_pid=$(in_root sh -c 'dockerd --host unix:///run/docker.sock --iptables=false --ip-masq=false \
  --bridge=none --log-level=warn >/var/log/cordon-dockerd.log 2>&1 </dev/null & echo $!')
for _ in $(seq 150); do
  in_root docker version >/dev/null 2>&1 && break
  sleep 0.2
done
check "(h) the root's dockerd answers" in_root docker version
mkdir -p "$root/autopkgtest/tmp"
cp -r debian/tests "$root/autopkgtest/"
in_root env AUTOPKGTEST_TMP=/autopkgtest/tmp sh /autopkgtest/tests/contract >"$work/autopkgtest-docker.out" 2>&1
dapt_rc=$?
grep -E '^(==|contract:)|Synthesis|\[FAIL\]' "$work/autopkgtest-docker.out"
[ $dapt_rc -eq 0 ] || { tail -n 40 "$work/autopkgtest-docker.out"; tail -n 20 "$root/var/log/cordon-dockerd.log"; }
check "(h) the autopkgtest passes there (trusted-local and docker)" \
  bash -c "[ $dapt_rc -eq 0 ] && grep -q 'contract: ok: trusted-local' '$work/autopkgtest-docker.out' &&
           grep -q 'contract: ok: docker' '$work/autopkgtest-docker.out'"
no_containers() { local ids; ids=$(in_root docker ps -aq) && [ -z "$ids" ]; }
check "(h) no container is left in the root's daemon" no_containers
stop_dockerd

echo "debian: took $(($(date +%s) - start)) s"
finish
