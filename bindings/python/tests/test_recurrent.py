"""Recurrent policies from Python: Policy.state_size, initial_state, act's state/reset."""

import gymnasium as gym
import numpy as np
import pytest

import fastrl
from conftest import SANITIZER

CORE = 16
B = 4


@pytest.fixture(scope="module")
def trained():
    """A GRU policy briefly trained on CartPoleNoVel-v1 (velocities hidden, so memory
    helps); the run only has to work, not to solve the task."""
    t = fastrl.Trainer("CartPoleNoVel-v1", seed=1, config={
        "policy.core": "gru", "policy.core_size": CORE, "policy.shared": True})
    steps = 8_192 if SANITIZER else 30_000  # 4 updates under a sanitizer
    m = t.train(steps)
    assert m.env_steps >= steps and np.isfinite(m.mean_return)
    yield t
    t.close()


@pytest.fixture
def venv():
    v = fastrl.make_vec("CartPoleNoVel-v1", num_envs=B)
    v.reset(seed=7)
    yield v
    v.close()


def warm_state(p, obs, steps=3):
    """A state that is not zero: a few steps of acting on obs."""
    s = p.initial_state(len(obs))
    for _ in range(steps):
        p.act(obs, True, state=s)
    return s


def test_state_size_and_initial_state(trained):
    p = trained.policy
    assert p.state_size == CORE  # one shared GRU core: h
    s = p.initial_state(B)
    assert s.shape == (B, CORE) and s.dtype == np.float32 and not s.any()
    assert s.flags.c_contiguous and s.flags.writeable
    for bad in (0, -1, 2.0, True, "3"):
        with pytest.raises(ValueError, match="batch"):
            p.initial_state(bad)


def test_state_sizes_of_the_core_layouts():
    obs, act = gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(2)
    for core, shared, size in (("gru", True, 8), ("gru", False, 16),
                               ("lstm", True, 16), ("lstm", False, 32)):
        p = fastrl.Policy(obs, act, {"policy.core": core, "policy.core_size": 8,
                                     "policy.shared": shared})
        assert p.state_size == size, (core, shared)
        assert p.initial_state(2).shape == (2, size)
        a = p.act(np.zeros((2, 3), np.float32), state=p.initial_state(2))
        assert a.shape == (2,)


def test_act_updates_the_state_in_place(trained, venv):
    p = trained.policy
    obs = venv.observations
    s = p.initial_state(B)
    address = s.ctypes.data
    a, lp, v = p.act_with_info(obs, True, state=s)
    assert s.ctypes.data == address and s.any() and np.isfinite(s).all()
    first = s.copy()
    p.act(obs, True, state=s)
    assert not np.array_equal(s, first)  # the state moves on with each call


def test_same_state_same_actions_and_values(trained, venv):
    p = trained.policy
    obs = venv.observations
    s = warm_state(p, obs)
    saved = s.copy()
    a1, lp1, v1 = p.act_with_info(obs, True, state=s)
    next1 = s.copy()
    s[...] = saved  # back to the saved state
    a2, lp2, v2 = p.act_with_info(obs, True, state=s)
    assert np.array_equal(a1, a2) and np.array_equal(v1, v2) and np.array_equal(lp1, lp2)
    assert np.array_equal(s, next1)
    # The state matters: the same observations from a fresh state give other values.
    _, _, v0 = p.act_with_info(obs, True, state=p.initial_state(B))
    assert not np.array_equal(v0, v1)
    # One observation: a [state_size] row (a view into the batch state works too).
    s[...] = saved
    a_row, _, v_row = p.act_with_info(obs[1], True, state=s[1])
    assert a_row == a1[1] and v_row == pytest.approx(v1[1], rel=1e-5, abs=1e-6)
    assert np.allclose(s[1], next1[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["bool", "uint8", "list", "int64"])
def test_reset_rows_act_like_a_zero_state(trained, venv, kind):
    p = trained.policy
    obs = venv.observations
    flags = np.array([True, False, True, False])
    reset = {"bool": flags, "uint8": flags.astype(np.uint8), "list": flags.tolist(),
             "int64": flags.astype(np.int64) * 5}[kind]
    s = warm_state(p, obs)
    zeroed = s.copy()
    zeroed[flags] = 0
    a1, _, v1 = p.act_with_info(obs, True, state=s, reset=reset)
    a2, _, v2 = p.act_with_info(obs, True, state=zeroed)
    assert np.array_equal(a1, a2) and np.array_equal(v1, v2) and np.array_equal(s, zeroed)


def test_reset_steps_of_a_vec_env_as_reset(trained, venv):
    # A controller loop: the vec env's reset flags start each new episode's agent from
    # zeros. Checked against zeroing those rows by hand.
    p = trained.policy
    venv.reset(seed=3)
    s = p.initial_state(B)
    manual = p.initial_state(B)
    resets = 0
    for step in range(300):
        flags = venv.reset_steps  # read-only bool view: passed without a copy
        resets += int(flags.sum())
        a = p.act(venv.observations, True, state=s, reset=flags)
        manual[flags] = 0
        b = p.act(venv.observations, True, state=manual)
        assert np.array_equal(a, b) and np.array_equal(s, manual)
        venv.step(a)
    assert resets > B  # episodes ended and started again during the loop


def test_bad_state_raises_and_leaves_it_alone(trained):
    p = trained.policy
    obs = np.zeros((B, 2), np.float32)
    with pytest.raises(TypeError, match=r"initial_state\(4\)"):
        p.act(obs)
    with pytest.raises(TypeError, match=r"initial_state"):
        p.act_with_info(obs, state=None, reset=np.zeros(B, bool))
    good = p.initial_state(B)
    with pytest.raises(TypeError, match="float32"):
        p.act(obs, state=good.astype(np.float64))
    with pytest.raises(TypeError, match="numpy.ndarray"):
        p.act(obs, state=good.tolist())
    for shape in ((B, CORE + 1), (B + 1, CORE), (B * CORE,), (CORE,), (1, B, CORE)):
        with pytest.raises(ValueError, match="shape"):
            p.act(obs, state=np.zeros(shape, np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        p.act(obs, state=np.zeros((B, CORE), np.float32, order="F"))
    with pytest.raises(ValueError, match="C-contiguous"):
        p.act(obs, state=np.zeros((B, 2 * CORE), np.float32)[:, ::2])
    ro = p.initial_state(B)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        p.act(obs, state=ro)
    with pytest.raises(ValueError, match="reset"):
        p.act(obs, state=good, reset=np.zeros(B + 1, bool))
    with pytest.raises(TypeError, match="reset"):
        p.act(obs, state=good, reset=np.zeros(B, np.float32))
    assert not good.any()  # no failed call wrote to it


def test_saved_recurrent_policy_keeps_its_core(trained, venv, tmp_path):
    p = trained.policy
    p.save(tmp_path / "gru.frl")
    q = fastrl.Policy.load(tmp_path / "gru.frl")
    assert q.state_size == CORE
    obs = venv.observations
    s, t = warm_state(p, obs), warm_state(q, obs)
    assert np.array_equal(s, t)
    assert np.array_equal(p.act_with_info(obs, True, state=s)[2],
                          q.act_with_info(obs, True, state=t)[2])


def test_mlp_policy_takes_the_same_calls():
    p = fastrl.Policy(gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(3))
    assert p.state_size == 0
    s = p.initial_state(5)
    assert s.shape == (5, 0) and s.dtype == np.float32
    obs = np.random.default_rng(0).uniform(-1, 1, (5, 3)).astype(np.float32)
    a, _, v = p.act_with_info(obs, True)
    reset = np.array([1, 0, 1, 0, 0], bool)
    for kw in ({"state": None}, {"state": s}, {"state": s, "reset": reset}):
        a2, _, v2 = p.act_with_info(obs, True, **kw)
        assert np.array_equal(a, a2) and np.array_equal(v, v2)
    assert p.act(obs[0], True, state=np.zeros(0, np.float32), reset=True) == a[0]
    with pytest.raises(ValueError, match="shape"):
        p.act(obs, state=np.zeros((5, 1), np.float32))
    p.close()
    with pytest.raises(fastrl.Error, match="closed"):
        p.state_size
    with pytest.raises(fastrl.Error, match="closed"):
        p.initial_state(5)


def test_evaluate_carries_the_state(trained):
    """fastrl.evaluate runs a recurrent policy with its state per env (the library's
    frl_policy_evaluate keeps one, restarted with each episode)."""
    returns = fastrl.evaluate(trained, "CartPoleNoVel-v1", episodes=8)
    assert returns.shape == (8,) and np.all(returns >= 1)


def test_evaluate_refuses_what_is_not_a_policy():
    with pytest.raises(TypeError, match="fastrl.Policy"):
        fastrl.evaluate(object(), "CartPole-v1", episodes=1)
