"""examples/python run as a user would run them (each exits non-zero when its own
check fails: a return below 475, a Python env that did not learn)."""

import os
import subprocess
import sys

import pytest

from conftest import PKG_ROOT

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(PKG_ROOT)), "examples", "python")


def run(name, *args, cwd=None):
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *map(str, args)],
                       capture_output=True, text=True, env=env, timeout=300, cwd=cwd)
    assert r.returncode == 0, f"{name} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r.stdout


@pytest.mark.slow
def test_train_then_evaluate_cartpole(tmp_path):
    out = run("train_cartpole.py", "--out", tmp_path / "run")
    assert "evaluation: 100 greedy episodes, mean return" in out
    ret = float(out.rsplit("mean return", 1)[1].split()[0])
    assert ret >= 475
    ck = tmp_path / "run" / "checkpoint.frl"
    assert ck.exists() and (tmp_path / "run" / "metrics.csv").exists()
    out = run("evaluate.py", ck, "--episodes", 20)
    assert "CartPole-v1: 20 episodes, mean return" in out
    out = run("evaluate.py", ck, "--episodes", 3, "--gymnasium")
    assert float(out.split("mean return")[1].split()[0]) >= 475
    # A missing checkpoint: the library's message, exit 1.
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, "evaluate.py"),
                        str(tmp_path / "none.frl")], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=PKG_ROOT))
    assert r.returncode == 1 and "FRL_ERR_IO" in r.stderr
    # Again into the same OUT: refused (it replaced the run and kept its TensorBoard
    # events beside the new ones), unless --overwrite, which leaves one events file.
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, "train_cartpole.py"),
                        "--out", str(tmp_path / "run"), "--steps", "2048"],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=PKG_ROOT))
    assert r.returncode == 2 and "--overwrite replaces it" in r.stderr, r.stderr
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, "train_cartpole.py"),
                        "--out", str(tmp_path / "run"), "--steps", "2048", "--overwrite"],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=PKG_ROOT))
    assert "trained in" in r.stdout, r.stdout + r.stderr
    assert len(list((tmp_path / "run").glob("events.out.tfevents.*"))) == 1


@pytest.mark.slow
def test_custom_python_env_learns(tmp_path):
    out = run("custom_env.py", "--out", tmp_path)
    trained = float(out.split("trained ")[-1].split(",")[0])
    assert trained >= 0.7, out


@pytest.mark.slow
def test_ring_numpy_example():
    out = run("ring_numpy.py")
    assert "shares the library's memory: True" in out
    assert "update 5: policy version 4" in out and "own ring: slot 0 is reading" in out


@pytest.mark.slow
def test_recurrent_cartpole_example():
    out = run("recurrent_cartpole.py")
    assert "state_size 128" in out  # two GRU cores of 64 (actor and critic)
    carried = float(out.split("state carried: mean return")[1].split()[0])
    wiped = float(out.split("every step: mean return")[1].split()[0])
    assert carried > 2 * wiped, out


@pytest.mark.slow
def test_onnx_policy_plays_gymnasium():
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (py_venv.sh "
                        "installs it)")
    out = run("onnx_policy.py", "--episodes", 5, "--sample")
    assert "onnxruntime, greedy: 5 episodes, mean return" in out
    assert float(out.split("mean return")[1].split()[0]) >= 475


@pytest.mark.slow
def test_onnx_policy_plays_any_saved_policy(tmp_path):
    """Not only CartPole: a Gaussian (Pendulum) policy and a recurrent one play the env
    --env names; a model that does not fit the env is refused before playing."""
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (py_venv.sh "
                        "installs it)")
    import fastrl
    for name, env, opts in (("gauss.frl", "Pendulum-v1", {}),
                            ("gru.frl", "CartPole-v1", {"policy.core": "gru"})):
        t = fastrl.Trainer(env, dict(opts, **{"train.num_envs": 4, "runtime.seed": 2}))
        t.train(512)
        t.policy.save(tmp_path / name)
        out = run("onnx_policy.py", tmp_path / name, "--env", env, "--episodes", 2,
                  "--sample")
        assert "onnxruntime, sampled: mean return" in out, out
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, "onnx_policy.py"),
                        str(tmp_path / "gauss.frl"), "--env", "CartPole-v1"],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=PKG_ROOT))
    assert r.returncode == 1 and "reads 3 observation values, CartPole-v1 gives 4" in r.stderr


@pytest.mark.slow
def test_evo_ask_tell_solves_cartpole(tmp_path):
    out = run("evo_ask_tell.py", "--out", tmp_path / "es.frl")
    assert "members of 114 acting parameters (the policy has 211)" in out
    assert float(out.split("mean return")[-1].split()[0]) >= 475, out
    assert (tmp_path / "es.frl").exists()


@pytest.mark.slow
def test_mujoco_arm_reaches_nearer():
    import fastrl
    if fastrl.mujoco_version() is None:
        pytest.skip("no MuJoCo plugin in this build")
    out = run("mujoco_arm.py", "--steps", 100_000)
    before = float(out.split("before:")[1].split("final distance")[1].split()[0])
    after = float(out.split("after ")[1].split("final distance")[1].split()[0])
    assert after < 0.75 * before, out
