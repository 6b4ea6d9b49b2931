#!/usr/bin/env python3
"""A two-link arm of our own, described in MJCF below, learns with PPO to put its
fingertip on a target placed at random each episode: examples/mujoco_arm.c in Python.

The library compiles the model once, gives each env its own mjData and steps the envs
with MuJoCo on its threads; the three functions below give the model its meaning
(observation, reward, the target's placement). They read and write MuJoCo's arrays by
name (``data.qpos``, ``data.site_xpos``, ``data.model.id("site", "tip")``) as numpy
views of the env's own mjData: no ``mujoco`` package is needed. The target sits on two
unactuated slide joints, so it is part of qpos and of MuJoCo's state, checkpoints
included.

    python3 examples/python/mujoco_arm.py [--steps 300000]

Prints the greedy policy's mean return and mean final distance to the target before and
after training; exits 1 if, with 100K steps or more, the trained arm does not end nearer
the target than the untrained one, and 77 (skip) without the library's MuJoCo plugin.
"""

import argparse
import sys

import numpy as np

import fastrl

ENVS = 4
OBS = 10

# No gravity and no contacts: a planar arm on a table, 0.1 m links, torque motors.
ARM = """
<mujoco model="arm">
  <option timestep="0.01" gravity="0 0 0"/>
  <default><joint damping="0.01" armature="0.0005"/>
    <geom contype="0" conaffinity="0" density="500"/></default>
  <worldbody>
    <body name="upper">
      <joint name="shoulder" type="hinge" axis="0 0 1"/>
      <geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01"/>
      <body name="fore" pos="0.1 0 0">
        <joint name="elbow" type="hinge" axis="0 0 1" limited="true" range="-3 3"/>
        <geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01"/>
        <site name="tip" pos="0.11 0 0" size="0.005"/>
      </body>
    </body>
    <body name="target">
      <joint name="tx" type="slide" axis="1 0 0" damping="0" armature="0"/>
      <joint name="ty" type="slide" axis="0 1 0" damping="0" armature="0"/>
      <geom type="sphere" size="0.01"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="shoulder" ctrllimited="true" ctrlrange="-1 1" gear="0.05"/>
    <motor joint="elbow" ctrllimited="true" ctrlrange="-1 1" gear="0.05"/>
  </actuator>
</mujoco>
"""


class Arm:
    """The model's meaning. Each env calls with its own index, so each keeps its own
    entry of final_distance and no lock is needed."""

    def __init__(self):
        self.final_distance = np.zeros(ENVS)

    @staticmethod
    def tip_minus_target(data):
        m = data.model
        return (data.site_xpos[m.id("site", "tip"), :2]
                - data.xpos[m.id("body", "target"), :2])

    def observe(self, env, data, obs):
        q = data.qpos
        obs[0:2] = np.cos(q[:2])
        obs[2:4] = np.sin(q[:2])
        obs[4:6] = q[2:4]  # the target
        obs[6:8] = data.qvel[:2]
        obs[8:10] = self.tip_minus_target(data)

    def reward(self, env, data, action):
        dist = float(np.hypot(*self.tip_minus_target(data)))
        self.final_distance[env] = dist
        return -dist - 0.01 * float(action[0] ** 2 + action[1] ** 2)

    @staticmethod
    def reset(env, data, seed):
        """The arm near straight out, the target anywhere it reaches (0.05 to 0.19 m)."""
        rng = np.random.default_rng(seed)
        data.qpos[:2] = rng.uniform(-0.1, 0.1, 2)
        r, angle = 0.05 + 0.14 * np.sqrt(rng.uniform()), 2 * np.pi * rng.uniform()
        data.qpos[2:4] = r * np.cos(angle), r * np.sin(angle)


def evaluate(policy, venv, arm):
    """The greedy policy over 40 episodes: its mean return and the mean final distance."""
    returns = fastrl.evaluate(policy, venv, 40, seed=2024)
    return float(returns.mean()), float(arm.final_distance.mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=300_000)
    args = ap.parse_args()
    if fastrl.mujoco_version() is None:
        print("mujoco_arm.py: SKIP: the library has no MuJoCo plugin")
        return 77
    config = {"env.frame_skip": 2, "env.max_episode_steps": 50,
              "train.rollout": 512, "train.epochs": 10, "train.minibatches": 32,
              "train.lr": 3e-4, "train.ent_coef": 0, "policy.obs_norm": True,
              "train.reward_norm": True}
    arm = Arm()
    # One thread: the functions are Python, and with two threads they would take turns
    # with the GIL, handing it over at every call (3x slower here; doc/python.md).
    rt = fastrl.Runtime(seed=3, threads=1)
    make = dict(reset=arm.reset, runtime=rt, config=config)
    train_env = fastrl.VecEnv.from_mujoco(ARM, arm.observe, arm.reward, OBS, ENVS, **make)
    eval_env = fastrl.VecEnv.from_mujoco(ARM, arm.observe, arm.reward, OBS, ENVS, **make)
    trainer = fastrl.Trainer(train_env, config)
    ret0, dist0 = evaluate(trainer.policy, eval_env, arm)
    print(f"MuJoCo {fastrl.mujoco_version()}, {ENVS} envs\n"
          f"before: greedy mean return {ret0:7.2f}, final distance {dist0:.3f} m")
    m = trainer.train(args.steps)
    ret1, dist1 = evaluate(trainer.policy, eval_env, arm)
    print(f"after {m.env_steps} steps ({m.seconds:.1f} s): greedy mean return {ret1:7.2f}, "
          f"final distance {dist1:.3f} m")
    if args.steps < 100_000:
        print(f"({args.steps} steps are too few to expect learning: not checked)")
        return 0
    if not dist1 < dist0:
        print("mujoco_arm.py: the trained arm ends no nearer the target", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
