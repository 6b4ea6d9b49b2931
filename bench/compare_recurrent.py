#!/usr/bin/env python3
"""Train recurrent (LSTM) PPO on CartPoleNoVel-v1 with fastrl and sb3-contrib's
RecurrentPPO, side by side, with the same network, rollout, epochs and hyperparameters.

CartPoleNoVel-v1 is CartPole-v1 observing only [x, theta] (obs[[0, 2]]), so a policy
must infer the velocities: fastrl's built-in, and the same wrapper (rl-zoo3's
CartPoleNoVelEnv) in bench/train_peers/sb3_recurrent_ppo.py.

The networks (the same on both sides, parameter counts checked before any run: fastrl's
from frl_policy_num_parameters through the Python binding, sb3's from the model):

  fastrl  --set policy.core=lstm policy.shared=false policy.core_size=H policy.hidden=E
          policy.activation=A: for the actor and for the critic each, an encoder of the
          widths E (each layer followed by A; none when E is empty), an LSTM of H units
          (PyTorch's layout, gates i, f, g, o), then one linear layer (2 logits / 1 value)
  sb3     RecurrentPPO("MlpLstmPolicy", policy_kwargs=dict(share_features_extractor=False,
          features_extractor_class=Flatten then the E layers with A, lstm_hidden_size=H,
          n_lstm_layers=1, enable_critic_lstm=True, shared_lstm=False,
          net_arch=dict(pi=[], vf=[]), ortho_init=True)) with the LSTMs initialised as
          fastrl's (orthogonal gain 1, forget-gate bias 1)

With the default set (--hyperparams zoo, E empty, H 64): per side LSTM(2 -> 64) (17,408
parameters) and a linear head; 35,011 parameters in all.

--hyperparams zoo (default) is rl-zoo3's tuned ppo_lstm CartPoleNoVel-v1 set: 8 envs x 32
steps, one minibatch of 256 (whole env sequences), 20 epochs, gamma 0.98, lambda 0.8,
lr 1e-3 linear to 0 over the budget, clip 0.2, entropy 0, vf 0.5, grad norm 0.5,
observations normalised (the zoo's VecNormalize; fastrl policy.obs_norm), LSTM 64.
What is not kept from the zoo, because fastrl has no such thing: the clip range is
constant 0.2 (the zoo anneals it linearly), and there is no MLP between the LSTM and
the heads (the zoo's net_arch pi=[64], vf=[64], relu; ortho_init=False). The schedule
runs over --budget on both sides (the zoo's over 1e5 steps). --hyperparams fastrl is
fastrl's CartPoleNoVel-v1 defaults (16 envs x 128 steps, 4 minibatches of 4 whole env
sequences, 4 epochs, lr 1e-3 linear, gamma 0.98, lambda 0.8, entropy 0.01, encoder
64,64 tanh) with the value clipping off. The key-by-key mapping is printed; two
differences of form are mapped, not copied: SB3's value loss is mean (V - R)^2 and
fastrl's mean 1/2 (V - R)^2, so sb3 vf_coef 0.5 is fastrl train.vf_coef=1; and
fastrl's value clipping (the max of clipped and unclipped losses) has no SB3
equivalent, so both run without it.

Per seed (--seeds, default 3), interleaved (fastrl, sb3, fastrl, sb3, ...), each a child
process pinned to the same --threads CPUs, with torch.set_num_threads = fastrl
runtime.threads = --threads: env steps/s, wall time from process start to a mean return
>= --target over the last 100 episodes (each stops there; a run that reaches --budget
first is unsolved), env steps to solve, peak RSS (wait4). --sb3-max-seconds caps an sb3
run's training loop (RecurrentPPO runs at tens to hundreds of steps/s on 2 cores): a
capped run is unsolved, and the table says how many were capped.

FLOP floor: network FLOPs per env step, counted as tools/bench_train.c counts them
(recurrent_macs: one forward pass to act, then per epoch a forward pass, the weight
gradients and the input gradients through time: the cores' state and, after an
encoder, their input; the heads' input), the same for both sides since the network and
the epochs are. The rate is single-thread sgemm at (minibatch rows) x 64 x 64 measured
in this run: OpenBLAS's from `fastrl bench train` (which also prints its own FLOPs per
step, checked against this count) and numpy's (float32 matmul in a child with
OPENBLAS_NUM_THREADS=1); the floor uses the best of fastrl's figures (numpy's when
fastrl did not run). A side's fraction of its floor = FLOPs/step x its env steps/s /
(rate x threads).

Setup and run, from the repository root:
  python3 -m venv /tmp/trainvenv && /tmp/trainvenv/bin/pip install -r bench/requirements-recurrent.txt
  /tmp/trainvenv/bin/python bench/compare_recurrent.py [--seeds 3] [--threads 2]
        [--budget 1000000] [--sb3-max-seconds 0] [--hyperparams zoo|fastrl]

Exit status: 0 when every run ran (solved, unsolved or capped); 1 when fastrl has no
train command, a run crashed, timed out or printed no result, or the parameter counts
differ; 2 on bad arguments.
"""

import argparse
import os
import platform
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "train_peers"))
sys.path.insert(0, HERE)
from compare_env import busy_seconds, cpu_model, own_seconds, pin  # noqa: E402
from compare_train import describe, peers_problem, ratio, summarise  # noqa: E402
from runner import REPO, fastrl_train_problem, fmt_num, median_worst, resolve, run  # noqa: E402

ENV = "CartPoleNoVel-v1"
OBS_WIDTH, ACTIONS = 2, 2
PEER = "train_peers/sb3_recurrent_ppo.py"
PEER_MODULES = "torch, gymnasium, stable_baselines3, sb3_contrib"

# The two hyperparameter sets, in neutral names. batch = rollout x envs / minibatches.
SETS = {
    "zoo": dict(envs=8, rollout=32, minibatches=1, epochs=20, lr=1e-3, anneal_lr=True,
                gamma=0.98, gae_lambda=0.8, clip=0.2, ent_coef=0.0, vf_coef=0.5,
                max_grad_norm=0.5, adam_eps=1e-5, obs_norm=True, hidden="",
                activation="tanh", lstm=64),
    "fastrl": dict(envs=16, rollout=128, minibatches=4, epochs=4, lr=1e-3, anneal_lr=True,
                   gamma=0.98, gae_lambda=0.8, clip=0.2, ent_coef=0.01, vf_coef=0.5,
                   max_grad_norm=0.5, adam_eps=1e-5, obs_norm=False, hidden="64,64",
                   activation="tanh", lstm=64),
}


def b(x):
    return "true" if x else "false"


def mapping(h):
    """Rows (setting, fastrl --set, sb3 option of the peer = RecurrentPPO argument)."""
    batch = h["envs"] * h["rollout"] // h["minibatches"]
    return [
        ("envs", f"train.num_envs={h['envs']}", f"--n-envs {h['envs']} (n_envs)"),
        ("steps per env per rollout", f"train.rollout={h['rollout']}",
         f"--n-steps {h['rollout']} (n_steps)"),
        ("minibatches of whole env sequences", f"train.minibatches={h['minibatches']}",
         f"--batch-size {batch} (batch_size)"),
        ("epochs", f"train.epochs={h['epochs']}", f"--n-epochs {h['epochs']} (n_epochs)"),
        ("learning rate", f"train.lr={h['lr']:g}", f"--lr {h['lr']:g}"),
        ("lr linear to 0 over the budget", f"train.anneal_lr={b(h['anneal_lr'])}",
         f"--anneal-lr {int(h['anneal_lr'])} (learning_rate=lin_{h['lr']:g})"),
        ("gamma", f"train.gamma={h['gamma']:g}", f"--gamma {h['gamma']:g}"),
        ("GAE lambda", f"train.gae_lambda={h['gae_lambda']:g}",
         f"--gae-lambda {h['gae_lambda']:g}"),
        ("clip range (constant)", f"train.clip={h['clip']:g}",
         f"--clip {h['clip']:g} --anneal-clip 0 (clip_range)"),
        ("entropy coefficient", f"train.ent_coef={h['ent_coef']:g}",
         f"--ent-coef {h['ent_coef']:g}"),
        ("value coefficient", f"train.vf_coef={2 * h['vf_coef']:g} (x 1/2 (V-R)^2)",
         f"--vf-coef {h['vf_coef']:g} (x (V-R)^2)"),
        ("value clipping", "train.clip_value=false", "clip_range_vf=None"),
        ("gradient norm clip", f"train.max_grad_norm={h['max_grad_norm']:g}",
         f"--max-grad-norm {h['max_grad_norm']:g}"),
        ("Adam epsilon", f"train.adam_eps={h['adam_eps']:g}",
         f"--adam-eps {h['adam_eps']:g} (optimizer_kwargs eps)"),
        ("advantages normalised per minibatch", "train.norm_adv=true",
         "normalize_advantage=True"),
        ("BPTT length", "train.bptt=0 (the whole rollout)", "whole sequences"),
        ("observation normalisation", f"policy.obs_norm={b(h['obs_norm'])}",
         f"--normalize-obs {int(h['obs_norm'])} (VecNormalize norm_obs, not reward)"),
        ("recurrent core", "policy.core=lstm", "MlpLstmPolicy, n_lstm_layers=1"),
        ("core units", f"policy.core_size={h['lstm']}", f"--lstm-size {h['lstm']}"),
        ("encoder before the core", f"policy.hidden={h['hidden']}",
         f"--hidden '{h['hidden']}' (features extractor)"),
        ("activation", f"policy.activation={h['activation']}",
         f"--activation {h['activation']}"),
        ("separate actor and critic", "policy.shared=false",
         "share_features_extractor=False, enable_critic_lstm=True"),
    ]


def fastrl_sets(h, a):
    sets = [m[1].split(" ")[0] for m in mapping(h)]
    return sets + [f"runtime.threads={a.threads}"] + a.fastrl_set


def sb3_args(h, a):
    args = []
    for m in mapping(h):
        args += re.findall(r"(--[a-z-]+) ('[^']*'|\S+)", m[2])
    out = []
    for k, v in args:
        out += [k, v.strip("'")]
    return out


def fastrl_cmd(a, h, seed):
    cmd = [a.fastrl, "train", ENV, "--seed", str(seed), "--steps", str(a.budget),
           "--set", f"train.target_return={a.target:g}"]
    for kv in fastrl_sets(h, a):
        cmd += ["--set", kv]
    return cmd


def sb3_cmd(a, h, seed, describe_only=False):
    cmd = [a.python, os.path.join(HERE, PEER), "--env", ENV, "--seed", str(seed),
           "--total-steps", str(a.budget), "--target", f"{a.target:g}",
           "--threads", str(a.threads)] + sb3_args(h, a)
    if a.sb3_max_seconds > 0:
        cmd += ["--max-seconds", f"{a.sb3_max_seconds:g}"]
    return cmd + (["--describe"] if describe_only else [])


# ---------------------------------------------------------------- network size and FLOPs


def param_count(h):
    """fastrl's layout (doc/api.md, lib/rl/policy_rnn.c), per tower: encoder layers,
    LSTM 4H x (in + H) weights and two 4H biases, then the head."""
    widths = [OBS_WIDTH] + [int(w) for w in h["hidden"].split(",") if w.strip()]
    enc = sum(i * o + o for i, o in zip(widths[:-1], widths[1:]))
    H = h["lstm"]
    core = 4 * H * (widths[-1] + H) + 8 * H
    return 2 * (enc + core) + (H * ACTIONS + ACTIONS) + (H + 1)


def flops_per_step(h):
    """tools/bench_train.c's flops_per_step for a recurrent policy (recurrent_macs)."""
    widths = [OBS_WIDTH] + [int(w) for w in h["hidden"].split(",") if w.strip()]
    fwd = in_grad = 0.0
    gh, H = 4.0 * h["lstm"], h["lstm"]
    for _ in range(2):  # towers: actor, critic (policy.shared=false)
        for l, (i, o) in enumerate(zip(widths[:-1], widths[1:])):
            fwd += i * o
            in_grad += i * o if l > 0 else 0
        fwd += gh * (widths[-1] + H)
        in_grad += gh * H + (gh * widths[-1] if len(widths) > 1 else 0)
    fwd += H * ACTIONS + H * 1  # heads
    in_grad += H * (ACTIONS + 1)
    return 2.0 * (fwd + h["epochs"] * (2 * fwd + in_grad))


def fastrl_param_count(a, h):
    """frl_policy_num_parameters through bindings/python, or (None, why)."""
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a.fastrl))), "lib")
    settings = " ".join(kv for kv in fastrl_sets(h, a) if kv.startswith("policy."))
    code = ("import fastrl, gymnasium as gym, numpy as np\n"
            f"p = fastrl.Policy(gym.spaces.Box(-1, 1, ({OBS_WIDTH},), np.float32), "
            f"gym.spaces.Discrete({ACTIONS}), {settings!r})\nprint(p.num_parameters)")
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "bindings", "python"),
               FASTRL_LIBRARY=lib)
    try:
        p = subprocess.run([a.python, "-c", code], capture_output=True, text=True,
                           timeout=120, env=env)
    except (OSError, subprocess.SubprocessError) as e:
        return None, str(e)
    if p.returncode != 0:
        return None, p.stderr.strip()[-300:]
    return int(p.stdout.split()[-1]), None


def sb3_param_count(a, h):
    try:
        p = subprocess.run(sb3_cmd(a, h, a.first_seed, describe_only=True),
                           capture_output=True, text=True, timeout=300, cwd=REPO)
    except (OSError, subprocess.SubprocessError) as e:
        return None, str(e), ""
    m = re.search(r"^parameters: (\d+)", p.stdout, re.M)
    if p.returncode != 0 or not m:
        return None, (p.stderr or p.stdout).strip()[-300:], ""
    net = p.stdout[:m.start()].strip()
    return int(m.group(1)), None, " ".join(net.split())


NUMPY_RATE = r"""
import sys, time, numpy as np
m = int(sys.argv[1])
x = np.random.default_rng(0).standard_normal((m, 64), dtype=np.float32)
w = np.random.default_rng(1).standard_normal((64, 64), dtype=np.float32)
y = np.empty((m, 64), np.float32)
best = 0.0
for rep in range(5):
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 0.05:
        np.matmul(x, w, out=y); n += 1
    best = max(best, 2.0 * m * 64 * 64 * n / (time.perf_counter() - t0) / 1e9)
print(best)
"""


def numpy_rate(a, rows):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    try:
        p = subprocess.run([a.python, "-c", NUMPY_RATE, str(rows)], capture_output=True,
                           text=True, timeout=120, env=env)
        return float(p.stdout.split()[-1]) if p.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def fastrl_bench(a, h):
    """`fastrl bench train` over a short run: (FLOPs per step, sgemm GFLOP/s) or Nones."""
    cmd = [a.fastrl, "bench", "train", ENV, "--steps", str(a.bench_steps)]
    for kv in fastrl_sets(h, a):
        cmd += ["--set", kv]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=REPO)
    except (OSError, subprocess.SubprocessError):
        return None, None
    f = re.search(r"network FLOPs per env step: ([0-9.]+) K", p.stdout)
    s = re.search(r"OpenBLAS sgemm (?:\(core [^)]*\) )?([0-9.]+) GFLOP/s", p.stdout)
    return (float(f.group(1)) * 1e3 if f else None), (float(s.group(1)) if s else None)


# ---------------------------------------------------------------- report


def print_table(summary, fps, rate, threads, capped):
    cols = ("trainer", "return med", "steps/s med", "solve s med", "solve s worst", "solved",
            "steps med", "steps worst", "peak RSS", "floor frac", "sps fastrl/sb3",
            "time fastrl/sb3")
    rows = [cols]
    f = summary.get("fastrl")
    for name, s in summary.items():
        frac = fps * s["sps"] / (rate * 1e9 * threads) if rate and s["sps"] else None
        solved = f"{s['solved']}/{s['runs']}"
        if capped.get(name):
            solved += f" ({capped[name]} capped)"
        rows.append((name, fmt_num(s["ret"], digits=1), fmt_num(s["sps"]),
                     fmt_num(s["t_med"], digits=2),
                     fmt_num(s["t_worst"], digits=2), solved, fmt_num(s["s_med"]),
                     fmt_num(s["s_worst"]), fmt_num(s["rss"], " MB"),
                     "n/a" if frac is None else f"{frac:.3g}",
                     "1" if name == "fastrl" else ratio(f and f["sps"], s["sps"]),
                     "1" if name == "fastrl" else ratio(f and f["t_med"], s["t_med"])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(cols))]
    for row in rows:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w)
                        in enumerate(zip(row, widths))))
    print("return med: the final mean return of the last 100 episodes, median over seeds; "
          "floor frac: FLOPs/step x steps/s / (sgemm rate x threads), the share of the FLOP "
          "floor reached; sps fastrl/sb3 > 1: fastrl steps faster; time fastrl/sb3 < 1: "
          "fastrl solves sooner (medians; n/a when a median is unsolved)")


# ---------------------------------------------------------------- main


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3, help="number of seeds")
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--target", type=float, default=475.0)
    ap.add_argument("--budget", type=int, default=1000000,
                    help="env-step budget per run (also the length of the lr schedule)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cpus", default="",
                    help="comma-separated CPUs to pin to (default: the first --threads "
                         "allowed; 'none' = do not pin)")
    ap.add_argument("--hyperparams", choices=sorted(SETS), default="zoo")
    ap.add_argument("--sb3-max-seconds", type=float, default=0,
                    help="cap on each sb3 run's training loop in seconds (0: none)")
    ap.add_argument("--bench-steps", type=int, default=16384,
                    help="steps of the `fastrl bench train` run for the sgemm rate (0: skip)")
    ap.add_argument("--fastrl", default="build/tools/fastrl")
    ap.add_argument("--fastrl-set", action="append", default=[], metavar="KEY=VALUE",
                    help="extra --set for every fastrl run (repeatable; not mapped to sb3)")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the peer")
    ap.add_argument("--skip", default="", help="comma-separated: fastrl,sb3")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per run")
    a = ap.parse_args()
    unknown = {s.strip() for s in a.skip.split(",") if s.strip()} - {"fastrl", "sb3"}
    if unknown:  # a misspelt peer ran unsaid
        ap.error(f"--skip: unknown {', '.join(sorted(unknown))}")
    if a.seeds <= 0 or a.threads <= 0 or a.budget <= 0 or a.bench_steps < 0:
        ap.error("--seeds, --threads and --budget must be positive")
    a.fastrl = resolve(a.fastrl)
    return a


def setup(a, h):
    """Header, mapping, parameter counts. Returns (skip set, list of problems)."""
    skip = {s.strip() for s in a.skip.split(",") if s.strip()}
    problems = []
    cpus = pin(a.threads, a.cpus)
    print(f"compare_recurrent: {ENV}, LSTM PPO, target {a.target:g} (mean of the last 100 "
          f"episodes), budget {a.budget:,} steps, {a.seeds} seeds from {a.first_seed}, "
          f"{a.threads} threads, interleaved, hyperparameters '{a.hyperparams}'"
          + (f", sb3 capped at {a.sb3_max_seconds:g} s of training" if a.sb3_max_seconds
             else ""))
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs, pinned to "
          f"{cpus if cpus is not None else 'nothing'}; python {platform.python_version()}")
    if "fastrl" not in skip:
        problem = fastrl_train_problem(a.fastrl)
        if problem:
            print(f"\n*** fastrl: {problem} ***\n")
            skip.add("fastrl")
            problems.append("fastrl has no train command")
    if "sb3" not in skip:
        problem, versions = peers_problem(a.python, PEER_MODULES, "bench/requirements-recurrent.txt")
        print(f"peer: {problem or versions} ({a.python})")
        if problem:
            skip.add("sb3")
            problems.append("sb3-contrib cannot be imported")
    print("\nsettings, mapped key by key:")
    rows = [("setting", "fastrl --set", "sb3 peer option (RecurrentPPO)")] + mapping(h)
    w0, w1 = (max(len(r[i]) for r in rows) for i in range(2))
    for r in rows:
        print(f"  {r[0]:<{w0}}  {r[1]:<{w1}}  {r[2]}")
    if a.fastrl_set:
        print(f"  extra fastrl settings, not mapped: {' '.join(a.fastrl_set)}")
    print(f"\nnetwork parameters, fastrl's layout counted here: {param_count(h):,}")
    if "fastrl" not in skip:
        n, why = fastrl_param_count(a, h)
        print(f"  fastrl (frl_policy_num_parameters): {n:,}" if n is not None else
              f"  fastrl: not counted through bindings/python ({why})")
        if n is not None and n != param_count(h):
            problems.append(f"fastrl's parameter count {n} is not {param_count(h)}")
    if "sb3" not in skip:
        n, why, net = sb3_param_count(a, h)
        if n is None:
            print(f"  sb3: the peer could not build its model: {why}")
            problems.append("the sb3 peer could not build its model")
        else:
            print(f"  sb3 (sum of the model's parameters): {n:,}\n  sb3 {net}")
            if n != param_count(h):
                problems.append(f"sb3's parameter count {n} is not {param_count(h)}")
    return skip, problems


def run_all(a, cmds):
    results = {name: [] for name in cmds}
    for seed in range(a.first_seed, a.first_seed + a.seeds):
        for name, make in cmds.items():
            r = run(make(seed), a.timeout)
            results[name].append(r)
            line = describe(name, seed, r, a.target)
            if not r.error and re.search(r"^capped: yes", r.output, re.M):
                line += " (stopped by --sb3-max-seconds)"
            print(line, flush=True)
    return results


def floor_rate(a, h, skip):
    """Same-run sgemm rates at the minibatch's rows x 64 x 64: (rate used, description)."""
    rows = h["envs"] * h["rollout"] // h["minibatches"]
    fps_fastrl = blas = None
    if "fastrl" not in skip and a.bench_steps > 0:
        fps_fastrl, blas = fastrl_bench(a, h)
    npr = numpy_rate(a, rows)
    return fps_fastrl, blas, npr, rows


def main():
    a = parse_args()
    h = SETS[a.hyperparams]
    skip, problems = setup(a, h)
    if any("parameter count" in p for p in problems):
        print("\n*** the networks differ: " + "; ".join(problems) + " ***")
        return 1
    fps = flops_per_step(h)
    rates0 = floor_rate(a, h, skip)
    cmds = {}
    if "fastrl" not in skip:
        cmds["fastrl"] = lambda s: fastrl_cmd(a, h, s)
    if "sb3" not in skip:
        cmds["sb3"] = lambda s: sb3_cmd(a, h, s)
    print()
    for name, make in cmds.items():
        print(f"{name}: {' '.join(make(a.first_seed))}")
    busy0, own0, wall0 = busy_seconds(), own_seconds(), time.perf_counter()
    results = run_all(a, cmds)
    busy1, own1, wall = busy_seconds(), own_seconds(), time.perf_counter() - wall0
    if busy0 is not None and busy1 is not None:
        other = max(0.0, (busy1 - busy0) - (own1 - own0))
        warn = "  WARNING: other work competed for the CPUs" if other > 0.05 * wall else ""
        print(f"other processes used {other:.1f} CPU-s during the {wall:.0f} s of runs{warn}")
    rates1 = floor_rate(a, h, skip)
    fps_fastrl = rates0[0] or rates1[0]
    blas = max([r for r in (rates0[1], rates1[1]) if r] or [0]) or None
    npr = max([r for r in (rates0[2], rates1[2]) if r] or [0]) or None
    rows = rates0[3]
    print(f"\nnetwork FLOPs per env step (both sides): {fps / 1e3:.1f} K"
          + (f" (fastrl bench train counts {fps_fastrl / 1e3:.1f} K)" if fps_fastrl else ""))
    print(f"single-thread rate at {rows} x 64 x 64, before / after the runs: OpenBLAS sgemm "
          f"(fastrl bench train) {fmt_num(rates0[1], digits=1)} / {fmt_num(rates1[1], digits=1)}"
          f" GFLOP/s, numpy float32 matmul {fmt_num(rates0[2], digits=1)} / "
          f"{fmt_num(rates1[2], digits=1)} GFLOP/s")
    rate = blas or npr
    print(f"floor rate: {fmt_num(rate, digits=1)} GFLOP/s x {a.threads} threads "
          f"({'OpenBLAS via fastrl bench train' if blas else 'numpy'}, the better of the two "
          "measurements)\n")
    capped = {name: sum(1 for r in runs if not r.error
                        and re.search(r"^capped: yes", r.output, re.M))
              for name, runs in results.items()}
    if results:
        summary = {}
        for name, runs in results.items():
            summary[name] = summarise(runs, a.target)
            summary[name]["ret"] = median_worst([r.mean_return for r in runs
                                                 if not r.error])[0]
        print_table(summary, fps, rate, a.threads, capped)
    else:
        print("no trainer ran")
    failed = any(r.error for runs in results.values() for r in runs)
    for p in problems:
        print(f"\nproblem: {p}")
    return 1 if failed or problems else 0


if __name__ == "__main__":
    sys.exit(main())
