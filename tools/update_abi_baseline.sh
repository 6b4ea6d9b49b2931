#!/bin/sh
# Regenerate tests/abi/libfastrl.so.0.abi from a build (run at each ABI release).
# usage: tools/update_abi_baseline.sh [BUILD_DIR]
set -eu
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
abidw --headers-dir "$top/include" --no-corpus-path \
      --out-file "$top/tests/abi/libfastrl.so.0.abi" "$build/lib/libfastrl.so"
echo "wrote tests/abi/libfastrl.so.0.abi"
