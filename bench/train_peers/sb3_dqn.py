#!/usr/bin/env python3
"""Stable-Baselines3 DQN with rl-baselines3-zoo's settings, a peer for bench/compare_dqn.py.

The settings are read at run time from the installed rl_zoo3's hyperparams/dqn.yml
(bench/train_peers/zoo_dqn.py; keys the zoo leaves out take SB3's DQN defaults) and
printed first. As the zoo trains it: DQN("MlpPolicy", make_vec_env(ENV, n_envs, seed),
policy_kwargs=dict(net_arch=...), seed=SEED) on the CPU; the zoo's n_timesteps is the
budget (--budget overrides it; the exploration schedule runs over the budget).
SB3's own algorithm is untouched: Huber loss, random actions before learning_starts,
target update every target_update_interval env steps, gradient_steps per train_freq.

Evaluation (zoo_dqn.py): every --eval-every env steps, --eval-episodes greedy episodes
(model.predict(obs, deterministic=True)) on a separate env seeded from --seed, printed as
    eval: env_steps=<int> mean_return=<float> seconds=<float>
and at the end (the last evaluation again; the budget ends with one)
    final: env_steps=<int> mean_return=<float> seconds=<float>
seconds: wall time since process start (imports included), after the evaluation.
--stop-at-threshold ends training at the first evaluation whose mean reaches the
threshold (CartPole-v1 475, Acrobot-v1 -100, MountainCar-v0 -110; --threshold).

Usage: /tmp/trainvenv/bin/python bench/train_peers/sb3_dqn.py --env CartPole-v1 --seed 1 --threads 2
"""

import argparse
import os
import sys

try:
    import gymnasium as gym
    import stable_baselines3
    import torch
    from stable_baselines3 import DQN
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
except ImportError as e:  # the peer's packages are not installed: say which file has them
    sys.exit(f"{os.path.basename(__file__)}: {e}: pip install -r bench/requirements-dqn.txt "
             "(bench/README.md)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_dqn  # noqa: E402


class EvalEvery(BaseCallback):
    """Greedy evaluation every `every` env steps; stops training at the budget, and at the
    first solved evaluation when asked."""

    def __init__(self, evaluator, every, budget, stop_at_threshold):
        super().__init__()
        self.evaluator, self.every, self.budget = evaluator, every, budget
        self.stop = stop_at_threshold
        self.next_eval = every

    def act(self, obs):
        return int(self.model.predict(obs, deterministic=True)[0])

    def _on_step(self):
        n = self.num_timesteps
        if n >= self.next_eval or n >= self.budget:
            while self.next_eval <= n:
                self.next_eval += self.every
            solved = self.evaluator(self.act, n)
            if solved and self.stop:
                return False
        return n < self.budget


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    zoo_dqn.add_args(ap)
    a = ap.parse_args()
    zoo_dqn.check_args(ap, a)
    torch.set_num_threads(a.threads)
    s = zoo_dqn.settings(a.env)
    budget = a.budget or s["budget"]
    print(f"sb3_dqn: {a.env} seed {a.seed}, budget {budget}, rl_zoo3 {s['zoo_version']} "
          f"settings: {zoo_dqn.describe(a.env, s)}")
    print(f"stable-baselines3 {stable_baselines3.__version__}, torch {torch.__version__} "
          f"with {torch.get_num_threads()} threads, gymnasium {gym.__version__}; eval every "
          f"{a.eval_every} steps, {a.eval_episodes} episodes, threshold {a.threshold:g}"
          f"{' (stop there)' if a.stop_at_threshold else ''}", flush=True)
    env = make_vec_env(a.env, n_envs=s["n_envs"], seed=a.seed)
    algo = {k: s[k] for k in zoo_dqn.ALGO_KEYS}
    model = DQN(s["policy"], env, policy_kwargs=dict(net_arch=s["net_arch"]), seed=a.seed,
                device="cpu", verbose=0, **algo)
    evaluator = zoo_dqn.Evaluator(a.env, a.seed, a.eval_episodes, a.threshold)
    model.learn(total_timesteps=budget,
                callback=EvalEvery(evaluator, a.eval_every, budget, a.stop_at_threshold))
    if evaluator.last is None or evaluator.last[0] != model.num_timesteps:
        evaluator(lambda o: int(model.predict(o, deterministic=True)[0]), model.num_timesteps)
    evaluator.final()
    return 0


if __name__ == "__main__":
    sys.exit(main())
