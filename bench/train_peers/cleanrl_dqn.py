#!/usr/bin/env python3
"""A DQN in CleanRL's single-file style (the algorithm of CleanRL's dqn.py, written
afresh here), run with rl-baselines3-zoo's settings: a peer for bench/compare_dqn.py.

The algorithm, as CleanRL's dqn.py has it: an MLP Q-network (ReLU hidden layers) and a
target copy; uniform replay in Stable-Baselines3's ReplayBuffer (timeouts not treated
as terminal: only `terminated` is stored as done, and the next observation stored at a
truncation is the real one); epsilon falling linearly from exploration_initial_eps to
exploration_final_eps over exploration_fraction x budget steps (actions epsilon-greedy
from the first step); once the step index (from 0) is past learning_starts, training
every train_frequency-th step on a batch of batch_size with the TD target
r + gamma (1 - done) max_a' Q_target(s', a'), MSE loss, Adam; every
target_network_frequency-th step there, target <- tau Q + (1 - tau) target.

Where it differs from CleanRL's dqn.py:
  - settings: the zoo's (bench/train_peers/zoo_dqn.py reads rl_zoo3's dqn.yml; keys the
    zoo leaves out take SB3's DQN defaults), not CleanRL's defaults, mapped as
    learning_rate, batch_size, buffer_size, learning_starts, gamma, tau,
    target_update_interval -> target_network_frequency, train_freq -> train_frequency,
    exploration_initial_eps/final_eps/fraction -> start_e/end_e/exploration_fraction,
    policy_kwargs net_arch -> the hidden widths (CleanRL: 120, 84);
  - gradient_steps: each training step does gradient_steps updates, each on a fresh
    batch (-1: train_frequency updates, as SB3 with one env); CleanRL does one;
  - gradients are clipped to a norm of max_grad_norm (10, SB3's), CleanRL does not clip;
  - one gymnasium env stepped directly (reset by hand at the end of an episode), not a
    SyncVectorEnv of one, so there is no vector-env autoreset to work around;
  - evaluation: zoo_dqn.py's protocol, the same as sb3_dqn.py's (every --eval-every env
    steps, --eval-episodes greedy episodes on a separate env seeded from --seed, the
    eval:/final: lines, --stop-at-threshold); CleanRL evaluates once after training;
  - no TensorBoard/W&B logging, no model saving, the CPU only.

Output and options: as bench/train_peers/sb3_dqn.py.
Usage: /tmp/trainvenv/bin/python bench/train_peers/cleanrl_dqn.py --env CartPole-v1 --seed 1 --threads 2
"""

import argparse
import os
import random
import sys

try:
    import gymnasium as gym
    import numpy as np
    import stable_baselines3
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from stable_baselines3.common.buffers import ReplayBuffer
except ImportError as e:  # the peer's packages are not installed: say which file has them
    sys.exit(f"{os.path.basename(__file__)}: {e}: pip install -r bench/requirements-dqn.txt "
             "(bench/README.md)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_dqn  # noqa: E402


class QNetwork(nn.Module):
    def __init__(self, obs_dim, n_actions, hidden):
        super().__init__()
        layers, width = [], obs_dim
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, n_actions))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


def epsilon_at(start, end, duration, t):
    """Linear from start to end over `duration` steps, then end."""
    if duration <= 0:
        return end
    return max(start + (end - start) * t / duration, end)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    zoo_dqn.add_args(ap)
    a = ap.parse_args()
    zoo_dqn.check_args(ap, a)
    torch.set_num_threads(a.threads)
    s = zoo_dqn.settings(a.env)
    if s["n_envs"] != 1:
        raise SystemExit(f"cleanrl_dqn: the zoo uses {s['n_envs']} envs for {a.env}; "
                         "this peer steps one")
    budget = a.budget or s["budget"]
    updates = s["train_freq"] if s["gradient_steps"] == -1 else s["gradient_steps"]
    print(f"cleanrl_dqn: {a.env} seed {a.seed}, budget {budget}, rl_zoo3 {s['zoo_version']} "
          f"settings: {zoo_dqn.describe(a.env, s)}; {updates} gradient steps every "
          f"{s['train_freq']} env steps")
    print(f"torch {torch.__version__} with {torch.get_num_threads()} threads, gymnasium "
          f"{gym.__version__}, stable-baselines3 {stable_baselines3.__version__} (ReplayBuffer); "
          f"eval every {a.eval_every} steps, {a.eval_episodes} episodes, threshold "
          f"{a.threshold:g}{' (stop there)' if a.stop_at_threshold else ''}", flush=True)

    random.seed(a.seed)
    np.random.seed(a.seed)
    torch.manual_seed(a.seed)
    torch.backends.cudnn.deterministic = True

    env = gym.make(a.env)
    env.action_space.seed(a.seed)
    obs_dim = int(np.prod(env.observation_space.shape))
    n_actions = int(env.action_space.n)
    q_network = QNetwork(obs_dim, n_actions, s["net_arch"])
    optimizer = torch.optim.Adam(q_network.parameters(), lr=s["learning_rate"])
    target_network = QNetwork(obs_dim, n_actions, s["net_arch"])
    target_network.load_state_dict(q_network.state_dict())
    rb = ReplayBuffer(s["buffer_size"], env.observation_space, env.action_space, "cpu",
                      handle_timeout_termination=False)

    def greedy(o):
        with torch.no_grad():
            return int(q_network(torch.as_tensor(o, dtype=torch.float32)).argmax().item())

    evaluator = zoo_dqn.Evaluator(a.env, a.seed, a.eval_episodes, a.threshold)
    duration = s["exploration_fraction"] * budget
    gamma, tau = s["gamma"], s["tau"]
    obs, _ = env.reset(seed=a.seed)
    for global_step in range(budget):
        eps = epsilon_at(s["exploration_initial_eps"], s["exploration_final_eps"], duration,
                         global_step)
        if random.random() < eps:
            action = env.action_space.sample()
        else:
            action = greedy(obs)
        next_obs, reward, terminated, truncated, info = env.step(action)
        rb.add(np.array([obs]), np.array([next_obs]), np.array([action]),
               np.array([reward]), np.array([terminated]), [info])
        obs = env.reset()[0] if terminated or truncated else next_obs

        if global_step > s["learning_starts"]:
            if global_step % s["train_freq"] == 0:
                for _ in range(updates):
                    data = rb.sample(s["batch_size"])
                    with torch.no_grad():
                        target_max, _ = target_network(data.next_observations).max(dim=1)
                        td_target = (data.rewards.flatten()
                                     + gamma * target_max * (1 - data.dones.flatten()))
                    old_val = q_network(data.observations).gather(1, data.actions).squeeze(1)
                    loss = F.mse_loss(td_target, old_val)
                    optimizer.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(q_network.parameters(), s["max_grad_norm"])
                    optimizer.step()
            if global_step % s["target_update_interval"] == 0:
                for tp, qp in zip(target_network.parameters(), q_network.parameters()):
                    tp.data.copy_(tau * qp.data + (1.0 - tau) * tp.data)

        steps = global_step + 1
        if steps % a.eval_every == 0 or steps == budget:
            if evaluator(greedy, steps) and a.stop_at_threshold:
                break
    evaluator.final()
    return 0


if __name__ == "__main__":
    sys.exit(main())
