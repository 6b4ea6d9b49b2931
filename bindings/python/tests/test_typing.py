"""The binding's annotations (PEP 561: fastrl/py.typed), checked by mypy.

mypy (pinned in py_venv.sh) checks the package in strict mode, which fails on any
function, method or property without full annotations (--disallow-untyped-defs,
--disallow-incomplete-defs), checks every body (--check-untyped-defs) and refuses stale
``type: ignore`` comments; only --warn-return-any is off, since every ctypes call
returns Any. It then checks a small typed program that uses the main API, which must
pass (with assert_type on the types a user relies on), and one with deliberate
mistakes, whose every marked line must be reported with its error code, so that the
check can fail. The runs share a cache: the package's analysis (numpy's and
gymnasium's stubs included) is done once.

mypy targets Python 3.12: numpy's stubs take a ctypes array as a buffer
(numpy.frombuffer) only from 3.12's collections.abc.Buffer on. The package still runs
on 3.9: every module has ``from __future__ import annotations`` and imports what only
annotations use under ``typing.TYPE_CHECKING``, so annotations are never evaluated;
test_annotations_never_run checks the first, and that the modules are 3.9 syntax.

Without gymnasium (not a case the suite's venv has), fastrl.Env and VecEnv derive from
Any for mypy, so subclassing Any and the ignores that gymnasium's classes need are
allowed, and missing imports are ignored.
"""

import ast
import glob
import importlib.util
import os
import re
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)
PKG = os.path.join(PKG_ROOT, "fastrl")
HAVE_GYMNASIUM = importlib.util.find_spec("gymnasium") is not None

GOOD = '''
from __future__ import annotations

import logging
from typing import Any, assert_type

import gymnasium
import numpy as np
import numpy.typing as npt

import fastrl
from fastrl.mujoco import MujocoData


def on_update(metrics: fastrl.Metrics) -> bool:
    return metrics.mean_return < 475.0


def fitness(params: npt.NDArray[np.float32], out: npt.NDArray[np.float64]) -> None:
    out[:] = -(params ** 2).sum(axis=1)


def observe(env: int, data: MujocoData, obs: npt.NDArray[np.float32]) -> None:
    obs[:] = data.qpos[: obs.size]


def reward(env: int, data: MujocoData,
           action: npt.NDArray[np.float32]) -> tuple[float, bool]:
    return -float(abs(data.qpos[0])), bool(data.qpos[1] > 1.0)


class Corridor:
    observation_space = fastrl.spaces.Box(0.0, 1.0, (1,))
    action_space = fastrl.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[npt.NDArray[np.float32], dict[str, Any]]:
        return np.zeros(1, np.float32), {}

    def step(self, action: int
             ) -> tuple[npt.NDArray[np.float32], float, bool, bool, dict[str, Any]]:
        return np.zeros(1, np.float32), 1.0, action == 1, False, {}


class World:
    def reset(self, seeds: npt.NDArray[np.uint64], obs: npt.NDArray[np.float32]) -> None:
        obs[:] = 0.0

    def step(self, actions: npt.NDArray[np.int32], reset_mask: npt.NDArray[np.uint8],
             seeds: npt.NDArray[np.uint64], obs: npt.NDArray[np.float32],
             rewards: npt.NDArray[np.float32], terminated: npt.NDArray[np.uint8],
             truncated: npt.NDArray[np.uint8]) -> None:
        rewards[:] = actions


def main() -> None:
    rt = fastrl.Runtime(threads=1, seed=0, logger=logging.getLogger("fastrl"))
    assert_type(rt.threads, int)
    cfg = fastrl.Config({"train.lr": 1e-3}, num_envs=8)
    cfg["policy.hidden"] = [32, 32]
    cfg["train.target_return"] = None
    lr: float = cfg["train.lr"]
    key: fastrl.KeyInfo = fastrl.describe("train.lr")

    venv = fastrl.make_vec("CartPole-v1", num_envs=8, runtime=rt)
    obs, _ = venv.reset(seed=0)
    obs, rewards, terminations, truncations, info = venv.step(venv.action_space.sample())
    assert_type(rewards, npt.NDArray[np.float32])
    assert_type(terminations | truncations, npt.NDArray[np.bool_])
    assert_type(info, dict[str, Any])
    steps: int = venv.total_steps

    with fastrl.Trainer("CartPole-v1", cfg, runtime=rt) as trainer:
        assert_type(trainer.train(10_000, on_update, checkpoint="cp.frl"), fastrl.Metrics)
        policy = trainer.policy
        ring = trainer.ring
        assert_type(ring.array("rewards"), npt.NDArray[Any])
        replay = trainer.replay
        if replay is not None:
            capacity: int = replay.info()["capacity"]
    venv.step(policy.act(venv.observations, deterministic=True, counter=0))
    state = policy.initial_state(venv.num_envs)
    assert_type(state, npt.NDArray[np.float32])
    policy.act(obs, state=state, reset=venv.reset_steps)
    outputs, values = policy.forward(venv.observations)
    assert_type(outputs, npt.NDArray[np.float32])
    assert_type(fastrl.evaluate(policy, "CartPole-v1", episodes=10), npt.NDArray[np.float64])
    loaded = fastrl.Policy.load("cp.frl", runtime=rt)
    assert_type(loaded, fastrl.Policy)

    pop = fastrl.Population(loaded, 8)
    es = fastrl.Evo(pop.parameters[0], algo="es", population=8)
    es.ask(out=pop.parameters)
    es.tell(pop.evaluate(venv, seed=1).returns)
    best, value = es.run(fitness, 3)
    assert_type(value, float)
    assert_type(es.genome(0), npt.NDArray[np.uint64])

    env = fastrl.make("CartPole-v1")
    ob, r, terminated, truncated, _ = env.step(0)
    assert_type(r, float)
    fastrl.Env.from_python(gymnasium.make("CartPole-v1"))
    fastrl.VecEnv.from_python([Corridor for _ in range(4)], copy=True)
    fastrl.VecEnv.from_batch(World(), 4, Corridor.observation_space, Corridor.action_space)
    fastrl.VecEnv.from_mujoco("<mujoco/>", observe, reward, 4, 8)
    with fastrl.Runtime(logger=lambda level, message: print(level, message)):
        pass
'''

# Each line marked "# error: [code]" must get that error, and no other line any.
BAD = '''
import fastrl


def fitness_of(params: object) -> None:  # without the fitness array
    pass


def main() -> None:
    trainer = fastrl.Trainer("CartPole-v1")
    trainer.train("a million")  # error: [arg-type]
    count: str = trainer.policy.num_parameters  # error: [assignment]
    fastrl.Evo([0.0], algo="es").run(fitness_of, 3)  # error: [arg-type]
    trainer.vec_env.step([0, 1]).rewards  # error: [attr-defined]
'''


def _mypy(cache_dir, *args):
    """mypy's (exit status, output) on args, from the package's folder."""
    flags = ["--config-file=", "--cache-dir", str(cache_dir), "--python-version", "3.12",
             "--strict", "--disallow-untyped-defs", "--disallow-incomplete-defs",
             "--check-untyped-defs", "--no-warn-return-any", "--hide-error-context",
             "--no-color-output", "--no-error-summary"]
    if not HAVE_GYMNASIUM:
        flags += ["--ignore-missing-imports", "--allow-subclassing-any",
                  "--no-warn-unused-ignores"]
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # a sanitizer's runtime is for the library, not for mypy
    r = subprocess.run([sys.executable, "-m", "mypy", *flags, *args], cwd=PKG_ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout + r.stderr


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory):
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed in this Python (py_venv.sh pins it), so the "
                    "annotations are not checked")
    return tmp_path_factory.mktemp("mypy_cache")


@pytest.mark.slow
def test_package_passes_mypy_strict(mypy_cache):
    status, out = _mypy(mypy_cache, "-p", "fastrl")
    assert status == 0, f"mypy finds errors in the binding:\n{out}"


@pytest.mark.slow
def test_typed_program_passes_and_mistakes_are_found(mypy_cache, tmp_path):
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(textwrap.dedent(GOOD))
    bad.write_text(textwrap.dedent(BAD))
    expected = {(i, m.group(1)) for i, line in enumerate(bad.read_text().splitlines(), 1)
                for m in [re.search(r"# error: \[([a-z-]+)\]", line)] if m}
    assert len(expected) == 4
    status, out = _mypy(mypy_cache, str(good), str(bad))
    errors = re.findall(r"^(.*?):(\d+): error: .*\[([a-z-]+)\]$", out, re.M)
    found = {(int(line), code) for path, line, code in errors if path == str(bad)}
    others = [e for e in errors if e[0] != str(bad)]
    assert not others, f"mypy rejects the typed program (or the binding):\n{out}"
    assert found == expected, f"mypy's errors in bad.py differ from those marked:\n{out}"
    assert status == 1, out


def test_annotations_never_run():
    """Every module is Python 3.9 syntax and defers its annotations, so that `X | None`
    and names imported only for type checkers are never evaluated; the aliases module
    (imported only by type checkers) still imports."""
    paths = sorted(glob.glob(os.path.join(PKG, "*.py")))
    assert len(paths) >= 15
    for path in paths:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path, feature_version=(3, 9))
        future = [a.name for node in tree.body if isinstance(node, ast.ImportFrom)
                  and node.module == "__future__" for a in node.names]
        assert "annotations" in future, f"{path} lacks from __future__ import annotations"
    assert os.path.isfile(os.path.join(PKG, "py.typed"))
    import fastrl._typing as t
    assert t.PythonEnv is not None and "capacity" in t.ReplayInfo.__annotations__
