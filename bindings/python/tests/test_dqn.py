"""DQN through the binding: the settings as options, its metrics, and the Q-policy it
learns acting, evaluating, saving and loading like any other policy."""

import numpy as np
import pytest

import fastrl
from fastrl import Status


def test_dqn_trains_with_its_metrics(tmp_path):
    t = fastrl.Trainer("CartPole-v1", seed=3, threads=1,
                       config={"train.algo": "dqn", "train.learning_starts": 500,
                               "train.train_freq": 8, "train.gradient_steps": 2,
                               "train.exploration_fraction": 1.0})
    seen = []
    m = t.train(4000, callback=lambda m: seen.append((m.env_steps, m.epsilon, m.replay_fill,
                                                      m.epochs_done)))
    assert m.env_steps == 4000
    early = [s for s in seen if s[0] <= 500]
    late = [s for s in seen if s[0] > 600]
    assert all(eps == 1.0 and done == 0 for _, eps, _, done in early)
    assert all(done == 2 for *_, done in late)
    assert 0.05 < seen[-1][1] < 0.06  # the schedule nearly at its end
    assert m.q_mean != 0 and m.td_error > 0 and m.sample_age > 0
    assert 0 < m.replay_fill <= 1

    p = t.policy
    obs = np.zeros((5, 4), np.float32)
    a = p.act(obs, deterministic=True)
    assert a.shape == (5,) and set(a.tolist()) <= {0, 1}
    returns = fastrl.evaluate(p, "CartPole-v1", episodes=3)
    assert returns.shape == (3,) and returns.min() >= 8
    path = tmp_path / "q.frl"
    p.save(str(path))
    back = fastrl.Policy.load(str(path))
    assert np.array_equal(back.act(obs, deterministic=True), a)


def test_replay_records_are_the_rollouts():
    t = fastrl.Trainer("CartPole-v1", seed=1, threads=1,
                       config={"train.algo": "dqn", "train.num_envs": 2, "train.train_freq": 8,
                               "train.buffer_size": 64})
    t.train(8 * 2 * 5)
    r = t.replay
    info = r.info()
    assert info["blocks"] == 4 and info["filled"] == 4 and info["next"] == 1
    rec = r.records()
    assert rec.shape == (4, 2, 9)
    ring = t.ring
    newest = rec[0]                 # the 5th rollout went into block 0
    obs = ring.array("observations")           # [T, B, W]
    assert np.array_equal(newest["x"][:, :8].transpose(1, 0, 2), obs)
    assert np.array_equal(newest["action"][:, :8].T, ring.array("actions"))
    assert np.array_equal(newest["x"][:, 8], ring.array("bootstrap_obs"))
    assert newest["reset"][:, 8].all()
    assert r.priorities() is None
    assert fastrl.Trainer("CartPole-v1").replay is None


def test_dqn_refuses_box_actions():
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Trainer("Pendulum-v1", config={"train.algo": "dqn"})
    assert ei.value.status == Status.ERR_UNSUPPORTED
    assert "discrete action space" in str(ei.value)


@pytest.mark.parametrize("env_id", ["PixelGrid-v0", "PixelGoal-v0"])
def test_replay_records_of_pixels_hold_the_observations_as_the_ring_does(env_id):
    # the records keep an image's bytes (a mixed row's bytes): x is those, as the ring's
    # observations are, not the bytes read as floats
    t = fastrl.Trainer(env_id, seed=1, threads=1,
                       config={"train.algo": "dqn", "train.num_envs": 2,
                               "train.train_freq": 8, "train.buffer_size": 64})
    t.train(16)
    rec = t.replay.records()
    ring_obs = t.ring.array("observations")
    rows = np.ascontiguousarray(rec[0]["x"][:, :8].swapaxes(0, 1))
    if isinstance(ring_obs, dict):  # mixed: the ring splits the row bytes
        assert rec.dtype["x"].base == np.uint8
        im = ring_obs["image"]
        n = int(np.prod(im.shape[2:]))
        assert np.array_equal(rows[..., :n].reshape(im.shape), im)
        assert np.array_equal(rows[..., n:].view(np.float32), ring_obs["vector"])
    else:
        assert rows.dtype == np.uint8 and np.array_equal(rows, ring_obs)
