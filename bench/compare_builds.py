#!/usr/bin/env python3
"""Old build against new build: speed and learning, interleaved in one run.

A restructuring must not cost speed or change what is learned. This script builds an
old revision (or takes an old fastrl binary), then runs the same four workloads with the
old and the new binary, alternating which goes first, --reps times (default 5):

    cartpole   fastrl train CartPole-v1 --seed R --steps 500000
               --set train.target_return=475                 time to solve (s)
    ppo        fastrl bench train --steps 1000000 --threads 2   PPO env steps/s
    vec        fastrl bench env CartPole-v1 --envs 4096 --threads 2   vec env steps/s
    pendulum   fastrl train Pendulum-v1 --seed R --steps 300000 --threads 1
                                                             wall time (s), one thread

For each workload and repetition the ratio is new/old as a speed (old time / new time
for the times, new rate / old rate for the rates), so above 1 means the new build is
faster; the table gives every figure and the median ratio, and says whether each median
is at least --min-ratio (default 0.97). Learning: the two trainings of a repetition use
the same seed, so a restructuring that keeps the arithmetic gives the same steps and
final return; the table prints both and flags any difference.

    python3 bench/compare_builds.py --old-rev REV [--new build/tools/fastrl] [--reps 5]
    python3 bench/compare_builds.py --old PATH/TO/OLD/fastrl --new build/tools/fastrl

--old-rev builds REV (git archive into a temporary directory, meson release build
without tests) and keeps it under /tmp/frl-old-REV for the next call. Needs only
python3. Exit status 0 when every median meets --min-ratio and learning agrees, 1
otherwise (2 on bad arguments or a failed build).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_peers"))
from runner import REPO, run  # noqa: E402

STEPS_RE = re.compile(r"^steps_per_second:\s*([0-9.eE+-]+)\s*$", re.M)

WORKLOADS = ("cartpole", "ppo", "vec", "pendulum")
HIGHER_IS_FASTER = {"cartpole": False, "ppo": True, "vec": True, "pendulum": False}
UNIT = {"cartpole": "s", "ppo": "steps/s", "vec": "steps/s", "pendulum": "s"}


def command(fastrl, workload, rep):
    if workload == "cartpole":
        return [fastrl, "train", "CartPole-v1", "--seed", str(rep), "--steps", "500000",
                "--set", "train.target_return=475", "--quiet"]
    if workload == "ppo":
        return [fastrl, "bench", "train", "--steps", "1000000", "--threads", "2"]
    if workload == "vec":
        return [fastrl, "bench", "env", "CartPole-v1", "--envs", "4096", "--threads", "2"]
    return [fastrl, "train", "Pendulum-v1", "--seed", str(rep), "--steps", "300000",
            "--threads", "1", "--quiet"]


def measure(fastrl, workload, rep, timeout):
    """(figure, learning) of one run; learning is (steps, final return) or None."""
    r = run(command(fastrl, workload, rep), timeout)
    if workload == "vec":
        m = STEPS_RE.findall(r.output)
        if r.rc != 0 or not m:
            raise RuntimeError(f"{fastrl} bench env failed: {(r.stderr or r.output)[-400:]}")
        return float(m[-1]), None
    if workload == "ppo":
        # bench train prints its rate but no final `mean_return: ... seconds:` line.
        if r.rc != 0 or r.sps is None:
            raise RuntimeError(f"{' '.join(r.cmd)}: {r.error}")
        return r.sps, None
    if r.error:
        raise RuntimeError(f"{' '.join(r.cmd)}: {r.error}")
    # Training: the trainer's own seconds from its process start.
    return r.seconds, (r.steps, r.mean_return)


def build_old(rev):
    sha = subprocess.run(["git", "-C", REPO, "rev-parse", "--short=12", rev], check=True,
                         capture_output=True, text=True).stdout.strip()
    root = f"/tmp/frl-old-{sha}"
    exe = os.path.join(root, "build", "tools", "fastrl")
    if os.path.exists(exe):
        return exe
    os.makedirs(root, exist_ok=True)
    archive = subprocess.Popen(["git", "-C", REPO, "archive", sha], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", root], stdin=archive.stdout, check=True)
    archive.wait()
    subprocess.run(["meson", "setup", "build", "--buildtype=release", "-Dtests=false"],
                   cwd=root, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", "build", "tools/fastrl"], cwd=root, check=True,
                   stdout=subprocess.DEVNULL)
    return exe


def speed_ratio(workload, old, new):
    return new / old if HIGHER_IS_FASTER[workload] else old / new


def run_all(a):
    figs = {w: {"old": [], "new": [], "ratio": [], "learn": []} for w in WORKLOADS}
    for rep in range(1, a.reps + 1):
        for w in a.workloads:
            order = ("old", "new") if rep % 2 else ("new", "old")
            got = {}
            for side in order:
                got[side] = measure(getattr(a, side), w, rep, a.timeout)
            f = figs[w]
            f["old"].append(got["old"][0])
            f["new"].append(got["new"][0])
            f["ratio"].append(speed_ratio(w, got["old"][0], got["new"][0]))
            f["learn"].append((got["old"][1], got["new"][1]))
            print(f"rep {rep} {w}: old {got['old'][0]:.4g} new {got['new'][0]:.4g} "
                  f"{UNIT[w]}, speed new/old {f['ratio'][-1]:.3f}", flush=True)
    return figs


def learning_note(pairs):
    if pairs[0][0] is None:
        return "-"
    same = all(o == n for o, n in pairs)
    if same:
        return "identical"
    return "DIFFERS: " + "; ".join(f"old {o[0]} steps {o[1]:.1f}, new {n[0]} steps {n[1]:.1f}"
                                    for o, n in pairs if o != n)


def report(a, figs):
    ok = True
    print(f"\nold: {a.old}\nnew: {a.new}\nreps: {a.reps}, order alternating\n")
    print("| workload | unit | old (each rep) | new (each rep) | speed new/old (each) "
          "| median | >= %.2f | learning |" % a.min_ratio)
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for w in a.workloads:
        f = figs[w]
        med = statistics.median(f["ratio"])
        learn = learning_note(f["learn"])
        meets = med >= a.min_ratio
        ok = ok and meets and not learn.startswith("DIFFERS")
        print(f"| {w} | {UNIT[w]} | {', '.join(f'{x:.4g}' for x in f['old'])} | "
              f"{', '.join(f'{x:.4g}' for x in f['new'])} | "
              f"{', '.join(f'{x:.3f}' for x in f['ratio'])} | {med:.3f} | "
              f"{'yes' if meets else 'NO'} | {learn} |")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--old", help="the old build's fastrl binary")
    src.add_argument("--old-rev", help="a git revision to build as the old one")
    ap.add_argument("--new", default=os.path.join(REPO, "build", "tools", "fastrl"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-ratio", type=float, default=0.97)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--workloads", default=",".join(WORKLOADS),
                    help="comma-separated subset of " + ",".join(WORKLOADS))
    a = ap.parse_args()
    a.workloads = a.workloads.split(",")
    if a.reps < 1 or any(w not in WORKLOADS for w in a.workloads):
        ap.error("--reps must be >= 1 and --workloads a subset of " + ",".join(WORKLOADS))
    try:
        if a.old_rev:
            a.old = build_old(a.old_rev)
    except subprocess.CalledProcessError as e:
        print(f"building {a.old_rev} failed: {e}", file=sys.stderr)
        return 2
    for side in ("old", "new"):
        if not os.access(getattr(a, side), os.X_OK):
            ap.error(f"--{side}: {getattr(a, side)} is not an executable")
    return 0 if report(a, run_all(a)) else 1


if __name__ == "__main__":
    sys.exit(main())
