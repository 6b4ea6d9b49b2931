#!/usr/bin/env python3
"""Once-for-all policies: does a sub-policy cut from one elastic run score as well as a
policy of its shape trained on its own? (doc/elastic.md)

For each task and seed:
  - twins: `fastrl train TASK --steps B --set policy.hidden=W` for every compared shape W
    (the largest is the full-size run), each then `fastrl eval` over --episodes greedy
    episodes;
  - the elastic run: `fastrl train TASK --steps FB (--factor F, default 2) --set policy.hidden=FULL --set
    elastic.widths=...`, then `fastrl cut --arch W` for each shape, evaluated on the same
    episodes (same seed), with its predicted latency from one latency model per task
    (`--batch`, acting deterministically, as a deployed controller does);
  - a cut for a budget: `fastrl cut --latency-us X` with X between the compared shapes'
    predicted latencies, checked against the best member of `--list`'s front that meets it.
Scores are normalised per task: (R - R_random) / (R_full - R_random), R_full the mean
return of the full-size twins, R_random the mean return of uniformly random actions
over --episodes episodes of Gymnasium's env (the reference the built-ins match bit for
bit; gymnasium from bench/requirements.txt).

Targets (issue 26): the smallest twin at least 10 points below the largest; every cut
within 5 points of its twin (mean over seeds; a cut above its twin passes); the elastic
run at most 2x the env steps and 3x the wall time of the full-size run (median over
seeds); the budget's cut meets the budget when measured and scores within 5 points of
the best front member that meets it.

    python3 bench/elastic.py [--tasks Pendulum-v1,Acrobot-v1] [--seeds 5] [--batch 1024]
                             [--episodes 100] [--factor 2] [--set elastic.KEY=V ...]
Exit status: 0 whatever the targets; 1 when a command failed; 2 on bad arguments.
"""

import argparse
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_peers"))
from runner import resolve, run  # noqa: E402

# task: (full-size budget, full widths, width choices, compared shapes smallest first)
TASKS = {
    "Pendulum-v1": (300000, "128,128", "4,8,16,32,64", ["4", "16,16", "32,32", "64,64",
                                                         "128,128"]),
    "Acrobot-v1": (500000, "128,128", "4,8,16,32,64", ["4", "16,16", "32,32", "64,64",
                                                        "128,128"]),
}
NUM = r"([-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?)"


class Failed(Exception):
    pass


def field(text, key):
    m = re.search(rf"^{key}:\s*{NUM}", text, re.M)
    if not m:
        raise Failed(f"no `{key}:` in: {text[-300:]}")
    return float(m.group(1))


def random_return(task, episodes):
    try:
        import gymnasium as gym
    except ImportError:
        raise Failed("gymnasium is needed for R_random: pip install -r bench/requirements.txt")
    env = gym.make(task)
    env.action_space.seed(0)
    total = 0.0
    for ep in range(episodes):
        env.reset(seed=ep)
        done, ret = False, 0.0
        while not done:
            _, r, term, trunc, _ = env.step(env.action_space.sample())
            ret += float(r)
            done = term or trunc
        total += ret
    return total / episodes


def train(fastrl, task, steps, seed, out, settings, timeout):
    cmd = [fastrl, "train", task, "--steps", str(steps), "--seed", str(seed), "--quiet",
           "--out", out]
    for s in settings:
        cmd += ["--set", s]
    r = run(cmd, timeout)
    if r.error:
        raise Failed(f"{' '.join(cmd)}: {r.error}")
    return r.seconds


def evaluate(fastrl, ck, episodes, timeout):
    r = run([fastrl, "eval", ck, "--episodes", str(episodes), "--deterministic"], timeout)
    if r.rc != 0:
        raise Failed(f"eval {ck}: {(r.stderr or r.output)[-300:]}")
    return field(r.output, "mean_return")


def cut(fastrl, ck, args, timeout):
    r = run([fastrl, "cut", ck, "--deterministic"] + args, timeout)
    if r.rc != 0:
        raise Failed(f"cut {ck} {' '.join(args)}: {(r.stderr or r.output)[-300:]}")
    return r.output


def front_of(text):
    rows = []
    for line in text.splitlines():
        m = re.match(rf"^([0-9,]+)\s+{NUM}\s+([0-9]+)\s+{NUM}\s*$", line)
        if m:
            rows.append((m.group(1), float(m.group(2)), int(m.group(3)), float(m.group(4))))
    return rows


def one_seed(a, task, seed, work, model):
    budget, full, widths, shapes = TASKS[task]
    seconds, twin, cutr, pred = {}, {}, {}, {}
    for w in shapes:
        d = os.path.join(work, f"{task}-{seed}-twin-{w}")
        seconds[w] = train(a.fastrl, task, budget, seed, d, [f"policy.hidden={w}"], a.timeout)
        twin[w] = evaluate(a.fastrl, os.path.join(d, "checkpoint.frl"), a.episodes, a.timeout)
    d = os.path.join(work, f"{task}-{seed}-elastic")
    el_seconds = train(a.fastrl, task, int(a.factor * budget), seed, d,
                       [f"policy.hidden={full}", f"elastic.widths={widths}"] + a.set,
                       a.timeout)
    ck = os.path.join(d, "checkpoint.frl")
    common = ["--batch", str(a.batch), "--episodes", str(a.episodes), "--latency-model", model]
    for w in shapes:
        out = cut(a.fastrl, ck, ["--arch", w] + common, a.timeout)
        cutr[w], pred[w] = field(out, "return"), field(out, "predicted_us")
    # A budget between the second and third shapes' predicted latencies.
    limit = (pred[shapes[1]] + pred[shapes[2]]) / 2
    listed = cut(a.fastrl, ck, ["--list", "--latency-us", f"{limit:.3f}"] + common, a.timeout)
    chosen = (field(listed, "return"), field(listed, "measured_us"))
    best = max((r for r in front_of(listed) if r[1] <= limit), key=lambda r: r[3], default=None)
    return dict(seconds=seconds, twin=twin, cut=cutr, pred=pred, el_seconds=el_seconds,
                limit=limit, chosen=chosen, best=best[3] if best else None)


def norm(r, lo, hi):
    return 100.0 * (r - lo) / (hi - lo)


def report(task, runs, r_random, a):
    budget, full, widths, shapes = TASKS[task]
    r_full = statistics.mean(x["twin"][shapes[-1]] for x in runs)
    print(f"\n## {task}: {len(runs)} seeds, {budget:,} steps a twin, {int(a.factor * budget):,} the "
          f"elastic run (policy.hidden={full}, elastic.widths={widths})")
    print(f"R_random {r_random:.1f} (uniform actions), R_full {r_full:.1f} (mean of the "
          f"{shapes[-1]} twins); latency: acting at batch {a.batch}, deterministic\n")
    print("| widths | predicted us | twin score | cut score | cut - twin | within 5 |")
    print("| --- | --- | --- | --- | --- | --- |")
    verdicts = []
    for w in shapes:
        t = [norm(x["twin"][w], r_random, r_full) for x in runs]
        c = [norm(x["cut"][w], r_random, r_full) for x in runs]
        diff = statistics.mean(c) - statistics.mean(t)
        ok = diff >= -5
        verdicts.append(ok)
        p = statistics.median(x["pred"][w] for x in runs)
        print(f"| {w} | {p:.1f} | {statistics.mean(t):.1f} [{min(t):.0f}, {max(t):.0f}] | "
              f"{statistics.mean(c):.1f} [{min(c):.0f}, {max(c):.0f}] | {diff:+.1f} | "
              f"{'yes' if ok else 'NO'} |")
    span = max(statistics.median(x["pred"][w] for x in runs) for w in shapes) / \
        min(statistics.median(x["pred"][w] for x in runs) for w in shapes)
    small = statistics.mean(norm(x["twin"][shapes[0]], r_random, r_full) for x in runs)
    wall = statistics.median(x["el_seconds"] / x["seconds"][shapes[-1]] for x in runs)
    print(f"\npredicted latency span {span:.1f}x (target >= 8x); smallest twin "
          f"{small:.1f} points (target <= 90: size matters); elastic run: {a.factor:.2f}x the env "
          f"steps, {wall:.2f}x the wall time (median over seeds; target <= 3x)")
    fits, near = 0, 0
    for x in runs:
        if x["chosen"][1] <= x["limit"]:
            fits += 1
        if x["best"] is not None and norm(x["chosen"][0], r_random, r_full) >= \
                norm(x["best"], r_random, r_full) - 5:
            near += 1
    print(f"budget cut (between {shapes[1]} and {shapes[2]}): measured within the budget in "
          f"{fits}/{len(runs)} seeds, within 5 points of the front's best that meets it in "
          f"{near}/{len(runs)}")
    return all(verdicts) and span >= 8 and small <= 90 and wall <= 3 and a.factor <= 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", default="Pendulum-v1,Acrobot-v1")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--episodes", type=int, default=100)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--fastrl", default="build/tools/fastrl")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--factor", type=float, default=2.0,
                    help="the elastic run's env steps over the full-size run's (target <= 2)")
    ap.add_argument("--set", action="append", default=[],
                    help="a setting for the elastic runs (e.g. elastic.subnets=3)")
    a = ap.parse_args()
    a.fastrl = resolve(a.fastrl)
    tasks = a.tasks.split(",")
    if any(t not in TASKS for t in tasks):
        print(f"unknown task; known: {', '.join(TASKS)}", file=sys.stderr)
        return 2
    print("# bench/elastic.py: cut sub-policies against separately trained twins")
    met = True
    try:
        with tempfile.TemporaryDirectory(prefix="frl_elastic_") as work:
            for task in tasks:
                model = os.path.join(work, f"{task}-latency.txt")
                runs = []
                for seed in range(1, a.seeds + 1):
                    runs.append(one_seed(a, task, seed, work, model))
                    print(f"{task} seed {seed}: twins {runs[-1]['twin']}, cuts "
                          f"{runs[-1]['cut']}", flush=True)
                met &= report(task, runs, random_return(task, a.episodes), a)
    except Failed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    print(f"\nall targets met: {'yes' if met else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
