#!/usr/bin/env bash
# What a provider author compiles, compiled the way they would:
#   - every public header together with CORDON_PROVIDER_DEFINE,
#     CORDON_WORKSPACE_SLOTS and CORDON_LIFECYCLE_OPS, under
#     clang -Weverything -Werror, gcc -Wall -Wextra -Wpedantic -Werror
#     -std=c11, and (the headers alone) as C++ under g++ -Wall -Wextra -Werror;
#   - the skeleton of docs/provider-authoring.md (its first C block) and
#     examples/provider-hello/hello.c under gcc and clang -Wall -Wextra -Werror;
#   - with --exports DIR: what libcordon-sdk.so and libcordon.so in DIR (a
#     build tree's .libs, or the installed libdir) export. Each defined
#     dynamic symbol must be declared CORDON_EXTERN in an installed header
#     (libcordon-sdk: cordon/sdk/*.h, libcordon: cordon/cordon.h), and none
#     may be a cordon__ internal.
#   scripts/check-headers.sh [--installed] [--exports DIR]
# Headers come from plugin-api/, or with --installed from the installed
# package (pkg-config cordon). Prints one line per check and ends with
# "headers: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
installed=0 exports=
while [ $# -gt 0 ]; do
  case $1 in
    --installed) installed=1 ;;
    --exports) exports=${2:?--exports needs a directory}; shift ;;
    *) echo "usage: $0 [--installed] [--exports DIR]" >&2; exit 2 ;;
  esac
  shift
done
if [ "$installed" = 1 ]; then
  cflags=$(PKG_CONFIG_PATH=${PKG_CONFIG_PATH:-/usr/local/lib/pkgconfig} pkg-config --cflags cordon) ||
    { echo "headers: pkg-config finds no cordon"; echo "headers: 0 passed, 1 failed"; exit 1; }
  hdrdir=$(printf '%s\n' $cflags | sed -n 's/^-I//p' | head -n 1)/cordon
else
  cflags="-I$top/plugin-api"
  hdrdir=$top/plugin-api/cordon
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/cordon-headers.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
passed=0 failed=0

{
  for h in plugin-api/cordon/*.h plugin-api/cordon/sdk/*.h; do
    echo "#include <cordon/${h#plugin-api/cordon/}>"
  done
  # The macros that write code for the author, expanded as an author would.
  echo 'static int ws_open(struct cordon_resource *res, const char *state_json,'
  echo '                   struct cordon_workspace *ret, struct cordon_error *err);'
  echo 'static int ws_open(struct cordon_resource *res, const char *state_json,'
  echo '                   struct cordon_workspace *ret, struct cordon_error *err)'
  echo '{ (void)res; (void)state_json; (void)ret;'
  echo '  return cordon_error_set(err, CORDON_E_UNSUPPORTED, 0, "none"); }'
  echo 'CORDON_WORKSPACE_SLOTS(vt, ws_open)'
  echo 'static int mk(const struct cordon_host_v1 *h, const char *c, struct cordon_resource **r,'
  echo '              struct cordon_error *e) { (void)h; (void)c; (void)r; (void)e; return 0; }'
  echo 'static int hc(struct cordon_resource *r, struct cordon_error *e) { (void)r; (void)e; return 0; }'
  echo 'static void drop(struct cordon_resource *r) { (void)r; }'
  echo 'static int term(struct cordon_resource *r, const char *s, struct cordon_error *e)'
  echo '{ (void)r; (void)s; (void)e; return 0; }'
  echo 'static int list(struct cordon_resource *r, char **ids, struct cordon_error *e)'
  echo '{ (void)r; (void)ids; (void)e; return 0; }'
  echo 'CORDON_LIFECYCLE_OPS(vt, mk, hc, drop, term, term, list)'
  echo 'extern const size_t check_sizes;'
  echo 'const size_t check_sizes = sizeof(struct cordon_spec) + sizeof(struct cordon_exec_request);'
  echo 'static const struct cordon_provider_v1 vt = { .abi_version = CORDON_ABI_VERSION,'
  echo '    .struct_size = sizeof(struct cordon_provider_v1), .import_tar = vt_import_tar,'
  echo '    .import_files = vt_import_files, .export_tar = vt_export_tar, .export_files = vt_export_files,'
  echo '    .ensure = vt_ensure, .health_check = vt_health_check, .release = vt_release,'
  echo '    .terminate = vt_terminate, .reclaim = vt_reclaim, .list_executions = vt_list_executions };'
  echo 'CORDON_PROVIDER_DEFINE(vt)'
} >"$work/all.c"
grep '^#include' "$work/all.c" >"$work/all.cc"
awk '/^## 3\. A skeleton/ { s = 1 } s && /^```c$/ { c = 1; next } c && /^```$/ { exit } c { print }' \
  docs/provider-authoring.md >"$work/skeleton.c"

try() { # name, then the compiler command
  local name=$1; shift
  if "$@" >"$work/out" 2>&1; then
    passed=$((passed + 1)); echo "headers: ok: $name"
  else
    failed=$((failed + 1)); echo "headers: FAILED: $name"; head -n 30 "$work/out"
  fi
}
command -v clang >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang >/dev/null
[ -s "$work/skeleton.c" ] || { failed=$((failed + 1)); echo "headers: FAILED: no skeleton found in docs/provider-authoring.md"; }
# shellcheck disable=SC2086
try "every header and CORDON_PROVIDER_DEFINE, clang -Weverything" \
  clang -Weverything -Werror $cflags -c "$work/all.c" -o "$work/a.o"
try "every header and CORDON_PROVIDER_DEFINE, gcc -std=c11 -Wpedantic" \
  gcc -std=c11 -Wall -Wextra -Wpedantic -Werror $cflags -c "$work/all.c" -o "$work/a.o"
try "every header as C++" \
  g++ -Wall -Wextra -Werror $cflags -fsyntax-only "$work/all.cc"
try "the authoring guide's skeleton, gcc -Wall -Wextra" \
  gcc -Wall -Wextra -Werror $cflags -c "$work/skeleton.c" -o "$work/s.o"
try "the authoring guide's skeleton, clang -Wall -Wextra" \
  clang -Wall -Wextra -Werror $cflags -c "$work/skeleton.c" -o "$work/s.o"
try "examples/provider-hello, gcc -Wall -Wextra" \
  gcc -std=gnu11 -Wall -Wextra -Werror $cflags -fPIC -c examples/provider-hello/hello.c -o "$work/h.o"
try "examples/provider-hello, clang -Wall -Wextra" \
  clang -std=gnu11 -Wall -Wextra -Werror $cflags -fPIC -c examples/provider-hello/hello.c -o "$work/h.o"

# The names declared for export in the headers given: functions
# (CORDON_EXTERN ... name(), and data (CORDON_EXTERN extern ... name[ or name;).
declared() {
  sed -n -e 's/^CORDON_EXTERN[^(]*[ *]\([a-z_][a-z0-9_]*\)(.*/\1/p' \
    -e 's/^CORDON_EXTERN extern [^(]*[ *]\([a-z_][a-z0-9_]*\) *[[;].*/\1/p' "$@" | sort -u
}
# Every defined dynamic symbol of lib (version nodes aside) is in the list.
check_exports() { # name, library, header...
  local name=$1 lib=$2; shift 2
  if [ ! -e "$lib" ]; then
    failed=$((failed + 1)); echo "headers: FAILED: $name: no $lib"; return
  fi
  declared "$@" >"$work/declared"
  nm -D --defined-only "$lib" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u >"$work/exported"
  comm -23 "$work/exported" "$work/declared" >"$work/stray"
  if [ -s "$work/stray" ]; then
    failed=$((failed + 1))
    echo "headers: FAILED: $name: exported but declared in no installed header:"; sed 's/^/  /' "$work/stray"
  else
    passed=$((passed + 1)); echo "headers: ok: $name: $(wc -l <"$work/exported") symbols, each in an installed header"
  fi
}
if [ -n "$exports" ]; then
  check_exports "libcordon-sdk exports" "$exports/libcordon-sdk.so" "$hdrdir"/sdk/*.h
  check_exports "libcordon exports" "$exports/libcordon.so" "$hdrdir/cordon.h"
fi
echo "headers: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
