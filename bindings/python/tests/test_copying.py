"""Objects over library memory refuse pickle and copy with a TypeError (a copy would
hold the same C pointer without owning it: a crash once the original goes, or at once
in another process); Config, a plain mapping of settings, pickles and copies."""

import copy
import pickle

import numpy as np
import pytest

import fastrl


def _objects():
    rt = fastrl.Runtime(threads=1)
    env = fastrl.make("CartPole-v1", runtime=rt)
    venv = fastrl.make_vec("CartPole-v1", num_envs=2, runtime=rt)
    policy = fastrl.Policy(env.observation_space, env.action_space, runtime=rt)
    trainer = fastrl.Trainer("CartPole-v1", runtime=rt)
    pop = fastrl.Population(policy, 2)
    evo = fastrl.Evo(np.zeros(4, np.float32), algo="es", population=4, runtime=rt)
    return {"Runtime": rt, "Env": env, "VecEnv": venv, "Policy": policy,
            "Trainer": trainer, "Population": pop, "Evo": evo}


@pytest.mark.parametrize("how", ["pickle", "copy", "deepcopy"])
def test_library_objects_refuse_copies(how):
    do = {"pickle": pickle.dumps, "copy": copy.copy, "deepcopy": copy.deepcopy}[how]
    for name, obj in _objects().items():
        with pytest.raises(TypeError) as ei:
            do(obj)
        assert f"fastrl.{name} cannot be pickled or copied" in str(ei.value), name
    with pytest.raises(TypeError) as ei:
        do(fastrl.Policy(fastrl.make("CartPole-v1").observation_space,
                         fastrl.make("CartPole-v1").action_space))
    assert "save()" in str(ei.value)  # what to do instead


def test_config_pickles_and_copies():
    c = fastrl.Config(lr=1e-3, num_envs=8, hidden=[32, 16])
    c["train.target_return"] = 475
    for other in (pickle.loads(pickle.dumps(c)), copy.copy(c), copy.deepcopy(c)):
        assert other == c and other is not c
        other["train.lr"] = 0.5  # its own settings, not the original's
        assert c["train.lr"] == 1e-3


def test_vec_env_is_a_context_manager():
    with fastrl.make_vec("CartPole-v1", num_envs=2) as v:
        v.reset(seed=0)
    assert v.closed
