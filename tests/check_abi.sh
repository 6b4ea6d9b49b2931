#!/bin/sh
# Compare the built library's ABI with the committed baseline (abigail-tools).
# Additions are reported and allowed (they need a minor ABI bump and a new baseline:
# tools/update_abi_baseline.sh); any incompatible change fails.
# usage: check_abi.sh BASELINE.abi LIBRARY.so HEADERS_DIR
set -u
baseline=$1 lib=$2 headers=$3
if ! command -v abidiff >/dev/null 2>&1; then
    echo "FAIL: abidiff not found (Debian package abigail-tools; the test command installs it)"
    exit 1
fi
abidiff --headers-dir2 "$headers" "$baseline" "$lib"
rc=$?
# abidiff's exit status is a bit field: 1 error, 2 usage error, 4 ABI change,
# 8 incompatible ABI change.
if [ $((rc & 3)) -ne 0 ]; then echo "FAIL: abidiff could not compare (status $rc)"; exit 1; fi
if [ $((rc & 8)) -ne 0 ]; then echo "FAIL: incompatible ABI change against $baseline"; exit 1; fi
if [ $((rc & 4)) -ne 0 ]; then echo "note: compatible ABI additions; update the baseline with the next minor bump"; fi
echo "ABI compatible with $(basename "$baseline")"
exit 0
