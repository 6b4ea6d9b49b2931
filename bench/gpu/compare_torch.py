#!/usr/bin/env python3
"""MLP inference on the GPU: fastrl's CUDA plugin against PyTorch (eager and CUDA graphs).

Both sides do the same work per call, for each batch size B:

  fastrl   bench_gpu_infer (a child process, --csv): model_forward of B rows, host
           observations in a page-locked buffer -> device -> actor MLP -> logits back
           into a page-locked host buffer, synchronised (see bench_gpu_infer.c).
  torch    the same actor as nn.Sequential(Linear, act, ..., Linear), float32, on the
           same GPU: pinned obs[:B] .to('cuda', non_blocking=True) -> forward -> logits
           into a preallocated pinned host tensor (copy_(non_blocking=True), then the
           stream is synchronised); --torch-out to_cpu uses .to('cpu') instead (a fresh
           pageable tensor each call, slower for torch). Two eager variants: under
           torch.no_grad() and under torch.inference_mode().
  graph    the same forward captured once per batch size as a torch.cuda.CUDAGraph
           (warmed up on a side stream first, as PyTorch's docs require) on static
           device tensors; per call: pinned obs[:B] copied into the static input
           (non_blocking), replay, the static output copied into the preallocated pinned
           host tensor (non_blocking), stream synchronised: host copies included.
  floor    bench_gpu_floor (--floor; default: beside --bench), run once: what a batch-1
           round trip costs on this GPU at the least (obs host->device, logits back,
           synchronise: the copies-plus-synchronise floor) and its pinned host->device
           copy bandwidth. Without it the floor targets read "unknown".

Timing is the same on both sides: wall time of each call (CLOCK_MONOTONIC; Python's
perf_counter), after a warm-up of at least 3 calls (then until 0.1 s or 100 calls), up
to --reps calls or --budget seconds per batch; the figure is the median. TF32 is on or
off on both sides (--tf32: the plugin's open(tf32); torch's matmul fp32 precision).

--rounds whole runs of each side alternate (fastrl, torch, torch, fastrl, ...), so a
noisy stretch of the machine hits both; a batch's figure is the median over rounds of
each round's median.

Targets (the issue's):
  batch 1      fastrl <= 1.5x the copies-plus-synchronise floor AND < 15 us;
  batch 4096   fastrl >= 2.5x the faster eager variant and >= 1.2x the graph variant
               (ratio = torch us / fastrl us);
  batch 65536  fastrl's achieved bandwidth, (rows*obs + rows*actions)*4 bytes over its
               time, >= 80% of the floor's pinned host->device bandwidth; its GFLOP/s
               (2*rows*sum(in*out) over the layers) is printed beside it.

Exit status: 0 when it ran or skipped (SKIP: no torch, no CUDA, no plugin or GPU for
fastrl); 1 when a side failed; 2 on bad arguments or a missing bench_gpu_infer.

  python3 bench/gpu/compare_torch.py [--tf32 0|1] [--rounds 3] [--batches 1,...,65536]
      [--floor PATH]
"""

import argparse
import math
import os
import statistics
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_BATCHES = "1,4,16,64,256,1024,4096,16384,65536"
TARGET_BATCH, TARGET_EAGER, TARGET_GRAPH = 4096, 2.5, 1.2  # x torch eager, x torch graph
LATENCY_BATCH, LATENCY_US, LATENCY_FLOOR = 1, 15.0, 1.5  # < us, <= x the floor
BW_BATCH, BW_FRACTION = 65536, 0.80  # of the floor's host->device GB/s
VARIANTS = ("no_grad", "inference_mode", "graph")


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
    p.add_argument("--floor", help="bench_gpu_floor (default: beside --bench); a missing "
                                   "one makes the floor targets unknown")
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
    p.add_argument("--path", default="auto",
                   help="the plugin's forward path for fastrl's side (bench_gpu_infer "
                        "--paths: auto, launch, graph, fused, mapped, streams or runs)")
    a = p.parse_args(argv)
    a.hidden_list = [int(x) for x in a.hidden.split(",") if x]
    a.batch_list = [int(x) for x in a.batches.split(",") if x]
    if a.floor is None:
        a.floor = os.path.join(os.path.dirname(os.path.abspath(a.bench)), "bench_gpu_floor")
    if a.rounds < 1 or a.reps < 1 or not a.batch_list or min(a.batch_list) < 1:
        p.error("--rounds, --reps and every batch must be >= 1")
    return a


# ---------------------------------------------------------------- fastrl (the C bench)


def bench_cmd(a):
    cmd = [a.bench, "--csv", "--device", str(a.device), "--obs", str(a.obs),
           "--hidden", a.hidden, "--actions", str(a.actions), "--act", a.act,
           "--batches", a.batches, "--reps", str(a.reps), "--budget", str(a.budget),
           "--tf32", str(a.tf32), "--paths", a.path]
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


# ---------------------------------------------------------------- the floor (bench_gpu_floor)


def floor_cmd(a):
    """Its copies sized as one row of this network: obs floats up, action logits down."""
    return [a.floor, "--csv", "--device", str(a.device), "--obs-bytes", str(4 * a.obs),
            "--out-bytes", str(4 * a.actions)]


def parse_floor_output(text):
    """{'header': [...], 'us': {name: median_us}, 'gbps': {name: GB/s}} from
    bench_gpu_floor --csv, or {'why': ...} when it skipped or failed."""
    out = {"header": [], "us": {}, "gbps": {}}
    for line in text.splitlines():
        if line.startswith(("SKIP:", "FAIL:")):
            return {"why": "bench_gpu_floor: " + line.strip()}
        if line.startswith("# "):
            out["header"].append(line[2:])
            continue
        f = line.split(",")
        if len(f) != 4 or f[0] in ("name", "bandwidth"):
            continue
        try:
            (out["gbps"] if f[0].startswith("bw_") else out["us"])[f[0]] = float(f[1])
        except ValueError:
            continue
    if "copies" not in out["us"] or "bw_h2d" not in out["gbps"]:
        return {"why": "bench_gpu_floor printed no copies/bw_h2d line: "
                       + text.strip()[-300:]}
    return out


def run_floor(a):
    """The floor of this GPU, or {'why': ...}: its absence is reported, not fatal."""
    if not os.access(a.floor, os.X_OK):
        return {"why": f"no bench_gpu_floor at {a.floor} (--floor; it is built with CUDA)"}
    try:
        r = subprocess.run(floor_cmd(a), capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"why": f"bench_gpu_floor: {e}"}
    fl = parse_floor_output(r.stdout)
    if "why" not in fl and r.returncode != 0:
        fl = {"why": f"bench_gpu_floor exited {r.returncode}: {r.stderr.strip()[-300:]}"}
    return fl


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
    """TF32 in float32 matmuls (cuBLAS) on or off; returns what torch now reports.

    torch.backends.cuda.matmul.allow_tf32 is the flag every torch has; since 2.9 it
    also sets the newer matmul.fp32_precision ('tf32'/'ieee'), which is what 2.9+ reads
    when it picks the cuBLAS math mode, and it warns that it is deprecated. Setting only
    the new flag would leave the old one behind, and torch refuses to read a mix of the
    two ("mix of the legacy and new APIs"), so both are set, to the same value, and
    read back."""
    m = torch.backends.cuda.matmul
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecation notice of allow_tf32 (2.9+)
        m.allow_tf32 = bool(on)
        if hasattr(m, "fp32_precision"):
            m.fp32_precision = "tf32" if on else "ieee"
        got = {"allow_tf32": bool(m.allow_tf32)}
        if hasattr(m, "fp32_precision"):
            got["fp32_precision"] = m.fp32_precision
    if got["allow_tf32"] != bool(on) or got.get("fp32_precision", "") not in (
            "", "tf32" if on else "ieee"):
        raise Failed(f"torch did not take --tf32 {on}: matmul reports {got}")
    return got


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
    """The model, its pinned host buffers and its CUDA graphs (one per batch size, made
    on first use), made once and timed in every round."""

    def __init__(self, torch, a):
        self.torch, self.a = torch, a
        self.dev = torch.device("cuda", a.device)
        torch.cuda.set_device(self.dev)
        self.tf32 = set_tf32(torch, a.tf32)
        torch.manual_seed(0)
        self.model = make_actor(torch, a, self.dev)
        n = max(a.batch_list)
        self.obs = torch.empty((n, a.obs), dtype=torch.float32).uniform_(-1, 1).pin_memory()
        self.out = torch.empty((n, a.actions), dtype=torch.float32).pin_memory()
        self.stream = torch.cuda.current_stream(self.dev)
        self.graphs = {}  # batch -> (graph, static input, static output)
        self.graph_error = None  # why the graph variant could not run, if it could not

    def call_fn(self, b):
        """One eager call of batch b: the work fastrl's model_forward does."""
        x_host, y_host, model, dev, stream = self.obs[:b], self.out[:b], self.model, \
            self.dev, self.stream
        if self.a.torch_out == "to_cpu":
            return lambda: model(x_host.to(dev, non_blocking=True)).to("cpu")

        def call():
            y_host.copy_(model(x_host.to(dev, non_blocking=True)), non_blocking=True)
            stream.synchronize()
        return call

    def capture(self, b):
        """The forward of b rows as a CUDA graph on static device tensors, after a
        warm-up on a side stream (cuBLAS's handle and workspace, the allocator: nothing
        of that may happen first inside a capture), as torch.cuda.graphs' docs do it."""
        torch, dev = self.torch, self.dev
        static_in = torch.empty((b, self.a.obs), dtype=torch.float32, device=dev)
        static_in.copy_(self.obs[:b])
        side = torch.cuda.Stream(dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.no_grad():
            with torch.cuda.stream(side):
                for _ in range(3):
                    self.model(static_in)
            torch.cuda.current_stream(dev).wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                static_out = self.model(static_in)
        return g, static_in, static_out

    def graph_fn(self, b):
        """One graph call of batch b: obs in, replay, logits out, synchronise."""
        if b not in self.graphs:
            self.graphs[b] = self.capture(b)
            self.check_graph(b)
        g, static_in, static_out = self.graphs[b]
        x_host, y_host, stream = self.obs[:b], self.out[:b], self.stream
        if self.a.torch_out == "to_cpu":
            def call_to_cpu():
                static_in.copy_(x_host, non_blocking=True)
                g.replay()
                return static_out.to("cpu")
            return call_to_cpu

        def call():
            static_in.copy_(x_host, non_blocking=True)
            g.replay()
            y_host.copy_(static_out, non_blocking=True)
            stream.synchronize()
        return call

    def check_graph(self, b):
        """A replay's logits (through the host copies) against an eager forward."""
        torch = self.torch
        g, static_in, static_out = self.graphs[b]
        self.out[:b].fill_(float("nan"))
        static_in.copy_(self.obs[:b], non_blocking=True)
        g.replay()
        self.out[:b].copy_(static_out, non_blocking=True)
        self.stream.synchronize()
        with torch.no_grad():
            ref = self.model(self.obs[:b].to(self.dev)).cpu()
        err = (self.out[:b] - ref).abs().max().item() / (1 + ref.abs().max().item())
        if not err <= (2e-2 if self.a.tf32 else 1e-4):
            raise Failed(f"torch graph, batch {b}: logits differ from eager by {err:.3g}")

    def run(self, variant):
        """{batch: median_us} for no_grad, inference_mode or graph (NaN where the
        graph could not be captured: said once, in self.graph_error)."""
        torch = self.torch
        mode = torch.inference_mode if variant == "inference_mode" else torch.no_grad
        out = {}
        with mode():
            for b in self.a.batch_list:
                if variant != "graph":
                    out[b] = median_us(self.call_fn(b), self.a.reps, self.a.budget)
                    continue
                try:
                    fn = self.graph_fn(b)
                except RuntimeError as e:  # a capture torch refused: report, go on
                    self.graph_error = self.graph_error or f"batch {b}: {e}"
                    out[b] = math.nan
                    continue
                out[b] = median_us(fn, self.a.reps, self.a.budget)
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
    res = {"fastrl": {}, **{v: {} for v in VARIANTS}}
    header = []
    for r in range(a.rounds):
        order = ["fastrl", "torch"] if r % 2 == 0 else ["torch", "fastrl"]
        for who in order:
            if who == "fastrl":
                header, rows = fastrl_round(a)
                merge(res["fastrl"], rows)
            else:
                for v in VARIANTS:
                    merge(res[v], side.run(v))
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr, flush=True)
    return header, res


def merge(into, rows):
    for b, us in rows.items():
        into.setdefault(b, []).append(us)


def median_or_nan(xs):
    xs = [x for x in xs if not math.isnan(x)]
    return statistics.median(xs) if xs else math.nan


def table(a, res, floor):
    """Per batch: {batch, fastrl, no_grad, inference_mode, graph (us), eager (the faster
    eager us), ratio (eager / fastrl), ratio_graph (graph / fastrl), floor_x (fastrl /
    the floor's copies us, NaN without a floor)}."""
    copies = floor.get("us", {}).get("copies", math.nan)
    rows = []
    for b in a.batch_list:
        r = {"batch": b, "fastrl": statistics.median(res["fastrl"][b])}
        for v in VARIANTS:
            r[v] = median_or_nan(res[v][b])
        r["eager"] = min(r["no_grad"], r["inference_mode"])
        r["ratio"] = r["eager"] / r["fastrl"]
        r["ratio_graph"] = r["graph"] / r["fastrl"]
        r["floor_x"] = r["fastrl"] / copies
        rows.append(r)
    return rows


def print_table(rows):
    print(f"{'batch':>7} {'fastrl us':>10} {'x floor':>8} {'eager us':>10} "
          f"{'eager im us':>11} {'graph us':>10} {'fastrl rows/s':>14} {'x eager':>8} "
          f"{'x graph':>8}")
    for r in rows:
        print(f"{r['batch']:>7} {r['fastrl']:>10.2f} {r['floor_x']:>8.2f} "
              f"{r['no_grad']:>10.2f} {r['inference_mode']:>11.2f} {r['graph']:>10.2f} "
              f"{r['batch'] / r['fastrl'] * 1e6:>14.4g} {r['ratio']:>8.2f} "
              f"{r['ratio_graph']:>8.2f}")
    print("eager us: torch under no_grad; eager im us: under inference_mode; graph us: the "
          "forward as a CUDA graph, replayed, host copies included; x eager = the faster "
          "eager us / fastrl us; x graph = graph us / fastrl us; x floor = fastrl us / "
          "the copies-plus-synchronise floor (bench_gpu_floor).")


def layer_sizes(a):
    dims = [a.obs] + a.hidden_list + [a.actions]
    return list(zip(dims[:-1], dims[1:]))


def met(ok):
    return "MET" if ok else "NOT MET"


def verdict_latency(by, floor):
    if LATENCY_BATCH not in by:
        return f"target: batch {LATENCY_BATCH}: not measured (not in --batches)"
    us = by[LATENCY_BATCH]["fastrl"]
    abs_ok = us < LATENCY_US
    head = (f"target: batch {LATENCY_BATCH}: fastrl {us:.2f} us; < {LATENCY_US:g} us: "
            f"{met(abs_ok)}; <= {LATENCY_FLOOR:g}x the copies-plus-synchronise floor: ")
    if "why" in floor:
        return head + f"unknown ({floor['why']}) -> UNKNOWN"
    x = by[LATENCY_BATCH]["floor_x"]
    floor_ok = x <= LATENCY_FLOOR
    return (head + f"{x:.2f}x of {floor['us']['copies']:.2f} us: {met(floor_ok)} -> "
            f"{met(abs_ok and floor_ok)}")


def verdict_throughput(by):
    if TARGET_BATCH not in by:
        return f"target: batch {TARGET_BATCH}: not measured (not in --batches)"
    r = by[TARGET_BATCH]
    eager_ok, graph_ok = r["ratio"] >= TARGET_EAGER, r["ratio_graph"] >= TARGET_GRAPH
    graph = ("unknown (no graph figure)" if math.isnan(r["ratio_graph"])
             else f"{r['ratio_graph']:.2f}x: {met(graph_ok)}")
    verdict = "UNKNOWN" if math.isnan(r["ratio_graph"]) else met(eager_ok and graph_ok)
    return (f"target: batch {TARGET_BATCH}: >= {TARGET_EAGER:g}x torch eager: "
            f"{r['ratio']:.2f}x: {met(eager_ok)}; >= {TARGET_GRAPH:g}x torch CUDA graph: "
            f"{graph} -> {verdict}")


def verdict_bandwidth(a, by, floor):
    if BW_BATCH not in by:
        return f"target: batch {BW_BATCH}: not measured (not in --batches)"
    rows, us = BW_BATCH, by[BW_BATCH]["fastrl"]
    moved = rows * (a.obs + a.actions) * 4
    gbps = moved / (us * 1e-6) / 1e9
    flops = 2 * rows * sum(i * o for i, o in layer_sizes(a))
    head = (f"target: batch {BW_BATCH}: fastrl moves {moved / 1e6:.1f} MB "
            f"({rows}x{a.obs} floats up, {rows}x{a.actions} down) in {us:.1f} us = "
            f"{gbps:.2f} GB/s ({flops / (us * 1e-6) / 1e9:.1f} GFLOP/s); "
            f">= {BW_FRACTION:.0%} of the floor's host->device bandwidth: ")
    if "why" in floor:
        return head + f"unknown ({floor['why']}) -> UNKNOWN"
    h2d = floor["gbps"]["bw_h2d"]
    frac = gbps / h2d
    return head + f"{frac:.0%} of {h2d:.2f} GB/s -> {met(frac >= BW_FRACTION)}"


def verdicts(a, rows, floor):
    by = {r["batch"]: r for r in rows}
    return [verdict_latency(by, floor), verdict_throughput(by),
            verdict_bandwidth(a, by, floor)]


def csv_num(x, fmt):
    return "" if math.isnan(x) else format(x, fmt)


def write_csv(path, rows):
    """The first five columns as before the graph variant and the floor came; then
    those, empty where unknown."""
    with open(path, "w") as f:
        f.write("batch,fastrl_us,torch_no_grad_us,torch_inference_mode_us,ratio,"
                "torch_graph_us,ratio_graph,fastrl_over_floor\n")
        for r in rows:
            f.write(f"{r['batch']},{r['fastrl']:.3f},{r['no_grad']:.3f},"
                    f"{r['inference_mode']:.3f},{r['ratio']:.4f},"
                    f"{csv_num(r['graph'], '.3f')},{csv_num(r['ratio_graph'], '.4f')},"
                    f"{csv_num(r['floor_x'], '.4f')}\n")


def print_floor(floor, torch_name):
    if "why" in floor:
        print(f"floor: unknown: {floor['why']}")
        return
    us, bw = floor["us"], floor["gbps"]
    print("floor (bench_gpu_floor, median us per call): " + ", ".join(
        f"{k} {v:.2f}" for k, v in us.items()))
    print(f"floor bandwidth GB/s: host->device {bw.get('bw_h2d', math.nan):.2f}, "
          f"device->host {bw.get('bw_d2h', math.nan):.2f}, device->device "
          f"{bw.get('bw_d2d', math.nan):.1f} (read + write)")
    for line in floor["header"]:
        print("  " + line)
    if not any(torch_name in line for line in floor["header"]):
        print(f"WARNING: bench_gpu_floor's header does not name torch's device "
              f"({torch_name}): the floor may be another GPU's")


def print_setup(a, torch, side, header, floor):
    print("fastrl (bench_gpu_infer):")
    for line in header:
        print("  " + line)
    name = torch.cuda.get_device_name(a.device)
    tf32 = ", ".join(f"matmul.{k}={v}" for k, v in side.tf32.items())
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}): {name}; "
          f"tf32 {'on' if a.tf32 else 'off'} ({tf32}); logits back: {a.torch_out}")
    if any("host" in line for line in header if line.startswith("backend")):
        print("WARNING: fastrl ran on the host test plugin: the comparison means nothing")
    if not any(line.startswith("device:") and name in line for line in header):
        print(f"WARNING: fastrl's device line does not name torch's device ({name}): "
              f"the two may not be on the same GPU")
    if side.graph_error:
        print(f"WARNING: torch CUDA graph variant not run ({side.graph_error})")
    print_floor(floor, name)
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
        floor = run_floor(a)
        header, res = run_rounds(a, side)
    except Skip as e:
        print(f"SKIP: {e}")
        return 0
    except Failed as e:
        print(f"FAIL: {e}")
        return 1
    print_setup(a, torch, side, header, floor)
    rows = table(a, res, floor)
    print_table(rows)
    for line in verdicts(a, rows, floor):
        print(line)
    if a.csv_out:
        write_csv(a.csv_out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
