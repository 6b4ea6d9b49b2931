"""Discrete observation spaces: gymnasium Discrete observations through VecEnv/Env,
the Policy and the Trainer (the library stores the index; the policy one-hots it)."""

import math

import gymnasium as gym
import numpy as np
import pytest

import fastrl
from fastrl import Status

LEN, ACTIONS = 8, 4


def key(s):
    return (3 * s + 1) % ACTIONS


class Corridor(gym.Env):
    """A lock corridor: at state s only action key(s) moves on (reward 1; the last state
    ends the episode); any other action ends it with 0. Episodes start anywhere, so the
    right action depends on the state index and nothing else."""

    metadata = {"render_modes": []}

    def __init__(self, start=0, bad=None, bad_at=None):
        self.observation_space = gym.spaces.Discrete(LEN, start=start)
        self.action_space = gym.spaces.Discrete(ACTIONS)
        self.start = start
        self.bad, self.bad_at = bad, bad_at
        self.calls = 0

    def _obs(self):
        self.calls += 1
        if self.bad_at is not None and self.calls > self.bad_at:
            return self.bad
        return self.state + self.start

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.state = int(self.np_random.integers(LEN))
        return self._obs(), {}

    def step(self, action):
        right = int(action) == key(self.state)
        done = not right or self.state == LEN - 1
        self.state = 0 if done else self.state + 1
        return self._obs(), 1.0 if right else 0.0, done, False, {}


@pytest.mark.parametrize("per_env", [False, True])
def test_vec_env_takes_a_discrete_observation_space(per_env):
    v = fastrl.VecEnv.from_python([Corridor() for _ in range(4)], per_env=per_env)
    assert isinstance(v.single_observation_space, gym.spaces.Discrete)
    assert v.single_observation_space.n == LEN
    obs, _ = v.reset(seed=3)
    assert obs.shape == (4,) and obs.dtype == np.float32  # the library's indices
    # the batched space says so (not batch_space's int32 MultiDiscrete, which a
    # gymnasium user's `obs in venv.observation_space` would find them outside of)
    assert v.observation_space == gym.spaces.Box(0, LEN - 1, (4,), np.float32)
    assert obs in v.observation_space and v.observation_space.sample() in v.observation_space
    states = [e.state for e in v._python_envs]
    np.testing.assert_array_equal(obs, states)
    obs, rew, term, _, _ = v.step(np.array([key(s) for s in states], np.int32))
    assert (rew == 1).all()
    for e, o, t in zip(v._python_envs, obs, term):
        assert t or o == e.state


def test_discrete_start_is_shifted():
    v = fastrl.VecEnv.from_python([Corridor(start=5) for _ in range(2)])
    obs, _ = v.reset(seed=0)
    np.testing.assert_array_equal(obs, [e.state for e in v._python_envs])
    assert v.single_observation_space == gym.spaces.Discrete(LEN, dtype=np.int32)


@pytest.mark.parametrize("bad, shown", [(LEN, "observation 8,"), (-1, "observation -1,"),
                                        (2.5, "observation 2.5,"),
                                        (math.nan, "observation NaN,")])
@pytest.mark.parametrize("per_env", [False, True])
def test_observations_that_name_no_state_are_refused(bad, shown, per_env):
    envs = [Corridor() for _ in range(3)]
    envs[2].bad, envs[2].bad_at = bad, 1  # a fine reset, then the bad value
    v = fastrl.VecEnv.from_python(envs, per_env=per_env)
    v.reset(seed=1)
    with pytest.raises(fastrl.Error) as ei:
        v.step(np.zeros(3, np.int32))
    assert ei.value.status == Status.ERR_RANGE
    assert "env 2 " in ei.value.message and shown in ei.value.message
    assert "discrete(8)" in ei.value.message


class World:
    """A batch world of agents whose state is their index times the step, mod LEN."""

    def __init__(self, bad=None):
        self.t, self.bad = 0, bad

    def reset(self, seeds, obs):
        obs[:] = np.arange(len(obs)) % LEN

    def step(self, actions, reset_mask, seeds, obs, rewards, terminated, truncated):
        self.t += 1
        obs[:] = (np.arange(len(obs)) * self.t) % LEN
        if self.bad is not None:
            obs[1] = self.bad
        rewards[:] = 0
        terminated[:] = 0
        truncated[:] = 0


def test_batch_world_writes_indices():
    world = World()
    v = fastrl.VecEnv.from_batch(world, 4, gym.spaces.Discrete(LEN),
                                 gym.spaces.Discrete(ACTIONS))
    obs, _ = v.reset(seed=0)
    assert obs.shape == (4,)
    np.testing.assert_array_equal(obs, [0, 1, 2, 3])
    obs, *_ = v.step(np.zeros(4, np.int32))
    np.testing.assert_array_equal(obs, [0, 1, 2, 3])
    world.bad = LEN + 3
    with pytest.raises(fastrl.Error) as ei:
        v.step(np.zeros(4, np.int32))
    assert ei.value.status == Status.ERR_RANGE and "env 1 " in ei.value.message
    with pytest.raises(fastrl.Error) as ei:  # the world writes the library's indices
        fastrl.VecEnv.from_batch(World(), 4, gym.spaces.Discrete(LEN, start=1),
                                 gym.spaces.Discrete(ACTIONS))
    assert ei.value.status == Status.ERR_UNSUPPORTED


def test_single_env_returns_an_int():
    env = fastrl.Env.from_python(Corridor(start=2))
    obs, _ = env.reset(seed=4)
    assert type(obs) is int and obs == env._python_env.state
    assert env.observation_space.contains(obs)
    obs, *_ = env.step(key(obs))
    assert type(obs) is int


def test_policy_acts_on_indices_and_refuses_what_it_cannot_take(tmp_path):
    obs_space, act_space = gym.spaces.Discrete(LEN), gym.spaces.Discrete(ACTIONS)
    p = fastrl.Policy(obs_space, act_space, hidden=[16])
    assert p.observation_space == gym.spaces.Discrete(LEN, dtype=np.int32)
    a = p.act(np.arange(LEN), deterministic=True)
    assert a.shape == (LEN,) and a.dtype == np.int32
    one = p.act(3, deterministic=True)  # one observation: an int, as for a box
    assert type(one) is int and one == a[3]
    act, logp, value = p.act_with_info(3, deterministic=True)
    assert type(act) is int and isinstance(logp, float) and isinstance(value, float)
    outputs, value = p.forward(3)
    assert outputs.shape == (ACTIONS,) and isinstance(value, float)
    r = fastrl.Policy(obs_space, act_space, hidden=[16], core="gru", core_size=8)
    state = r.initial_state(1)[0]  # one observation's state: [state_size]
    assert type(r.act(3, state=state, deterministic=True)) is int
    with pytest.raises(fastrl.Error) as ei:
        p.act([0, 1, LEN])
    assert ei.value.status == Status.ERR_RANGE and "row 2" in ei.value.message
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Policy(obs_space, act_space, obs_norm=True)
    assert ei.value.status == Status.ERR_INVALID_ARGUMENT
    assert "policy.obs_norm" in ei.value.message
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Policy(gym.spaces.Discrete(LEN, start=1), act_space)
    assert ei.value.status == Status.ERR_UNSUPPORTED and "start at 0" in ei.value.message
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Policy(gym.spaces.Discrete(2**24 + 1), act_space)
    assert ei.value.status == Status.ERR_RANGE and "2^24" in ei.value.message
    p.save(tmp_path / "p.frl")
    q = fastrl.Policy.load(tmp_path / "p.frl")
    obs = np.arange(4 * LEN) % LEN
    for det in (False, True):
        for x, y in zip(p.act_with_info(obs, det, counter=7),
                        q.act_with_info(obs, det, counter=7)):
            np.testing.assert_array_equal(x, y)


@pytest.mark.slow
def test_trainer_learns_the_state_dependent_policy():
    v = fastrl.VecEnv.from_python([Corridor() for _ in range(8)])
    t = fastrl.Trainer(v, rollout=32, lr=3e-3, gamma=0.9, hidden=[32])
    before = t.policy.act(np.arange(LEN), deterministic=True)
    assert (before != [key(s) for s in range(LEN)]).any()
    m = t.train(60_000)
    after = t.policy.act(np.arange(LEN), deterministic=True)
    np.testing.assert_array_equal(after, [key(s) for s in range(LEN)])
    assert m.mean_return > 3.5  # optimal 4.5; a random policy gets about 1/3
    assert t.ring.array("observations").shape == (32, 8)
    assert t.ring.array("bootstrap_obs").shape == (8,)
