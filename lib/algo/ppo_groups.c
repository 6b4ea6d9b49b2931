/* PPO's minibatches by env groups, for data-parallel training across MPI ranks
 * (dist.mode=ddppo; Wijmans et al., 2020). See frl_ppo_groups (ppo_groups.h).
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
#include "core/moments.h"
#include "core/rng.h"
#include "algo/ppo_groups.h"

enum { MOMENTS = 3, MB_FIELDS = 4 };

int32_t frl_ppo_shard_rows(int32_t rows)
{
    int32_t s = 64;
    while ((rows + s - 1) / s > 64)
        s *= 2;
    return s;
}

frl_status frl_ppo_groups_init(frl_ppo_groups *g, struct frl_dist *dist, int32_t group_envs,
                               int32_t T, int32_t B, int32_t epochs, int32_t minibatches,
                               int32_t norm_adv, int32_t slices, char *err)
{
    int32_t G = group_envs > 0 ? group_envs : B;
    memset(g, 0, sizeof *g);
    if (B % G != 0)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "dist.group_envs %d must divide a rank's "
                        "train.num_envs %d", (int)G, (int)B);
    if (((int64_t)T * G) % minibatches != 0)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "dist.mode=ddppo: train.minibatches %d "
                        "must divide train.rollout x dist.group_envs = %d (each minibatch takes "
                        "the same share of every group)", (int)minibatches, (int)(T * G));
    g->dist = dist;
    g->T = T;
    g->B = B;
    g->epochs = epochs;
    g->minibatches = minibatches;
    g->norm_adv = norm_adv;
    g->group_envs = G;
    g->local_groups = B / G;
    g->first_group = dist->rank * g->local_groups;
    g->total_groups = dist->size * g->local_groups;
    g->group_mb = T * G / minibatches;
    g->shard_rows = frl_ppo_shard_rows(g->group_mb);
    g->group_shards = (g->group_mb + g->shard_rows - 1) / g->shard_rows;
    g->sliced = slices && dist->size > 1;
    return FRL_OK;
}

/* The reduction by slices (dist.reduce): slices of 4-float multiples (a block's doubles
 * stay aligned). */
static frl_status alloc_slices(frl_ppo_groups *g, const frl_allocator *al, char *err)
{
    size_t N = (size_t)g->dist->size, lg = (size_t)g->local_groups;
    g->slice = ((g->num_params + N - 1) / N + 3) / 4 * 4;
    g->slice_block = lg * (g->slice * sizeof(float) + g->stats * sizeof(double));
    g->rs_send = frl_alloc(al, g->slice_block * N, 64);
    g->rs_recv = frl_alloc(al, g->slice_block * N, 64);
    g->slice_sum = frl_alloc(al, sizeof(float) * g->slice, 64);
    g->slices = frl_alloc(al, sizeof(float) * g->slice * N, 64);
    if (!g->rs_send || !g->rs_recv || !g->slice_sum || !g->slices)
        return frl_fail(err, FRL_ERR_NOMEM, "PPO learner: out of memory for the gradient slices");
    return FRL_OK;
}

frl_status frl_ppo_groups_alloc(frl_ppo_groups *g, const frl_allocator *al, size_t grad_stride,
                                size_t num_params, size_t stats, char *err)
{
    size_t per_mb = (size_t)g->epochs * (size_t)g->minibatches * MOMENTS;
    g->grad_stride = grad_stride;
    g->num_params = num_params;
    g->stats = stats;
    g->record = grad_stride * sizeof(float) + stats * sizeof(double);
    if (g->record * (size_t)g->local_groups > 0x7fffffff)
        return frl_fail(err, FRL_ERR_RANGE, "dist.mode=ddppo: a rank's %d groups' gradients "
                        "(%zu bytes) exceed MPI's message size: raise dist.group_envs",
                        (int)g->local_groups, g->record * (size_t)g->local_groups);
    g->send = frl_alloc(al, g->record * (size_t)g->local_groups, 64);
    g->recv = frl_alloc(al, g->record * (size_t)g->total_groups, 64);
    g->mom_send = frl_alloc(al, sizeof(double) * per_mb * (size_t)g->local_groups, 64);
    g->mom_recv = frl_alloc(al, sizeof(double) * per_mb * (size_t)g->total_groups, 64);
    g->mb_moments = frl_alloc(al, sizeof(double) * (size_t)g->epochs * (size_t)g->minibatches *
                                      MB_FIELDS, 64);
    g->group_perm = frl_alloc(al, sizeof(int32_t) * (size_t)g->T * (size_t)g->group_envs, 64);
    if (!g->group_perm || !g->send || !g->recv || !g->mom_send || !g->mom_recv || !g->mb_moments)
        return frl_fail(err, FRL_ERR_NOMEM, "PPO learner: out of memory for %d env groups",
                        (int)g->total_groups);
    return g->sliced ? alloc_slices(g, al, err) : FRL_OK;
}

void frl_ppo_groups_free(frl_ppo_groups *g, const frl_allocator *al)
{
    frl_free(al, g->send);
    frl_free(al, g->recv);
    frl_free(al, g->mom_send);
    frl_free(al, g->mom_recv);
    frl_free(al, g->mb_moments);
    frl_free(al, g->group_perm);
    frl_free(al, g->rs_send);
    frl_free(al, g->rs_recv);
    frl_free(al, g->slice_sum);
    frl_free(al, g->slices);
    memset(g, 0, sizeof *g);
}

void frl_ppo_groups_span(const frl_ppo_groups *g, int32_t task, int32_t *first, int32_t *rows)
{
    int32_t j = task / g->group_shards, k = task % g->group_shards;
    int32_t off = k * g->shard_rows, left = g->group_mb - off;
    *first = j * g->group_mb + off;
    *rows = left < g->shard_rows ? left : g->shard_rows;
}

/* ---- shuffles ---- */

/* Group `group`'s shuffle of its T x G rows for an update's epoch: a stream of its
 * own, so a group shuffles alike on whichever rank holds it. */
static void shuffle_group(int32_t *perm, int32_t n, uint64_t seed, int64_t update, int32_t epoch,
                          int32_t group)
{
    uint64_t gseed = seed ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(group + 1));
    frl_rng r = frl_rng_stream(gseed, 0x7070000000000000ULL + (uint64_t)update * 4096u +
                                          (uint64_t)epoch);
    frl_rng_permutation(&r, perm, n);
}

void frl_ppo_groups_shuffle(frl_ppo_groups *g, int32_t *perm, uint64_t seed, int64_t update,
                            int32_t epoch)
{
    int32_t G = g->group_envs, n = g->T * G, lg = g->local_groups, gm = g->group_mb;
    for (int32_t j = 0; j < lg; j++) {
        shuffle_group(g->group_perm, n, seed, update, epoch, g->first_group + j);
        /* group-local row q is step q / G of the group's env q % G; minibatch m's rows
         * of group j go to [m][j][group_mb] of perm */
        for (int32_t q = 0; q < n; q++) {
            int32_t src = g->group_perm[q], m = q / gm;
            size_t at = ((size_t)m * (size_t)lg + (size_t)j) * (size_t)gm + (size_t)(q % gm);
            perm[at] = (src / G) * g->B + j * G + src % G;
        }
    }
}

/* ---- advantage moments ---- */

/* (n, mean, m2) of the valid rows' advantages among rows[0..n). */
static void part_moments(const int32_t *rows, int32_t n, const float *adv, const uint8_t *valid,
                         double *out)
{
    double s = 0, m2 = 0;
    int32_t k = 0;
    for (int32_t r = 0; r < n; r++)
        if (valid[rows[r]]) {
            s += adv[rows[r]];
            k++;
        }
    double mean = k ? s / k : 0;
    for (int32_t r = 0; r < n; r++)
        if (valid[rows[r]])
            m2 += (adv[rows[r]] - mean) * (adv[rows[r]] - mean);
    out[0] = k;
    out[1] = mean;
    out[2] = m2;
}

/* Minibatch (e, m)'s normalisation from every group's moments, in global group order. */
static void minibatch_fields(frl_ppo_groups *g, int32_t e, int32_t m)
{
    int32_t MB = g->minibatches, lg = g->local_groups;
    size_t per_rank = (size_t)g->epochs * (size_t)MB * (size_t)lg * MOMENTS;
    double acc[MOMENTS] = {0, 0, 0};
    for (int32_t r = 0; r < g->dist->size; r++)
        for (int32_t j = 0; j < lg; j++)
            frl_merge_moments(acc, g->mom_recv + (size_t)r * per_rank +
                                   (((size_t)e * (size_t)MB + (size_t)m) * (size_t)lg +
                                    (size_t)j) * MOMENTS);
    double n = acc[0], sd = n > 1 ? sqrt(acc[2] / (n - 1)) : 0;
    double *out = g->mb_moments + ((size_t)e * (size_t)MB + (size_t)m) * MB_FIELDS;
    out[0] = g->norm_adv ? acc[1] : 0;
    out[1] = g->norm_adv ? 1.0 / (sd + 1e-8) : 1.0;
    out[2] = n > 0 ? 1.0 / n : 0;
    out[3] = n;
}

frl_status frl_ppo_groups_moments(frl_ppo_groups *g, int32_t *perm, const float *adv,
                                  const uint8_t *valid, uint64_t seed, int64_t update, char *err)
{
    int32_t E = g->epochs, MB = g->minibatches, lg = g->local_groups, gm = g->group_mb;
    for (int32_t e = 0; e < E; e++) {
        frl_ppo_groups_shuffle(g, perm, seed, update, e);
        for (int32_t m = 0; m < MB; m++)
            for (int32_t j = 0; j < lg; j++) {
                size_t part = (size_t)m * (size_t)lg + (size_t)j;
                part_moments(perm + part * (size_t)gm, gm, adv, valid,
                             g->mom_send + ((size_t)e * (size_t)MB * (size_t)lg + part) * MOMENTS);
            }
    }
    char phase[96];
    snprintf(phase, sizeof phase, "the advantage moments of update %lld", (long long)update);
    size_t bytes = sizeof(double) * (size_t)E * (size_t)MB * (size_t)lg * MOMENTS;
    frl_status st = frl_dist_allgather(g->dist, g->mom_send, bytes, g->mom_recv, phase, err);
    if (st != FRL_OK)
        return st;
    for (int32_t e = 0; e < E; e++)
        for (int32_t m = 0; m < MB; m++)
            minibatch_fields(g, e, m);
    return FRL_OK;
}

const double *frl_ppo_groups_minibatch(const frl_ppo_groups *g)
{
    return g->mb_moments + ((size_t)g->cur_epoch * (size_t)g->minibatches + (size_t)g->cur_mb) *
                               MB_FIELDS;
}

/* ---- gradients ---- */

static float *record_grad(unsigned char *records, const frl_ppo_groups *g, int32_t k)
{
    return (float *)(void *)(records + (size_t)k * g->record);
}

static double *record_stats(unsigned char *records, const frl_ppo_groups *g, int32_t k)
{
    return (double *)(void *)(records + (size_t)k * g->record + g->grad_stride * sizeof(float));
}

/* Local group j's shards summed in order into its record. */
static void sum_group(frl_ppo_groups *g, int32_t j, const float *grads, const double *shard_stats)
{
    size_t P = g->num_params, S = g->stats;
    float *out = record_grad(g->send, g, j);
    double *st = record_stats(g->send, g, j);
    int32_t t0 = j * g->group_shards;
    memcpy(out, grads + (size_t)t0 * g->grad_stride, sizeof(float) * P);
    memcpy(st, shard_stats + (size_t)t0 * S, sizeof(double) * S);
    for (int32_t k = 1; k < g->group_shards; k++) {
        const float *gs = grads + (size_t)(t0 + k) * g->grad_stride;
        const double *ss = shard_stats + (size_t)(t0 + k) * S;
        for (size_t i = 0; i < P; i++)
            out[i] += gs[i];
        for (size_t s = 0; s < S; s++)
            st[s] += ss[s];
    }
}

/* Slice k of parameters [0, P): its first element and length. */
static void slice_span(const frl_ppo_groups *g, int32_t k, size_t *lo, size_t *len)
{
    size_t a = (size_t)k * g->slice, b = a + g->slice;
    *lo = a < g->num_params ? a : g->num_params;
    *len = (b < g->num_params ? b : g->num_params) - *lo;
}

/* Block for rank k: slice k of each local group's gradient (zero-padded), then each
 * group's loss sums. */
static void fill_slice_block(frl_ppo_groups *g, int32_t k)
{
    unsigned char *block = g->rs_send + (size_t)k * g->slice_block;
    double *stats = (double *)(void *)(block + (size_t)g->local_groups * g->slice * sizeof(float));
    size_t lo, len;
    slice_span(g, k, &lo, &len);
    for (int32_t j = 0; j < g->local_groups; j++) {
        float *dst = (float *)(void *)block + (size_t)j * g->slice;
        memcpy(dst, record_grad(g->send, g, j) + lo, sizeof(float) * len);
        memset(dst + len, 0, sizeof(float) * (g->slice - len));
        memcpy(stats + (size_t)j * g->stats, record_stats(g->send, g, j), sizeof(double) * g->stats);
    }
}

/* This rank's slice summed over every group in global order (rank by rank, each rank's
 * groups in order), and every group's loss sums likewise into out_stats. */
static void sum_slices(frl_ppo_groups *g, double *out_stats)
{
    size_t lg = (size_t)g->local_groups, S = g->stats;
    for (int32_t r = 0; r < g->dist->size; r++) {
        const unsigned char *block = g->rs_recv + (size_t)r * g->slice_block;
        const double *stats = (const double *)(const void *)(block + lg * g->slice * sizeof(float));
        for (size_t j = 0; j < lg; j++) {
            const float *src = (const float *)(const void *)block + j * g->slice;
            int first = r == 0 && j == 0;
            for (size_t i = 0; i < g->slice; i++)
                g->slice_sum[i] = first ? src[i] : g->slice_sum[i] + src[i];
            for (size_t s = 0; s < S; s++)
                out_stats[s] = first ? stats[j * S + s] : out_stats[s] + stats[j * S + s];
        }
    }
}

static frl_status reduce_by_slices(frl_ppo_groups *g, float *out, double *out_stats,
                                   const char *phase, char *err)
{
    for (int32_t k = 0; k < g->dist->size; k++)
        fill_slice_block(g, k);
    frl_status st = frl_dist_alltoall(g->dist, g->rs_send, g->slice_block, g->rs_recv, phase, err);
    if (st != FRL_OK)
        return st;
    sum_slices(g, out_stats);
    st = frl_dist_allgather(g->dist, g->slice_sum, sizeof(float) * g->slice, g->slices, phase, err);
    for (int32_t k = 0; st == FRL_OK && k < g->dist->size; k++) {
        size_t lo, len;
        slice_span(g, k, &lo, &len);
        memcpy(out + lo, g->slices + (size_t)k * g->slice, sizeof(float) * len);
    }
    return st;
}

frl_status frl_ppo_groups_reduce(frl_ppo_groups *g, const float *grads, const double *shard_stats,
                                 float *out, double *out_stats, char *err)
{
    size_t P = g->num_params, S = g->stats;
    for (int32_t j = 0; j < g->local_groups; j++)
        sum_group(g, j, grads, shard_stats);
    char phase[128];
    snprintf(phase, sizeof phase, "the gradient exchange of update %lld, epoch %d, minibatch %d",
             (long long)g->cur_update, (int)g->cur_epoch, (int)g->cur_mb);
    if (g->sliced)
        return reduce_by_slices(g, out, out_stats, phase, err);
    frl_status st = frl_dist_allgather(g->dist, g->send, g->record * (size_t)g->local_groups,
                                       g->recv, phase, err);
    if (st != FRL_OK)
        return st;
    memcpy(out, record_grad(g->recv, g, 0), sizeof(float) * P);
    memcpy(out_stats, record_stats(g->recv, g, 0), sizeof(double) * S);
    for (int32_t k = 1; k < g->total_groups; k++) {
        const float *gk = record_grad(g->recv, g, k);
        const double *sk = record_stats(g->recv, g, k);
        for (size_t i = 0; i < P; i++)
            out[i] += gk[i];
        for (size_t s = 0; s < S; s++)
            out_stats[s] += sk[s];
    }
    return FRL_OK;
}
