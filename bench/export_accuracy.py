#!/usr/bin/env python3
"""What int8 weights cost a C export in one run: output error and greedy agreement
against the library's own outputs (which the float32 export matches within 1e-6), and
episode returns, size and latency against the float32 export of the same policy.

    FASTRL_LIBRARY=build/lib/libfastrl.so.0 PYTHONPATH=bindings/python \\
        build-venv/bin/python bench/export_accuracy.py [--episodes 100] [--cc cc]

For each environment a policy is trained (PPO; the step budgets below solve CartPole
and Acrobot and get Pendulum well on its way), exported as C with float32 and with int8
weights, and both exports are compiled (-O2) into shared objects that ctypes calls row
by row. Figures:
- max |d| / scale: the largest difference between the export's outputs (logits or
  means) and the library's on the policy's own recorded observations, over the largest
  |output| there;
- greedy agreement: the share of those observations where the export's greedy action
  is the library's (box actions: within 1% of the action range);
- return: the mean greedy return over --episodes episodes stepped by the library's vec
  env with the export choosing every action;
- weight bytes (the object's .rodata) and the latency probe's ns per act call (the
  generated PREFIX_probe.c, median of five runs) on this machine.
"""

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np

import fastrl

RUNS = [("CartPole-v1", {}, 300_000), ("Acrobot-v1", {}, 500_000),
        ("Pendulum-v1", {"train.num_envs": 16, "train.rollout": 256, "train.lr": 1e-3,
                         "train.gamma": 0.95, "policy.obs_norm": True}, 1_000_000)]
FP = ctypes.POINTER(ctypes.c_float)


def build(cc, prefix):
    flags = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic"]
    subprocess.run([cc, *flags, "-shared", "-fPIC", prefix + ".c", "-o", prefix + ".so",
                    "-lm"], check=True)
    subprocess.run([cc, *flags, "-I", os.path.dirname(prefix), prefix + "_probe.c",
                    prefix + ".c", "-o", prefix + "_probe", "-lm"], check=True)
    runs = []
    for _ in range(5):  # the median of five half-second probes: this machine is shared
        probe = subprocess.run([prefix + "_probe"], check=True, capture_output=True,
                               text=True)
        runs.append(float(probe.stdout.split(" ns per call")[0].split()[-1]))
    ns = sorted(runs)[2]
    subprocess.run([cc, "-std=c99", "-O2", "-c", prefix + ".c", "-o", prefix + ".o"],
                   check=True)
    sections = subprocess.run(["size", "-A", prefix + ".o"], check=True, capture_output=True,
                              text=True).stdout
    rodata = sum(int(line.split()[1]) for line in sections.splitlines()
                 if line.startswith(".rodata"))
    return ctypes.CDLL(prefix + ".so"), ns, rodata


def forward(lib, name, obs, n_out):
    fwd = getattr(lib, name + "_forward")
    fwd.argtypes = [FP, FP, FP]
    out = np.empty((len(obs), n_out), np.float32)
    for i, row in enumerate(np.ascontiguousarray(obs, np.float32)):
        fwd(row.ctypes.data_as(FP), out[i].ctypes.data_as(FP), None)
    return out


def recorded(policy, env, rows=2048):
    v = fastrl.VecEnv(env, 16)
    obs, _ = v.reset(seed=7)
    seen = []
    while sum(len(o) for o in seen) < rows:
        seen.append(np.array(obs, np.float32))
        obs = v.step(policy.act(obs, deterministic=True))[0]
    return np.concatenate(seen)[:rows]


def greedy(out, discrete):
    return np.argmax(out, axis=1) if discrete else out


def episodes(lib, name, env, n, n_out, discrete, low, high):
    v = fastrl.VecEnv(env, 16)
    obs, _ = v.reset(seed=99)
    done = []
    while len(done) < n:
        out = forward(lib, name, obs, n_out)
        act = greedy(out, discrete).astype(np.int32 if discrete else np.float32)
        obs, _, term, trunc, info = v.step(act if discrete else np.clip(act, low, high))
        fin = np.logical_or(term, trunc)
        done += list(np.asarray(v.episode_returns)[fin]) if fin.any() else []
    return float(np.mean(done[:n]))


def measure(env, settings, steps, args, d):
    t = fastrl.Trainer(env, dict(settings, **{"runtime.seed": 1}))
    t.train(steps)
    p = t.policy
    discrete = p._discrete
    obs = recorded(p, env)
    lib_out, _ = p.forward(obs)
    n_out = lib_out.shape[1]
    low = high = None
    if not discrete:
        low, high = p.action_space.low, p.action_space.high
    rows = []
    for weights in ("float32", "int8"):
        name = f"{env.split('-')[0].lower()}_{weights}"
        prefix = os.path.join(d, name)
        p.export(prefix, "c", weights=weights, probe=True)
        lib, ns, rodata = build(args.cc, prefix)
        out = forward(lib, name, obs, n_out)
        err = np.abs(out - lib_out).max() / np.abs(lib_out).max()
        if discrete:
            agree = np.mean(greedy(out, True) == greedy(lib_out, True))
        else:
            tol = 0.01 * (high - low)
            agree = np.mean(np.all(np.abs(np.clip(out, low, high) -
                                          np.clip(lib_out, low, high)) <= tol, axis=1))
        ret = episodes(lib, name, env, args.episodes, n_out, discrete, low, high)
        rows.append((weights, err, agree, ret, rodata, ns))
    return p.num_parameters, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=100)
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    args = ap.parse_args()
    print("env            weights   max|d|/scale  greedy agree  mean return   rodata"
          "  ns/act   (int8/float32)")
    with tempfile.TemporaryDirectory() as d:
        for env, settings, steps in RUNS:
            n, rows = measure(env, settings, steps, args, d)
            f32 = rows[0]
            for w, err, agree, ret, size, ns in rows:
                ratio = (f"  size x{size / f32[4]:.2f}, latency x{ns / f32[5]:.2f}"
                         if w == "int8" else f"  ({n} parameters)")
                print(f"{env:<14} {w:<8} {err:12.2e}  {agree:12.1%}  {ret:11.1f}  "
                      f"{size:8d}  {ns:7.0f}{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
