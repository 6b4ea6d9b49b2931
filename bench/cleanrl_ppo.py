#!/usr/bin/env python3
"""CleanRL-style PPO (ppo.py / ppo_continuous_action.py defaults), a peer for fastrl train.

A reproduction, written from the algorithm, of CleanRL's two single-file PPOs with their
default hyperparameters:

  discrete (CartPole-v1, Acrobot-v1, ...), as ppo.py:
    4 envs x 128 steps, Adam lr 2.5e-4 (eps 1e-5) annealed linearly to 0 over the
    budget, gamma 0.99, GAE lambda 0.95, 4 minibatches, 4 epochs, clip 0.2, clipped
    value loss, entropy 0.01, value 0.5, max grad norm 0.5, advantages normalised per
    minibatch; separate 64x64 tanh actor and critic, orthogonal init (sqrt 2; actor
    head 0.01, critic head 1).
  continuous (Pendulum-v1, ...), as ppo_continuous_action.py:
    1 env x 2048 steps, lr 3e-4 annealed, 32 minibatches, 10 epochs, entropy 0, the
    rest as above; Gaussian policy with a state-independent log-std; per-env wrappers
    ClipAction, NormalizeObservation (clipped to +-10), NormalizeReward (clipped to +-10).

Like CleanRL, an episode that ends by truncation (the time limit) is treated as
terminal: its last value is not bootstrapped.

Gymnasium 1.x autoreset. gymnasium's SyncVectorEnv resets in next-step mode: the step
that ends an episode returns the last observation of that episode, and on the *next*
step that env ignores the action and returns its reset observation with reward 0 and no
termination. That second step is no transition of the MDP. In CleanRL's storage,
dones[t] is "the step before t ended an episode", i.e. "obs[t] is a final observation",
which in next-step mode is exactly "step t is the reset step". So:
  - GAE needs no change: step t-1 sees nextnonterminal = 1 - dones[t] = 0 and takes
    nothing from the reset slot t;
  - the reset slots (dones[t] = 1) are dropped from the loss: the update samples its
    minibatches from the other slots only (np.array_split into the same number of
    minibatches, so minibatches are a few samples smaller than CleanRL's 128).
Reset steps still count as env steps (as fastrl counts them): 0.2 % of CartPole's steps
once it plays 500-step episodes.

Output (last two lines, as `fastrl train`):
  env_steps_per_second: <env steps / seconds of the training loop>
  mean_return: <mean of the last 100 episodes> steps: <env steps> seconds: <since process start>

Usage: /tmp/trainvenv/bin/python bench/cleanrl_ppo.py --env CartPole-v1 --seed 1 --threads 2
"""

import argparse
import os
import random
import sys

try:
    import gymnasium as gym
    import numpy as np
    import torch
    import torch.nn as nn
    from torch.distributions import Categorical, Normal
except ImportError as e:  # the peer's packages are not installed: say which file has them
    sys.exit(f"{os.path.basename(__file__)}: {e}: pip install -r bench/requirements-train.txt "
             "(bench/README.md)")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_peers"))
from common import (Clock, ReturnWindow, add_common_args, print_result,  # noqa: E402
                    resolve_target)

COMMON = dict(gamma=0.99, gae_lambda=0.95, clip_coef=0.2, vf_coef=0.5,
              max_grad_norm=0.5, norm_adv=True, clip_vloss=True, anneal_lr=True)
DISCRETE = dict(COMMON, num_envs=4, num_steps=128, learning_rate=2.5e-4,
                num_minibatches=4, update_epochs=4, ent_coef=0.01)
CONTINUOUS = dict(COMMON, num_envs=1, num_steps=2048, learning_rate=3e-4,
                  num_minibatches=32, update_epochs=10, ent_coef=0.0)


# ---------------------------------------------------------------- environments


def make_env(env_id, continuous, gamma):
    def thunk():
        env = gym.make(env_id)
        if continuous:
            env = gym.wrappers.FlattenObservation(env)
        # Innermost statistics wrapper: episode returns are the raw rewards, before
        # any normalisation below.
        env = gym.wrappers.RecordEpisodeStatistics(env)
        if continuous:
            env = gym.wrappers.ClipAction(env)
            env = gym.wrappers.NormalizeObservation(env)
            env = gym.wrappers.TransformObservation(
                env, lambda obs: np.clip(obs, -10, 10), env.observation_space)
            env = gym.wrappers.NormalizeReward(env, gamma=gamma)
            env = gym.wrappers.TransformReward(env, lambda r: np.clip(r, -10, 10))
        return env
    return thunk


def make_envs(env_id, hp, continuous):
    fns = [make_env(env_id, continuous, hp["gamma"]) for _ in range(hp["num_envs"])]
    try:  # gymnasium >= 1.1 names the mode; 1.0 only has next-step
        from gymnasium.vector import AutoresetMode
        return gym.vector.SyncVectorEnv(fns, autoreset_mode=AutoresetMode.NEXT_STEP)
    except ImportError:
        return gym.vector.SyncVectorEnv(fns)


# ---------------------------------------------------------------- agent


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias_const)
    return layer


def mlp(n_in, n_out, head_std):
    return nn.Sequential(layer_init(nn.Linear(n_in, 64)), nn.Tanh(),
                         layer_init(nn.Linear(64, 64)), nn.Tanh(),
                         layer_init(nn.Linear(64, n_out), std=head_std))


class Agent(nn.Module):
    def __init__(self, obs_dim, action_space):
        super().__init__()
        self.continuous = isinstance(action_space, gym.spaces.Box)
        n_out = int(np.prod(action_space.shape)) if self.continuous else int(action_space.n)
        self.critic = mlp(obs_dim, 1, 1.0)
        self.actor = mlp(obs_dim, n_out, 0.01)  # the mean, when continuous
        if self.continuous:
            self.actor_logstd = nn.Parameter(torch.zeros(1, n_out))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        out = self.actor(x)
        if self.continuous:
            dist = Normal(out, torch.exp(self.actor_logstd.expand_as(out)))
        else:
            dist = Categorical(logits=out)
        if action is None:
            action = dist.sample()
        logprob, entropy = dist.log_prob(action), dist.entropy()
        if self.continuous:  # independent dimensions
            logprob, entropy = logprob.sum(1), entropy.sum(1)
        return action, logprob, entropy, self.critic(x)


# ---------------------------------------------------------------- rollout


class Rollout:
    def __init__(self, hp, obs_shape, act_shape):
        shape = (hp["num_steps"], hp["num_envs"])
        self.obs = torch.zeros(shape + obs_shape)
        self.actions = torch.zeros(shape + act_shape)
        self.logprobs, self.rewards = torch.zeros(shape), torch.zeros(shape)
        self.dones, self.values = torch.zeros(shape), torch.zeros(shape)


def record_episodes(infos, window):
    """Episode returns of the envs that finished this step (RecordEpisodeStatistics)."""
    if "episode" in infos:
        for r, ended in zip(infos["episode"]["r"], infos["_episode"]):
            if ended:
                window.add(r)


def collect(envs, agent, buf, state, window, hp):
    """Fill the rollout; returns False as soon as the target is reached."""
    for step in range(hp["num_steps"]):
        state["global_step"] += hp["num_envs"]
        buf.obs[step], buf.dones[step] = state["next_obs"], state["next_done"]
        with torch.no_grad():
            action, logprob, _, value = agent.get_action_and_value(state["next_obs"])
        buf.values[step] = value.flatten()
        buf.actions[step], buf.logprobs[step] = action, logprob
        next_obs, reward, term, trunc, infos = envs.step(action.numpy())
        buf.rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
        state["next_obs"] = torch.as_tensor(next_obs, dtype=torch.float32)
        state["next_done"] = torch.as_tensor(np.logical_or(term, trunc), dtype=torch.float32)
        record_episodes(infos, window)
        if window.solved():
            return False
    return True


def advantages(agent, buf, state, hp):
    """GAE exactly as CleanRL: dones[t + 1] = 1 means step t ended its episode."""
    with torch.no_grad():
        next_value = agent.get_value(state["next_obs"]).reshape(1, -1)
    adv = torch.zeros_like(buf.rewards)
    last = 0
    n = hp["num_steps"]
    for t in reversed(range(n)):
        if t == n - 1:
            nonterminal, next_values = 1.0 - state["next_done"], next_value
        else:
            nonterminal, next_values = 1.0 - buf.dones[t + 1], buf.values[t + 1]
        delta = buf.rewards[t] + hp["gamma"] * next_values * nonterminal - buf.values[t]
        adv[t] = last = delta + hp["gamma"] * hp["gae_lambda"] * nonterminal * last
    return adv, adv + buf.values


# ---------------------------------------------------------------- update


def ppo_loss(agent, mb, hp):
    obs, actions, old_logprob, adv, returns, old_values = mb
    if not agent.continuous:
        actions = actions.long()
    _, logprob, entropy, value = agent.get_action_and_value(obs, actions)
    ratio = (logprob - old_logprob).exp()
    if hp["norm_adv"]:
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    clip = hp["clip_coef"]
    pg_loss = torch.max(-adv * ratio, -adv * torch.clamp(ratio, 1 - clip, 1 + clip)).mean()
    value = value.view(-1)
    v_loss = (value - returns) ** 2
    if hp["clip_vloss"]:
        v_clipped = old_values + torch.clamp(value - old_values, -clip, clip)
        v_loss = torch.max(v_loss, (v_clipped - returns) ** 2)
    v_loss = 0.5 * v_loss.mean()
    return pg_loss - hp["ent_coef"] * entropy.mean() + hp["vf_coef"] * v_loss


def update(agent, optimizer, buf, adv, returns, obs_shape, act_shape, hp):
    batch = (buf.obs.reshape((-1,) + obs_shape), buf.actions.reshape((-1,) + act_shape),
             buf.logprobs.reshape(-1), adv.reshape(-1), returns.reshape(-1),
             buf.values.reshape(-1))
    # Next-step autoreset: slots whose obs is a final observation are reset steps, not
    # transitions; leave them out (see the module docstring).
    valid = np.flatnonzero(buf.dones.reshape(-1).numpy() == 0)
    for _ in range(hp["update_epochs"]):
        np.random.shuffle(valid)
        for idx in np.array_split(valid, hp["num_minibatches"]):
            if len(idx) < 2:  # the advantage std needs two samples
                continue
            mb_idx = torch.as_tensor(idx)
            loss = ppo_loss(agent, [x[mb_idx] for x in batch], hp)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), hp["max_grad_norm"])
            optimizer.step()


# ---------------------------------------------------------------- main


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def train(a):
    seed_everything(a.seed)
    probe = gym.make(a.env)
    continuous = isinstance(probe.action_space, gym.spaces.Box)
    probe.close()
    hp = CONTINUOUS if continuous else DISCRETE
    envs = make_envs(a.env, hp, continuous)
    obs_shape = envs.single_observation_space.shape
    act_shape = envs.single_action_space.shape
    agent = Agent(int(np.prod(obs_shape)), envs.single_action_space)
    optimizer = torch.optim.Adam(agent.parameters(), lr=hp["learning_rate"], eps=1e-5)
    buf = Rollout(hp, obs_shape, act_shape)
    window = ReturnWindow(resolve_target(a.env, a.target))
    next_obs, _ = envs.reset(seed=a.seed)
    envs.action_space.seed(a.seed)
    state = {"global_step": 0, "next_obs": torch.as_tensor(next_obs, dtype=torch.float32),
             "next_done": torch.zeros(hp["num_envs"])}
    iterations = max(1, a.total_steps // (hp["num_envs"] * hp["num_steps"]))
    clock = Clock()
    clock.start()
    for it in range(1, iterations + 1):
        if hp["anneal_lr"]:
            optimizer.param_groups[0]["lr"] = (1.0 - (it - 1.0) / iterations) * hp["learning_rate"]
        if not collect(envs, agent, buf, state, window, hp):
            break
        adv, returns = advantages(agent, buf, state, hp)
        update(agent, optimizer, buf, adv, returns, obs_shape, act_shape, hp)
    steps = state["global_step"]
    print(f"cleanrl_ppo: {a.env} seed {a.seed}, {'continuous' if continuous else 'discrete'} "
          f"defaults {hp}, torch {torch.__version__} with {torch.get_num_threads()} threads, "
          f"gymnasium {gym.__version__}, target {window.target}")
    print_result(window, steps, clock.rate(steps))
    envs.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap, default_steps=500000)
    a = ap.parse_args()
    torch.set_num_threads(max(1, a.threads))
    train(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
