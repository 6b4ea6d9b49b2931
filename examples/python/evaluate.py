#!/usr/bin/env python3
"""Evaluate a saved policy (a policy file or a trainer checkpoint) on a built-in env.

    python3 examples/python/evaluate.py runs/py-cartpole/checkpoint.frl \
        [--env CartPole-v1] [--episodes 100] [--sample] [--gymnasium]

By default the library steps the episodes (fastrl.evaluate: a VecEnv, greedy actions).
With --gymnasium the same policy plays gymnasium.make("fastrl/<env>") one episode at a
time, as any gymnasium code would.
"""

import argparse
import sys

import numpy as np

import fastrl


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--env", default="CartPole-v1")
    ap.add_argument("--episodes", type=int, default=100)
    ap.add_argument("--sample", action="store_true", help="sample instead of greedy")
    ap.add_argument("--gymnasium", action="store_true")
    args = ap.parse_args()

    try:
        policy = fastrl.Policy.load(args.checkpoint)
    except fastrl.Error as e:  # a missing, truncated or foreign file says so here
        print(f"evaluate: {e}", file=sys.stderr)
        return 1
    print(f"policy: {policy}")
    if args.gymnasium:
        import gymnasium as gym
        env = gym.make(f"fastrl/{args.env}")
        returns = []
        for ep in range(args.episodes):
            obs, _ = env.reset(seed=ep)
            state = policy.initial_state(1)[0]  # a recurrent policy's memory (or empty)
            done, total = False, 0.0
            while not done:
                action = policy.act(obs, deterministic=not args.sample, state=state)
                obs, reward, term, trunc, _ = env.step(action)
                total += reward
                done = term or trunc
            returns.append(total)
        returns = np.array(returns)
    else:
        returns = fastrl.evaluate(policy, args.env, args.episodes,
                                  deterministic=not args.sample)
    print(f"{args.env}: {len(returns)} episodes, mean return {returns.mean():.2f} "
          f"(std {returns.std():.2f}, min {returns.min():.2f}, max {returns.max():.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
