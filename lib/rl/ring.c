/* frl_ring: one arena of fixed-size slots with explicit states. */
#include <stdio.h>
#include <string.h>

#include "core/space.h"
#include "env/vec_env.h"
#include "rl/ring.h"

/* Bytes of each array of one slot. */
static void array_bytes(int32_t T, int32_t B, int64_t ow, int64_t aw, int discrete,
                        size_t bytes[FRL_RING_ARRAY_COUNT])
{
    size_t tb = (size_t)T * (size_t)B;
    bytes[FRL_RING_OBSERVATIONS] = tb * (size_t)ow * sizeof(float);
    bytes[FRL_RING_ACTIONS] = tb * (discrete ? sizeof(int32_t) : (size_t)aw * sizeof(float));
    bytes[FRL_RING_LOG_PROBS] = tb * sizeof(float);
    bytes[FRL_RING_VALUES] = tb * sizeof(float);
    bytes[FRL_RING_REWARDS] = tb * sizeof(float);
    bytes[FRL_RING_TERMINATED] = tb;
    bytes[FRL_RING_TRUNCATED] = tb;
    bytes[FRL_RING_RESET_STEPS] = tb;
    bytes[FRL_RING_POLICY_VERSION] = (size_t)T * sizeof(uint64_t);
    bytes[FRL_RING_BOOTSTRAP_OBS] = (size_t)B * (size_t)ow * sizeof(float);
}

static size_t slot_bytes(const size_t bytes[FRL_RING_ARRAY_COUNT])
{
    size_t n = 0;
    for (int i = 0; i < FRL_RING_ARRAY_COUNT; i++)
        n += frl_align_up(bytes[i], FRL_CACHE_LINE);
    return n;
}

static frl_status check_dims(char *err, int32_t slots, int32_t T, int32_t B, const frl_space *o,
                             const frl_space *a, const char *who)
{
    if (!o || !a)
        return frl_fail(err, FRL_ERR_NULL, "%s: %s space is NULL", who, o ? "action" : "observation");
    frl_status st = frl_check_observation_space(o, who, err);
    if (st == FRL_OK) /* as the vec envs whose steps it holds: no image actions */
        st = frl_check_action_space(a, who, err);
    if (st != FRL_OK)
        return st;
    if (slots < 1 || T < 1 || B < 1)
        return frl_fail(err, FRL_ERR_RANGE, "%s: slots %d, steps %d and envs %d must be >= 1", who,
                        (int)slots, (int)T, (int)B);
    /* Keep every byte count far from overflow: at most 2^40 bytes per array. */
    int64_t ow = frl_space_row_floats(o); /* discrete: one float, its index */
    double worst = (double)T * B * (double)(ow > a->n ? ow : a->n) * 4.0 * slots;
    if (worst > 1099511627776.0)
        return frl_fail(err, FRL_ERR_RANGE, "%s: %d slots of %d x %d steps are too large", who,
                        (int)slots, (int)T, (int)B);
    /* and the whole ring too, each array padded to a cache line: 2^31 slots of one step
     * passed the check above and asked for 1.8 TB */
    size_t b[FRL_RING_ARRAY_COUNT];
    array_bytes(T, B, ow, a->n, a->kind == FRL_SPACE_DISCRETE, b);
    double total = (double)slots * (double)(slot_bytes(b) + sizeof(frl_ring_slot));
    if (total > 1099511627776.0)
        return frl_fail(err, FRL_ERR_RANGE, "%s: %d slots of %d x %d steps are too large "
                        "(%.3g bytes in all; at most 2^40)", who, (int)slots, (int)T, (int)B,
                        total);
    return FRL_OK;
}

FRL_API frl_status frl_ring_memory_size(int32_t slots, int32_t steps, int32_t envs,
                                        const frl_space *o, const frl_space *a, size_t *bytes)
{
    if (!bytes)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_ring_memory_size: bytes is NULL");
    frl_status st = check_dims(NULL, slots, steps, envs, o, a, "frl_ring_memory_size");
    if (st != FRL_OK)
        return st;
    size_t b[FRL_RING_ARRAY_COUNT];
    array_bytes(steps, envs, frl_space_row_floats(o), a->n, a->kind == FRL_SPACE_DISCRETE, b);
    *bytes = (size_t)slots * slot_bytes(b) + (size_t)slots * sizeof(frl_ring_slot) +
             sizeof(frl_ring);
    return FRL_OK;
}

static void carve_slots(frl_ring *r, const size_t b[FRL_RING_ARRAY_COUNT])
{
    unsigned char *p = r->arena;
    for (int32_t s = 0; s < r->slots; s++)
        for (int i = 0; i < FRL_RING_ARRAY_COUNT; i++) {
            r->slot[s].array[i] = p;
            r->slot[s].bytes[i] = b[i];
            p += frl_align_up(b[i], FRL_CACHE_LINE);
        }
}

FRL_API frl_status frl_ring_create(frl_ring **out, frl_runtime *rt, int32_t slots,
                                   int32_t steps, int32_t envs, const frl_space *o,
                                   const frl_space *a)
{
    if (out)
        *out = NULL;
    if (!out || !rt)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_ring_create: %s is NULL", out ? "runtime" : "out");
    frl_status st = check_dims(NULL, slots, steps, envs, o, a, "frl_ring_create");
    if (st != FRL_OK)
        return st;
    size_t b[FRL_RING_ARRAY_COUNT];
    array_bytes(steps, envs, frl_space_row_floats(o), a->n, a->kind == FRL_SPACE_DISCRETE, b);
    frl_ring *r = frl_alloc(&rt->alloc, sizeof *r, FRL_CACHE_LINE);
    if (!r)
        return frl_fail(NULL, FRL_ERR_NOMEM, "frl_ring_create: out of memory");
    r->rt = rt;
    r->slots = slots;
    r->steps = steps;
    r->envs = envs;
    r->obs_w = (int32_t)frl_space_row_floats(o);
    r->discrete = a->kind == FRL_SPACE_DISCRETE;
    r->act_w = r->discrete ? 1 : (int32_t)a->n;
    /* On a CUDA runtime the slots are page-locked: observations go to the device
     * straight from a slot, and a rollout to the device learner, asynchronously. */
    char why[FRL_ERRMSG_SIZE / 2] = "";
    r->arena = frl_device_host_alloc(&rt->device, &rt->alloc, (size_t)slots * slot_bytes(b),
                                     why, sizeof why);
    r->slot = frl_alloc(&rt->alloc, sizeof(frl_ring_slot) * (size_t)slots, FRL_CACHE_LINE);
    if (!r->arena || !r->slot) {
        if (r->arena || !why[0])
            snprintf(why, sizeof why, "out of memory");
        frl_device_host_free(&rt->device, &rt->alloc, r->arena);
        frl_free(&rt->alloc, r->slot);
        frl_free(&rt->alloc, r);
        return frl_fail(NULL, FRL_ERR_NOMEM, "frl_ring_create: %d slots of %zu bytes: %s",
                        (int)slots, slot_bytes(b), why);
    }
    carve_slots(r, b);
    if (pthread_mutex_init(&r->lock, NULL) != 0) {
        frl_device_host_free(&rt->device, &rt->alloc, r->arena);
        frl_free(&rt->alloc, r->slot);
        frl_free(&rt->alloc, r);
        return frl_fail(NULL, FRL_ERR_THREAD, "frl_ring_create: cannot initialise a mutex");
    }
    *out = r;
    return FRL_OK;
}

frl_status frl_ring_alloc_state(frl_ring *r, int32_t state_w)
{
    if (state_w <= 0)
        return FRL_OK;
    size_t per = frl_align_up((size_t)r->envs * (size_t)state_w, FRL_CACHE_LINE / sizeof(float));
    r->states = frl_alloc(&r->rt->alloc, sizeof(float) * per * (size_t)r->slots, FRL_CACHE_LINE);
    if (!r->states)
        return frl_fail(r->err, FRL_ERR_NOMEM, "ring: out of memory for the recurrent states of "
                        "%d slots x %d envs", (int)r->slots, (int)r->envs);
    r->state_w = state_w;
    for (int32_t s = 0; s < r->slots; s++)
        r->slot[s].state0 = r->states + per * (size_t)s;
    return FRL_OK;
}

FRL_API void frl_ring_destroy(frl_ring *r)
{
    if (!r)
        return;
    pthread_mutex_destroy(&r->lock);
    frl_free(&r->rt->alloc, r->states);
    frl_device_host_free(&r->rt->device, &r->rt->alloc, r->arena);
    frl_free(&r->rt->alloc, r->slot);
    frl_free(&r->rt->alloc, r);
}

FRL_API int32_t frl_ring_slots(const frl_ring *r)
{
    return r ? r->slots : 0;
}

FRL_API int32_t frl_ring_steps(const frl_ring *r)
{
    return r ? r->steps : 0;
}

FRL_API int32_t frl_ring_envs(const frl_ring *r)
{
    return r ? r->envs : 0;
}

/* The failure this thread just set (frl_last_error()) into the ring's message, under
 * the ring's mutex: frl_ring_array fails from any thread, and the transitions'
 * failures write the same buffer. */
static frl_status keep_failure(frl_ring *r, frl_status st)
{
    pthread_mutex_lock(&r->lock);
    snprintf(r->err, sizeof r->err, "%s", frl_last_error());
    pthread_mutex_unlock(&r->lock);
    return st;
}

static frl_status check_slot(frl_ring *r, int32_t slot, const char *who)
{
    if (slot < 0 || slot >= r->slots)
        return keep_failure(r, frl_fail(NULL, FRL_ERR_RANGE, "%s: slot %d is outside [0, %d)",
                                        who, (int)slot, (int)r->slots));
    return FRL_OK;
}

FRL_API frl_status frl_ring_array(frl_ring *r, int32_t slot, frl_ring_array_id id, void **data,
                                  size_t *bytes)
{
    if (!r)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_ring_array: ring is NULL");
    if (!data || !bytes)
        return keep_failure(r, frl_fail(NULL, FRL_ERR_NULL, "frl_ring_array: %s is NULL",
                                        !data ? "data" : "bytes"));
    frl_status st = check_slot(r, slot, "frl_ring_array");
    if (st != FRL_OK)
        return st;
    if ((int)id < 0 || id >= FRL_RING_ARRAY_COUNT)
        return keep_failure(r, frl_fail(NULL, FRL_ERR_UNKNOWN_NAME,
                                        "frl_ring_array: unknown array id %d", (int)id));
    *data = r->slot[slot].array[id];
    *bytes = r->slot[slot].bytes[id];
    return FRL_OK;
}

FRL_API frl_slot_state frl_ring_slot_state(const frl_ring *r, int32_t slot)
{
    if (!r || slot < 0 || slot >= r->slots)
        return FRL_SLOT_FREE;
    frl_ring *m = (frl_ring *)r;
    pthread_mutex_lock(&m->lock);
    frl_slot_state s = r->slot[slot].state;
    pthread_mutex_unlock(&m->lock);
    return s;
}

static const char *const state_names[] = {"free", "being written", "ready", "being read"};

/* Move slot from state `from` to `to` under the lock. */
static frl_status transition(frl_ring *r, int32_t slot, frl_slot_state from, frl_slot_state to,
                             const char *who)
{
    if (!r)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: ring is NULL", who);
    frl_status st = check_slot(r, slot, who);
    if (st != FRL_OK)
        return st;
    pthread_mutex_lock(&r->lock);
    frl_slot_state now = r->slot[slot].state;
    if (now == from) {
        r->slot[slot].state = to;
        if (to == FRL_SLOT_READY)
            r->slot[slot].commit_seq = r->next_seq++;
    } else {
        /* under the lock: another thread's failure may be writing the message too */
        st = frl_fail(r->err, FRL_ERR_STATE, "%s: slot %d is %s, not %s", who, (int)slot,
                      state_names[now], state_names[from]);
    }
    pthread_mutex_unlock(&r->lock);
    return st;
}

FRL_API frl_status frl_ring_commit(frl_ring *r, int32_t slot)
{
    return transition(r, slot, FRL_SLOT_WRITING, FRL_SLOT_READY, "frl_ring_commit");
}

frl_status frl_ring_abandon(frl_ring *r, int32_t slot)
{
    return transition(r, slot, FRL_SLOT_WRITING, FRL_SLOT_FREE, "frl_ring_abandon");
}

FRL_API frl_status frl_ring_release(frl_ring *r, int32_t slot)
{
    return transition(r, slot, FRL_SLOT_READING, FRL_SLOT_FREE, "frl_ring_release");
}

/* The slot to acquire: the lowest free one, or the oldest ready one. */
static int32_t pick(const frl_ring *r, frl_slot_state want)
{
    int32_t best = -1;
    for (int32_t s = 0; s < r->slots; s++) {
        if (r->slot[s].state != want)
            continue;
        if (best < 0 || (want == FRL_SLOT_READY && r->slot[s].commit_seq < r->slot[best].commit_seq))
            best = s;
        if (want == FRL_SLOT_FREE)
            break;
    }
    return best;
}

static frl_status acquire(frl_ring *r, int32_t *slot, frl_slot_state from, frl_slot_state to,
                          const char *who)
{
    if (!r)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: ring is NULL", who);
    if (!slot)
        return keep_failure(r, frl_fail(NULL, FRL_ERR_NULL, "%s: slot is NULL", who));
    frl_status st = FRL_OK;
    pthread_mutex_lock(&r->lock);
    int32_t s = pick(r, from);
    if (s >= 0)
        r->slot[s].state = to;
    else /* under the lock, as transition's */
        st = frl_fail(r->err, FRL_ERR_STATE, "%s: no slot is %s", who, state_names[from]);
    pthread_mutex_unlock(&r->lock);
    *slot = s;
    return st;
}

int32_t frl_ring_try_acquire_write(frl_ring *r)
{
    pthread_mutex_lock(&r->lock);
    int32_t s = pick(r, FRL_SLOT_FREE);
    if (s >= 0)
        r->slot[s].state = FRL_SLOT_WRITING;
    pthread_mutex_unlock(&r->lock);
    return s;
}

FRL_API frl_status frl_ring_acquire_write(frl_ring *r, int32_t *slot)
{
    return acquire(r, slot, FRL_SLOT_FREE, FRL_SLOT_WRITING, "frl_ring_acquire_write");
}

FRL_API frl_status frl_ring_acquire_read(frl_ring *r, int32_t *slot)
{
    return acquire(r, slot, FRL_SLOT_READY, FRL_SLOT_READING, "frl_ring_acquire_read");
}

FRL_API const char *frl_ring_last_error(const frl_ring *r)
{
    return r ? r->err : "frl_ring_last_error: ring is NULL";
}
