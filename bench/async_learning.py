#!/usr/bin/env python3
"""Does the async sampler learn as well as the sync one? Env steps to a target return.

Every run is the CLI, stopping at the target (train.target_return) or at --steps:

  build/tools/fastrl train CartPole-v1 --seed S --steps N --quiet --out DIR
      --set train.target_return=475 --set train.num_envs=E --set train.rollout=T
      --set train.minibatches=M --set sampler.mode=sync|async [--set ...]

Two tables (--table):

  ablation  (the default) at one shape (--envs 4096 --rollout 32 --minibatches 8, the
            shape where issue 27 found async learning far less than sync): sync, and
            async with the four ways of learning from its lagged rollouts:
              vtrace+coupled   train.advantage=vtrace train.decoupled=false (the
                               default before: V-trace's rho-weighted advantages, PPO's
                               clip around the acting policy mu)
              gae+coupled      train.decoupled=false
              vtrace+decoupled train.advantage=vtrace
              gae+decoupled    nothing set (today's default)
  sweep     envs 64, 256, 1024, 4096 x rollout 32 and 128 (minibatches 8 at rollout
            32, 4 at 128), sync against async with its defaults

Per row: seeds that reached the target within --steps, median and worst env steps to
it (an unsolved seed counts as --steps and as unsolved in the medians), the median
final mean return (last 100 episodes) and the median policy lag. Ratios are async's
median steps over sync's, from the same run of this script.

  python3 bench/async_learning.py [--table ablation|sweep] [--seeds 5] [--steps 4e6]
      [--threads T] [--fastrl build/tools/fastrl]
"""

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ABLATION = [
    ("sync", "sampler.mode=sync"),
    ("async vtrace+coupled", "sampler.mode=async train.advantage=vtrace train.decoupled=false"),
    ("async gae+coupled", "sampler.mode=async train.decoupled=false"),
    ("async vtrace+decoupled", "sampler.mode=async train.advantage=vtrace"),
    ("async gae+decoupled", "sampler.mode=async"),
]


def run_one(a, settings, seed, out_dir):
    cmd = [a.fastrl, "train", a.env, "--seed", str(seed), "--steps", str(int(a.steps)),
           "--quiet", "--out", out_dir, "--set", f"train.target_return={a.target:g}"]
    for kv in settings.split():
        cmd += ["--set", kv]
    if a.threads:
        cmd += ["--set", f"runtime.threads={a.threads}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
    with open(os.path.join(out_dir, "metrics.csv")) as f:
        rows = list(csv.DictReader(f))
    last = rows[-1]
    ret = float(last["mean_return"])
    steps = int(last["env_steps"])
    lag = [float(x["policy_lag_mean"]) for x in rows]
    return {"solved": ret >= a.target, "steps": steps if ret >= a.target else None,
            "final": ret, "lag": statistics.median(lag) if lag else 0.0}


def row(a, name, settings, shape, tmp):
    runs = []
    for seed in range(1, a.seeds + 1):
        d = os.path.join(tmp, f"{len(os.listdir(tmp))}")
        os.makedirs(d)
        runs.append(run_one(a, f"{shape} {settings}", seed, d))
    solved = sum(r["solved"] for r in runs)
    steps = [r["steps"] if r["steps"] is not None else float("inf") for r in runs]
    med = statistics.median(steps)
    return {"name": name, "solved": solved, "median": med, "worst": max(steps),
            "final": statistics.median(r["final"] for r in runs),
            "lag": statistics.median(r["lag"] for r in runs)}


def fmt_steps(x):
    return "unsolved" if x == float("inf") else f"{x / 1e6:.2f}M"


def print_row(r, base=None):
    ratio = ""
    if base is not None and r is not base:
        if r["median"] != float("inf") and base["median"] != float("inf"):
            ratio = f"{r['median'] / base['median']:.2f}x"
        else:
            ratio = "-"
    print(f"| {r['name']} | {r['solved']}/{SEEDS} | {fmt_steps(r['median'])} | "
          f"{fmt_steps(r['worst'])} | {r['final']:.1f} | {r['lag']:.2f} | {ratio} |", flush=True)


HEADER = ("| run | solved | median steps | worst | median final return | median lag | "
          "steps vs sync |\n| --- | --- | --- | --- | --- | --- | --- |")


def ablation(a, tmp):
    shape = (f"train.num_envs={a.envs} train.rollout={a.rollout} "
             f"train.minibatches={a.minibatches}")
    print(f"{a.env}, {a.envs} envs x {a.rollout} steps, {a.minibatches} minibatches, "
          f"target {a.target:g} within {a.steps:g} steps, seeds 1-{a.seeds}")
    print(HEADER)
    base = None
    for name, settings in ABLATION:
        r = row(a, name, settings, shape, tmp)
        base = base or r
        print_row(r, base)


def sweep(a, tmp):
    print(f"{a.env}: env steps to {a.target:g} within {a.steps:g}, seeds 1-{a.seeds}; "
          "async with its defaults")
    print(HEADER)
    for rollout, mbs in ((32, 8), (128, 4)):
        for envs in (64, 256, 1024, 4096):
            shape = f"train.num_envs={envs} train.rollout={rollout} train.minibatches={mbs}"
            base = None
            for mode in ("sync", "async"):
                r = row(a, f"{envs} envs x {rollout}, {mode}", f"sampler.mode={mode}",
                        shape, tmp)
                base = base or r
                print_row(r, base)


def main():
    global SEEDS
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--fastrl", default=os.path.join(ROOT, "build", "tools", "fastrl"))
    p.add_argument("--table", choices=("ablation", "sweep"), default="ablation")
    p.add_argument("--env", default="CartPole-v1")
    p.add_argument("--target", type=float, default=475.0)
    p.add_argument("--steps", type=float, default=4e6)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--envs", type=int, default=4096)
    p.add_argument("--rollout", type=int, default=32)
    p.add_argument("--minibatches", type=int, default=8)
    p.add_argument("--threads", type=int, default=0, help="runtime.threads (0: all cores)")
    a = p.parse_args()
    if not os.access(a.fastrl, os.X_OK):
        sys.exit(f"no fastrl at {a.fastrl}: build first (README.md)")
    if a.seeds < 1 or a.steps < 1:
        sys.exit("--seeds and --steps must be positive")
    SEEDS = a.seeds
    with tempfile.TemporaryDirectory() as tmp:
        (ablation if a.table == "ablation" else sweep)(a, tmp)


SEEDS = 0
if __name__ == "__main__":
    main()
