#!/bin/sh
# Regenerate tests/abi/libfastrl.so.0.abi: one step of a release (doc/api.md, "ABI and
# versions"), run on the release commit's own build, and never otherwise: between
# releases the baseline is what tests/check_abi.sh holds the library to.
# usage: tools/update_abi_baseline.sh [BUILD_DIR]
set -eu
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
abidw --headers-dir "$top/include" --no-corpus-path \
      --out-file "$top/tests/abi/libfastrl.so.0.abi" "$build/lib/libfastrl.so"
echo "wrote tests/abi/libfastrl.so.0.abi"
