/* The PPO learner (Schulman et al., 2017) over one ring slot, or IMPALA's V-trace
 * actor-critic (Espeholt et al., 2018) with train.algo=impala: GAE or V-trace, then epochs of
 * shuffled minibatches, each split into fixed-size shards run on the pool. Every shard
 * has its own gradient buffer and the buffers are summed in shard order, so a run
 * gives the same bits on any number of threads. */
#ifndef FRL_ALGO_PPO_H
#define FRL_ALGO_PPO_H

#include "algo/learner.h"
#include "algo/ppo_groups.h"
#include "nn/optim.h"

typedef struct frl_ppo_settings {
    int32_t epochs, minibatches;
    double lr, clip, ent_coef, vf_coef, max_grad_norm, gamma, lambda, adam_eps, target_kl;
    int32_t clip_value, norm_adv, anneal_lr, use_target_kl;
    int32_t vtrace;           /* advantages and value targets by V-trace, not GAE */
    int32_t impala;           /* IMPALA's policy gradient (-A log pi), not PPO's clip */
    int32_t decoupled;        /* PPO on lagged rollouts: clip around the policy at the
                               * update's start, advantages weighted by min(rho_bar, pi/mu) */
    double rho_bar, c_bar;    /* V-trace's truncation levels */
    int32_t bptt;             /* recurrent policies: truncation (0: the rollout) */
    /* dist.mode=ddppo: minibatches by env groups across the ranks (algo/ppo_groups.c) */
    struct frl_dist *dist;    /* NULL: one process, ungrouped */
    int32_t group_envs;       /* dist.group_envs (0: the rank's envs) */
    int32_t reduce_slices;    /* sum the gradients by slices (dist.reduce), not all-gathered */
} frl_ppo_settings;

typedef frl_learn_stats frl_ppo_stats;

enum { FRL_PPO_STAT_COUNT = 6 };

typedef struct frl_ppo {
    frl_policy *p;
    frl_runtime *rt;
    frl_ring *ring;
    frl_ppo_settings s;
    int32_t T, B, N, M;       /* steps, envs, rows per rollout, rows per minibatch */
    int32_t shard_rows, shards;
    int32_t buf_rows;         /* rows of a workspace's gathered arrays (>= shard_rows) */
    size_t grad_stride;       /* floats per shard gradient (padded) */
    float *adv, *ret, *vboot;
    float *log_ratio;         /* V-trace: log pi - log mu of each row */
    double *dec_w;            /* decoupled PPO: each row's truncated ratio, from the
                               * values pass (its epochs then need no exp of their own) */
    uint8_t *valid;
    int32_t *perm;
    float *grads;             /* [shards][grad_stride] */
    float *g;                 /* the reduced gradient */
    float *w_out_in;          /* the weights untransposed, per minibatch */
    frl_adam adam;
    void *dev;                /* runtime.device=cuda: the plugin's learner (ppo_device.c) */
    /* elastic.widths: progressive shrinking after each update (algo/elastic_distill.h) */
    struct frl_elastic_learner *elastic;
    int32_t dev_adam_stale;   /* adam.m/v were set on the host (a load): upload them */
    float **ws;               /* per thread: shard workspace */
    size_t ws_floats;
    double *shard_stats;      /* [shards][FRL_PPO_STAT_COUNT] */
    /* recurrent policies (p->towers > 0): minibatches of whole env columns, each shard
     * shard_cols columns run through time from the rollout's first state */
    int32_t recurrent, bptt, shard_cols;
    int32_t value_cols;       /* columns per task of the value pass */
    int32_t ws_cols;          /* the most columns a task's workspace holds */
    uint8_t *starts;          /* [T x B]: the column's state is zeroed before this step */
    const float *state0;      /* [B x state_w]: the batch's states at the rollout's start */
    int32_t *col_rows;        /* [M]: a minibatch's rows, shard by shard, step-major */
    /* the minibatch being processed */
    int32_t slot;
    const int32_t *mb;
    int32_t mb_rows;
    double adv_mean, adv_inv_std, inv_valid;
    /* dist.mode=ddppo (settings.dist): minibatches by env groups (algo/ppo_groups.h) */
    int32_t grouped;
    frl_ppo_groups groups;
    int32_t steps_used;       /* the slot's collected steps (0: T): later rows are invalid;
                               * set before frl_ppo_values (a frame stack's bootstrap) */
} frl_ppo;

frl_status frl_ppo_init(frl_ppo *l, frl_runtime *rt, frl_policy *p, frl_ring *ring,
                        const frl_ppo_settings *s, char *err);
void frl_ppo_free(frl_ppo *l);

/* The values of the slot's observations, into its VALUES array. The sampler acts with
 * the actor alone; the critic runs here in large batches, with the same parameters
 * and normaliser the rollout saw, and the kernels' results do not depend on batch
 * size, so the numbers are those acting would have given. With V-trace the actor runs
 * too, for the log-ratios of the learner's policy to the one that acted. */
frl_status frl_ppo_values(frl_ppo *l, int32_t slot, char *err);
/* A recurrent policy's: the batch's first states (before frl_ppo_values). */
void frl_ppo_set_state0(frl_ppo *l, const float *state0);
/* Bootstrap values of the slot's final observations, into l->vboot. */
void frl_ppo_bootstrap(frl_ppo *l, int32_t slot);
/* GAE(lambda), or V-trace (settings.vtrace), over the slot into l->adv / l->ret /
 * l->valid. */
void frl_ppo_advantages(frl_ppo *l, int32_t slot);
/* The loss gradient over rows rows_idx[0..rows) into l->g (no optimiser step); adds
 * loss sums to sums (may be NULL). For the gradient checks. */
frl_status frl_ppo_gradient(frl_ppo *l, const int32_t *rows_idx, int32_t rows, double *sums,
                            char *err);
/* One update: epochs of minibatches; update_index counts from 0 of num_updates
 * (learning-rate annealing); seed and update_index choose the shuffles. */
frl_status frl_ppo_update(frl_ppo *l, int32_t slot, int64_t update_index, int64_t num_updates,
                          uint64_t seed, frl_ppo_stats *out, char *err);

/* Shared with the device learner: the minibatch shuffle of an epoch, and the explained
 * variance of the slot's values given l->ret and l->valid. */
void frl_ppo_shuffle(int32_t *perm, int32_t n, uint64_t seed, int64_t update_index, int32_t epoch);
double frl_ppo_explained_variance(const frl_ppo *l, int32_t slot);

#endif
