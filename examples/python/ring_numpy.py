#!/usr/bin/env python3
"""Read the experience ring's arrays as numpy views, with no copy.

The trainer writes each rollout into its ring (one slot of T steps x B envs). Between
updates, trainer.ring.array(name) is a read-only numpy view of that memory, shaped
[T, B, ...]; the same view shows every later rollout. This program trains CartPole-v1
for a few updates and, after each, computes from the views what the library's metrics
do not show: the share of autoreset rows (masked out of the loss), the reward and value
statistics, and the bootstrap observations. It then fills a ring of its own, as a
producer and a consumer would, through the slot transitions.

    python3 examples/python/ring_numpy.py
"""

import sys

import numpy as np

import fastrl


def main():
    trainer = fastrl.Trainer("CartPole-v1", seed=2)
    ring = trainer.ring
    obs = ring.array("observations")      # float32 [T, B, 4]
    values = ring.array("values")         # float32 [T, B]
    rewards = ring.array("rewards")       # float32 [T, B]
    reset = ring.array("reset_steps")     # bool [T, B]: autoreset rows
    versions = ring.array("policy_version")  # uint64 [T]
    boot = ring.array("bootstrap_obs")    # float32 [B, 4]
    print(f"ring: {ring.slots} slot of T={ring.steps} x B={ring.envs}; observations "
          f"{obs.shape} {obs.dtype}, shares the library's memory: "
          f"{not obs.flags.owndata and not obs.flags.writeable}")

    def after_update(m):
        live = ~reset
        print(f"update {m.update}: policy version {int(versions[0])}, "
              f"autoreset rows {reset.mean():6.2%}, mean value {values[live].mean():7.3f}, "
              f"reward sum {rewards[live].sum():6.0f}, |pole angle| mean "
              f"{np.abs(obs[..., 2][live]).mean():.4f}, bootstrap obs {boot.shape}")
        return m.update < 5

    trainer.train(10**6, callback=after_update)

    # A ring of one's own: write a slot, commit it, read it back, release it.
    env = fastrl.make_vec("CartPole-v1", num_envs=4)
    mine = fastrl.Ring(2, 8, 4, env.single_observation_space, env.single_action_space)
    slot = mine.acquire_write()
    o, _ = env.reset(seed=0)
    slot_obs, slot_act = mine.array("observations", slot), mine.array("actions", slot)
    for t in range(8):
        slot_obs[t] = o            # one copy, straight into the ring
        slot_act[t] = env.action_space.sample()
        o = env.step(slot_act[t])[0]
    mine.commit(slot)
    got = mine.acquire_read()
    print(f"own ring: slot {got} is {mine.slot_state(got)}, first observations "
          f"{mine.array('observations', got)[0, 0]}")
    mine.release(got)
    return 0


if __name__ == "__main__":
    sys.exit(main())
