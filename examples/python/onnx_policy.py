#!/usr/bin/env python3
"""Run a fastrl policy with onnxruntime alone, as a game engine or a service would.

    python3 examples/python/onnx_policy.py [CHECKPOINT] [--episodes 20] [--sample]

Without CHECKPOINT it first trains CartPole-v1 (about a second). fastrl is used only to
export the model; the episodes then run on Gymnasium's own CartPole-v1 with nothing but
onnxruntime and numpy. Greedy actions come from the model's "action" output; --sample
draws from the categorical logits (or the Gaussian's mean and log_std) with numpy's
generator, which is how a host samples (doc/export.md). Exits 1 if the greedy mean
return is below 475.
"""

import argparse
import os
import sys
import tempfile

import numpy as np


def export(checkpoint, path):
    import fastrl

    if checkpoint is None:
        trainer = fastrl.Trainer("CartPole-v1", seed=1, target_return=500)
        trainer.train(300_000)
        policy = trainer.policy
    else:
        policy = fastrl.Policy.load(checkpoint)
    policy.export(path)
    print(f"exported {policy.num_parameters} parameters to {path}")


def sample(outputs, rng, low, high):
    """One action from the model's outputs for a single observation."""
    if "logits" in outputs:
        z = outputs["logits"][0].astype(np.float64)
        p = np.exp(z - z.max())
        return int(rng.choice(len(p), p=p / p.sum()))
    a = outputs["mean"][0] + np.exp(outputs["log_std"][0]) * rng.standard_normal(
        outputs["mean"].shape[1])
    return np.clip(a, low, high).astype(np.float32)


def play(path, episodes, sampled):
    import gymnasium as gym
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    meta = sess.get_modelmeta().custom_metadata_map
    low = np.array(meta["action_low"].split(","), np.float32) if "action_low" in meta else None
    high = np.array(meta["action_high"].split(","), np.float32) if low is not None else None
    env, rng, returns = gym.make("CartPole-v1"), np.random.default_rng(0), []
    for e in range(episodes):
        obs, _ = env.reset(seed=1000 + e)
        total, done = 0.0, False
        while not done:
            out = dict(zip(names, sess.run(None, {"observation": obs[None].astype(np.float32)})))
            act = sample(out, rng, low, high) if sampled else int(out["action"][0])
            obs, r, term, trunc, _ = env.step(act)
            total += r
            done = term or trunc
        returns.append(total)
    return float(np.mean(returns))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint", nargs="?")
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--sample", action="store_true", help="sample instead of greedy")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "policy.onnx")
        export(args.checkpoint, path)
        greedy = play(path, args.episodes, False)
        print(f"onnxruntime, greedy: {args.episodes} episodes, mean return {greedy:.1f}")
        if args.sample:
            print(f"onnxruntime, sampled: mean return {play(path, args.episodes, True):.1f}")
    return 0 if greedy >= 475 else 1


if __name__ == "__main__":
    sys.exit(main())
