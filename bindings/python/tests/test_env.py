"""Env: the gymnasium.Env API on the built-ins, state, errors."""

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import fastrl
from fastrl import Status

IDS = ["CartPole-v1", "Pendulum-v1", "Acrobot-v1", "MountainCar-v0",
       "MountainCarContinuous-v0"]


def checker_warnings(env, skip_render_check=False):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=skip_render_check)
    return {str(w.message) for w in caught}


@pytest.mark.parametrize("env_id", IDS)
def test_check_env_passes(env_id):
    env = fastrl.make(env_id)
    assert isinstance(env, gym.Env)
    ours = checker_warnings(env)
    # No warning that gymnasium's own env of the same id does not get too.
    # (gymnasium's own would need pygame for its render check.)
    theirs = checker_warnings(gym.make(env_id).unwrapped, skip_render_check=True)
    extra = {w for w in ours - theirs if "not having a spec" not in w}
    assert not extra, extra
    genv = gym.make(f"fastrl/{env_id}")
    assert not {w for w in checker_warnings(genv.unwrapped) - theirs
                if "not having a spec" not in w}
    obs, info = genv.reset(seed=1)
    assert obs in genv.observation_space and info == {}
    genv.close()
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_spaces_match_gymnasium(env_id):
    ours = fastrl.make(env_id)
    theirs = gym.make(env_id)
    assert ours.observation_space.shape == theirs.observation_space.shape
    assert np.allclose(ours.observation_space.low, theirs.observation_space.low)
    assert np.allclose(ours.observation_space.high, theirs.observation_space.high)
    if isinstance(theirs.action_space, gym.spaces.Discrete):
        assert ours.action_space.n == theirs.action_space.n
        assert ours.action_space.dtype == np.int32  # the library's action type
    else:
        assert ours.action_space.shape == theirs.action_space.shape
        assert np.allclose(ours.action_space.low, theirs.action_space.low)


def test_cartpole_follows_gymnasium_step_by_step():
    """Put fastrl's CartPole in gymnasium's state, then step both with the same actions."""
    ours = fastrl.make("CartPole-v1")
    theirs = gym.make("CartPole-v1").unwrapped
    ours.reset(seed=0)
    theirs.reset(seed=5)
    ours.set_state(np.append(np.asarray(theirs.state, np.float64), 0.0))
    rng = np.random.default_rng(0)
    for t in range(200):
        a = int(rng.integers(2))
        o1, r1, te1, tr1, _ = ours.step(a)
        o2, r2, te2, tr2, _ = theirs.step(a)
        np.testing.assert_allclose(o1, o2, rtol=0, atol=1e-6)
        assert (r1, te1, tr1) == (r2, te2, tr2)
        if te1:
            break
    assert t > 5


def test_reset_and_step_semantics():
    env = fastrl.make("CartPole-v1")
    o1, _ = env.reset(seed=42)
    o2, _ = env.reset(seed=42)
    o3, _ = env.reset(seed=43)
    assert o1.dtype == np.float32 and o1.shape == (4,)
    assert np.array_equal(o1, o2) and not np.array_equal(o1, o3)
    assert o1 is not o2  # each call returns its own array
    env.reset()  # seed None: drawn from the env's generator, still valid
    env.reset(seed=7)
    steps = 0
    while True:
        obs, r, term, trunc, info = env.step(1)
        steps += 1
        assert type(r) is float and type(term) is bool and info == {}
        if term or trunc:
            break
    assert term and steps < 100
    with pytest.raises(fastrl.Error) as ei:  # gymnasium's rule: reset after the end
        env.step(0)
    assert ei.value.status == Status.ERR_STATE and "reset" in ei.value.message


def test_max_episode_steps_option():
    env = fastrl.make("Pendulum-v1", max_episode_steps=7)
    env.reset(seed=0)
    flags = [env.step(np.zeros(1, np.float32))[3] for _ in range(7)]
    assert flags == [False] * 6 + [True]
    g = gym.make("fastrl/Pendulum-v1", **{"env.max_episode_steps": 3})
    g.reset(seed=0)
    assert [g.step(np.zeros(1, np.float32))[3] for _ in range(3)] == [False, False, True]


def test_bad_actions():
    env = fastrl.make("CartPole-v1")
    env.reset(seed=0)
    for bad, status in ((2, Status.ERR_RANGE), (-1, Status.ERR_RANGE),
                        (2**40, Status.ERR_RANGE)):
        with pytest.raises(fastrl.Error) as ei:
            env.step(bad)
        assert ei.value.status == status, bad
    with pytest.raises(TypeError):
        env.step(0.5)
    with pytest.raises(TypeError):
        env.step("left")
    env.step(np.int64(1))  # numpy ints and 0-d arrays are fine
    env.step(np.array(0))
    pend = fastrl.make("Pendulum-v1")
    pend.reset(seed=0)
    with pytest.raises(fastrl.Error) as ei:
        pend.step(np.array([np.nan], np.float32))
    assert ei.value.status == Status.ERR_NONFINITE
    with pytest.raises(fastrl.Error) as ei:
        pend.step(np.zeros(2, np.float32))
    assert ei.value.status == Status.ERR_SIZE
    for bad in (np.array([0.5 + 1j]), ["a"], [object()]):  # as VecEnv.step refuses them
        with pytest.raises(fastrl.Error) as ei:
            pend.step(bad)
        assert ei.value.status == Status.ERR_TYPE, bad
    pend.step([0.5])
    pend.step(np.array([1], np.int64))  # integers are numbers


def test_bad_arguments():
    with pytest.raises(fastrl.Error) as ei:
        fastrl.make("CartPole-v1", render_mode="human")
    assert ei.value.status == Status.ERR_UNSUPPORTED
    with pytest.raises(fastrl.Error) as ei:
        fastrl.make("CartPole-v1", max_episode_steps=-5)
    assert ei.value.status == Status.ERR_RANGE
    with pytest.raises(fastrl.Error):
        fastrl.make("CartPole-v1", bogus=1)
    with pytest.raises(TypeError):
        fastrl.make(3)
    env = fastrl.make("fastrl/CartPole-v1")  # the gymnasium id works too
    with pytest.raises(fastrl.Error) as ei:
        env.reset(options={"x": 1})
    assert ei.value.status == Status.ERR_UNSUPPORTED
    for bad in (-1, 2**64):
        with pytest.raises(fastrl.Error):
            env.reset(seed=bad)
    with pytest.raises(TypeError):
        env.reset(seed=1.5)
    with pytest.raises(fastrl.Error) as ei:
        env.step(0)  # never reset
    assert ei.value.status == Status.ERR_STATE


def test_state_roundtrip_and_errors():
    env = fastrl.make("Acrobot-v1")
    env.reset(seed=3)
    for _ in range(10):
        env.step(1)
    s = env.get_state()
    assert s.shape == (env.state_size,) == (5,) and s[-1] == 10
    after = [env.step(a)[0] for a in (0, 2, 1)]
    obs = env.set_state(s)
    again = [env.step(a)[0] for a in (0, 2, 1)]
    assert obs.shape == (6,)
    assert all(np.array_equal(x, y) for x, y in zip(after, again))
    with pytest.raises(fastrl.Error) as ei:
        env.set_state(s[:-1])
    assert ei.value.status == Status.ERR_SIZE
    bad = s.copy()
    bad[0] = np.nan
    with pytest.raises(fastrl.Error) as ei:
        env.set_state(bad)
    assert ei.value.status == Status.ERR_NONFINITE


def test_close():
    env = fastrl.make("CartPole-v1")
    env.reset(seed=0)
    env.close()
    env.close()  # twice is fine
    assert env.closed and "closed" in repr(env)
    with pytest.raises(fastrl.Error) as ei:
        env.step(0)
    assert ei.value.status == Status.ERR_STATE
    with fastrl.make("CartPole-v1") as e2:
        e2.reset(seed=1)
    assert e2.closed


def test_runtime_options_and_objects(rt1):
    env = fastrl.make("CartPole-v1", runtime=rt1)
    assert env.reset(seed=0)[0].shape == (4,)
    with pytest.raises(fastrl.Error) as ei:
        fastrl.make("CartPole-v1", runtime=rt1, threads=2)
    assert ei.value.status == Status.ERR_INVALID_ARGUMENT
    env2 = fastrl.make("CartPole-v1", threads=1)  # a runtime of its own
    assert env2._runtime.threads == 1
    with pytest.raises(TypeError):
        fastrl.make("CartPole-v1", runtime="default")
