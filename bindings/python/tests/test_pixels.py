"""Pixel observations through the binding: image spaces as uint8 Boxes, the vec env's
frames as a zero-copy uint8 view, uint8 Python envs, policies with a conv encoder and
PixelGrid-v0 trained from its pixels."""

import gymnasium as gym
import numpy as np
import pytest

import fastrl
from fastrl import Status


def test_vec_env_frames_are_a_uint8_view():
    v = fastrl.VecEnv("PixelGrid-v0", 4, seed=3)
    space = v.single_observation_space
    assert space.dtype == np.uint8 and space.shape == (40, 40, 3)
    obs, _ = v.reset(seed=3)
    assert obs.dtype == np.uint8 and obs.shape == (4, 40, 40, 3)
    # zero copy: the view is the library's array, which the next step overwrites
    assert np.shares_memory(obs, v.observations)
    red = np.all(obs == [255, 0, 0], axis=-1).sum(axis=(1, 2))
    assert list(red) == [64] * 4
    v.step(np.zeros(4, np.int32))
    assert np.all(np.all(v.observations == [255, 0, 0], axis=-1).sum(axis=(1, 2)) == 64)


class Stripes(gym.Env):
    """A 4 x 8 RGB image: a vertical stripe at the column the last action moved to."""

    def __init__(self):
        self.observation_space = gym.spaces.Box(0, 255, (4, 8, 3), np.uint8)
        self.action_space = gym.spaces.Discrete(8)

    def _obs(self):
        img = np.zeros((4, 8, 3), np.uint8)
        img[:, self.col] = (10, 20, 30)
        return img

    def reset(self, *, seed=None, options=None):
        self.col = 0
        return self._obs(), {}

    def step(self, action):
        self.col = int(action)
        return self._obs(), 0.0, False, False, {}


def test_python_env_with_uint8_observations():
    v = fastrl.VecEnv.from_python([Stripes for _ in range(2)])
    assert v.single_observation_space.dtype == np.uint8
    obs, _ = v.reset(seed=0)
    assert obs.dtype == np.uint8 and np.all(obs[:, :, 0] == (10, 20, 30))
    obs, *_ = v.step(np.array([5, 7], np.int32))
    assert np.all(obs[0, :, 5] == (10, 20, 30)) and np.all(obs[1, :, 7] == (10, 20, 30))
    assert obs[0].sum() == 4 * 60


def test_policy_reads_images_through_its_encoder(tmp_path):
    space = gym.spaces.Box(0, 255, (40, 40, 3), np.uint8)
    p = fastrl.Policy(space, gym.spaces.Discrete(4),
                      {"policy.encoder": "simple", "policy.conv_channels": "4,8,8"})
    rng = np.random.default_rng(0)
    obs = rng.integers(0, 256, (5, 40, 40, 3), dtype=np.uint8)
    out, _ = p.forward(obs)
    assert out.shape == (5, 4) and not np.array_equal(out[0], out[1])
    one, _ = p.forward(obs[2])
    assert np.array_equal(one, out[2])  # a row alone gives the same bits
    with pytest.raises(TypeError, match="uint8"):
        p.act(obs.astype(np.float32))
    p.save(tmp_path / "p.frl")
    q = fastrl.Policy.load(tmp_path / "p.frl")
    assert q.observation_space.dtype == np.uint8
    assert np.array_equal(q.forward(obs)[0], out)
    with pytest.raises(fastrl.Error) as ei:  # an MLP does not read bytes
        fastrl.Policy(space, gym.spaces.Discrete(4))
    assert ei.value.status == Status.ERR_INVALID_ARGUMENT and "encoder" in ei.value.message


@pytest.mark.slow
def test_population_acts_on_images_as_the_policy_does():
    # Population.act read uint8 frames as float32 (a quarter of the bytes as pixels).
    rt = fastrl.Runtime(threads=1)
    v = fastrl.make_vec("PixelGrid-v0", num_envs=32, runtime=rt)
    p = fastrl.Policy(v.single_observation_space, v.single_action_space, runtime=rt,
                      encoder="simple")
    pop = fastrl.Population(p, 2)  # every member starts as the policy
    obs, _ = v.reset(seed=0)
    for _ in range(3):
        obs, *_ = v.step(v.action_space.sample())
    assert np.array_equal(pop.act(obs, 1, deterministic=True), p.act(obs, deterministic=True))
    with pytest.raises(TypeError):
        pop.act(obs.astype(np.float32), 0)


@pytest.mark.slow
def test_pixel_grid_trains():
    # to 0.8 only: the C suite (test_pixels) takes the same run to 0.95 greedy; slow
    # under the sanitizers (375 s of TSan's suite), whose C suites run test_pixels
    t = fastrl.Trainer("PixelGrid-v0", target_return=0.8, seed=1)
    m = t.train(200_000)
    assert m.mean_return >= 0.8 and m.env_steps < 200_000
    # the sampling policy's episodes, as the target counts them
    returns = fastrl.evaluate(t.policy, "PixelGrid-v0", 100, deterministic=False)
    assert returns.mean() >= 0.65


def test_ray_envs_render_first_person_frames():
    """The raycasting tasks through the binding: the frame size and colour come from the
    env.* settings, and frames are uint8 views that change as the agent turns."""
    v = fastrl.VecEnv("RayRoom-v0", 3, config={"env.width": 64, "env.height": 48,
                                               "env.grayscale": False})
    space = v.single_observation_space
    assert space.dtype == np.uint8 and space.shape == (48, 64, 3)
    assert v.single_action_space.n == 9
    obs, _ = v.reset(seed=1)
    before = obs.copy()
    assert obs.shape == (3, 48, 64, 3) and np.shares_memory(obs, v.observations)
    v.step(np.full(3, 3, np.int32))  # turn right: the view moves
    assert np.any(v.observations != before)
    g = fastrl.VecEnv("RayMaze-v0", 2)
    assert g.single_observation_space.shape == (84, 84, 1)
    with pytest.raises(fastrl.Error) as e:
        fastrl.VecEnv("RayCollect-v0", 1, config={"env.width": 17, "env.height": 17})
    assert e.value.status == Status.ERR_SIZE and "multiple of 4" in str(e.value)
