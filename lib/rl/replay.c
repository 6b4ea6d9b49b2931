/* The replay of transitions: one arena, rows copied out of committed ring slots. */
#include <string.h>

#include "rl/replay.h"

frl_status frl_replay_create(frl_replay **out, frl_runtime *rt, int64_t capacity, int32_t obs_w,
                             int32_t act_w, int discrete, char *err)
{
    *out = NULL;
    if (capacity < 1)
        return frl_fail(err, FRL_ERR_RANGE, "replay: capacity %lld < 1", (long long)capacity);
    frl_replay *r = frl_alloc(&rt->alloc, sizeof *r, FRL_CACHE_LINE);
    if (!r)
        return frl_fail(err, FRL_ERR_NOMEM, "replay: out of memory");
    r->rt = rt;
    r->capacity = capacity;
    r->obs_w = obs_w;
    r->act_w = act_w;
    size_t n = (size_t)capacity, ow = (size_t)obs_w;
    r->obs = frl_alloc(&rt->alloc, sizeof(float) * n * (2 * ow + 1), 64);
    r->done = frl_alloc(&rt->alloc, n, 64);
    if (discrete)
        r->action = frl_alloc(&rt->alloc, sizeof(int32_t) * n, 64);
    else
        r->box_action = frl_alloc(&rt->alloc, sizeof(float) * n * (size_t)act_w, 64);
    if (!r->obs || !r->done || (!r->action && !r->box_action)) {
        frl_replay_destroy(r);
        return frl_fail(err, FRL_ERR_NOMEM, "replay: out of memory for %lld transitions",
                        (long long)capacity);
    }
    r->next_obs = r->obs + n * ow;
    r->reward = r->next_obs + n * ow;
    *out = r;
    return FRL_OK;
}

void frl_replay_destroy(frl_replay *r)
{
    if (!r)
        return;
    frl_free(&r->rt->alloc, r->obs);
    frl_free(&r->rt->alloc, r->done);
    frl_free(&r->rt->alloc, r->action);
    frl_free(&r->rt->alloc, r->box_action);
    frl_free(&r->rt->alloc, r);
}

static void add_row(frl_replay *r, const float *x, const void *a, float rew, const float *x2,
                    uint8_t done)
{
    size_t i = (size_t)r->next, ow = (size_t)r->obs_w;
    memcpy(r->obs + i * ow, x, sizeof(float) * ow);
    memcpy(r->next_obs + i * ow, x2, sizeof(float) * ow);
    if (r->action)
        r->action[i] = *(const int32_t *)a;
    else
        memcpy(r->box_action + i * (size_t)r->act_w, a, sizeof(float) * (size_t)r->act_w);
    r->reward[i] = rew;
    r->done[i] = done;
    r->next = (r->next + 1) % r->capacity;
    r->size += r->size < r->capacity;
}

void frl_replay_add_slot(frl_replay *r, frl_ring *ring, int32_t slot)
{
    int32_t T = ring->steps, B = ring->envs;
    size_t ow = (size_t)r->obs_w, ab = r->action ? sizeof(int32_t) : sizeof(float) * (size_t)r->act_w;
    const float *obs = frl_ring_at(ring, slot, FRL_RING_OBSERVATIONS);
    const float *boot = frl_ring_at(ring, slot, FRL_RING_BOOTSTRAP_OBS);
    const unsigned char *act = frl_ring_at(ring, slot, FRL_RING_ACTIONS);
    const float *rew = frl_ring_at(ring, slot, FRL_RING_REWARDS);
    const uint8_t *term = frl_ring_at(ring, slot, FRL_RING_TERMINATED);
    const uint8_t *reset = frl_ring_at(ring, slot, FRL_RING_RESET_STEPS);
    for (int32_t t = 0; t < T; t++)
        for (int32_t b = 0; b < B; b++) {
            size_t row = (size_t)t * (size_t)B + (size_t)b;
            if (reset[row])
                continue;
            const float *x2 = t + 1 < T ? obs + (row + (size_t)B) * ow : boot + (size_t)b * ow;
            add_row(r, obs + row * ow, act + row * ab, rew[row], x2, term[row]);
        }
}
