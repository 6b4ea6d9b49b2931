/* The asynchronous sampler's own query, beside its table (frl_sampler_async).
 *
 * Checkpoints. Between train calls an async trainer saves as a sync one does, plus each
 * group's vec env ("env.g<g>.*" sections): the envs and their recurrent states as they
 * are. Work in flight is not saved: rollouts being written (a train call stopped by
 * frl_trainer_request_stop leaves groups inside one) and committed rollouts the learner
 * has not taken (at most sampler.slots). A continued run starts new rollouts from the
 * saved env states with the saved weights (republished to acting at its first call),
 * version and replay, and draws actions on from the saved sampling counter
 * (pr.rollout_steps, the largest counter any group reached); the dropped steps were
 * taken, and env_steps (steps taken) counts them, but they are never learned from. A
 * group stopped between acting and stepping has a recurrent state one step ahead of its
 * envs; it acts again on the same observation after the load. Async runs are not reproducible, so a
 * continued run matches an uninterrupted one in distribution, not bit for bit. */
#ifndef FRL_SAMPLER_ASYNC_H
#define FRL_SAMPLER_ASYNC_H

#include "sampler/sampler.h"

/* How an async sampler's device inference has loaded weight versions so far: *taken
 * from the learner model's snapshots on the device, *uploaded from the host (both 0 on
 * the CPU). Between train calls only; s must be an async sampler. */
void frl_sampler_device_loads(const frl_sampler *s, int64_t *taken, int64_t *uploaded);

#endif
