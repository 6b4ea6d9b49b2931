#!/usr/bin/env python3
"""Train DQN with rl-baselines3-zoo's settings on CartPole-v1, Acrobot-v1 and
MountainCar-v0 with fastrl, Stable-Baselines3 and a CleanRL-style DQN, on the same seeds,
and time each to the evaluation threshold.

The settings are read once from the installed rl_zoo3's hyperparams/dqn.yml
(bench/train_peers/zoo_dqn.py, run with --python; keys the zoo leaves out take SB3's
DQN defaults) and printed with the zoo's version. The zoo's n_timesteps is every
trainer's budget. Per env, per seed (--seeds, default 10), interleaved so that a noisy
patch of a shared machine hits all of them (fastrl, sb3, cleanrl, fastrl, ...), each as
a child process on the same CPUs:

  fastrl   build/tools/fastrl train ENV --seed S --steps BUDGET --set train.algo=dqn
               --set KEY=VALUE (the zoo's settings, mapped as printed) --eval-every 10000
               --eval-episodes 20 [--eval-target THRESHOLD] --set runtime.threads=T
               [--set KEY=VALUE for each --fastrl-set]
  sb3      bench/train_peers/sb3_dqn.py: SB3's DQN as the zoo trains it
  cleanrl  bench/train_peers/cleanrl_dqn.py: CleanRL dqn.py's algorithm with the zoo's
               settings (its docstring says where it differs from CleanRL's dqn.py)
  (peers: --env ENV --seed S --budget BUDGET --threads T --eval-every 10000
               --eval-episodes 20 [--stop-at-threshold])

Each evaluates greedily every 10,000 env steps, 20 episodes on its own evaluation env
seeded from S, and prints `eval: env_steps=N mean_return=R seconds=T` per evaluation
and `final: ...` (the last one) at the end, T being wall seconds since its process
started (imports and start-up included). From those lines, per run: the first
evaluation whose mean reaches the threshold (CartPole-v1 475, Acrobot-v1 -100,
MountainCar-v0 -110) within the budget: its env steps and its T (wall time to
threshold); and the final evaluation. The driver judges the thresholds itself.
--stop-at-threshold ends every run at its first solved evaluation (the time to
threshold is unchanged; `final` is then that evaluation).

Per env, the table gives for each trainer: seeds solved (of N), median env steps and
median wall time to threshold (an unsolved seed enters as unsolved, so the median is
'unsolved' when half or more are), median final evaluation, peak RSS (per child, from
wait4), and for fastrl its speedup in wall time to threshold over sb3 and over cleanrl
(peer time / fastrl time per seed, median over the seeds both solved; n/a when none).
Then the criteria, per env: fastrl solves at least as many seeds as SB3 within the
zoo's budget; speedup over SB3 >= 10x; speedup over CleanRL-style >= 10x. Each prints
pass, FAIL or 'not checked' (a trainer did not run), and the last line sums them up.

The script pins itself (and so its children) to --threads CPUs (--cpus to choose them)
and passes --threads to every trainer (torch.set_num_threads; fastrl runtime.threads).

Setup and run, from the repository root:
  python3 -m venv /tmp/trainvenv && /tmp/trainvenv/bin/pip install -r bench/requirements-dqn.txt
  python3 bench/compare_dqn.py --python /tmp/trainvenv/bin/python [--envs CartPole-v1]
        [--seeds 10] [--threads 2] [--stop-at-threshold] [--skip fastrl]

Exit status: 0 when every run ran (solved or not; the criteria are printed, not
folded in); 1 when the zoo's settings cannot be read, fastrl has no train command, or
a run crashed, timed out or printed no `final:` line; 2 on bad arguments.
"""

import argparse
import json
import math
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
from compare_train import peers_problem  # noqa: E402
from runner import fastrl_train_problem, fmt_num, median_worst, resolve, run  # noqa: E402
from zoo_dqn import ALGO_KEYS, ENVS, EVAL_EPISODES, EVAL_EVERY, THRESHOLDS  # noqa: E402

TRAINERS = ("fastrl", "sb3", "cleanrl")
PEERS = {"sb3": "train_peers/sb3_dqn.py", "cleanrl": "train_peers/cleanrl_dqn.py"}
PEER_MODULES = "torch, gymnasium, stable_baselines3, rl_zoo3"
SPEEDUP_TARGET = 10.0

# zoo (SB3 DQN) key -> fastrl key, and the CleanRL-style peer's name for it.
MAPPING = [
    ("learning_rate", "train.lr", "learning_rate"),
    ("batch_size", "train.batch_size", "batch_size"),
    ("buffer_size", "train.buffer_size", "buffer_size"),
    ("learning_starts", "train.learning_starts", "learning_starts"),
    ("gamma", "train.gamma", "gamma"),
    ("target_update_interval", "train.target_update_interval", "target_network_frequency"),
    ("train_freq", "train.train_freq", "train_frequency"),
    ("gradient_steps", "train.gradient_steps", "gradient_steps (-1: train_frequency)"),
    ("exploration_fraction", "train.exploration_fraction", "exploration_fraction"),
    ("exploration_final_eps", "train.exploration_final_eps", "end_e"),
    ("exploration_initial_eps", "train.exploration_initial_eps", "start_e"),
    ("tau", "train.tau", "tau"),
    ("max_grad_norm", "train.max_grad_norm", "max_grad_norm (clip_grad_norm_)"),
]
assert sorted(k for k, _, _ in MAPPING) == sorted(ALGO_KEYS)

_NUM = r"([-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|nan|inf))"
EVAL_RE = re.compile(r"^eval:\s+env_steps=([0-9]+)\s+mean_return=" + _NUM + r"\s+seconds="
                     + _NUM + r"\s*$", re.M | re.I)
FINAL_RE = re.compile(r"^final:\s+env_steps=([0-9]+)\s+mean_return=" + _NUM + r"\s+seconds="
                      + _NUM + r"\s*$", re.M | re.I)


def value(v):
    return f"{v:.10g}" if isinstance(v, float) else str(v)


# ---------------------------------------------------------------- settings and commands


def load_zoo(python, envs):
    """(the zoo's settings as zoo_dqn.py prints them, None) or (None, why not)."""
    cmd = [python, os.path.join(HERE, "train_peers", "zoo_dqn.py"), "--envs", ",".join(envs)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"cannot run {python}: {e}"
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or [""])[-1]  # the message, not a traceback
        return None, (f"{' '.join(cmd)} failed: {last}. Install rl_zoo3: "
                      "/tmp/trainvenv/bin/pip install -r bench/requirements-dqn.txt, and "
                      "pass --python /tmp/trainvenv/bin/python")
    try:
        return json.loads(p.stdout.strip().splitlines()[-1]), None
    except (ValueError, IndexError) as e:
        return None, f"unreadable output of {' '.join(cmd)}: {e}"


def fastrl_sets(s):
    sets = ["train.algo=dqn"] + [f"{fk}={value(s[zk])}" for zk, fk, _ in MAPPING]
    return sets + [f"policy.hidden={','.join(str(w) for w in s['net_arch'])}",
                   "policy.activation=relu", f"train.num_envs={s['n_envs']}"]


def fastrl_cmd(a, env_id, s, seed):
    cmd = [a.fastrl, "train", env_id, "--seed", str(seed), "--steps", str(s["budget"])]
    for kv in fastrl_sets(s):
        cmd += ["--set", kv]
    cmd += ["--eval-every", str(EVAL_EVERY), "--eval-episodes", str(EVAL_EPISODES)]
    if a.stop_at_threshold:
        cmd += ["--eval-target", f"{THRESHOLDS[env_id]:g}"]
    cmd += ["--set", f"runtime.threads={a.threads}"]
    for kv in a.fastrl_set:
        cmd += ["--set", kv]
    return cmd


def peer_cmd(a, name, env_id, s, seed):
    cmd = [a.python, os.path.join(HERE, PEERS[name]), "--env", env_id, "--seed", str(seed),
           "--budget", str(s["budget"]), "--threads", str(a.threads), "--eval-every",
           str(EVAL_EVERY), "--eval-episodes", str(EVAL_EPISODES)]
    return cmd + (["--stop-at-threshold"] if a.stop_at_threshold else [])


def trainers(a, skip, env_id, s):
    """name -> function(seed) giving the command, in the interleaving order."""
    table = {"fastrl": lambda seed: fastrl_cmd(a, env_id, s, seed),
             "sb3": lambda seed: peer_cmd(a, "sb3", env_id, s, seed),
             "cleanrl": lambda seed: peer_cmd(a, "cleanrl", env_id, s, seed)}
    return {k: v for k, v in table.items() if k not in skip}


# ---------------------------------------------------------------- one run


class DqnRun:
    """What one run's eval:/final: lines say, judged against the threshold here."""

    def __init__(self, r, threshold, budget):
        self.r = r
        self.evals = [(int(n), float(m), float(t)) for n, m, t in EVAL_RE.findall(r.output)]
        finals = FINAL_RE.findall(r.output)
        self.final = None
        if finals:
            n, m, t = finals[-1]
            self.final = (int(n), float(m), float(t))
        # The k-th evaluation is the one for the k * EVAL_EVERY mark: the peers evaluate at
        # the mark, fastrl after the update that passes it (up to one rollout later, e.g.
        # 50,176 for the 50,000 mark with 256-step rollouts, as SB3's own learn() also
        # collects whole rollouts past the budget). Within the budget: marks <= budget.
        marks = budget // EVAL_EVERY
        self.solve = next((e for k, e in enumerate(self.evals, 1)
                           if k <= marks and not math.isnan(e[1]) and e[1] >= threshold),
                          None)
        if r.error and r.error.startswith("timed out"):
            self.error = r.error
        elif r.rc != 0:
            self.error = r.error or f"exited with status {r.rc}"
        elif self.final is None:
            self.error = ("output has no `final: env_steps=N mean_return=R seconds=T` line; "
                          f"last output: {r.output.strip()[-300:]!r}")
        else:
            self.error = None

    def final_return(self):
        return None if self.error or self.final is None else self.final[1]


def describe(env_id, name, seed, d):
    head = f"{env_id} seed {seed} {name:<8}"
    solve = (f"solved at {d.solve[0]:,} steps, {d.solve[2]:.1f} s from start"
             if d.solve else "NOT solved")
    tail = f"(run {d.r.wall:.1f} s, peak RSS {d.r.maxrss_mb:.0f} MB)"
    if d.error:
        return f"{head} FAILED: {d.error}; {solve} before that {tail}"
    return (f"{head} {solve}; final eval {d.final[1]:.1f} at {d.final[0]:,} steps, "
            f"{d.final[2]:.1f} s, {len(d.evals)} evaluations {tail}")


# ---------------------------------------------------------------- summary


def summarise(runs):
    """runs: [(seed, DqnRun)]."""
    inf = float("inf")
    solved = [d for _, d in runs if d.solve]
    s_med, _ = median_worst([d.solve[0] if d.solve else inf for _, d in runs])
    t_med, _ = median_worst([d.solve[2] if d.solve else inf for _, d in runs])
    f_med, _ = median_worst([d.final_return() for _, d in runs
                             if d.final_return() is not None])
    rss = max((d.r.maxrss_mb for _, d in runs), default=None)
    return dict(runs=len(runs), solved=len(solved), s_med=s_med, t_med=t_med, f_med=f_med,
                rss=rss, failed=sum(1 for _, d in runs if d.error))


def speedup(fastrl_runs, peer_runs):
    """Median over the seeds both solved of peer time / fastrl time, and how many seeds."""
    f = {seed: d.solve[2] for seed, d in fastrl_runs if d.solve}
    ratios = [d.solve[2] / f[seed] for seed, d in peer_runs
              if d.solve and seed in f and f[seed] > 0]
    return median_worst(ratios)[0], len(ratios)


def seeds(n):
    return f"{n} seed" if n == 1 else f"{n} seeds"


def fmt_speedup(x):
    return "n/a" if x is None else f"{x:.3g}x"


def print_table(env_id, results):
    summary = {name: summarise(runs) for name, runs in results.items()}
    sp = {}
    if "fastrl" in results:
        for peer in ("sb3", "cleanrl"):
            if peer in results:
                sp[peer] = speedup(results["fastrl"], results[peer])
    cols = ("trainer", "solved", "steps to threshold", "s to threshold", "final eval",
            "peak RSS", "speedup vs sb3", "speedup vs cleanrl")
    rows = [cols]
    for name, s in summary.items():
        solved = f"{s['solved']}/{s['runs']}" + (f" ({s['failed']} failed)" if s["failed"]
                                                  else "")
        fast = name == "fastrl"
        rows.append((name, solved, fmt_num(s["s_med"]), fmt_num(s["t_med"], digits=1),
                     fmt_num(s["f_med"], digits=1), fmt_num(s["rss"], " MB"),
                     (fmt_speedup(sp["sb3"][0]) + f" ({seeds(sp['sb3'][1])})"
                      if fast and "sb3" in sp else "-"),
                     (fmt_speedup(sp["cleanrl"][0]) + f" ({seeds(sp['cleanrl'][1])})"
                      if fast and "cleanrl" in sp else "-")))
    widths = [max(len(r[i]) for r in rows) for i in range(len(cols))]
    print(f"\n{env_id} (threshold {THRESHOLDS[env_id]:g}):")
    for row in rows:
        print("  " + "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w)
                               in enumerate(zip(row, widths))))
    return summary, sp


def criteria(env_id, summary, sp):
    """[(description, 'pass' | 'FAIL ...' | 'not checked ...')] for one env."""
    out = []
    f, s = summary.get("fastrl"), summary.get("sb3")
    desc = f"{env_id}: fastrl solves at least as many seeds as sb3 within the zoo's budget"
    if f is None or s is None:
        out.append((desc, "not checked ("
                    + " and ".join(n for n in ("fastrl", "sb3") if n not in summary)
                    + " did not run)"))
    else:
        verdict = "pass" if f["solved"] >= s["solved"] else "FAIL"
        out.append((desc, f"{verdict} ({f['solved']} vs {s['solved']} of {f['runs']})"))
    for peer in ("sb3", "cleanrl"):
        desc = (f"{env_id}: wall time to threshold, fastrl >= {SPEEDUP_TARGET:g}x faster "
                f"than {peer}")
        if f is None or peer not in summary:
            out.append((desc, "not checked ("
                        + " and ".join(n for n in ("fastrl", peer) if n not in summary)
                        + " did not run)"))
            continue
        x, n = sp[peer]
        if x is None:
            out.append((desc, "FAIL (n/a: no seed solved by both)"))
        else:
            out.append((desc, f"{'pass' if x >= SPEEDUP_TARGET else 'FAIL'} "
                        f"({x:.3g}x, median over {seeds(n)})"))
    return out


# ---------------------------------------------------------------- main


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--envs", default=",".join(ENVS),
                    help=f"comma-separated, of {', '.join(ENVS)}")
    ap.add_argument("--seeds", type=int, default=10, help="number of seeds")
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cpus", default="",
                    help="comma-separated CPUs to pin to (default: the first --threads "
                         "allowed; 'none' = do not pin)")
    ap.add_argument("--skip", default="", help="comma-separated: fastrl,sb3,cleanrl")
    ap.add_argument("--fastrl", default="build/tools/fastrl")
    ap.add_argument("--fastrl-set", action="append", default=[], metavar="KEY=VALUE",
                    help="extra --set for every fastrl run (repeatable; not given to peers)")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter for the peers and for reading the zoo's settings")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per run")
    ap.add_argument("--stop-at-threshold", action="store_true",
                    help="every trainer stops at its first evaluation that reaches the "
                         "threshold (time to threshold only; final eval = that one)")
    a = ap.parse_args()
    a.envs = [e.strip() for e in a.envs.split(",") if e.strip()]
    bad = [e for e in a.envs if e not in ENVS]
    if bad or not a.envs:
        ap.error(f"--envs: {', '.join(bad) or 'none given'}; choose from {', '.join(ENVS)}")
    a.skip = {s.strip() for s in a.skip.split(",") if s.strip()}
    if a.skip - set(TRAINERS):
        ap.error(f"--skip: unknown {', '.join(sorted(a.skip - set(TRAINERS)))}")
    if a.seeds <= 0 or a.threads <= 0 or a.timeout <= 0:
        ap.error("--seeds, --threads and --timeout must be positive")
    a.fastrl = resolve(a.fastrl)
    return a


def setup(a):
    """Header and checks. Returns (skip set, zoo dict or None, list of problems)."""
    skip, problems = set(a.skip), []
    cpus = pin(a.threads, a.cpus)
    print(f"compare_dqn: DQN on {', '.join(a.envs)}, rl-baselines3-zoo's settings and "
          f"budgets, {seeds(a.seeds)} from {a.first_seed}, {a.threads} threads, interleaved; "
          f"greedy evaluation every {EVAL_EVERY:,} env steps, {EVAL_EPISODES} episodes"
          + ("; every run stops at its threshold" if a.stop_at_threshold else ""))
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs, pinned to "
          f"{cpus if cpus is not None else 'nothing'}; python {platform.python_version()}")
    zoo, why = load_zoo(a.python, a.envs)
    if zoo is None:
        print(f"\n*** the zoo's settings: {why} ***")
        return skip, None, ["the zoo's settings cannot be read"]
    print(f"rl_zoo3 {zoo['zoo_version']} ({zoo['path']}); keys the zoo leaves out are "
          "SB3 DQN's defaults:")
    for env_id in a.envs:
        s = zoo["envs"][env_id]
        shown = [f"n_timesteps={s['budget']}", f"n_envs={s['n_envs']}",
                 f"net_arch={s['net_arch']}"]
        shown += [f"{k}={value(s[k])}" + ("" if k in s["zoo_keys"] else " (SB3 default)")
                  for k in ALGO_KEYS]
        print(f"  {env_id}: {', '.join(shown)}")
    print("mapping: zoo / SB3 key -> fastrl --set -> CleanRL-style peer")
    w0 = max(len(m[0]) for m in MAPPING)
    w1 = max(len(m[1]) for m in MAPPING)
    for zk, fk, ck in MAPPING:
        print(f"  {zk:<{w0}}  {fk:<{w1}}  {ck}")
    print(f"  {'net_arch [a, b]':<{w0}}  {'policy.hidden=a,b':<{w1}}  hidden widths "
          "(ReLU)\n"
          f"  {'(ReLU, SB3 QNetwork)':<{w0}}  {'policy.activation=relu':<{w1}}  nn.ReLU\n"
          f"  {'n_envs (default 1)':<{w0}}  {'train.num_envs':<{w1}}  1\n"
          f"  {'n_timesteps':<{w0}}  {'--steps':<{w1}}  --budget")
    if a.fastrl_set:
        print(f"  extra fastrl settings, not mapped: {' '.join(a.fastrl_set)}")
    if "fastrl" not in skip:
        problem = fastrl_train_problem(a.fastrl)
        if problem:
            print(f"\n*** fastrl: {problem} ***\n")
            skip.add("fastrl")
            problems.append("fastrl has no train command")
    if not {"sb3", "cleanrl"} <= skip:
        problem, versions = peers_problem(a.python, PEER_MODULES, "bench/requirements-dqn.txt")
        print(f"peers: {problem or versions} ({a.python})")
        if problem:
            skip |= {"sb3", "cleanrl"}
            problems.append("the peers' packages cannot be imported")
    return skip, zoo, problems


def main():
    a = parse_args()
    skip, zoo, problems = setup(a)
    if zoo is None:
        return 1
    plans = {env_id: trainers(a, skip, env_id, zoo["envs"][env_id]) for env_id in a.envs}
    print()
    for name, make in plans[a.envs[0]].items():
        print(f"{name}: {' '.join(make(a.first_seed))}")
    busy0, own0, wall0 = busy_seconds(), own_seconds(), time.perf_counter()
    results = {}
    for env_id, cmds in plans.items():
        budget = zoo["envs"][env_id]["budget"]
        results[env_id] = {name: [] for name in cmds}
        for seed in range(a.first_seed, a.first_seed + a.seeds):
            for name, make in cmds.items():
                d = DqnRun(run(make(seed), a.timeout), THRESHOLDS[env_id], budget)
                results[env_id][name].append((seed, d))
                print(describe(env_id, name, seed, d), flush=True)
    busy1, own1, wall = busy_seconds(), own_seconds(), time.perf_counter() - wall0
    if busy0 is not None and busy1 is not None:
        other = max(0.0, (busy1 - busy0) - (own1 - own0))
        warn = "  WARNING: other work competed for the CPUs" if other > 0.05 * wall else ""
        print(f"other processes used {other:.1f} CPU-s during the {wall:.0f} s of runs{warn}")
    checks = []
    for env_id in a.envs:
        if not results[env_id]:
            print(f"\n{env_id}: no trainer ran")
            continue
        summary, sp = print_table(env_id, results[env_id])
        checks += criteria(env_id, summary, sp)
    print("\nsolved: seeds whose evaluation mean reached the threshold within the zoo's "
          "budget; steps / s to threshold: at the first such evaluation (s: wall time from "
          "process start), medians over all seeds, an unsolved seed counting as unsolved; "
          "final eval: median of the last evaluation's mean return; speedup: sb3 or "
          "cleanrl's s to threshold / fastrl's, median over the seeds both solved")
    print("\ncriteria:")
    for desc, verdict in checks:
        word = "not checked" if verdict.startswith("not checked") else verdict.split()[0]
        print(f"  {word:<11}  {desc} {verdict[len(word):].strip()}")
    passed = sum(v.startswith("pass") for _, v in checks)
    failed = sum(v.startswith("FAIL") for _, v in checks)
    print(f"criteria: {passed} passed, {failed} failed, {len(checks) - passed - failed} "
          "not checked")
    runs_failed = any(d.error for per in results.values() for runs in per.values()
                      for _, d in runs)
    for p in problems:
        print(f"problem: {p}")
    return 1 if runs_failed or problems else 0


if __name__ == "__main__":
    sys.exit(main())
