"""What the comparison scripts report about the machine they ran on: the CPU model and
how busy the machine was (other processes' CPU time during the runs), so a figure from
a shared, noisy machine can be judged. Imported by compare_env.py and compare_async.py
(bench/ is on sys.path when they run)."""

import os
import platform


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def busy_seconds():
    """CPU-seconds spent outside idle/iowait by the whole machine (None off Linux)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return (sum(v[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def own_seconds():
    """CPU-seconds of this process and its waited-for children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
