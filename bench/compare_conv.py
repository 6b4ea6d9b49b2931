#!/usr/bin/env python3
"""lib/nn/conv.c next to PyTorch's CPU convolutions, same layers, same thread.

    /tmp/trainvenv/bin/python bench/compare_conv.py [--build build] [--batches 1,32,256]
                                                    [--rounds 3]

Runs build/bench/bench_conv (fastrl's forward and backward GFLOP/s per layer and batch,
beside its own GEMM floor and OpenBLAS) and times torch.nn.functional.conv2d forward,
and its backward (weight, bias and input gradients), on the same shapes with
torch.set_num_threads(1), in NCHW and in channels_last (PyTorch picks its fastest; the
better of the two is the one compared). Each figure is the median of 5 samples of at
least 20 ms. The two take turns, a whole pass each, for --rounds rounds, and each side's
figure is its median over them: on a shared machine a slow phase during one side's
single pass had moved a ratio by 5-10%. Prints fastrl / PyTorch per layer and batch.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

LAYERS = [("nature", 84, 84, 4, 32, 8, 4), ("nature", 20, 20, 32, 64, 4, 2),
          ("nature", 9, 9, 64, 64, 3, 1), ("simple", 72, 128, 3, 32, 8, 4),
          ("simple", 17, 31, 32, 64, 4, 2), ("simple", 7, 14, 64, 128, 3, 2)]


def median_seconds(fn):
    samples = []
    for _ in range(5):
        n, t0 = 0, time.thread_time()
        while True:
            fn()
            n += 1
            t = time.thread_time()
            if t - t0 >= 0.02:
                break
        samples.append((t - t0) / n)
    return sorted(samples)[2]


def torch_rates(torch, layer, batch):
    import torch.nn.functional as F

    _, h, w, c, oc, k, s = layer
    best = None
    for fmt in (torch.contiguous_format, torch.channels_last):
        x = torch.randn(batch, c, h, w).to(memory_format=fmt).requires_grad_(True)
        wt = torch.randn(oc, c, k, k).to(memory_format=fmt).requires_grad_(True)
        b = torch.randn(oc, requires_grad=True)
        with torch.no_grad():
            fwd = median_seconds(lambda: F.conv2d(x, wt, b, stride=s))
        y = F.relu(F.conv2d(x, wt, b, stride=s))
        g = torch.randn_like(y)

        def backward():
            x.grad = wt.grad = b.grad = None
            y2 = F.relu(F.conv2d(x, wt, b, stride=s))
            y2.backward(g)

        fwd_bwd = median_seconds(backward)
        oh, ow = (h - k) // s + 1, (w - k) // s + 1
        flop = 2.0 * batch * oh * ow * k * k * c * oc
        rates = (1e-9 * flop / fwd, 1e-9 * 2 * flop / max(fwd_bwd - fwd, 1e-12))
        if best is None or rates[0] + rates[1] > best[0] + best[1]:
            best = rates
    return best


def fastrl_rates(build, batches):
    out = subprocess.run([f"{build}/bench/bench_conv", *map(str, batches)], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    rates = {}
    for line in out.splitlines()[1:]:
        m = re.match(r"(\w+)\s+(\d+)x(\d+)\s*x(\d+)\s+(\d+)\s+\d+x\d+/\d+\s+batch\s+(\d+)\s+"
                     r"fwd\s+([\d.]+) GF/s \(\s*(\d+)% of gemm.*?bwd\s+([\d.]+) GF/s \(\s*(\d+)%",
                     line)
        if m:
            key = (m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(6)))
            rates[key] = (float(m.group(7)), float(m.group(9)), int(m.group(8)),
                          int(m.group(10)))
    return out.splitlines()[0], rates


def torch_pass(torch, batches, ours):
    """PyTorch's (fwd, bwd) GF/s for every layer and batch bench_conv measured."""
    rates = {}
    for layer in LAYERS:
        for batch in batches:
            key = (layer[0], layer[1], layer[2], batch)
            if key in ours:
                rates[key] = torch_rates(torch, layer, batch)
    return rates


def median_rows(rows):
    """Each column's median over the rounds (percentages stay whole numbers)."""
    return [type(col[0])(statistics.median(col)) for col in zip(*rows)]


def batch_list(text):
    """--batches: 1 to 8 whole numbers in [1, 4096], as bench_conv takes them."""
    try:
        batches = [int(b) for b in text.split(",")]
    except ValueError:
        batches = []
    if not 1 <= len(batches) <= 8 or not all(1 <= b <= 4096 for b in batches):
        raise argparse.ArgumentTypeError(f"{text!r} is not 1 to 8 batches in [1, 4096]")
    return batches


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--batches", default=[1, 32, 256], type=batch_list,
                    help="comma-separated (default 1,32,256)")
    ap.add_argument("--rounds", default=3, type=int, choices=range(1, 11), metavar="1..10",
                    help="turns each side takes, medians compared (default 3)")
    args = ap.parse_args()
    # Said before bench_conv runs, not as a traceback after it.
    try:
        import torch
    except ImportError as e:
        print(f"compare_conv.py needs PyTorch ({e}): run it with the Python of a venv "
              "that has bench/requirements-train.txt", file=sys.stderr)
        return 2
    bench = f"{args.build}/bench/bench_conv"
    if not os.access(bench, os.X_OK):
        print(f"{bench} is missing: build it first (ninja -C {args.build})", file=sys.stderr)
        return 2

    torch.set_num_threads(1)
    batches = args.batches
    ours_rounds, theirs_rounds = [], []
    for _ in range(args.rounds):
        head, ours = fastrl_rates(args.build, batches)
        ours_rounds.append(ours)
        theirs_rounds.append(torch_pass(torch, batches, ours))
    print(head + f"; torch {torch.__version__}, 1 thread")
    print(f"GF/s, medians over {args.rounds} alternating rounds; (x%): of the same-run GEMM floor")
    print("layer                      batch   fastrl fwd      torch fwd  ratio   fastrl bwd  "
          "    torch bwd  ratio")
    for layer in LAYERS:
        for batch in batches:
            key = (layer[0], layer[1], layer[2], batch)
            if key not in ours_rounds[0]:
                continue
            f = median_rows([r[key] for r in ours_rounds])
            t = median_rows([r[key] for r in theirs_rounds])
            name = f"{layer[0]} {layer[1]}x{layer[2]}x{layer[3]} {layer[4]} {layer[5]}/{layer[6]}"
            print(f"{name:<26} {batch:5d}   {f[0]:6.1f} ({f[2]:3d}%)  {t[0]:9.1f}  "
                  f"{f[0] / t[0]:5.2f}x  {f[1]:6.1f} ({f[3]:3d}%)  {t[1]:9.1f}  "
                  f"{f[1] / t[1]:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
