"""fastrl.evaluate through the library's frl_policy_evaluate: the quota per env,
env-major returns, the same results as the loop the binding used to run, Python envs
(and their exceptions), clipping, mismatched spaces, limits and bad arguments."""

import ctypes

import gymnasium as gym
import numpy as np
import pytest

import fastrl
from fastrl import Status, _lib


class Ladder(gym.Env):
    """Episode k (from 0) lasts base + k steps, paying 0.5 per step: a return tells
    which env (base) and which of its episodes it was. fail_at: the step that raises."""

    def __init__(self, base, fail_at=None, box=False):
        self.observation_space = gym.spaces.Box(-1e6, 1e6, (2,), np.float32)
        self.action_space = (gym.spaces.Box(-0.25, 0.5, (1,), np.float32) if box
                             else gym.spaces.Discrete(2))
        self.base, self.fail_at = base, fail_at
        self.episode, self.t, self.steps = -1, 0, 0
        self.actions = []

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode += 1
        self.t = 0
        return np.array([0, self.episode], np.float32), {}

    def step(self, action):
        self.steps += 1
        if self.steps == self.fail_at:
            raise KeyError(f"ladder broke at step {self.steps}")
        self.actions.append(np.array(action, np.float32).copy())
        self.t += 1
        done = self.t == self.base + self.episode
        return np.array([self.t, self.episode], np.float32), 0.5, done, False, {}


def ladders(bases, **kw):
    per_env = kw.pop("per_env", False)
    return fastrl.VecEnv.from_python([lambda b=b: Ladder(b, **kw) for b in bases],
                                     per_env=per_env)


def policy_for(venv, runtime=None):
    return fastrl.Policy(venv.single_observation_space, venv.single_action_space,
                         runtime=runtime or venv.runtime)


@pytest.mark.parametrize("per_env", [False, True])
def test_quota_per_env_and_env_major_order(per_env):
    # 7 episodes on 3 envs: quotas 3, 2, 2. Env 0's episodes are the shortest: counting
    # the first 7 to end would take more of them.
    v = ladders([2, 5, 9], per_env=per_env)
    returns = fastrl.evaluate(policy_for(v), v, 7)
    assert returns.dtype == np.float64 and returns.shape == (7,)
    np.testing.assert_array_equal(returns, 0.5 * np.array([2, 3, 4, 5, 6, 9, 10]))
    v.close()


def _old_loop(policy, venv, episodes, deterministic, seed):
    """The loop fastrl.evaluate ran in Python before it called the library."""
    n = venv.num_envs
    quota = np.full(n, episodes // n)
    quota[: episodes % n] += 1
    done = np.zeros(n, np.int64)
    returns = [[] for _ in range(n)]
    obs, _ = venv.reset(seed=seed)
    space = venv.single_action_space
    clip = (space.low, space.high) if hasattr(space, "low") else None
    counter = 0
    while (done < quota).any():
        # sampling draws env i from the stream seed * n + i, as the library does
        a = policy.act(obs, deterministic, counter=counter, stream_offset=seed * n)
        venv.step(np.clip(a, *clip) if clip else a)
        counter += 1
        for i in np.flatnonzero(venv.terminations | venv.truncations):
            if done[i] < quota[i]:
                returns[i].append(float(venv.episode_returns[i]))
                done[i] += 1
    return np.array([r for rs in returns for r in rs], np.float64)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
@pytest.mark.parametrize("deterministic", [True, False])
def test_same_results_as_the_python_loop(env_id, deterministic):
    rt = fastrl.Runtime(seed=3)
    v = fastrl.make_vec(env_id, num_envs=4, runtime=rt)
    p = policy_for(v)
    got = fastrl.evaluate(p, v, 10, deterministic=deterministic, seed=11)
    want = _old_loop(p, v, 10, deterministic, 11)
    np.testing.assert_array_equal(got, want)
    again = fastrl.evaluate(p, env_id, 10, deterministic=deterministic, seed=11, num_envs=4)
    np.testing.assert_array_equal(again, got)  # an id makes the same vec env
    other = fastrl.evaluate(p, v, 10, deterministic=deterministic, seed=12)
    assert not np.array_equal(other, got)


def test_box_actions_clipped_to_the_env():
    v = ladders([20, 20], box=True)
    envs = v._python_envs
    p = fastrl.Policy(v.single_observation_space,
                      gym.spaces.Box(-3, 3, (1,), np.float32), runtime=v.runtime)
    fastrl.evaluate(p, v, 4, deterministic=False)
    seen = np.concatenate([np.concatenate(e.actions) for e in envs])
    assert seen.min() >= -0.25 and seen.max() <= 0.5
    assert (seen == 0.5).sum() + (seen == -0.25).sum() > len(seen) // 4
    inside = seen[(seen > -0.25) & (seen < 0.5)]
    assert len(np.unique(inside)) == len(inside) > 5  # the counter advances


def test_python_env_exception_is_reraised():
    v = ladders([3, 3, 3], fail_at=None)
    v._python_envs[1].fail_at = 5
    with pytest.raises(KeyError, match="ladder broke at step 5") as ei:
        fastrl.evaluate(policy_for(v), v, 6)
    if hasattr(ei.value, "add_note"):  # Python 3.11 and later
        assert any("during evaluate" in n for n in ei.value.__notes__)
    v._python_envs[1].fail_at = None
    assert fastrl.evaluate(policy_for(v), v, 3).shape == (3,)  # usable again


def test_mismatched_spaces_name_both():
    cartpole = fastrl.make_vec("CartPole-v1", num_envs=2)
    acrobot = policy_for(fastrl.make_vec("Acrobot-v1", num_envs=1))
    with pytest.raises(fastrl.Error) as ei:
        fastrl.evaluate(acrobot, cartpole, 2)
    assert ei.value.status == Status.ERR_SIZE
    assert "observation spaces" in ei.value.message and "box[6] and box[4]" in ei.value.message
    mc = policy_for(fastrl.make_vec("MountainCar-v0", num_envs=1))
    with pytest.raises(fastrl.Error) as ei:
        fastrl.evaluate(mc, "MountainCarContinuous-v0", 2)
    assert ei.value.status == Status.ERR_SIZE
    assert "discrete(3) and box[1]" in ei.value.message
    assert cartpole.total_steps == 0  # refused before any step


def test_max_steps():
    v = ladders([10**9, 10**9])  # episodes that do not end
    with pytest.raises(fastrl.Error) as ei:
        fastrl.evaluate(policy_for(v), v, 2, max_steps=50)
    assert ei.value.status == Status.ERR_RANGE and "max_steps 50" in ei.value.message
    assert v.total_steps == 50
    w = ladders([5])
    assert fastrl.evaluate(policy_for(w), w, 1, max_steps=5).tolist() == [2.5]
    with pytest.raises(fastrl.Error):
        fastrl.evaluate(policy_for(w), w, 1, max_steps=4)


def test_bad_arguments():
    p = policy_for(fastrl.make_vec("CartPole-v1", num_envs=1))
    for episodes in (0, -1, 2**31, np.int64(0)):
        with pytest.raises(fastrl.Error) as ei:
            fastrl.evaluate(p, "CartPole-v1", episodes)
        assert ei.value.status == Status.ERR_RANGE
    for episodes in (True, np.True_, 1.5, "3", None):  # as Population.evaluate's
        with pytest.raises(TypeError, match="episodes must be an int"):
            fastrl.evaluate(p, "CartPole-v1", episodes)
    for max_steps in (-1, 2**63):
        with pytest.raises(fastrl.Error) as ei:
            fastrl.evaluate(p, "CartPole-v1", 1, max_steps=max_steps)
        assert ei.value.status == Status.ERR_RANGE
    with pytest.raises(TypeError, match="max_steps"):
        fastrl.evaluate(p, "CartPole-v1", 1, max_steps=False)
    assert fastrl.evaluate(p, "CartPole-v1", np.int32(2)).shape == (2,)
    with pytest.raises(fastrl.Error):
        fastrl.evaluate(p, "CartPole-v1", 1, seed=-1)
    with pytest.raises(TypeError):
        fastrl.evaluate(p, "CartPole-v1", 1, seed="x")
    assert np.isfinite(fastrl.evaluate(p, "CartPole-v1", 2, seed=None)).all()
    t = fastrl.Trainer("CartPole-v1")
    with pytest.raises(fastrl.Error) as ei:  # the trainer's own vec env is not ours
        fastrl.evaluate(t.policy, t.vec_env, 1)
    assert ei.value.status == Status.ERR_STATE


def test_eval_args_layout_matches_the_header():
    # frl_eval_args on LP64: size_t, int32, int32, uint64, two pointers, int64.
    a = _lib.new_table(_lib.EvalArgs)
    assert a.struct_size == ctypes.sizeof(_lib.EvalArgs) == 48
    offsets = {f: getattr(_lib.EvalArgs, f).offset for f, _ in _lib.EvalArgs._fields_}
    assert offsets == {"struct_size": 0, "episodes": 8, "deterministic": 12, "seed": 16,
                       "returns": 24, "lengths": 32, "max_steps": 40}


def test_options_for_a_built_in_are_refused_with_a_vec_env():
    """num_envs, runtime and options make the vec env of a built-in id; with a VecEnv
    given they used to be dropped without a word, so a limit such as
    max_episode_steps=3 (which an id honours) or a misspelt keyword did nothing."""
    venv = fastrl.make_vec("CartPole-v1", num_envs=2)
    policy = fastrl.Policy(venv.single_observation_space, venv.single_action_space)
    assert (fastrl.evaluate(policy, "CartPole-v1", episodes=2, max_episode_steps=3)
            == 3).all()
    for kwargs in ({"max_episode_steps": 3}, {"detrministic": False}, {"num_envs": 2},
                   {"runtime": venv.runtime}):
        with pytest.raises(fastrl.Error) as ei:
            fastrl.evaluate(policy, venv, episodes=2, **kwargs)
        assert ei.value.status == Status.ERR_INVALID_ARGUMENT
        assert next(iter(kwargs)) in ei.value.message
    assert fastrl.evaluate(policy, venv, episodes=2).shape == (2,)  # the VecEnv alone


def test_zero_num_envs_is_refused_not_the_default():
    venv = fastrl.make_vec("CartPole-v1", num_envs=1)
    policy = fastrl.Policy(venv.single_observation_space, venv.single_action_space)
    with pytest.raises(fastrl.Error) as ei:
        fastrl.evaluate(policy, "CartPole-v1", episodes=2, num_envs=0)
    assert ei.value.status == Status.ERR_RANGE
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Population(policy, 2).evaluate("CartPole-v1", num_envs=0)
    assert ei.value.status == Status.ERR_RANGE


def test_runtime_options_make_the_vec_env_on_a_runtime_of_its_own(monkeypatch):
    """threads= (any runtime option) for a built-in id always failed: the vec env was
    made on the policy's runtime, so the option was refused as beside runtime=. They now
    make the vec env's own runtime; beside an explicit runtime= they are refused, naming
    the call. The results do not depend on the threads."""
    L = _lib.lib()
    threads = []
    orig = L.vec_env_create

    def create(out, rt, *args):
        threads.append(L.runtime_threads(rt))
        return orig(out, rt, *args)
    monkeypatch.setattr(L, "vec_env_create", create)
    policy = fastrl.Policy(gym.spaces.Box(-5, 5, (4,), np.float32), gym.spaces.Discrete(2),
                           runtime=fastrl.Runtime(threads=1))
    pop = fastrl.Population(policy, 4)
    for threads_given in (2, 3):
        a = fastrl.evaluate(policy, "CartPole-v1", 8, threads=threads_given,
                            deterministic=False)
        assert (a == fastrl.evaluate(policy, "CartPole-v1", 8, deterministic=False)).all()
        b = pop.evaluate("CartPole-v1", 2, **{"runtime.threads": threads_given})
        assert (b.returns == pop.evaluate("CartPole-v1", 2).returns).all()
        assert threads[-4:] == [threads_given, 1, threads_given, 1]
    for call, what in ((lambda **kw: fastrl.evaluate(policy, "CartPole-v1", 2, **kw),
                        "evaluate"),
                       (lambda **kw: pop.evaluate("CartPole-v1", **kw),
                        "Population.evaluate")):
        with pytest.raises(fastrl.Error) as ei:
            call(threads=2, runtime=fastrl.Runtime(threads=1))
        assert ei.value.status == Status.ERR_INVALID_ARGUMENT
        assert ei.value.message.startswith(f"{what}: threads") and "runtime=" in \
            ei.value.message
