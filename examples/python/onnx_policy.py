#!/usr/bin/env python3
"""Run a fastrl policy with onnxruntime alone, as a game engine or a service would.

    python3 examples/python/onnx_policy.py [CHECKPOINT [--env ENV]] [--episodes 20]
        [--sample] [--min-return R]

Without CHECKPOINT it first trains CartPole-v1 (about a second). fastrl is used only to
export the model; the episodes then run on Gymnasium's own environment with nothing but
onnxruntime and numpy. CHECKPOINT is any saved policy or trainer checkpoint whose
observation is a vector (or a discrete index) and whose action is discrete or a box:
ENV (default CartPole-v1) names the Gymnasium environment to play, which must have the
observation width and the actions the model was exported with (read from the model;
a mismatch is refused before playing). A recurrent policy's state is carried from step
to step. Image observations are not supported here (Gymnasium has no fastrl pixel env).

Greedy actions come from the model's "action" output (a Gaussian's mean, clipped to the
action bounds); --sample draws from the categorical logits (or the Gaussian's mean and
log_std) with numpy's generator, which is how a host samples (doc/export.md); a
Q-policy (DQN's) has nothing to sample, so it plays greedily there too. Exits 1
if the greedy mean return is below R (default: 475 for the CartPole-v1 trained here,
no threshold for a CHECKPOINT).
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
    """One action from the model's outputs for a single observation (a Q-network has no
    distribution to draw from: its greedy action; epsilon is the host's to add)."""
    if "q" in outputs:
        return int(outputs["action"][0])
    if "logits" in outputs:
        z = outputs["logits"][0].astype(np.float64)
        p = np.exp(z - z.max())
        return int(rng.choice(len(p), p=p / p.sum()))
    a = outputs["mean"][0] + np.exp(outputs["log_std"][0]) * rng.standard_normal(
        outputs["mean"].shape[1])
    return np.clip(a, low, high).astype(np.float32)


def greedy(outputs, low, high):
    a = outputs["action"][0]
    if outputs["action"].dtype == np.int64:
        return int(a)
    return np.clip(a, low, high).astype(np.float32)


def check_fits(sess, env, name):
    """Refuse a model the environment cannot feed or obey, saying which part differs."""
    import gymnasium as gym

    inputs = {i.name: i for i in sess.get_inputs()}
    obs_in = inputs["observation"]
    if obs_in.type != "tensor(float)" or len(obs_in.shape) != 2 or "vector" in inputs:
        sys.exit(f"onnx_policy.py: the model's observation is {obs_in.type} of shape "
                 f"{obs_in.shape}: an image policy, which this example does not play")
    space, width = env.observation_space, obs_in.shape[1]
    want = 1 if isinstance(space, gym.spaces.Discrete) else int(np.prod(space.shape))
    if width != want:
        sys.exit(f"onnx_policy.py: the model reads {width} observation values, {name} gives "
                 f"{want}: give --env the environment the policy was trained on")
    outs = {o.name: o for o in sess.get_outputs()}
    if "q" in outs or "logits" in outs:
        n = outs["q" if "q" in outs else "logits"].shape[1]
        ok = isinstance(env.action_space, gym.spaces.Discrete) and env.action_space.n == n
        what = f"{n} discrete actions"
    else:
        n = outs["mean"].shape[1]
        ok = isinstance(env.action_space, gym.spaces.Box) and env.action_space.shape == (n,)
        what = f"a box of {n} actions"
    if not ok:
        sys.exit(f"onnx_policy.py: the model chooses {what}, {name}'s action space is "
                 f"{env.action_space}: give --env the environment the policy was trained on")


def play(path, env_name, episodes, sampled):
    import gymnasium as gym
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    env, rng, returns = gym.make(env_name), np.random.default_rng(0), []
    check_fits(sess, env, env_name)
    names = [o.name for o in sess.get_outputs()]
    inputs = {i.name: i for i in sess.get_inputs()}
    state_w = inputs["state"].shape[1] if "state" in inputs else 0
    meta = sess.get_modelmeta().custom_metadata_map
    low = np.array(meta["action_low"].split(","), np.float32) if "action_low" in meta else None
    high = np.array(meta["action_high"].split(","), np.float32) if low is not None else None
    for e in range(episodes):
        obs, _ = env.reset(seed=1000 + e)
        state = np.zeros((1, state_w), np.float32)  # zeros start a recurrent episode
        total, done = 0.0, False
        while not done:
            feed = {"observation": np.asarray(obs, np.float32).reshape(1, -1)}
            if state_w:
                feed["state"] = state
            out = dict(zip(names, sess.run(None, feed)))
            state = out.get("state_out", state)
            act = sample(out, rng, low, high) if sampled else greedy(out, low, high)
            obs, r, term, trunc, _ = env.step(act)
            total += r
            done = term or trunc
        returns.append(total)
    return float(np.mean(returns))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint", nargs="?")
    ap.add_argument("--env", default="CartPole-v1",
                    help="the Gymnasium environment to play (default CartPole-v1)")
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--sample", action="store_true", help="sample instead of greedy")
    ap.add_argument("--min-return", type=float, default=None,
                    help="exit 1 below this greedy mean return (default: 475 without "
                         "CHECKPOINT, else none)")
    args = ap.parse_args()
    if args.checkpoint is None and args.env != "CartPole-v1":
        ap.error("--env needs a CHECKPOINT (without one, CartPole-v1 is trained)")
    floor = args.min_return
    if floor is None and args.checkpoint is None:
        floor = 475
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "policy.onnx")
        export(args.checkpoint, path)
        mean = play(path, args.env, args.episodes, False)
        print(f"onnxruntime, greedy: {args.episodes} episodes, mean return {mean:.1f}")
        if args.sample:
            sampled = play(path, args.env, args.episodes, True)
            print(f"onnxruntime, sampled: mean return {sampled:.1f}")
    return 0 if floor is None or mean >= floor else 1


if __name__ == "__main__":
    sys.exit(main())
