#!/usr/bin/env python3
"""Step CartPole-v1 (or ENV) with 4096 envs from Python: fastrl's binding, fastrl's C
path, envpool and gymnasium's SyncVectorEnv, interleaved in one run on the same cores.

The workload is the same for every peer: ENV with --envs copies, next-step autoreset,
random actions written by the caller every step from 64 precomputed action arrays,
nothing else. Throughput is env steps per second (num_envs per vector step; autoreset
steps count). Peers:

  fastrl-python   fastrl.make_vec(ENV, num_envs=N, threads=T).step(actions): the
                  binding's gymnasium vector API, results as numpy views (the figure
                  the issue asks for; actions are int32, the action space's dtype)
  fastrl-C        `fastrl bench env ENV --envs N --threads T --seconds S` (a C program:
                  the library's own path, no Python), its steps_per_second
  fastrl-ctypes   for context: the same library call from Python with nothing else per
                  step (copy the actions into the library's array, call
                  frl_vec_env_step through ctypes)
  fastrl-copy     for context: fastrl-python with copy=True (fresh result arrays)
  envpool         envpool.make(ENV, env_type="gymnasium", num_envs=N, batch_size=N,
                  num_threads=T), sync mode
  gymnasium       gymnasium.make_vec(ENV, N, vectorization_mode="sync", next-step
                  autoreset): one Python env per copy; a bounded window (--gym-seconds)

Each rep runs every peer once, in the order above; a Python peer's figure in a rep is
the median of 5 windows of --seconds (fastrl-C: the median of its own 5 runs), and the
reported figure is the median over --reps. The process pins itself to --threads CPUs
(so do its children and envpool's threads). The last lines are
`ratio_vs_envpool: X` (fastrl-python / envpool; the issue asks >= 10) and
`ratio_vs_c: Y` (fastrl-python / fastrl-C; >= 0.9).

Setup: the library and CLI (meson setup build && ninja -C build), and the peers:
  python3 -m venv /tmp/benchvenv && /tmp/benchvenv/bin/pip install -r bench/requirements.txt
  /tmp/benchvenv/bin/python bench/compare_python.py [--envs 4096] [--threads 2]
The binding is imported from bindings/python with FASTRL_LIBRARY defaulting to
build/lib/libfastrl.so.0 (or pip install a wheel from bindings/python/build_wheel.sh).
Exit status: 0 when both fastrl paths ran, 1 otherwise, 2 on bad arguments.
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

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))
from compare_env import busy_seconds, cpu_model, own_seconds  # noqa: E402
SETS = 64
WINDOWS = 5


def rate_loop(step, actions, n, seconds, max_steps=None):
    """Vector steps of `step` over a window; env steps per second."""
    k = 0
    t0 = t = time.perf_counter()
    while t - t0 < seconds or k < 2:
        step(actions[k % SETS])
        k += 1
        t = time.perf_counter()
        if max_steps is not None and k >= max_steps:
            break
    return k * n / (t - t0)


def median_rate(step, actions, n, seconds):
    return statistics.median(rate_loop(step, actions, n, seconds) for _ in range(WINDOWS))


def action_sets(space, n, np):
    rng = np.random.default_rng(12345)
    if hasattr(space, "n"):
        dt = getattr(space, "dtype", np.int64)
        return [rng.integers(0, int(space.n), n).astype(dt) for _ in range(SETS)]
    return [rng.uniform(space.low, space.high, (n,) + space.shape).astype(space.dtype)
            for _ in range(SETS)]


class FastrlPython:
    name = "fastrl-python"

    def __init__(self, env, n, threads, seconds, copy=False):
        import numpy as np
        import fastrl
        self.name = "fastrl-copy" if copy else "fastrl-python"
        self.n, self.seconds = n, seconds
        self.venv = fastrl.make_vec(env, num_envs=n, threads=threads, copy=copy)
        self.actions = action_sets(self.venv.single_action_space, n, np)
        self.venv.reset(seed=1)
        rate_loop(self.venv.step, self.actions, n, seconds / 4)  # warm-up

    def measure(self):
        return median_rate(self.venv.step, self.actions, self.n, self.seconds)


class FastrlCtypes:
    name = "fastrl-ctypes"

    def __init__(self, env, n, threads, seconds):
        import numpy as np
        import fastrl
        from fastrl._lib import lib
        self.n, self.seconds = n, seconds
        self.venv = fastrl.make_vec(env, num_envs=n, threads=threads)
        self.actions = action_sets(self.venv.single_action_space, n, np)
        self.venv.reset(seed=1)
        dst, c_step, ptr = self.venv.actions, lib().vec_env_step, self.venv._ptr
        copyto = np.copyto

        def step(a):
            copyto(dst, a)
            c_step(ptr)
        self.step = step
        rate_loop(step, self.actions, n, seconds / 4)

    def measure(self):
        return median_rate(self.step, self.actions, self.n, self.seconds)


class FastrlC:
    name = "fastrl-C"

    def __init__(self, path, env, n, threads, seconds):
        self.cmd = [path, "bench", "env", env, "--envs", str(n), "--threads", str(threads),
                    "--seconds", str(seconds)]

    def measure(self):
        p = subprocess.run(self.cmd, capture_output=True, text=True, timeout=600)
        m = re.search(r"^steps_per_second:\s*([0-9.eE+]+)", p.stdout, re.M)
        if p.returncode != 0 or not m:
            raise RuntimeError(f"{' '.join(self.cmd)} exited {p.returncode}: "
                               f"{(p.stderr or p.stdout)[-400:]}")
        return float(m.group(1))


class Envpool:
    name = "envpool"

    def __init__(self, env, n, threads, seconds):
        import numpy as np
        import envpool
        self.version = envpool.__version__
        self.n, self.seconds = n, seconds
        self.env = envpool.make(env, env_type="gymnasium", num_envs=n, batch_size=n,
                                num_threads=threads)
        self.actions = action_sets(self.env.action_space, n, np)
        self.env.reset()
        rate_loop(self.env.step, self.actions, n, seconds / 4)

    def measure(self):
        return median_rate(self.env.step, self.actions, self.n, self.seconds)


class GymSync:
    name = "gymnasium"

    def __init__(self, env, n, gym_seconds, gym_steps):
        import numpy as np
        import gymnasium as gym
        from gymnasium.vector import AutoresetMode
        self.version = gym.__version__
        self.n, self.seconds, self.steps = n, gym_seconds, gym_steps
        self.env = gym.make_vec(env, num_envs=n, vectorization_mode="sync",
                                vector_kwargs={"autoreset_mode": AutoresetMode.NEXT_STEP})
        self.actions = action_sets(self.env.single_action_space, n, np)
        self.env.reset(seed=1)
        self.env.step(self.actions[0])

    def measure(self):
        return rate_loop(self.env.step, self.actions, self.n, self.seconds, self.steps)


def fmt(x):
    return "failed" if x is None else f"{x / 1e6:8.3f} M"


def ratio(a, b):
    return float("nan") if not a or not b else a / b


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", default="CartPole-v1")
    ap.add_argument("--envs", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=0.3, help="one timed window")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--gym-seconds", type=float, default=3.0)
    ap.add_argument("--gym-steps", type=int, default=200)
    ap.add_argument("--fastrl", default=os.path.join(REPO, "build", "tools", "fastrl"))
    ap.add_argument("--library", default=os.path.join(REPO, "build", "lib", "libfastrl.so.0"),
                    help="libfastrl for the binding (unless FASTRL_LIBRARY is set)")
    ap.add_argument("--skip", default="", help="peers to skip, comma-separated")
    a = ap.parse_args()
    if min(a.envs, a.threads, a.reps) <= 0 or a.seconds <= 0:
        ap.error("--envs, --threads, --reps and --seconds must be positive")
    skip = {s.strip() for s in a.skip.split(",") if s.strip()}
    known = {"fastrl-C", "fastrl-python", "fastrl-ctypes", "fastrl-copy", "envpool",
             "gymnasium"}
    if skip - known:  # a misspelt peer ran unsaid
        ap.error(f"--skip: unknown {', '.join(sorted(skip - known))}")
    warnings.filterwarnings("ignore", message=".*precision lowered by casting.*")

    os.environ.setdefault("FASTRL_LIBRARY", a.library)
    sys.path.insert(0, os.path.join(REPO, "bindings", "python"))
    cpus = sorted(os.sched_getaffinity(0))[: a.threads]
    os.sched_setaffinity(0, cpus)

    import fastrl
    print(f"compare_python: {a.env}, {a.envs} envs, {a.threads} threads, next-step "
          f"autoreset, random actions from {SETS} arrays, {a.reps} interleaved reps")
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs, pinned to {cpus}")
    print(f"python {platform.python_version()} ({sys.executable}); fastrl binding "
          f"{fastrl.__version__}, library {fastrl.library_path()}")

    peers = []

    def add(name, ctor):
        if name in skip:
            print(f"{name}: skipped (--skip)")
            return
        try:
            peers.append(ctor())
        except Exception as e:  # a peer that cannot be imported or built is reported
            print(f"{name}: not measured: {type(e).__name__}: {e}")

    add("fastrl-C", lambda: FastrlC(a.fastrl, a.env, a.envs, a.threads, a.seconds))
    add("fastrl-python", lambda: FastrlPython(a.env, a.envs, a.threads, a.seconds))
    add("fastrl-ctypes", lambda: FastrlCtypes(a.env, a.envs, a.threads, a.seconds))
    add("fastrl-copy", lambda: FastrlPython(a.env, a.envs, a.threads, a.seconds, True))
    add("envpool", lambda: Envpool(a.env, a.envs, a.threads, a.seconds))
    add("gymnasium", lambda: GymSync(a.env, a.envs, a.gym_seconds, a.gym_steps))
    for p in peers:
        if hasattr(p, "version"):
            print(f"{p.name} {p.version}")

    rates = {p.name: [] for p in peers}
    busy0, own0, t0 = busy_seconds(), own_seconds(), time.time()
    for rep in range(a.reps):
        line = []
        for p in peers:
            try:
                r = p.measure()
            except Exception as e:
                print(f"{p.name}: failed: {e}")
                r = None
            rates[p.name].append(r)
            line.append(f"{p.name} {fmt(r)}")
        print(f"rep {rep + 1}: " + ", ".join(line) + " steps/s")
    wall = time.time() - t0
    busy1, own1 = busy_seconds(), own_seconds()

    med = {k: (statistics.median([x for x in v if x]) if any(v) else None)
           for k, v in rates.items()}
    print("\nmedian env steps/s over the reps:")
    for k, v in med.items():
        print(f"  {k:14s} {fmt(v)}")
    py = med.get("fastrl-python")

    def per_rep(peer):
        return [ratio(x, y) for x, y in zip(rates.get("fastrl-python", []),
                                            rates.get(peer, []))]

    print("\nratios (medians; per-rep ratios in brackets):")
    for peer, goal in (("fastrl-C", ">= 0.9"), ("envpool", ">= 10"), ("gymnasium", ""),
                       ("fastrl-ctypes", ""), ("fastrl-copy", "")):
        if peer in med:
            reps = ", ".join(f"{x:.2f}" for x in per_rep(peer))
            print(f"  fastrl-python / {peer:13s} {ratio(py, med[peer]):8.2f}  [{reps}]"
                  + (f"  (goal {goal})" if goal else ""))
    if busy0 is not None and busy1 is not None:
        other = max(0.0, (busy1 - busy0) - (own1 - own0))
        print(f"\nother processes used {other:.1f} CPU-s of {wall:.1f} s wall "
              f"({100 * other / max(wall * (os.cpu_count() or 1), 1e-9):.0f}% of the "
              "machine) while measuring")
    print(f"ratio_vs_envpool: {ratio(py, med.get('envpool')):.2f}")
    print(f"ratio_vs_c: {ratio(py, med.get('fastrl-C')):.3f}")
    return 0 if py and med.get("fastrl-C") else 1


if __name__ == "__main__":
    sys.exit(main())
