"""Helpers shared by the training peers (bench/cleanrl_ppo.py, bench/train_peers/sb3_ppo.py).

Both peers report what `fastrl train` reports, in the same format, as their last two
lines:
    env_steps_per_second: <float>
    mean_return: <float> steps: <int> seconds: <float>
where `seconds` is wall time from process start (so the interpreter's start-up and
`import torch` count, as fastrl's own start-up does) and `mean_return` is the mean of
the last 100 finished episodes (nan before the first one).
"""

import collections
import math
import os
import time

# Fallback clock origin when /proc is not there: as early as this module is imported.
_IMPORT_TIME = time.time()

# Default targets of bench/learning.py, used when --target is not given.
TARGETS = {"CartPole-v1": 475.0, "Acrobot-v1": -100.0, "Pendulum-v1": -200.0}
WINDOW = 100


def seconds_since_process_start():
    """Wall seconds since this process was created (fork), from /proc; 10 ms resolution."""
    try:
        with open("/proc/self/stat") as f:
            # Field 22 (starttime, clock ticks after boot); split after the ")" that ends
            # the command name, which may itself hold spaces. Fields there start at 3.
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.time() - _IMPORT_TIME


class ReturnWindow:
    """Returns of the last WINDOW finished episodes; solved once the window is full and
    its mean reaches the target (a target of None is never reached)."""

    def __init__(self, target):
        self.target = target
        self.returns = collections.deque(maxlen=WINDOW)
        self.episodes = 0

    def add(self, episode_return):
        self.returns.append(float(episode_return))
        self.episodes += 1

    def mean(self):
        return sum(self.returns) / len(self.returns) if self.returns else math.nan

    def solved(self):
        return (self.target is not None and len(self.returns) == WINDOW
                and self.mean() >= self.target)


class Clock:
    """Throughput of the training loop: env steps over the seconds since start()."""

    def start(self):
        self.t0 = time.perf_counter()

    def rate(self, steps):
        dt = time.perf_counter() - self.t0
        return steps / dt if dt > 0 else math.nan


def print_result(window, steps, rate):
    print(f"episodes: {window.episodes} solved: {'yes' if window.solved() else 'no'}")
    print(f"env_steps_per_second: {rate:.1f}")
    print(f"mean_return: {window.mean():.2f} steps: {steps} "
          f"seconds: {seconds_since_process_start():.3f}", flush=True)


def add_common_args(ap, default_steps):
    ap.add_argument("--env", default="CartPole-v1")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--total-steps", type=int, default=default_steps,
                    help="env-step budget (also the length of the learning-rate schedule)")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--target", type=float, default=None,
                    help="stop once the mean of the last 100 episode returns is >= this "
                         f"(default: {TARGETS} for those envs, else run the whole budget); "
                         "'nan' = never stop early")


def resolve_target(env_id, target):
    if target is None:
        return TARGETS.get(env_id)
    return None if math.isnan(target) else target
