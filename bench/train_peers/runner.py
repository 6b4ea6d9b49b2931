"""Run one training command as a child process and read what it reports (stdlib only).

Used by bench/compare_train.py and bench/learning.py. Every trainer they run (fastrl
train, bench/cleanrl_ppo.py, bench/train_peers/sb3_ppo.py) ends its stdout with
    env_steps_per_second: <float>
    mean_return: <float> steps: <int> seconds: <float>
"""

import math
import os
import re
import subprocess
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_NUM = r"([-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|nan|inf))"
SPS_RE = re.compile(r"^env_steps_per_second:\s*" + _NUM + r"\s*$", re.M | re.I)
RESULT_RE = re.compile(r"^mean_return:\s*" + _NUM + r"\s+steps:\s*([0-9]+)\s+seconds:\s*"
                       + _NUM + r"\s*$", re.M | re.I)


class Result:
    """What one run reported. `error` is None when it exited 0 with parsable output."""

    def __init__(self, cmd, rc, out, err, wall, maxrss_kb, timed_out):
        self.cmd, self.rc, self.output, self.stderr = cmd, rc, out, err
        self.wall, self.maxrss_mb = wall, maxrss_kb / 1024.0
        self.mean_return = self.steps = self.seconds = self.sps = None
        results, rates = RESULT_RE.findall(out), SPS_RE.findall(out)
        if results:
            r = results[-1]
            self.mean_return, self.steps, self.seconds = float(r[0]), int(r[1]), float(r[2])
        if rates:
            self.sps = float(rates[-1])
        self.error = self._error(timed_out)

    def _error(self, timed_out):
        if timed_out:
            return f"timed out after {self.wall:.1f} s"
        if self.rc != 0:
            tail = (self.stderr or self.output).strip()[-600:]
            return f"exited with status {self.rc}: {tail}"
        if self.steps is None or self.sps is None:
            return ("output has no `env_steps_per_second:` and `mean_return: X steps: N "
                    f"seconds: S` lines; last output: {self.output.strip()[-300:]!r}")
        return None

    def solved(self, target):
        return (self.error is None and not math.isnan(self.mean_return)
                and self.mean_return >= target)


def run(cmd, timeout, cwd=REPO):
    """Run cmd to completion; its own peak RSS comes from wait4 (per child, unlike
    getrusage(RUSAGE_CHILDREN), which keeps the maximum over all children so far)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=cwd)
        try:
            status, usage, timed_out = _wait(p, t0 + timeout)
        except BaseException:  # Ctrl-C or the like: leave no trainer running behind us
            p.kill()
            p.wait()
            raise
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        return Result(cmd, p.returncode, out.read(), err.read(), wall, usage.ru_maxrss,
                      timed_out)


def _wait(p, deadline):
    timed_out = False
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            return status, usage, timed_out
        if not timed_out and time.perf_counter() > deadline:
            p.kill()
            timed_out = True
        time.sleep(0.02)


def resolve(path):
    """A relative path is tried as given, then from the repository root."""
    if os.path.isabs(path) or os.path.exists(path):
        return path
    alt = os.path.join(REPO, path)
    return alt if os.path.exists(alt) else path


def fastrl_train_problem(fastrl):
    """None when `fastrl train` exists, else a sentence saying what is missing."""
    if not os.path.isfile(fastrl):
        return (f"{fastrl} does not exist: build it with "
                "`meson setup build -Dtests=false && ninja -C build`")
    try:
        p = subprocess.run([fastrl], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return f"cannot run {fastrl}: {e}"
    usage = p.stdout + p.stderr
    if re.search(r"^\s+train\b", usage, re.M):
        return None
    commands = re.findall(r"^\s{2}([a-z]+)\b", usage, re.M)
    return (f"{fastrl} has no `train` command yet (its usage lists: "
            f"{', '.join(dict.fromkeys(commands)) or 'nothing'}); the fastrl runs are skipped")


def median_worst(values):
    """Median and maximum; unsolved runs enter as inf (so a median can be 'unsolved')."""
    if not values:
        return None, None
    s = sorted(values)
    n = len(s)
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    return med, s[-1]


def fmt_num(x, unit="", digits=0):
    if x is None:
        return "n/a"
    if math.isinf(x):
        return "unsolved"
    return f"{x:,.{digits}f}{unit}"
