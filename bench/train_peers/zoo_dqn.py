"""rl-baselines3-zoo's DQN settings and the evaluation protocol shared by the DQN peers
(bench/train_peers/sb3_dqn.py, bench/train_peers/cleanrl_dqn.py) and bench/compare_dqn.py.

Settings: read at run time from the installed rl_zoo3 package's hyperparams/dqn.yml
(found with importlib, without importing rl_zoo3, which pulls in all of SB3; parsed with
pyyaml, which rl_zoo3 depends on). A key the zoo leaves out takes Stable-Baselines3's
DQN default (read from DQN.__init__'s signature, so it follows the installed SB3), since
that is what the zoo trains with. The zoo's `policy_kwargs: "dict(net_arch=[256, 256])"`
string is parsed with ast (a call to dict with literal keyword values only; anything
else, e.g. an activation_fn, is refused). n_timesteps is the budget. A key this module
does not know is an error, so a zoo change cannot be dropped silently.

Evaluation, the same in both peers (and asked of fastrl train's --eval-every):
every EVAL_EVERY env steps (and at the end of the budget when it is not a multiple),
EVAL_EPISODES episodes with greedy actions on a separate env instance (gymnasium.make(ENV),
its own TimeLimit) whose first reset is seeded with run seed + EVAL_SEED_OFFSET; later
episodes continue its RNG. Each evaluation prints
    eval: env_steps=<int> mean_return=<float> seconds=<float>
and the run ends with the last one again as
    final: env_steps=<int> mean_return=<float> seconds=<float>
where seconds is wall time since process start (common.seconds_since_process_start),
taken when the evaluation has finished, so evaluations count in the time.

Run as a script it prints the settings of every env as JSON (for compare_dqn.py, which
may run under an interpreter without yaml or rl_zoo3):
  /tmp/trainvenv/bin/python bench/train_peers/zoo_dqn.py [--envs CartPole-v1,...]
"""

import ast
import importlib.metadata
import importlib.util
import json
import os
import sys

ENVS = ("CartPole-v1", "Acrobot-v1", "MountainCar-v0")
THRESHOLDS = {"CartPole-v1": 475.0, "Acrobot-v1": -100.0, "MountainCar-v0": -110.0}
EVAL_EVERY = 10000
EVAL_EPISODES = 20
EVAL_SEED_OFFSET = 1000

# The DQN arguments the zoo may set and the peers map (SB3 DQN's names).
ALGO_KEYS = ("learning_rate", "buffer_size", "learning_starts", "batch_size", "tau", "gamma",
             "train_freq", "gradient_steps", "target_update_interval",
             "exploration_fraction", "exploration_initial_eps", "exploration_final_eps",
             "max_grad_norm")
# Zoo keys that are not DQN arguments, handled here.
ZOO_ONLY = ("n_timesteps", "policy", "policy_kwargs", "n_envs")
SB3_DQN_NET_ARCH = [64, 64]  # SB3's QNetwork default when policy_kwargs has no net_arch


def zoo_version():
    return importlib.metadata.version("rl_zoo3")


def zoo_path():
    spec = importlib.util.find_spec("rl_zoo3")
    if spec is None or not spec.origin:
        raise RuntimeError("rl_zoo3 is not installed: pip install -r bench/requirements-dqn.txt")
    return os.path.join(os.path.dirname(spec.origin), "hyperparams", "dqn.yml")


def parse_policy_kwargs(value):
    """The zoo writes policy_kwargs as a Python expression string, "dict(net_arch=[...])"."""
    if isinstance(value, dict):
        return dict(value)
    tree = ast.parse(str(value).strip(), mode="eval").body
    if isinstance(tree, ast.Dict):
        return ast.literal_eval(tree)
    if not (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name)
            and tree.func.id == "dict" and not tree.args):
        raise ValueError(f"policy_kwargs {value!r} is not dict(key=literal, ...)")
    out = {}
    for kw in tree.keywords:
        try:
            out[kw.arg] = ast.literal_eval(kw.value)
        except ValueError:
            raise ValueError(f"policy_kwargs {value!r}: {kw.arg} is not a literal "
                             "(only literal values are mapped)") from None
    return out


def sb3_dqn_defaults():
    import inspect
    from stable_baselines3 import DQN
    sig = inspect.signature(DQN.__init__).parameters
    return {k: sig[k].default for k in ALGO_KEYS}


def raw(env_id):
    import yaml
    with open(zoo_path()) as f:
        table = yaml.safe_load(f)
    if env_id not in table:
        raise KeyError(f"rl_zoo3 {zoo_version()} has no DQN settings for {env_id}")
    return table[env_id]


def settings(env_id):
    """The zoo's settings for env_id with SB3's defaults filled in: a dict of ALGO_KEYS
    plus budget, n_envs, net_arch, policy, zoo_keys (what the zoo itself set), zoo_version."""
    z = dict(raw(env_id))
    unknown = sorted(set(z) - set(ALGO_KEYS) - set(ZOO_ONLY))
    if unknown:
        raise ValueError(f"rl_zoo3 {zoo_version()} dqn.yml {env_id} has keys the DQN peers "
                         f"do not map: {', '.join(unknown)}")
    if z.get("policy", "MlpPolicy") != "MlpPolicy":
        raise ValueError(f"{env_id}: policy {z['policy']} is not MlpPolicy")
    s = sb3_dqn_defaults()
    for k in ALGO_KEYS:
        if k in z:
            s[k] = z[k]
    pk = parse_policy_kwargs(z["policy_kwargs"]) if "policy_kwargs" in z else {}
    extra = sorted(set(pk) - {"net_arch"})
    if extra:
        raise ValueError(f"{env_id}: policy_kwargs {', '.join(extra)} are not mapped")
    tf = s["train_freq"]
    if isinstance(tf, (list, tuple)):
        if len(tf) != 2 or tf[1] != "step":
            raise ValueError(f"{env_id}: train_freq {tf} is not counted in steps")
        s["train_freq"] = int(tf[0])
    for k in ("buffer_size", "learning_starts", "batch_size", "train_freq", "gradient_steps",
              "target_update_interval"):
        s[k] = int(s[k])
    for k in ("learning_rate", "tau", "gamma", "exploration_fraction",
              "exploration_initial_eps", "exploration_final_eps", "max_grad_norm"):
        s[k] = float(s[k])
    s.update(budget=int(float(z["n_timesteps"])), n_envs=int(z.get("n_envs", 1)),
             net_arch=[int(w) for w in pk.get("net_arch", SB3_DQN_NET_ARCH)],
             policy=z.get("policy", "MlpPolicy"), zoo_keys=sorted(z),
             zoo_version=zoo_version())
    return s


def describe(env_id, s):
    """One line of settings, zoo-set keys first; SB3 defaults marked."""
    shown = [f"n_timesteps={s['budget']}", f"n_envs={s['n_envs']}",
             f"net_arch={s['net_arch']}"]
    shown += [f"{k}={s[k]:g}" if isinstance(s[k], float) else f"{k}={s[k]}"
              for k in ALGO_KEYS if k in s["zoo_keys"]]
    defaults = [f"{k}={s[k]:g}" if isinstance(s[k], float) else f"{k}={s[k]}"
                for k in ALGO_KEYS if k not in s["zoo_keys"]]
    return (f"{env_id}: {', '.join(shown)}; SB3 defaults: {', '.join(defaults)}")


# ---------------------------------------------------------------- evaluation


def add_args(ap):
    ap.add_argument("--env", default="CartPole-v1", choices=ENVS)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--eval-every", type=int, default=EVAL_EVERY, help="env steps")
    ap.add_argument("--eval-episodes", type=int, default=EVAL_EPISODES)
    ap.add_argument("--budget", type=int, default=None,
                    help="env steps (default: the zoo's n_timesteps; also the length of "
                         "the exploration schedule)")
    ap.add_argument("--stop-at-threshold", action="store_true",
                    help="stop at the first evaluation whose mean reaches --threshold")
    ap.add_argument("--threshold", type=float, default=None,
                    help=f"default: {THRESHOLDS}")


def check_args(ap, a):
    if a.eval_every <= 0 or a.eval_episodes <= 0 or a.threads <= 0:
        ap.error("--eval-every, --eval-episodes and --threads must be positive")
    if a.budget is not None and a.budget <= 0:
        ap.error("--budget must be positive")
    if a.threshold is None:
        a.threshold = THRESHOLDS[a.env]


class Evaluator:
    """Greedy evaluation on its own env; act(obs) -> action. Prints the eval: lines."""

    def __init__(self, env_id, seed, episodes, threshold):
        import gymnasium as gym
        self.env = gym.make(env_id)
        self.seed = seed + EVAL_SEED_OFFSET
        self.episodes, self.threshold = episodes, threshold
        self.last = None  # (env_steps, mean_return, seconds)
        self.first_solve = None

    def __call__(self, act, env_steps):
        from common import seconds_since_process_start
        total = 0.0
        for _ in range(self.episodes):
            obs, _ = self.env.reset(seed=self.seed)
            self.seed = None  # seeded once; later resets continue the env's RNG
            done, ret = False, 0.0
            while not done:
                obs, r, term, trunc, _ = self.env.step(act(obs))
                ret += float(r)
                done = term or trunc
            total += ret
        mean = total / self.episodes
        secs = seconds_since_process_start()
        self.last = (env_steps, mean, secs)
        print(f"eval: env_steps={env_steps} mean_return={mean:.2f} seconds={secs:.3f}",
              flush=True)
        solved = mean >= self.threshold
        if solved and self.first_solve is None:
            self.first_solve = self.last
        return solved

    def final(self):
        if self.last is None:
            print("final: env_steps=0 mean_return=nan seconds=nan", flush=True)
            return
        n, m, s = self.last
        print(f"final: env_steps={n} mean_return={m:.2f} seconds={s:.3f}", flush=True)


def main():
    import argparse
    ap = argparse.ArgumentParser(description="print rl_zoo3's DQN settings as JSON")
    ap.add_argument("--envs", default=",".join(ENVS))
    a = ap.parse_args()
    try:
        path = zoo_path()  # first: it says what to install, where the version would raise
    except RuntimeError as e:
        print(f"zoo_dqn.py: {e}", file=sys.stderr)
        return 1
    out = {"zoo_version": zoo_version(), "path": path, "envs": {}}
    for env_id in a.envs.split(","):
        out["envs"][env_id] = settings(env_id)
    json.dump(out, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
