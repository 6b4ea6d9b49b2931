#!/bin/sh
# Make (once) the Python venv the binding's tests run in, and print its path.
#
#   py_venv.sh VENV
#
# VENV is the venv shared with the TensorBoard test ($FRL_PY_VENV in scripts/test.sh).
# This script adds the binding's test packages (pytest, gymnasium, wheel) to it, and
# makes sure TensorBoard's pinned set (read from tests/io/tfevents_venv.sh) is there
# with that script's marker, so that script never rebuilds (and wipes) a venv a Python
# test is using. Both take the same lock ($VENV.lock) while they install.
# Reused while its marker ($VENV/.frl-pins-python) names the pinned versions.
# $FRL_PYTHON picks the interpreter (default python3). Exit 77 (skip) only when the
# package index cannot be reached; any other failure is a failure.
set -eu

venv=$1
python=${FRL_PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)

# Verified together with CPython 3.11 (2026): numpy, typing_extensions, protobuf and
# packaging match the TensorBoard set, so installing these never changes a package that
# set installed. wheel 0.45 still carries bdist_wheel for the venv's setuptools 65.
# onnx and onnxruntime check the ONNX export (test_export.py). mujoco-core is the MuJoCo
# the plugin is built against (scripts/test.sh passes its folder as -Dmujoco_dir) and
# mujoco the Python side of the same library, under Gymnasium's MuJoCo envs, which also
# import imageio (and it pillow); glfw, PyOpenGL, websockets and mujoco-studio come with
# mujoco (test_mujoco.py). mypy checks the binding's annotations (test_typing.py); it
# brings mypy_extensions, pathspec, librt and ast-serialize (and typing_extensions).
py_pins="pytest==9.2.0 pluggy==1.7.0 iniconfig==2.3.1 Pygments==2.21.0
  gymnasium==1.4.0 cloudpickle==3.1.2 Farama-Notifications==0.0.6
  typing_extensions==4.16.0 numpy==2.4.6 wheel==0.45.1
  onnx==1.23.2 ml_dtypes==0.6.0 onnxruntime==1.32.0 flatbuffers==25.12.19
  protobuf==7.36.2 packaging==26.3
  mujoco==4.0.0 mujoco-core==4.0.0 mujoco-studio==4.0.0 glfw==2.11.0 PyOpenGL==3.1.10
  websockets==17.4 imageio==2.38.1 pillow==13.0.0
  mypy==2.4.1 mypy_extensions==1.2.0 pathspec==1.1.1 librt==0.17.0 ast-serialize==0.13.1"
py_marker="$venv/.frl-pins-python"

# TensorBoard's pins and marker, exactly as tests/io/tfevents_venv.sh writes them.
tb_pins=""
tb_script="$root/tests/io/tfevents_venv.sh"
if [ -f "$tb_script" ]; then
    eval "$(sed -n '/^pins="/,/"$/p' "$tb_script" | sed '1s/^pins=/tb_pins=/')"
fi
tb_marker="$venv/.frl-pins"

tb_ready() {
    [ -z "$tb_pins" ] || { [ -f "$tb_marker" ] && [ "$(cat "$tb_marker")" = "$tb_pins" ]; }
}

ready() {
    [ -x "$venv/bin/python" ] && [ -f "$py_marker" ] &&
        [ "$(cat "$py_marker")" = "$py_pins" ] && tb_ready
}

fail_or_skip() {
    index=${PIP_INDEX_URL:-https://pypi.org/simple/}
    if why=$("$python" - "$index" 2>&1 <<'PY'
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1] + "pytest/", timeout=15).read(1)
except Exception as e:
    print(e)
    sys.exit(1)
PY
    ); then
        echo "py_venv: pip failed although $index is reachable:" >&2
        tail -n 30 "$venv.python-pip.log" >&2
        exit 1
    fi
    echo "py_venv: SKIP: cannot reach the package index $index ($why);" >&2
    echo "  the Python binding's tests need pip to install pytest and gymnasium once" >&2
    exit 77
}

install() {
    if [ ! -x "$venv/bin/python" ]; then
        echo "py_venv: creating $venv" >&2
        rm -rf "$venv"
        if ! "$python" -m venv "$venv" >"$venv.log" 2>&1; then
            cat "$venv.log" >&2
            echo "py_venv: '$python -m venv' failed (on Debian, install python3-venv)" >&2
            exit 1
        fi
    fi
    if ! tb_ready; then
        # TensorBoard's set too, with its marker, so tfevents_venv.sh never rebuilds (and
        # wipes) the venv while a Python test is using it.
        echo "py_venv: installing TensorBoard's set too (shared with tfevents_tensorboard)" >&2
        # shellcheck disable=SC2086
        "$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q \
            $tb_pins >"$venv.python-pip.log" 2>&1 || fail_or_skip
        echo "$tb_pins" >"$tb_marker"
    fi
    echo "py_venv: installing the binding's test packages into $venv" >&2
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q \
        $py_pins >"$venv.python-pip.log" 2>&1 || fail_or_skip
    echo "$py_pins" >"$py_marker"
}

if ! ready; then
    mkdir -p "$(dirname "$venv")"
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$venv.lock"
        flock 9
    fi
    ready || install
fi
echo "$venv"
