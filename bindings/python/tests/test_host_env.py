"""Environments written in Python, run through the library's callback tables."""

import threading
import traceback

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import fastrl
from fastrl import Status
from conftest import random_actions


class Walker(gym.Env):
    """Walk on cells 0..10 to a target; discrete(3) actions starting at `start`."""

    metadata = {"render_modes": []}

    def __init__(self, fail_at=None, start=0, exc=ValueError):
        self.observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float64)
        self.action_space = gym.spaces.Discrete(3, start=start)
        self.start = start
        self.fail_at = fail_at
        self.exc = exc
        self.steps = 0
        self.seen = []
        self.closed = False
        self.threads = set()

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.target = (int(x) for x in self.np_random.choice(11, 2, replace=False))
        return self._obs(), {"reset": True}

    def _obs(self):
        return np.array([self.pos / 10, self.target / 10])

    def step(self, action):
        self.threads.add(threading.get_ident())
        self.steps += 1
        if self.fail_at is not None and self.steps == self.fail_at:
            raise self.exc(f"walker failed at step {self.steps}")
        self.seen.append(action)
        self.pos = min(10, max(0, self.pos + int(action) - self.start - 1))
        done = self.pos == self.target
        return self._obs(), 1.0 if done else -0.05, done, False, {"pos": self.pos}

    def close(self):
        self.closed = True


def test_single_python_env_is_a_gymnasium_env():
    w = Walker()
    env = fastrl.Env.from_python(w, max_episode_steps=30)
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=1)
    assert obs.dtype == np.float32 and obs.shape == (2,) and info == {"reset": True}
    assert np.array_equal(obs, env.reset(seed=1)[0])
    obs, r, term, trunc, info = env.step(2)
    assert info == {"pos": w.pos} and r in (1.0, float(np.float32(-0.05)))  # float32 inside
    env.reset(seed=2)
    n = 0
    while not (term or trunc):
        obs, r, term, trunc, info = env.step(1)  # stay: only the time limit ends it
        n += 1
    assert trunc and not term and n == 30
    env.close()
    assert w.closed


def test_actions_reach_the_python_env_in_its_own_space():
    w = Walker(start=-1)  # Discrete(3, start=-1): the env's actions are -1, 0, 1
    env = fastrl.Env.from_python(w)
    assert env.action_space.n == 3 and env.action_space.start == 0  # the library's
    check_env(env, skip_render_check=True)
    env.reset(seed=0)
    w.seen.clear()
    for a in (0, 1, 2):
        env.step(a)
    assert w.seen == [-1, 0, 1] and all(type(a) is int for a in w.seen)
    with pytest.raises(fastrl.Error) as ei:
        env.step(3)
    assert ei.value.status == Status.ERR_RANGE
    v = fastrl.VecEnv.from_python([Walker(start=5), Walker(start=5)])
    v.reset(seed=0)
    v.step([0, 2])
    assert [e.seen for e in v._python_envs] == [[5], [7]]

    class BoxActions(gym.Env):
        observation_space = gym.spaces.Box(-1, 1, (3,), np.float32)
        action_space = gym.spaces.Box(-2, 2, (2,), np.float64)

        def reset(self, *, seed=None, options=None):
            return np.zeros(3, np.float32), {}

        def step(self, action):
            self.last = action
            return np.full(3, 0.5, np.float32), float(action.sum()), False, False, {}

    b = BoxActions()
    env = fastrl.Env.from_python(b)
    env.reset(seed=0)
    _, r, *_ = env.step(np.array([0.25, 1.5]))
    assert b.last.shape == (2,) and b.last.dtype == np.float64 and r == 1.75


@pytest.mark.parametrize("per_env", [True, False])
def test_integer_box_actions_are_rounded_within_bounds(per_env):
    """A Box of ints gets the nearest integer in its bounds, not a cast's truncation."""
    class IntActions(gym.Env):
        observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)
        action_space = gym.spaces.Box(-2, 2, (3,), np.int64)

        def reset(self, *, seed=None, options=None):
            return np.zeros(1, np.float32), {}

        def step(self, action):
            self.last = action
            return np.zeros(1, np.float32), 0.0, False, False, {}

    e = IntActions()
    if per_env:
        env = fastrl.Env.from_python(e)
        env.reset(seed=0)
        env.step(np.array([0.9, -1.6, 2.0]))
    else:
        env = fastrl.VecEnv.from_python([e])
        env.reset(seed=0)
        env.step(np.array([[0.9, -1.6, 7.0]]))
        e = env._python_envs[0]
    assert e.last.dtype == np.int64
    assert e.last.tolist() == [1, -2, 2]


def test_exception_in_python_env_is_reraised_with_its_traceback():
    env = fastrl.Env.from_python(Walker(fail_at=3))
    env.reset(seed=0)
    env.step(0)
    env.step(0)
    with pytest.raises(ValueError, match="walker failed at step 3") as ei:
        env.step(0)
    tb = "".join(traceback.format_exception(ei.value))
    assert "in step" in tb and "raise self.exc" in tb  # the env's own frame
    notes = getattr(ei.value, "__notes__", [])
    assert any("FRL_ERR_CALLBACK" in n and "env 0" in n for n in notes), notes
    with pytest.raises(fastrl.Error) as e2:  # the episode counts as ended
        env.step(0)
    assert e2.value.status == Status.ERR_STATE
    env.reset(seed=1)
    env.step(0)


def test_bad_values_from_python_envs():
    class Bad(gym.Env):
        observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def __init__(self, mode):
            self.mode = mode

        def reset(self, *, seed=None, options=None):
            return np.zeros(2, np.float32), {}

        def step(self, action):
            if self.mode == "nan":
                return np.array([0, np.nan], np.float32), 0.0, False, False, {}
            if self.mode == "shape":
                return np.zeros(3, np.float32), 0.0, False, False, {}
            if self.mode == "reward":
                return np.zeros(2, np.float32), float("inf"), False, False, {}
            if self.mode == "transposed":  # the right size, read scrambled if taken
                return np.zeros((2, 1), np.float32), 0.0, False, False, {}
            if self.mode == "none":
                return np.zeros(2, np.float32), None, False, False, {}
            return np.zeros(2, np.float32), 0.0, False, {}  # the old 4-tuple API

    expect = {"nan": Status.ERR_NONFINITE, "shape": Status.ERR_SIZE,
              "transposed": Status.ERR_SIZE, "reward": Status.ERR_NONFINITE,
              "old": Status.ERR_INVALID_ARGUMENT}
    for mode, status in expect.items():
        env = fastrl.Env.from_python(Bad(mode))
        env.reset(seed=0)
        with pytest.raises(fastrl.Error) as ei:
            env.step(0)
        assert ei.value.status == status, (mode, ei.value)
    # An observation of complex numbers or text: a TypeError, not its real part or a
    # number parsed from the text.
    class Odd(Bad):
        def reset(self, *, seed=None, options=None):
            return np.array(self.mode), {}

    for odd in ([1 + 5j, 2 - 3j], ["0.5", "0"]):
        with pytest.raises(TypeError, match="observation must be numbers"):
            fastrl.Env.from_python(Odd(odd)).reset(seed=0)
    # A discrete observation that float32 would round to an index (2.0000001 to 2) is
    # refused; 2.5, which stays a fraction, is the library's to refuse, as before.
    class Near(gym.Env):
        observation_space = gym.spaces.Discrete(5)
        action_space = gym.spaces.Discrete(2)

        def __init__(self, value):
            self.value = value

        def reset(self, *, seed=None, options=None):
            return self.value, {}

    for value in (2.0000001, 2.5):
        with pytest.raises(fastrl.Error) as ei:
            fastrl.Env.from_python(Near(value)).reset(seed=0)
        assert ei.value.status == Status.ERR_RANGE and str(value) in ei.value.message
    # A reward that is no number is the env's TypeError in both modes, not a NaN.
    for per_env in (False, True):
        v = fastrl.VecEnv.from_python([Bad("none")], per_env=per_env)
        v.reset(seed=0)
        with pytest.raises(TypeError):
            v.step(np.zeros(1, np.int32))


def test_unsupported_spaces_are_refused_clearly():
    class DictObs:
        observation_space = gym.spaces.Dict({"a": gym.spaces.Discrete(2)})
        action_space = gym.spaces.Discrete(2)

        def reset(self, seed=None):
            pass

        def step(self, a):
            pass

    with pytest.raises(fastrl.Error) as ei:
        fastrl.Env.from_python(DictObs())
    assert ei.value.status == Status.ERR_UNSUPPORTED and "Flatten" in ei.value.message
    e = DictObs()
    e.observation_space = gym.spaces.Discrete(2**24 + 1)  # indices are float32: n <= 2^24
    with pytest.raises(fastrl.Error) as ei:
        fastrl.VecEnv.from_python([e])
    assert ei.value.status == Status.ERR_RANGE and "2^24" in ei.value.message
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Env.from_python(object.__new__(type("NoSpaces", (), {
            "reset": lambda self, seed=None: 0, "step": lambda self, a: 0})))
    assert ei.value.status == Status.ERR_NULL
    with pytest.raises(TypeError):
        fastrl.VecEnv.from_python([object()])
    with pytest.raises(fastrl.Error):
        fastrl.VecEnv.from_python([])


def test_duck_typed_env_with_plain_reset():
    class Plain:  # not a gymnasium.Env; reset returns obs alone
        def reset(self, seed=None):
            self.t = 0
            return [0.0]

        def step(self, a):
            self.t += 1
            return [float(self.t)], 1.0, self.t >= 3, False, {}

    v = fastrl.VecEnv.from_python([Plain(), Plain()],
                                  observation_space=fastrl.spaces.Box(-10, 10, (1,)),
                                  action_space=fastrl.spaces.Discrete(2))
    obs, _ = v.reset(seed=0)
    assert obs.tolist() == [[0.0], [0.0]]
    for _ in range(3):
        obs, rew, term, trunc, _ = v.step([0, 1])
    assert term.all() and v.episode_returns.tolist() == [3.0, 3.0]


@pytest.mark.parametrize("threads", [1, 2])
def test_batch_and_per_env_modes_agree(threads):
    n = 6
    a = fastrl.VecEnv.from_python([Walker for _ in range(n)], threads=threads,
                                  max_episode_steps=20)
    b = fastrl.VecEnv.from_python([Walker() for _ in range(n)], per_env=True,
                                  threads=threads, max_episode_steps=20)
    oa, _ = a.reset(seed=9)
    ob, _ = b.reset(seed=9)
    assert np.array_equal(oa, ob)
    for k in range(200):
        acts = random_actions(a.single_action_space, n, k)
        ra, rb = a.step(acts), b.step(acts)
        assert all(np.array_equal(x, y) for x, y in zip(ra[:4], rb[:4])), k
    assert a.total_episodes == b.total_episodes > 10
    # per_env: the library called Python from its pool threads too (GIL taken by ctypes)
    main = threading.get_ident()
    if threads == 1:
        assert set().union(*(w.threads for w in b._python_envs)) == {main}
    assert set().union(*(w.threads for w in a._python_envs)) == {main}  # batch mode
    envs = b._python_envs
    a.close()
    b.close()
    assert all(w.closed for w in envs)


def test_per_env_callbacks_run_on_the_pool_threads():
    """per_env=True: the library calls Python from its worker threads too (ctypes takes
    the GIL there). Each step sleeps, releasing the GIL, so the worker (even a parked
    one, ~2 ms to wake) gets tasks while the calling thread sleeps."""
    import time

    class Slow(Walker):
        def step(self, action):
            time.sleep(0.004)
            return super().step(action)

    v = fastrl.VecEnv.from_python([Slow for _ in range(4)], per_env=True, threads=2)
    v.reset(seed=0)
    for _ in range(8):
        v.step(np.ones(4, np.int32))
    used = set().union(*(w.threads for w in v._python_envs))
    assert used - {threading.get_ident()}, used


def test_vec_exception_names_the_lowest_env_and_env_recovers():
    for per_env in (False, True):
        envs = [Walker(), Walker(), Walker(fail_at=2), Walker(fail_at=2, exc=KeyError)]
        v = fastrl.VecEnv.from_python(envs, per_env=per_env, threads=2)
        v.reset(seed=0)
        v.step([1, 1, 1, 1])
        with pytest.raises(ValueError, match="failed at step 2") as ei:
            v.step([1, 1, 1, 1])
        notes = " ".join(getattr(ei.value, "__notes__", []))
        assert "env 2" in notes and "FRL_ERR_CALLBACK" in notes
        if per_env:
            # Every env ran; the library reports the lowest failing one, marks the
            # failed envs, and resets them on the next step.
            assert "1 other env(s) failed too" in notes
            assert [w.steps for w in envs] == [2, 2, 2, 2]
            v.step([1, 1, 1, 1])
            assert v.reset_steps.tolist() == [False, False, True, True]
        else:
            # One batch call: it stops at the first exception, so envs after it have
            # not stepped, and the library keeps no statistics of that step.
            assert [w.steps for w in envs] == [2, 2, 2, 1]
            with pytest.raises(KeyError, match="failed at step 2"):
                v.step([1, 1, 1, 1])  # env 3's turn to fail
            v.step([1, 1, 1, 1])
            assert [w.steps for w in envs] == [4, 4, 4, 3]


def test_keyboard_interrupt_inside_an_env_reaches_the_caller():
    v = fastrl.VecEnv.from_python([Walker(fail_at=1, exc=KeyboardInterrupt)])
    v.reset(seed=0)
    with pytest.raises(KeyboardInterrupt):
        v.step([0])


class World:
    """A numpy-vectorised world for from_batch: agent i moves on a line."""

    def __init__(self, fail=False):
        self.fail = fail
        self.calls = 0

    def reset(self, seeds, obs):
        assert not seeds.flags.writeable and seeds.dtype == np.uint64
        obs[:, 0] = (seeds % 7).astype(np.float32)
        obs[:, 1] = 0

    def step(self, actions, reset_mask, seeds, obs, rewards, terminated, truncated):
        self.calls += 1
        if self.fail and self.calls == 2:
            raise RuntimeError("world broke")
        live = reset_mask == 0
        obs[live, 1] += np.where(actions[live] == 1, 1.0, -1.0)
        rewards[live] = obs[live, 1]
        terminated[live] = np.abs(obs[live, 1]) >= 3
        r = ~live
        obs[r, 0] = (seeds[r] % 7).astype(np.float32)
        obs[r, 1] = 0


def test_from_batch_world():
    v = fastrl.VecEnv.from_batch(World(), 5, fastrl.spaces.Box(-10, 10, (2,)),
                                 gym.spaces.Discrete(2, dtype=np.int32))
    obs, _ = v.reset(seed=4)
    assert obs.shape == (5, 2) and (obs[:, 1] == 0).all()
    for _ in range(3):
        obs, rew, term, trunc, _ = v.step(np.ones(5, np.int32))
    assert term.all() and rew.tolist() == [3.0] * 5
    assert v.episode_returns.tolist() == [6.0] * 5 and v.episode_lengths.tolist() == [3] * 5
    obs, rew, term, *_ = v.step(np.ones(5, np.int32))
    assert v.reset_steps.all() and (obs[:, 1] == 0).all() and (rew == 0).all()
    bad = fastrl.VecEnv.from_batch(World(fail=True), 2, fastrl.spaces.Box(-9, 9, (2,)),
                                   fastrl.spaces.Discrete(2))
    bad.reset(seed=0)
    bad.step([0, 1])
    with pytest.raises(RuntimeError, match="world broke"):
        bad.step([0, 1])
    with pytest.raises(fastrl.Error) as ei:
        fastrl.VecEnv.from_batch(World(), 0, fastrl.spaces.Box(-9, 9, (2,)),
                                 fastrl.spaces.Discrete(2))
    assert ei.value.status == Status.ERR_RANGE


class Closable(Walker):
    made = []

    def __init__(self):
        super().__init__()
        Closable.made.append(self)


def test_envs_made_for_a_failed_from_python_are_closed():
    def broken_maker():
        raise OSError("no display")

    passed = Walker()
    for envs, options in (([Closable, Closable], {"no_such_key": 1}),
                          ([Closable, passed], {"runtime": 5}),
                          ([Closable, broken_maker], {})):
        Closable.made = []
        with pytest.raises((fastrl.Error, TypeError, OSError)):
            fastrl.VecEnv.from_python(envs, **options)
        assert Closable.made and all(e.closed for e in Closable.made)
        assert not passed.closed  # the caller's own env stays theirs


class EndsThenBreaks:
    """Agent 0's episode ends on the first step, and the world then raises: the failed
    step leaves terminated[0] = 1, yet the library steps agent 0 next (no autoreset)."""

    def __init__(self):
        self.actions = []

    def reset(self, seeds, obs):
        obs[:] = 0

    def step(self, actions, reset_mask, seeds, obs, rewards, terminated, truncated):
        self.actions.append(actions.tolist())
        obs[:] = 0
        terminated[:] = [1, 0]
        if len(self.actions) == 1:
            raise RuntimeError("world broke")


def test_a_wide_action_after_a_failed_step_is_refused_not_stepped_as_0():
    world = EndsThenBreaks()
    v = fastrl.VecEnv.from_batch(world, 2, fastrl.spaces.Box(-1, 1, (2,)),
                                 fastrl.spaces.Discrete(2))
    v.reset(seed=0)
    with pytest.raises(RuntimeError, match="world broke"):
        v.step([0, 0])
    assert v.terminations.tolist() == [True, False]  # what the world wrote
    with pytest.raises(fastrl.Error) as ei:  # env 0 is stepped, not reset: refused
        v.step(np.array([2**40, 1], np.int64))
    assert ei.value.status == Status.ERR_RANGE and "env 0" in ei.value.message
    assert len(world.actions) == 1  # the world was not stepped with action 0
    v.step(np.array([1, 1], np.int64))
    assert world.actions[-1] == [1, 1]


def test_a_wide_action_after_a_failed_evaluate_is_refused_not_stepped_as_0():
    world = EndsThenBreaks()
    v = fastrl.VecEnv.from_batch(world, 2, fastrl.spaces.Box(-1, 1, (2,)),
                                 fastrl.spaces.Discrete(2))
    policy = fastrl.Policy(v.single_observation_space, v.single_action_space)
    v.reset(seed=0)
    with pytest.raises(RuntimeError, match="world broke"):
        fastrl.evaluate(policy, v, 1)
    assert v.terminations.tolist() == [True, False]
    steps = len(world.actions)
    with pytest.raises(fastrl.Error) as ei:
        v.step(np.array([2**40, 1], np.int64))
    assert ei.value.status == Status.ERR_RANGE and "env 0" in ei.value.message
    assert len(world.actions) == steps


@pytest.mark.parametrize("per_env", [False, True])
def test_a_refused_step_from_a_callback_leaves_the_running_steps_actions(per_env):
    """VecEnv.step wrote its actions into the library's action array before asking to
    run, so a step called from an env's own step (refused: one runs) overwrote the
    actions of the running step, and the envs stepped after it got them (here 4, 4
    instead of 2, 3), while the error said that nothing was done."""
    box = {}

    class Reentrant(gym.Env):
        observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)
        action_space = gym.spaces.Discrete(5)

        def __init__(self, i):
            self.i, self.got = i, []

        def reset(self, *, seed=None, options=None):
            return np.zeros(1, np.float32), {}

        def step(self, action):
            self.got.append(action)
            if self.i == 0:
                with pytest.raises(fastrl.Error) as ei:
                    box["venv"].step(np.full(3, 4, np.int32))
                box["status"] = ei.value.status
                with pytest.raises(fastrl.Error):  # a bad one is refused the same way
                    box["venv"].step(np.full(2, 4, np.int32))
            return np.zeros(1, np.float32), 0.0, False, False, {}

    envs = [Reentrant(i) for i in range(3)]
    venv = box["venv"] = fastrl.VecEnv.from_python(envs, per_env=per_env,
                                                   runtime=fastrl.Runtime(threads=1))
    venv.reset(seed=0)
    venv.step(np.array([1, 2, 3], np.int32))
    assert box["status"] == Status.ERR_STATE
    assert [e.got for e in envs] == [[1], [2], [3]]
    assert venv.actions.tolist() == [1, 2, 3]
    venv.actions[:] = [0, 4, 0]  # the zero-copy path is admitted the same way
    venv.step(venv.actions)
    assert [e.got[-1] for e in envs] == [0, 4, 0]


def test_refused_calls_from_a_callback_leave_the_generators_and_actions():
    """reset, step and evaluate reseeded (seed=s) or drew from (seed=None) the env's
    generator, and Env.step wrote its action, before asking to run: a call refused
    from the env's own callback (ERR_STATE, "nothing was done") still changed them."""
    box = {}

    class Reentrant(gym.Env):
        observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)
        action_space = gym.spaces.Box(-1, 1, (1,), np.float32)

        def reset(self, *, seed=None, options=None):
            return np.zeros(1, np.float32), {}

        def step(self, action):
            target = box["target"]
            before = target.np_random.bit_generator.state
            calls = [lambda: target.reset(seed=5), lambda: target.reset()]
            if isinstance(target, fastrl.VecEnv):
                calls.append(lambda: fastrl.evaluate(box["policy"], target, 1, seed=None))
                calls.append(lambda: box["population"].evaluate(target, seed=None))
            else:
                calls.append(lambda: target.step(np.array([0.75], np.float32)))
            for call in calls:
                with pytest.raises(fastrl.Error) as ei:
                    call()
                assert ei.value.status == Status.ERR_STATE
            box["unchanged"] = target.np_random.bit_generator.state == before
            box["action"] = float(np.asarray(action).reshape(-1)[0])
            return np.zeros(1, np.float32), 0.0, False, False, {}

    env = box["target"] = fastrl.Env.from_python(Reentrant())
    env.reset(seed=1)
    env.step(np.array([0.25], np.float32))
    assert box["unchanged"] and box["action"] == 0.25
    assert env._act_arr.tolist() == [0.25]

    venv = box["target"] = fastrl.VecEnv.from_python([Reentrant(), Reentrant()],
                                                     runtime=fastrl.Runtime(threads=1))
    box["policy"] = fastrl.Policy(venv.single_observation_space, venv.single_action_space)
    box["population"] = fastrl.Population(box["policy"], 2)
    venv.reset(seed=1)
    venv.step(np.full((2, 1), 0.5, np.float32))
    assert box["unchanged"] and box["action"] == 0.5


def test_a_world_exception_is_not_noted_as_env_0s():
    """A batch world steps every agent in one call, so its exception is no env's; the
    note used to say "raised by the Python callback of env 0" (the world's callbacks
    report index 0). It names the world now, in step, reset and train."""
    bad = fastrl.VecEnv.from_batch(World(fail=True), 3, fastrl.spaces.Box(-9, 9, (2,)),
                                   fastrl.spaces.Discrete(2))
    bad.reset(seed=0)
    bad.step([0, 1, 0])
    with pytest.raises(RuntimeError, match="world broke") as ei:
        bad.step([0, 1, 0])
    notes = " ".join(ei.value.__notes__)
    assert "raised by the batch world (World) during step" in notes, notes
    assert "env 0" not in notes
    t = fastrl.Trainer(fastrl.VecEnv.from_batch(World(fail=True), 2,
                                                fastrl.spaces.Box(-9, 9, (2,)),
                                                fastrl.spaces.Discrete(2)),
                       rollout=8, minibatches=1, epochs=1)
    with pytest.raises(RuntimeError, match="world broke") as ei:
        t.train(64)
    assert any("batch world (World) during train" in n for n in ei.value.__notes__)


def test_views_a_world_keeps_stay_valid():
    """A world that keeps the views it was given (against the contract's advice) or an
    exception that holds them never reads freed memory: the views own the vec env."""
    import weakref
    from conftest import collect, touch

    class Keeper(World):
        def step(self, actions, reset_mask, seeds, obs, rewards, terminated, truncated):
            self.kept = (obs, rewards, actions)
            super().step(actions, reset_mask, seeds, obs, rewards, terminated, truncated)

    k = Keeper()
    v = fastrl.VecEnv.from_batch(k, 64, fastrl.spaces.Box(-9, 9, (2,)),
                                 fastrl.spaces.Discrete(2))
    v.reset(seed=0)
    v.step(np.ones(64, np.int32))
    h = weakref.ref(v._h)
    v.close()
    del v
    collect()
    assert h() is not None  # the kept views hold it
    for a in k.kept:
        touch(a)
    assert (k.kept[0][:, 1] == 1).all()
    del k.kept, a
    collect()
    assert h() is None

    v = fastrl.VecEnv.from_batch(World(fail=True), 8, fastrl.spaces.Box(-9, 9, (2,)),
                                 fastrl.spaces.Discrete(2))
    v.reset(seed=0)
    v.step(np.zeros(8, np.int32))
    try:
        v.step(np.zeros(8, np.int32))
    except RuntimeError as e:
        err = e
    h = weakref.ref(v._h)
    v.close()
    del v
    collect()
    frame_obs = err.__traceback__.tb_next
    while frame_obs.tb_next is not None:
        frame_obs = frame_obs.tb_next
    obs = frame_obs.tb_frame.f_locals["obs"]  # the world's frame, as a debugger sees it
    touch(obs)
    assert h() is not None
    del err, frame_obs, obs
    collect()
    assert h() is None


class _Keeper(World):
    """A world that keeps the views it is given (self.obs = obs), reads them when it
    goes, and optionally holds the VecEnv stepping it (``venv``: a cycle)."""

    alive_at_del = []

    def reset(self, seeds, obs):
        self.obs = obs
        super().reset(seeds, obs)

    def step(self, actions, reset_mask, seeds, obs, rewards, terminated, truncated):
        self.kept = (obs, rewards, actions, seeds)
        super().step(actions, reset_mask, seeds, obs, rewards, terminated, truncated)

    def __del__(self):
        from conftest import touch
        _Keeper.alive_at_del.append(fastrl._owner_of(self.obs).alive)
        touch(self.obs)  # under ASan: a use-after-free would abort here


@pytest.mark.parametrize("how", ["close", "drop", "cycle", "trainer"])
def test_a_world_keeping_its_views_is_freed(how):
    """The callbacks reach the world weakly, so the views it keeps (each owns the vec
    env's handle; numpy arrays are not tracked by the garbage collector, so a cycle
    through one is never collected) do not keep the C object forever: it is destroyed
    once the world and its views go, after the world's __del__ (which still reads
    them). A trainer keeps the world it steps while it lives."""
    import weakref
    from conftest import collect
    _Keeper.alive_at_del.clear()
    k = _Keeper()
    v = fastrl.VecEnv.from_batch(k, 8, fastrl.spaces.Box(-9, 9, (2,)),
                                 fastrl.spaces.Discrete(2), runtime=fastrl.Runtime(threads=1))
    h, w = weakref.ref(v._h), weakref.ref(k)
    if how == "trainer":
        t = fastrl.Trainer(v, rollout=8, minibatches=1, epochs=1)
        del v, k
        collect()
        assert w() is not None  # the trainer's
        t.train(64)
        assert w().calls > 0
        del t
    else:
        v.reset(seed=0)
        v.step(np.ones(8, np.int32))
        if how == "close":
            v.close()
        if how == "cycle":
            k.venv = v
        del v, k
    collect()
    assert w() is None and h() is None  # the C vec env was destroyed
    assert _Keeper.alive_at_del == [True]  # and not before the world went


def test_python_envs_holding_their_wrapper_are_freed():
    """Python envs that hold the fastrl object stepping them (a cycle through the
    callbacks) are collected with it: the C object does not leak."""
    import weakref
    from conftest import collect
    for make in (lambda o: fastrl.Env.from_python(_ClosesItsWrapper(o)),
                 lambda o: fastrl.VecEnv.from_python([_ClosesItsWrapper(o)] * 2),
                 lambda o: fastrl.VecEnv.from_python([_ClosesItsWrapper(o)] * 2,
                                                     per_env=True)):
        owner = []
        e = make(owner)
        owner.append(e)
        e.reset(seed=0)
        h = weakref.ref(e._h)
        del e, owner
        collect()
        assert h() is None


def test_exceptions_belong_to_the_call_that_raised_them():
    """Per-env callbacks share one vec env, but an exception goes to the library call
    it was raised in: a call refused because another runs (from a callback of that
    call, or from a second thread) raises FRL_ERR_STATE, neither taking the running
    call's exception nor leaving one behind."""
    class E(Walker):
        def __init__(self, i, box):
            super().__init__()
            self.i, self.box = i, box

        def step(self, action):
            if self.box.get("armed"):
                if self.i == 0:
                    raise ValueError("env 0 broke")
                self.box["nested"] = self.box["call"]()
            return super().step(action)

    def attempt(venv):
        try:
            venv.step([1, 1])
        except BaseException as e:  # noqa: B902
            return e

    def from_thread(venv):  # the same attempt on another thread, while the call runs
        out = []
        t = threading.Thread(target=lambda: out.append(attempt(venv)))
        t.start()
        t.join()
        return out[0]

    # threads=1: env 0's step runs (and fails) before env 1's
    for call in (attempt, from_thread):
        box = {}
        v = fastrl.VecEnv.from_python([E(0, box), E(1, box)], per_env=True,
                                      runtime=fastrl.Runtime(threads=1))
        box["call"] = lambda: call(v)
        v.reset(seed=0)
        v.step([1, 1])
        box["armed"] = True
        with pytest.raises(ValueError, match="env 0 broke") as ei:
            v.step([1, 1])
        assert any("env 0 during step" in n for n in ei.value.__notes__)
        nested = box["nested"]
        assert isinstance(nested, fastrl.Error) and nested.status == Status.ERR_STATE, \
            repr(nested)
        assert "already being reset or stepped" in nested.message
        box["armed"] = False
        v.step([1, 1])  # nothing left behind
        v.close()


class _ClosesItsWrapper(gym.Env):
    """Closes the fastrl object stepping it (held in ``owner``) at its third step."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, owner):
        self.owner = owner
        self.t = 0

    def reset(self, seed=None, options=None):
        self.t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.t == 3 and self.owner:
            self.owner.pop().close()
        return np.full(4, 0.5, np.float32), 1.0, self.t >= 5, False, {}


def test_close_from_inside_a_call_only_lets_go():
    # A callback that closes the wrapper whose call is running (its only reference):
    # the call finishes on the C object it holds, which is destroyed afterwards.
    owner = []
    env = fastrl.Env.from_python(_ClosesItsWrapper(owner), runtime=fastrl.Runtime(threads=1))
    owner.append(env)
    env.reset(seed=0)
    env.step(0)
    env.step(0)
    obs, reward, *_ = env.step(0)  # closes env inside
    assert obs.tolist() == [0.5] * 4 and reward == 1.0 and env.closed
    del env
    for per_env in (False, True):  # per env: the other envs' callbacks run after it
        owner = []
        venv = fastrl.VecEnv.from_python([lambda: _ClosesItsWrapper(owner)] * 4,
                                         per_env=per_env,
                                         runtime=fastrl.Runtime(threads=1 + per_env))
        owner.append(venv)
        policy = fastrl.Policy(venv.single_observation_space, venv.single_action_space,
                               threads=1)
        returns = fastrl.evaluate(policy, venv, episodes=8)
        assert returns.tolist() == [5.0] * 8 and venv.closed



class _ClosesAtReset(_ClosesItsWrapper):
    def reset(self, seed=None, options=None):
        if self.owner:
            self.owner.pop().close()
        return super().reset(seed=seed)


@pytest.mark.parametrize("per_env", [False, True])
@pytest.mark.parametrize("copy", [False, True])
def test_vec_env_closed_inside_its_step_returns_that_step(per_env, copy):
    # VecEnv.step and reset return what the library wrote (views that hold it, or their
    # copies), not the None the closed wrapper keeps (nor an AttributeError for copy=True)
    owner = []
    venv = fastrl.VecEnv.from_python([_ClosesItsWrapper(owner)], per_env=per_env, copy=copy)
    owner.append(venv)
    venv.reset(seed=0)
    venv.step(np.zeros(1, np.int64))
    venv.step(np.zeros(1, np.int64))
    obs, rew, term, trunc, info = venv.step(np.zeros(1, np.int64))  # closes venv inside
    assert venv.closed and obs.tolist() == [[0.5] * 4] and rew.tolist() == [1.0]
    assert term.tolist() == [False] and trunc.tolist() == [False] and info == {}
    owner = []
    venv = fastrl.VecEnv.from_python([_ClosesAtReset(owner)], per_env=per_env, copy=copy)
    owner.append(venv)
    obs, info = venv.reset(seed=0)
    assert venv.closed and obs.tolist() == [[0.0] * 4] and info == {}


def test_a_wide_action_after_a_failed_population_evaluate_is_refused_not_stepped_as_0():
    """Population.evaluate left the flags marked as telling which envs autoreset, as
    fastrl.evaluate no longer does: after its failed step, 2**40 for env 0 (stepped,
    not reset) was narrowed to 0 and stepped."""
    world = EndsThenBreaks()
    v = fastrl.VecEnv.from_batch(world, 2, fastrl.spaces.Box(-1, 1, (2,)),
                                 fastrl.spaces.Discrete(2))
    policy = fastrl.Policy(v.single_observation_space, v.single_action_space)
    v.reset(seed=0)
    with pytest.raises(RuntimeError, match="world broke"):
        fastrl.Population(policy, 2).evaluate(v)
    assert v.terminations.tolist() == [True, False]
    steps = len(world.actions)
    with pytest.raises(fastrl.Error) as ei:
        v.step(np.array([2**40, 1], np.int64))
    assert ei.value.status == Status.ERR_RANGE and "env 0" in ei.value.message
    assert len(world.actions) == steps
