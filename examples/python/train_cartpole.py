#!/usr/bin/env python3
"""Train PPO on CartPole-v1 until the mean return of the last 100 episodes reaches 490,
save the run, and evaluate the checkpoint over 100 greedy episodes.

    FASTRL_LIBRARY=build/lib/libfastrl.so.0 PYTHONPATH=bindings/python \
        python3 examples/python/train_cartpole.py [--out runs/py-cartpole] [--seed 1]
            [--resume | --overwrite]

Ctrl-C stops at the end of the current update, writes the checkpoint and exits; run
again with --resume to continue the same run exactly. An OUT holding a run is refused
unless --resume continues it or --overwrite starts afresh (which deletes the old run's
TensorBoard events, as `fastrl train --overwrite` does: a new file beside them would show
both runs as one). Exits 1 if the evaluation's mean return is below 475.
"""

import argparse
import glob
import os
import sys
import time

import fastrl


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/py-cartpole")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=500_000)
    ap.add_argument("--resume", action="store_true", help="continue OUT/checkpoint.frl")
    ap.add_argument("--overwrite", action="store_true", help="replace a run in OUT")
    args = ap.parse_args()
    if args.resume and args.overwrite:
        ap.error("--resume continues the run in OUT and --overwrite replaces it: give one")
    os.makedirs(args.out, exist_ok=True)
    checkpoint = os.path.join(args.out, "checkpoint.frl")
    events = glob.glob(os.path.join(glob.escape(args.out), "events.out.tfevents.*"))
    held = [p for p in [checkpoint, os.path.join(args.out, "metrics.csv")] if os.path.exists(p)]
    if not args.resume and held + events:
        if not args.overwrite:
            ap.error(f"{args.out} holds a run ({os.path.basename((held + events)[0])}): "
                     "--resume continues it, --overwrite replaces it")
        for p in events:
            os.remove(p)

    if args.resume:
        trainer = fastrl.Trainer.load(checkpoint)
    else:
        # The library's CartPole settings, and stop at the target: 490 for the sampling
        # policy, since one stopped just past 475 can act greedily a little below it (seed 1
        # with the AVX-512 kernels: 463), and the check below is the greedy policy's.
        trainer = fastrl.Trainer("CartPole-v1", target_return=490, seed=args.seed)
    trainer.set_output(args.out)  # metrics.csv, TensorBoard events, settings.txt

    def progress(m):
        print(f"\rupdate {m.update:4d}  steps {m.env_steps:8d}  mean return "
              f"{m.mean_return:6.1f}  {m.steps_per_second:9.0f} steps/s", end="", flush=True)

    t0 = time.perf_counter()
    try:
        m = trainer.train(args.steps, callback=progress, checkpoint=checkpoint)
    except KeyboardInterrupt:
        print(f"\nstopped; the run is saved in {checkpoint} (--resume continues it)")
        return 130
    print(f"\ntrained in {time.perf_counter() - t0:.2f} s: mean return {m.mean_return:.1f} "
          f"after {m.env_steps} steps; checkpoint {checkpoint}")

    policy = fastrl.Policy.load(checkpoint)
    returns = fastrl.evaluate(policy, "CartPole-v1", episodes=100, deterministic=True)
    print(f"evaluation: 100 greedy episodes, mean return {returns.mean():.1f} "
          f"(min {returns.min():.0f}, max {returns.max():.0f})")
    return 0 if returns.mean() >= 475 else 1


if __name__ == "__main__":
    sys.exit(main())
