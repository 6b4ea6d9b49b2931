"""Loading the library, versions, status codes and fastrl.Error."""

import ctypes
import os
import pickle
import re
import subprocess
import sys

import pytest

import fastrl
from fastrl import _lib
from conftest import PKG_ROOT

LIB = os.environ.get("FASTRL_LIBRARY") or fastrl.library_path()


def run_python(code, env_update, unset=()):
    env = dict(os.environ)
    for k in unset:
        env.pop(k, None)
    env.update(env_update)
    env["PYTHONPATH"] = PKG_ROOT
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)


PRINT_PATH = "import fastrl; print(fastrl.library_path())"


def header_version():
    """FRL_VERSION_MAJOR.MINOR.PATCH of the header this checkout builds."""
    text = open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "include",
                             "fastrl.h")).read()
    return ".".join(re.search(rf"#define FRL_VERSION_{k} (\d+)", text).group(1)
                    for k in ("MAJOR", "MINOR", "PATCH"))


HEADER_VERSION = header_version()


def test_loaded_library_and_versions():
    assert os.path.exists(fastrl.library_path())
    assert fastrl.library_version() == HEADER_VERSION
    assert fastrl.__version__ == fastrl.library_version()
    info = fastrl.build_info()
    assert f"version: {HEADER_VERSION}" in info and "abi" in info
    assert isinstance(fastrl.cpu_features(), list)
    assert fastrl.env_ids() == ["CartPole-v1", "Pendulum-v1", "Acrobot-v1",
                                "MountainCar-v0", "MountainCarContinuous-v0",
                                "CartPoleNoVel-v1", "MemoryProbe-v0", "PixelGrid-v0",
                                "PixelGoal-v0", "RayRoom-v0", "RayMaze-v0", "RayCollect-v0"]


@pytest.mark.threadless
def test_lookup_env_var_file_and_folder():
    real = os.path.realpath(LIB)
    r = run_python(PRINT_PATH, {"FASTRL_LIBRARY": LIB})
    assert r.returncode == 0, r.stderr
    assert os.path.realpath(r.stdout.strip()) == real
    # A folder: the soname inside it.
    folder = os.path.dirname(LIB)
    assert os.path.exists(os.path.join(folder, _lib.SONAME))
    r = run_python(PRINT_PATH, {"FASTRL_LIBRARY": folder})
    assert r.returncode == 0, r.stderr
    assert os.path.realpath(r.stdout.strip()) == real


@pytest.mark.threadless
def test_lookup_env_var_wrong_path_fails_clearly(tmp_path):
    missing = str(tmp_path / "nope" / "libfastrl.so.0")
    code = ("import fastrl\n"  # the import itself works; the first use says why not
            "try:\n    fastrl.make('CartPole-v1')\n"
            "except fastrl.LibraryNotFoundError as e:\n    print('ERR', e)\n")
    r = run_python(code, {"FASTRL_LIBRARY": missing})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ERR FASTRL_LIBRARY is set")
    assert missing in r.stdout and "unset it" in r.stdout
    # A file that is not a library at all.
    junk = tmp_path / "libfastrl.so.0"
    junk.write_bytes(b"not an ELF file")
    r = run_python(code, {"FASTRL_LIBRARY": str(junk)})
    assert "ERR FASTRL_LIBRARY is set" in r.stdout and str(junk) in r.stdout


@pytest.mark.threadless
def test_lookup_foreign_library_is_rejected_by_name():
    # libzstd loads fine but is not libfastrl: the message names the missing symbols.
    import ctypes.util
    zstd = ctypes.util.find_library("zstd")
    if zstd is None:
        pytest.skip("no libzstd on the loader's path to use as a foreign library")
    r = run_python("import fastrl\ntry:\n    fastrl.library_path()\n"
                   "except fastrl.LibraryNotFoundError as e:\n    print('ERR', e)\n",
                   {"FASTRL_LIBRARY": zstd})
    assert "is not a usable libfastrl: it lacks frl_status_name" in r.stdout, r.stdout + r.stderr


@pytest.mark.threadless
def test_lookup_system_path_then_clear_error(tmp_path):
    # Through the dynamic loader: LD_LIBRARY_PATH names the build's folder.
    r = run_python(PRINT_PATH, {"LD_LIBRARY_PATH": os.path.dirname(LIB)},
                   unset=["FASTRL_LIBRARY"])
    assert r.returncode == 0, r.stderr
    assert os.path.realpath(r.stdout.strip()) == os.path.realpath(LIB)
    # Nowhere: every place tried is listed, with the ways to fix it.
    r = run_python("import fastrl\ntry:\n    fastrl.library_path()\n"
                   "except fastrl.LibraryNotFoundError as e:\n    print('ERR', e)\n"
                   "else:\n    print('FOUND', fastrl.library_path())\n",
                   {"LD_LIBRARY_PATH": str(tmp_path)}, unset=["FASTRL_LIBRARY"])
    assert r.returncode == 0, r.stderr
    if r.stdout.startswith("FOUND"):
        # Installed system-wide: then it was found through the loader, not the package.
        assert os.path.join(PKG_ROOT, "fastrl") not in r.stdout
    else:
        msg = r.stdout
        assert "cannot find libfastrl" in msg
        assert os.path.join(PKG_ROOT, "fastrl", _lib.SONAME) in msg
        assert "FASTRL_LIBRARY" in msg and "build_wheel.sh" in msg and "ldconfig" in msg


def test_status_names_match_the_library():
    L = _lib.lib()
    for s in fastrl.Status:
        assert L.status_name(int(s)).decode() == ("FRL_OK" if s == 0 else "FRL_" + s.name)
        assert fastrl.Error(s, "m").name == L.status_name(int(s)).decode() or s == 0
    assert fastrl.Error(-99, "x").name == "FRL_ERR_UNKNOWN_STATUS"


def test_error_carries_status_and_message():
    with pytest.raises(fastrl.Error) as ei:
        fastrl.make("NoSuchEnv-v0")
    e = ei.value
    assert e.status == fastrl.Status.ERR_UNKNOWN_NAME
    assert e.name == "FRL_ERR_UNKNOWN_NAME"
    assert "NoSuchEnv-v0" in e.message and "CartPole-v1" in e.message  # lists built-ins
    assert str(e).startswith("FRL_ERR_UNKNOWN_NAME: ")
    e2 = pickle.loads(pickle.dumps(e))
    assert (e2.status, e2.message) == (e.status, e.message)


@pytest.mark.threadless
def test_works_without_gymnasium():
    code = (
        "import sys; sys.modules['gymnasium'] = None  # as if not installed\n"
        "import fastrl, numpy as np\n"
        "e = fastrl.make('CartPole-v1'); o, _ = e.reset(seed=1)\n"
        "print(type(e.observation_space).__module__, e.action_space)\n"
        "v = fastrl.make_vec('Pendulum-v1', num_envs=3); v.reset(seed=0)\n"
        "o, r, te, tr, _ = v.step(v.action_space.sample())\n"
        "print(o.shape, r.shape, v.action_space.shape)\n"
        "t = fastrl.Trainer('CartPole-v1', num_envs=4, rollout=32, minibatches=2)\n"
        "print(t.train(256).env_steps)\n")
    r = run_python(code, {})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:3] == ["fastrl.spaces Discrete(2)", "(3, 3) (3,) (3, 1)",
                                         "256"]



@pytest.mark.threadless
def test_old_gymnasium_is_left_alone(tmp_path):
    """A gymnasium older than 1.2.2 (its Discrete takes no dtype) is treated as absent,
    with one warning saying so, instead of failing on the first discrete space."""
    pkg = tmp_path / "gymnasium"
    (pkg / "spaces").mkdir(parents=True)
    (pkg / "__init__.py").write_text("__version__ = '1.1.1'\nfrom . import spaces\n")
    (pkg / "spaces" / "__init__.py").write_text(
        "class Discrete:\n    def __init__(self, n, seed=None, start=0):\n        pass\n")
    code = (
        f"import sys, warnings; sys.path.insert(0, {str(tmp_path)!r})\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    import fastrl\n"
        "    e = fastrl.make('CartPole-v1'); e.reset(seed=1)\n"
        "print(type(e.action_space).__module__, e.action_space)\n"
        "print(sum('older than 1.2.2' in str(x.message) for x in w))\n")
    r = run_python(code, {})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["fastrl.spaces Discrete(2)", "1"]

def header_struct(text, name):
    """[(field, size in bytes)] of `typedef struct name {...}` in the header."""
    body = re.search(rf"typedef struct {name} \{{(.*?)\}} {name};", text, re.S).group(1)
    body = re.sub(r"/\*.*?\*/|//[^\n]*", "", body, flags=re.S)
    sizes = {"size_t": ctypes.sizeof(ctypes.c_size_t), "int32_t": 4, "uint32_t": 4,
             "int64_t": 8, "uint64_t": 8, "double": 8, "float": 4, "int": 4}
    fields = []
    for decl in filter(None, (d.strip() for d in body.split(";"))):
        fn = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
        if fn:  # a function pointer
            fields.append((fn.group(1), ctypes.sizeof(ctypes.c_void_p)))
            continue
        first, *rest = decl.split(",")
        base, first_name = re.match(r"(.*?)([\s*]+\w+)$", first.strip()).groups()
        base = base.replace("const", "").strip()
        for d in [first_name] + rest:
            pointer = "*" in d
            size = ctypes.sizeof(ctypes.c_void_p) if pointer else \
                sizes.get(base, 4 if base.startswith("frl_") else None)  # enums: int
            assert size, f"{name}: unknown type {base!r}"
            fields.append((d.replace("*", "").strip(), size))
    return fields


@pytest.mark.parametrize("cls,name", [
    ("ConfigKeyInfo", "frl_config_key_info"), ("Logger", "frl_logger"),
    ("EnvCallbacks", "frl_env_callbacks"), ("BatchEnvCallbacks", "frl_batch_env_callbacks"),
    ("ActArgs", "frl_act_args"), ("EvalArgs", "frl_eval_args"),
    ("PopulationActArgs", "frl_population_act_args"),
    ("PopulationEvalArgs", "frl_population_eval_args"),
    ("MetricsStruct", "frl_metrics"), ("Frame", "frl_frame"),
    ("MujocoCallbacks", "frl_mujoco_callbacks")])
def test_struct_layouts_match_the_header(cls, name):
    # The ctypes tables list the header's fields in order, each of the C size, so
    # ctypes' natural alignment gives the C offsets and sizeof (a field the header
    # appends, such as frl_act_args' state in 0.3, must be appended here too).
    text = open(os.path.join(PKG_ROOT, "..", "..", "include", "fastrl.h")).read()
    py = [(f[0], ctypes.sizeof(f[1])) for f in getattr(_lib, cls)._fields_]
    assert py == header_struct(text, name)
