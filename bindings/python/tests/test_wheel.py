"""The wheel: build_wheel.sh bundles the library; installed into a fresh venv, the
package finds its own copy with no FASTRL_LIBRARY and no PYTHONPATH."""

import os
import subprocess
import sys
import sysconfig
import zipfile

import pytest

import fastrl

from conftest import PKG_ROOT


@pytest.mark.slow
def test_wheel_bundles_the_library_and_works_installed(tmp_path):
    lib = os.environ.get("FASTRL_LIBRARY")
    if not lib or not os.path.isfile(lib):
        pytest.skip("FASTRL_LIBRARY does not name the built library file (run through "
                    "meson test, which sets it)")
    out = subprocess.run(["sh", os.path.join(PKG_ROOT, "build_wheel.sh"), lib,
                          str(tmp_path / "dist"), sys.executable],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    whl = out.stdout.strip().splitlines()[-1]
    assert os.path.basename(whl).startswith(f"fastrl-{fastrl.__version__}-py3-none-linux_")
    names = zipfile.ZipFile(whl).namelist()
    assert "fastrl/libfastrl.so.0" in names and "fastrl/env.py" in names
    assert "fastrl/py.typed" in names  # type checkers read the annotations (PEP 561)
    assert not subprocess.run(["git", "-C", PKG_ROOT, "status", "--porcelain",
                               "--ignored", "."], capture_output=True,
                              text=True).stdout.count("libfastrl.so")  # tree untouched

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    # pip of this environment, installing into the new one, offline.
    inst = subprocess.run([sys.executable, "-m", "pip", "--python", py, "install", "-q",
                           "--no-index", "--no-deps", "--disable-pip-version-check", whl],
                          capture_output=True, text=True, timeout=300)
    assert inst.returncode == 0, inst.stderr
    # numpy (and gymnasium) come from this environment, after the venv's own packages.
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True).stdout.strip()
    with open(os.path.join(site, "shared_deps.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")

    env = {k: v for k, v in os.environ.items()
           if k not in ("FASTRL_LIBRARY", "PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD")}
    code = ("import fastrl, gymnasium\n"
            "print(fastrl.__file__)\nprint(fastrl.library_path())\n"
            "v = fastrl.make_vec('CartPole-v1', num_envs=8)\n"
            "o, _ = v.reset(seed=0)\n"
            "o, r, te, tr, _ = v.step(v.action_space.sample())\n"
            "e = gymnasium.make('fastrl/Pendulum-v1'); e.reset(seed=1)\n"
            "print(o.shape, float(r.sum()), e.step(e.action_space.sample())[0].shape)\n")
    run = subprocess.run([py, "-c", code], capture_output=True, text=True, env=env,
                         cwd=str(tmp_path), timeout=120)
    assert run.returncode == 0, run.stderr
    pkg_file, lib_path, result = run.stdout.strip().splitlines()
    assert pkg_file.startswith(site)
    assert lib_path == os.path.join(site, "fastrl", "libfastrl.so.0")
    assert result == "(8, 4) 8.0 (3,)"
