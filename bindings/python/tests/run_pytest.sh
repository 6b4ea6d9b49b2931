#!/bin/sh
# The Python binding's pytest suite against one build's library (tests/meson.build).
#
#   run_pytest.sh MODE LIBRARY BUILD_DIR
#
# MODE full: the whole suite. MODE asan / tsan: the suite under AddressSanitizer /
# ThreadSanitizer: Python is uninstrumented, so the sanitizer's runtime is LD_PRELOADed
# (gcc -print-file-name=libasan.so / libtsan.so), with detect_leaks=0 under ASan
# (CPython keeps memory until exit by design); the tests marked slow are skipped there,
# each with its reason. The venv is $FRL_PY_VENV (scripts/test.sh shares one) or
# BUILD_DIR/python-venv, made by py_venv.sh; exit 77 (skip) when it cannot be made for
# want of the package index.
set -eu

mode=$1 lib=$2 build=$3
here=$(cd "$(dirname "$0")" && pwd)

case $mode in
    full | asan | tsan) ;;
    *) echo "run_pytest.sh: MODE must be full, asan or tsan, not '$mode'" >&2; exit 2 ;;
esac

build=$(cd "$build" && pwd)
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")  # meson passes it relative
venv=$(sh "$here/py_venv.sh" "${FRL_PY_VENV:-$build/python-venv}") || exit $?
venv=$(cd "$venv" && pwd)

export FASTRL_LIBRARY="$lib"
export PYTHONPATH="$here/.."
export PYTHONDONTWRITEBYTECODE=1
unset LD_LIBRARY_PATH
args="-q -rs -p no:cacheprovider --durations=8"  # the slowest, for trimming CI time
if [ "$mode" != full ]; then
    runtime=$(gcc -print-file-name="lib$mode.so" 2>/dev/null || true)
    if [ -z "$runtime" ] || [ ! -e "$runtime" ]; then
        echo "python: SKIP: no lib$mode.so runtime to preload (gcc -print-file-name=lib$mode.so)"
        exit 77
    fi
    export FRL_PY_SANITIZER="$mode"
    export LD_PRELOAD="$runtime"
    if [ "$mode" = asan ]; then
        export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=0"
    else
        export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
    fi
fi
cd "$here"
exec "$venv/bin/python" -m pytest $args .
