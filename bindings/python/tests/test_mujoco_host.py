"""A MuJoCo model of the host's own with its meaning in Python (VecEnv.from_mujoco):
transitions against the mujoco package stepping the same model, MuJoCo's arrays by name
(data and model, shapes and types, read-only model), reset callbacks, named domain
randomisation, errors (MuJoCo's message, unknown arrays and objects, exceptions in the
callbacks), and a trainer learning on it.

Skipped, with the reason, where the build has no MuJoCo plugin; the transition check
also where the venv has no mujoco package."""

import gc
from contextlib import closing

import numpy as np
import pytest

import fastrl

# A box on a damped slider, pushed by one motor with gear 5, and a site on top of it.
SLIDER = """
<mujoco><option timestep="0.01"/><worldbody>
  <geom name="floor" type="plane" size="5 5 0.1"/>
  <body name="cart" pos="0 0 0.2">
    <joint name="x" type="slide" axis="1 0 0" damping="0.5"/>
    <geom name="box" type="box" size="0.1 0.1 0.1" mass="2"/>
    <site name="top" pos="0 0 0.1"/>
  </body></worldbody>
  <actuator><motor name="push" joint="x" ctrlrange="-1 1" ctrllimited="true" gear="5"/>
  </actuator></mujoco>
"""


def _plugin_or_skip():
    if fastrl.mujoco_version() is None:
        pytest.skip("no MuJoCo plugin in this build")


def observe(env, data, obs):
    obs[0] = data.qpos[0]
    obs[1] = data.qvel[0]


def reward(env, data, action):
    return float(data.qpos[0]), False


def _slider(n=2, **kw):
    return fastrl.VecEnv.from_mujoco(SLIDER, observe, reward, 2, n, threads=2, **kw)


def test_transitions_match_mujoco():
    """Each step is the mujoco package's mj_step on the same model with ctrl set to the
    action: the same libmujoco, so the state matches bit for bit (float32 obs)."""
    _plugin_or_skip()
    mj = pytest.importorskip("mujoco", reason="the venv has no mujoco package")
    m = mj.MjModel.from_xml_string(SLIDER)
    d = mj.MjData(m)
    mj.mj_forward(m, d)
    times = []

    def observe_timed(env, data, obs):
        times.append(float(data.time[0]))
        observe(env, data, obs)

    with closing(fastrl.VecEnv.from_mujoco(SLIDER, observe_timed, reward, 2, 1,
                                           threads=2)) as venv:
        obs, _ = venv.reset(seed=3)
        assert obs[0].tolist() == [0.0, 0.0]
        rng = np.random.default_rng(0)
        for t in range(50):
            a = rng.uniform(-1.5, 1.5, size=(1, 1)).astype(np.float32)
            obs, rew, term, trunc, _ = venv.step(a)
            d.ctrl[0] = float(a[0, 0])
            mj.mj_step(m, d)
            assert obs[0, 0] == np.float32(d.qpos[0]), t
            assert obs[0, 1] == np.float32(d.qvel[0]), t
            assert rew[0] == np.float32(d.qpos[0])
            assert times[-1] == d.time, t
            assert not term[0] and not trunc[0]
        assert venv.single_action_space.low.tolist() == [-1.0]


def test_arrays_by_name():
    _plugin_or_skip()
    seen = {}

    def look(env, data, obs):
        m = data.model
        seen[env] = {
            "qpos": (data.qpos.shape, data.qpos.dtype),
            "xpos": (data.xpos.shape, data.xpos.dtype),
            "top": data.site_xpos[m.id("site", "top")].copy(),
            "cart": data.xpos[m.id("body", "cart")].copy(),
            "mass": float(m.body_mass[m.id("body", "cart")]),
            "geom_type": (m.geom_type.shape, m.geom_type.dtype),
            "ctrlrange": m.actuator_ctrlrange.copy(),
            "limited": m.actuator_ctrllimited.copy(),
            "mocap": data.mocap_pos.shape,
            "time": data.time.copy(),
            "model_writable": m.body_mass.flags.writeable,
            "data_writable": data.qpos.flags.writeable,
        }
        observe(env, data, obs)

    with closing(fastrl.VecEnv.from_mujoco(SLIDER, look, reward, 2, 2)) as venv:
        venv.reset(seed=0)
    assert sorted(seen) == [0, 1]
    s = seen[1]
    assert s["qpos"] == ((1,), np.float64)
    assert s["xpos"] == ((2, 3), np.float64)  # world and cart
    assert s["cart"].tolist() == pytest.approx([0, 0, 0.2])
    assert s["top"].tolist() == pytest.approx([0, 0, 0.3])
    assert s["mass"] == pytest.approx(2.0)
    assert s["geom_type"] == ((2,), np.int32)
    assert s["ctrlrange"].tolist() == [[-1.0, 1.0]]
    assert s["limited"].dtype == np.uint8 and s["limited"].tolist() == [1]
    assert s["mocap"] == (0, 3)
    assert s["time"].shape == (1,) and s["time"][0] == 0.0  # a scalar: a 1-element array
    assert s["model_writable"] is False and s["data_writable"] is True


FALLING = (
    '<mujoco><option timestep="0.01"/><worldbody>'
    '<geom type="plane" size="5 5 0.1"/>'
    '<body pos="0 0 0.3"><joint name="z" type="slide" axis="0 0 1"/>'
    '<geom type="box" size="0.1 0.1 0.1" mass="1"/></body></worldbody>'
    '<actuator><motor joint="z" ctrlrange="-1 1" ctrllimited="true"/></actuator></mujoco>')


def test_arena_arrays_follow_each_step():
    # The solver's arrays are laid out again at every step, sized by nefc: a box that
    # falls onto the floor has none while it falls and some once it lands.
    _plugin_or_skip()
    sizes = []

    def look(env, data, obs):
        sizes.append((data.efc_force.shape, int(data.nefc[0])))
        obs[:] = 0

    def no_reward(env, data, action):
        return 0.0, False

    with closing(fastrl.VecEnv.from_mujoco(FALLING, look, no_reward, 2, 1)) as venv:
        venv.reset(seed=0)
        for _ in range(40):
            venv.step(np.zeros((1, 1), np.float32))
    assert all(shape == (n,) for shape, n in sizes), sizes
    assert sizes[0][1] == 0 and sizes[-1][1] > 0, sizes


def test_lookup_errors_reach_the_caller():
    _plugin_or_skip()

    def unknown_array(env, data, obs):
        data.no_such_array

    def unknown_body(env, data, obs):
        data.model.id("body", "nothing")

    def assign(env, data, obs):
        data.qpos = np.zeros(1)

    with closing(fastrl.VecEnv.from_mujoco(SLIDER, unknown_array, reward, 2, 1)) as venv:
        with pytest.raises(AttributeError, match="no array of numbers named 'no_such_array'"):
            venv.reset(seed=0)
    with closing(fastrl.VecEnv.from_mujoco(SLIDER, unknown_body, reward, 2, 1)) as venv:
        with pytest.raises(fastrl.Error, match="no body named 'nothing'"):
            venv.reset(seed=0)
    with closing(fastrl.VecEnv.from_mujoco(SLIDER, assign, reward, 2, 1)) as venv:
        with pytest.raises(AttributeError, match=r"qpos\[:\] = \.\.\."):
            venv.reset(seed=0)


def test_reset_callback_and_termination():
    _plugin_or_skip()

    def reset(env, data, seed):
        data.qpos[0] = (seed % 1000) / 1000.0 + env

    def far(env, data, action):
        return 1.0, bool(data.qpos[0] > 0.5)

    with closing(fastrl.VecEnv.from_mujoco(SLIDER, observe, far, 2, 3, reset=reset)) as venv:
        obs, _ = venv.reset(seed=11)
        starts = obs[:, 0].copy()
        # Each env's start comes from its own seed plus its index: all different.
        assert len(set(starts.tolist())) == 3
        assert starts[1] >= 1.0 and starts[2] >= 2.0
        obs, rew, term, trunc, _ = venv.step(np.zeros((3, 1), np.float32))
        assert term[1] and term[2]  # started beyond 0.5
        assert rew.tolist() == [1.0, 1.0, 1.0]


def test_returned_observation_and_bare_reward():
    _plugin_or_skip()

    def obs_returned(env, data, obs):
        return np.array([data.qpos[0], -1.0])

    def bare(env, data, action):
        return float(action[0])

    with closing(fastrl.VecEnv.from_mujoco(SLIDER, obs_returned, bare, 2, 1)) as venv:
        venv.reset(seed=0)
        obs, rew, term, _, _ = venv.step(np.full((1, 1), 0.25, np.float32))
        assert obs[0, 1] == -1.0
        assert rew[0] == 0.25 and not term[0]


def test_named_randomisation():
    _plugin_or_skip()
    masses = {}

    def mass(env, data, action):
        masses[env] = float(data.model.body_mass[1])
        return 0.0

    with closing(fastrl.VecEnv.from_mujoco(SLIDER, observe, mass, 2, 4, randomize_bodies=["cart"],
                                   randomize_mass=0.5)) as venv:
        venv.reset(seed=1)
        venv.step(np.zeros((4, 1), np.float32))
    assert len(masses) == 4
    assert all(1.0 <= m <= 3.0 for m in masses.values())
    assert len(set(masses.values())) == 4
    with pytest.raises(fastrl.Error, match="nothing"):
        fastrl.VecEnv.from_mujoco(SLIDER, observe, mass, 2, 1, randomize_bodies=["nothing"],
                                  randomize_mass=0.5)
    with pytest.raises(TypeError, match="list of names"):
        fastrl.VecEnv.from_mujoco(SLIDER, observe, mass, 2, 1, randomize_bodies="cart")


def test_bad_models_and_arguments():
    _plugin_or_skip()
    with pytest.raises(fastrl.Error) as e:
        fastrl.VecEnv.from_mujoco("<mujoco><worldbody><body>", observe, reward, 2, 1)
    assert e.value.status == fastrl.Status.ERR_INVALID_ARGUMENT
    assert "frl_vec_env_create_mujoco" in str(e.value)
    with pytest.raises(fastrl.Error, match="nonexistent"):
        fastrl.VecEnv.from_mujoco("/nonexistent/arm.xml", observe, reward, 2, 1)
    with pytest.raises(fastrl.Error, match="observation_width"):
        fastrl.VecEnv.from_mujoco(SLIDER, observe, reward, 0, 1)
    with pytest.raises(fastrl.Error, match="observation_width 1099511627776 is outside"):
        fastrl.VecEnv.from_mujoco(SLIDER, observe, reward, 2**40, 1)
    with pytest.raises(fastrl.Error, match="reward must be a function"):
        fastrl.VecEnv.from_mujoco(SLIDER, observe, None, 2, 1)


def test_exception_in_a_callback_is_reraised():
    _plugin_or_skip()

    class Boom(Exception):
        pass

    def reward_boom(env, data, action):
        if env == 1:
            raise Boom("env 1 failed")
        return 0.0

    with closing(fastrl.VecEnv.from_mujoco(SLIDER, observe, reward_boom, 2, 2)) as venv:
        venv.reset(seed=0)
        with pytest.raises(Boom, match="env 1 failed"):
            venv.step(np.zeros((2, 1), np.float32))


def test_returned_observation_of_another_size_is_refused():
    # numpy would broadcast one value over the whole observation (a bug in observe that
    # trains on garbage): refused as Env.from_python refuses it, naming the env
    _plugin_or_skip()
    for got in (0.5, np.array([0.5]), np.zeros(3), np.zeros((2, 1))):
        with closing(fastrl.VecEnv.from_mujoco(SLIDER, lambda env, data, obs, got=got: got,
                                               reward, 2, 2, threads=1)) as venv:
            with pytest.raises(fastrl.Error, match="shape") as ei:
                venv.reset(seed=0)
            assert ei.value.status == fastrl.Status.ERR_SIZE
            assert "env 0" in "".join(getattr(ei.value, "__notes__", []))
    one = fastrl.VecEnv.from_mujoco(SLIDER, lambda env, data, obs: 0.5, reward, 1, 1)
    with closing(one):  # a number stands for a shape of one element
        assert one.reset(seed=0)[0].tolist() == [[0.5]]


def test_views_outlive_the_env():
    """A view kept after the call holds the vec env: it never dangles."""
    _plugin_or_skip()
    kept = []

    def keep(env, data, obs):
        kept.append(data.qpos)
        observe(env, data, obs)

    venv = fastrl.VecEnv.from_mujoco(SLIDER, keep, reward, 2, 1)
    venv.reset(seed=0)
    venv.step(np.ones((1, 1), np.float32))
    venv.close()
    del venv
    assert kept[-1][0] > 0.0  # still readable: the env's memory lives with the view


def test_data_kept_past_its_env_refuses():
    """The MujocoData object itself (self.data = data) holds the vec env weakly: once
    the vec env is gone, reading it raises instead of reading freed mjData."""
    _plugin_or_skip()
    kept = {}

    def keep(env, data, obs):
        kept["data"] = data
        observe(env, data, obs)

    venv = fastrl.VecEnv.from_mujoco(SLIDER, keep, reward, 2, 1)
    venv.reset(seed=0)
    assert kept["data"].qpos.shape == (1,)  # readable while the vec env lives
    venv.close()
    del venv
    gc.collect()
    for read in (lambda d: d.qpos, lambda d: d.model.body_mass, lambda d: d.xpos,
                 lambda d: d.model.id("body", "cart")):
        with pytest.raises(fastrl.Error) as ei:
            read(kept["data"])
        assert ei.value.status == fastrl.Status.ERR_STATE and "gone" in ei.value.message


def test_functions_keeping_views_do_not_keep_the_env():
    """Functions that keep the views they are given (each owns the vec env) do not keep
    the vec env forever: the library's callbacks reach them weakly, so the vec env is
    destroyed once it, the functions and their views are dropped."""
    _plugin_or_skip()
    import weakref

    class Task:
        def observe(self, env, data, obs):
            self.obs, self.qpos = obs, data.qpos
            observe(env, data, obs)

        def reward(self, env, data, action):
            self.action = action
            return reward(env, data, action)

    task = Task()
    venv = fastrl.VecEnv.from_mujoco(SLIDER, task.observe, task.reward, 2, 2, threads=1)
    venv.reset(seed=0)
    venv.step(np.zeros((2, 1), np.float32))
    h, t = weakref.ref(venv._h), weakref.ref(task)
    assert fastrl._owner_of(task.obs) is h() and fastrl._owner_of(task.action) is h()
    del venv, task
    gc.collect()
    assert t() is None and h() is None


def _final_position(venv, act):
    obs, _ = venv.reset(seed=2)
    for _ in range(50):
        obs, *_ = venv.step(act(obs))
    return float(obs[:, 0].mean())


@pytest.mark.slow
def test_trainer_learns_to_push_right():
    """PPO on the slider, rewarded by position: a few thousand steps teach the greedy
    policy to push right about as hard as the motor can (the most a 50-step episode
    reaches, about 0.30 m, where zero force stays at 0)."""
    _plugin_or_skip()
    venv = fastrl.VecEnv.from_mujoco(SLIDER, observe, reward, 2, 8, max_episode_steps=50,
                                     seed=1)
    tr = fastrl.Trainer(venv, rollout=50, epochs=4, minibatches=2)
    tr.train(20_000)
    with closing(_slider(4)) as test:
        most = _final_position(test, lambda obs: np.ones((4, 1), np.float32))
        learned = _final_position(test, lambda obs: tr.policy.act(obs, deterministic=True))
    assert most > 0.25
    assert learned > 0.9 * most, (learned, most)
