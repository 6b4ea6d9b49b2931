/* The asynchronous sampler (sampler.mode=async): environment stepping, batched
 * inference and the learner run at the same time (Sample Factory's roles, SEED RL's
 * central inference).
 *
 * Work is split into tasks that any of the runtime's threads may take:
 *   STEP(g)  step group g's vec env and store the results in the ring;
 *   ACT(gs)  on a device: gather the observations of every group waiting for actions
 *            into one batch and run the actor on the acting weights;
 *   SAMPLE   a piece of that batch's rows: sample actions, write them back (sampling
 *            costs a device batch more than its forward, so idle threads share it);
 *            on the CPU: one piece of a group's rows (ACT_ROWS), so that every idle
 *            thread infers, as the sync sampler's inference spreads over the pool;
 *   LEARN    train on the oldest complete rollout (only the thread that called
 *            train, so the metrics callback runs where the caller expects it).
 * Each group cycles ACT, STEP, ACT, ... through the T steps of its rollout; with K
 * groups, one group's inference overlaps another's stepping (double-buffered sampling).
 * All groups write the same rollout (a [T x B] ring slot, group g in its own columns);
 * the last group to finish it commits the slot.
 *
 * Why it cannot deadlock: every task runs without the scheduler lock and takes no
 * other lock except the ring's and the acting weights' (each held for a copy and never
 * while waiting). The only waits are (1) a thread with nothing to do, woken by every
 * task's end, (2) a group with no free slot, which needs the learner; the learner runs
 * on the caller's thread, which never waits without a timeout, and it frees a slot
 * with every rollout it takes, and (3) the learner publishing weights, which waits for
 * readers that hold the old buffer for one batch and wait on nothing (a device batch
 * holds it until its last SAMPLE piece, a task any thread but the publishing one can
 * take, and takes even after a stop; with one thread the batch samples inside its ACT
 * task). The group that is
 * furthest behind always owns an open slot, so some rollout always completes. The
 * sample_done unpin, under the scheduler lock, takes the weights' lock inside it; the
 * weights' lock is never held while the scheduler lock is taken. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/device.h"
#include "env/vec_step.h"
#include "rl/policy_rnn.h"
#include "rl/weights.h"
#include "sampler/async.h"

enum phase { PH_OPEN, PH_ACT, PH_STEP, PH_BUSY };

typedef struct group {
    int32_t phase;
    int32_t t;             /* next step of the rollout */
    /* CPU inference in pieces (PH_ACT): the next row to hand out, the rows not yet
     * acted, and the oldest acting version among the pieces done. */
    int32_t act_next, act_left;
    uint64_t act_version;
    int64_t seq;           /* the rollout (counted from the run's start) being written */
    int32_t slot;
    int64_t acts;          /* inference calls so far: the sampling counter */
    int32_t restart;       /* its step failed: reset its envs before acting again */
} group;

/* A rollout being written; record seq % slots. */
typedef struct rollout {
    int64_t seq;           /* -1: none */
    int32_t slot;
    int32_t groups_done;
} rollout;

/* Per thread: gathered observations, inference workspace, the groups of its batch. */
typedef struct act_scratch {
    float *obs;
    float *ws;
    int32_t picked[FRL_MAX_GROUPS];
} act_scratch;

/* One train call's scheduler, shared by every trainer trained in it (one, or several
 * with frl_trainer_train_many). */
typedef struct frl_run {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    _Atomic uint64_t events; /* bumped with every broadcast, for spinning waiters */
    double spin_s;
    _Atomic int32_t updating; /* learners inside an update: their shards come soon */
    int32_t stop;
    frl_status status;
    int32_t failed;          /* the trainer whose error ends the run */
    char err[FRL_ERRMSG_SIZE];
    struct async_sampler *m[FRL_MAX_GROUPS];
    int32_t count;
    int32_t rr;              /* where the next search for a task starts */
    frl_pool *pool;
} frl_run;

typedef struct async_sampler {
    frl_sampler base;      /* base.h: the trainer it samples for */
    frl_sampler_host *h;   /* = base.h */
    frl_run *run;          /* the run in progress (NULL between train calls) */
    int32_t index;         /* in the run */
    int32_t done;          /* reached its budget or target in this run */
    group g[FRL_MAX_GROUPS];
    rollout *open;
    int32_t slots;
    int64_t committed;     /* rollouts committed since the run's start */
    int64_t budget;        /* rollouts this train call may open */
    int64_t num_updates;   /* for learning-rate annealing */
    int32_t ready;         /* committed, not yet taken by the learner */
    /* The update in progress (learning != 0): its rollout, when it began, and how long
     * updates take (a running mean), to tell whether the sampler is ahead of it. */
    int32_t learning;
    int64_t learn_seq;
    double learn_start, learn_len;
    int32_t serial_steps;  /* host batch callbacks: one STEP at a time */
    int32_t stepping;      /* STEP tasks running */
    int32_t sampler_failed; /* a STEP or ACT failed: its rollouts are abandoned at the end */
    int32_t numbered;      /* rollouts numbered on from the trainer's (a loaded run's) */
    int32_t begun;         /* start_groups ran in this process */
    /* start_groups calls made while `committed` was resets_at (a failed group's reset
     * streams are drawn from both) */
    int64_t resets_at, resets_here;
    frl_weights w;
    int32_t threads, chunk;
    act_scratch *scratch;
    /* runtime.device=cuda: inference on a model of its own (its own stream, so batches
     * run beside the learner's epochs), one batch at a time, between page-locked
     * buffers; a single group's observations go up straight from the (page-locked) ring
     * slot. */
    frl_dev_model *dev;
    float *dev_obs, *dev_out;
    /* a recurrent policy's batch: its rows' states and reset flags, gathered from the
     * groups' rows of the book and scattered back once the step succeeded */
    float *dev_state;
    uint8_t *dev_reset;
    uint64_t dev_version;  /* of the acting weights in dev; ~0: must upload */
    int32_t dev_acting;    /* a device batch is running or being sampled */
    /* A device batch whose forward is done: its rows are sampled in pieces (SAMPLE
     * tasks) by any threads, on the acting weights it pinned, which the last piece
     * unpins. */
    struct {
        int32_t picked[FRL_MAX_GROUPS], count, rows;
        int32_t next, left;  /* rows handed out, rows not yet sampled */
        frl_weights_view wv;
    } db;
    int64_t dev_takes, dev_uploads; /* weight versions taken from a snapshot, uploaded */
    double busy_env, busy_act, learner_wait; /* seconds since the last update */
} async_sampler;

/* Wake every waiting thread (called with the lock held). */
static void notify(frl_run *r)
{
    atomic_fetch_add_explicit(&r->events, 1, memory_order_relaxed);
    pthread_cond_broadcast(&r->wake);
}

/* ---- creation ---- */

static frl_status alloc_scratch(async_sampler *a, const frl_policy *p, char *err)
{
    frl_allocator *al = &a->h->rt->alloc;
    a->scratch = frl_alloc(al, sizeof(act_scratch) * (size_t)a->threads, FRL_CACHE_LINE);
    if (!a->scratch)
        return frl_fail(err, FRL_ERR_NOMEM, "async sampler: out of memory");
    size_t obs = (size_t)a->h->B * (size_t)p->obs_w, ws = frl_policy_pass_floats(p, a->chunk, 0);
    for (int32_t i = 0; i < a->threads; i++) {
        a->scratch[i].obs = frl_alloc(al, sizeof(float) * obs, FRL_CACHE_LINE);
        a->scratch[i].ws = frl_alloc(al, sizeof(float) * ws, FRL_CACHE_LINE);
        if (!a->scratch[i].obs || !a->scratch[i].ws)
            return frl_fail(err, FRL_ERR_NOMEM, "async sampler: out of memory for %zu floats of "
                            "inference buffers per thread", obs + ws);
    }
    return FRL_OK;
}

static void init_groups(async_sampler *a)
{
    frl_sampler_host *h = a->h;
    for (int32_t g = 0; g < h->groups; g++) {
        a->g[g].phase = PH_OPEN;
        a->g[g].slot = -1;
        if (h->venvs[g]->kind == VEC_BATCH)
            a->serial_steps = 1;
    }
    for (int32_t i = 0; i < a->slots; i++)
        a->open[i].seq = -1;
}

static frl_status open_device(async_sampler *a)
{
    frl_sampler_host *h = a->h;
    const frl_policy *p = h->policy;
    int32_t rows = h->B < p->dev->rows ? h->B : p->dev->rows;
    a->dev_version = ~(uint64_t)0;
    frl_status st = frl_policy_device_model(p, rows, &a->dev, "async sampler");
    if (st != FRL_OK)
        return frl_fail_msg(h->err, st, frl_last_error());
    const frl_device *d = &h->rt->device;
    char why[FRL_ERRMSG_SIZE / 2] = "";
    size_t B = (size_t)h->B, f = sizeof(float);
    /* rows as the device reads them: observations, or a frame stack's whole stacks */
    a->dev_obs = frl_device_host_alloc(d, &h->rt->alloc, f * B * (size_t)frl_policy_input_row_w(p),
                                       why, sizeof why);
    if (a->dev_obs)
        a->dev_out = frl_device_host_alloc(d, &h->rt->alloc, f * B * (size_t)p->out_w, why,
                                           sizeof why);
    if (a->dev_out && a->dev->state_w) {
        a->dev_state = frl_device_host_alloc(d, &h->rt->alloc, f * B * (size_t)p->state_w, why,
                                             sizeof why);
        a->dev_reset = frl_alloc(&h->rt->alloc, B, FRL_CACHE_LINE);
        if (a->dev_state && !a->dev_reset)
            snprintf(why, sizeof why, "out of memory");
    }
    if (!a->dev_out || (a->dev->state_w && (!a->dev_state || !a->dev_reset)))
        return frl_fail(h->err, FRL_ERR_NOMEM, "async sampler: buffers of device inference: %s",
                        why);
    return FRL_OK;
}

static void close_device(async_sampler *a)
{
    frl_sampler_host *h = a->h;
    frl_device_host_free(&h->rt->device, &h->rt->alloc, a->dev_obs);
    frl_device_host_free(&h->rt->device, &h->rt->alloc, a->dev_out);
    frl_device_host_free(&h->rt->device, &h->rt->alloc, a->dev_state);
    frl_free(&h->rt->alloc, a->dev_reset);
    frl_dev_model_destroy(a->dev);
    a->dev_obs = a->dev_out = a->dev_state = NULL;
    a->dev_reset = NULL;
    a->dev = NULL;
}

/* The sampler's own device model, or under runtime.device=auto, when the device has no
 * memory for it, acting on the CPU (the learner still runs on the device, and its
 * updates come back to the host's parameters, which the CPU acts on), as the policy and
 * the learner fall back (rl/policy.c, algo/ppo_learner.c). cuda fails with the reason. */
static frl_status open_device_or_cpu(async_sampler *a)
{
    frl_sampler_host *h = a->h;
    frl_status st = open_device(a);
    if (st != FRL_ERR_DEVICE || !h->rt->device.automatic)
        return st;
    frl_log(h->rt, FRL_LOG_INFO, "runtime.device=auto: acting on the CPU, since %s", h->err);
    close_device(a);
    h->err[0] = '\0';
    return FRL_OK;
}

/* sampler.groups, or, left at its default, no more groups than envs (one env: one
 * group), so that async mode works with any env count unless the user asked otherwise. */
static int32_t async_groups(const frl_config *c)
{
    int32_t g = (int32_t)frl_cfg_int(c, FRL_KEY_SAMPLER_GROUPS);
    int32_t n = (int32_t)frl_cfg_int(c, FRL_KEY_TRAIN_NUM_ENVS);
    if (!frl_cfg_is_set(c, FRL_KEY_SAMPLER_GROUPS) && n >= 1 && g > n)
        g = n;
    return g;
}

static int32_t async_slots(const frl_config *c, int32_t groups)
{
    (void)groups;
    return (int32_t)frl_cfg_int(c, FRL_KEY_SAMPLER_SLOTS);
}

static frl_status async_create(frl_sampler **out, frl_sampler_host *h)
{
    frl_allocator *al = &h->rt->alloc;
    async_sampler *a = frl_alloc(al, sizeof *a, FRL_CACHE_LINE);
    *out = (frl_sampler *)a;
    if (!a)
        return frl_fail(h->err, FRL_ERR_NOMEM, "async sampler: out of memory");
    /* zeroed by frl_alloc */
    a->base.ops = &frl_sampler_async;
    a->base.h = h;
    a->h = h;
    a->slots = frl_ring_slots(h->ring);
    a->threads = frl_runtime_threads(h->rt);
    /* Inference runs in pieces no larger than this; the kernels give the same bits at
     * any batch size, so the piece size changes speed only. */
    a->chunk = h->B < 256 ? h->B : 256;
    a->open = frl_alloc(al, sizeof(rollout) * (size_t)a->slots, FRL_CACHE_LINE);
    if (!a->open)
        return frl_fail(h->err, FRL_ERR_NOMEM, "async sampler: out of memory");
    init_groups(a);
    frl_status st = alloc_scratch(a, h->policy, h->err);
    if (st == FRL_OK)
        st = frl_weights_init(&a->w, al, h->policy, h->err);
    if (st == FRL_OK && h->policy->dev)
        st = open_device_or_cpu(a);
    return st;
}

static void async_destroy(frl_sampler *s)
{
    async_sampler *a = (async_sampler *)s;
    if (!a)
        return;
    frl_allocator *al = &a->h->rt->alloc;
    close_device(a);
    frl_weights_free(&a->w);
    for (int32_t i = 0; a->scratch && i < a->threads; i++) {
        frl_free(al, a->scratch[i].obs);
        frl_free(al, a->scratch[i].ws);
    }
    frl_free(al, a->scratch);
    frl_free(al, a->open);
    frl_free(al, a);
}

static void async_lock(frl_sampler *s)
{
    async_sampler *a = (async_sampler *)s;
    if (a->run)
        pthread_mutex_lock(&a->run->lock);
}

static void async_unlock(frl_sampler *s)
{
    async_sampler *a = (async_sampler *)s;
    if (a->run)
        pthread_mutex_unlock(&a->run->lock);
}

void frl_sampler_device_loads(const frl_sampler *s, int64_t *taken, int64_t *uploaded)
{
    const async_sampler *a = (const async_sampler *)s;
    *taken = a->dev_takes;
    *uploaded = a->dev_uploads;
}

/* ---- rollouts (all under the lock) ---- */

/* Join the group's rollout, opening a slot for it if it is the first group there.
 * Returns 0 when the budget is spent or no slot is free (the learner frees one). */
/* The group waits for actions: all of its rows are still to be acted. */
static void enter_act(async_sampler *a, group *g)
{
    g->phase = PH_ACT;
    g->act_next = 0;
    g->act_left = a->h->venvs[g - a->g]->n;
    g->act_version = UINT64_MAX;
}

static int open_rollout(async_sampler *a, group *g)
{
    if (g->seq >= a->budget)
        return 0;
    rollout *r = &a->open[g->seq % a->slots];
    if (r->seq != g->seq) {
        /* The record held rollout seq - slots or older, committed already: the groups
         * are never more than `slots` rollouts apart, since the rollouts between the
         * last group and the first would all be open and hold every slot. */
        int32_t slot = frl_ring_try_acquire_write(a->h->ring);
        if (slot < 0)
            return 0;
        r->seq = g->seq;
        r->slot = slot;
        r->groups_done = 0;
        uint64_t *ver = frl_ring_at(a->h->ring, slot, FRL_RING_POLICY_VERSION);
        for (int32_t s = 0; s < a->h->T; s++)
            ver[s] = UINT64_MAX;
    }
    g->slot = r->slot;
    g->t = 0;
    enter_act(a, g);
    int32_t gi = (int32_t)(g - a->g);
    frl_rollout_begin_state(a->h->book, a->h->ring, r->slot, a->h->venvs[gi],
                            a->h->group_first[gi]);
    return 1;
}

/* The group has written all T steps of its rollout. */
static void finish_rollout(async_sampler *a, int32_t gi)
{
    frl_sampler_host *h = a->h;
    group *g = &a->g[gi];
    const frl_vec_env *v = h->venvs[gi];
    size_t ow = (size_t)h->policy->obs_w;
    memcpy((float *)frl_ring_at(h->ring, g->slot, FRL_RING_BOOTSTRAP_OBS) +
               (size_t)h->group_first[gi] * ow,
           frl_vec_env_observations(v), sizeof(float) * (size_t)v->n * ow);
    rollout *r = &a->open[g->seq % a->slots];
    if (++r->groups_done == h->groups) {
        frl_ring_commit(h->ring, r->slot);
        a->committed++;
        a->ready++;
    }
    g->seq++;
    g->slot = -1;
    g->phase = PH_OPEN;
    open_rollout(a, g);
}

/* After a sampler error: give back every slot being written, so the next train call
 * starts clean rollouts from the envs' present observations. Complete rollouts stay. */
static void abandon_open(async_sampler *a)
{
    for (int32_t i = 0; i < a->slots; i++) {
        rollout *r = &a->open[i];
        if (r->seq >= a->committed)
            frl_ring_abandon(a->h->ring, r->slot);
        if (r->seq >= a->committed)
            r->seq = -1;
    }
    for (int32_t gi = 0; gi < a->h->groups; gi++) {
        a->g[gi].seq = a->committed;
        a->g[gi].slot = -1;
        a->g[gi].phase = PH_OPEN;
    }
}

/* ---- tasks ---- */

typedef struct task {
    int kind;              /* TASK_* */
    int32_t group;         /* step, act_rows */
    int32_t count;         /* act: groups in the batch (scratch.picked) */
    int32_t first, rows;   /* act_rows: the group's rows [first, first + rows) */
} task;

enum { TASK_NONE, TASK_STEP, TASK_ACT, TASK_ACT_ROWS, TASK_SAMPLE, TASK_LEARN };

static int take_step(async_sampler *a, task *k)
{
    if (a->serial_steps && a->stepping > 0)
        return 0;
    for (int32_t gi = 0; gi < a->h->groups; gi++)
        if (a->g[gi].phase == PH_STEP) {
            a->g[gi].phase = PH_BUSY;
            a->stepping++;
            k->kind = TASK_STEP;
            k->group = gi;
            return 1;
        }
    return 0;
}

/* CPU inference of a memoryless policy: the next piece of a group waiting for actions.
 * A group's rows are cut into about one piece per thread (whole forward chunks), so a
 * group's inference spreads over the idle threads; the group steps once all its pieces
 * are done. Pieces write disjoint rows, and every env samples from its own stream, so
 * the cut changes no bit. */
static int take_act_rows(async_sampler *a, task *k)
{
    for (int32_t gi = 0; gi < a->h->groups; gi++) {
        group *g = &a->g[gi];
        if (g->phase == PH_OPEN)
            open_rollout(a, g);
        if (g->phase != PH_ACT)
            continue;
        int32_t n = a->h->venvs[gi]->n, per = (n + a->threads - 1) / a->threads;
        per = (per + a->chunk - 1) / a->chunk * a->chunk;
        k->kind = TASK_ACT_ROWS;
        k->group = gi;
        k->first = g->act_next;
        k->rows = n - g->act_next < per ? n - g->act_next : per;
        g->act_next += k->rows;
        if (g->act_next == n)
            g->phase = PH_BUSY;
        return 1;
    }
    return 0;
}

/* The next piece of the device batch being sampled, about one per thread. */
static int take_sample(async_sampler *a, task *k)
{
    if (!a->dev_acting || a->db.next >= a->db.rows || a->db.left == 0)
        return 0;
    int32_t per = (a->db.rows + a->threads - 1) / a->threads;
    per = per < 128 ? 128 : per;
    k->kind = TASK_SAMPLE;
    k->first = a->db.next;
    k->rows = a->db.rows - a->db.next < per ? a->db.rows - a->db.next : per;
    a->db.next += k->rows;
    return 1;
}

static int take_act(async_sampler *a, task *k, int32_t thread)
{
    int32_t n = 0;
    /* One thread gains nothing from pieces, and batching every waiting group keeps the
     * schedule a device's (test_cuda_host compares the two runs step for step). */
    if (!a->dev && !a->h->policy->state_w && a->threads > 1)
        return take_act_rows(a, k);
    if (a->dev_acting)
        return 0; /* the device model takes one batch at a time */
    for (int32_t gi = 0; gi < a->h->groups; gi++) {
        group *g = &a->g[gi];
        if (g->phase == PH_OPEN)
            open_rollout(a, g);
        if (g->phase == PH_ACT) {
            g->phase = PH_BUSY;
            a->scratch[thread].picked[n++] = gi;
        }
    }
    k->kind = n ? TASK_ACT : TASK_NONE;
    k->count = n;
    a->dev_acting = a->dev && n > 0;
    return n > 0;
}

/* Copy group gi's observations into its rows of the slot; returns where they are. */
static const float *store_obs(async_sampler *a, int32_t gi)
{
    frl_sampler_host *h = a->h;
    const group *g = &a->g[gi];
    const frl_vec_env *v = h->venvs[gi];
    size_t ow = (size_t)h->policy->obs_w;
    float *dst = (float *)frl_ring_at(h->ring, g->slot, FRL_RING_OBSERVATIONS) +
                 ((size_t)g->t * (size_t)h->B + (size_t)h->group_first[gi]) * ow;
    memcpy(dst, frl_vec_env_observations(v), sizeof(float) * (size_t)v->n * ow);
    return dst;
}

/* Sample row r of the batch (env `local` of group gi) from the head outputs. */
static void act_row(async_sampler *a, const frl_weights_view *wv, int32_t gi, int32_t local,
                    const float *out)
{
    frl_sampler_host *h = a->h;
    const frl_policy *p = h->policy;
    const group *g = &a->g[gi];
    size_t row = (size_t)g->t * (size_t)h->B + (size_t)(h->group_first[gi] + local);
    size_t ab = p->discrete ? sizeof(int32_t) : sizeof(float) * (size_t)p->out_w;
    void *act = (unsigned char *)frl_ring_at(h->ring, g->slot, FRL_RING_ACTIONS) + row * ab;
    float *lp = (float *)frl_ring_at(h->ring, g->slot, FRL_RING_LOG_PROBS) + row;
    /* Each env samples from its own stream at the group's counter, so an env's
     * actions do not depend on which batch it was gathered into. */
    *lp = (float)frl_policy_head_act(p, wv->params, out, 0,
                                     (uint64_t)(h->group_first[gi] + local), (uint64_t)g->acts,
                                     act);
    frl_rollout_env_action(h->policy, h->venvs[gi], local, act);
}

/* The batch's observations, in group order: stored in the groups' rows of their slots,
 * and gathered into buf when there are several groups. */
static const float *gather_obs(async_sampler *a, const task *k, int32_t thread, float *buf,
                               int32_t *rows)
{
    const frl_sampler_host *h = a->h;
    size_t ow = (size_t)h->policy->obs_w;
    const int32_t *picked = a->scratch[thread].picked;
    const float *one = NULL;
    int32_t n = 0;
    for (int32_t i = 0; i < k->count; i++) {
        int32_t gi = picked[i], m = h->venvs[gi]->n;
        const float *src = store_obs(a, gi);
        if (k->count == 1)
            one = src;
        else
            memcpy(buf + (size_t)n * ow, src, sizeof(float) * (size_t)m * ow);
        n += m;
    }
    *rows = n;
    return k->count == 1 ? one : buf;
}

/* A frame stack's rows of the picked groups into buf, for the device: each group's
 * stacks from its rows of the state and its vec env's autoreset flags (the state steps
 * on, as act_groups_recurrent's does on the CPU). */
static const float *group_stacks(async_sampler *a, const task *k, int32_t thread, float *buf,
                                  int32_t *rows)
{
    const frl_sampler_host *h = a->h;
    const frl_policy *p = h->policy;
    size_t iw = (size_t)frl_policy_input_row_w(p), sw = (size_t)p->state_w;
    const int32_t *picked = a->scratch[thread].picked;
    int32_t n = 0;
    for (int32_t i = 0; i < k->count; i++) {
        int32_t gi = picked[i], m = h->venvs[gi]->n;
        frl_policy_stack_build(p, m, store_obs(a, gi),
                               h->book->state + (size_t)h->group_first[gi] * sw,
                               frl_vec_env_reset_steps(h->venvs[gi]), buf + (size_t)n * iw);
        n += m;
    }
    *rows = n;
    return buf;
}

/* The batch's groups' frame stacks one frame on, once their forward succeeded: a failed
 * batch's groups act again on the frames they hold (their envs did not step). */
static void groups_stack_on(async_sampler *a, const task *k, int32_t thread)
{
    const frl_sampler_host *h = a->h;
    size_t sw = (size_t)h->policy->state_w;
    const int32_t *picked = a->scratch[thread].picked;
    for (int32_t i = 0; i < k->count; i++) {
        int32_t gi = picked[i];
        frl_policy_stack_advance(h->policy, h->venvs[gi]->n, store_obs(a, gi),
                                 h->book->state + (size_t)h->group_first[gi] * sw,
                                 frl_vec_env_reset_steps(h->venvs[gi]));
    }
}

/* Where the next row of the batch goes: a group and an env in it. */
typedef struct row_cursor {
    int32_t pi, local;
} row_cursor;

/* Sample n rows of head outputs out [n x out_w], continuing at *c. */
static void sample_rows(async_sampler *a, const frl_weights_view *wv, const int32_t *picked,
                        int32_t n, const float *out, row_cursor *c)
{
    const frl_sampler_host *h = a->h;
    size_t ow = (size_t)h->policy->out_w;
    for (int32_t r = 0; r < n; r++) {
        act_row(a, wv, picked[c->pi], c->local, out + (size_t)r * ow);
        if (++c->local == h->venvs[picked[c->pi]]->n) {
            c->pi++;
            c->local = 0;
        }
    }
}

/* A policy with state (a recurrent core, a frame stack) acts group by group: a group's
 * rows of the state and of its vec env's autoreset flags are contiguous, the gathered
 * batch's would not be. */
static void act_groups_recurrent(async_sampler *a, const task *k, int32_t thread,
                                 const frl_weights_view *wv)
{
    const frl_sampler_host *h = a->h;
    const frl_policy *p = h->policy;
    act_scratch *sc = &a->scratch[thread];
    size_t ow = (size_t)p->obs_w, sw = (size_t)p->state_w;
    row_cursor c = {0, 0};
    for (int32_t i = 0; i < k->count; i++) {
        int32_t gi = sc->picked[i], m = h->venvs[gi]->n;
        const float *obs = store_obs(a, gi);
        float *state = h->book->state + (size_t)h->group_first[gi] * sw;
        const uint8_t *reset = frl_vec_env_reset_steps(h->venvs[gi]);
        for (int32_t first = 0; first < m; first += a->chunk) {
            int32_t n = m - first < a->chunk ? m - first : a->chunk;
            float *out;
            frl_policy_state_step(p, wv->params, &wv->norm, n, obs + (size_t)first * ow,
                                  state + (size_t)first * sw, reset + first, sc->ws,
                                  FRL_HEAD_ACTOR, &out, NULL);
            sample_rows(a, wv, sc->picked, n, out, &c);
        }
    }
}

/* The actor over rows observations obs in forward chunks, sampling each chunk's rows
 * from cursor c on (rows of the groups picked). */
static void infer_rows(async_sampler *a, int32_t thread, const frl_weights_view *wv,
                       const int32_t *picked, const float *obs, int32_t rows, row_cursor *c)
{
    const frl_policy *p = a->h->policy;
    for (int32_t first = 0; first < rows; first += a->chunk) {
        int32_t n = rows - first < a->chunk ? rows - first : a->chunk;
        frl_pass f;
        frl_policy_pass_layout(p, n, 0, a->scratch[thread].ws, &f);
        f.norm = &wv->norm;
        frl_policy_forward_heads(p, wv->params, n, obs + (size_t)first * (size_t)p->obs_w, &f,
                                 FRL_HEAD_ACTOR);
        sample_rows(a, wv, picked, n, f.out, c);
    }
}

static void act_batch_cpu(async_sampler *a, const task *k, int32_t thread,
                          const frl_weights_view *wv)
{
    if (a->h->policy->state_w) {
        act_groups_recurrent(a, k, thread, wv);
        return;
    }
    int32_t rows;
    const float *obs = gather_obs(a, k, thread, a->scratch[thread].obs, &rows);
    row_cursor c = {0, 0};
    infer_rows(a, thread, wv, a->scratch[thread].picked, obs, rows, &c);
}

/* Rows [first, first + rows) of group gi on the CPU: their observations into the slot,
 * the actor over them in forward chunks, their actions sampled. *version: the acting
 * weights'. */
static void act_rows(async_sampler *a, const task *k, int32_t thread, uint64_t *version)
{
    frl_sampler_host *h = a->h;
    const frl_policy *p = h->policy;
    const group *g = &a->g[k->group];
    size_t ow = (size_t)p->obs_w;
    float *obs = (float *)frl_ring_at(h->ring, g->slot, FRL_RING_OBSERVATIONS) +
                 ((size_t)g->t * (size_t)h->B + (size_t)(h->group_first[k->group] + k->first)) * ow;
    memcpy(obs, frl_vec_env_observations(h->venvs[k->group]) + (size_t)k->first * ow,
           sizeof(float) * (size_t)k->rows * ow);
    frl_weights_view wv;
    frl_weights_pin(&a->w, p, &wv);
    *version = wv.version;
    row_cursor c = {0, k->first};
    infer_rows(a, thread, &wv, &k->group, obs, k->rows, &c);
    frl_weights_unpin(&a->w, &wv);
}

/* The group acted once more (under the lock). pr.rollout_steps, which checkpoints keep
 * (the sync sampler's counter), holds the largest counter any group reached, so that a
 * loaded trainer's groups draw on from there, not again from the saved run's draws. */
static void count_act(async_sampler *a, group *g)
{
    frl_progress *pr = &a->h->book->pr;
    g->acts++;
    pr->rollout_steps = g->acts > pr->rollout_steps ? g->acts : pr->rollout_steps;
}

/* A piece is done (under the lock): the group steps when its last piece is. */
static void act_rows_done(async_sampler *a, const task *k, uint64_t version)
{
    group *g = &a->g[k->group];
    g->act_version = version < g->act_version ? version : g->act_version;
    g->act_left -= k->rows;
    if (g->act_left > 0)
        return;
    uint64_t *ver = frl_ring_at(a->h->ring, g->slot, FRL_RING_POLICY_VERSION);
    ver[g->t] = g->act_version < ver[g->t] ? g->act_version : ver[g->t];
    count_act(a, g);
    g->phase = PH_STEP;
}

/* The acting weights wv into the device model: from the learner model's snapshot of the
 * same index when it staged one (a device-to-device copy after the learner stream's
 * event, queued before the batch's forward, which waits for it), else from the host. */
static frl_status load_acting_weights(async_sampler *a, const frl_weights_view *wv, char *err)
{
    const frl_policy *p = a->h->policy;
    if (wv->staged) {
        frl_status st = frl_dev_model_take(a->dev, p->dev, wv->index, err);
        if (st == FRL_OK)
            a->dev_takes++;
        return st;
    }
    int norm = p->obs_norm;
    a->dev_uploads++;
    return frl_dev_model_load(a->dev, wv->params, norm ? wv->norm.use_mean : NULL,
                              norm ? wv->norm.use_inv_std : NULL, p->norm.clip, err);
}

/* Rows [first, first + rows) of a device batch of the groups picked, sampled from its
 * head outputs. Each env samples from its own stream: no bit depends on the pieces. */
static void sample_piece(async_sampler *a, const int32_t *picked, const frl_weights_view *wv,
                         int32_t first, int32_t rows)
{
    const frl_sampler_host *h = a->h;
    row_cursor c = {0, first};
    while (c.local >= h->venvs[picked[c.pi]]->n)
        c.local -= h->venvs[picked[c.pi++]]->n;
    sample_rows(a, wv, picked, rows, a->dev_out + (size_t)first * (size_t)h->policy->out_w, &c);
}

/* A recurrent batch's states and reset flags between the picked groups' rows of the
 * book and a->dev_state, a->dev_reset (back: 1, the states the other way). */
static void move_states(async_sampler *a, const int32_t *picked, int32_t count, int back)
{
    const frl_sampler_host *h = a->h;
    size_t sw = (size_t)h->policy->state_w, n = 0;
    for (int32_t i = 0; i < count; i++) {
        int32_t gi = picked[i];
        size_t m = (size_t)h->venvs[gi]->n, bytes = sizeof(float) * m * sw;
        float *book = h->book->state + (size_t)h->group_first[gi] * sw;
        float *batch = a->dev_state + n * sw;
        memcpy(back ? book : batch, back ? batch : book, bytes);
        if (!back)
            memcpy(a->dev_reset + n, frl_vec_env_reset_steps(h->venvs[gi]), m);
        n += m;
    }
}

/* The device's outputs of the batch's rows obs: a forward, or a recurrent policy's step
 * on the gathered states, which go back to the book only when it succeeded (a failed
 * step loses no state). */
static frl_status device_outputs(async_sampler *a, const task *k, int32_t thread,
                                 const float *obs, int32_t rows, char *err)
{
    if (!a->dev->state_w)
        return frl_dev_model_forward(a->dev, rows, obs, a->dev_out, NULL, err);
    const int32_t *picked = a->scratch[thread].picked;
    move_states(a, picked, k->count, 0);
    frl_status st = frl_dev_model_step(a->dev, rows, obs, a->dev_state, a->dev_reset,
                                       a->dev_out, NULL, err);
    if (st == FRL_OK)
        move_states(a, picked, k->count, 1);
    return st;
}

/* The batch on the device model, loading the acting weights when they moved on. The
 * heads are sampled on the host, from the same streams as on the CPU. */
static frl_status act_batch_device(async_sampler *a, const task *k, int32_t thread,
                                   const frl_weights_view *wv, int32_t *out_rows, char *err)
{
    int32_t rows;
    const float *obs = a->h->policy->stack > 1 ? group_stacks(a, k, thread, a->dev_obs, &rows)
                                               : gather_obs(a, k, thread, a->dev_obs, &rows);
    frl_status st = FRL_OK;
    if (a->dev_version != wv->version) {
        st = load_acting_weights(a, wv, err);
        a->dev_version = st == FRL_OK ? wv->version : ~(uint64_t)0;
    }
    if (st == FRL_OK)
        st = device_outputs(a, k, thread, obs, rows, err);
    if (st != FRL_OK) {
        a->dev_version = ~(uint64_t)0; /* the device's copy may be half written */
        return st;
    }
    if (a->h->policy->stack > 1)
        groups_stack_on(a, k, thread);
    *out_rows = rows;
    return FRL_OK;
}

/* One batch on the acting weights, pinned in *wv. A device batch keeps them pinned for
 * its SAMPLE pieces (*rows: its rows); a CPU batch samples here and unpins. */
static frl_status act_batch(async_sampler *a, const task *k, int32_t thread,
                            frl_weights_view *wv, int32_t *rows, char *err)
{
    frl_weights_pin(&a->w, a->h->policy, wv);
    frl_status st = FRL_OK;
    if (a->dev)
        st = act_batch_device(a, k, thread, wv, rows, err);
    else
        act_batch_cpu(a, k, thread, wv);
    if (!a->dev || st != FRL_OK)
        frl_weights_unpin(&a->w, wv);
    return st;
}

static void act_done(async_sampler *a, const int32_t *picked, int32_t count, uint64_t version)
{
    for (int32_t i = 0; i < count; i++) {
        group *g = &a->g[picked[i]];
        uint64_t *ver = frl_ring_at(a->h->ring, g->slot, FRL_RING_POLICY_VERSION);
        /* A step's version is the oldest that acted in it: lag is never understated. */
        ver[g->t] = version < ver[g->t] ? version : ver[g->t];
        count_act(a, g);
        g->phase = PH_STEP;
    }
}

static void step_done(async_sampler *a, int32_t gi)
{
    frl_sampler_host *h = a->h;
    group *g = &a->g[gi];
    frl_rollout_store_step(h->book, h->ring, h->venvs[gi], h->group_first[gi], g->slot, g->t);
    h->book->pr.env_steps += h->venvs[gi]->n;
    if (++g->t == h->T)
        finish_rollout(a, gi);
    else
        enter_act(a, g);
}

/* End the run with this error (the first one wins), under the lock. */
static void fail_locked(frl_run *r, int32_t member, frl_status st, const char *msg)
{
    if (r->status == FRL_OK) {
        r->status = st;
        r->failed = member;
        snprintf(r->err, sizeof r->err, "%s", msg);
    }
    r->stop = 1;
}

/* A device batch failed: its groups wait to act again, and their rollouts are given
 * back at the end of the run (the envs are untouched, so no reset is needed). */
static void act_failed(async_sampler *a, const task *k, int32_t thread, frl_status st,
                       const char *msg)
{
    for (int32_t i = 0; i < k->count; i++)
        enter_act(a, &a->g[a->scratch[thread].picked[i]]);
    a->sampler_failed = 1;
    char full[FRL_ERRMSG_SIZE];
    snprintf(full, sizeof full, "async sampler: %s", msg);
    fail_locked(a->run, a->index, st, full);
}

/* A device batch's forward is done (under the lock): its rows become SAMPLE pieces. */
static void post_samples(async_sampler *a, const task *k, int32_t thread,
                         const frl_weights_view *wv, int32_t rows)
{
    memcpy(a->db.picked, a->scratch[thread].picked, sizeof(int32_t) * (size_t)k->count);
    a->db.count = k->count;
    a->db.rows = rows;
    a->db.next = 0;
    a->db.left = rows;
    a->db.wv = *wv;
}

/* A SAMPLE piece is done (under the lock); the last one releases the batch. */
static void sample_done(async_sampler *a, const task *k)
{
    if ((a->db.left -= k->rows) > 0)
        return;
    frl_weights_unpin(&a->w, &a->db.wv);
    act_done(a, a->db.picked, a->db.count, a->db.wv.version);
    a->dev_acting = 0;
}

/* An ACT task: a CPU batch, or a device batch's forward. With one thread a device batch
 * is sampled here too (its pin must not outlive the task: the same thread may learn
 * and publish next). */
static frl_status run_act(async_sampler *a, const task *k, int32_t thread,
                          frl_weights_view *wv, int32_t *rows, char *err)
{
    frl_status st = act_batch(a, k, thread, wv, rows, err);
    if (st != FRL_OK || !a->dev || a->threads > 1)
        return st;
    sample_piece(a, a->scratch[thread].picked, wv, 0, *rows);
    frl_weights_unpin(&a->w, wv);
    *rows = 0;
    return st;
}

/* The ACT task's end, under the lock. */
static void act_end(async_sampler *a, const task *k, int32_t thread, frl_status st,
                    const frl_weights_view *wv, int32_t rows, const char *err)
{
    if (st != FRL_OK) {
        a->dev_acting = 0;
        act_failed(a, k, thread, st, err);
    } else if (rows > 0) {
        post_samples(a, k, thread, wv, rows);
    } else {
        a->dev_acting = 0;
        act_done(a, a->scratch[thread].picked, k->count, wv->version);
    }
}

/* A group's step failure, as its vec env said it; with several groups, which group:
 * each numbers its envs from 0, so "env 3" alone does not say whose. */
static const char *step_failure(const async_sampler *a, int32_t gi, char *buf)
{
    if (a->h->groups == 1)
        return frl_last_error();
    char why[FRL_ERRMSG_SIZE];
    snprintf(why, sizeof why, "%s", frl_last_error());
    snprintf(buf, FRL_ERRMSG_SIZE, "env group %d (venvs[%d]): %.200s", (int)gi, (int)gi, why);
    return buf;
}

/* Run a sampling task without the lock; account for it with the lock. */
static void run_sampling(async_sampler *a, const task *k, int32_t thread)
{
    double t0 = frl_now();
    frl_status st = FRL_OK;
    uint64_t version = 0;
    frl_weights_view wv;
    int32_t rows = 0;
    char err[FRL_ERRMSG_SIZE] = "";
    if (k->kind == TASK_STEP)
        st = frl_vec_env_step_held(a->h->venvs[k->group]);
    else if (k->kind == TASK_ACT_ROWS)
        act_rows(a, k, thread, &version);
    else if (k->kind == TASK_SAMPLE)
        sample_piece(a, a->db.picked, &a->db.wv, k->first, k->rows);
    else
        st = run_act(a, k, thread, &wv, &rows, err);
    double dt = frl_now() - t0;
    pthread_mutex_lock(&a->run->lock);
    if (k->kind == TASK_STEP) {
        a->stepping--;
        a->busy_env += dt;
        if (st == FRL_OK)
            step_done(a, k->group);
        else {
            a->g[k->group].phase = PH_STEP; /* reset by abandon_open at the end */
            a->g[k->group].restart = 1;
            a->sampler_failed = 1;
            fail_locked(a->run, a->index, st, step_failure(a, k->group, err));
        }
    } else {
        a->busy_act += dt;
        if (k->kind == TASK_ACT_ROWS)
            act_rows_done(a, k, version);
        else if (k->kind == TASK_SAMPLE)
            sample_done(a, k);
        else
            act_end(a, k, thread, st, &wv, rows, err);
    }
    notify(a->run);
}

/* ---- the learner ---- */

/* Lag of the slot's steps behind the learner's present version. */
static void slot_lag(async_sampler *a, int32_t slot, double *mean, double *max)
{
    const uint64_t *ver = frl_ring_at(a->h->ring, slot, FRL_RING_POLICY_VERSION);
    uint64_t now = a->h->policy->version;
    double sum = 0, hi = 0;
    for (int32_t s = 0; s < a->h->T; s++) {
        double lag = (double)(now - ver[s]);
        sum += lag;
        hi = lag > hi ? lag : hi;
    }
    *mean = sum / a->h->T;
    *max = hi;
}

/* The learner's thread, on the acting buffer about to become current: when the
 * learner's model holds exactly its parameters (after an update on the device), the
 * model stages a snapshot of them with the buffer's index for the sampler's model to
 * take. The learner's thread does not wait for it: the sampler's stream waits for the
 * snapshot's event. */
static frl_status stage_on_device(void *ctx, const frl_weights_view *v, int32_t *staged,
                                  char *err)
{
    async_sampler *a = ctx;
    const frl_policy *p = a->h->policy;
    *staged = 0;
    if (!p->dev || p->dev_version != v->version)
        return FRL_OK;
    int norm = p->obs_norm;
    frl_status st = frl_dev_model_stage(p->dev, v->index, norm ? v->norm.use_mean : NULL,
                                        norm ? v->norm.use_inv_std : NULL, v->norm.clip,
                                        "async learner", err);
    *staged = st == FRL_OK;
    return st;
}

static frl_status learn_next(async_sampler *a)
{
    frl_sampler_host *h = a->h;
    int32_t slot;
    frl_status st = frl_ring_acquire_read(h->ring, &slot);
    if (st != FRL_OK)
        return frl_fail(h->err, FRL_ERR_INTERNAL, "async learner: a committed rollout is missing "
                        "from the ring: %s", frl_ring_last_error(h->ring));
    double mean, max;
    slot_lag(a, slot, &mean, &max);
    int64_t max_lag = frl_cfg_int(h->cfg, FRL_KEY_SAMPLER_MAX_LAG);
    if (max_lag > 0 && max > (double)max_lag) {
        frl_ring_release(h->ring, slot);
        pthread_mutex_lock(&a->run->lock);
        h->book->pr.slots_dropped++;
        h->metrics->slots_dropped = h->book->pr.slots_dropped;
        notify(a->run);
        pthread_mutex_unlock(&a->run->lock);
        return FRL_OK;
    }
    if ((st = h->learn(h->owner, slot, a->num_updates)) != FRL_OK)
        return st;
    /* A failed stage still publishes the host copy, which the sampler then acts from;
     * the update's metrics are kept and the failure ends the call. */
    frl_status staged = frl_weights_publish(&a->w, h->policy, a->dev ? stage_on_device : NULL,
                                            a, h->err);
    pthread_mutex_lock(&a->run->lock);
    frl_metrics *m = h->metrics;
    m->time_env = a->busy_env;
    m->time_inference = a->busy_act;
    m->time_waiting = a->learner_wait;
    m->policy_lag_mean = mean;
    m->policy_lag_max = max;
    m->slots_dropped = h->book->pr.slots_dropped;
    a->busy_env = a->busy_act = a->learner_wait = 0;
    /* A slot is free again: wake groups waiting for one. */
    notify(a->run);
    pthread_mutex_unlock(&a->run->lock);
    if (staged != FRL_OK)
        return staged;
    return h->after_update(h->owner);
}

/* Whether a trainer of the run is at its budget or target (then it stops taking
 * tasks). Lost rollouts (pr.lost) count as dropped ones do: the budget's rollouts are
 * numbered from the run's start, and one never learned must not leave a later call (or
 * a loaded run) waiting for it. */
static int member_done(async_sampler *a)
{
    const frl_sampler_host *h = a->h;
    const frl_progress *pr = &h->book->pr;
    if (!a->done && (pr->updates + pr->slots_dropped + pr->lost >= a->budget ||
                     h->target_reached(h->owner)))
        a->done = 1;
    return a->done;
}

/* The caller's thread, under the lock: is the run over? It ends when every trainer is
 * done, or at a stop request of any trainer. The budgets are looked at first: a
 * request made during the last update starts no update anyway, so the call ends
 * normally, as the sync loop's does (end() clears the flag). */
static int run_finished(frl_run *r)
{
    if (r->stop)
        return 1;
    int all_done = 1;
    for (int32_t i = 0; i < r->count; i++)
        all_done &= member_done(r->m[i]);
    for (int32_t i = 0; i < r->count && !all_done; i++) {
        frl_sampler_host *h = r->m[i]->h;
        if (atomic_exchange(h->stop, 0)) {
            char msg[FRL_ERRMSG_SIZE];
            snprintf(msg, sizeof msg, "training stopped by request at %lld steps",
                     (long long)h->book->pr.env_steps);
            fail_locked(r, i, FRL_ERR_INTERRUPTED, msg);
            return 1;
        }
    }
    r->stop = all_done;
    return all_done;
}

/* Spin for up to spin_s while nothing happens (the next task of a stepping loop is
 * usually microseconds away, and a condition variable's wake-up costs about as much),
 * then sleep; while a learner is inside an update, spin on until something happens
 * (runtime.spin_us=0 still never spins). Its next minibatch's shards follow a serial
 * step of tens to hundreds of microseconds, and a helper that slept through it joined
 * late every time: async ran 1-8% slower than with the helper spinning (CartPole, 256
 * envs x 64, six interleaved rounds). Events are bumped under the lock, so one that
 * lands after the spin is seen by the check that precedes the wait. */
static void spin_then_wait(frl_run *r)
{
    uint64_t seen = atomic_load_explicit(&r->events, memory_order_relaxed);
    pthread_mutex_unlock(&r->lock);
    double end = frl_now() + r->spin_s;
    for (uint32_t i = 1; r->spin_s > 0; i++) {
        if (atomic_load_explicit(&r->events, memory_order_relaxed) != seen)
            break;
        if ((i & 63) == 0 && frl_now() > end &&
            atomic_load_explicit(&r->updating, memory_order_relaxed) == 0)
            break;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    pthread_mutex_lock(&r->lock);
    if (atomic_load_explicit(&r->events, memory_order_relaxed) == seen &&
        !frl_pool_side_pending(r->pool))
        pthread_cond_wait(&r->wake, &r->lock);
}

/* The caller's thread polls for a stop request (a signal handler cannot wake it). */
static void learner_wait(frl_run *r)
{
    double t0 = frl_now();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20 * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&r->wake, &r->lock, &ts);
    double dt = frl_now() - t0;
    for (int32_t i = 0; i < r->count; i++)
        r->m[i]->learner_wait += dt;
}

static int take_learn(async_sampler *a, task *k)
{
    if (a->ready == 0)
        return 0;
    a->ready--;
    k->kind = TASK_LEARN;
    a->learning = 1;
    a->learn_seq = a->committed - a->ready - 1;
    a->learn_start = frl_now();
    return 1;
}

/* The update ended (under the lock): its length into the running mean; lost: the
 * rollout was neither learned nor dropped. */
static void learn_done(async_sampler *a, int lost)
{
    double len = frl_now() - a->learn_start;
    a->learn_len = a->learn_len > 0 ? 0.5 * (a->learn_len + len) : len;
    a->learning = 0;
    a->h->book->pr.lost += lost;
}

/* Whether a's inference may wait while its learner's shards are pending: the sampler
 * is further through the next rollout than the learner through its update, so at the
 * present rates it finishes first. Then an idle thread helps the learner first, and
 * the sampler runs in the learner's serial steps: with a short update and few envs
 * (CartPole's defaults, 8 x 128) the inference pieces otherwise took a thread from
 * every other minibatch of 4 shards. */
static int sampler_ahead(const async_sampler *a)
{
    if (!a->learning || a->learn_len <= 0)
        return 0;
    if (a->ready > 0)
        return 1;
    int64_t T = a->h->T, least = INT64_MAX;
    for (int32_t gi = 0; gi < a->h->groups; gi++) {
        int64_t at = a->g[gi].seq * T + a->g[gi].t;
        least = at < least ? at : least;
    }
    double sampler = (double)(least - (a->learn_seq + 1) * T) / (double)T;
    double learner = (frl_now() - a->learn_start) / a->learn_len;
    return sampler > learner;
}

/* The next task of any trainer still running, searched from r->rr so that no trainer
 * starves: learning first (thread 0 only), then a device batch's sampling (short, and
 * the device's next batch waits for it), then stepping (with a serial host callback
 * the callback is the resource to keep busy, and the batch of actions grows while it
 * runs), then inference. */
static int take_any(frl_run *r, int32_t thread, async_sampler **who, task *k)
{
    for (int pass = thread == 0 ? 0 : 1; pass < 3; pass++)
        for (int32_t j = 0; j < r->count; j++) {
            async_sampler *a = r->m[(r->rr + j) % r->count];
            if (a->done)
                continue;
            if (pass == 2 && frl_pool_side_pending(r->pool) && sampler_ahead(a))
                continue;
            int got = pass == 0 ? take_learn(a, k)
                    : pass == 1 ? take_sample(a, k) || take_step(a, k)
                                : take_act(a, k, thread);
            if (got) {
                *who = a;
                r->rr = (r->rr + j + 1) % r->count;
                return 1;
            }
        }
    return 0;
}

/* After a stop, a SAMPLE piece nobody took. Its batch pins a buffer of acting weights
 * until the last piece; left to end(), which runs once every thread has returned, the
 * pin could block thread 0 for ever: a learner that published since the batch began
 * publishes next into that very buffer, and waits for its readers. */
static int take_leftover(frl_run *r, async_sampler **who, task *k)
{
    for (int32_t j = 0; j < r->count; j++)
        if (take_sample(r->m[j], k)) {
            *who = r->m[j];
            return 1;
        }
    return 0;
}

/* Nothing to do now: help with the pool's side job (the learner's shards) or wait. */
static void idle(frl_run *r, int32_t thread)
{
    if (frl_pool_side_pending(r->pool)) {
        pthread_mutex_unlock(&r->lock);
        frl_pool_help(r->pool, thread);
        pthread_mutex_lock(&r->lock);
    } else if (thread == 0) {
        learner_wait(r);
    } else {
        spin_then_wait(r);
    }
}

static int worker(void *user, int32_t task_index, int32_t thread)
{
    (void)task_index;
    frl_run *r = user;
    pthread_mutex_lock(&r->lock);
    for (;;) {
        async_sampler *a;
        task k;
        if (thread == 0 ? run_finished(r) : r->stop) {
            if (!take_leftover(r, &a, &k))
                break;
        } else if (!take_any(r, thread, &a, &k)) {
            idle(r, thread);
            continue;
        }
        pthread_mutex_unlock(&r->lock);
        if (k.kind == TASK_LEARN) {
            /* Only this thread counts updates: read without the lock. */
            int64_t updates = a->h->book->pr.updates;
            atomic_fetch_add_explicit(&r->updating, 1, memory_order_relaxed);
            frl_status st = learn_next(a);
            atomic_fetch_sub_explicit(&r->updating, 1, memory_order_relaxed);
            pthread_mutex_lock(&r->lock);
            learn_done(a, st != FRL_OK && a->h->book->pr.updates == updates);
            if (st != FRL_OK)
                fail_locked(r, a->index, st, a->h->err);
            continue;
        }
        run_sampling(a, &k, thread);
    }
    /* Whoever stops the run wakes the others. */
    notify(r);
    pthread_mutex_unlock(&r->lock);
    return 0;
}

/* The pool published a nested job: wake idle threads to help. Taking the lock orders
 * this after any thread's check for pending side work, so no wake-up is lost. */
static void wake_helpers(void *user)
{
    frl_run *r = user;
    pthread_mutex_lock(&r->lock);
    notify(r);
    pthread_mutex_unlock(&r->lock);
}

/* ---- train ---- */

/* Group g's env i draws from the stream (seed + g * golden, i), distinct from every
 * other group's; a restart after a failure moves to fresh streams: those of the
 * committed count, and of the resets this sampler made at that count (a group that
 * failed again before the next commit was reset into the same episodes). */
static frl_status reset_group(async_sampler *a, int32_t g, uint64_t restarts)
{
    frl_sampler_host *h = a->h;
    uint64_t seed = h->seed + (uint64_t)g * 0x9e3779b97f4a7c15ULL + restarts * 0xbf58476d1ce4e5b9ULL;
    if (a->resets_at == a->committed && restarts)
        seed += (uint64_t)a->resets_here * 0x94d049bb133111ebULL;
    frl_status st = frl_vec_env_reset_from(h->venvs[g], seed, 0);
    if (st != FRL_OK)
        return frl_fail_msg(h->err, st, frl_last_error());
    frl_rollout_zero_state(h->book, h->venvs[g], h->group_first[g]);
    a->g[g].restart = 0;
    return FRL_OK;
}

/* One more start_groups at the present committed count (see reset_group). */
static void count_resets(async_sampler *a)
{
    a->resets_here = a->resets_at == a->committed ? a->resets_here + 1 : 1;
    a->resets_at = a->committed;
}

/* The first call resets every group; later calls reset the groups whose step failed
 * (their observations may be the bad ones). A run saved after a failure says it has not
 * started (end), since its file cannot say which group failed: loaded, it resets all. */
static frl_status start_groups(async_sampler *a)
{
    frl_sampler_host *h = a->h;
    int all = !a->begun && !h->book->pr.started;
    uint64_t restarts = a->begun || a->committed > 0 ? (uint64_t)a->committed + 1 : 0;
    for (int32_t g = 0; g < h->groups; g++)
        if (all || a->g[g].restart) {
            frl_status st = reset_group(a, g, restarts);
            if (st != FRL_OK)
                return st;
        }
    count_resets(a);
    h->book->pr.started = 1;
    a->begun = 1;
    return FRL_OK;
}

/* A loaded trainer's first call: its rollouts go on from the saved run's count (those
 * learned, dropped for lag or lost to a failed update), since budgets count rollouts from the run's start
 * (a new run starts at 0), and its action
 * draws from the saved sampling counter (see count_act). */
static void number_rollouts(async_sampler *a)
{
    if (a->numbered)
        return;
    a->numbered = 1;
    const frl_progress *pr = &a->h->book->pr;
    a->committed = pr->updates + pr->slots_dropped + pr->lost;
    for (int32_t g = 0; g < a->h->groups; g++) {
        a->g[g].seq = a->committed;
        a->g[g].acts = a->h->book->pr.rollout_steps;
    }
}

/* Whether slot s in state st is one the sampler left so between calls: an open
 * rollout's (being written), or one of the last `ready` committed and not yet learned
 * (their records are intact: a record is reused only for a rollout `slots` later,
 * which could not get a slot while they hold theirs). */
static int slot_is_ours(const async_sampler *a, int32_t s, frl_slot_state st)
{
    for (int32_t i = 0; i < a->slots; i++) {
        const rollout *r = &a->open[i];
        if (r->slot != s || r->seq < 0)
            continue;
        if (st == FRL_SLOT_WRITING && r->seq >= a->committed)
            return 1;
        if (st == FRL_SLOT_READY && r->seq < a->committed && r->seq >= a->committed - a->ready)
            return 1;
    }
    return 0;
}

/* Between calls the learner holds no slot and the groups hold only their open
 * rollouts' slots and the ready ones; a slot held otherwise was taken through
 * frl_trainer_ring: the run would wait for it forever, or (one committed) learn from
 * it as if it were a rollout and leave one of its own ready for good. */
static frl_status check_ring_free(const async_sampler *a)
{
    static const char *const how[] = {"", "acquired for writing", "committed",
                                      "acquired for reading"};
    const frl_ring *ring = a->h->ring;
    for (int32_t s = 0; s < frl_ring_slots(ring); s++) {
        frl_slot_state st = frl_ring_slot_state(ring, s);
        if (st != FRL_SLOT_FREE && !slot_is_ours(a, s, st))
            return frl_fail(a->h->err, FRL_ERR_STATE, "async sampler: ring slot %d is held "
                            "outside the trainer (%s through frl_trainer_ring): give it back "
                            "(frl_ring_release, once acquired for reading) before training",
                            (int)s, how[st]);
    }
    return FRL_OK;
}

/* Acting starts from the policy's present weights. frl_trainer_load restores them after
 * create copied the fresh ones into the acting buffers, and nothing else published
 * since: acting lagged by every saved update, and with sampler.max_lag every rollout
 * was dropped. No reader holds a buffer between calls, so publishing does not wait;
 * the device model loads the new buffer from the host before its next batch. */
static void refresh_acting_weights(async_sampler *a)
{
    const frl_policy *p = a->h->policy;
    if (a->w.version[a->w.current] == p->version)
        return;
    frl_weights_publish(&a->w, p, NULL, NULL, a->h->err); /* no stage hook: cannot fail */
    a->dev_version = ~(uint64_t)0;
}

/* Ready rollouts a host read through frl_trainer_ring and released (reads take the
 * oldest first) are gone from the ring: counted as lost, as a failed update's rollout
 * (toward the budget), so the learner does not look for them (it failed the next call
 * with FRL_ERR_INTERNAL after stepping). */
static void forget_taken(async_sampler *a)
{
    const frl_ring *ring = a->h->ring;
    while (a->ready > 0) {
        int64_t oldest = a->committed - a->ready;
        const rollout *r = &a->open[oldest % a->slots];
        if (r->seq == oldest && frl_ring_slot_state(ring, r->slot) == FRL_SLOT_READY)
            return;
        a->ready--;
        a->h->book->pr.lost++;
    }
}

static frl_status begin(async_sampler *a, frl_run *r, int32_t index, int64_t total_steps)
{
    frl_sampler_host *h = a->h;
    forget_taken(a);
    frl_status st = check_ring_free(a);
    if (st != FRL_OK)
        return st;
    refresh_acting_weights(a);
    number_rollouts(a);
    st = start_groups(a);
    if (st != FRL_OK)
        return st;
    /* Whole rollouts, rounded up; total + per - 1 would overflow near INT64_MAX
     * ("train until the target or a stop"). */
    int64_t per = (int64_t)h->T * h->B;
    a->budget = total_steps / per + (total_steps % per != 0);
    a->num_updates = a->budget;
    a->done = 0;
    a->sampler_failed = 0;
    a->run = r;
    a->index = index;
    return FRL_OK;
}

/* After the run: give back the rollouts of failed groups, forget the run, and put the
 * run's error on the trainer it belongs to. */
static void end(async_sampler *a, const frl_run *r)
{
    /* A stop can leave a device batch's pieces untaken: sample them here, so its groups
     * step in the next call and its weights are unpinned. */
    if (a->dev_acting && a->db.left > 0) {
        task k = {.kind = TASK_SAMPLE, .first = a->db.next, .rows = a->db.rows - a->db.next};
        sample_piece(a, a->db.picked, &a->db.wv, k.first, k.rows);
        a->db.left = k.rows;
        sample_done(a, &k);
    }
    if (a->sampler_failed) {
        abandon_open(a);
        a->h->book->pr.started = 0; /* a save now: its loader resets every group */
        a->sampler_failed = 0;      /* handled: a later end must not abandon again */
    }
    a->run = NULL;
    /* Sampling went on after the last update, and the run may have ended on episodes
     * that finished since: the progress fields are made those the run ended on. */
    a->h->refresh_progress(a->h->owner);
    atomic_store(a->h->stop, 0);
    if (r->status != FRL_OK && r->failed == a->index)
        snprintf(a->h->err, FRL_ERRMSG_SIZE, "%s", r->err);
}

static frl_status init_run(frl_run *r, async_sampler *const *m, int32_t count)
{
    memset(r, 0, sizeof *r);
    atomic_init(&r->updating, 0);
    if (pthread_mutex_init(&r->lock, NULL) != 0)
        return FRL_ERR_THREAD;
    if (pthread_cond_init(&r->wake, NULL) != 0) {
        pthread_mutex_destroy(&r->lock);
        return FRL_ERR_THREAD;
    }
    for (int32_t i = 0; i < count; i++)
        r->m[i] = m[i];
    r->count = count;
    r->failed = -1;
    r->pool = m[0]->h->rt->pool;
    r->spin_s = 1e-9 * (double)frl_pool_spin_ns(r->pool);
    return FRL_OK;
}

static frl_status async_train_many(frl_sampler *const *s, int32_t count, int64_t total_steps,
                                   int32_t *failed)
{
    async_sampler *const *m = (async_sampler *const *)s;
    frl_run r;
    *failed = -1;
    /* Its loops run one per thread at once; inside a task they would run one inside
     * another on that thread, waiting for each other for good. */
    if (m[0]->threads > 1 && frl_pool_in_task(m[0]->h->rt->pool))
        return frl_fail(m[0]->h->err, FRL_ERR_STATE, "the async sampler (sampler.mode=async) "
                        "cannot train from inside a task of its runtime's threads "
                        "(frl_runtime_parallel_for): train there with sampler.mode=sync, "
                        "or give the trainer a runtime of its own");
    if (init_run(&r, m, count) != FRL_OK)
        return frl_fail(m[0]->h->err, FRL_ERR_THREAD, "async sampler: cannot initialise a mutex");
    frl_status st = FRL_OK;
    for (int32_t i = 0; i < count && st == FRL_OK; i++)
        if ((st = begin(m[i], &r, i, total_steps)) != FRL_OK)
            *failed = i;
    if (st == FRL_OK) {
        /* One long task per thread; nested pool calls become side jobs the idle
         * threads help with. */
        frl_pool_run_long(r.pool, m[0]->threads, worker, &r, wake_helpers, &r);
        st = r.status;
        *failed = r.failed;
    }
    for (int32_t i = 0; i < count; i++)
        end(m[i], &r);
    pthread_cond_destroy(&r.wake);
    pthread_mutex_destroy(&r.lock);
    return st;
}

static frl_status async_train(frl_sampler *a, int64_t total_steps)
{
    int32_t failed;
    frl_status st = async_train_many(&a, 1, total_steps, &failed);
    /* The message is on the trainer already; make it the thread's last error too. */
    if (st != FRL_OK)
        return frl_fail_msg(NULL, st, a->h->err);
    return FRL_OK;
}

const frl_sampler_ops frl_sampler_async = {
    .name = "async",
    .groups = async_groups,
    .slots = async_slots,
    .max_groups = FRL_MAX_GROUPS,
    .overlaps_learning = 1,
    .carries_state = 1,
    /* A checkpoint holds every group's envs and recurrent states as they are between
     * train calls; rollouts in flight are not saved (see async.h). */
    .no_save = NULL,
    .create = async_create,
    .destroy = async_destroy,
    .train = async_train,
    .train_many = async_train_many,
    .lock = async_lock,
    .unlock = async_unlock,
};
