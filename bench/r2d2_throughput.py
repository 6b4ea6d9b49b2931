#!/usr/bin/env python3
"""R2D2's throughput in SEED's layout: env steps/s, learner updates/s, and where time goes.

Runs `fastrl train ENV --set train.algo=r2d2 --set sampler.mode=async` with --groups
actors (env groups, default 2) for --steps env steps, writing a metrics row after every
update (train.log_every=0), then sums the rows:

    env steps/s        env steps / wall seconds of the training
    updates/s          learner updates (epochs_done summed) / wall seconds
    learner waiting    time_waiting summed / wall: the learner's wait for a rollout
    learner busy       time_replay + time_backward + time_optimizer summed / wall
    env stepping       time_env summed / (wall x threads): the threads' share stepping
    inference          time_inference summed / (wall x threads): the threads' share in
                       the central batched inference (an actor group waits for its
                       actions while it runs: this is the upper bound of that wait)
The rest of the threads' time is waiting: for a free ring slot when the learner is the
bottleneck (high replay ratios), for work otherwise.

Settings default to bench/learning.py's r2d2-nv task (CartPole-sized sequences, replay
ratio 16). Extra --set KEY=VALUE are passed on. Needs only python3 and build/tools/fastrl.
    python3 bench/r2d2_throughput.py [--env CartPoleNoVel-v1] [--steps 200000]
        [--groups 2] [--threads 2] [--set KEY=VALUE ...]
"""

import argparse
import csv
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from learning import R2D2  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fastrl", default=os.path.join(HERE, "..", "build", "tools", "fastrl"))
    ap.add_argument("--env", default="CartPoleNoVel-v1")
    ap.add_argument("--steps", type=int, default=200000)
    ap.add_argument("--groups", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    a = ap.parse_args()
    if not os.access(a.fastrl, os.X_OK):
        print(f"r2d2_throughput: {a.fastrl} is not built (ninja -C build)", file=sys.stderr)
        return 1
    settings = R2D2.split() + ["sampler.mode=async", f"sampler.groups={a.groups}",
                               "train.log_every=0"] + a.set
    with tempfile.TemporaryDirectory() as out:
        cmd = [a.fastrl, "train", a.env, "--steps", str(a.steps), "--quiet", "--out", out,
               "--threads", str(a.threads)]
        for s in settings:
            cmd += ["--set", s]
        print("r2d2_throughput:", " ".join(cmd))
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stdout + run.stderr, file=sys.stderr)
            return 1
        with open(os.path.join(out, "metrics.csv")) as f:
            rows = list(csv.DictReader(f))
    if not rows:
        print("r2d2_throughput: no metrics rows", file=sys.stderr)
        return 1

    def total(key):
        return sum(float(r[key]) for r in rows)

    wall = float(rows[-1]["seconds"])
    steps = int(rows[-1]["env_steps"])
    updates = total("epochs_done")
    learner = total("time_replay") + total("time_backward") + total("time_optimizer")
    print(f"{a.env}, {a.groups} actors, {a.threads} threads, {steps} env steps in {wall:.1f} s")
    print(f"  env steps/s        {steps / wall:10.0f}")
    print(f"  updates/s          {updates / wall:10.1f}   ({updates:.0f} updates)")
    print(f"  learner waiting    {100 * total('time_waiting') / wall:9.1f} %")
    print(f"  learner busy       {100 * learner / wall:9.1f} %")
    print(f"  env stepping       {100 * total('time_env') / (wall * a.threads):9.1f} % of the threads")
    print(f"  inference          {100 * total('time_inference') / (wall * a.threads):9.1f} % of the threads")
    print(f"  policy lag         mean {sum(float(r['policy_lag_mean']) for r in rows) / len(rows):.2f}, "
          f"max {max(float(r['policy_lag_max']) for r in rows):.0f} versions")
    print(f"  final mean_return  {float(rows[-1]['mean_return']):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
