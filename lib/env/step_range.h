/* The per-range stepping loop shared by every built-in, written once.
 *
 * frl_step_range_impl and frl_floor_impl are always inlined into each
 * environment's own file with that environment's static step and reset
 * functions as constant arguments, so the compiler inlines the dynamics into
 * the loop: one specialised loop per environment, no indirect call per step. */
#ifndef FRL_ENV_STEP_RANGE_H
#define FRL_ENV_STEP_RANGE_H

#include <float.h>

#include "env/env_class.h"

#if defined(__GNUC__)
#define FRL_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define FRL_ALWAYS_INLINE inline
#endif

/* step: advance one sim by one action; write obs, reward and terminated. */
typedef void (*frl_sim_step_fn)(void *sim, const void *action, float *obs, float *reward,
                                uint8_t *terminated);
typedef void (*frl_sim_reset_fn)(void *sim, frl_rng *rng, float *obs);

/* Bookkeeping for env i after a reset: Gymnasium's next-step autoreset returns the
 * reset observation with reward 0 and both flags 0. */
static FRL_ALWAYS_INLINE void frl_record_reset(const frl_builtin_batch *b, int32_t i)
{
    b->rewards[i] = 0.0f;
    b->terminated[i] = 0;
    b->truncated[i] = 0;
    b->reset_step[i] = 1;
    b->needs_reset[i] = 0;
    b->elapsed[i] = 0;
    b->ep_return[i] = 0.0;
}

/* Bookkeeping for env i after a step: the time limit, which sets truncated
 * independently of terminated as Gymnasium's TimeLimit does, and episode statistics.
 * The count saturates at 2^31 - 1 (set_state takes that count, and an episode without
 * a time limit may run that long): the increment would overflow, undefined, and a
 * count wrapped negative would never reach the limit again. */
static FRL_ALWAYS_INLINE uint8_t frl_record_step(const frl_builtin_batch *b, int32_t i, float reward,
                                             uint8_t term, uint8_t trunc)
{
    int32_t elapsed = b->elapsed[i] + (int32_t)(b->elapsed[i] < INT32_MAX);
    trunc |= (uint8_t)(b->max_episode_steps > 0 && elapsed >= b->max_episode_steps);
    double ret = b->ep_return[i] + (double)reward;
    b->elapsed[i] = elapsed;
    b->ep_return[i] = ret;
    b->rewards[i] = reward;
    b->terminated[i] = term;
    b->truncated[i] = trunc;
    b->reset_step[i] = 0;
    if (term | trunc) {
        b->needs_reset[i] = 1;
        /* finite rewards can sum past FLT_MAX: saturate, as an infinite return in the
         * trainer's window of recent returns made every checkpoint refuse to be written */
        b->done_return[i] = ret > FLT_MAX ? FLT_MAX : ret < -FLT_MAX ? -FLT_MAX : (float)ret;
        b->done_length[i] = elapsed;
    }
    return term | trunc;
}

/* Env i sits this step out (frl_builtin_batch.active): no transition, its state kept. */
static FRL_ALWAYS_INLINE void frl_record_idle(const frl_builtin_batch *b, int32_t i)
{
    b->rewards[i] = 0.0f;
    b->terminated[i] = 0;
    b->truncated[i] = 0;
    b->reset_step[i] = 0;
}

static FRL_ALWAYS_INLINE int32_t frl_step_one_impl(const frl_builtin_batch *b, int32_t i,
                                               int32_t obs_dim, size_t action_bytes,
                                               frl_sim_step_fn step, frl_sim_reset_fn reset)
{
    if (b->active && !b->active[i]) {
        frl_record_idle(b, i);
        return 0;
    }
    void *sim = b->sims + (size_t)i * FRL_SIM_MAX_BYTES;
    float *obs = b->obs + (size_t)i * (size_t)obs_dim;
    if (b->needs_reset[i]) {
        /* The action of an autoreset step is ignored. */
        reset(sim, &b->rngs[i], obs);
        frl_record_reset(b, i);
        return 0;
    }
    const void *action = (const unsigned char *)b->actions + (size_t)i * action_bytes;
    float reward;
    uint8_t term;
    step(sim, action, obs, &reward, &term);
    return frl_record_step(b, i, reward, term, 0);
}

/* Returns the number of episodes that ended in [begin, end). */
static FRL_ALWAYS_INLINE int32_t frl_step_range_impl(const frl_builtin_batch *b, int32_t begin,
                                                 int32_t end, int32_t obs_dim,
                                                 size_t action_bytes, frl_sim_step_fn step,
                                                 frl_sim_reset_fn reset)
{
    int32_t ended = 0;
    for (int32_t i = begin; i < end; i++)
        ended += frl_step_one_impl(b, i, obs_dim, action_bytes, step, reset);
    return ended;
}

static FRL_ALWAYS_INLINE void frl_floor_impl(unsigned char *sims, frl_rng *rngs, int32_t n,
                                            const void *actions, float *obs, float *rewards,
                                            int32_t obs_dim, size_t action_bytes,
                                            frl_sim_step_fn step, frl_sim_reset_fn reset)
{
    for (int32_t i = 0; i < n; i++) {
        void *sim = sims + (size_t)i * FRL_SIM_MAX_BYTES;
        float *o = obs + (size_t)i * (size_t)obs_dim;
        uint8_t term;
        step(sim, (const unsigned char *)actions + (size_t)i * action_bytes, o, &rewards[i], &term);
        if (term)
            reset(sim, &rngs[i], o);
    }
}

#endif
