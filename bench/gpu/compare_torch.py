#!/usr/bin/env python3
"""MLP inference on the GPU: fastrl's CUDA plugin against PyTorch eager, in one run.

Both sides do the same work per call, for each batch size B:

  fastrl   bench_gpu_infer (a child process, --csv): model_forward of B rows, host
           observations in a page-locked buffer -> device -> actor MLP -> logits back
           into a page-locked host buffer, synchronised (see bench_gpu_infer.c).
  torch    the same actor as nn.Sequential(Linear, act, ..., Linear), float32, on the
           same GPU: pinned obs[:B] .to('cuda', non_blocking=True) -> forward -> logits
           into a preallocated pinned host tensor (copy_(non_blocking=True), then the
           stream is synchronised); --torch-out to_cpu uses .to('cpu') instead (a fresh
           pageable tensor each call, slower for torch). Two variants: under
           torch.no_grad() and under torch.inference_mode().

Timing is the same on both sides: wall time of each call (CLOCK_MONOTONIC; Python's
perf_counter), after a warm-up of at least 3 calls (then until 0.1 s or 100 calls), up
to --reps calls or --budget seconds per batch; the figure is the median. TF32 is on or
off on both sides (--tf32: the plugin's open(tf32); torch's matmul fp32 precision).

--rounds whole runs of each side alternate (fastrl, torch, torch, fastrl, ...), so a
noisy stretch of the machine hits both; a batch's figure is the median over rounds of
each round's median.

Targets (the issue's): at batch 4096, fastrl at least 2x the faster torch variant
(ratio = torch us / fastrl us); at batch 1, fastrl's latency under 20 us.

Exit status: 0 when it ran or skipped (SKIP: no torch, no CUDA, no plugin or GPU for
fastrl); 1 when a side failed; 2 on bad arguments or a missing bench_gpu_infer.

  python3 bench/gpu/compare_torch.py [--tf32 0|1] [--rounds 3] [--batches 1,...,65536]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_BATCHES = "1,4,16,64,256,1024,4096,16384,65536"
TARGET_BATCH, TARGET_RATIO = 4096, 2.0
LATENCY_BATCH, LATENCY_US = 1, 20.0


class Skip(Exception):
    """Nothing to compare on this machine; the message says why."""


class Failed(Exception):
    """A side ran and failed."""


# ---------------------------------------------------------------- arguments


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bench", default=os.path.join(ROOT, "build", "bench", "gpu",
                                                   "bench_gpu_infer"),
                   help="the C bench (default: build/bench/gpu/bench_gpu_infer)")
    p.add_argument("--plugin", help="the CUDA plugin, passed to bench_gpu_infer")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--obs", type=int, default=64)
    p.add_argument("--hidden", default="256,256")
    p.add_argument("--actions", type=int, default=8)
    p.add_argument("--act", default="tanh", choices=["tanh", "relu", "elu", "linear"])
    p.add_argument("--batches", default=DEFAULT_BATCHES)
    p.add_argument("--reps", type=int, default=200, help="timed calls per batch and round")
    p.add_argument("--budget", type=float, default=2.0,
                   help="seconds of timed calls per batch and round, at most")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--tf32", type=int, default=0, choices=[0, 1])
    p.add_argument("--torch-out", default="pinned", choices=["pinned", "to_cpu"],
                   help="how torch brings the logits back (default: into a pinned "
                        "tensor, as fastrl does)")
    p.add_argument("--csv-out", help="also write the table to this CSV file")
    a = p.parse_args(argv)
    a.hidden_list = [int(x) for x in a.hidden.split(",") if x]
    a.batch_list = [int(x) for x in a.batches.split(",") if x]
    if a.rounds < 1 or a.reps < 1 or not a.batch_list or min(a.batch_list) < 1:
        p.error("--rounds, --reps and every batch must be >= 1")
    return a


# ---------------------------------------------------------------- fastrl (the C bench)


def bench_cmd(a):
    cmd = [a.bench, "--csv", "--device", str(a.device), "--obs", str(a.obs),
           "--hidden", a.hidden, "--actions", str(a.actions), "--act", a.act,
           "--batches", a.batches, "--reps", str(a.reps), "--budget", str(a.budget),
           "--tf32", str(a.tf32)]
    return cmd + (["--plugin", a.plugin] if a.plugin else [])


def parse_bench_output(text):
    """(header lines, {batch: median_us}) from bench_gpu_infer --csv; raises Skip/Failed."""
    header, rows = [], {}
    for line in text.splitlines():
        if line.startswith("SKIP:"):
            raise Skip("fastrl: " + line[5:].strip())
        if line.startswith("FAIL:"):
            raise Failed("fastrl: " + line[5:].strip())
        if line.startswith("# "):
            header.append(line[2:])
        elif line and line[0].isdigit():
            f = line.split(",")
            rows[int(f[0])] = float(f[2])
    return header, rows


def fastrl_round(a):
    r = subprocess.run(bench_cmd(a), capture_output=True, text=True, timeout=1800)
    header, rows = parse_bench_output(r.stdout)
    if r.returncode != 0 or len(rows) != len(a.batch_list):
        raise Failed(f"bench_gpu_infer exited {r.returncode}: "
                     f"{(r.stdout + r.stderr).strip()[-600:]}")
    return header, rows


# ---------------------------------------------------------------- torch


def import_torch():
    try:
        import torch
    except ImportError as e:
        raise Skip(f"PyTorch is not installed ({e}); pip install -r "
                   f"bench/gpu/requirements.txt") from None
    if not torch.cuda.is_available():
        why = ("a CPU-only build of torch" if torch.version.cuda is None
               else f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no GPU")
        raise Skip(f"PyTorch has no CUDA device: {why}")
    return torch


def set_tf32(torch, on):
    """TF32 in float32 matmuls on or off, through the API this torch has."""
    m = torch.backends.cuda.matmul
    try:
        if hasattr(m, "fp32_precision"):  # torch >= 2.9: its replacement for allow_tf32,
            m.fp32_precision = "tf32" if on else "ieee"  # which is not to be mixed with it
        else:
            m.allow_tf32 = bool(on)
    except (AttributeError, RuntimeError, ValueError):
        torch.set_float32_matmul_precision("high" if on else "highest")


def make_actor(torch, a, dev):
    """The actor of bench_gpu_infer: obs -> hidden (activated) -> actions (linear)."""
    nn = torch.nn
    act = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU, "linear": nn.Identity}[a.act]
    layers, width = [], a.obs
    for h in a.hidden_list:
        layers += [nn.Linear(width, h), act()]
        width = h
    layers.append(nn.Linear(width, a.actions))
    return nn.Sequential(*layers).to(device=dev, dtype=torch.float32).eval()


class TorchSide:
    """The model and its pinned host buffers, made once and timed in every round."""

    def __init__(self, torch, a):
        self.torch, self.a = torch, a
        self.dev = torch.device("cuda", a.device)
        torch.cuda.set_device(self.dev)
        set_tf32(torch, a.tf32)
        torch.manual_seed(0)
        self.model = make_actor(torch, a, self.dev)
        n = max(a.batch_list)
        self.obs = torch.empty((n, a.obs), dtype=torch.float32).uniform_(-1, 1).pin_memory()
        self.out = torch.empty((n, a.actions), dtype=torch.float32).pin_memory()
        self.stream = torch.cuda.current_stream(self.dev)

    def call_fn(self, b):
        """One call of batch b: the work fastrl's model_forward does."""
        x_host, y_host, model, dev, stream = self.obs[:b], self.out[:b], self.model, \
            self.dev, self.stream
        if self.a.torch_out == "to_cpu":
            return lambda: model(x_host.to(dev, non_blocking=True)).to("cpu")

        def call():
            y_host.copy_(model(x_host.to(dev, non_blocking=True)), non_blocking=True)
            stream.synchronize()
        return call

    def run(self, variant):
        """{batch: median_us} under no_grad or inference_mode."""
        mode = (self.torch.inference_mode if variant == "inference_mode"
                else self.torch.no_grad)
        out = {}
        with mode():
            for b in self.a.batch_list:
                out[b] = median_us(self.call_fn(b), self.a.reps, self.a.budget)
        return out


def median_us(call, reps, budget):
    """The bench_gpu_infer rule: warm up, then time up to reps calls or budget seconds."""
    t0 = time.perf_counter()
    i = 0
    while i < 3 or (i < 100 and time.perf_counter() - t0 < 0.1):
        call()
        i += 1
    times, spent = [], 0.0
    while len(times) < reps and (len(times) < 3 or spent < budget):
        t = time.perf_counter()
        call()
        t = time.perf_counter() - t
        times.append(t)
        spent += t
    return statistics.median(times) * 1e6


# ---------------------------------------------------------------- rounds and report


def run_rounds(a, side):
    """Per side, per batch, the list of each round's median (us)."""
    res = {"fastrl": {}, "no_grad": {}, "inference_mode": {}}
    header = []
    for r in range(a.rounds):
        order = ["fastrl", "torch"] if r % 2 == 0 else ["torch", "fastrl"]
        for who in order:
            if who == "fastrl":
                header, rows = fastrl_round(a)
                merge(res["fastrl"], rows)
            else:
                for v in ("no_grad", "inference_mode"):
                    merge(res[v], side.run(v))
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr, flush=True)
    return header, res


def merge(into, rows):
    for b, us in rows.items():
        into.setdefault(b, []).append(us)


def table(a, res):
    """Rows of (batch, fastrl us, no_grad us, inference_mode us, ratio)."""
    rows = []
    for b in a.batch_list:
        f = statistics.median(res["fastrl"][b])
        ng = statistics.median(res["no_grad"][b])
        im = statistics.median(res["inference_mode"][b])
        rows.append((b, f, ng, im, min(ng, im) / f))
    return rows


def print_table(rows):
    print(f"{'batch':>7} {'fastrl us':>11} {'torch us':>11} {'torch im us':>11} "
          f"{'fastrl rows/s':>14} {'torch rows/s':>14} {'ratio':>7}")
    for b, f, ng, im, ratio in rows:
        best = min(ng, im)
        print(f"{b:>7} {f:>11.2f} {ng:>11.2f} {im:>11.2f} {b / f * 1e6:>14.4g} "
              f"{b / best * 1e6:>14.4g} {ratio:>7.2f}")
    print("torch us: under no_grad; torch im us: under inference_mode; torch rows/s and "
          "ratio use the faster of the two (ratio = torch us / fastrl us).")


def verdicts(rows):
    by = {r[0]: r for r in rows}
    out = []
    if TARGET_BATCH in by:
        ratio = by[TARGET_BATCH][4]
        ok = "MET" if ratio >= TARGET_RATIO else "NOT MET"
        out.append(f"target: batch {TARGET_BATCH} throughput >= {TARGET_RATIO:g}x torch eager: "
                   f"{ratio:.2f}x -> {ok}")
    else:
        out.append(f"target: batch {TARGET_BATCH} >= {TARGET_RATIO:g}x torch: not measured "
                   f"(batch {TARGET_BATCH} not in --batches)")
    if LATENCY_BATCH in by:
        us = by[LATENCY_BATCH][1]
        ok = "MET" if us < LATENCY_US else "NOT MET"
        out.append(f"target: batch {LATENCY_BATCH} latency < {LATENCY_US:g} us: "
                   f"{us:.2f} us -> {ok}")
    else:
        out.append(f"target: batch {LATENCY_BATCH} latency: not measured")
    return out


def write_csv(path, rows):
    with open(path, "w") as f:
        f.write("batch,fastrl_us,torch_no_grad_us,torch_inference_mode_us,ratio\n")
        for b, fu, ng, im, ratio in rows:
            f.write(f"{b},{fu:.3f},{ng:.3f},{im:.3f},{ratio:.4f}\n")


def print_setup(a, torch, header):
    print("fastrl (bench_gpu_infer):")
    for line in header:
        print("  " + line)
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}): "
          f"{torch.cuda.get_device_name(a.device)}; tf32 {'on' if a.tf32 else 'off'}; "
          f"logits back: {a.torch_out}")
    if any("host" in line for line in header if line.startswith("backend")):
        print("WARNING: fastrl ran on the host test plugin: the comparison means nothing")
    name = torch.cuda.get_device_name(a.device)
    if not any(line.startswith("device:") and name in line for line in header):
        print(f"WARNING: fastrl's device line does not name torch's device ({name}): "
              f"the two may not be on the same GPU")
    print(f"rounds: {a.rounds}, alternating; reps <= {a.reps} or {a.budget:g} s per batch "
          f"and round; figures: median over rounds of per-round medians")


def main(argv=None):
    a = parse_args(argv)
    try:
        torch = import_torch()
        if not os.access(a.bench, os.X_OK):
            print(f"compare_torch: {a.bench} is missing: build it with "
                  f"`meson compile -C build bench_gpu_infer` (or pass --bench)",
                  file=sys.stderr)
            return 2
        side = TorchSide(torch, a)
        header, res = run_rounds(a, side)
    except Skip as e:
        print(f"SKIP: {e}")
        return 0
    except Failed as e:
        print(f"FAIL: {e}")
        return 1
    print_setup(a, torch, header)
    rows = table(a, res)
    print_table(rows)
    for line in verdicts(rows):
        print(line)
    if a.csv_out:
        write_csv(a.csv_out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
