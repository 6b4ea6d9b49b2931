/* The asynchronous sampler's own query, beside its table (frl_sampler_async). */
#ifndef FRL_SAMPLER_ASYNC_H
#define FRL_SAMPLER_ASYNC_H

#include "sampler/sampler.h"

/* How an async sampler's device inference has loaded weight versions so far: *taken
 * from the learner model's snapshots on the device, *uploaded from the host (both 0 on
 * the CPU). Between train calls only; s must be an async sampler. */
void frl_sampler_device_loads(const frl_sampler *s, int64_t *taken, int64_t *uploaded);

#endif
