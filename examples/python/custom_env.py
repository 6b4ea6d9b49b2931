#!/usr/bin/env python3
"""A small environment written in Python, trained by the library.

"Reach the target": a walker on the cells 0..10 must reach a target cell. Actions are
0 = left, 1 = stay, 2 = right; reaching the target gives +1 and ends the episode, every
other step costs 0.05, and the library adds a time limit of 50 steps. The best policy
walks straight there (mean return 0.85 over random starts and targets: 4 cells apart on
average); a uniformly random one scores below 0. Training stops at a mean of 0.75.

The env is a plain gymnasium.Env. fastrl.VecEnv.from_python runs 16 copies through the
library's batch callback (on this thread; see doc/python.md for per_env=True), so the
library validates actions, applies the time limit, autoresets, checks for NaN and keeps
the episode statistics, and fastrl.Trainer learns on it like on a built-in.

    python3 examples/python/custom_env.py [--out runs/py-reach]

Exits 1 unless the trained policy's mean return beats a random policy's by 0.5.
"""

import argparse
import os
import sys

import gymnasium as gym
import numpy as np

import fastrl


class Reach(gym.Env):
    metadata = {"render_modes": []}
    CELLS = 11

    def __init__(self):
        self.observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)  # the library passes a seed from its own stream
        self.pos, self.target = (int(x) for x in
                                 self.np_random.choice(self.CELLS, 2, replace=False))
        return self._obs(), {}

    def _obs(self):
        return np.array([self.pos, self.target], np.float32) / (self.CELLS - 1)

    def step(self, action):
        self.pos = min(self.CELLS - 1, max(0, self.pos + int(action) - 1))
        reached = self.pos == self.target
        return self._obs(), 1.0 if reached else -0.05, reached, False, {}


def make_env(runtime, n=16):
    return fastrl.VecEnv.from_python([Reach for _ in range(n)], runtime=runtime,
                                     max_episode_steps=50)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/py-reach")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    # The check that gymnasium applies to any env, on the env itself.
    from gymnasium.utils.env_checker import check_env
    check_env(Reach(), skip_render_check=True)

    runtime = fastrl.Runtime(seed=args.seed)  # the trainer's seed is its runtime's
    env = make_env(runtime)
    trainer = fastrl.Trainer(env, rollout=64, lr=2.5e-3, target_return=0.75)
    m = trainer.train(300_000, callback=lambda m: print(
        f"\rupdate {m.update:3d}  mean return {m.mean_return:6.3f}  "
        f"mean length {m.mean_length:5.1f}", end="", flush=True))
    print(f"\ntrained: {m.env_steps} steps, {m.seconds:.2f} s, "
          f"{m.steps_per_second:.0f} steps/s (Python env steps included)")
    path = os.path.join(args.out, "reach-policy.frl")
    trainer.policy.save(path)  # a host env's simulator cannot be saved; the policy can

    eval_env = make_env(runtime)
    trained = fastrl.evaluate(fastrl.Policy.load(path, runtime=runtime), eval_env, 200)
    random_policy = fastrl.Policy(env.single_observation_space, env.single_action_space,
                                  runtime=runtime)  # fresh weights: near-uniform
    random_ret = fastrl.evaluate(random_policy, eval_env, 200, deterministic=False)
    print(f"mean return over 200 episodes: trained {trained.mean():.3f}, "
          f"random {random_ret.mean():.3f}")
    return 0 if trained.mean() >= random_ret.mean() + 0.5 else 1


if __name__ == "__main__":
    sys.exit(main())
