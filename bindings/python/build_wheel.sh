#!/bin/sh
# Build a wheel of the Python binding that bundles a built libfastrl, so that
# `pip install fastrl-*.whl` is all a Python user needs.
#
#   bindings/python/build_wheel.sh LIBRARY OUTDIR [PYTHON]
#
# LIBRARY: the built library (e.g. build/lib/libfastrl.so.0; symlinks are followed).
# OUTDIR:  where the wheel goes (created). PYTHON: an interpreter with pip, setuptools
# and wheel (default python3; the test venv has them). The package is staged in a
# temporary folder, so the source tree is left untouched; nothing is downloaded
# (--no-build-isolation). Prints the wheel's path.
#
# The wheel is tagged py3-none-linux_<arch>: any CPython 3.9+ on the platform. The
# library still needs the system's libzstd (libzstd1 on Debian), as the C build does;
# the wheel is not a manylinux wheel (no auditwheel repair).
set -eu

if [ $# -lt 2 ]; then
    echo "usage: build_wheel.sh LIBRARY OUTDIR [PYTHON]" >&2
    exit 2
fi
lib=$1 out=$2 python=${3:-python3}
here=$(cd "$(dirname "$0")" && pwd)

if [ ! -f "$lib" ]; then
    echo "build_wheel.sh: no library at $lib (build it first: meson setup build && ninja -C build)" >&2
    exit 1
fi
for mod in pip setuptools wheel; do
    if ! "$python" -c "import $mod" 2>/dev/null; then
        echo "build_wheel.sh: $python lacks $mod (pip install setuptools wheel)" >&2
        exit 1
    fi
done

stage=$(mktemp -d "${TMPDIR:-/tmp}/fastrl_wheel.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/pkg" "$out"
cp "$here/pyproject.toml" "$here/setup.py" "$here/README.md" "$stage/pkg/"
mkdir "$stage/pkg/fastrl"
cp "$here"/fastrl/*.py "$stage/pkg/fastrl/"
cp "$here/fastrl/py.typed" "$stage/pkg/fastrl/" # type information (PEP 561)
cp -L "$lib" "$stage/pkg/fastrl/libfastrl.so.0"
# The debug info is for abidw; the wheel needs only the code.
if command -v strip >/dev/null 2>&1; then
    strip --strip-debug "$stage/pkg/fastrl/libfastrl.so.0"
fi

"$python" -m pip wheel --no-deps --no-build-isolation --disable-pip-version-check -q \
    -w "$stage/dist" "$stage/pkg" >"$stage/pip.log" 2>&1 || {
    cat "$stage/pip.log" >&2
    echo "build_wheel.sh: pip wheel failed" >&2
    exit 1
}
whl=$(ls "$stage"/dist/fastrl-*.whl)
cp "$whl" "$out/"
echo "$out/$(basename "$whl")"
