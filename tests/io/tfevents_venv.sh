#!/bin/sh
# The tfevents_tensorboard test: make (once) a Python venv with TensorBoard, write an
# event file with the C writer, and check it with TensorBoard's own reader.
#
#   tfevents_venv.sh WRITER CHECKER BUILD_DIR
#
# The venv is BUILD_DIR/tensorboard-venv, or $FRL_PY_VENV (share one between build
# directories that way); it is reused while its marker file names the pinned versions.
# $FRL_PYTHON picks the interpreter (default python3). Exit 77 (skip) only when the
# package index cannot be reached; any other failure is a failure.
set -eu

writer=$1 checker=$2 build=$3
venv=${FRL_PY_VENV:-$build/tensorboard-venv}
python=${FRL_PYTHON:-python3}

# Pinned to a set verified together (Python 3.11, 2025): tensorboard pulls the rest.
pins="tensorboard==2.18.0 protobuf==7.36.2 numpy==2.4.6 absl-py==2.5.1 grpcio==1.85.1
  Markdown==3.11.3 MarkupSafe==3.0.4 packaging==26.3 six==1.17.0 Werkzeug==3.1.9
  tensorboard-data-server==0.7.2"
marker="$venv/.frl-pins"

venv_ready() {
    [ -x "$venv/bin/python" ] && [ -f "$marker" ] && [ "$(cat "$marker")" = "$pins" ]
}

# Why pip failed: the index cannot be reached (skip), or something else (fail).
pip_failed() {
    index=${PIP_INDEX_URL:-https://pypi.org/simple/}
    if why=$("$python" - "$index" 2>&1 <<'PY'
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1] + "tensorboard/", timeout=15).read(1)
except Exception as e:
    print(e)
    sys.exit(1)
PY
    ); then
        echo "tfevents_venv: pip could not install TensorBoard although $index is reachable:"
        tail -n 30 "$venv.pip.log"
        exit 1
    fi
    echo "tfevents_venv: SKIP: cannot reach the package index $index ($why);"
    echo "  this test needs pip to install $(echo "$pins" | head -n 1 | cut -d' ' -f1)"
    exit 77
}

make_venv() {
    echo "tfevents_venv: creating $venv (pip install tensorboard, about 160 MB)"
    rm -rf "$venv"
    if ! "$python" -m venv "$venv" >"$venv.log" 2>&1; then
        cat "$venv.log"
        echo "tfevents_venv: '$python -m venv' failed (on Debian, install python3-venv)"
        exit 1
    fi
    # shellcheck disable=SC2086
    if ! "$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q \
        $pins >"$venv.pip.log" 2>&1; then
        pip_failed
    fi
    echo "$pins" >"$marker"
}

if ! venv_ready; then
    mkdir -p "$(dirname "$venv")"
    # One builder at a time when build directories share a venv.
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$venv.lock"
        flock 9
    fi
    venv_ready || make_venv
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/frl_tfevents_check.XXXXXX")
trap 'rm -rf "$out"' EXIT
"$writer" --write "$out" >"$out/manifest"
echo "tfevents_venv: event file $(head -n 1 "$out/manifest")"
"$venv/bin/python" "$checker" "$out/manifest"
