#!/usr/bin/env python3
"""Train a GRU policy on CartPoleNoVel-v1, then run it from Python with its state.

    python3 examples/python/recurrent_cartpole.py [--steps 60000] [--envs 16]

CartPoleNoVel-v1 hides the velocities, so a policy must remember earlier observations.
After training, a controller loop acts greedily on a VecEnv, carrying the recurrent
state in a numpy array that Policy.act updates in place, and passing the vec env's
reset_steps flags as `reset` so that each new episode starts from a zero state. The
same loop with the state wiped before every step (reset all rows) shows what the memory
is worth. Exits 1 if the policy does better without its memory.
"""

import argparse
import sys

import numpy as np

import fastrl


def run_episodes(policy, venv, episodes, forget=False):
    """Greedy returns of the first `episodes` episodes to finish."""
    venv.reset(seed=123)
    state = policy.initial_state(venv.num_envs)  # zeros: fresh agents
    wipe = np.ones(venv.num_envs, bool)
    returns = []
    counter = 0
    while len(returns) < episodes:
        # reset_steps[i]: env i has just been reset, so its observation starts an
        # episode. Passed as it is (a bool view of the library's array, no copy).
        reset = wipe if forget else venv.reset_steps
        actions = policy.act(venv.observations, deterministic=True, counter=counter,
                             state=state, reset=reset)  # updates state in place
        counter += 1
        _, _, terminated, truncated, _ = venv.step(actions)
        done = terminated | truncated
        returns.extend(venv.episode_returns[done].tolist())
    return np.array(returns[:episodes])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=60_000)
    ap.add_argument("--envs", type=int, default=16)
    ap.add_argument("--episodes", type=int, default=32)
    args = ap.parse_args()

    trainer = fastrl.Trainer("CartPoleNoVel-v1", seed=1,
                             config={"policy.core": "gru", "policy.core_size": 64})
    m = trainer.train(args.steps)
    policy = trainer.policy
    print(f"trained {m.env_steps} steps: mean return {m.mean_return:.1f}; "
          f"{policy.num_parameters} parameters, state_size {policy.state_size}")

    venv = fastrl.make_vec("CartPoleNoVel-v1", num_envs=args.envs)
    with_memory = run_episodes(policy, venv, args.episodes)
    without = run_episodes(policy, venv, args.episodes, forget=True)
    print(f"greedy, state carried: mean return {with_memory.mean():.1f}")
    print(f"greedy, state wiped every step: mean return {without.mean():.1f}")
    return 0 if with_memory.mean() > without.mean() else 1


if __name__ == "__main__":
    sys.exit(main())
