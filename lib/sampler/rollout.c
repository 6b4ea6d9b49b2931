/* Rollout bookkeeping shared by the synchronous and asynchronous samplers. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "core/moments.h"
#include "sampler/rollout.h"

double frl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

frl_status frl_rollout_book_init(frl_rollout_book *k, const frl_allocator *al, int32_t B,
                                 int32_t reward_norm, double gamma, int32_t state_w)
{
    memset(k, 0, sizeof *k);
    k->reward_norm = reward_norm;
    k->gamma = gamma;
    /* The return statistics start from Gymnasium's NormalizeReward (and SB3's
     * VecNormalize) prior, variance 1 over a count of 1e-4: from nothing, a first step
     * whose returns are all alike (CartPole's +1, any one env) had variance 0 and scaled
     * its rewards by 1e4, which swamped the first update's values. */
    k->rn_count = 1e-4;
    k->rn_m2 = 1e-4;
    k->rn_scale = 1.0f;
    k->state_w = state_w;
    k->disc_return = frl_alloc(al, sizeof(double) * (size_t)B, 64);
    /* One float at least, so a zero-width state is still a valid pointer; every env
     * starts from the zero state. */
    size_t bytes = sizeof(float) * ((size_t)B * (size_t)state_w + 1);
    k->state = frl_alloc(al, bytes, 64);
    if (!k->disc_return || !k->state)
        return FRL_ERR_NOMEM;
    memset(k->state, 0, bytes);
    return FRL_OK;
}

void frl_rollout_book_free(frl_rollout_book *k, const frl_allocator *al)
{
    frl_free(al, k->disc_return);
    frl_free(al, k->rn_steps);
    frl_free(al, k->state);
    k->disc_return = NULL;
    k->state = NULL;
}

void frl_rollout_begin_state(frl_rollout_book *k, frl_ring *ring, int32_t slot,
                             const frl_vec_env *v, int32_t first)
{
    if (!k->state_w)
        return;
    size_t sw = (size_t)k->state_w;
    const uint8_t *reset = frl_vec_env_reset_steps(v);
    float *s = k->state + (size_t)first * sw;
    for (int32_t b = 0; b < v->n; b++)
        if (reset[b])
            memset(s + (size_t)b * sw, 0, sizeof(float) * sw);
    memcpy(ring->slot[slot].state0 + (size_t)first * sw, s, sizeof(float) * sw * (size_t)v->n);
}

void frl_rollout_zero_state(frl_rollout_book *k, const frl_vec_env *v, int32_t first)
{
    size_t sw = (size_t)k->state_w;
    memset(k->state + (size_t)first * sw, 0, sizeof(float) * sw * (size_t)v->n);
    /* The reset began new episodes: the cut ones' discounted returns must not run on
     * into them (the reward normaliser would count returns no episode had). */
    memset(k->disc_return + first, 0, sizeof(double) * (size_t)v->n);
}

void frl_rollout_env_action(const frl_policy *p, frl_vec_env *v, int32_t local, const void *sampled)
{
    if (p->discrete) {
        ((int32_t *)frl_vec_env_actions(v))[local] = *(const int32_t *)sampled;
        return;
    }
    const float *a = sampled, *lo = p->act_space->low, *hi = p->act_space->high;
    float *dst = (float *)frl_vec_env_actions(v) + (size_t)local * (size_t)p->out_w;
    for (int32_t i = 0; i < p->out_w; i++)
        dst[i] = a[i] < lo[i] ? lo[i] : (a[i] > hi[i] ? hi[i] : a[i]);
}

/* A batch of n discounted returns with mean bm and squared deviations ss into the
 * running statistics, and the scale they give. */
static void merge_returns(frl_rollout_book *k, double n, double bm, double ss)
{
    double tot = k->rn_count + n, dm = bm - k->rn_mean;
    k->rn_mean += dm * n / tot;
    k->rn_m2 += ss + dm * dm * k->rn_count * n / tot;
    k->rn_count = tot;
    k->rn_scale = (float)(1.0 / sqrt(k->rn_m2 / k->rn_count + 1e-8));
}

/* (mean, squared deviations) of d[0..n). */
static void returns_moments(const double *d, int32_t n, double *bm, double *ss)
{
    double s = 0, q = 0;
    for (int32_t b = 0; b < n; b++)
        s += d[b];
    *bm = s / n;
    for (int32_t b = 0; b < n; b++)
        q += (d[b] - *bm) * (d[b] - *bm);
    *ss = q;
}

/* Scale rewards r[0..n) of envs [first, first + n) by the running std of the
 * discounted return (Engstrom et al., 2020); deferred (rn_group_envs), only the step's
 * group moments are kept, into rn_steps' row `step`. */
static void normalise_rewards(frl_rollout_book *k, int32_t first, int32_t n, float *r,
                              const uint8_t *term, const uint8_t *trunc, int32_t step)
{
    double g = k->gamma, bm, ss, *d = k->disc_return + first;
    for (int32_t b = 0; b < n; b++)
        d[b] = d[b] * g + r[b];
    if (k->rn_group_envs) {
        int32_t G = k->rn_group_envs, groups = n / G;
        double *out = k->rn_steps + (size_t)step * (size_t)groups * 3;
        for (int32_t j = 0; j < groups; j++, out += 3) {
            out[0] = G;
            returns_moments(d + (size_t)j * (size_t)G, G, &out[1], &out[2]);
        }
    } else {
        returns_moments(d, n, &bm, &ss);
        merge_returns(k, n, bm, ss);
        for (int32_t b = 0; b < n; b++)
            r[b] *= k->rn_scale;
    }
    for (int32_t b = 0; b < n; b++)
        if (term[b] | trunc[b])
            d[b] = 0;
}

frl_status frl_rollout_defer_rewards(frl_rollout_book *k, const frl_allocator *al, int32_t B,
                                     int32_t T, int32_t group_envs)
{
    k->rn_group_envs = group_envs;
    k->rn_steps = frl_alloc(al, sizeof(double) * (size_t)T * (size_t)(B / group_envs) * 3, 64);
    return k->rn_steps ? FRL_OK : FRL_ERR_NOMEM;
}

void frl_rollout_scale_rewards(frl_rollout_book *k, frl_ring *ring, int32_t slot,
                               const double *all_steps, int32_t ranks)
{
    int32_t T = ring->steps, B = ring->envs, groups = B / k->rn_group_envs;
    float *r = frl_ring_at(ring, slot, FRL_RING_REWARDS);
    for (int32_t t = 0; t < T; t++) {
        double acc[3] = {0, 0, 0};
        for (int32_t q = 0; q < ranks; q++) {
            const double *row = all_steps + ((size_t)q * (size_t)T + (size_t)t) * (size_t)groups * 3;
            for (int32_t j = 0; j < groups; j++)
                frl_merge_moments(acc, row + (size_t)j * 3);
        }
        if (acc[0] > 0) /* every rank stopped before this step (dist.preempt) */
            merge_returns(k, acc[0], acc[1], acc[2]);
        for (int32_t b = 0; b < B; b++)
            r[(size_t)t * (size_t)B + (size_t)b] *= k->rn_scale;
    }
}

static void record_episodes(frl_rollout_book *k, const frl_vec_env *v)
{
    const uint8_t *term = frl_vec_env_terminated(v), *trunc = frl_vec_env_truncated(v);
    const float *ret = frl_vec_env_episode_returns(v);
    const int32_t *len = frl_vec_env_episode_lengths(v);
    for (int32_t b = 0; b < v->n; b++) {
        if (!(term[b] | trunc[b]))
            continue;
        k->recent_return[k->pr.episodes % FRL_RECENT_EPISODES] = ret[b];
        k->recent_length[k->pr.episodes % FRL_RECENT_EPISODES] = len[b];
        k->pr.episodes++;
    }
}

void frl_rollout_store_step(frl_rollout_book *k, frl_ring *ring, const frl_vec_env *v,
                            int32_t first, int32_t slot, int32_t step)
{
    size_t off = (size_t)step * (size_t)ring->envs + (size_t)first, n = (size_t)v->n;
    float *r = (float *)frl_ring_at(ring, slot, FRL_RING_REWARDS) + off;
    uint8_t *term = (uint8_t *)frl_ring_at(ring, slot, FRL_RING_TERMINATED) + off;
    uint8_t *trunc = (uint8_t *)frl_ring_at(ring, slot, FRL_RING_TRUNCATED) + off;
    memcpy(r, frl_vec_env_rewards(v), sizeof(float) * n);
    memcpy(term, frl_vec_env_terminated(v), n);
    memcpy(trunc, frl_vec_env_truncated(v), n);
    memcpy((uint8_t *)frl_ring_at(ring, slot, FRL_RING_RESET_STEPS) + off,
           frl_vec_env_reset_steps(v), n);
    if (k->reward_norm)
        normalise_rewards(k, first, v->n, r, term, trunc, step);
    record_episodes(k, v);
}

void frl_rollout_recent_means(const frl_rollout_book *k, double *ret, double *len)
{
    int64_t n = k->pr.episodes < FRL_RECENT_EPISODES ? k->pr.episodes : FRL_RECENT_EPISODES;
    double sr = 0, sl = 0;
    for (int64_t i = 0; i < n; i++) {
        sr += k->recent_return[i];
        sl += k->recent_length[i];
    }
    *ret = n ? sr / (double)n : NAN;
    *len = n ? sl / (double)n : NAN;
}
