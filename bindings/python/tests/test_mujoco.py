"""The built-in MuJoCo tasks against Gymnasium's own v5 environments, transition by
transition, with the same MuJoCo (the pinned pip package the plugin was built against).

After each reset, and every 25 steps, both start from one state: fastrl's state
(get_state: time, qpos, qvel, act, warm start, user inputs; the elapsed count last) goes
into Gymnasium's MjData through mujoco.mj_setState with the same state signature and
mj_forward (as Gymnasium's set_state does), and back into fastrl through set_state. Then
both step with the same float32 actions, and every transition is compared, the
simulator states included. (Between restores both run on: quantities MuJoCo derives
from positions, such as xpos, which Ant's forward reward reads before a step, are those
of the previous step's last substep on both sides. fastrl's Ant state carries that
torso position, so that a resumed run continues exactly; Gymnasium's set_state takes
it from the state's own positions instead, so at a restore the test writes Gymnasium's
into the state it gives back to fastrl.) Observations are compared after rounding
Gymnasium's float64 to float32, rewards after rounding to float32 (fastrl's reward
type); terminations must agree.

Tolerances: both sides run the same libmujoco on the same data in the same order, so the
physics is bit-identical; the observation and reward formulas are recomputed in C. They
follow NumPy's order of operations (its pairwise summation and float32 control costs,
lib/mujoco/task.h), and sin, cos and sqrt are correctly rounded or nearly so on both
sides, so the test allows one float32 rounding step: |a - b| <= 2^-23 * max(1, |b|) on
observations and rewards. In practice the differences are zero (the test prints the
largest it saw).

Skipped, with the reason, where the build has no MuJoCo plugin or the venv no mujoco."""

import numpy as np
import pytest

import fastrl

TASKS = ["InvertedPendulum-v5", "InvertedDoublePendulum-v5", "Reacher-v5", "Hopper-v5",
         "HalfCheetah-v5", "Walker2d-v5", "Ant-v5"]
STEPS = 2000  # Ant's episodes then end in ground contact too (see the restart)
TOL = 2.0 ** -23


def _plugin_or_skip():
    try:
        fastrl.Env("InvertedPendulum-v5").close()
    except fastrl.Error as e:
        pytest.skip(f"no MuJoCo plugin in this build: {e}")


@pytest.fixture(scope="module")
def mujoco():
    _plugin_or_skip()
    mj = pytest.importorskip("mujoco", reason="the venv has no mujoco package")
    pytest.importorskip("gymnasium.envs.mujoco", reason="gymnasium's MuJoCo envs do not import")
    return mj


def _spec(mj):
    t = mj.mjtState  # as lib/mujoco/plugin.h's MJT_STATE_SPEC
    return int(t.mjSTATE_FULLPHYSICS) | int(t.mjSTATE_WARMSTART) | int(t.mjSTATE_USER)


def _gym_env(name):
    import gymnasium as gym
    return gym.make(name).unwrapped  # no TimeLimit, no checks: the raw transition


def _sync(mj, genv, state):
    """Put fastrl's state (MuJoCo's part of it) into Gymnasium's env."""
    n = mj.mj_stateSize(genv.model, _spec(mj))
    mj.mj_setState(genv.model, genv.data, np.ascontiguousarray(state[:n]), _spec(mj))
    mj.mj_forward(genv.model, genv.data)


def _close(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.abs(a - b), TOL * np.maximum(1.0, np.abs(b))


def _as_gym_restores(mj, genv, state):
    """fastrl's state with its carried values (Ant's torso x, y before the next step,
    after MuJoCo's own state) set to what Gymnasium's set_state leaves: the torso's
    position computed from the state."""
    n = mj.mj_stateSize(genv.model, _spec(mj))
    if len(state) - 1 > n:
        state = state.copy()
        state[n:n + 2] = genv.data.body("torso").xpos[:2]
    return state


def _gym_state(mj, genv):
    out = np.empty(mj.mj_stateSize(genv.model, _spec(mj)))
    mj.mj_getState(genv.model, genv.data, out, _spec(mj))
    return out


@pytest.mark.parametrize("name", TASKS)
def test_matches_gymnasium(mujoco, name):
    env = fastrl.Env(name)
    genv = _gym_env(name)
    assert env.observation_space.shape == genv.observation_space.shape
    assert np.array_equal(env.action_space.low, genv.action_space.low)
    assert np.array_equal(env.action_space.high, genv.action_space.high)
    rng = np.random.default_rng(7)
    obs, _ = env.reset(seed=11)
    restart = True
    worst = {"obs": 0.0, "reward": 0.0, "state": 0.0}
    episodes = 0
    for t in range(STEPS):
        if restart or t % 25 == 0:
            # Both sides from one state through set_state (each runs mj_forward). After
            # fastrl's reset Gymnasium's data is reset too: mj_forward leaves what it
            # does not compute (cfrc_ext, Ant's contact forces) from the last step,
            # where a reset's are zeros.
            if restart:
                mujoco.mj_resetData(genv.model, genv.data)
            state = env.get_state()
            _sync(mujoco, genv, state)
            obs = env.set_state(_as_gym_restores(mujoco, genv, state))
            d, tol = _close(obs, genv._get_obs().astype(np.float32))
            assert np.all(d <= tol), f"{name} step {t}: observations of one state differ"
        action = rng.uniform(genv.action_space.low, genv.action_space.high).astype(np.float32)
        obs, rew, term, trunc, _ = env.step(action)
        gobs, grew, gterm, gtrunc, _ = genv.step(action)
        d, tol = _close(obs, gobs.astype(np.float32))
        assert np.all(d <= tol), (f"{name} step {t}: observation differs at "
                                  f"{np.argmax(d - tol)} by {d.max()}")
        worst["obs"] = max(worst["obs"], float(d.max()))
        d, tol = _close(rew, np.float32(grew))
        assert d <= tol, f"{name} step {t}: reward {rew} against Gymnasium's {grew}"
        worst["reward"] = max(worst["reward"], float(d))
        assert bool(term) == bool(gterm), f"{name} step {t}: terminated {term} vs {gterm}"
        assert not gtrunc
        # The simulator states stay equal: the same MuJoCo on the same data.
        gstate = _gym_state(mujoco, genv)
        d = np.abs(env.get_state()[:len(gstate)] - gstate)
        assert d.max() == 0.0, f"{name} step {t}: states differ by {d.max()}"
        worst["state"] = max(worst["state"], float(d.max()))
        restart = bool(term or trunc)
        if restart:
            episodes += 1
            obs, _ = env.reset(seed=100 + t)
    print(f"{name}: {STEPS} transitions, {episodes} episodes ended; largest differences: "
          + ", ".join(f"{k} {v:.3g}" for k, v in worst.items()))
    env.close()
    genv.close()


# Gymnasium's reset noise: (qpos - qpos0, qvel) within these bounds (uniform), or only
# spread (Gaussian, 0.1 standard deviation) where Gymnasium draws normal velocities.
NOISE = {"InvertedPendulum-v5": (0.01, 0.01), "InvertedDoublePendulum-v5": (0.1, None),
         "Hopper-v5": (0.005, 0.005), "HalfCheetah-v5": (0.1, None),
         "Walker2d-v5": (0.005, 0.005), "Ant-v5": (0.1, None)}


@pytest.mark.parametrize("name", sorted(NOISE))
def test_reset_noise(mujoco, name):
    env = fastrl.Env(name)
    genv = _gym_env(name)
    nq, nv = genv.model.nq, genv.model.nv
    qpos0 = genv.model.qpos0.copy()
    qpos_bound, qvel_bound = NOISE[name]
    velocities = []
    for seed in range(50):
        env.reset(seed=seed)
        s = env.get_state()  # time, qpos, qvel, ...
        assert s[0] == 0.0
        dq = s[1:1 + nq] - qpos0
        assert np.all(np.abs(dq) <= qpos_bound), f"{name} seed {seed}: qpos noise {dq}"
        qvel = s[1 + nq:1 + nq + nv]
        if qvel_bound is not None:
            assert np.all(np.abs(qvel) <= qvel_bound)
        velocities.append(qvel)
    spread = np.std(np.concatenate(velocities))
    want = qvel_bound / np.sqrt(3) if qvel_bound is not None else 0.1
    assert 0.7 * want < spread < 1.3 * want, f"{name}: qvel spread {spread}, want {want}"
    env.close()
    genv.close()


def test_reacher_goal_inside_disc(mujoco):
    env = fastrl.Env("Reacher-v5")
    for seed in range(50):
        env.reset(seed=seed)
        s = env.get_state()
        goal = s[1 + 2:1 + 4]
        assert np.hypot(*goal) < 0.2
        assert s[1 + 4 + 2] == 0.0 and s[1 + 4 + 3] == 0.0  # the target does not move
    env.close()


def test_version(mujoco):
    assert fastrl.mujoco_version() == mujoco.__version__


def test_time_limits_and_vec_env(mujoco):
    venv = fastrl.VecEnv("Reacher-v5", num_envs=4)
    venv.reset(seed=3)
    truncs = 0
    for _ in range(50):
        _, _, term, trunc, _ = venv.step(np.zeros((4, 2), dtype=np.float32))
        assert not term.any()
        truncs += int(trunc.sum())
    assert truncs == 4  # Reacher-v5's 50-step limit, every env once
    venv.close()
