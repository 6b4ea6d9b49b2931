"""The asynchronous sampler through the binding: training, lag metrics, Python envs
called from library threads, their exceptions, and an async trainer's checkpoint."""

import threading

import pytest

import fastrl
from conftest import SANITIZER
from fastrl import Status
from test_trainer import Reach


def test_async_cartpole_trains_with_lag_metrics():
    # Under a sanitizer the threads are what is checked, over a short run (learning to
    # 475 took 30 s of the suite's 95 under TSan); the full run learns.
    t = fastrl.Trainer("CartPole-v1", seed=5, threads=2, target_return=475,
                       config={"sampler.mode": "async"})
    lags = []
    budget = 16_384 if SANITIZER else 1_000_000  # 8 updates under a sanitizer
    m = t.train(budget, callback=lambda m: lags.append((m.policy_lag_mean,
                                                        m.policy_lag_max)))
    if not SANITIZER:
        assert m.mean_return >= 475 and m.env_steps < 1_000_000
    assert lags and all(0 <= mean <= mx <= 3 for mean, mx in lags)
    assert m.slots_dropped == 0


def test_async_python_envs_and_their_exceptions():
    rt = fastrl.Runtime(seed=1, threads=2)
    envs = [Reach() for _ in range(7)] + [Reach(fail_at=400)]
    venv = fastrl.VecEnv.from_python(envs, runtime=rt, max_episode_steps=50)
    t = fastrl.Trainer(venv, rollout=32, minibatches=2, config={"sampler.mode": "async"})
    callers = set()
    real_step = Reach.step

    def step(self, action):
        callers.add(threading.get_ident())
        return real_step(self, action)

    Reach.step = step
    try:
        with pytest.raises(RuntimeError, match="reach env broke") as ei:
            t.train(10**6)
        assert any("env 7" in n for n in ei.value.__notes__)
        envs[7].fail_at = None
        m = t.train(t.metrics.env_steps + 8 * 32 * 3)
        assert m.update >= 1  # the run goes on once the env is fixed
    finally:
        Reach.step = real_step
    assert callers  # stepped (on whichever library thread took the task)


def test_async_checkpoint_resumes_in_async_mode(tmp_path):
    t = fastrl.Trainer("CartPole-v1", seed=6, threads=2, config={"sampler.mode": "async"})
    m = t.train(4 * 16 * 128, checkpoint=tmp_path / "a.frl")  # a trainer checkpoint
    assert m.update == 4
    p = fastrl.Policy.load(tmp_path / "a.frl")  # which holds the policy too
    assert p.version == t.policy.version == 4
    back = fastrl.Trainer.load(tmp_path / "a.frl", threads=2)
    m2 = back.train(6 * 16 * 128)
    assert m2.update == 6 and back.policy.version == 6
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Trainer.load(tmp_path / "a.frl", {"sampler.groups": 4}, threads=2)
    assert ei.value.status == Status.ERR_INVALID_ARGUMENT
    assert "saved with 2 env groups" in ei.value.message
