#!/usr/bin/env python3
"""sb3-contrib RecurrentPPO (LSTM), a peer for `fastrl train ... --set policy.core=lstm`,
with the CLI and output of bench/train_peers/sb3_ppo.py.

Every hyperparameter is an option, so that bench/compare_recurrent.py can give both
trainers the same set from one table (it prints the mapping). The network is built to be
the same as fastrl's recurrent policy with `policy.shared=false`:

  fastrl   actor:  obs -> encoder (policy.hidden, each layer activated) -> LSTM(core_size)
                   -> linear logits;  critic: its own encoder -> its own LSTM -> linear value
  here     RecurrentActorCriticPolicy with share_features_extractor=False (each side its
           own features extractor: Flatten, then the --hidden layers, each activated;
           Flatten alone when --hidden is empty), enable_critic_lstm=True (the critic's
           own LSTM), n_lstm_layers=1, lstm_hidden_size=--lstm-size, net_arch
           dict(pi=[], vf=[]) (nothing between the LSTMs and the linear heads).

Initialisation (--init fastrl, the default) follows fastrl's: orthogonal hidden layers
with gain sqrt(2), logits 0.01, value 1, biases 0 (SB3's ortho_init=True does exactly
this), and each LSTM's two weight matrices orthogonal with gain 1, biases 0 but the
forget gate's input bias, 1 (fastrl `policy.core_keep_bias=0`). --init torch keeps
nn.LSTM's uniform init (ortho_init still on for the rest).

The parameter count is printed (`parameters: N`); compare_recurrent.py checks it
against the count of fastrl's layout.

CartPoleNoVel-v1 is CartPole-v1 observing [x, theta] = obs[[0, 2]] (the velocities
dropped), bounds those of CartPole-v1 for the two values, time limit 500: the same env
as rl-zoo3's CartPoleNoVelEnv and fastrl's built-in. rl_zoo3 is not needed: the env is
registered here when gymnasium does not know it.

Envs: SB3's DummyVecEnv with a Monitor each (make_vec_env); truncated episodes are
bootstrapped with the value of the final observation (RecurrentPPO's collect_rollouts).
--normalize-obs wraps them in VecNormalize(norm_obs=True, norm_reward=False), rl-zoo3's
`normalize` for this env.

Output (last two lines, as `fastrl train`):
  env_steps_per_second: <env steps / seconds of model.learn>
  mean_return: <mean of the last 100 episodes> steps: <env steps> seconds: <since process start>
--max-seconds caps the training loop's wall time (for slow machines); a run stopped by
it reports the steps it reached and is unsolved (`capped: yes` is printed).

Usage: /tmp/trainvenv/bin/python bench/train_peers/sb3_recurrent_ppo.py --seed 1 --threads 2
"""

import argparse
import os
import sys
import time

try:
    import gymnasium as gym
    import numpy as np
    import sb3_contrib
    import stable_baselines3
    import torch
    from sb3_contrib import RecurrentPPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
    from stable_baselines3.common.vec_env import VecNormalize
except ImportError as e:  # the peer's packages are not installed: say which file has them
    sys.exit(f"{os.path.basename(__file__)}: {e}: pip install -r bench/requirements-recurrent.txt "
             "(bench/README.md)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Clock, ReturnWindow, add_common_args, print_result,  # noqa: E402
                    resolve_target)
from sb3_ppo import TargetCallback, linear  # noqa: E402

ACTIVATIONS = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU, "elu": torch.nn.ELU}


class NoVelObservation(gym.ObservationWrapper):
    """CartPole's observation without the velocities: [x, theta]."""

    KEEP = [0, 2]

    def __init__(self, env):
        super().__init__(env)
        box = env.observation_space
        self.observation_space = gym.spaces.Box(box.low[self.KEEP], box.high[self.KEEP],
                                                dtype=np.float32)

    def observation(self, observation):
        return observation[self.KEEP].astype(np.float32)


def make_cartpole_novel(**kwargs):
    return NoVelObservation(gym.make("CartPole-v1", **kwargs))


def register_envs():
    if "CartPoleNoVel-v1" not in gym.registry:
        gym.register("CartPoleNoVel-v1", entry_point=make_cartpole_novel)


class Encoder(BaseFeaturesExtractor):
    """Flatten, then Linear + activation for each width of `hidden` (fastrl's encoder)."""

    def __init__(self, observation_space, hidden=(), activation="tanh"):
        widths = [int(np.prod(observation_space.shape))] + list(hidden)
        super().__init__(observation_space, features_dim=widths[-1])
        layers = [torch.nn.Flatten()]
        for a, b in zip(widths[:-1], widths[1:]):
            layers += [torch.nn.Linear(a, b), ACTIVATIONS[activation]()]
        self.net = torch.nn.Sequential(*layers)

    def forward(self, observations):
        return self.net(observations)


class CappedCallback(TargetCallback):
    """TargetCallback that also stops once the training loop has run `seconds`."""

    def __init__(self, window, clock, seconds):
        super().__init__(window, clock)
        self.seconds = seconds

    def _on_step(self):
        return super()._on_step() and time.perf_counter() - self.clock.t0 < self.seconds


def init_lstm_like_fastrl(lstm):
    """fastrl's frl_rnn_init_params: W_ih and W_hh orthogonal with gain 1, biases 0 but
    the forget gate's (second block of i, f, g, o) input bias, 1."""
    h = lstm.hidden_size
    with torch.no_grad():
        for name, p in lstm.named_parameters():
            if name.startswith("weight"):
                torch.nn.init.orthogonal_(p, gain=1.0)
            else:
                p.zero_()
                if name.startswith("bias_ih"):
                    p[h:2 * h] = 1.0


def schedule(value, anneal):
    return linear(value) if anneal else value


def parse_hidden(text):
    return [int(w) for w in text.split(",") if w.strip()]


def build(a):
    env = make_vec_env(a.env, n_envs=a.n_envs, seed=a.seed)
    if a.normalize_obs:
        env = VecNormalize(env, norm_obs=True, norm_reward=False, gamma=a.gamma)
    policy_kwargs = dict(
        features_extractor_class=Encoder,
        features_extractor_kwargs=dict(hidden=parse_hidden(a.hidden), activation=a.activation),
        share_features_extractor=False, activation_fn=ACTIVATIONS[a.activation],
        net_arch=dict(pi=[], vf=[]), ortho_init=True, lstm_hidden_size=a.lstm_size,
        n_lstm_layers=1, shared_lstm=False, enable_critic_lstm=True,
        optimizer_kwargs=dict(eps=a.adam_eps))
    model = RecurrentPPO(
        "MlpLstmPolicy", env, n_steps=a.n_steps, batch_size=a.batch_size,
        n_epochs=a.n_epochs, learning_rate=schedule(a.lr, a.anneal_lr),
        clip_range=schedule(a.clip, a.anneal_clip), gamma=a.gamma, gae_lambda=a.gae_lambda,
        ent_coef=a.ent_coef, vf_coef=a.vf_coef, max_grad_norm=a.max_grad_norm,
        normalize_advantage=True, clip_range_vf=None, policy_kwargs=policy_kwargs,
        seed=a.seed, device="cpu", verbose=0)
    if a.init == "fastrl":
        init_lstm_like_fastrl(model.policy.lstm_actor)
        init_lstm_like_fastrl(model.policy.lstm_critic)
    return model


def describe_network(model):
    p = model.policy
    n = sum(t.numel() for t in p.parameters())
    return (f"network: actor {p.pi_features_extractor.net} -> {p.lstm_actor} -> "
            f"{p.action_net}; critic {p.vf_features_extractor.net} -> {p.lstm_critic} -> "
            f"{p.value_net}\nparameters: {n}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap, default_steps=1000000)
    ap.set_defaults(env="CartPoleNoVel-v1", target=475.0)
    # rl-zoo3's ppo_lstm CartPoleNoVel-v1 set as defaults (clip constant: see --anneal-clip)
    ap.add_argument("--n-envs", type=int, default=8)
    ap.add_argument("--n-steps", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--n-epochs", type=int, default=20)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--anneal-lr", type=int, choices=(0, 1), default=1,
                    help="1: learning rate linear from --lr to 0 over --total-steps")
    ap.add_argument("--clip", type=float, default=0.2)
    ap.add_argument("--anneal-clip", type=int, choices=(0, 1), default=0,
                    help="1: clip range linear to 0 (rl-zoo3's lin_0.2; fastrl has none)")
    ap.add_argument("--gamma", type=float, default=0.98)
    ap.add_argument("--gae-lambda", type=float, default=0.8)
    ap.add_argument("--ent-coef", type=float, default=0.0)
    ap.add_argument("--vf-coef", type=float, default=0.5,
                    help="times mean (V - R)^2 (fastrl's train.vf_coef multiplies half that)")
    ap.add_argument("--max-grad-norm", type=float, default=0.5)
    ap.add_argument("--adam-eps", type=float, default=1e-5)
    ap.add_argument("--lstm-size", type=int, default=64)
    ap.add_argument("--hidden", default="", help="encoder widths before the LSTM, e.g. 64,64")
    ap.add_argument("--activation", choices=sorted(ACTIVATIONS), default="tanh")
    ap.add_argument("--normalize-obs", type=int, choices=(0, 1), default=0)
    ap.add_argument("--init", choices=("fastrl", "torch"), default="fastrl")
    ap.add_argument("--max-seconds", type=float, default=0,
                    help="stop training after this many seconds of model.learn (0: no cap); "
                         "the run then reports the steps it reached, unsolved")
    ap.add_argument("--describe", action="store_true",
                    help="build the model, print the network and its parameter count, exit")
    a = ap.parse_args()
    if min(a.n_envs, a.n_steps, a.batch_size, a.n_epochs, a.lstm_size, a.total_steps) <= 0:
        ap.error("sizes and --total-steps must be positive")
    torch.set_num_threads(max(1, a.threads))
    register_envs()
    model = build(a)
    print(describe_network(model), flush=True)
    if a.describe:
        return 0
    window, clock = ReturnWindow(resolve_target(a.env, a.target)), Clock()
    callback = (CappedCallback(window, clock, a.max_seconds) if a.max_seconds > 0
                else TargetCallback(window, clock))
    model.learn(total_timesteps=a.total_steps, callback=callback)
    steps = model.num_timesteps
    print(f"sb3_recurrent_ppo: {a.env} seed {a.seed}, sb3-contrib {sb3_contrib.__version__}, "
          f"stable-baselines3 {stable_baselines3.__version__}, torch {torch.__version__} with "
          f"{torch.get_num_threads()} threads, gymnasium {gym.__version__}, target {window.target}")
    capped = a.max_seconds > 0 and not window.solved() and steps < a.total_steps
    print(f"capped: {'yes' if capped else 'no'} (max seconds {a.max_seconds:g})")
    print_result(window, steps, clock.rate(steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
