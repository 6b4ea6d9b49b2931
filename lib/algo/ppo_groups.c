/* PPO's minibatches by env groups, for data-parallel training across MPI ranks
 * (dist.mode=ddppo; Wijmans et al., 2020). See the grouped fields of frl_ppo (ppo.h).
 *
 * Why groups: PPO's ordinary minibatch is a shuffle of all rows, so its shards mix every
 * env, and its sums run in an order no split of the envs across ranks can reproduce. A
 * group's rows stay on one rank, and every sum over a minibatch (advantage moments,
 * gradients, loss sums) is a per-group sum in the group's own order, then a sum over
 * groups in global order: one rank with N x E envs and N ranks with E each do the same
 * arithmetic when their groups are the same. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/dist.h"
#include "core/rng.h"
#include "algo/ppo_groups.h"

enum { MOMENTS = 3, MB_FIELDS = 4, STATS = FRL_PPO_STAT_COUNT };

/* Shards of at least 64 rows, at most 64 a group part (as ungrouped PPO's minibatch). */
static int32_t group_shard_rows(int32_t rows)
{
    int32_t s = 64;
    while ((rows + s - 1) / s > 64)
        s *= 2;
    return s;
}

static frl_status check_shape(const frl_ppo *l, int32_t G, char *err)
{
    if (l->recurrent)
        return frl_fail(err, FRL_ERR_UNSUPPORTED, "dist.mode=ddppo: recurrent policies "
                        "(policy.core) do not train distributed yet");
    if (G <= 0 || l->B % G != 0)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "dist.group_envs %d must divide a rank's "
                        "train.num_envs %d", (int)G, (int)l->B);
    if (((int64_t)l->T * G) % l->s.minibatches != 0)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "dist.mode=ddppo: train.minibatches %d "
                        "must divide train.rollout x dist.group_envs = %d (each minibatch takes "
                        "the same share of every group)", (int)l->s.minibatches,
                        (int)(l->T * G));
    return FRL_OK;
}

static frl_status alloc_groups(frl_ppo *l, char *err)
{
    const frl_allocator *al = &l->rt->alloc;
    size_t per_mb = (size_t)l->s.epochs * (size_t)l->s.minibatches * MOMENTS;
    l->group_record = l->grad_stride * sizeof(float) + 8 * sizeof(double);
    l->group_send = frl_alloc(al, l->group_record * (size_t)l->local_groups, 64);
    l->group_recv = frl_alloc(al, l->group_record * (size_t)l->total_groups, 64);
    l->mom_send = frl_alloc(al, sizeof(double) * per_mb * (size_t)l->local_groups, 64);
    l->mom_recv = frl_alloc(al, sizeof(double) * per_mb * (size_t)l->total_groups, 64);
    l->mb_moments = frl_alloc(al, sizeof(double) * (size_t)l->s.epochs *
                                      (size_t)l->s.minibatches * MB_FIELDS, 64);
    l->group_perm = frl_alloc(al, sizeof(int32_t) * (size_t)l->T * (size_t)l->group_envs, 64);
    if (!l->group_perm || !l->group_send || !l->group_recv || !l->mom_send || !l->mom_recv || !l->mb_moments)
        return frl_fail(err, FRL_ERR_NOMEM, "PPO learner: out of memory for %d env groups",
                        (int)l->total_groups);
    return FRL_OK;
}

frl_status frl_ppo_groups_init(frl_ppo *l, char *err)
{
    const frl_dist *d = l->s.dist;
    int32_t G = l->s.group_envs > 0 ? l->s.group_envs : l->B;
    frl_status st = check_shape(l, G, err);
    if (st != FRL_OK)
        return st;
    l->grouped = 1;
    l->group_envs = G;
    l->local_groups = l->B / G;
    l->first_group = d->rank * l->local_groups;
    l->total_groups = d->size * l->local_groups;
    l->group_mb = l->T * G / l->s.minibatches;
    l->shard_rows = group_shard_rows(l->group_mb);
    l->group_shards = (l->group_mb + l->shard_rows - 1) / l->shard_rows;
    l->shards = l->local_groups * l->group_shards;
    l->buf_rows = l->shard_rows;
    return FRL_OK;
}

frl_status frl_ppo_groups_alloc(frl_ppo *l, char *err)
{
    return l->grouped ? alloc_groups(l, err) : FRL_OK;
}

void frl_ppo_groups_free(frl_ppo *l)
{
    const frl_allocator *al = &l->rt->alloc;
    frl_free(al, l->group_send);
    frl_free(al, l->group_recv);
    frl_free(al, l->mom_send);
    frl_free(al, l->mom_recv);
    frl_free(al, l->mb_moments);
    frl_free(al, l->group_perm);
}

void frl_ppo_groups_span(const frl_ppo *l, int32_t task, int32_t *first, int32_t *rows)
{
    int32_t j = task / l->group_shards, k = task % l->group_shards;
    int32_t off = k * l->shard_rows, left = l->group_mb - off;
    *first = j * l->group_mb + off;
    *rows = left < l->shard_rows ? left : l->shard_rows;
}

/* ---- shuffles ---- */

/* Group g's shuffle of its T x G rows for an update's epoch: its own stream, so a group
 * shuffles alike on whichever rank holds it. */
static void shuffle_group(int32_t *perm, int32_t n, uint64_t seed, int64_t update, int32_t epoch,
                          int32_t group)
{
    uint64_t gseed = seed ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(group + 1));
    frl_ppo_shuffle(perm, n, gseed, update, epoch);
}

void frl_ppo_groups_shuffle(frl_ppo *l, uint64_t seed, int64_t update, int32_t epoch)
{
    int32_t G = l->group_envs, n = l->T * G, lg = l->local_groups, gm = l->group_mb;
    for (int32_t j = 0; j < lg; j++) {
        shuffle_group(l->group_perm, n, seed, update, epoch, l->first_group + j);
        /* group-local row q is step q / G of the group's env q % G; minibatch m's rows
         * of group j go to [m][j][group_mb] of l->perm */
        for (int32_t q = 0; q < n; q++) {
            int32_t src = l->group_perm[q], m = q / gm;
            size_t at = ((size_t)m * (size_t)lg + (size_t)j) * (size_t)gm + (size_t)(q % gm);
            l->perm[at] = (src / G) * l->B + j * G + src % G;
        }
    }
}

/* ---- advantage moments ---- */

/* (n, mean, m2) of the valid rows' advantages among rows[0..n). */
static void part_moments(const frl_ppo *l, const int32_t *rows, int32_t n, double *out)
{
    double s = 0, m2 = 0;
    int32_t k = 0;
    for (int32_t r = 0; r < n; r++)
        if (l->valid[rows[r]]) {
            s += l->adv[rows[r]];
            k++;
        }
    double mean = k ? s / k : 0;
    for (int32_t r = 0; r < n; r++)
        if (l->valid[rows[r]])
            m2 += (l->adv[rows[r]] - mean) * (l->adv[rows[r]] - mean);
    out[0] = k;
    out[1] = mean;
    out[2] = m2;
}

/* acc += g (Chan et al.'s pairwise update of count, mean and squared deviations). */
static void merge_moments(double *acc, const double *g)
{
    double na = acc[0], nb = g[0], n = na + nb;
    if (nb == 0)
        return;
    if (na == 0) {
        memcpy(acc, g, sizeof(double) * MOMENTS);
        return;
    }
    double d = g[1] - acc[1];
    acc[1] += d * nb / n;
    acc[2] += g[2] + d * d * na * nb / n;
    acc[0] = n;
}

/* Minibatch (e, m)'s normalisation from every group's moments, in global group order. */
static void minibatch_fields(frl_ppo *l, int32_t e, int32_t m)
{
    int32_t MB = l->s.minibatches, lg = l->local_groups;
    size_t per_rank = (size_t)l->s.epochs * (size_t)MB * (size_t)lg * MOMENTS;
    double acc[MOMENTS] = {0, 0, 0};
    for (int32_t r = 0; r < l->s.dist->size; r++)
        for (int32_t j = 0; j < lg; j++)
            merge_moments(acc, l->mom_recv + (size_t)r * per_rank +
                                   (((size_t)e * (size_t)MB + (size_t)m) * (size_t)lg +
                                    (size_t)j) * MOMENTS);
    double n = acc[0], sd = n > 1 ? sqrt(acc[2] / (n - 1)) : 0;
    double *out = l->mb_moments + ((size_t)e * (size_t)MB + (size_t)m) * MB_FIELDS;
    out[0] = l->s.norm_adv ? acc[1] : 0;
    out[1] = l->s.norm_adv ? 1.0 / (sd + 1e-8) : 1.0;
    out[2] = n > 0 ? 1.0 / n : 0;
    out[3] = n;
}

frl_status frl_ppo_groups_moments(frl_ppo *l, uint64_t seed, int64_t update, char *err)
{
    int32_t E = l->s.epochs, MB = l->s.minibatches, lg = l->local_groups, gm = l->group_mb;
    for (int32_t e = 0; e < E; e++) {
        frl_ppo_groups_shuffle(l, seed, update, e);
        for (int32_t m = 0; m < MB; m++)
            for (int32_t j = 0; j < lg; j++) {
                size_t part = (size_t)m * (size_t)lg + (size_t)j;
                part_moments(l, l->perm + part * (size_t)gm, gm,
                             l->mom_send + ((size_t)e * (size_t)MB * (size_t)lg + part) * MOMENTS);
            }
    }
    char phase[96];
    snprintf(phase, sizeof phase, "the advantage moments of update %lld", (long long)update);
    size_t bytes = sizeof(double) * (size_t)E * (size_t)MB * (size_t)lg * MOMENTS;
    frl_status st = frl_dist_allgather(l->s.dist, l->mom_send, bytes, l->mom_recv, phase, err);
    if (st != FRL_OK)
        return st;
    for (int32_t e = 0; e < E; e++)
        for (int32_t m = 0; m < MB; m++)
            minibatch_fields(l, e, m);
    return FRL_OK;
}

const double *frl_ppo_groups_minibatch(const frl_ppo *l)
{
    return l->mb_moments + ((size_t)l->cur_epoch * (size_t)l->s.minibatches +
                            (size_t)l->cur_mb) * MB_FIELDS;
}

/* ---- gradients ---- */

static float *record_grad(unsigned char *records, const frl_ppo *l, int32_t k)
{
    return (float *)(void *)(records + (size_t)k * l->group_record);
}

static double *record_stats(unsigned char *records, const frl_ppo *l, int32_t k)
{
    return (double *)(void *)(records + (size_t)k * l->group_record +
                              l->grad_stride * sizeof(float));
}

/* Local group j's shards summed in order into its record. */
static void sum_group(frl_ppo *l, int32_t j)
{
    size_t P = l->p->num_params;
    float *g = record_grad(l->group_send, l, j);
    double *st = record_stats(l->group_send, l, j);
    int32_t t0 = j * l->group_shards;
    memcpy(g, l->grads + (size_t)t0 * l->grad_stride, sizeof(float) * P);
    memcpy(st, l->shard_stats + (size_t)t0 * STATS, sizeof(double) * STATS);
    for (int32_t k = 1; k < l->group_shards; k++) {
        const float *gs = l->grads + (size_t)(t0 + k) * l->grad_stride;
        const double *ss = l->shard_stats + (size_t)(t0 + k) * STATS;
        for (size_t i = 0; i < P; i++)
            g[i] += gs[i];
        for (int32_t s = 0; s < STATS; s++)
            st[s] += ss[s];
    }
}

frl_status frl_ppo_groups_reduce(frl_ppo *l, double *stats, char *err)
{
    size_t P = l->p->num_params;
    for (int32_t j = 0; j < l->local_groups; j++)
        sum_group(l, j);
    char phase[128];
    snprintf(phase, sizeof phase, "the gradient exchange of update %lld, epoch %d, minibatch %d",
             (long long)l->cur_update, (int)l->cur_epoch, (int)l->cur_mb);
    frl_status st = frl_dist_allgather(l->s.dist, l->group_send,
                                       l->group_record * (size_t)l->local_groups, l->group_recv,
                                       phase, err);
    if (st != FRL_OK)
        return st;
    memcpy(l->g, record_grad(l->group_recv, l, 0), sizeof(float) * P);
    memcpy(stats, record_stats(l->group_recv, l, 0), sizeof(double) * STATS);
    for (int32_t k = 1; k < l->total_groups; k++) {
        const float *gk = record_grad(l->group_recv, l, k);
        const double *sk = record_stats(l->group_recv, l, k);
        for (size_t i = 0; i < P; i++)
            l->g[i] += gk[i];
        for (int32_t s = 0; s < STATS; s++)
            stats[s] += sk[s];
    }
    return FRL_OK;
}
