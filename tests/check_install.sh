#!/bin/sh
# Two ways a host project consumes libfastrl, checked end to end:
#  1. `meson install` into a staging prefix, then a C program built against it with
#     pkg-config (shared library, soname libfastrl.so.0) and run.
#  2. libfastrl as a meson subproject: dependency('fastrl') resolves through
#     meson.override_dependency.
# usage: check_install.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

meson install -C "$build" --destdir "$tmp/stage" --quiet >/dev/null
pc=$(find "$tmp/stage" -name fastrl.pc | head -n 1)
[ -n "$pc" ] || { echo "FAIL: fastrl.pc not installed"; exit 1; }
prefix=$(sed -n 's/^prefix=//p' "$pc")
export PKG_CONFIG_PATH="$(dirname "$pc")" PKG_CONFIG_SYSROOT_DIR="$tmp/stage"
libdir=$(pkg-config --variable=libdir fastrl)
[ -e "$libdir/libfastrl.so.0" ] || { echo "FAIL: $libdir/libfastrl.so.0 missing"; exit 1; }
cat > "$tmp/host.c" <<'C'
#include <fastrl.h>
#include <stdio.h>
int main(void)
{
    frl_runtime *rt;
    frl_vec_env *v;
    if (frl_runtime_create(&rt, NULL, NULL, NULL) != FRL_OK) return 1;
    if (frl_vec_env_create(&v, rt, "CartPole-v1", 8, NULL) != FRL_OK) return 1;
    if (frl_vec_env_reset(v, 1) != FRL_OK || frl_vec_env_step(v) != FRL_OK) return 1;
    printf("installed libfastrl %s works\n", frl_version_string());
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
    return 0;
}
C
# shellcheck disable=SC2046
cc -std=c99 -o "$tmp/host" "$tmp/host.c" $(pkg-config --cflags --libs fastrl)
readelf -d "$tmp/host" | grep -q 'libfastrl.so.0' || { echo "FAIL: host not linked to libfastrl.so.0"; exit 1; }
LD_LIBRARY_PATH="$libdir" "$tmp/host"
echo "install prefix $prefix: headers, libraries, fastrl.pc, CLI ok"

mkdir -p "$tmp/sub/subprojects"
ln -s "$src" "$tmp/sub/subprojects/fastrl"
cp "$tmp/host.c" "$tmp/sub/host.c"
cat > "$tmp/sub/meson.build" <<'M'
project('host', 'c')
fastrl = dependency('fastrl', fallback: ['fastrl', 'fastrl_dep'],
                    default_options: ['tests=false'])
test('host', executable('host', 'host.c', dependencies: fastrl))
M
meson setup "$tmp/sub/build" "$tmp/sub" >/dev/null
ninja -C "$tmp/sub/build" >/dev/null
"$tmp/sub/build/host"
echo "subproject use ok"
