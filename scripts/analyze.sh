#!/usr/bin/env bash
# Clang's static analyser (scan-build) over the library: lib/, the code every host
# embeds. Exits 1 and lists the reports if it finds anything.
#
#   bash scripts/analyze.sh [BUILD_DIR]          (default build-scan)
#
# Only the library's own targets are built (tests/, bench/, tools/ and examples/ are
# not analysed: there the analyser does not know that Check's assertions end a test,
# nor that argv[i] is never NULL below argc, and reports paths that cannot happen).
# The CUDA plugin's .cu files are not C and are not seen here.
#
# gcc's analyser is not run here: over lib/ (meson setup DIR -Dc_args='-fanalyzer
# -DFRL_STATIC_ANALYSIS', gcc 12, 2026-11-27) it gave five reports, none real: loops it
# leaves after one turn (acrobot.c's RK4, latency.c's pivots) and facts one function
# holds for the next (policy.c's encoder only over images, rnn.c's cell state only for
# an LSTM). -DFRL_STATIC_ANALYSIS gives it error.h's frl_fail, as clang has it.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
set +e
FRL_DEB_PACKAGES+=(clang-tools) # scan-build; only this script needs it
frl_setup >/dev/null || { echo "analyze: setup failed"; exit 1; }

dir=${1:-build-scan}
out=$dir/scan-reports
root=$PWD
venv=${FRL_PY_VENV:-$root/build-venv}
mujoco_dir=$(ls -d "$venv"/lib/python3*/site-packages/mujoco 2>/dev/null | head -n 1)

rm -rf "$dir"
# scan-build must wrap the setup too: meson records the compiler it is given there.
CC=clang CXX=clang++ scan-build -o "$out" \
    meson setup "$dir" --buildtype=debug -Dcuda=disabled -Dmujoco_dir="$mujoco_dir" \
    >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; echo "analyze: meson setup failed"; exit 1; }
mv "$dir.setup.log" "$dir/"
# The shared libraries under lib/: the core and whichever plugins this machine builds.
targets=$(meson introspect --targets "$dir" | python3 -c '
import json, os, sys
top = os.path.realpath(sys.argv[1])
names = (os.path.relpath(t["filename"][0], top) for t in json.load(sys.stdin)
         if t["type"] == "shared library")
print(" ".join(n for n in names if n.startswith("lib/")))' "$dir")
scan-build -o "$out" --status-bugs ninja -C "$dir" $targets >"$dir/scan.log" 2>&1
rc=$?
tail -n 2 "$dir/scan.log"
if [ $rc -ne 0 ]; then
    if ls "$out"/*/report-*.html >/dev/null 2>&1; then
        grep -h -o "BUGFILE .*\|BUGLINE [0-9]*\|BUGDESC .*" "$out"/*/report-*.html |
            sed 's/ -->//' | paste - - -
    else
        tail -n 40 "$dir/scan.log"
    fi
    echo "analyze: the reports above (HTML under $out), or the build failed ($dir/scan.log)"
    exit 1
fi
echo "analyze: no reports in lib/"
