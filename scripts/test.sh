#!/usr/bin/env bash
# The whole test suite: set up, then build and test four configurations, all with
# warnings as errors:
#   build/       gcc, release (what users get; also symbols, ABI, install, NaN checks),
#                with the CUDA plugin required (nvcc from /usr/local/cuda): a broken
#                plugin build fails here; without a GPU its test says why it cannot run
#   build-clang/ clang, release, a second build (-Dsecond_build=true): the C tests, with
#                the sanitizer builds' short learning runs (learning targets are
#                build/'s), and the Python suite, the CUDA emulator and the mpirun tests
#                left to build/. No CUDA
#                plugin: nvcc would compile ops_cuda.cu exactly as for build/ (with its
#                own host compiler); clang compiles the plugin's C in the host plugin
#   build-asan/  AddressSanitizer + UndefinedBehaviorSanitizer (leaks included)
#   build-tsan/  ThreadSanitizer
# then clang's static analyser over the library (scripts/analyze.sh, build-scan/),
# counted as one test.
# Ends with one line "N passed, N failed" counted from meson's test logs.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
set +e
frl_setup || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }

configs=(build build-clang build-asan build-tsan)
# The sanitizer builds keep line tables only (-g1 after the build type's -g): their
# reports still name each frame's file and line, inlined frames included, and build-asan
# builds from clean in 103 s instead of 143 (CPU 195 s instead of 272) on 2 cores. The
# release builds keep full debug information, which abidw reads for the ABI check.
san="--buildtype=debugoptimized -Dwerror=true -Db_lundef=false -Dc_args=-g1 -Dcpp_args=-g1"
declare -A opts=(
  [build]="--buildtype=release -Dwerror=true -Dcuda=enabled"
  [build-clang]="--buildtype=release -Dwerror=true -Dcuda=disabled -Dsecond_build=true"
  [build-asan]="$san -Db_sanitize=address,undefined"
  [build-tsan]="$san -Db_sanitize=thread"
)
declare -A compilers=([build]=gcc [build-clang]=clang [build-asan]=gcc [build-tsan]=gcc)
declare -A cxx=([build]=g++ [build-clang]=clang++ [build-asan]=g++ [build-tsan]=g++)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
# One Python venv shared by the four builds: TensorBoard (the event-file check), pytest
# and gymnasium (the Python binding's suite). Made here, once, before any test runs;
# the tests' own scripts then only check its markers (they make it when run by hand).
export FRL_PY_VENV=${FRL_PY_VENV:-$PWD/build-venv}
sh bindings/python/tests/py_venv.sh "$FRL_PY_VENV" >/dev/null ||
  echo "python venv: not made (see above); the tests that need it report why"
# The MuJoCo plugin is built against the venv's pinned mujoco-core (the same library
# test_mujoco.py's Gymnasium runs on); without it -Dmujoco=auto leaves the plugin out
# and the MuJoCo tests say why they skip.
mujoco_dir=$(ls -d "$FRL_PY_VENV"/lib/python3*/site-packages/mujoco 2>/dev/null | head -n 1)
for c in "${configs[@]}"; do
  opts[$c]="${opts[$c]} -Dmujoco_dir=$mujoco_dir"
done

status=0
for c in "${configs[@]}"; do
  echo "=== $c: ${opts[$c]}"
  rm -f "$c/meson-logs/testlog.json"
  # shellcheck disable=SC2086
  if ! CC=${compilers[$c]} CXX=${cxx[$c]} frl_build "$c" ${opts[$c]}; then
    echo "build of $c failed:"
    ninja -C "$c" 2>&1 | tail -40
    status=1
    continue
  fi
  fork=yes mult=1
  [ "$c" = build ] || { fork=no; mult=4; }
  CK_FORK=$fork meson test -C "$c" --print-errorlogs --timeout-multiplier "$mult" -q || status=1
done

echo "=== build-scan: clang's static analyser over lib/"
bash scripts/analyze.sh build-scan
analyzed=$?

FRL_ANALYZED=$analyzed python3 - "${configs[@]}" <<'PY'
import json, os, sys
passed = failed = skipped = 0
if os.environ["FRL_ANALYZED"] == "0":
    passed += 1
else:
    failed += 1
for d in sys.argv[1:]:
    log = os.path.join(d, "meson-logs", "testlog.json")
    if not os.path.exists(log):
        failed += 1  # a configuration that did not build or run counts as a failure
        continue
    for line in open(log):
        r = json.loads(line)["result"]
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
        else:
            failed += 1
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
sys.exit(1 if failed or passed == 0 else 0)
PY
count=$?
[ $count -eq 0 ] && [ $status -eq 0 ]
