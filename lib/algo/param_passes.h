/* Elementwise passes over a flat parameter vector (summing shards' gradients, an Adam
 * step) split into parts on the runtime's pool, for the learners that compute a
 * minibatch's gradient in shards (PPO, DQN).
 *
 * Each element is computed as in one pass over the vector, so the bits do not depend on
 * the thread count. Below FRL_PARALLEL_PARAMS elements, or on one thread, the pass runs
 * on the calling thread: a dispatch then costs more than the pass. */
#ifndef FRL_ALGO_PARAM_PASSES_H
#define FRL_ALGO_PARAM_PASSES_H

#include <stddef.h>
#include <stdint.h>

#include "core/pool.h"
#include "nn/optim.h"

enum { FRL_PARAM_PARTS = 4, FRL_PARALLEL_PARAMS = 16384 };

/* out[i] = grads[0][i] + grads[1][i] + ... + grads[shards - 1][i], added in that order;
 * shard s's gradient starts at grads + s * stride. */
void frl_params_sum_shards(frl_pool *pool, const float *grads, size_t stride, int32_t shards,
                           float *out, size_t n);

/* frl_adam_begin, then frl_adam_update over [0, n) with gradient g * scale. */
void frl_params_adam(frl_pool *pool, frl_adam *adam, const frl_kernels *k, float *params,
                     const float *g, size_t n, double lr, float scale);

#endif
