#!/usr/bin/env python3
"""Step the same vectorised-env workload through fastrl, envpool and gymnasium.

Workload (identical for every peer): ENV with --envs copies, next-step autoreset,
random actions written by the caller every step from 64 precomputed action arrays
(so producing actions costs one array copy per step), nothing else. Throughput is
env steps per second (num_envs per vector step; autoreset steps count as steps).

  fastrl           `fastrl bench env ENV --envs N --threads T --seconds S` run as a
                   subprocess; its `steps_per_second:` (median of its 5 runs). It also
                   keeps episode statistics and validates actions, the peers do not.
  envpool          envpool.make(ENV, env_type="gymnasium", num_envs=N, batch_size=N,
                   num_threads=T): sync mode, the env's own time limit (CartPole-v1: 500).
  gymnasium        gymnasium.make_vec(ENV, N, vectorization_mode="sync",
                   autoreset_mode=NEXT_STEP): a SyncVectorEnv, one Python env per copy,
                   single-threaded. At 4096 envs one vector step takes tens of ms, so it
                   is measured for a bounded time (--gym-seconds, at most --gym-steps).
  gymnasium-numpy  gymnasium's own numpy-vectorised env (vectorization_mode=
                   "vector_entry_point", e.g. CartPoleVectorEnv), where ENV has one;
                   reported for context only.

The peers are interleaved (fastrl, envpool, gymnasium, gymnasium-numpy; --reps times)
on the same cores: the process pins itself (and so the fastrl subprocess and
envpool's threads) to --threads CPUs with os.sched_setaffinity. Each peer's figure is
the median over the reps; the ratios are fastrl's median over the peer's median.
The last line is `ratio_vs_envpool: <x>` (nan when envpool could not run).

Setup (the peers are optional; a peer that cannot be imported is reported and skipped):
  meson setup build -Dtests=false && ninja -C build
  python3 -m venv /tmp/benchvenv
  /tmp/benchvenv/bin/pip install -r bench/requirements.txt
  /tmp/benchvenv/bin/python bench/compare_env.py [--env CartPole-v1] [--envs 4096] [--threads 2]

Exit status: 0 when fastrl ran (whatever the peers did), 1 when fastrl failed, 2 on
bad arguments.
"""

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import warnings

from machine_stats import busy_seconds, cpu_model, own_seconds

ACTION_SETS = 64
INSTALL_HINT = ("install the peers with: python3 -m venv /tmp/benchvenv && "
                "/tmp/benchvenv/bin/pip install -r bench/requirements.txt, then run "
                "/tmp/benchvenv/bin/python bench/compare_env.py")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fmt(x):
    return "n/a" if x is None else f"{x:,.0f}"


def ratio(a, b):
    return float("nan") if not a or not b else a / b


# ---------------------------------------------------------------- fastrl


class Fastrl:
    name = "fastrl"

    def __init__(self, path, env, envs, threads, seconds):
        self.path = path
        self.cmd = [path, "bench", "env", env, "--envs", str(envs), "--threads",
                    str(threads), "--seconds", str(seconds)]
        info = subprocess.run([path, "info"], capture_output=True, text=True, timeout=60)
        m = re.search(r"^version:\s*(\S+)", info.stdout, re.M)
        self.version = m.group(1) if m else "unknown"
        self.last_output = ""
        envs = subprocess.run([path, "envs"], capture_output=True, text=True, timeout=60)
        names = re.findall(r"^(\S+)\s*$", envs.stdout, re.M)
        if envs.returncode == 0 and names and env not in names:
            raise ValueError(f"fastrl has no environment {env!r} (built-ins: {', '.join(names)})")

    def measure(self):
        p = subprocess.run(self.cmd, capture_output=True, text=True, timeout=600)
        self.last_output = p.stdout
        m = re.search(r"^steps_per_second:\s*([0-9.eE+]+)\s*$", p.stdout, re.M)
        if p.returncode != 0 or not m:
            raise RuntimeError(f"`{' '.join(self.cmd)}` exited {p.returncode}: "
                               f"{(p.stderr or p.stdout).strip()[-500:]}")
        return float(m.group(1))

    def floor(self):
        m = re.search(r"^floor \(.*?\): ([0-9.eE+]+) steps/s", self.last_output, re.M)
        return float(m.group(1)) if m else None


# ---------------------------------------------------------------- python peers


def make_action_sets(space, n, np, dtype=None):
    """ACTION_SETS random batches of n actions drawn from the (single-env) space."""
    import gymnasium as gym
    rng = np.random.default_rng(12345)
    if isinstance(space, gym.spaces.Discrete):
        a = rng.integers(space.start, space.start + space.n, size=(ACTION_SETS, n))
        return [x.astype(dtype or np.int64) for x in a]
    if isinstance(space, gym.spaces.Box):
        lo, hi = space.low.astype(np.float64), space.high.astype(np.float64)
        a = rng.uniform(lo, hi, size=(ACTION_SETS, n) + space.shape)
        return [x.astype(dtype or space.dtype) for x in a]
    raise RuntimeError(f"unsupported action space {space}")


def timed_loop(step, actions, seconds, max_steps=None, min_steps=1):
    """Vector steps per second over a window of `seconds` (or max_steps vector steps)."""
    k = 0
    t0 = time.perf_counter()
    t = t0
    while (t - t0 < seconds or k < min_steps) and (max_steps is None or k < max_steps):
        step(actions[k % ACTION_SETS])
        k += 1
        t = time.perf_counter()
    return k, t - t0


class Envpool:
    name = "envpool"

    def __init__(self, env, envs, threads, seconds, runs):
        import numpy as np
        import envpool
        self.version = envpool.__version__
        self.envs, self.seconds, self.runs = envs, seconds, runs
        self.env = envpool.make(env, env_type="gymnasium", num_envs=envs,
                                batch_size=envs, num_threads=threads)
        space = self.env.action_space
        self.actions = make_action_sets(space, envs, np, dtype=space.dtype)
        self.env.reset()
        self.limit = getattr(self.env.spec.config, "max_episode_steps", None)
        timed_loop(self.env.step, self.actions, seconds / 4)  # warm-up

    def measure(self):
        rates = []
        for _ in range(self.runs):
            k, dt = timed_loop(self.env.step, self.actions, self.seconds)
            rates.append(k * self.envs / dt)
        return statistics.median(rates)


class GymSync:
    name = "gymnasium"

    def __init__(self, env, envs, gym_seconds, gym_steps):
        import numpy as np
        import gymnasium as gym
        self.version = gym.__version__
        try:
            from gymnasium.vector import AutoresetMode
            kwargs = {"autoreset_mode": AutoresetMode.NEXT_STEP}
        except ImportError:  # gymnasium 1.0: next-step is the only mode
            if not self.version.startswith("1."):
                raise ImportError(f"gymnasium {self.version} is too old: 1.x is needed "
                                  "(next-step autoreset, make_vec)")
            kwargs = {}
        self.envs, self.gym_seconds, self.gym_steps = envs, gym_seconds, gym_steps
        self.env = gym.make_vec(env, num_envs=envs, vectorization_mode="sync",
                                vector_kwargs=kwargs)
        self.kind = type(self.env).__name__
        self.actions = make_action_sets(self.env.single_action_space, envs, np)
        self.env.reset(seed=0)
        self.env.step(self.actions[0])  # warm-up
        self.last_steps = 0

    def measure(self):
        k, dt = timed_loop(self.env.step, self.actions, self.gym_seconds,
                           max_steps=self.gym_steps, min_steps=3)
        self.last_steps = k
        return k * self.envs / dt


class GymNumpy:
    name = "gymnasium-numpy"

    def __init__(self, env, envs, seconds, runs):
        import numpy as np
        import gymnasium as gym
        self.version = gym.__version__
        self.envs, self.seconds, self.runs = envs, seconds, runs
        self.env = gym.make_vec(env, num_envs=envs, vectorization_mode="vector_entry_point")
        self.kind = type(self.env.unwrapped).__name__
        mode = str(self.env.metadata.get("autoreset_mode", "next-step (gymnasium 1.0)"))
        if "NEXT_STEP" not in mode and "next-step" not in mode:
            raise RuntimeError(f"{self.kind} autoresets in mode {mode}, not next-step")
        self.actions = make_action_sets(self.env.single_action_space, envs, np)
        self.env.reset(seed=0)
        timed_loop(self.env.step, self.actions, seconds / 4)

    def measure(self):
        rates = []
        for _ in range(self.runs):
            k, dt = timed_loop(self.env.step, self.actions, self.seconds)
            rates.append(k * self.envs / dt)
        return statistics.median(rates)


# ---------------------------------------------------------------- main


def resolve_fastrl(path):
    if os.path.isfile(path) or os.path.isabs(path):
        return path
    alt = os.path.join(REPO, path)
    return alt if os.path.isfile(alt) else path


def pin(threads, cpus_arg):
    if cpus_arg == "none" or not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if cpus_arg:
        cpus = [int(c) for c in cpus_arg.split(",")]
    else:
        cpus = allowed[:max(1, threads)]
    if len(cpus) < threads:
        print(f"note: {threads} threads but only {len(cpus)} CPUs to pin to "
              f"({cpus}); the peers will oversubscribe them")
    try:
        os.sched_setaffinity(0, cpus)
    except (OSError, ValueError) as e:
        print(f"note: could not pin to CPUs {cpus} ({e}); running unpinned")
        return None
    return cpus


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=INSTALL_HINT)
    ap.add_argument("--env", default="CartPole-v1")
    ap.add_argument("--envs", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=0.5,
                    help="length of one timed window (fastrl's --seconds; envpool and "
                         "gymnasium-numpy take the median of 5 such windows, like the CLI)")
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions")
    ap.add_argument("--gym-seconds", type=float, default=5.0,
                    help="time bound of one gymnasium SyncVectorEnv window")
    ap.add_argument("--gym-steps", type=int, default=300,
                    help="vector-step bound of one gymnasium SyncVectorEnv window")
    ap.add_argument("--fastrl", default="build/tools/fastrl",
                    help="path to the fastrl CLI (relative paths also tried from the repo root)")
    ap.add_argument("--cpus", default="",
                    help="comma-separated CPUs to pin to (default: the first --threads "
                         "allowed CPUs; 'none' = do not pin)")
    ap.add_argument("--skip", default="",
                    help="comma-separated peers to skip: envpool,gymnasium,gymnasium-numpy")
    a = ap.parse_args()
    if a.envs <= 0 or a.threads <= 0 or a.seconds <= 0 or a.reps <= 0:
        ap.error("--envs, --threads, --seconds and --reps must be positive")
    skip = {s.strip() for s in a.skip.split(",") if s.strip()}
    known = {"gymnasium", "gymnasium-numpy", "envpool"}
    if skip - known:  # a misspelt peer ran unsaid
        ap.error(f"--skip: unknown {', '.join(sorted(skip - known))}")
    # envpool's spaces are float64-bounded Box spaces; gymnasium warns on each cast.
    warnings.filterwarnings("ignore", message=".*precision lowered by casting.*")

    cpus = pin(a.threads, a.cpus)
    print(f"compare_env: {a.env}, {a.envs} envs, {a.threads} threads, next-step autoreset, "
          f"caller-written random actions, {a.reps} interleaved reps")
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs, "
          f"pinned to {cpus if cpus is not None else 'nothing (not pinned)'}")
    print(f"python {platform.python_version()} ({sys.executable})")

    fastrl_path = resolve_fastrl(a.fastrl)
    try:
        fr = Fastrl(fastrl_path, a.env, a.envs, a.threads, a.seconds)
    except ValueError as e:
        print(f"fastrl: {e}", file=sys.stderr)
        return 1
    except (OSError, subprocess.SubprocessError) as e:
        print(f"fastrl: cannot run {fastrl_path}: {e}\n"
              "build it first: meson setup build -Dtests=false && ninja -C build "
              "(or pass --fastrl PATH)", file=sys.stderr)
        return 1
    print(f"fastrl {fr.version}: {' '.join(fr.cmd)}")

    peers = [fr]
    runs = 5

    def add(name, ctor):
        if name in skip:
            print(f"{name}: skipped (--skip)")
            return None
        try:
            p = ctor()
        except ImportError as e:
            print(f"{name}: skipped, cannot import: {e}. {INSTALL_HINT}")
            return None
        except Exception as e:  # a peer without this env, a broken install, ...
            print(f"{name}: skipped, {type(e).__name__}: {e}")
            return None
        peers.append(p)
        return p

    ep = add("envpool", lambda: Envpool(a.env, a.envs, a.threads, a.seconds, runs))
    if ep:
        print(f"envpool {ep.version}: envpool.make({a.env!r}, env_type='gymnasium', "
              f"num_envs={a.envs}, batch_size={a.envs}, num_threads={a.threads}), "
              f"max_episode_steps={ep.limit}, median of {runs} x {a.seconds} s")
    gs = add("gymnasium", lambda: GymSync(a.env, a.envs, a.gym_seconds, a.gym_steps))
    if gs:
        print(f"gymnasium {gs.version}: make_vec({a.env!r}, {a.envs}, "
              f"vectorization_mode='sync', autoreset_mode=NEXT_STEP) -> {gs.kind}, "
              f"1 thread, one window of <= {a.gym_seconds} s or <= {a.gym_steps} vector steps")
    gn = add("gymnasium-numpy", lambda: GymNumpy(a.env, a.envs, a.seconds, runs))
    if gn:
        print(f"gymnasium-numpy {gn.version}: make_vec({a.env!r}, {a.envs}, "
              f"vectorization_mode='vector_entry_point') -> {gn.kind}, 1 thread, "
              f"median of {runs} x {a.seconds} s (context only)")
    try:
        import numpy
        print(f"numpy {numpy.__version__}")
    except ImportError:
        pass

    results = {p.name: [] for p in peers}
    floors = []
    busy0, own0, wall0 = busy_seconds(), own_seconds(), time.perf_counter()
    for r in range(a.reps):
        line = []
        for p in list(peers):
            try:
                v = p.measure()
            except Exception as e:
                if p is fr:
                    print(f"fastrl failed: {e}", file=sys.stderr)
                    return 1
                print(f"{p.name}: failed during rep {r + 1}, dropped: {type(e).__name__}: {e}")
                peers.remove(p)
                results.pop(p.name, None)
                continue
            results[p.name].append(v)
            extra = f" ({p.last_steps} vector steps)" if p is gs else ""
            line.append(f"{p.name} {fmt(v)}{extra}")
            if p is fr:
                floors.append(fr.floor())
        print(f"rep {r + 1}: " + ", ".join(line))

    busy1, own1, wall = busy_seconds(), own_seconds(), time.perf_counter() - wall0
    if busy0 is not None and busy1 is not None:
        other = max(0.0, (busy1 - busy0) - (own1 - own0))
        note = ("" if other < 0.05 * wall else
                "  WARNING: other processes competed for the CPUs; the figures are unreliable")
        print(f"other processes used {other:.1f} CPU-s during the {wall:.0f} s of measuring{note}")

    med = {k: statistics.median(v) for k, v in results.items() if v}
    f = med["fastrl"]
    print()
    print(f"{'peer':<18}{'steps/s (median)':>20}{'fastrl / peer':>16}   per-rep ratios")
    for name, v in med.items():
        if name == "fastrl":
            print(f"{name:<18}{fmt(v):>20}{'1.00x':>16}")
            continue
        per = [x / y for x, y in zip(results["fastrl"], results[name])]
        print(f"{name:<18}{fmt(v):>20}{ratio(f, v):>15.2f}x   "
              + " ".join(f"{x:.2f}" for x in per))
    good_floors = [x for x in floors if x]
    if good_floors:
        fl = statistics.median(good_floors)
        print(f"fastrl same-run floor (bare loop, 1 core): {fmt(fl)} steps/s; "
              f"fastrl / ({a.threads} x floor) = {100 * f / (a.threads * fl):.1f}%")
    if "gymnasium" in med:
        print(f"ratio_vs_gymnasium: {ratio(f, med['gymnasium']):.2f}")
    if "gymnasium-numpy" in med:
        print(f"ratio_vs_gymnasium_numpy: {ratio(f, med['gymnasium-numpy']):.2f}")
    print(f"ratio_vs_envpool: {ratio(f, med.get('envpool')):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
