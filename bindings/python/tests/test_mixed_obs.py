"""Mixed observations (an image and a vector) through the binding: the library's mixed
space as a gymnasium Dict of "image" and "vector", arrays of them as dicts of zero-copy
views into the same rows, Python envs and batch worlds writing them, policies acting on
them, and PixelGoal-v0 trained."""

import gymnasium as gym
import numpy as np
import pytest

import fastrl
from fastrl import Status, spaces

SPACE = gym.spaces.Dict({"image": gym.spaces.Box(0, 255, (8, 8, 1), np.uint8),
                         "vector": gym.spaces.Box(-1, 1, (3,), np.float32)})


def test_vec_env_observations_are_views_of_one_row():
    v = fastrl.VecEnv("PixelGoal-v0", 4)
    space = v.single_observation_space
    assert isinstance(space, gym.spaces.Dict) and set(space.spaces) == {"image", "vector"}
    assert space["image"].shape == (40, 40, 3) and space["vector"].shape == (2,)
    obs, _ = v.reset(seed=5)
    img, vec = obs["image"], obs["vector"]
    assert img.dtype == np.uint8 and img.shape == (4, 40, 40, 3)
    assert vec.dtype == np.float32 and vec.shape == (4, 2)
    # one buffer, one row an env: the vector's floats follow that env's image
    assert img.strides[0] == vec.strides[0] == 40 * 40 * 3 + 8
    assert np.shares_memory(img, v.observations["image"])
    assert np.all(np.all(img == [255, 0, 0], axis=-1).sum(axis=(1, 2)) == 64)
    assert np.all((vec >= 0) & (vec <= 1)) and np.all(vec * 4 == np.round(vec * 4))
    copies = fastrl.VecEnv("PixelGoal-v0", 2, copy=True).reset(seed=5)[0]
    assert np.array_equal(copies["vector"], vec[:2])


class Beacon(gym.Env):
    """An 8 x 8 image with one lit column, and a vector of the step count, the action and
    a constant."""

    def __init__(self, bad=False):
        self.observation_space = SPACE
        self.action_space = gym.spaces.Discrete(8)
        self.bad = bad

    def _obs(self):
        img = np.zeros((8, 8, 1), np.uint8)
        img[:, self.col] = 200
        vec = np.array([self.t / 10, self.col / 10, -0.5], np.float32)
        if self.bad and self.t == 2:
            vec[1] = np.nan
        return {"image": img, "vector": vec}

    def reset(self, *, seed=None, options=None):
        self.t, self.col = 0, 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        self.col = int(action)
        return self._obs(), 1.0, False, False, {}


def test_python_env_writes_both_parts():
    v = fastrl.VecEnv.from_python([Beacon for _ in range(2)])
    obs, _ = v.reset(seed=0)
    assert np.all(obs["image"][:, :, 0] == 200) and np.all(obs["vector"][:, 2] == -0.5)
    obs, *_ = v.step(np.array([3, 6], np.int32))
    assert np.all(obs["image"][0, :, 3] == 200) and np.all(obs["image"][1, :, 6] == 200)
    assert obs["vector"][1].tolist() == pytest.approx([0.1, 0.6, -0.5])
    e = fastrl.Env.from_python(Beacon())
    o, _ = e.reset(seed=0)
    assert o["image"].shape == (8, 8, 1) and o["vector"].tolist() == [0.0, 0.0, -0.5]
    bad = fastrl.VecEnv.from_python([lambda: Beacon(bad=True)])
    bad.reset(seed=0)
    bad.step(np.array([1], np.int32))
    with pytest.raises(fastrl.Error) as ei:
        bad.step(np.array([1], np.int32))
    assert ei.value.status == Status.ERR_NONFINITE and "vector part" in ei.value.message


class World:
    """A batch world that writes into the dict of views it is handed."""

    def reset(self, seeds, obs):
        obs["image"][...] = 7
        obs["vector"][...] = np.arange(3, dtype=np.float32) / 10

    def step(self, actions, reset_mask, seeds, obs, rewards, terminated, truncated):
        obs["image"][...] = actions[:, None, None, None].astype(np.uint8)
        obs["vector"][:, 0] = actions / 10
        rewards[...] = 0
        terminated[...] = 0
        truncated[...] = 0


def test_batch_world_gets_views():
    v = fastrl.VecEnv.from_batch(World(), 3, SPACE, gym.spaces.Discrete(8))
    obs, _ = v.reset(seed=1)
    assert np.all(obs["image"] == 7) and obs["vector"][2].tolist() == pytest.approx([0, .1, .2])
    obs, *_ = v.step(np.array([1, 2, 3], np.int32))
    assert obs["image"][2].max() == 3 and obs["vector"][:, 0].tolist() == pytest.approx(
        [.1, .2, .3])


def test_policy_acts_on_dicts_and_rows(tmp_path):
    space = fastrl.VecEnv("PixelGoal-v0", 1).single_observation_space
    p = fastrl.Policy(space, gym.spaces.Discrete(4),
                      {"policy.encoder": "simple", "policy.conv_channels": "4,8,8"})
    rng = np.random.default_rng(0)
    obs = {"image": rng.integers(0, 256, (5, 40, 40, 3), dtype=np.uint8),
           "vector": rng.uniform(0, 1, (5, 2)).astype(np.float32)}
    out, _ = p.forward(obs)
    rows, single = spaces.join_rows(obs, space)
    assert not single and rows.shape == (5, 40 * 40 * 3 + 8)
    assert np.array_equal(p.forward(rows)[0], out)  # the library's rows as they are
    one, _ = p.forward({"image": obs["image"][2], "vector": obs["vector"][2]})
    assert np.array_equal(one, out[2])
    moved = dict(obs, vector=obs["vector"] + 0.5)
    assert not np.array_equal(p.forward(moved)[0], out)  # the vector is read
    with pytest.raises(TypeError, match="uint8"):
        p.act({"image": obs["image"].astype(np.float32), "vector": obs["vector"]})
    # complex or text in the vector part was read as numbers, unsaid
    for bad in (obs["vector"] + 1j, obs["vector"].astype(str)):
        with pytest.raises(TypeError, match="vector part must be numbers"):
            p.act({"image": obs["image"], "vector": bad})
    with pytest.raises(fastrl.Error) as ei:
        p.act({"image": obs["image"], "vector": obs["vector"][:, :1]})
    assert ei.value.status == Status.ERR_SIZE
    p.save(tmp_path / "p.frl")
    q = fastrl.Policy.load(tmp_path / "p.frl")
    assert isinstance(q.observation_space, gym.spaces.Dict)
    assert np.array_equal(q.forward(obs)[0], out)


def test_other_dicts_are_refused():
    other = gym.spaces.Dict({"a": gym.spaces.Box(-1, 1, (2,)), "b": gym.spaces.Discrete(3)})
    with pytest.raises(fastrl.Error) as ei:
        fastrl.Policy(other, gym.spaces.Discrete(2))
    assert ei.value.status == Status.ERR_UNSUPPORTED and "FlattenObservation" in ei.value.message


@pytest.mark.slow
def test_pixel_goal_trains_and_ring_shows_dicts():
    t = fastrl.Trainer("PixelGoal-v0", target_return=0.9, seed=2)
    m = t.train(100_000)
    assert m.mean_return >= 0.9
    ring_obs = t.ring.array("observations")
    assert ring_obs["image"].shape[2:] == (40, 40, 3) and ring_obs["vector"].shape[2:] == (2,)
    assert np.all((ring_obs["vector"] >= 0) & (ring_obs["vector"] <= 1))
