#!/bin/sh
# Compare the built library's ABI with the committed baseline (abigail-tools).
# Added functions are allowed (they need a minor ABI bump and a new baseline at the
# next release: tools/update_abi_baseline.sh); any other change fails, including a
# changed struct layout, which abidiff reports only as an "ABI change" (bit 4).
# usage: check_abi.sh BASELINE.abi LIBRARY.so HEADERS_DIR
set -u
baseline=$1 lib=$2 headers=$3
if ! command -v abidiff >/dev/null 2>&1; then
    echo "FAIL: abidiff not found (Debian package abigail-tools; the test command installs it)"
    exit 1
fi
abidiff --headers-dir2 "$headers" "$baseline" "$lib" | head -n 3
abidiff --no-added-syms --headers-dir2 "$headers" "$baseline" "$lib" >/tmp/frl-abidiff.$$ 2>&1
rc=$?
# abidiff's exit status is a bit field: 1 error, 2 usage error, 4 ABI change,
# 8 incompatible ABI change.
if [ "$rc" -ne 0 ]; then
    cat /tmp/frl-abidiff.$$
    rm -f /tmp/frl-abidiff.$$
    echo "FAIL: ABI differs from $baseline beyond added functions (abidiff status $rc)"
    exit 1
fi
rm -f /tmp/frl-abidiff.$$
echo "ABI compatible with $(basename "$baseline")"
exit 0
