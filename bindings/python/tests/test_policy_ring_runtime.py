"""Policy, Ring and Runtime."""

import logging
import os
import weakref

import gymnasium as gym
import numpy as np
import pytest

import fastrl
from fastrl import Status
from conftest import collect, touch

OBS = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
ACT = gym.spaces.Discrete(2)


def obs_batch(n, seed=0, width=4):
    return np.random.default_rng(seed).normal(size=(n, width)).astype(np.float32)


# ---------------------------------------------------------------- Runtime


def test_runtime_properties_and_logger():
    messages = []
    r = fastrl.Runtime(threads=2, seed=77, logger=lambda lvl, msg: messages.append((lvl, msg)))
    assert (r.threads, r.seed) == (2, 77)
    assert messages == [(2, "runtime: 2 threads, seed 77, device cpu")]
    assert (r.device, r.device_note) == ("cpu", "")
    assert "threads=2" in repr(r)
    log = logging.getLogger("fastrl.test")
    records = []
    h = logging.Handler()
    h.emit = records.append
    log.addHandler(h)
    log.setLevel(logging.INFO)
    fastrl.Runtime(threads=1, logger=log)
    assert records and records[0].getMessage().startswith("runtime: 1 threads")
    quiet = []
    fastrl.Runtime(threads=1, logger=lambda *a: quiet.append(a), log_level=1)  # warnings only
    assert quiet == []
    fastrl.Runtime(threads=1, logger=lambda *a: 1 / 0)  # a failing logger is ignored
    with pytest.raises(TypeError):
        fastrl.Runtime(logger=42)
    # log_level is FRL_LOG_ERROR (0) to FRL_LOG_DEBUG (3): True, 10**20 or -1 were taken
    for bad, err in ((True, TypeError), (1.5, TypeError), (4, fastrl.Error), (-1, fastrl.Error)):
        with pytest.raises(err):
            fastrl.Runtime(threads=1, logger=lambda *a: None, log_level=bad)


def test_runtime_errors_and_default():
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Runtime(threads=5000)
    assert ei.value.status == Status.ERR_RANGE
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Runtime(lr=1e-3)
    assert ei.value.status == Status.ERR_INVALID_ARGUMENT and "train.lr" in ei.value.message
    r = fastrl.Runtime({"runtime.threads": 1})
    r.close()
    with pytest.raises(fastrl.Error) as ei:
        r.threads
    assert ei.value.status == Status.ERR_STATE
    assert fastrl.default_runtime() is fastrl.default_runtime()
    # runtime.device=cuda without a usable plugin or GPU is an error that says why; auto
    # stays on the CPU and keeps the reason.
    os.environ["FRL_CUDA_PLUGIN"] = "/nonexistent/libfastrl-cuda.so.0"
    try:
        with pytest.raises(fastrl.Error) as ei:
            fastrl.Runtime(device="cuda")
        assert ei.value.status == Status.ERR_UNSUPPORTED and "cannot be loaded" in ei.value.message
        auto = fastrl.Runtime(device="auto")
        assert auto.device == "cpu" and "cannot be loaded" in auto.device_note
    finally:
        del os.environ["FRL_CUDA_PLUGIN"]
    # threads=0: one per online core (capped at 1024)
    assert fastrl.default_runtime().threads == min(os.sysconf("SC_NPROCESSORS_ONLN"), 1024)
    with fastrl.Runtime(threads=1) as r2:
        assert not r2.closed
    assert r2.closed


def test_runtime_keys_in_a_config_make_the_objects_runtime():
    """{"runtime.seed": 5} in config= made nothing: the object's C config reads no runtime
    key, and the default runtime (seed 0, a thread per core) served silently."""
    ob, ac = gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2)
    x = [0.1, 0.2, 0.3, 0.4]
    want = fastrl.Policy(ob, ac, seed=5).forward(x)[0]
    for config in ({"runtime.seed": 5}, "runtime.seed=5", fastrl.Config({"runtime.seed": 5})):
        p = fastrl.Policy(ob, ac, config)
        assert p._runtime.seed == 5, config
        np.testing.assert_array_equal(p.forward(x)[0], want)
    t = fastrl.Trainer("CartPole-v1", {"runtime.seed": 5, "runtime.threads": 1})
    assert (t._runtime.seed, t._runtime.threads) == (5, 1)
    v = fastrl.VecEnv("CartPole-v1", 2, config="runtime.seed=4")
    assert v.runtime.seed == 4
    # a keyword wins over the config, as it does for every other key
    assert fastrl.Policy(ob, ac, {"runtime.seed": 5}, seed=6)._runtime.seed == 6
    # with runtime= given they would not apply: refused, named
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Policy(ob, ac, {"runtime.seed": 5}, runtime=fastrl.Runtime(threads=1))
    assert ei.value.status == Status.ERR_INVALID_ARGUMENT
    assert "the config's runtime.seed" in ei.value.message, ei.value.message
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Trainer(fastrl.VecEnv("CartPole-v1", 2), {"runtime.threads": 1})
    assert "shares its vec env's runtime" in ei.value.message, ei.value.message


def test_a_logger_holding_its_runtime_is_freed():
    """A logger that holds the Runtime it logs for (a cycle through the callback the
    runtime keeps) is collected with it: the runtime, and its threads, do not leak."""
    class Logger:
        def __call__(self, level, message):
            pass

    log = Logger()
    r = fastrl.Runtime(threads=2, logger=log)
    log.runtime = r
    h = weakref.ref(r.handle)
    del r, log
    collect()
    assert h() is None


def test_kept_callbacks_outlive_destroy():
    """What a handle keeps (the ctypes callbacks a C object calls, and what they use)
    is whole when its destroy function runs, which may call them: when the handle goes
    by its count, and when it goes in a cycle that the garbage collector clears."""
    import ctypes
    from fastrl._handle import Handle
    FN = ctypes.CFUNCTYPE(ctypes.c_int)
    seen = []

    class Target:
        value = None

    def callback(target):  # a closure, whose cell a collection would empty
        return FN(lambda: seen.append(target.value) or 0)

    for cycle in (False, True):
        target = Target()
        target.value = 42
        cb = callback(target)
        address = ctypes.cast(cb, ctypes.c_void_p).value

        def destroy(ptr, address=address):  # as C would: through the raw pointer
            FN(address)()
        h = Handle(1, destroy, "test", keep=[cb, target])
        if cycle:
            target.handle = h
        ref = weakref.ref(h)
        del h, cb, target
        if cycle:
            assert ref() is not None  # only the collector finds it
        collect()
        assert ref() is None
    assert seen == [42, 42]


# ---------------------------------------------------------------- Policy


def test_policy_act_batches_and_single(rt):
    p = fastrl.Policy(OBS, ACT, runtime=rt)
    assert p.num_parameters == 9155 and p.version == 0  # two 4-64-64 nets, doc/api.md
    assert p.observation_space.shape == (4,) and p.action_space.n == 2
    o = obs_batch(256)
    a = p.act(o)
    assert a.shape == (256,) and a.dtype == np.int32 and set(np.unique(a)) <= {0, 1}
    d1, d2 = p.act(o, deterministic=True), p.act(o, deterministic=True)
    assert np.array_equal(d1, d2)
    s0 = p.act(o, counter=5)
    assert np.array_equal(s0, p.act(o, counter=5))  # same stream position: same draws
    assert not np.array_equal(p.act(o, counter=5), p.act(o, counter=6))
    assert not np.array_equal(p.act(o), p.act(o))  # without counter: fresh draws
    one = p.act(o[0], deterministic=True)
    assert type(one) is int and one == d1[0]
    acts, logp, vals = p.act_with_info(o, deterministic=True)
    assert np.array_equal(acts, d1) and (logp <= 0).all() and np.isfinite(vals).all()
    a1, lp1, v1 = p.act_with_info(o[3])
    assert type(lp1) is float and type(v1) is float and abs(v1 - vals[3]) < 1e-5
    # Row i draws from stream stream_offset + i: shifting the offset shifts the rows.
    x = p.act(np.repeat(o[:1], 64, 0), counter=3, stream_offset=10)
    y = p.act(np.repeat(o[:1], 64, 0), counter=3, stream_offset=11)
    assert np.array_equal(x[1:], y[:-1])
    # A call refused for its stream_offset leaves the counter where it was.
    r = fastrl.Policy(p.observation_space, p.action_space, runtime=rt)
    with pytest.raises(fastrl.Error, match="stream_offset"):
        r.act(o, stream_offset=-1)
    with pytest.raises(TypeError, match="stream_offset"):
        r.act(o, stream_offset=1.5)
    # and so does one the library refuses (a NaN observation): it took no position
    bad = o.copy()
    bad[1, 0] = np.nan
    with pytest.raises(fastrl.Error):
        r.act(bad)
    assert np.array_equal(r.act(o), r.act(o, counter=0))


def test_policy_box_actions(rt):
    p = fastrl.Policy(gym.spaces.Box(-1, 1, (3,), np.float32),
                      gym.spaces.Box(-2, 2, (2,), np.float32), {"policy.hidden": [16]},
                      runtime=rt)
    a = p.act(obs_batch(10, width=3))
    assert a.shape == (10, 2) and a.dtype == np.float32
    single = p.act(np.zeros(3, np.float32), deterministic=True)
    assert single.shape == (2,)


def test_policy_save_load_roundtrip(rt, tmp_path):
    p = fastrl.Policy(OBS, ACT, {"policy.hidden": [32, 32], "policy.activation": "relu"},
                      runtime=rt)
    path = tmp_path / "p.frl"
    p.save(path)
    q = fastrl.Policy.load(str(path), runtime=rt)
    o = obs_batch(500, 1)
    assert q.num_parameters == p.num_parameters
    assert np.array_equal(p.act(o, counter=9), q.act(o, counter=9))
    assert np.array_equal(p.act_with_info(o, True)[2], q.act_with_info(o, True)[2])
    q.close()
    assert q.closed and "closed" in repr(q)
    with pytest.raises(fastrl.Error) as ei:
        q.act(o)
    assert ei.value.status == Status.ERR_STATE


def test_policy_errors(rt, tmp_path):
    p = fastrl.Policy(OBS, ACT, runtime=rt)
    cases = [
        (lambda: p.act(np.zeros((5, 3), np.float32)), Status.ERR_SIZE),
        (lambda: p.act(np.zeros((0, 4), np.float32)), Status.ERR_RANGE),
        (lambda: p.act(np.array([[0, 0, np.nan, 0]], np.float32)), Status.ERR_NONFINITE),
        (lambda: p.act(np.zeros(4), counter=-1), Status.ERR_RANGE),
        (lambda: p.save(tmp_path / "no" / "dir" / "p.frl"), Status.ERR_IO),
        (lambda: fastrl.Policy.load(tmp_path / "missing.frl"), Status.ERR_IO),
        (lambda: fastrl.Policy(OBS, gym.spaces.Discrete(1)), Status.ERR_RANGE),
        (lambda: fastrl.Policy(gym.spaces.Discrete(2**24 + 1), ACT), Status.ERR_RANGE),
        (lambda: fastrl.Policy(OBS, ACT, hidden=[0]), Status.ERR_RANGE),
    ]
    for fn, status in cases:
        with pytest.raises(fastrl.Error) as ei:
            fn()
        assert ei.value.status == status, ei.value
    with pytest.raises(fastrl.Error) as ei:
        p.act(np.array([[0, 0, 0, 0], [0, np.inf, 0, 0]], np.float32))
    assert "1" in ei.value.message  # names the row
    d = fastrl.Policy(gym.spaces.Discrete(2**24), gym.spaces.Discrete(2), hidden=[4])
    for near in (10000000.3, [1, 2.0000001]):  # whole numbers once float32
        with pytest.raises(fastrl.Error) as ei:
            d.act(near, deterministic=True)
        assert ei.value.status == Status.ERR_RANGE, ei.value
    assert d.act(3, deterministic=True) in (0, 1)
    for bad in (lambda: p.act(np.zeros(4, complex)),  # the imaginary part would go
                lambda: p.act(np.zeros(4), counter=1.0)):
        with pytest.raises(TypeError):
            bad()
    junk = tmp_path / "junk.frl"
    junk.write_bytes(b"definitely not a checkpoint" * 10)
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Policy.load(junk)
    assert ei.value.status == Status.ERR_FORMAT and str(junk) in ei.value.message
    good = tmp_path / "good.frl"
    p.save(good)
    data = good.read_bytes()
    trunc = tmp_path / "trunc.frl"
    trunc.write_bytes(data[: len(data) // 2])
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Policy.load(trunc)
    assert ei.value.status == Status.ERR_FORMAT


# ---------------------------------------------------------------- Ring


def test_ring_arrays_and_slots(rt):
    assert fastrl.Ring.memory_size(2, 8, 4, OBS, ACT) > 2 * 8 * 4 * 16
    r = fastrl.Ring(2, 8, 4, OBS, ACT, runtime=rt)
    assert (r.slots, r.steps, r.envs) == (2, 8, 4)
    arrays = r.arrays(0)
    assert set(arrays) == set(fastrl.RING_ARRAYS)
    assert arrays["observations"].shape == (8, 4, 4)
    assert arrays["actions"].shape == (8, 4) and arrays["actions"].dtype == np.int32
    assert arrays["terminated"].dtype == np.bool_
    assert arrays["policy_version"].shape == (8,) and arrays["policy_version"].dtype == np.uint64
    assert arrays["bootstrap_obs"].shape == (4, 4)
    assert arrays["observations"].flags.writeable
    assert not np.shares_memory(r.array("rewards", 0), r.array("rewards", 1))
    assert r.slot_state(0) == "free"
    s = r.acquire_write()
    assert s == 0 and r.slot_state(0) == "writing"
    r.array("rewards", s)[:] = 7.0
    r.commit(s)
    assert r.slot_state(0) == "ready"
    assert r.acquire_read() == 0 and r.slot_state(0) == "reading"
    assert (r.array("rewards", 0) == 7.0).all()
    r.release(0)
    assert r.slot_state(0) == "free"
    for fn, status in ((r.acquire_read, Status.ERR_STATE),
                       (lambda: r.commit(0), Status.ERR_STATE),
                       (lambda: r.release(1), Status.ERR_STATE),
                       (lambda: r.array("rewards", 2), Status.ERR_RANGE),
                       (lambda: r.array("nope"), Status.ERR_UNKNOWN_NAME),
                       (lambda: r.slot_state(5), Status.ERR_RANGE),
                       (lambda: fastrl.Ring(0, 8, 4, OBS, ACT), Status.ERR_RANGE),
                       (lambda: fastrl.Ring(1, 8, 4, OBS, gym.spaces.Discrete(3, start=1)),
                        Status.ERR_UNSUPPORTED),
                       # a size for a ring that cannot be made was given
                       (lambda: fastrl.Ring.memory_size(1, 8, 4, OBS,
                                                        gym.spaces.Discrete(3, start=1)),
                        Status.ERR_UNSUPPORTED)):
        with pytest.raises(fastrl.Error) as ei:
            fn()
        assert ei.value.status == status, ei.value
    assert r.acquire_write() == 0 and r.acquire_write() == 1
    with pytest.raises(fastrl.Error):
        r.acquire_write()  # none free


def test_ring_closes_as_the_other_wrappers_do(rt):
    """Ring had close() but neither `closed` nor the with-statement of every other
    wrapper."""
    with fastrl.Ring(2, 8, 4, OBS, ACT, runtime=rt) as r:
        assert not r.closed
        view = r.array("rewards", 0)
    assert r.closed
    view[0, 0] = 1.0  # a view keeps the ring's memory
    with pytest.raises(fastrl.Error) as ei:
        r.acquire_write()
    assert ei.value.status == Status.ERR_STATE


def test_ring_commit_and_release_of_a_non_int_slot_is_a_type_error(rt):
    """commit(None) and release(None) took the acquire path (a None slot meant 'take
    one'), handing a pointer to the C function's int32 argument: ctypes.ArgumentError,
    which is no TypeError, instead of the binding's own check."""
    r = fastrl.Ring(2, 8, 4, OBS, ACT, runtime=rt)
    s = r.acquire_write()
    for call in (r.commit, r.release):
        for bad in (None, 0.0, "0", True):
            with pytest.raises(TypeError, match="slot must be an int"):
                call(bad)
    assert r.slot_state(s) == "writing"  # nothing changed
    assert r.commit(np.int64(s)) == s and r.slot_state(s) == "ready"


def test_ring_views_outlive_the_ring(rt):
    r = fastrl.Ring(1, 16, 8, OBS, gym.spaces.Box(-1, 1, (3,), np.float32), runtime=rt)
    obs = r.array("observations")
    acts = r.array("actions")
    assert acts.shape == (16, 8, 3) and acts.dtype == np.float32
    obs[:] = 1.5
    h = weakref.ref(fastrl._owner_of(obs))
    r.close()
    del r
    collect()
    assert h() is not None
    touch(obs)
    touch(acts)
    assert (obs == 1.5).all()
    del obs, acts
    collect()
    assert h() is None


def test_objects_made_on_a_closed_runtime_wrapper_still_work():
    # Runtime.close() only lets go of the wrapper's reference (doc/python.md, Runtime):
    # objects made on it keep the C runtime, and every call on them still works,
    # those that make a vec env or a trainer on that runtime included
    with fastrl.Runtime(threads=1) as rt:
        venv = fastrl.make_vec("CartPole-v1", 4, runtime=rt)
        policy = fastrl.Policy(venv.single_observation_space, venv.single_action_space,
                               runtime=rt)
    assert rt.closed
    assert len(fastrl.evaluate(policy, "CartPole-v1", 2, num_envs=2)) == 2
    assert fastrl.Population(policy, 2).evaluate("CartPole-v1", num_envs=2).env_steps > 0
    t = fastrl.Trainer(venv, rollout=8, minibatches=1)
    assert t.runtime.threads == 1
    t.train(32)
    with pytest.raises(fastrl.Error) as ei:  # the wrapper itself stays closed
        fastrl.Policy(OBS, ACT, runtime=rt)
    assert ei.value.status == Status.ERR_STATE


def test_a_close_while_the_arguments_convert_waits_for_the_call(rt, tmp_path, monkeypatch):
    # observations converted by their __array__ and paths by their __fspath__ run Python
    # code: a close() there must not free the C object under the call that uses it (a
    # use after free): act finishes first; save and train find the object closed
    L = fastrl._lib.lib()
    seen = []

    def spy(name):
        orig = getattr(L, name)

        def call(ptr, *args):
            h = live[0]()
            seen.append(name)
            # (freed: calling the library would corrupt the heap)
            assert h is not None and h.alive, f"{name} on a destroyed object"
            return orig(ptr, *args)
        monkeypatch.setattr(L, name, call)

    live = [None]
    for name in ("policy_act", "policy_save", "population_act", "trainer_save",
                 "trainer_train"):
        spy(name)

    class Closing:
        def __init__(self, obj, value):
            self.obj, self.value = obj, value

        def __array__(self, dtype=None, copy=None):
            self.obj.close()
            return np.asarray(self.value, dtype)

        def __fspath__(self):
            self.obj.close()
            return str(self.value)

    p = fastrl.Policy(OBS, ACT, runtime=rt)
    live[0] = weakref.ref(p._h)
    p.act(Closing(p, obs_batch(3)))
    assert p.closed
    p = fastrl.Policy(OBS, ACT, runtime=rt)
    live[0] = weakref.ref(p._h)
    with pytest.raises(fastrl.Error) as ei:  # the path first: then the object is closed
        p.save(Closing(p, tmp_path / "p.frl"))
    assert ei.value.status == Status.ERR_STATE
    pop = fastrl.Population(fastrl.Policy(OBS, ACT, runtime=rt), 2)
    live[0] = weakref.ref(pop._h)
    pop.act(Closing(pop, obs_batch(3)), 1)
    t = fastrl.Trainer("CartPole-v1", num_envs=2, rollout=8, minibatches=1, runtime=rt)
    live[0] = weakref.ref(t._h)
    with pytest.raises(fastrl.Error) as ei:
        t.save(Closing(t, tmp_path / "t.frl"))
    assert ei.value.status == Status.ERR_STATE
    t = fastrl.Trainer("CartPole-v1", num_envs=2, rollout=8, minibatches=1, runtime=rt)
    live[0] = weakref.ref(t._h)
    with pytest.raises(fastrl.Error) as ei:
        t.train(16, checkpoint=Closing(t, tmp_path / "t2.frl"))
    assert ei.value.status == Status.ERR_STATE
    collect()
    assert seen == ["policy_act", "population_act"]


def test_a_runtime_closed_by_a_load_path_is_not_used(tmp_path, monkeypatch):
    """Policy.load and Trainer.load took the runtime's pointer before the path's
    __fspath__ ran: closing the runtime there destroyed it under the load."""
    fastrl.Trainer("CartPole-v1", num_envs=2, rollout=8, minibatches=1,
                   threads=1).save(tmp_path / "t.frl")
    L = fastrl._lib.lib()
    live = [None]
    for name in ("policy_load", "trainer_load"):
        def call(out, rt, *args, orig=getattr(L, name), name=name):
            h = live[0]()
            assert h is not None and h.alive, f"{name} on a destroyed runtime"
            return orig(out, rt, *args)
        monkeypatch.setattr(L, name, call)

    class ClosingPath:
        def __init__(self, rt):
            self.rt = rt

        def __fspath__(self):
            self.rt.close()
            collect()
            return str(tmp_path / "t.frl")

    for load in (fastrl.Policy.load, fastrl.Trainer.load):
        rt = fastrl.Runtime(threads=1)
        live[0] = weakref.ref(rt.handle)
        with pytest.raises(fastrl.Error) as ei:
            load(ClosingPath(rt), runtime=rt)
        assert ei.value.status == Status.ERR_STATE
