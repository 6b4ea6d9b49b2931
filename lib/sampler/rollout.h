/* Rollout bookkeeping both samplers share: storing a step's results in the ring, the
 * episode window, reward normalisation, the progress counters, and each env's
 * recurrent state at a rollout's start. */
#ifndef FRL_SAMPLER_ROLLOUT_H
#define FRL_SAMPLER_ROLLOUT_H

#include "env/vec_env.h"
#include "rl/policy.h"
#include "rl/ring.h"

enum { FRL_RECENT_EPISODES = 100 };

/* A trainer's progress, advanced by its sampler (steps, episodes) and by the trainer
 * (updates); checkpoints keep it. */
typedef struct frl_progress {
    int64_t env_steps, updates, rollout_steps, episodes;
    int64_t slots_dropped;      /* rollouts dropped for exceeding sampler.max_lag */
    /* async: rollouts an update took and failed to learn (its error ended that call);
     * they count toward the budget as dropped ones do */
    int64_t lost;
    int32_t started;            /* the envs were reset */
} frl_progress;

typedef struct frl_rollout_book {
    frl_progress pr;
    float recent_return[FRL_RECENT_EPISODES];
    int32_t recent_length[FRL_RECENT_EPISODES];
    /* reward normalisation: discounted return per env and its running variance */
    int32_t reward_norm;
    double gamma;
    double *disc_return;
    double rn_count, rn_mean, rn_m2;
    float rn_scale;
    /* dist.mode=ddppo: the statistics are every rank's, merged by env group, so a step's
     * scale is known only after the rollout: each step stores its groups' (count, mean,
     * m2) of the discounted returns in rn_steps [T x groups x 3], and
     * frl_rollout_scale_rewards applies the scales once all ranks' are in. */
    int32_t rn_group_envs;      /* 0: scale as each step is stored */
    double *rn_steps;
    /* [B x state_w]: the policy's recurrent state of each env now (the ring's slots keep
     * it as it was when their rollouts began); zero-width for a policy without one. */
    int32_t state_w;
    float *state;
} frl_rollout_book;

frl_status frl_rollout_book_init(frl_rollout_book *k, const frl_allocator *al, int32_t B,
                                 int32_t reward_norm, double gamma, int32_t state_w);
void frl_rollout_book_free(frl_rollout_book *k, const frl_allocator *al);
/* A rollout begins in slot for the envs of v (columns first.. of the ring): zero the
 * state of those whose last step was an autoreset, and keep the states in the slot as
 * the rollout's first. */
void frl_rollout_begin_state(frl_rollout_book *k, frl_ring *ring, int32_t slot,
                             const frl_vec_env *v, int32_t first);
/* Fresh agents for the envs of v (after a reset of v): zero recurrent states and zero
 * discounted returns (reward normalisation). */
void frl_rollout_zero_state(frl_rollout_book *k, const frl_vec_env *v, int32_t first);
/* Write the results of the step just taken by vec env v (columns [first, + its envs) of
 * the ring) into row block step of slot; reward normalisation and episodes included. */
void frl_rollout_store_step(frl_rollout_book *k, frl_ring *ring, const frl_vec_env *v,
                            int32_t first, int32_t slot, int32_t step);
/* Env `local` of vec env v takes the sampled action (box actions clipped to the space,
 * as CleanRL's ClipAction does; the ring keeps the unclipped sample). */
void frl_rollout_env_action(const frl_policy *p, frl_vec_env *v, int32_t local, const void *sampled);
/* The monotonic clock in seconds (samplers and the trainer time their phases). */
double frl_now(void);
/* dist.mode=ddppo: defer reward normalisation to frl_rollout_scale_rewards, with groups
 * of group_envs of the B envs and rollouts of T steps (FRL_ERR_NOMEM). */
frl_status frl_rollout_defer_rewards(frl_rollout_book *k, const frl_allocator *al, int32_t B,
                                     int32_t T, int32_t group_envs);
/* The deferred scales: all_steps holds every rank's rn_steps in rank order (ranks x
 * [T x groups x 3]); step t's groups are merged in global order into the running
 * statistics and the step's rewards in slot scaled by the resulting scale. */
void frl_rollout_scale_rewards(frl_rollout_book *k, frl_ring *ring, int32_t slot,
                               const double *all_steps, int32_t ranks);
/* Mean return and length of the last (up to) 100 episodes; NaN before the first. */
void frl_rollout_recent_means(const frl_rollout_book *k, double *ret, double *len);

#endif
