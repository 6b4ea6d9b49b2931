/* PPO's minibatches by env groups, for data-parallel training across MPI ranks
 * (dist.mode=ddppo): see algo/ppo_groups.c. PPO (algo/ppo.c) holds one of these when
 * distributed; this module sees none of PPO's state, only the arrays it is given. */
#ifndef FRL_ALGO_PPO_GROUPS_H
#define FRL_ALGO_PPO_GROUPS_H

#include <stddef.h>
#include <stdint.h>

#include "core/alloc.h"
#include "core/error.h"

struct frl_dist;

/* A rank's B envs are local groups of group_envs, global groups [first_group, +
 * local_groups) of total_groups across the ranks. A minibatch takes group_mb rows of
 * each group (a shuffle per group), shards never straddle groups, and the gradient is
 * the sum, in global group order, of each group's in-order sum of its shards. */
typedef struct frl_ppo_groups {
    struct frl_dist *dist;
    int32_t T, B, epochs, minibatches, norm_adv;
    int32_t group_envs, local_groups, first_group, total_groups;
    int32_t group_mb, shard_rows, group_shards;
    size_t grad_stride, num_params, stats;  /* a shard's gradient, and its loss sums */
    size_t record;            /* bytes of a group's gradient and loss sums in exchanges */
    unsigned char *send, *recv; /* [local_groups], [total_groups] records */
    /* With `sliced` (dist.reduce) the gradients are reduced by slices, not all-gathered: rank
     * k sums slice k (slice floats of the parameters) of every group's gradient in group
     * order, then the slices are all-gathered. Every element is the same sum in the
     * same order, so the bits are the all-gather's; each rank moves about 2 gradients
     * instead of ranks - 1. */
    int32_t sliced;
    size_t slice, slice_block; /* floats of a slice; bytes a rank sends each peer */
    unsigned char *rs_send, *rs_recv; /* [ranks][slice_block] */
    float *slice_sum, *slices;        /* [slice], [ranks][slice] */
    double *mom_send, *mom_recv; /* a group's (n, mean, m2) of each minibatch's advantages */
    double *mb_moments;       /* [epochs x minibatches x 4]: mean, 1 / (std + 1e-8), 1 / n, n */
    int32_t *group_perm;      /* a group's shuffle [T x group_envs] */
    int64_t cur_update;       /* the minibatch being processed, for the phase messages */
    int32_t cur_epoch, cur_mb;
} frl_ppo_groups;

/* Rows a shard of a minibatch (or a group's part of one) of `rows` rows takes: at least
 * 64, at most 64 shards: few enough gradient buffers, enough tasks for the pool. It
 * depends on the rows alone, never on the thread count. */
int32_t frl_ppo_shard_rows(int32_t rows);

/* The shape. group_envs 0: the rank's B. Fails, naming the setting, when the groups do
 * not divide the envs or the minibatches a group's rows. */
frl_status frl_ppo_groups_init(frl_ppo_groups *g, struct frl_dist *dist, int32_t group_envs,
                               int32_t T, int32_t B, int32_t epochs, int32_t minibatches,
                               int32_t norm_adv, int32_t slices, char *err);
/* Buffers for gradients of num_params floats (grad_stride apart) and stats doubles of
 * loss sums per shard. */
frl_status frl_ppo_groups_alloc(frl_ppo_groups *g, const frl_allocator *al, size_t grad_stride,
                                size_t num_params, size_t stats, char *err);
void frl_ppo_groups_free(frl_ppo_groups *g, const frl_allocator *al);
/* Shard task's rows [*first, + *rows) of the minibatch (never across a group). */
void frl_ppo_groups_span(const frl_ppo_groups *g, int32_t task, int32_t *first, int32_t *rows);
/* The epoch's minibatches into perm (T x B rows): minibatch m is perm[m * M, + M), M =
 * local_groups x group_mb, group by group. */
void frl_ppo_groups_shuffle(frl_ppo_groups *g, int32_t *perm, uint64_t seed, int64_t update,
                            int32_t epoch);
/* Every epoch's and minibatch's advantage normalisation from all ranks' groups (one
 * exchange an update: the shuffles do not depend on the parameters). perm is scratch. */
frl_status frl_ppo_groups_moments(frl_ppo_groups *g, int32_t *perm, const float *adv,
                                  const uint8_t *valid, uint64_t seed, int64_t update, char *err);
/* The current minibatch's (mean, 1 / (std + 1e-8), 1 / n, n). */
const double *frl_ppo_groups_minibatch(const frl_ppo_groups *g);
/* The shards' gradients (grads, [shards][grad_stride]) and loss sums (shard_stats,
 * [shards][stats]) summed per group, exchanged, and summed in global group order into
 * out and out_stats. */
frl_status frl_ppo_groups_reduce(frl_ppo_groups *g, const float *grads, const double *shard_stats,
                                 float *out, double *out_stats, char *err);

#endif
