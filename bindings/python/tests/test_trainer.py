"""Trainer: training to the target, callbacks, Ctrl-C, checkpoints, Python envs."""

import os
import signal
import subprocess
import sys
import threading
import traceback
import weakref

import gymnasium as gym
import numpy as np
import pytest

import fastrl
from fastrl import Status
from conftest import PKG_ROOT, collect, touch


class Reach(gym.Env):
    """Walk on cells 0..10 to a target: +1 there, -0.05 per step elsewhere."""

    def __init__(self, fail_at=None):
        self.observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(3)
        self.fail_at = fail_at
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.target = (int(x) for x in self.np_random.choice(11, 2, replace=False))
        return self._obs(), {}

    def _obs(self):
        return np.array([self.pos, self.target], np.float32) / 10

    def step(self, action):
        self.steps += 1
        if self.fail_at is not None and self.steps >= self.fail_at:
            raise RuntimeError("reach env broke")
        self.pos = min(10, max(0, self.pos + int(action) - 1))
        done = self.pos == self.target
        return self._obs(), 1.0 if done else -0.05, done, False, {}


@pytest.mark.slow
def test_cartpole_trains_to_475_and_evaluates(tmp_path):
    # 490 for the sampling policy, so the greedy one clears 475 whatever kernel table
    # rounds the run (stopped just past 475, seed 1 acts greedily at 463 with AVX-512).
    t = fastrl.Trainer("CartPole-v1", target_return=490, seed=1)
    seen = []
    m = t.train(500_000, callback=seen.append, checkpoint=tmp_path / "cp.frl")
    assert m.mean_return >= 490 and m.env_steps < 500_000
    assert [x.update for x in seen] == list(range(1, m.update + 1))
    assert seen[-1] == m == t.metrics
    assert m.steps_per_second > 0 and m.episodes >= 100 and m.learning_rate > 0
    returns = fastrl.evaluate(fastrl.Policy.load(tmp_path / "cp.frl"), "CartPole-v1", 100)
    assert returns.shape == (100,) and returns.mean() >= 475
    # The library's view of the same checkpoint: a trainer that continues the run.
    u = fastrl.Trainer.load(tmp_path / "cp.frl")
    again = u.train(500_000)  # the target is already reached: no update
    assert (again.update, again.env_steps) == (m.update, m.env_steps)
    assert u.policy.version == t.policy.version


def test_python_env_trains(tmp_path):
    rt = fastrl.Runtime(seed=1)
    env = fastrl.VecEnv.from_python([Reach for _ in range(16)], runtime=rt,
                                    max_episode_steps=50)
    untrained = fastrl.Policy(env.single_observation_space, env.single_action_space,
                              runtime=rt)
    eval_env = fastrl.VecEnv.from_python([Reach for _ in range(16)], runtime=rt,
                                         max_episode_steps=50)
    before = fastrl.evaluate(untrained, eval_env, 64, deterministic=False).mean()
    t = fastrl.Trainer(env, rollout=64, lr=2.5e-3, target_return=0.75)
    m = t.train(200_000, checkpoint=tmp_path / "reach.frl")
    assert m.mean_return >= 0.75 and m.env_steps < 200_000
    after = fastrl.evaluate(fastrl.Policy.load(tmp_path / "reach.frl"), eval_env, 64).mean()
    assert after >= 0.7 and before < 0.3, (before, after)
    with pytest.raises(fastrl.Error) as ei:  # the library cannot save a Python simulator
        t.save(tmp_path / "x.frl")
    assert ei.value.status == Status.ERR_UNSUPPORTED


def test_checkpoint_path_checked_before_training(tmp_path):
    t = fastrl.Trainer("CartPole-v1", threads=1)
    for bad, status in ((tmp_path / "no" / "dir" / "cp.frl", Status.ERR_IO),
                        (tmp_path, Status.ERR_IO)):
        with pytest.raises(fastrl.Error) as ei:
            t.train(100_000, checkpoint=bad)
        assert ei.value.status == status and str(bad) in str(ei.value)
    with pytest.raises(TypeError):
        t.train(100_000, checkpoint=3)
    assert t.metrics.env_steps == 0  # nothing was trained


def test_callback_stops_and_errors():
    t = fastrl.Trainer("CartPole-v1", seed=2)
    m = t.train(100_000, callback=lambda m: m.update < 3)  # False at update 3: stop
    assert m.update == 3 and m.env_steps == 3 * 16 * 128
    m = t.train(100_000, callback=lambda m: None if m.update < 5 else False)
    assert m.update == 5

    def boom(m):
        raise ValueError(f"callback failed at {m.update}")
    with pytest.raises(ValueError, match="callback failed at 6") as ei:
        t.train(100_000, callback=boom)
    assert "in boom" in "".join(traceback.format_exception(ei.value))
    assert any("metrics callback" in n for n in ei.value.__notes__)
    assert t.train(8 * 2048).update == 8  # the run goes on

    def nested(m):
        t.train(10**6)
    with pytest.raises(fastrl.Error) as ei:
        t.train(100_000, callback=nested)
    assert ei.value.status == Status.ERR_STATE

    def act_while_training(m):
        t.policy.act(np.zeros(4, np.float32))
    with pytest.raises(fastrl.Error) as ei:
        t.train(100_000, callback=act_while_training)
    assert ei.value.status == Status.ERR_STATE and "between" in ei.value.message


def test_callback_saves_and_sets_output(tmp_path):
    """A sync trainer's callback may save (the library allows it there) and set the
    output; an async trainer's save from its callback is the library's ERR_STATE; from
    another thread while train runs, both stay refused."""
    t = fastrl.Trainer("CartPole-v1", seed=4)
    best = []

    def keep_best(m):
        if m.update == 2:
            t.set_output(tmp_path)
        if not best or m.mean_return > best[0]:
            best[:] = [m.mean_return, m.update]
            t.save(tmp_path / "best.frl")
    t.train(4 * 2048, callback=keep_best)
    u = fastrl.Trainer.load(tmp_path / "best.frl")
    assert u.metrics.update == best[1]
    assert (tmp_path / "metrics.csv").read_text().count("\n") == 1 + 2  # header, 3 and 4
    errors = []

    def from_another_thread(m):
        th = threading.Thread(target=lambda: errors.append(_status_of(t.save, tmp_path)))
        th.start()
        th.join()
        return False
    t.train(10**6, callback=from_another_thread)
    assert errors == [Status.ERR_STATE]
    a = fastrl.Trainer("CartPole-v1", {"sampler.mode": "async"}, seed=4)
    with pytest.raises(fastrl.Error) as ei:
        a.train(10**6, callback=lambda m: a.save(tmp_path / "async.frl"))
    assert ei.value.status == Status.ERR_STATE
    assert not (tmp_path / "async.frl").exists()


def _status_of(save, tmp_path):
    try:
        save(tmp_path / "other.frl")
    except fastrl.Error as e:
        return e.status
    return Status.OK


def test_request_stop_from_another_thread():
    t = fastrl.Trainer("CartPole-v1", seed=3)
    started = threading.Event()
    t.train(2048)
    timer = threading.Thread(target=lambda: (started.wait(), t.request_stop()))
    timer.start()
    m = t.train(10**9, callback=lambda m: started.set())
    timer.join()
    assert 2 <= m.update < 1000  # stopped, returned normally
    t.request_stop()  # between calls: applies to the next call
    assert t.train(10**9).update == m.update


def test_ctrl_c_in_process_saves_and_raises(tmp_path):
    t = fastrl.Trainer("CartPole-v1", seed=4)
    path = tmp_path / "ck.frl"

    def press_ctrl_c(m):
        if m.update == 2:
            signal.raise_signal(signal.SIGINT)

    with pytest.raises(KeyboardInterrupt) as ei:
        t.train(10**9, callback=press_ctrl_c, checkpoint=path)
    notes = " ".join(getattr(ei.value, "__notes__", []))
    assert "Ctrl-C after update 2" in notes and str(path) in notes
    assert t.metrics.update == 2 and path.exists()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    u = fastrl.Trainer.load(path)
    assert u.env_name == "CartPole-v1" and u.vec_env.name == "CartPole-v1"  # the file's env
    t.train(4 * 2048)
    u.train(4 * 2048)
    o = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
    assert np.array_equal(t.policy.act(o, counter=1), u.policy.act(o, counter=1))  # exact


def test_ctrl_c_from_outside(tmp_path):
    """A real SIGINT to a training process: it stops at the end of an update, writes the
    checkpoint, raises KeyboardInterrupt, and the checkpoint continues the run."""
    path = tmp_path / "ck.frl"
    code = r"""
import sys, fastrl
t = fastrl.Trainer("CartPole-v1", seed=9)
def cb(m):
    if m.update == 2:
        print("READY", flush=True)
try:
    t.train(10**9, callback=cb, checkpoint=sys.argv[1])
    print("NOT INTERRUPTED")
except KeyboardInterrupt as e:
    m = t.metrics
    print("INTERRUPTED", m.update, m.env_steps, " | ".join(getattr(e, "__notes__", [])),
          flush=True)
    u = fastrl.Trainer.load(sys.argv[1])
    print("RESUMED", u.train(m.env_steps + 2048).env_steps, flush=True)
"""
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    p = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline().strip() == "READY"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    line = next(x for x in out.splitlines() if x.startswith("INTERRUPTED"))
    _, update, steps, notes = line.split(" ", 3)
    assert int(update) >= 2 and int(steps) == int(update) * 2048
    assert "checkpoint written" in notes and "Ctrl-C" in notes
    assert f"RESUMED {int(steps) + 2048}" in out


def test_python_env_exception_during_training():
    rt = fastrl.Runtime(seed=1)
    envs = [Reach() for _ in range(3)] + [Reach(fail_at=300)]
    t = fastrl.Trainer(fastrl.VecEnv.from_python(envs, runtime=rt), rollout=32,
                       minibatches=2)
    with pytest.raises(RuntimeError, match="reach env broke") as ei:
        t.train(10**6)
    assert any("env 3" in n for n in ei.value.__notes__)
    assert "in step" in "".join(traceback.format_exception(ei.value))
    envs[3].fail_at = None
    assert t.train(t.metrics.env_steps + 3 * 128).update >= 1  # continues once fixed


def test_borrowed_objects_and_lifetime(tmp_path):
    t = fastrl.Trainer("CartPole-v1", seed=6, num_envs=8, rollout=32, minibatches=4)
    t.train(2 * 8 * 32)
    v, ring = t.vec_env, t.ring
    assert v.num_envs == 8 and v.total_steps == 512
    with pytest.raises(fastrl.Error) as ei:
        v.step(np.zeros(8, np.int32))
    assert ei.value.status == Status.ERR_STATE and "trainer" in ei.value.message
    with pytest.raises(fastrl.Error):
        v.reset(seed=0)
    obs = ring.array("observations")
    assert obs.shape == (32, 8, 4) and not obs.flags.writeable
    assert (ring.array("policy_version") == 1).all()  # the second update's rollout
    with pytest.raises(fastrl.Error):
        ring.acquire_write()
    copy = obs.copy()
    rets = v.episode_returns
    h = weakref.ref(t._h)
    t.close()
    assert t.closed
    with pytest.raises(fastrl.Error):
        t.train(10**6)
    del t, v, ring, ei  # (the exception's traceback holds the trainer too)
    collect()
    assert h() is not None  # the views keep the trainer (and its arrays)
    touch(obs)
    touch(rets)
    assert np.array_equal(obs, copy)
    del obs, rets
    collect()
    assert h() is None


def test_user_vec_env_is_locked_while_a_trainer_uses_it():
    rt = fastrl.Runtime(threads=1)
    v = fastrl.make_vec("CartPole-v1", num_envs=4, runtime=rt)
    t = fastrl.Trainer(v, rollout=16, minibatches=2)
    with pytest.raises(fastrl.Error) as ei:
        v.step(np.zeros(4, np.int32))
    assert ei.value.status == Status.ERR_STATE
    with pytest.raises(fastrl.Error):
        fastrl.Trainer(v)
    t.train(128)
    t.close()
    del t
    collect()
    v.reset(seed=1)
    v.step(np.zeros(4, np.int32))  # unlocked again


def test_outputs_and_errors(tmp_path):
    t = fastrl.Trainer("CartPole-v1", seed=7)
    t.set_output(tmp_path)
    t.train(3 * 2048)
    rows = (tmp_path / "metrics.csv").read_text().splitlines()
    assert rows[0].startswith("update,env_steps") and len(rows) == 4
    assert (tmp_path / "settings.txt").read_text().startswith("# env=CartPole-v1 seed=7")
    assert any(p.name.startswith("events.out.tfevents") for p in tmp_path.iterdir())
    cases = [
        (lambda: fastrl.Trainer("Nope-v0"), Status.ERR_UNKNOWN_NAME),
        (lambda: fastrl.Trainer("CartPole-v1", minibatches=7), Status.ERR_INVALID_ARGUMENT),
        (lambda: fastrl.Trainer("CartPole-v1", lr=-1.0), Status.ERR_RANGE),
        (lambda: t.train(-1), Status.ERR_RANGE),
        (lambda: t.set_output(tmp_path / "missing"), Status.ERR_IO),
        (lambda: t.save(tmp_path / "no" / "x.frl"), Status.ERR_IO),
        (lambda: fastrl.Trainer.load(tmp_path / "metrics.csv"), Status.ERR_FORMAT),
        (lambda: fastrl.Trainer(fastrl.make_vec("CartPole-v1", num_envs=2), seed=1),
         Status.ERR_INVALID_ARGUMENT),
        (lambda: fastrl.Trainer(fastrl.make_vec("CartPole-v1", num_envs=2),
                                runtime=fastrl.Runtime(threads=1)),
         Status.ERR_INVALID_ARGUMENT),
    ]
    for fn, status in cases:
        with pytest.raises(fastrl.Error) as ei:
            fn()
        assert ei.value.status == status, ei.value
    p = tmp_path / "policy.frl"
    t.policy.save(p)
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Trainer.load(p)  # a policy file is not a trainer checkpoint
    assert ei.value.status == Status.ERR_FORMAT
    with pytest.raises(TypeError):
        t.train(1.5)
    with pytest.raises(TypeError):
        t.train(10, callback=3)
    with pytest.raises(fastrl.Error) as ei:
        fastrl.evaluate(t.policy, "CartPole-v1", 0)
    assert ei.value.status == Status.ERR_RANGE


def test_load_overrides_and_resume_exactly(tmp_path):
    a = fastrl.Trainer("CartPole-v1", seed=11)
    a.train(2 * 2048)
    a.save(tmp_path / "a.frl")
    a.train(5 * 2048)
    b = fastrl.Trainer.load(tmp_path / "a.frl")
    b.train(5 * 2048)
    assert a.metrics.env_steps == b.metrics.env_steps
    assert a.metrics.mean_return == b.metrics.mean_return
    o = np.random.default_rng(1).normal(size=(128, 4)).astype(np.float32)
    assert np.array_equal(a.policy.act_with_info(o, True)[2], b.policy.act_with_info(o, True)[2])
    c = fastrl.Trainer.load(tmp_path / "a.frl", target_return=5.0)  # an override
    m = c.train(10**6)
    assert m.episodes >= 100 and m.mean_return >= 5.0 and m.env_steps < 10 * 2048
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Trainer.load(tmp_path / "a.frl", num_envs=4)  # changes array sizes
    assert ei.value.status == Status.ERR_INVALID_ARGUMENT and "train.num_envs 16" in str(ei.value)


def test_callback_returning_numpy_false_stops():
    """A stop computed with numpy is numpy's bool: np.False_ is not False, so such a
    callback used to be ignored and the run went on to total_steps."""
    t = fastrl.Trainer("CartPole-v1", seed=2, num_envs=4, rollout=16, threads=1)
    m = t.train(20_000, callback=lambda m: np.float64(m.update) < 2)
    assert m.update == 2
    m = t.train(2_000, callback=lambda m: np.True_)  # True and np.True_ go on
    assert m.env_steps >= 2_000


def test_runtime_options_beside_a_vec_env_are_refused_by_name():
    """A trainer shares its vec env's runtime: any runtime option, by its short name too
    (device=, tf32= once fell through to a message about runtime=), is refused."""
    v = fastrl.VecEnv("CartPole-v1", 4)
    for opt in ({"device": "cpu"}, {"tf32": True}, {"seed": 3}, {"runtime.threads": 1}):
        with pytest.raises(fastrl.Error) as ei:
            fastrl.Trainer(v, **opt)
        assert ei.value.status == Status.ERR_INVALID_ARGUMENT
        assert "shares its vec env's runtime" in ei.value.message, ei.value.message


def test_closing_a_borrowed_object_does_not_break_the_trainer():
    # close() on the trainer's policy, ring or vec env wrapper lets go of that wrapper
    # only: the trainer's properties give working ones again (evaluate(trainer) too)
    t = fastrl.Trainer("CartPole-v1", seed=3, num_envs=4, rollout=8, minibatches=1,
                       threads=1)
    t.train(32)
    t.policy.close()
    assert t.policy.act(np.zeros(4, np.float32)) in (0, 1)
    assert len(fastrl.evaluate(t, "CartPole-v1", 2, num_envs=2)) == 2
    t.ring.close()
    assert t.ring.array("rewards").shape == (8, 4)
    t.vec_env.close()
    assert t.vec_env.observations.shape == (4, 4)


PYTHON_ENVS = """
class E(gym.Env):
    observation_space = gym.spaces.Box(-1, 1, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)
    def reset(self, seed=None, options=None): return np.zeros(3, np.float32), {}
    def step(self, a): return np.zeros(3, np.float32), 1.0, False, False, {}
v = fastrl.VecEnv.from_python([E() for _ in range(4)], runtime=fastrl.Runtime(threads=2))
"""
EXIT_SCRIPTS = {
    # request_stop ends the run within an update, and the exit waits for it (the
    # checkpoint train writes when it returns included)
    "train": """
t = fastrl.Trainer("CartPole-v1", threads=2, rollout=16)
go = threading.Event()
run = lambda: t.train(10**9, lambda m: go.set(), checkpoint=sys.argv[1],
                      handle_sigint=False)
""",
    # the same on Python envs (the library calls back into Python on the daemon thread)
    "train_python_envs": PYTHON_ENVS + """
t = fastrl.Trainer(v, rollout=16)
go = threading.Event()
run = lambda: t.train(10**9, lambda m: go.set(), checkpoint=sys.argv[1],
                      handle_sigint=False)
""",
    # a callback that never returns past the wait: the objects are left alone (leaked)
    "train_blocked": "fastrl._handle.EXIT_WAIT_S = 0.5\n" + PYTHON_ENVS + """
t = fastrl.Trainer(v, rollout=16)
go = threading.Event()
def cb(m):
    go.set()
    time.sleep(3600)
run = lambda: t.train(10**9, cb, handle_sigint=False)
""",
    # an evaluation cannot be stopped: its policy, vec env and runtime are left alone
    "evaluate": """
p = fastrl.Policy(gym.spaces.Box(-5, 5, (4,)), gym.spaces.Discrete(2), threads=2)
go = threading.Event()
def run():
    go.set()
    fastrl.evaluate(p, "CartPole-v1", 10**8, deterministic=False, max_steps=0)
""",
}


@pytest.mark.parametrize("case", sorted(EXIT_SCRIPTS))
def test_interpreter_exit_while_a_daemon_thread_is_inside_a_long_call(tmp_path, case):
    """weakref.finalize's exit hook destroyed the trainer (the policy, the vec env, the
    runtime) under the C call a daemon thread was still in: a segfault at exit."""
    code = ("import sys, threading, time, fastrl, gymnasium as gym, numpy as np\n"
            + EXIT_SCRIPTS[case] + """
threading.Thread(target=run, daemon=True).start()
go.wait()
time.sleep(0.2)
print("EXITING", flush=True)
""")
    path = tmp_path / "ck.frl"
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    p = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                       text=True, env=env, timeout=120)
    assert "EXITING" in p.stdout, p.stderr
    assert p.returncode == 0, (p.returncode, p.stderr)
    if case in ("train", "train_python_envs"):
        assert path.exists()  # the stopped run wrote its checkpoint
