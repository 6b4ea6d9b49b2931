#!/usr/bin/env python3
"""Does `fastrl train` learn? Steps and wall time to a target return, over many seeds.

For each task, --seeds seeds (default 10) of
    build/tools/fastrl train ENV --seed S --set train.target_return=T --steps B [--set ...]
The classic tasks (the default, --tasks classic):
    CartPole-v1   475   500,000
    Acrobot-v1   -100   500,000
    Pendulum-v1  -200   300,000
The memory tasks (--tasks memory), 1M steps each:
    nv-gru, nv-lstm   CartPoleNoVel-v1 (position and angle only), recurrent PPO
                      (policy.core=gru / lstm), target 475
    nv-mlp            the same env with the MLP policy (measured: whatever it reaches)
    nv-stack4         an MLP on the last 4 observations stacked (build/bench/train_stacked,
                      measured)
    probe-gru, probe-lstm, probe-mlp
                      MemoryProbe-v0 with D = 20 blank steps and K = 4 cues: trained to
                      1M steps (stopping early at a mean of 0.99 right answers), then
                      `fastrl eval` over 1,000 greedy episodes; solved when >= 95% are
                      right (the reward is 1 for a right answer, so the mean return is the
                      share); chance is 25%
The neuroevolution tasks (--tasks evo): train.algo=es or ga, each run capped at 20M env
steps (GA: a fixed 3M) and 10 minutes, then `fastrl eval` of the kept policy over 100
greedy episodes, which decides:
    es-CartPole, ga-CartPole     475    target 8 in 10
    es-Acrobot, ga-Acrobot      -100    target 8 in 10
    es-MountainCarContinuous      90    target 6 in 10
The pixel tasks (--tasks pixels): PixelGrid-v0 (a 5 x 5 grid seen only as a 40 x 40
RGB image; doc/pixels.md) with its default settings (convnet_simple with 8-16-16
channels, PPO), target 0.95 (the share of episodes that reach the goal) within 200,000
steps, 9 in 10; pixels-appo, the same with sampler.mode=async, measured; PixelGoal-v0
(the same world, the goal given only as the vector of a mixed observation, the agent
only in the image) with the same settings and target, 9 in 10.
The first-person tasks (--tasks ray; doc/environments.md), from 84 x 84 grayscale with
their default settings (PPO, convnet_simple with 8-16-16 channels), each seed stopped at
15 minutes (--max-seconds 900), 2 in 3 seeds (run with --seeds 3): solved at 80% of the
way from the random policy's return to the scripted oracle's:
    ray-room      RayRoom-v0                        1.248
    ray-maze      RayMaze-v0 (3 x 3 cells)          0.874
    ray-collect   RayCollect-v0                     20.10
The R2D2 tasks (--tasks r2d2; doc/r2d2.md), 1M steps each, 7 in 10:
    r2d2-nv           CartPoleNoVel-v1, one actor (sync), target 475 (last 100 episodes)
    r2d2-nv-async     the same with two Ape-X actors on the async sampler, measured by
                      100 greedy episodes of the saved policy (>= 475)
    r2d2-probe        MemoryProbe-v0 (D = 20, K = 4), one actor (sync), evaluated as the
                      probes above, but stopped by greedy evaluations during training
                      (200 episodes every 5,000 steps reaching 0.99), not by the training
                      mean
    r2d2-probe-stored, r2d2-probe-zero
                      the ablation, measured, on sequences of 20 steps (shorter than an
                      episode): stored state and burn-in 5 against zero state and no
                      burn-in (--tasks r2d2-probe-stored,r2d2-probe-zero --seeds 5),
                      stopped as r2d2-probe
The MuJoCo tasks (--tasks mujoco; a build with the MuJoCo plugin):
    InvertedPendulum-v5   950     300,000
    Reacher-v5             -6     500,000
    Hopper-v5            3000   1,000,000   measured (run it with --seeds 3)
A run has solved when its final `mean_return` (mean of the last 100 episodes; training
stops as soon as it reaches T), or for the probes the evaluation's, is >= T. The table
gives, per task: seeds solved, median and worst env steps to solve, median and worst
wall time to solve (the command's own `seconds`, from its process start), the median
final return (the evaluation's for the probes), and whether enough seeds solved: 9 in 10
for the classic tasks, 8 in 10 for the recurrent ones (ceil of that share for other seed
counts), "measured" for the baselines that are not expected to. An unsolved seed counts
as unsolved in the medians and worsts (so a median can read `unsolved`).

Needs only the system python3, no packages:
    python3 bench/learning.py [--seeds 10] [--tasks classic|memory|NAME,...] [--jobs 1]
--jobs N runs N trainings at once: faster, but their wall times then compete for cores
(steps to solve do not depend on it). --threads T passes --set runtime.threads=T, and
each --set KEY=VALUE is passed on (e.g. --set train.advantage=vtrace).
Exit status: 0 whatever was solved; 1 when a run crashed (nonzero exit status, timeout
or output without the result lines), or fastrl has no train command; 2 on bad arguments.
"""

import argparse
import collections
import concurrent.futures
import math
import os
import re
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_peers"))
from runner import fastrl_train_problem, fmt_num, median_worst, resolve, run  # noqa: E402

# program: "fastrl" (fastrl train) or "stacked" (build/bench/train_stacked);
# eval_episodes: 0, or greedy episodes of `fastrl eval` that decide (the probes);
# share: seeds that must solve (0: a baseline, measured only).
# train_target: the train.target_return that stops a run (None: the target, or for the
# probes PROBE_TRAIN_TARGET; False: none, the whole budget runs); timeout: seconds a run
# may take (None: --timeout); max_seconds: `fastrl train --max-seconds`, a cap on wall time
# that stops a run (saved, unsolved unless it got there) rather than failing it;
# greedy_stop: the run stops on greedy evaluations during training (EVAL_STOP) instead of
# on the training episodes' mean.
Task = collections.namedtuple("Task", "env target budget settings program eval_episodes share "
                              "train_target timeout max_seconds greedy_stop",
                              defaults=(None, None, None, False))
PROBE = "env.memory_delay=20 env.memory_cues=4"
# R2D2 on CartPole-sized tasks (doc/r2d2.md): sequences of 40 steps (overlap 20,
# burn-in 10), 16 replayed steps per env step, Adam's epsilon 1e-5 (SEED's 1e-3 suits
# Atari's large gradients; here it slowed the start by 300K steps), a 100K-step replay,
# a target copy every 200 updates.
R2D2 = ("train.algo=r2d2 train.gamma=0.99 train.seq_length=40 train.seq_overlap=20 "
        "train.burn_in=10 train.learning_starts=2000 train.batch_size=64 train.lr=1e-3 "
        "train.adam_eps=1e-5 train.buffer_size=100000 train.target_period=200 "
        "train.replay_ratio=16")
# The ablation's pair: sequences of 20 steps (overlap 10), shorter than the probe's
# 22-step episodes, so most start after the cue and only their starting state can hold
# it; with 40 steps most sequences see an episode's start and a zero state does too.
R2D2_SHORT = R2D2.replace("train.seq_length=40 train.seq_overlap=20 train.burn_in=10",
                          "train.seq_length=20 train.seq_overlap=10 train.burn_in=5")
TASKS = {
    "CartPole-v1": Task("CartPole-v1", 475.0, 500000, "", "fastrl", 0, 0.9),
    "Acrobot-v1": Task("Acrobot-v1", -100.0, 500000, "", "fastrl", 0, 0.9),
    "Pendulum-v1": Task("Pendulum-v1", -200.0, 300000, "", "fastrl", 0, 0.9),
    "nv-gru": Task("CartPoleNoVel-v1", 475.0, 1000000, "policy.core=gru", "fastrl", 0, 0.8),
    "nv-lstm": Task("CartPoleNoVel-v1", 475.0, 1000000, "policy.core=lstm", "fastrl", 0, 0.0),
    "nv-mlp": Task("CartPoleNoVel-v1", 475.0, 1000000, "", "fastrl", 0, 0.0),
    "nv-stack4": Task("CartPoleNoVel-v1", 475.0, 1000000, "", "stacked", 0, 0.0),
    "probe-gru": Task("MemoryProbe-v0", 0.95, 1000000, PROBE + " policy.core=gru", "fastrl",
                      1000, 0.8),
    "probe-lstm": Task("MemoryProbe-v0", 0.95, 1000000, PROBE + " policy.core=lstm", "fastrl",
                       1000, 0.8),
    "probe-mlp": Task("MemoryProbe-v0", 0.95, 1000000, PROBE, "fastrl", 1000, 0.0),
    "InvertedPendulum-v5": Task("InvertedPendulum-v5", 950.0, 300000, "", "fastrl", 0, 0.8),
    "Reacher-v5": Task("Reacher-v5", -6.0, 500000, "", "fastrl", 0, 0.8),
    "Hopper-v5": Task("Hopper-v5", 3000.0, 1000000, "", "fastrl", 0, 0.0),
    # One actor (the sync sampler, epsilon 0.4^4.5), solved when its last 100 episodes
    # average 475. With Ape-X's actors (r2d2-nv-async) the 0.4 actor's short episodes
    # hold the training mean down, so 100 greedy episodes of the saved policy decide.
    "r2d2-nv": Task("CartPoleNoVel-v1", 475.0, 1000000, R2D2, "fastrl", 0, 0.7),
    # SEED's layout: two actors (env groups) on the async sampler, central inference.
    "r2d2-nv-async": Task("CartPoleNoVel-v1", 475.0, 1000000,
                          R2D2 + " sampler.mode=async sampler.groups=2", "fastrl", 100, 0.0),
    "r2d2-probe": Task("MemoryProbe-v0", 0.95, 1000000, R2D2 + " " + PROBE, "fastrl", 1000, 0.7,
                       greedy_stop=True),
    # The ablation on 20-step sequences: stored state and burn-in against sequences
    # from zero state without burn-in (Kapturowski et al.'s "zero start state").
    "r2d2-probe-stored": Task("MemoryProbe-v0", 0.95, 1000000, R2D2_SHORT + " " + PROBE,
                              "fastrl", 1000, 0.0, greedy_stop=True),
    "r2d2-probe-zero": Task("MemoryProbe-v0", 0.95, 1000000,
                            R2D2_SHORT + " " + PROBE + " train.stored_state=false train.burn_in=0",
                            "fastrl", 1000, 0.0, greedy_stop=True),
    "PixelGrid-v0": Task("PixelGrid-v0", 0.95, 200000, "", "fastrl", 0, 0.9),
    "PixelGoal-v0": Task("PixelGoal-v0", 0.95, 200000, "", "fastrl", 0, 0.9),
    # The first-person tasks from 84 x 84 grayscale, each seed capped at 15 minutes:
    # solved at 80% of the way from the random policy's return to the oracle's
    # (build/bench/bench_raycast, 1,024 episodes each: RayRoom 0.226 -> 1.503, RayMaze
    # 0.371 -> 1.000, RayCollect 0.804 -> 24.921), 2 in 3 seeds.
    "ray-room": Task("RayRoom-v0", 1.248, 5000000, "", "fastrl", 0, 0.66, None, 1200, 900),
    "ray-maze": Task("RayMaze-v0", 0.874, 5000000, "", "fastrl", 0, 0.66, None, 1200, 900),
    "ray-collect": Task("RayCollect-v0", 20.10, 5000000, "", "fastrl", 0, 0.66, None, 1200,
                        900),
    "pixels-appo": Task("PixelGrid-v0", 0.95, 200000, "sampler.mode=async", "fastrl", 0, 0.0),
    # Neuroevolution: the kept policy (ES's centre, GA's best member) is evaluated over
    # 100 greedy episodes after training; each run is capped at 20M steps and 10 minutes.
    # ES stops once its population's mean fitness reaches the target; a GA's population
    # (mutants included) stays below its best member, so GA runs a fixed budget.
    "es-CartPole": Task("CartPole-v1", 475.0, 20000000, "train.algo=es", "fastrl", 100, 0.8,
                        None, 600),
    "ga-CartPole": Task("CartPole-v1", 475.0, 3000000, "train.algo=ga", "fastrl", 100, 0.8,
                        False, 600),
    "es-Acrobot": Task("Acrobot-v1", -100.0, 20000000, "train.algo=es", "fastrl", 100, 0.8,
                       None, 600),
    "ga-Acrobot": Task("Acrobot-v1", -100.0, 3000000, "train.algo=ga", "fastrl", 100, 0.8,
                       False, 600),
    "es-MountainCarContinuous": Task("MountainCarContinuous-v0", 90.0, 20000000,
                                     "train.algo=es", "fastrl", 100, 0.6, None, 600),
}
GROUPS = {
    "classic": ["CartPole-v1", "Acrobot-v1", "Pendulum-v1"],
    "memory": ["nv-gru", "nv-lstm", "nv-mlp", "nv-stack4", "probe-gru", "probe-lstm",
               "probe-mlp"],
    "mujoco": ["InvertedPendulum-v5", "Reacher-v5", "Hopper-v5"],
    "pixels": ["PixelGrid-v0", "pixels-appo", "PixelGoal-v0"],
    "ray": ["ray-room", "ray-maze", "ray-collect"],
    "r2d2": ["r2d2-nv", "r2d2-nv-async", "r2d2-probe", "r2d2-probe-stored",
             "r2d2-probe-zero"],
    "evo": ["es-CartPole", "ga-CartPole", "es-Acrobot", "ga-Acrobot",
            "es-MountainCarContinuous"],
}
PROBE_TRAIN_TARGET = 0.99  # the probes stop training once the sampled policy is this good
# R2D2's probes stop once 200 greedy episodes, every 5,000 steps, answer 99% right: their
# Q-learning oscillates after learning (one seed's training mean went 1.0, 0.76, 0.99
# over 25K steps), so a training mean of 0.99 could stop at a policy that greedily got
# one cue of four wrong (3 of 10 seeds did, 2026-12-02).
EVAL_STOP = ["--eval-every", "5000", "--eval-episodes", "200",
             "--eval-target", str(PROBE_TRAIN_TARGET)]
EVAL_RE = re.compile(r"^mean_return:\s*([-+0-9.eEnaif]+)\s*$", re.M)


def command(a, task, seed, out_dir):
    t = TASKS[task]
    prog = a.stacked if t.program == "stacked" else a.fastrl
    target = t.train_target
    if target is None:
        target = PROBE_TRAIN_TARGET if t.eval_episodes and t.env == "MemoryProbe-v0" \
            else t.target
    cmd = [prog, "train", t.env] if t.program == "fastrl" else [prog, t.env, "--stack", "4"]
    cmd += ["--seed", str(seed), "--steps", str(t.budget)]
    if t.greedy_stop:
        cmd += EVAL_STOP
    elif target is not False:
        cmd += ["--set", f"train.target_return={target:g}"]
    if t.program == "fastrl":
        cmd += ["--quiet", "--out", out_dir]
    if t.max_seconds:
        cmd += ["--max-seconds", str(t.max_seconds)]
    for kv in t.settings.split():
        cmd += ["--set", kv]
    if a.threads:
        cmd += ["--set", f"runtime.threads={a.threads}"]
    for kv in a.set:
        cmd += ["--set", kv]
    return cmd


def evaluate(a, task, out_dir, r):
    """The probes and the evolved policies: the greedy evaluation replaces the training
    return (for the probes, the share of right answers)."""
    t = TASKS[task]
    e = run([a.fastrl, "eval", os.path.join(out_dir, "checkpoint.frl"), "--episodes",
             str(t.eval_episodes), "--deterministic"], t.timeout or a.timeout)
    m = EVAL_RE.search(e.output)
    if e.rc != 0 or not m:
        r.error = f"fastrl eval failed: {e.output.strip()[-300:]!r}"
        return
    r.train_return = r.mean_return
    r.mean_return = float(m.group(1))


def run_one(a, task, seed):
    out_dir = tempfile.mkdtemp(prefix="frl_learning_")
    try:
        r = run(command(a, task, seed, out_dir), TASKS[task].timeout or a.timeout)
        if r.error is None and TASKS[task].eval_episodes:
            evaluate(a, task, out_dir, r)
        return r
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def run_task(a, task, pool):
    """All seeds of one task; prints one line per run as it finishes, in seed order."""
    t = TASKS[task]
    seeds = range(a.first_seed, a.first_seed + a.seeds)
    futures = [pool.submit(run_one, a, task, s) for s in seeds]
    results = []
    for seed, fut in zip(seeds, futures):
        r = fut.result()
        results.append(r)
        if r.error:
            print(f"{task} seed {seed}: CRASHED: {r.error}\n  command: {' '.join(r.cmd)}",
                  flush=True)
        else:
            state = "solved" if r.solved(t.target) else "not solved"
            what = "greedy eval" if t.eval_episodes else "mean_return"
            print(f"{task} seed {seed}: {state}, {what} {r.mean_return:.3f}, "
                  f"{r.steps:,} steps, {r.seconds:.2f} s, {r.sps:,.0f} env steps/s",
                  flush=True)
    return results


def row(task, results, seeds):
    t = TASKS[task]
    inf = float("inf")
    solved = sum(r.solved(t.target) for r in results)
    s_med, s_worst = median_worst([r.steps if r.solved(t.target) else inf for r in results])
    t_med, t_worst = median_worst([r.seconds if r.solved(t.target) else inf for r in results])
    finals = [r.mean_return for r in results if r.error is None]
    final = f"{statistics.median(finals):.3g}" if finals else "-"
    need = math.ceil(t.share * seeds)
    meets = f"{'yes' if solved >= need else 'NO'} (>= {need})" if t.share else "measured"
    name = task if task == t.env else f"{task} ({t.env})"
    return (name, f"{t.target:g}", f"{t.budget:,}", f"{solved}/{seeds}", fmt_num(s_med),
            fmt_num(s_worst), fmt_num(t_med, " s", 2), fmt_num(t_worst, " s", 2), final, meets)


def print_table(rows):
    head = ("task", "target", "budget", "solved", "steps med", "steps worst", "time med",
            "time worst", "final med", "meets")
    rows = [head] + rows
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--tasks", "--envs", dest="tasks", default="classic",
                    help=f"classic, memory, mujoco, evo, pixels, ray, r2d2, or comma-separated names of {', '.join(TASKS)}")
    ap.add_argument("--jobs", type=int, default=1, help="runs at once")
    ap.add_argument("--threads", type=int, default=0,
                    help="--set runtime.threads=T for each run (0: fastrl's default)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    ap.add_argument("--fastrl", default="build/tools/fastrl")
    ap.add_argument("--stacked", default="build/bench/train_stacked",
                    help="the stacked-observation trainer (task nv-stack4)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="extra settings for every run, e.g. --set train.advantage=vtrace")
    a = ap.parse_args()
    names = []
    for part in (x.strip() for x in a.tasks.split(",")):
        names += GROUPS.get(part, [part] if part else [])
    a.tasks = list(dict.fromkeys(names))
    unknown = [t for t in a.tasks if t not in TASKS]
    if unknown or not a.tasks:
        ap.error(f"unknown task(s) {', '.join(unknown)}; choose from classic, memory, "
                 f"{', '.join(TASKS)}")
    if a.seeds <= 0 or a.jobs <= 0 or a.threads < 0:
        ap.error("--seeds and --jobs must be positive, --threads >= 0")
    a.fastrl = resolve(a.fastrl)
    a.stacked = resolve(a.stacked)
    return a


def main():
    a = parse_args()
    problem = fastrl_train_problem(a.fastrl)
    if problem:
        print(f"learning: cannot run: {problem}", file=sys.stderr)
        return 1
    if any(TASKS[t].program == "stacked" for t in a.tasks) and not os.path.isfile(a.stacked):
        print(f"learning: cannot run nv-stack4: {a.stacked} does not exist (ninja -C build)",
              file=sys.stderr)
        return 1
    print(f"learning: {a.fastrl} train, {a.seeds} seeds from {a.first_seed}, "
          f"{a.jobs} at once, tasks {', '.join(a.tasks)}")
    rows, crashed = [], False
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for task in a.tasks:
            results = run_task(a, task, pool)
            crashed |= any(r.error for r in results)
            rows.append(row(task, results, a.seeds))
    print()
    print_table(rows)
    if crashed:
        print("some runs CRASHED (see above); they count as unsolved", file=sys.stderr)
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
