"""VecEnv: gymnasium's vector API, next-step autoreset, zero-copy views and their
lifetime (the lifetime tests are the ones run under AddressSanitizer too)."""

import weakref

import gymnasium as gym
import numpy as np
import pytest

import fastrl
from fastrl import Status
from fastrl._lib import lib
from conftest import collect, random_actions, touch


def test_vector_api_and_spaces():
    v = fastrl.make_vec("CartPole-v1", num_envs=8)
    assert isinstance(v, gym.vector.VectorEnv)
    assert v.num_envs == 8
    assert v.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    assert v.single_observation_space.shape == (4,)
    assert v.observation_space.shape == (8, 4)
    assert isinstance(v.action_space, gym.spaces.MultiDiscrete)
    assert v.action_space.dtype == np.int32
    obs, info = v.reset(seed=1)
    assert obs.shape == (8, 4) and obs.dtype == np.float32 and info == {}
    assert obs in v.observation_space
    obs, rew, term, trunc, info = v.step(v.action_space.sample())
    assert rew.shape == (8,) and rew.dtype == np.float32
    assert term.dtype == np.bool_ and trunc.dtype == np.bool_ and info == {}
    gv = gym.make_vec("fastrl/CartPole-v1", num_envs=3)
    assert isinstance(gv, fastrl.VecEnv) and gv.num_envs == 3
    assert gv.spec.id == "fastrl/CartPole-v1"
    pv = fastrl.make_vec("Pendulum-v1", num_envs=5)
    assert pv.action_space.shape == (5, 1) and pv.actions.dtype == np.float32


def test_views_are_the_library_arrays():
    v = fastrl.make_vec("CartPole-v1", num_envs=16)
    o1, _ = v.reset(seed=0)
    o2, r2, te2, tr2, _ = v.step(np.ones(16, np.int32))
    o3, r3, te3, tr3, _ = v.step(np.zeros(16, np.int64))
    L, p = lib(), v._ptr
    assert o1 is o2 is o3 and r2 is r3 and te2 is te3 and tr2 is tr3
    assert o1.ctypes.data == L.vec_env_observations(p)
    assert r2.ctypes.data == L.vec_env_rewards(p)
    assert te2.ctypes.data == L.vec_env_terminated(p)
    assert tr2.ctypes.data == L.vec_env_truncated(p)
    assert v.actions.ctypes.data == L.vec_env_actions(p)
    assert v.reset_steps.ctypes.data == L.vec_env_reset_steps(p)
    assert v.episode_returns.ctypes.data == L.vec_env_episode_returns(p)
    assert v.episode_lengths.ctypes.data == L.vec_env_episode_lengths(p)
    for a in (o1, r2, te2, tr2, v.reset_steps, v.episode_returns):
        assert not a.flags.writeable and not a.flags.owndata
        with pytest.raises(ValueError):
            a[0] = 0
    assert v.actions.flags.writeable
    # The views see every step: the library writes them in place.
    before = o3.copy()
    v.step(np.ones(16, np.int32))
    assert not np.array_equal(before, o3)


def test_in_place_actions_skip_the_copy():
    a = fastrl.make_vec("CartPole-v1", num_envs=32)
    b = fastrl.make_vec("CartPole-v1", num_envs=32)
    a.reset(seed=5)
    b.reset(seed=5)
    for k in range(50):
        acts = random_actions(a.single_action_space, 32, k)
        a.actions[:] = acts
        ra = a.step(a.actions)
        rb = b.step(acts)
        assert all(np.array_equal(x, y) for x, y in zip(ra[:4], rb[:4]))


def test_copy_mode_returns_fresh_arrays():
    v = fastrl.make_vec("CartPole-v1", num_envs=4, copy=True)
    o1, _ = v.reset(seed=0)
    o2, r2, *_ = v.step(np.zeros(4, np.int32))
    assert o1 is not o2 and o2.flags.owndata and o2.flags.writeable
    assert not np.shares_memory(o2, v.observations)
    assert np.array_equal(o2, v.observations)


def test_next_step_autoreset_and_episode_statistics():
    n = 64
    v = fastrl.make_vec("CartPole-v1", num_envs=n)
    v.reset(seed=3)
    acc = np.zeros(n)
    ended_seen = reset_seen = 0
    prev_done = np.zeros(n, bool)
    for k in range(300):
        obs, rew, term, trunc, _ = v.step(random_actions(v.single_action_space, n, k))
        rs = v.reset_steps
        # Exactly the envs that ended on the previous step reset on this one.
        assert np.array_equal(rs, prev_done)
        assert np.all(rew[rs] == 0) and not term[rs].any() and not trunc[rs].any()
        acc[~rs] += rew[~rs]
        done = term | trunc
        if done.any():
            ended_seen += int(done.sum())
            np.testing.assert_allclose(v.episode_returns[done], acc[done])
            assert np.array_equal(v.episode_lengths[done], acc[done].astype(np.int32))
            acc[done] = 0
        reset_seen += int(rs.sum())
        prev_done = done.copy()
    assert ended_seen > 50 and reset_seen > 50
    assert v.total_episodes == ended_seen and v.total_steps == 300 * n


def test_truncation_by_time_limit():
    v = fastrl.make_vec("Pendulum-v1", num_envs=3, max_episode_steps=4)
    v.reset(seed=0)
    z = np.zeros((3, 1), np.float32)
    flags = [v.step(z)[3].copy() for _ in range(5)]
    assert [f.all() for f in flags] == [False, False, False, True, False]
    assert v.reset_steps.all()  # the fifth step reset them


def test_seeds_and_thread_counts_give_the_same_results(rt, rt1):
    a = fastrl.make_vec("Acrobot-v1", num_envs=200, runtime=rt)
    b = fastrl.make_vec("Acrobot-v1", num_envs=200, runtime=rt1)
    oa, _ = a.reset(seed=11)
    ob, _ = b.reset(seed=11)
    assert np.array_equal(oa, ob)
    for k in range(100):
        acts = random_actions(a.single_action_space, 200, k)
        ra, rb = a.step(acts), b.step(acts)
        assert all(np.array_equal(x, y) for x, y in zip(ra[:4], rb[:4]))
    c = fastrl.make_vec("Acrobot-v1", num_envs=200)
    assert not np.array_equal(c.reset(seed=12)[0], oa)
    c.reset()  # a seed drawn from the vec env's own generator
    c.reset(seed=np.uint64(2**64 - 1))


def test_bad_actions_and_arguments():
    v = fastrl.make_vec("CartPole-v1", num_envs=4)
    with pytest.raises(fastrl.Error) as ei:
        v.step(np.zeros(4, np.int32))
    assert ei.value.status == Status.ERR_STATE  # before reset
    v.reset(seed=0)
    cases = [
        (np.zeros(5, np.int32), Status.ERR_SIZE),
        (np.zeros((4, 1), np.int32), Status.ERR_SIZE),
        (np.zeros(4, np.float32), Status.ERR_TYPE),
        (np.array([0, 1, 2, 0], np.int32), Status.ERR_RANGE),     # the library's check
        (np.array([0, 1, 2**32, 0], np.int64), Status.ERR_RANGE),  # would wrap to 0
        (np.array([0, -1, 1, 0], np.int64), Status.ERR_RANGE),
    ]
    for acts, status in cases:
        with pytest.raises(fastrl.Error) as ei:
            v.step(acts)
        assert ei.value.status == status, (acts, ei.value)
    with pytest.raises(fastrl.Error) as ei:
        v.step(np.array([0, 0, 0, 7], np.int32))
    assert "env 3" in ei.value.message  # the library names the env
    v.step([0, 1, 1, 0])  # lists work
    for seeds in ([1, 2, 3, 4], np.arange(4)):  # one seed; env i draws (seed, i)
        with pytest.raises(fastrl.Error) as ei:
            v.reset(seed=seeds)
        assert ei.value.status == Status.ERR_UNSUPPORTED
    for seed in ("5", b"5", np.array(5)):  # not a list of seeds: not an int, as Env.reset
        with pytest.raises(TypeError, match="seed must be an int"):
            v.reset(seed=seed)
    with pytest.raises(fastrl.Error):
        v.reset(options={"a": 1})
    with pytest.raises(fastrl.Error) as ei:
        fastrl.make_vec("CartPole-v1", num_envs=0)
    assert ei.value.status == Status.ERR_RANGE
    with pytest.raises(TypeError):
        fastrl.make_vec("CartPole-v1", num_envs=2.0)
    p = fastrl.make_vec("Pendulum-v1", num_envs=2)
    p.reset(seed=0)
    with pytest.raises(fastrl.Error) as ei:
        p.step(np.array([[0.0], [np.inf]], np.float32))
    assert ei.value.status == Status.ERR_NONFINITE and "env 1" in ei.value.message
    p.step(np.zeros((2, 1)))  # float64 is converted
    # An env that autoresets on this step ignores its action, whatever the dtype (int64
    # and lists were range-checked by the binding there; int32 never was).
    for acts in (np.array([5, 2**40], np.int64), [7, -(2**40)]):
        w = fastrl.make_vec("CartPole-v1", num_envs=2, max_episode_steps=2)
        w.reset(seed=0)
        w.step([0, 0])
        w.step([0, 0])
        w.step(acts)
        assert w.reset_steps.tolist() == [True, True]
        with pytest.raises(fastrl.Error) as ei:  # not resetting now: refused
            w.step(acts)
        assert ei.value.status == Status.ERR_RANGE and "env 0" in ei.value.message


# ---------------------------------------------------------------- lifetime (ASan)


def test_views_outlive_close():
    v = fastrl.make_vec("CartPole-v1", num_envs=256)
    obs, _ = v.reset(seed=0)
    obs, rew, term, trunc, _ = v.step(np.ones(256, np.int32))
    rets, acts = v.episode_returns, v.actions
    expect = [a.copy() for a in (obs, rew, term, trunc, rets, acts)]
    handle = weakref.ref(fastrl._owner_of(obs))
    v.close()
    assert v.closed
    with pytest.raises(fastrl.Error) as ei:
        v.step(np.ones(256, np.int32))
    assert ei.value.status == Status.ERR_STATE
    with pytest.raises(fastrl.Error):
        v.actions
    del v
    collect()
    assert handle() is not None and handle().alive  # the views keep it
    for a, e in zip((obs, rew, term, trunc, rets, acts), expect):
        touch(a)  # under ASan: a use-after-free would abort here
        assert np.array_equal(a, e)
    acts[:] = 1  # still the library's (live) memory
    del rew, term, trunc, rets, acts, a, e
    collect()
    assert handle() is not None
    touch(obs)
    del obs
    collect()
    assert handle() is None  # the last view gone: the vec env was destroyed


def test_vec_env_dropped_without_close_lives_while_views_do():
    def make():
        v = fastrl.make_vec("MountainCar-v0", num_envs=64)
        o, _ = v.reset(seed=1)
        return o, weakref.ref(fastrl._owner_of(o))
    obs, handle = make()
    collect()
    assert handle() is not None
    touch(obs)
    derived = obs[3:10, 1]  # a numpy view of the view keeps it too
    del obs
    collect()
    assert handle() is not None
    touch(derived)
    del derived
    collect()
    assert handle() is None


def test_runtime_outlives_its_objects():
    r = fastrl.Runtime(threads=2)
    rh = weakref.ref(r.handle)
    v = fastrl.make_vec("CartPole-v1", num_envs=128, runtime=r)
    r.close()
    assert r.closed and "closed" in repr(r)
    with pytest.raises(fastrl.Error):
        fastrl.make_vec("CartPole-v1", runtime=r)
    del r
    collect()
    assert rh() is not None  # the vec env keeps its runtime
    v.reset(seed=0)
    for _ in range(10):
        obs = v.step(np.zeros(128, np.int32))[0]
    touch(obs)
    v.close()
    del v
    collect()
    assert rh() is not None  # obs still holds the vec env, which holds the runtime
    del obs
    collect()
    assert rh() is None


def test_sanitizer_runtime_is_really_there():
    """Under run_pytest.sh's asan/tsan modes the sanitizer runs in this process (so the
    other tests are checked by it), and the loaded library is instrumented."""
    from conftest import SANITIZER
    if not SANITIZER:
        pytest.skip("no sanitizer in this build (run_pytest.sh full)")
    import ctypes
    sym = "__asan_init" if SANITIZER == "asan" else "__tsan_init"
    assert hasattr(ctypes.CDLL(None), sym)
    with open(fastrl.library_path(), "rb") as f:
        assert sym.encode() in f.read()


def test_use_after_free_is_caught_under_asan(tmp_path):
    """The negative control: without the views' ownership, reading freed library
    memory is reported by AddressSanitizer (so the tests above would catch a
    lifetime bug)."""
    from conftest import ASAN
    if not ASAN:
        pytest.skip("only meaningful under AddressSanitizer (build-asan's python test)")
    import os
    import subprocess
    import sys
    code = (
        "import ctypes, gc, fastrl\n"
        "v = fastrl.make_vec('CartPole-v1', num_envs=64); v.reset(seed=0)\n"
        "addr = fastrl._lib.lib().vec_env_observations(v._ptr)\n"
        "v.close(); del v; gc.collect()\n"
        "buf = ctypes.create_string_buffer(1024)\n"
        "ctypes.memmove(buf, addr, 1024)\n"
        "print('not detected')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ), timeout=120)
    assert "heap-use-after-free" in r.stderr, r.stdout + r.stderr[-2000:]
    assert "not detected" not in r.stdout
