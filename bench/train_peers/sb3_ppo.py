#!/usr/bin/env python3
"""Stable-Baselines3 PPO, a peer for fastrl train, with the same CLI and output as
bench/cleanrl_ppo.py.

--hyperparams zoo (default): rl-baselines3-zoo's tuned PPO settings (hyperparams/ppo.yml)
  CartPole-v1: 8 envs, n_steps 32, batch 256, gae_lambda 0.8, gamma 0.98, 20 epochs,
               ent_coef 0, learning rate linear from 1e-3, clip range linear from 0.2
  Acrobot-v1:  16 envs, n_steps 256, gae_lambda 0.94, gamma 0.99, 4 epochs, ent_coef 0,
               VecNormalize (observations and rewards)
  Pendulum-v1: 4 envs, n_steps 1024, gae_lambda 0.95, gamma 0.9, 10 epochs, ent_coef 0,
               lr 1e-3, clip 0.2, gSDE (sde_sample_freq 4)
  The zoo trains CartPole and Pendulum for 1e5 steps; here the linear schedules run over
  --total-steps instead (default 500000), so they decay 5x more slowly.
--hyperparams default: PPO("MlpPolicy", env) with SB3's own defaults and 1 env
  (2048 steps, batch 64, 10 epochs, lr 3e-4, gamma 0.99, gae_lambda 0.95, clip 0.2).
The policy is SB3's MlpPolicy either way: separate 64x64 tanh actor and critic,
orthogonal init. Envs are SB3's DummyVecEnv (same-step autoreset, with the final
observation kept in the info; truncated episodes are bootstrapped), episode returns
from its Monitor wrapper (raw rewards, inside any VecNormalize).

Output (last two lines, as `fastrl train`):
  env_steps_per_second: <env steps / seconds of model.learn>
  mean_return: <mean of the last 100 episodes> steps: <env steps> seconds: <since process start>

Usage: /tmp/trainvenv/bin/python bench/train_peers/sb3_ppo.py --env CartPole-v1 --seed 1 --threads 2
"""

import argparse
import os
import sys

try:
    import gymnasium as gym
    import stable_baselines3
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize
except ImportError as e:  # the peer's packages are not installed: say which file has them
    sys.exit(f"{os.path.basename(__file__)}: {e}: pip install -r bench/requirements-train.txt "
             "(bench/README.md)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Clock, ReturnWindow, add_common_args, print_result,  # noqa: E402
                    resolve_target)


def linear(initial):
    """rl-zoo's lin_X: X times the fraction of the budget that is left."""
    def schedule(progress_remaining):
        return progress_remaining * initial
    schedule.__name__ = f"lin_{initial}"  # for the printed settings
    return schedule


ZOO = {
    "CartPole-v1": dict(n_envs=8, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98,
                        n_epochs=20, ent_coef=0.0, learning_rate=linear(1e-3),
                        clip_range=linear(0.2)),
    "Acrobot-v1": dict(n_envs=16, normalize=True, n_steps=256, gae_lambda=0.94,
                       gamma=0.99, n_epochs=4, ent_coef=0.0),
    "Pendulum-v1": dict(n_envs=4, n_steps=1024, gae_lambda=0.95, gamma=0.9, n_epochs=10,
                        ent_coef=0.0, learning_rate=1e-3, clip_range=0.2, use_sde=True,
                        sde_sample_freq=4),
}


class TargetCallback(BaseCallback):
    """Feeds finished episodes to the window; stops training once it is solved."""

    def __init__(self, window, clock):
        super().__init__()
        self.window, self.clock = window, clock

    def _on_training_start(self):
        self.clock.start()

    def _on_step(self):
        for info in self.locals["infos"]:
            episode = info.get("episode")
            if episode is not None:
                self.window.add(episode["r"])
        return not self.window.solved()


def hyperparams(env_id, kind):
    if kind == "default":
        return dict(n_envs=1)
    if env_id not in ZOO:
        raise SystemExit(f"sb3_ppo: no zoo hyperparameters for {env_id}; "
                         f"use --hyperparams default (zoo has {', '.join(ZOO)})")
    return dict(ZOO[env_id])


def build(a, hp):
    n_envs, normalize = hp.pop("n_envs"), hp.pop("normalize", False)
    env = make_vec_env(a.env, n_envs=n_envs, seed=a.seed)
    if normalize:
        env = VecNormalize(env, gamma=hp.get("gamma", 0.99))
    return PPO("MlpPolicy", env, seed=a.seed, device="cpu", verbose=0, **hp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap, default_steps=500000)
    ap.add_argument("--hyperparams", choices=("zoo", "default"), default="zoo")
    a = ap.parse_args()
    torch.set_num_threads(max(1, a.threads))
    hp = hyperparams(a.env, a.hyperparams)
    shown = {k: getattr(v, "__name__", v) for k, v in hp.items()}
    model = build(a, hp)
    window, clock = ReturnWindow(resolve_target(a.env, a.target)), Clock()
    model.learn(total_timesteps=a.total_steps, callback=TargetCallback(window, clock))
    steps = model.num_timesteps
    print(f"sb3_ppo: {a.env} seed {a.seed}, {a.hyperparams} hyperparameters {shown}, "
          f"stable-baselines3 {stable_baselines3.__version__}, torch {torch.__version__} "
          f"with {torch.get_num_threads()} threads, gymnasium {gym.__version__}, "
          f"target {window.target}")
    print_result(window, steps, clock.rate(steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
