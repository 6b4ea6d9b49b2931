#!/usr/bin/env python3
"""Train PPO on CartPole-v1 with fastrl, a CleanRL reproduction and Stable-Baselines3.

Per seed (--seeds, default 3), interleaved so that a noisy patch of a shared machine
hits all of them (fastrl, cleanrl, sb3, fastrl, cleanrl, sb3, ...), each as a child
process on the same CPUs:

  fastrl   build/tools/fastrl train ENV --seed S --steps BUDGET
                 --set runtime.threads=T --set train.target_return=TARGET
                 [--set KEY=VALUE for each --fastrl-set]
  cleanrl  bench/cleanrl_ppo.py --env ENV --seed S --total-steps BUDGET --target TARGET
                 --threads T   (CleanRL ppo.py defaults: 4 envs x 128 steps, 4 x 4 minibatch
                 epochs, lr 2.5e-4 annealed over BUDGET, separate 64x64 tanh nets)
  sb3      bench/train_peers/sb3_ppo.py, same options; --sb3-hyperparams zoo (default:
                 rl-zoo3's tuned CartPole PPO, 8 envs x 32 steps, batch 256, 20 epochs,
                 gamma 0.98, lambda 0.8, linear lr 1e-3 and clip 0.2 over BUDGET) or
                 default (SB3's own PPO defaults, 1 env)

Each stops as soon as the mean return of its last 100 finished episodes reaches TARGET
and reports, in the same format, its env steps/s and `mean_return: X steps: N
seconds: S` (S = wall time from its process start, imports included). The table gives,
per trainer: env steps/s (median), wall time to solve (median and worst; a seed that
never solves counts as unsolved), seeds solved, env steps to solve, peak RSS (per child,
from wait4), and fastrl / peer for steps/s and for time to solve.
Then one end-to-end throughput run of fastrl without a target: --throughput-steps steps.

The script pins itself (and so its children) to --threads CPUs (--cpus to choose them)
and passes --threads to every trainer (torch.set_num_threads; fastrl runtime.threads).

Setup and run, from the repository root:
  python3 -m venv /tmp/trainvenv && /tmp/trainvenv/bin/pip install -r bench/requirements-train.txt
  /tmp/trainvenv/bin/python bench/compare_train.py [--seeds 3] [--threads 2]

The peers run with this script's interpreter (--python to change). When fastrl has no
`train` command (or no binary), that is printed and the peers still run.
Exit status: 0 when every run ran (solved or not); 1 when fastrl is missing its train
command or any run crashed, timed out or printed no result; 2 on bad arguments.
"""

import argparse
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "train_peers"))
sys.path.insert(0, HERE)
from compare_env import busy_seconds, cpu_model, own_seconds, pin  # noqa: E402
from runner import (fastrl_train_problem, fmt_num, median_worst, resolve,  # noqa: E402
                    run)

PEER_MODULES = "torch, gymnasium, stable_baselines3"


# ---------------------------------------------------------------- commands


def fastrl_cmd(a, seed, target=True, steps=None):
    cmd = [a.fastrl, "train", a.env, "--seed", str(seed), "--steps", str(steps or a.budget),
           "--set", f"runtime.threads={a.threads}"]
    if target:
        cmd += ["--set", f"train.target_return={a.target:g}"]
    for kv in a.fastrl_set:
        cmd += ["--set", kv]
    return cmd


def peer_cmd(a, script, seed):
    return [a.python, os.path.join(HERE, script), "--env", a.env, "--seed", str(seed),
            "--total-steps", str(a.budget), "--target", f"{a.target:g}",
            "--threads", str(a.threads)]


def trainers(a, skip):
    """name -> function(seed) giving the command, in the interleaving order."""
    table = {
        "fastrl": lambda s: fastrl_cmd(a, s),
        "cleanrl": lambda s: peer_cmd(a, "cleanrl_ppo.py", s),
        "sb3": lambda s: peer_cmd(a, "train_peers/sb3_ppo.py", s)
        + ["--hyperparams", a.sb3_hyperparams],
    }
    return {k: v for k, v in table.items() if k not in skip}


def peers_problem(python, modules=PEER_MODULES, requirements="bench/requirements-train.txt"):
    """None when the peers' packages import in `python`, else why not; then their versions."""
    code = (f"import {modules}; print(' '.join(m.__name__ + ' ' + m.__version__ "
            f"for m in [{modules}]))")
    try:
        p = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as e:
        return f"cannot run {python}: {e}", None
    if p.returncode != 0:
        return (f"{python} cannot import {modules}: {p.stderr.strip()[-300:]}. "
                "Install them: python3 -m venv /tmp/trainvenv && /tmp/trainvenv/bin/pip "
                f"install -r {requirements}, then run this script with "
                "/tmp/trainvenv/bin/python"), None
    return None, p.stdout.strip()


# ---------------------------------------------------------------- running


def run_all(a, cmds):
    """Interleaved runs: seed by seed, each trainer in turn. Returns name -> [Result]."""
    results = {name: [] for name in cmds}
    for seed in range(a.first_seed, a.first_seed + a.seeds):
        for name, make in cmds.items():
            r = run(make(seed), a.timeout)
            results[name].append(r)
            print(describe(name, seed, r, a.target), flush=True)
    return results


def describe(name, seed, r, target):
    head = f"seed {seed} {name:<8}"
    if r.error:
        return f"{head} FAILED: {r.error}"
    state = "solved" if r.solved(target) else "NOT solved"
    return (f"{head} {state}: mean_return {r.mean_return:.1f} after {r.steps:,} steps, "
            f"{r.seconds:.2f} s from start (wall {r.wall:.2f} s), "
            f"{r.sps:,.0f} env steps/s, peak RSS {r.maxrss_mb:.0f} MB")


def summarise(runs, target):
    ok = [r for r in runs if not r.error]
    solved = [r for r in ok if r.solved(target)]
    inf = float("inf")
    sps, _ = median_worst([r.sps for r in ok])
    t_med, t_worst = median_worst([r.seconds if r.solved(target) else inf for r in ok])
    s_med, s_worst = median_worst([r.steps if r.solved(target) else inf for r in ok])
    rss = max((r.maxrss_mb for r in runs), default=None)
    return dict(runs=len(runs), ok=len(ok), solved=len(solved), sps=sps, t_med=t_med,
                t_worst=t_worst, s_med=s_med, s_worst=s_worst, rss=rss)


# ---------------------------------------------------------------- report


def ratio(x, y):
    if x is None or y is None or x != x or y != y or y == 0:
        return "n/a"
    if float("inf") in (x, y):
        return "n/a"
    return f"{x / y:.3g}x"


def print_table(summary):
    cols = ("trainer", "steps/s med", "solve s med", "solve s worst", "solved",
            "steps med", "steps worst", "peak RSS", "sps fastrl/peer", "time fastrl/peer")
    rows = [cols]
    f = summary.get("fastrl")
    for name, s in summary.items():
        rows.append((name, fmt_num(s["sps"]), fmt_num(s["t_med"], digits=2),
                     fmt_num(s["t_worst"], digits=2), f"{s['solved']}/{s['runs']}",
                     fmt_num(s["s_med"]), fmt_num(s["s_worst"]),
                     fmt_num(s["rss"], " MB"),
                     "1" if name == "fastrl" else ratio(f and f["sps"], s["sps"]),
                     "1" if name == "fastrl" else ratio(f and f["t_med"], s["t_med"])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(cols))]
    for row in rows:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w)
                        in enumerate(zip(row, widths))))
    print("sps fastrl/peer > 1: fastrl steps faster; time fastrl/peer < 1: fastrl solves "
          "sooner (medians; n/a when fastrl did not run or a median is unsolved)")


def throughput(a):
    if a.throughput_steps <= 0:
        return None
    r = run(fastrl_cmd(a, a.first_seed, target=False, steps=a.throughput_steps), a.timeout)
    if r.error:
        print(f"fastrl throughput run FAILED: {r.error}")
        return r
    print(f"fastrl end-to-end ({a.throughput_steps:,} steps, no target, seed "
          f"{a.first_seed}, {a.threads} threads): {r.steps:,} steps in {r.seconds:.2f} s "
          f"(mean_return {r.mean_return:.1f}), peak RSS {r.maxrss_mb:.0f} MB")
    print(f"env_steps_per_second: {r.sps:.1f}")
    return r


# ---------------------------------------------------------------- main


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", default="CartPole-v1")
    ap.add_argument("--seeds", type=int, default=3, help="number of seeds")
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--target", type=float, default=475.0)
    ap.add_argument("--budget", type=int, default=500000, help="env-step budget per run")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cpus", default="",
                    help="comma-separated CPUs to pin to (default: the first --threads "
                         "allowed; 'none' = do not pin)")
    ap.add_argument("--throughput-steps", type=int, default=1000000,
                    help="steps of the fastrl run without target (0 = skip it)")
    ap.add_argument("--sb3-hyperparams", choices=("zoo", "default"), default="zoo")
    ap.add_argument("--fastrl", default="build/tools/fastrl")
    ap.add_argument("--fastrl-set", action="append", default=[], metavar="KEY=VALUE",
                    help="extra --set for every fastrl run (repeatable), e.g. "
                         "train.num_envs=4 to match CleanRL's env count")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the peers")
    ap.add_argument("--skip", default="", help="comma-separated: fastrl,cleanrl,sb3")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    a = ap.parse_args()
    unknown = {s.strip() for s in a.skip.split(",") if s.strip()} - {"cleanrl", "fastrl", "sb3"}
    if unknown:  # a misspelt peer ran unsaid
        ap.error(f"--skip: unknown {', '.join(sorted(unknown))}")
    if a.seeds <= 0 or a.threads <= 0 or a.budget <= 0:
        ap.error("--seeds, --threads and --budget must be positive")
    a.fastrl = resolve(a.fastrl)
    return a


def setup(a):
    """Prints the header; returns (set of trainers to skip, whether fastrl is missing)."""
    skip = {s.strip() for s in a.skip.split(",") if s.strip()}
    cpus = pin(a.threads, a.cpus)
    print(f"compare_train: {a.env}, target {a.target:g} (mean of the last 100 episodes), "
          f"budget {a.budget:,} steps, {a.seeds} seeds from {a.first_seed}, "
          f"{a.threads} threads, interleaved")
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs, pinned to "
          f"{cpus if cpus is not None else 'nothing'}; python {platform.python_version()}")
    fastrl_missing = False
    if "fastrl" not in skip:
        problem = fastrl_train_problem(a.fastrl)
        if problem:
            print(f"\n*** fastrl: {problem} ***\n")
            skip.add("fastrl")
            fastrl_missing = True
    if not {"cleanrl", "sb3"} <= skip:
        problem, versions = peers_problem(a.python)
        print(f"peers: {problem or versions} ({a.python})")
        if problem:
            skip |= {"cleanrl", "sb3"}
    return skip, fastrl_missing


def main():
    a = parse_args()
    skip, fastrl_missing = setup(a)
    cmds = trainers(a, skip)
    for name, make in cmds.items():
        print(f"{name}: {' '.join(make(a.first_seed))}")
    busy0, own0, wall0 = busy_seconds(), own_seconds(), time.perf_counter()
    results = run_all(a, cmds)
    busy1, own1, wall = busy_seconds(), own_seconds(), time.perf_counter() - wall0
    if busy0 is not None and busy1 is not None:
        other = max(0.0, (busy1 - busy0) - (own1 - own0))
        warn = "  WARNING: other work competed for the CPUs" if other > 0.05 * wall else ""
        print(f"other processes used {other:.1f} CPU-s during the {wall:.0f} s of runs{warn}")
    print()
    if results:
        print_table({name: summarise(runs, a.target) for name, runs in results.items()})
    else:
        print("no trainer ran")
    thr = throughput(a) if "fastrl" in cmds else None
    failed = any(r.error for runs in results.values() for r in runs) or (thr and thr.error)
    if fastrl_missing:
        print("\nfastrl: no train command, so no fastrl figures (peers only)")
    return 1 if failed or fastrl_missing else 0


if __name__ == "__main__":
    sys.exit(main())
