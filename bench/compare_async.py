#!/usr/bin/env python3
"""Throughput of fastrl's asynchronous trainer next to Sample Factory's APPO, CartPole-v1.

Per rep (--reps, default 3), interleaved (fastrl, sf, fastrl, sf, ...) so that a noisy
patch of a shared machine hits both, each as a child process pinned to the same CPUs
(--cpus, default: every CPU this script may use; set with os.sched_setaffinity, which
the children inherit):

  fastrl  build/tools/fastrl train CartPole-v1 --steps FASTRL_STEPS --seed S
              --set runtime.threads=NCPUS --set sampler.mode=async
              [--set KEY=VALUE for each --fastrl-set]
  sf      PYTHON -m sf_examples.train_gym_env --algo=APPO --env=CartPole-v1
              --experiment=sf_repR --train_dir=TMPDIR --seed=S --device=cpu
              --num_workers=2 --num_envs_per_worker=20 --policy_workers_per_policy=2
              --use_rnn=False --recurrence=1 --with_vtrace=False --batch_size=512
              --reward_scale=0.1 --save_every_sec=10 --experiment_summaries_interval=10
              --with_wandb=False --train_for_env_steps=STEPS  [--sf-arg ARG ...]

The Sample Factory settings are the CartPole-v1 command line in the docstring of
sf_examples/train_gym_env.py (SF 2.1.1: 20 envs per worker, 2 policy workers, batch 512,
rollout 32, no RNN, no V-trace) with --num_workers=2 and --device=cpu (SF's own default is
2 envs per worker, about 1K env steps/s here). --sf-arg appends to it (SF's argparse keeps
the last value, so `--sf-arg=--num_envs_per_worker=2` overrides). SF pins each rollout
worker to one of the CPUs it is allowed (set_workers_cpu_affinity), so the pin holds.

What is reported, per rep and as the median over reps:
- fastrl: env steps/s = its own `env_steps_per_second:` line (env steps over its
  training time).
- Sample Factory: env steps/s = env frames (`Collected {0: N}`) / seconds of the
  training phase, from the log timestamp of "Signal rollout workers to start!" (all
  processes up, models built) to the first "Stopping <component>" line (the learner
  reached --train_for_env_steps). Process start, imports (~3 s) and the spawn of its
  5 worker processes (~10-20 s on 2 CPUs) are excluded, as they are for fastrl. SF's own
  figures are printed too: `Collected ..., FPS: X` (frames / its main loop, which includes
  spawning the workers, so lower) and the 60-second average of its last `Fps is` line.
- wall time of each child, from fork to exit.
- peak RSS: the largest single process (wait4's ru_maxrss) and, for a multi-process
  trainer such as SF, the peak of the PSS summed over its process tree (/proc, sampled
  once a second; PSS shares a library's pages among the processes that map it).
- the ratio fastrl / SF of the medians, next to the project's target (50x).
- CPU-seconds other processes used while the runs ran (from /proc/stat): check it
  before trusting a figure on a shared machine.

Setup (SF 2.1.1 needs numpy < 2.4, see bench/requirements-async.txt), then from the
repository root:
  /tmp/asyncvenv/bin/python bench/compare_async.py [--reps 3] [--steps 500000]

The SF child runs with --python (default: this script's interpreter); the script itself
needs only the standard library. When fastrl rejects a setting (e.g. `sampler.mode`
before the async trainer exists) that is said and the SF runs still go on.
Exit status: 0 when every run produced a result; 1 when a run failed (crash, timeout,
no result lines, fastrl rejecting a setting, SF not importable); 2 on bad arguments.
"""

import argparse
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime

from machine_stats import busy_seconds, cpu_model, own_seconds

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
ENV = "CartPole-v1"
TARGET_RATIO = 50.0

SF_EXAMPLE_ARGS = [  # sf_examples/train_gym_env.py's CartPole-v1 command line
    "--algo=APPO", "--use_rnn=False", "--num_envs_per_worker=20",
    "--policy_workers_per_policy=2", "--recurrence=1", "--with_vtrace=False",
    "--batch_size=512", "--reward_scale=0.1", "--save_every_sec=10",
    "--experiment_summaries_interval=10",
]
INSTALL_HINT = """Sample Factory setup (see bench/requirements-async.txt):
  python3 -m venv /tmp/asyncvenv
  echo /tmp/trainvenv/lib/python3.11/site-packages \\
      > /tmp/asyncvenv/lib/python3.11/site-packages/zz_trainvenv.pth
  /tmp/asyncvenv/bin/pip install --no-deps -r bench/requirements-async.txt
  /tmp/asyncvenv/bin/python bench/compare_async.py"""

_NUM = r"([-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|nan|inf))"
SPS_RE = re.compile(r"^env_steps_per_second:\s*" + _NUM + r"\s*$", re.M | re.I)
RESULT_RE = re.compile(r"^mean_return:\s*" + _NUM + r"\s+steps:\s*([0-9]+)\s+seconds:\s*"
                       + _NUM + r"\s*$", re.M | re.I)
UNKNOWN_KEY_RE = re.compile(r"unknown config key '([^']+)'|config key '([^']+)': '([^']*)' "
                            r"is not one of|FRL_ERR_UNKNOWN_NAME[^\n]*")
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
SF_TS = r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\]\[\s*\d+\]\s*"
SF_START_RE = re.compile(SF_TS + r"All inference workers are ready! Signal rollout", re.M)
SF_STOP_RE = re.compile(SF_TS + r"Stopping \S+\.\.\.", re.M)
SF_COLLECTED_RE = re.compile(r"Collected \{0: (\d+)\}, FPS: " + _NUM)
SF_FPS_RE = re.compile(r"Fps is \(10 sec: " + _NUM + r", 60 sec: " + _NUM + r", 300 sec: "
                       + _NUM + r"\)\. Total num frames: (\d+)")


# ---------------------------------------------------------------- machine


def parse_cpus(text):
    """'0,2-3' -> [0, 2, 3]; raises ValueError."""
    cpus = set()
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.update(range(int(lo), int(hi) + 1))
        elif part:
            cpus.add(int(part))
    if not cpus:
        raise ValueError("no CPUs")
    return sorted(cpus)


def tree_memory_kb(root):
    """Sum of PSS (RSS where PSS is unreadable) over root and its descendants, in kB."""
    children = {}
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, ()))
        total += _pss_kb(pid)
    return total


def _pss_kb(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except (OSError, ValueError, IndexError):
        return 0


# ---------------------------------------------------------------- running a child


class Run:
    """One finished child: exit status, output, wall time, memory, CPU time."""

    def __init__(self, cmd, rc, out, wall, maxrss_kb, tree_kb, cpu_s, timed_out, t_launch):
        self.cmd, self.rc, self.out, self.wall = cmd, rc, out, wall
        self.maxrss_mb = maxrss_kb / 1024.0
        self.tree_mb = tree_kb / 1024.0 if tree_kb else None
        self.cpu_s, self.timed_out, self.t_launch = cpu_s, timed_out, t_launch
        self.sps = None      # the figure that enters the table
        self.note = ""       # per-run detail printed under the table
        self.error = None


def run_child(cmd, timeout, log_path, sample_every=1.0):
    """Run cmd in its own process group (so that on a timeout or Ctrl-C the whole tree it
    spawned is ended, and nothing else), stdout+stderr to log_path; wait4 gives its
    rusage (ru_maxrss: the largest process of its tree; CPU: the tree it reaped)."""
    with open(log_path, "w+") as log:
        t_launch = time.time()
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                             start_new_session=True)
        peak_tree, timed_out, next_sample, killed_at = 0, False, 0.0, None
        try:
            while True:
                pid, status, usage = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    break
                now = time.perf_counter()
                if now >= next_sample:
                    peak_tree = max(peak_tree, tree_memory_kb(p.pid) or 0)
                    next_sample = now + sample_every
                if not timed_out and now - t0 > timeout:
                    timed_out, killed_at = True, now
                    _signal_group(p.pid, signal.SIGTERM)
                elif timed_out and now - killed_at > 10:
                    _signal_group(p.pid, signal.SIGKILL)
                time.sleep(0.05)
        except BaseException:  # Ctrl-C or the like: leave nothing of ours running
            _signal_group(p.pid, signal.SIGKILL)
            p.wait()
            raise
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        _signal_group(p.pid, signal.SIGKILL)  # stragglers of its group (none normally)
        log.seek(0)
        out = ANSI_RE.sub("", log.read())
    return Run(cmd, p.returncode, out, wall, usage.ru_maxrss, peak_tree,
               usage.ru_utime + usage.ru_stime, timed_out, t_launch)


def _signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def tail(text, n=15):
    return "\n".join("    " + line for line in text.strip().splitlines()[-n:])


# ---------------------------------------------------------------- fastrl


def fastrl_cmd(a, seed):
    cmd = [a.fastrl, "train", ENV, "--steps", str(a.fastrl_steps), "--seed", str(seed),
           "--set", f"runtime.threads={a.threads}"]
    if not a.no_async:
        cmd += ["--set", "sampler.mode=async"]
    for kv in a.fastrl_set:
        cmd += ["--set", kv]
    return cmd


def fastrl_version(path):
    try:
        p = subprocess.run([path, "info"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"^version:\s*(\S+)", p.stdout, re.M)
    return m.group(1) if m else "unknown"


def finish_fastrl(r):
    """Fill r.sps / r.error; returns the rejected setting when fastrl refused one."""
    if r.timed_out:
        r.error = f"timed out after {r.wall:.0f} s"
        return None
    if r.rc != 0:
        m = UNKNOWN_KEY_RE.search(r.out)
        r.error = f"exited with status {r.rc}:\n{tail(r.out, 8)}"
        if m:
            return m.group(0)
        return None
    rates, results = SPS_RE.findall(r.out), RESULT_RE.findall(r.out)
    if not rates:
        r.error = f"no `env_steps_per_second:` line in its output:\n{tail(r.out, 8)}"
        return None
    r.sps = float(rates[-1])
    if results:
        ret, steps, secs = results[-1]
        r.note = (f"mean_return {float(ret):.1f}, {int(steps):,} env steps in "
                  f"{float(secs):.2f} s")
    return None


# ---------------------------------------------------------------- Sample Factory


def sf_cmd(a, seed, train_dir, experiment):
    return ([a.python, "-m", "sf_examples.train_gym_env", f"--env={ENV}",
             f"--experiment={experiment}", f"--train_dir={train_dir}", f"--seed={seed}",
             "--device=cpu", f"--num_workers={a.sf_workers}"]
            + SF_EXAMPLE_ARGS
            + ["--with_wandb=False", f"--train_for_env_steps={a.steps}"]
            + a.sf_arg)


SF_CHECK = ("import importlib.metadata as m, sample_factory, sf_examples.train_gym_env, "
            "torch, gymnasium, numpy\n"
            "print(m.version('sample-factory'), torch.__version__, gymnasium.__version__, "
            "numpy.__version__)")


def sf_versions(python, code=SF_CHECK):
    """(dict of versions, None) or (None, error text). code: a program that imports what
    the caller needs and prints the four versions (compare_sf.py imports more)."""
    try:
        p = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as e:
        return None, str(e)
    if p.returncode != 0:
        return None, p.stderr.strip()[-800:]
    v = p.stdout.split()
    return dict(zip(("sample-factory", "torch", "gymnasium", "numpy"), v)), None


def numpy_too_new(version):
    m = re.match(r"(\d+)\.(\d+)", version or "")
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= (2, 4)


def _ts(match):
    return datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S").timestamp() + \
        int(match.group(2)) / 1000.0


def finish_sf(r):
    if r.timed_out:
        r.error = f"timed out after {r.wall:.0f} s"
        return
    start = SF_START_RE.search(r.out)
    stop = SF_STOP_RE.search(r.out, start.end()) if start else None
    collected = SF_COLLECTED_RE.findall(r.out)
    if r.rc != 0 or not (start and stop and collected):
        what = "exited with status %d" % r.rc if r.rc else "no training phase or result"
        errs = [ln for ln in r.out.splitlines()
                if re.search(r"Error|Traceback|exception", ln)]
        r.error = f"{what}:\n{tail(r.out, 10)}" + (
            "\n  first error line: " + errs[0].strip() if errs else "")
        return
    t_start, t_stop = _ts(start), _ts(stop)
    frames, sf_fps = int(collected[-1][0]), float(collected[-1][1])
    train_s = t_stop - t_start
    r.sps = frames / train_s if train_s > 0 else None
    fps = SF_FPS_RE.findall(r.out)
    last60 = float(fps[-1][1]) if fps else float("nan")
    r.sf_own = sf_fps
    rewards = re.findall(r"Avg episode reward: \[\(0, '([-0-9.na]+)'\)\]", r.out)
    r.note = (f"{frames:,} frames in {train_s:.1f} s of training after "
              f"{t_start - r.t_launch:.1f} s of start-up; SF's own figures: "
              f"`Collected` FPS {sf_fps:,.0f}, last `Fps is` 60 sec {last60:,.0f}; "
              f"CPU {r.cpu_s:.0f} s; last avg episode reward "
              f"{rewards[-1] if rewards else 'n/a'}; " + sf_profile(r.out))
    warns = sorted(set(re.findall(r"(\w+Warning): ([^\n]{0,90})", r.out)))
    if warns:
        r.note += "; warnings: " + "; ".join(f"{k}: {v}" for k, v in warns)


def sf_profile(out):
    """Seconds in SF's own profile (printed at exit): learner training, inference and
    env stepping, summed over processes of each kind."""
    def total(pattern):
        return sum(float(x) for x in re.findall(pattern, out, re.M))
    return ("profile: learner train %.1f s, inference handle_policy_step %.1f s, "
            "rollout env_step %.1f s, rollout enqueue_policy_requests %.1f s" % (
                total(r"^train: ([0-9.]+)"), total(r"handle_policy_step: ([0-9.]+)"),
                total(r"env_step: ([0-9.]+)"), total(r"enqueue_policy_requests: ([0-9.]+)")))


# ---------------------------------------------------------------- report


def fmt(x, digits=0):
    return "n/a" if x is None else f"{x:,.{digits}f}"


def mb(x):
    return "n/a" if x is None else f"{x:,.0f} MB"


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def report(a, runs, order):
    print("\n## Results\n")
    if not order:
        print("(nothing ran)")
        return
    head = ["trainer"] + [f"rep {i + 1}" for i in range(a.reps)] + [
        "env steps/s, median", "wall per rep, median", "peak RSS (largest process)",
        "peak PSS (process tree)"]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    meds = {}
    for name in order:
        rs = runs[name]
        if not rs:
            continue
        cells = [r.error and "failed" or fmt(r.sps) for r in rs]
        cells += ["-"] * (a.reps - len(rs))
        meds[name] = median([r.sps for r in rs if not r.error])
        ok = [r for r in rs if not r.error]
        cells += [fmt(meds[name]),
                  f"{median([r.wall for r in rs]):.1f} s",
                  mb(max((r.maxrss_mb for r in ok), default=None)),
                  mb(max((r.tree_mb or 0 for r in ok), default=None))]
        print(f"| {name} | " + " | ".join(cells) + " |")
    f, s = meds.get("fastrl"), meds.get("sf")
    print()
    if f and s:
        ratio = f / s
        print(f"fastrl / Sample Factory: {ratio:.1f}x (target {TARGET_RATIO:g}x: "
              f"{'met' if ratio >= TARGET_RATIO else 'NOT met'})")
    else:
        print("fastrl / Sample Factory: n/a (a side has no result)")
    for name in order:
        for i, r in enumerate(runs[name]):
            if r.note:
                print(f"- {name} rep {i + 1}: {r.note}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=INSTALL_HINT)
    ap.add_argument("--reps", type=int, default=3, help="runs of each, interleaved")
    ap.add_argument("--steps", type=int, default=500000,
                    help="Sample Factory --train_for_env_steps (default 500000: ~75 s of "
                         "training plus ~15 s of start-up at ~7K env steps/s)")
    ap.add_argument("--fastrl-steps", type=int, default=5000000,
                    help="fastrl train --steps (default 5000000, so that fastrl runs for "
                         "seconds, not milliseconds)")
    ap.add_argument("--first-seed", type=int, default=1, help="rep i uses seed first+i")
    ap.add_argument("--cpus", default="",
                    help="CPUs to pin to, e.g. 0,1 or 0-1 (default: all this process may "
                         "use); fastrl gets runtime.threads=<count>")
    ap.add_argument("--sf-workers", type=int, default=2, help="SF --num_workers")
    ap.add_argument("--sf-arg", action="append", default=[], metavar="ARG",
                    help="extra SF argument, e.g. --sf-arg=--num_envs_per_worker=8 "
                         "(repeatable; appended last, so it overrides)")
    ap.add_argument("--fastrl", default="build/tools/fastrl")
    ap.add_argument("--fastrl-set", action="append", default=[], metavar="KEY=VALUE",
                    help="extra fastrl --set (repeatable)")
    ap.add_argument("--no-async", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter for Sample Factory (default: this one)")
    ap.add_argument("--skip", choices=("fastrl", "sf"), action="append", default=[])
    ap.add_argument("--timeout", type=float, default=1200, help="seconds per run")
    ap.add_argument("--keep-logs", action="store_true",
                    help="keep the temporary directory (SF experiment dirs, child logs)")
    a = ap.parse_args()

    if a.reps < 1 or a.steps < 1 or a.fastrl_steps < 1 or a.sf_workers < 1 or a.timeout <= 0:
        ap.error("--reps, --steps, --fastrl-steps, --sf-workers and --timeout must be > 0")
    for kv in a.fastrl_set:
        if "=" not in kv:
            ap.error(f"--fastrl-set {kv!r}: expected KEY=VALUE")
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    try:
        cpus = parse_cpus(a.cpus) if a.cpus else allowed
    except ValueError:
        ap.error(f"--cpus {a.cpus!r}: expected a list such as 0,1 or 0-1")
    if cpus is None:
        ap.error("this system cannot pin CPUs (no os.sched_setaffinity)")
    try:
        os.sched_setaffinity(0, cpus)
    except (OSError, ValueError) as e:
        ap.error(f"--cpus {a.cpus!r}: cannot pin to {cpus}: {e}")
    a.threads = len(cpus)
    if not os.path.isabs(a.fastrl) and not os.path.exists(a.fastrl):
        a.fastrl = os.path.join(REPO, a.fastrl)

    failed = False
    order = [n for n in ("fastrl", "sf") if n not in a.skip]
    print("# fastrl async vs Sample Factory APPO, CartPole-v1\n")
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs; pinned to CPUs "
          f"{','.join(map(str, cpus))} ({a.threads})")
    print(f"python (SF): {a.python}")
    if "fastrl" in order:
        v = fastrl_version(a.fastrl)
        if v is None:
            print(f"fastrl: {a.fastrl} cannot be run: build it (ninja -C build); "
                  "the fastrl runs are skipped")
            order.remove("fastrl")
            failed = True
        else:
            print(f"fastrl: {a.fastrl}, version {v}")
    if "sf" in order:
        vers, err = sf_versions(a.python)
        if vers is None:
            print(f"Sample Factory: cannot import it with {a.python}:\n{tail(err, 6)}\n"
                  f"{INSTALL_HINT}\nthe SF runs are skipped")
            order.remove("sf")
            failed = True
        else:
            print("Sample Factory: " + ", ".join(f"{k} {v}" for k, v in vers.items()))
            if numpy_too_new(vers.get("numpy", "")):
                print(f"Sample Factory 2.1.1 does not run with numpy {vers['numpy']} (its "
                      "rollout workers die on numpy >= 2.4 and the run hangs at 0 frames): "
                      f"use numpy 2.3.5.\n{INSTALL_HINT}\nthe SF runs are skipped")
                order.remove("sf")
                failed = True

    tmp = tempfile.mkdtemp(prefix="compare_async_")
    runs = {n: [] for n in ("fastrl", "sf")}
    print("\ncommands (rep i uses seed %d+i; SF's experiment is sf_rep<i>):" % a.first_seed)
    for name in order:
        cmd = fastrl_cmd(a, a.first_seed) if name == "fastrl" else \
            sf_cmd(a, a.first_seed, tmp, "sf_rep1")
        print(f"  {name}: {shlex.join(cmd)}")
    print()

    busy0, own0, t0 = busy_seconds(), own_seconds(), time.perf_counter()
    try:
        for rep in range(a.reps):
            seed = a.first_seed + rep
            for name in list(order):
                log = os.path.join(tmp, f"{name}_rep{rep + 1}.log")
                if name == "fastrl":
                    r = run_child(fastrl_cmd(a, seed), a.timeout, log)
                    rejected = finish_fastrl(r)
                else:
                    r = run_child(sf_cmd(a, seed, tmp, f"sf_rep{rep + 1}"), a.timeout, log)
                    finish_sf(r)
                    rejected = None
                runs[name].append(r)
                if r.error:
                    failed = True
                    print(f"rep {rep + 1} {name}: FAILED after {r.wall:.1f} s: {r.error}")
                else:
                    print(f"rep {rep + 1} {name}: {r.sps:,.0f} env steps/s, wall "
                          f"{r.wall:.1f} s, peak RSS {r.maxrss_mb:,.0f} MB (tree PSS "
                          f"{fmt(r.tree_mb)} MB)", flush=True)
                if rejected:
                    why = ("`sampler.mode=async` comes with fastrl's asynchronous trainer: "
                           "this build does not have it yet; "
                           if "key 'sampler.mode'" in rejected and "not one of" not in
                           rejected else "")
                    print(f"fastrl rejected a setting ({rejected}); {why}the remaining "
                          "fastrl runs are skipped, Sample Factory still runs (exit "
                          "status 1)")
                    order.remove("fastrl")
                sys.stdout.flush()
    except KeyboardInterrupt:
        print("\ninterrupted")
        failed = True
    wall = time.perf_counter() - t0
    busy1, own1 = busy_seconds(), own_seconds()

    report(a, runs, [n for n in ("fastrl", "sf") if runs[n]])
    if busy0 is not None and busy1 is not None:
        other = max(0.0, (busy1 - busy0) - (own1 - own0))
        print(f"\nother processes used {other:.1f} CPU-s during the {wall:.0f} s of runs")
        if other > max(1.0, 0.05 * wall):
            print("WARNING: other work ran on this machine during the runs; the figures "
                  "may be low (the SF processes and fastrl's threads share the CPUs)")
    if a.keep_logs:
        print(f"logs and SF experiment dirs kept in {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
