#!/usr/bin/env python3
"""Does `fastrl train` learn? Steps and wall time to a target return, over many seeds.

For each env, --seeds seeds (default 10) of
    build/tools/fastrl train ENV --seed S --set train.target_return=T --steps B
with (T, B):
    CartPole-v1   475   500,000
    Acrobot-v1   -100   500,000
    Pendulum-v1  -200   300,000
A run has solved when its final `mean_return` (mean of the last 100 episodes; training
stops as soon as it reaches T) is >= T. The table gives, per env: seeds solved, median
and worst env steps to solve, median and worst wall time to solve (the command's own
`seconds`, from its process start), and whether at least 9 in 10 seeds solved
(ceil(0.9 x seeds) for other seed counts). An unsolved seed counts as unsolved in the
medians and worsts (so a median can read `unsolved`).

Needs only the system python3, no packages:
    python3 bench/learning.py [--seeds 10] [--envs CartPole-v1,Acrobot-v1] [--jobs 1]
--jobs N runs N trainings at once: faster, but their wall times then compete for cores
(steps to solve do not depend on it). --threads T passes --set runtime.threads=T, and
each --set KEY=VALUE is passed on (e.g. --set train.advantage=vtrace).
Exit status: 0 whatever was solved; 1 when a run crashed (nonzero exit status, timeout
or output without the result lines), or fastrl has no train command; 2 on bad arguments.
"""

import argparse
import concurrent.futures
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_peers"))
from runner import fastrl_train_problem, fmt_num, median_worst, resolve, run  # noqa: E402

TASKS = {  # env: (target return, step budget)
    "CartPole-v1": (475.0, 500000),
    "Acrobot-v1": (-100.0, 500000),
    "Pendulum-v1": (-200.0, 300000),
}
MEETS_SHARE = 0.9  # "at least 9 of 10"


def command(a, env, seed):
    target, budget = TASKS[env]
    cmd = [a.fastrl, "train", env, "--seed", str(seed), "--steps", str(budget),
           "--set", f"train.target_return={target:g}"]
    if a.threads:
        cmd += ["--set", f"runtime.threads={a.threads}"]
    for kv in a.set:
        cmd += ["--set", kv]
    return cmd


def run_env(a, env, pool):
    """All seeds of one env; prints one line per run as it finishes, in seed order."""
    target = TASKS[env][0]
    seeds = range(a.first_seed, a.first_seed + a.seeds)
    futures = [pool.submit(run, command(a, env, s), a.timeout) for s in seeds]
    results = []
    for seed, fut in zip(seeds, futures):
        r = fut.result()
        results.append(r)
        if r.error:
            print(f"{env} seed {seed}: CRASHED: {r.error}\n  command: {' '.join(r.cmd)}",
                  flush=True)
        else:
            state = "solved" if r.solved(target) else "not solved"
            print(f"{env} seed {seed}: {state}, mean_return {r.mean_return:.1f}, "
                  f"{r.steps:,} steps, {r.seconds:.2f} s, {r.sps:,.0f} env steps/s",
                  flush=True)
    return results


def row(env, results, seeds):
    target = TASKS[env][0]
    inf = float("inf")
    solved = sum(r.solved(target) for r in results)
    s_med, s_worst = median_worst([r.steps if r.solved(target) else inf for r in results])
    t_med, t_worst = median_worst([r.seconds if r.solved(target) else inf for r in results])
    need = math.ceil(MEETS_SHARE * seeds)
    return (env, f"{target:g}", f"{TASKS[env][1]:,}", f"{solved}/{seeds}", fmt_num(s_med),
            fmt_num(s_worst), fmt_num(t_med, " s", 2), fmt_num(t_worst, " s", 2),
            f"{'yes' if solved >= need else 'NO'} (>= {need})")


def print_table(rows):
    head = ("env", "target", "budget", "solved", "steps med", "steps worst", "time med",
            "time worst", "meets 9/10")
    rows = [head] + rows
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--envs", default=",".join(TASKS),
                    help=f"comma-separated subset of {', '.join(TASKS)}")
    ap.add_argument("--jobs", type=int, default=1, help="runs at once")
    ap.add_argument("--threads", type=int, default=0,
                    help="--set runtime.threads=T for each run (0: fastrl's default)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    ap.add_argument("--fastrl", default="build/tools/fastrl")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="extra settings for every run, e.g. --set train.advantage=vtrace")
    a = ap.parse_args()
    a.envs = [e.strip() for e in a.envs.split(",") if e.strip()]
    unknown = [e for e in a.envs if e not in TASKS]
    if unknown or not a.envs:
        ap.error(f"unknown env(s) {', '.join(unknown)}; choose from {', '.join(TASKS)}")
    if a.seeds <= 0 or a.jobs <= 0 or a.threads < 0:
        ap.error("--seeds and --jobs must be positive, --threads >= 0")
    a.fastrl = resolve(a.fastrl)
    return a


def main():
    a = parse_args()
    problem = fastrl_train_problem(a.fastrl)
    if problem:
        print(f"learning: cannot run: {problem}", file=sys.stderr)
        return 1
    print(f"learning: {a.fastrl} train, {a.seeds} seeds from {a.first_seed}, "
          f"{a.jobs} at once, envs {', '.join(a.envs)}")
    rows, crashed = [], False
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for env in a.envs:
            results = run_env(a, env, pool)
            crashed |= any(r.error for r in results)
            rows.append(row(env, results, a.seeds))
    print()
    print_table(rows)
    if crashed:
        print("some runs CRASHED (see above); they count as unsolved", file=sys.stderr)
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
