#!/bin/sh
# Compare the built library's ABI with the baseline of the last release (abigail-tools):
# tests/abi/libfastrl.so.0.abi, replaced only by the release step of doc/api.md ("ABI
# and versions"). Added functions are allowed (they go into the newest, unreleased
# version node); so are fields appended to the struct_size tables (SUPPRESSIONS lists
# them). Any other change fails, including a changed struct layout, which abidiff
# reports only as an "ABI change" (bit 4).
# usage: check_abi.sh BASELINE.abi LIBRARY.so HEADERS_DIR SUPPRESSIONS
set -u
baseline=$1 lib=$2 headers=$3 suppressions=$4
if ! command -v abidiff >/dev/null 2>&1; then
    echo "FAIL: abidiff not found (Debian package abigail-tools; the test command installs it)"
    exit 1
fi
out=$(mktemp)
abidiff --suppressions "$suppressions" --headers-dir2 "$headers" "$baseline" "$lib" | head -n 3
abidiff --no-added-syms --suppressions "$suppressions" --headers-dir2 "$headers" \
    "$baseline" "$lib" >"$out" 2>&1
rc=$?
# abidiff's exit status is a bit field: 1 error, 2 usage error, 4 ABI change,
# 8 incompatible ABI change.
if [ "$rc" -ne 0 ]; then
    cat "$out"
    rm -f "$out"
    echo "FAIL: ABI differs from $baseline beyond added functions (abidiff status $rc)"
    exit 1
fi
rm -f "$out"
echo "ABI compatible with $(basename "$baseline")"
exit 0
