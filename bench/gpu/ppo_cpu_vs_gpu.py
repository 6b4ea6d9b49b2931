#!/usr/bin/env python3
"""End-to-end PPO on CartPole-v1 with thousands of envs: the GPU path against the CPU
path of the same build, in one run.

Each run is the project's CLI, the same command but for runtime.device:

  build/tools/fastrl train ENV --seed S --steps N --quiet --out DIR
      --set runtime.device=cpu|cuda --set runtime.threads=T --set runtime.tf32=0|1
      --set train.num_envs=4096 --set train.rollout=32 --set train.minibatches=8
      [--set KEY=VALUE for each --set]

4096 envs x 32 steps = 131,072 rows an update, 8 minibatches of 16,384 rows, 4 epochs
(train.epochs' default); the rest is the CartPole defaults (lib/trainer/env_defaults.c:
lr 2.5e-3 annealed, 64x64 tanh actor and critic). On cuda the policy acts and learns on
the GPU (the plugin's model and learner) while the envs step on the CPU threads; on cpu
everything runs on the threads. Both get the same threads, seed and settings.

First one short warm-up run of each (one update: page cache, the CUDA context and
cuBLAS load); if the cuda one fails (no GPU, no plugin) its error line is printed with
SKIP and the script exits 0. Then --reps runs of each, alternating (cpu, cuda, cuda,
cpu, ...) so that machine noise hits both.

Per run, from the CLI's output and DIR/metrics.csv:
  steps/s     env steps per second over the whole run (the CLI's env_steps_per_second:
              from the trainer's creation, the first update's lazy set-up included)
  steady      (env_steps[last] - env_steps[1]) / (seconds[last] - seconds[1]): the rate
              after the first update
  per update  the stage times of metrics.csv (env, inference, backward + optimizer),
              mean over updates 2..last
  return      the CLI's final mean_return (mean of the last 100 episodes)
The table gives the median over reps; ratio = cuda / cpu.

  python3 bench/gpu/ppo_cpu_vs_gpu.py [--envs 4096] [--steps 10000000] [--reps 2]

Exit status: 0 when it ran or skipped; 1 when a run failed; 2 on bad arguments or a
missing fastrl binary.
"""

import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEVICES = ("cpu", "cuda")


class Skip(Exception):
    """The GPU path cannot run here; the message says why."""


class Failed(Exception):
    """A run failed."""


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--fastrl", default=os.path.join(ROOT, "build", "tools", "fastrl"))
    p.add_argument("--env", default="CartPole-v1")
    p.add_argument("--envs", type=int, default=4096)
    p.add_argument("--rollout", type=int, default=32)
    p.add_argument("--minibatches", type=int, default=8)
    p.add_argument("--steps", type=float, default=10e6,
                   help="env steps a run (the trainer rounds up to whole updates)")
    p.add_argument("--reps", type=int, default=2, help="timed runs per device")
    p.add_argument("--threads", type=int, default=0, help="runtime.threads (0: all cores)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tf32", type=int, default=0, choices=[0, 1])
    p.add_argument("--plugin", help="FRL_CUDA_PLUGIN for the cuda runs")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="another setting for both devices (repeatable)")
    p.add_argument("--keep", help="keep every run's --out directory under this folder")
    a = p.parse_args(argv)
    if a.envs < 1 or a.rollout < 1 or a.minibatches < 1 or a.reps < 1 or a.steps < 1:
        p.error("--envs, --rollout, --minibatches, --reps and --steps must be >= 1")
    rows = a.envs * a.rollout
    if rows % a.minibatches:
        p.error(f"{a.envs} envs x {a.rollout} steps = {rows} rows do not split into "
                f"{a.minibatches} minibatches")
    return a


# ---------------------------------------------------------------- one run


def train_cmd(a, device, steps, out):
    cmd = [a.fastrl, "train", a.env, "--seed", str(a.seed), "--steps", str(int(steps)),
           "--quiet", "--out", out]
    for kv in (f"runtime.device={device}", f"runtime.threads={a.threads}",
               f"runtime.tf32={'true' if a.tf32 else 'false'}",
               f"train.num_envs={a.envs}", f"train.rollout={a.rollout}",
               f"train.minibatches={a.minibatches}", *a.set):
        cmd += ["--set", kv]
    return cmd


def run_env(a, device):
    env = dict(os.environ)
    if device == "cuda" and a.plugin:
        env["FRL_CUDA_PLUGIN"] = a.plugin
    return env


def parse_stdout(text):
    """{'sps': ..., 'return': ..., 'steps': ..., 'seconds': ...} from `fastrl train`."""
    r = {}
    for line in text.splitlines():
        f = line.split()
        if line.startswith("env_steps_per_second:"):
            r["sps"] = float(f[1])
        elif line.startswith("mean_return:") and len(f) >= 6:
            r["return"], r["steps"], r["seconds"] = float(f[1]), int(f[3]), float(f[5])
    return r


def parse_metrics(path):
    """The steady rate and mean stage times (s per update) after the first update."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if len(rows) < 2:
        return {}
    first, last, later = rows[0], rows[-1], rows[1:]
    dt = float(last["seconds"]) - float(first["seconds"])
    steps = int(last["env_steps"]) - int(first["env_steps"])

    def mean(*cols):
        return statistics.fmean(sum(float(r[c]) for c in cols) for r in later)
    return {"steady": steps / dt if dt > 0 else float("nan"),
            "t_env": mean("time_env"), "t_inf": mean("time_inference"),
            "t_learn": mean("time_backward", "time_optimizer"), "updates": len(rows)}


def first_error(text):
    lines = [ln for ln in text.splitlines() if ln.startswith("fastrl")]
    return lines[-1] if lines else (text.strip().splitlines() or ["(no output)"])[-1]


def train_once(a, device, steps, out):
    cmd = train_cmd(a, device, steps, out)
    r = subprocess.run(cmd, capture_output=True, text=True, env=run_env(a, device),
                       timeout=3600)
    if r.returncode != 0:
        err = first_error(r.stderr + r.stdout)
        if device == "cuda" and "runtime.device=cuda" in err:
            raise Skip(err)
        raise Failed(f"{device}: exit {r.returncode}: {err}\n  command: {' '.join(cmd)}")
    res = parse_stdout(r.stdout)
    if "sps" not in res:
        raise Failed(f"{device}: no env_steps_per_second in the output")
    res.update(parse_metrics(os.path.join(out, "metrics.csv")))
    return res


# ---------------------------------------------------------------- the runs


def device_line(a):
    """What runtime.device=auto finds (fastrl info), for the report."""
    env = run_env(a, "cuda")
    r = subprocess.run([a.fastrl, "info"], capture_output=True, text=True, env=env)
    for line in r.stdout.splitlines():
        if line.startswith("device (runtime.device=auto):"):
            return line.split(":", 1)[1].strip()
    return "?"


def run_all(a, work):
    """Warm-ups (the cuda one may Skip), then the alternating timed runs."""
    one_update = a.envs * a.rollout
    for dev in ("cuda", "cpu"):
        train_once(a, dev, one_update, os.path.join(work, f"warmup-{dev}"))
    res = {d: [] for d in DEVICES}
    for rep in range(a.reps):
        order = DEVICES if rep % 2 == 0 else DEVICES[::-1]
        for dev in order:
            res[dev].append(train_once(a, dev, a.steps, os.path.join(work, f"{dev}-{rep}")))
            print(f"rep {rep + 1}/{a.reps} {dev}: {res[dev][-1]['sps']:.0f} steps/s",
                  file=sys.stderr, flush=True)
    return res


def med(runs, key):
    vals = [r[key] for r in runs if key in r]
    return statistics.median(vals) if vals else float("nan")


def report(a, res, device):
    print(f"{a.env}: {a.envs} envs x {a.rollout} steps = {a.envs * a.rollout} rows an "
          f"update, {a.minibatches} minibatches of {a.envs * a.rollout // a.minibatches} "
          f"rows; ~{int(a.steps)} steps a run; threads {a.threads or 'all'}; seed {a.seed}; "
          f"tf32 {'on' if a.tf32 else 'off'}; extra settings: {' '.join(a.set) or 'none'}")
    print(f"GPU (runtime.device=auto finds): {device}")
    if "host stand-in" in device:
        print("WARNING: the cuda runs used the host test plugin (its ops on the CPU): the "
              "comparison means nothing")
    print(f"median of {a.reps} runs each, alternating:")
    print(f"{'device':>6} {'steps/s':>12} {'steady/s':>12} {'env s/upd':>10} "
          f"{'infer s/upd':>11} {'learn s/upd':>11} {'return':>8} {'updates':>7}")
    for d in DEVICES:
        r = res[d]
        print(f"{d:>6} {med(r, 'sps'):>12.0f} {med(r, 'steady'):>12.0f} "
              f"{med(r, 't_env'):>10.4f} {med(r, 't_inf'):>11.4f} {med(r, 't_learn'):>11.4f} "
              f"{med(r, 'return'):>8.1f} {med(r, 'updates'):>7.0f}")
    for key, what in (("sps", "steps/s"), ("steady", "steady steps/s")):
        ratio = med(res["cuda"], key) / med(res["cpu"], key)
        print(f"ratio cuda / cpu ({what}): {ratio:.2f}x")


def main(argv=None):
    a = parse_args(argv)
    if not os.access(a.fastrl, os.X_OK):
        print(f"ppo_cpu_vs_gpu: {a.fastrl} is missing: build it with `ninja -C build` "
              f"(or pass --fastrl)", file=sys.stderr)
        return 2
    work = a.keep or tempfile.mkdtemp(prefix="frl-ppo-gpu-")
    os.makedirs(work, exist_ok=True)
    try:
        res = run_all(a, work)
    except Skip as e:
        print(f"SKIP: the GPU path cannot run: {e}")
        return 0
    except Failed as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    report(a, res, device_line(a))
    return 0


if __name__ == "__main__":
    sys.exit(main())
