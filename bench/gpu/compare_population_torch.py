#!/usr/bin/env python3
"""A population's per-member inference on the GPU: fastrl's fused kernel (each row reads
its member's weights; bench_gpu_population) next to PyTorch's batched matrix products
(torch.baddbmm per layer over [P, R, in] x [P, in, out]) on the same GPU, in one run.

P = 256 members of a 4-64-64-2 tanh MLP (CartPole-v1's spaces), R = 1 and 16 rows a
member, the greedy action (argmax). Three PyTorch figures per R:
  torch resident   the three baddbmm + tanh and the argmax on device tensors, synchronised
                   (the kernels alone: no copies);
  torch copies     the same from pinned host observations to host actions (the copies
                   fastrl's call makes too: observations up, logits or actions down);
  torch graph      the copies variant captured once as a CUDA graph and replayed.
fastrl's figure is frl_population_act while the members are on the device (as
frl_population_evaluate runs it): observations and member indices up, one kernel, logits
down, the argmax on the host. Medians of --reps calls; ratios are torch / fastrl
(above 1: fastrl faster).

    python3 bench/gpu/compare_population_torch.py --bench .devpack/bench_gpu_population
"""
import argparse
import re
import statistics
import subprocess
import sys
import time


def torch_figures(P, R, reps):
    import torch
    dev = torch.device("cuda")
    g = torch.Generator(device="cpu").manual_seed(0)
    sizes = [(4, 64), (64, 64), (64, 2)]
    W = [(torch.rand(P, i, o, generator=g) * 0.2 - 0.1).to(dev) for i, o in sizes]
    B = [(torch.rand(P, 1, o, generator=g) * 0.2 - 0.1).to(dev) for _, o in sizes]
    x_host = (torch.rand(P, R, 4, generator=g) * 2 - 1).pin_memory()
    a_host = torch.empty(P, R, dtype=torch.int64).pin_memory()
    x_dev = x_host.to(dev)

    def forward(x):
        h = torch.tanh(torch.baddbmm(B[0], x, W[0]))
        h = torch.tanh(torch.baddbmm(B[1], h, W[1]))
        return torch.baddbmm(B[2], h, W[2]).argmax(-1)

    def resident():
        forward(x_dev)
        torch.cuda.synchronize()

    def copies():
        a_host.copy_(forward(x_host.to(dev, non_blocking=True)), non_blocking=True)
        torch.cuda.synchronize()

    static_x = torch.empty_like(x_dev)
    graph = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            static_out = forward(static_x)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(graph):
        static_x.copy_(x_host, non_blocking=True)
        static_out = forward(static_x)
        a_host.copy_(static_out, non_blocking=True)

    def graphed():
        graph.replay()
        torch.cuda.synchronize()

    out = {}
    for name, fn in (("torch resident", resident), ("torch copies", copies),
                     ("torch graph", graphed)):
        for _ in range(20):
            fn()
        t = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            t.append((time.perf_counter() - t0) * 1e6)
        out[name] = statistics.median(t)
    return out, torch.__version__, torch.cuda.get_device_name(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default="build/bench/gpu/bench_gpu_population")
    ap.add_argument("--members", type=int, default=256)
    ap.add_argument("--reps", type=int, default=300)
    a = ap.parse_args()
    r = subprocess.run([a.bench, "--members", str(a.members), "--reps", str(a.reps)],
                       capture_output=True, text=True)
    print(r.stdout.strip())
    if r.returncode != 0:
        print(r.stderr, file=sys.stderr)
        return 1
    ours = {}
    for m in re.finditer(r"pop_act device=(\S+).*? R=(\d+) .*?us=([\d.]+)", r.stdout):
        ours[(m.group(1).startswith("cuda"), int(m.group(2)))] = float(m.group(3))
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError("torch sees no CUDA device")
    except ImportError as e:
        print(f"PyTorch: SKIP ({e})")
        return 0
    print(f"{'R':>3} {'rows':>6} {'fastrl gpu':>11} {'fastrl cpu':>11} {'torch resident':>15} "
          f"{'torch copies':>13} {'torch graph':>12}  ratios torch/fastrl-gpu")
    for R in (1, 16):
        t, version, name = torch_figures(a.members, R, a.reps)
        gpu, cpu = ours.get((True, R)), ours.get((False, R))
        ratios = ", ".join(f"{k.split()[1]} {v / gpu:.2f}x" for k, v in t.items()) if gpu else "-"
        print(f"{R:>3} {a.members * R:>6} {gpu or float('nan'):>9.1f}us {cpu or float('nan'):>9.1f}us "
              f"{t['torch resident']:>13.1f}us {t['torch copies']:>11.1f}us "
              f"{t['torch graph']:>10.1f}us  {ratios}")
    print(f"PyTorch {version} on {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
