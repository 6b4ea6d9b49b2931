/* The asynchronous sampler (sampler.mode=async): environment stepping, batched
 * inference and the learner run at the same time (Sample Factory's roles, SEED RL's
 * central inference).
 *
 * Work is split into tasks that any of the runtime's threads may take:
 *   STEP(g)  step group g's vec env and store the results in the ring;
 *   ACT(gs)  gather the observations of every group waiting for actions into one
 *            batch, run the actor on the acting weights, write actions back;
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
 * readers that hold the old buffer for one batch and wait on nothing. The group that is
 * furthest behind always owns an open slot, so some rollout always completes. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "cuda/plugin_api.h"
#include "trainer/trainer.h"
#include "rl/weights.h"

enum phase { PH_OPEN, PH_ACT, PH_STEP, PH_BUSY };

typedef struct group {
    int32_t phase;
    int32_t t;             /* next step of the rollout */
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
    int32_t stop;
    frl_status status;
    int32_t failed;          /* the trainer whose error ends the run */
    char err[FRL_ERRMSG_SIZE];
    struct frl_async *m[FRL_MAX_GROUPS];
    int32_t count;
    int32_t rr;              /* where the next search for a task starts */
    frl_pool *pool;
} frl_run;

typedef struct frl_async {
    frl_trainer *t;
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
    int32_t serial_steps;  /* host batch callbacks: one STEP at a time */
    int32_t stepping;      /* STEP tasks running */
    int32_t sampler_failed; /* a STEP or ACT failed: its rollouts are abandoned at the end */
    frl_weights w;
    int32_t threads, chunk;
    act_scratch *scratch;
    /* runtime.device=cuda: inference on a model of its own (its own stream, so batches
     * run beside the learner's epochs), one batch at a time, between page-locked
     * buffers; a single group's observations go up straight from the (page-locked) ring
     * slot. */
    void *dev;
    int32_t dev_rows;
    float *dev_obs, *dev_out;
    uint64_t dev_version;  /* of the acting weights in dev; ~0: must upload */
    int32_t dev_acting;    /* a device batch is running */
    int64_t dev_takes, dev_uploads; /* weight versions taken from a snapshot, uploaded */
    double busy_env, busy_act, learner_wait; /* seconds since the last update */
} frl_async;

/* Wake every waiting thread (called with the lock held). */
static void notify(frl_run *r)
{
    atomic_fetch_add_explicit(&r->events, 1, memory_order_relaxed);
    pthread_cond_broadcast(&r->wake);
}

/* ---- creation ---- */

static frl_status alloc_scratch(frl_async *a, const frl_policy *p, char *err)
{
    frl_allocator *al = &a->t->rt->alloc;
    a->scratch = frl_alloc(al, sizeof(act_scratch) * (size_t)a->threads, FRL_CACHE_LINE);
    if (!a->scratch)
        return frl_fail(err, FRL_ERR_NOMEM, "async sampler: out of memory");
    size_t obs = (size_t)a->t->B * (size_t)p->obs_w, ws = frl_policy_pass_floats(p, a->chunk, 0);
    for (int32_t i = 0; i < a->threads; i++) {
        a->scratch[i].obs = frl_alloc(al, sizeof(float) * obs, FRL_CACHE_LINE);
        a->scratch[i].ws = frl_alloc(al, sizeof(float) * ws, FRL_CACHE_LINE);
        if (!a->scratch[i].obs || !a->scratch[i].ws)
            return frl_fail(err, FRL_ERR_NOMEM, "async sampler: out of memory for %zu floats of "
                            "inference buffers per thread", obs + ws);
    }
    return FRL_OK;
}

static void init_groups(frl_async *a)
{
    frl_trainer *t = a->t;
    for (int32_t g = 0; g < t->groups; g++) {
        a->g[g].phase = PH_OPEN;
        a->g[g].slot = -1;
        if (t->venvs[g]->kind == VEC_BATCH)
            a->serial_steps = 1;
    }
    for (int32_t i = 0; i < a->slots; i++)
        a->open[i].seq = -1;
}

static frl_status open_device(frl_async *a)
{
    frl_trainer *t = a->t;
    const frl_policy *p = t->policy;
    a->dev_rows = t->B < p->dev_rows ? t->B : p->dev_rows;
    a->dev_version = ~(uint64_t)0;
    frl_status st = frl_policy_device_model(p, a->dev_rows, &a->dev, "async sampler");
    if (st != FRL_OK)
        return frl_fail_msg(t->err, st, frl_last_error());
    const frl_device *d = &t->rt->device;
    char why[FRL_ERRMSG_SIZE / 2] = "";
    size_t B = (size_t)t->B, f = sizeof(float);
    a->dev_obs = frl_device_host_alloc(d, &t->rt->alloc, f * B * (size_t)p->obs_w, why, sizeof why);
    if (a->dev_obs)
        a->dev_out = frl_device_host_alloc(d, &t->rt->alloc, f * B * (size_t)p->out_w, why,
                                           sizeof why);
    if (!a->dev_out)
        return frl_fail(t->err, FRL_ERR_NOMEM, "async sampler: buffers of device inference: %s",
                        why);
    return FRL_OK;
}

static void close_device(frl_async *a)
{
    frl_trainer *t = a->t;
    frl_device_host_free(&t->rt->device, &t->rt->alloc, a->dev_obs);
    frl_device_host_free(&t->rt->device, &t->rt->alloc, a->dev_out);
    if (a->dev)
        frl_policy_plugin(t->policy)->model_destroy(a->dev);
}

frl_status frl_async_create(struct frl_async **out, frl_trainer *t)
{
    frl_allocator *al = &t->rt->alloc;
    frl_async *a = frl_alloc(al, sizeof *a, FRL_CACHE_LINE);
    if (!a)
        return frl_fail(t->err, FRL_ERR_NOMEM, "async sampler: out of memory");
    *out = a; /* zeroed by frl_alloc */
    a->t = t;
    a->slots = frl_ring_slots(t->ring);
    a->threads = frl_runtime_threads(t->rt);
    /* Inference runs in pieces no larger than this; the kernels give the same bits at
     * any batch size, so the piece size changes speed only. */
    a->chunk = t->B < 256 ? t->B : 256;
    a->open = frl_alloc(al, sizeof(rollout) * (size_t)a->slots, FRL_CACHE_LINE);
    if (!a->open)
        return frl_fail(t->err, FRL_ERR_NOMEM, "async sampler: out of memory");
    init_groups(a);
    frl_status st = alloc_scratch(a, t->policy, t->err);
    if (st == FRL_OK)
        st = frl_weights_init(&a->w, al, t->policy, t->err);
    if (st == FRL_OK && t->policy->dev)
        st = open_device(a);
    return st;
}

void frl_async_destroy(struct frl_async *a)
{
    if (!a)
        return;
    frl_allocator *al = &a->t->rt->alloc;
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

void frl_async_lock(struct frl_async *a)
{
    if (a->run)
        pthread_mutex_lock(&a->run->lock);
}

void frl_async_unlock(struct frl_async *a)
{
    if (a->run)
        pthread_mutex_unlock(&a->run->lock);
}

void frl_async_device_loads(const struct frl_async *a, int64_t *taken, int64_t *uploaded)
{
    *taken = a->dev_takes;
    *uploaded = a->dev_uploads;
}

/* ---- rollouts (all under the lock) ---- */

/* Join the group's rollout, opening a slot for it if it is the first group there.
 * Returns 0 when the budget is spent or no slot is free (the learner frees one). */
static int open_rollout(frl_async *a, group *g)
{
    if (g->seq >= a->budget)
        return 0;
    rollout *r = &a->open[g->seq % a->slots];
    if (r->seq != g->seq) {
        /* The record held rollout seq - slots or older, committed already: the groups
         * are never more than `slots` rollouts apart, since the rollouts between the
         * last group and the first would all be open and hold every slot. */
        int32_t slot = frl_ring_try_acquire_write(a->t->ring);
        if (slot < 0)
            return 0;
        r->seq = g->seq;
        r->slot = slot;
        r->groups_done = 0;
        uint64_t *ver = frl_ring_at(a->t->ring, slot, FRL_RING_POLICY_VERSION);
        for (int32_t s = 0; s < a->t->T; s++)
            ver[s] = UINT64_MAX;
    }
    g->slot = r->slot;
    g->t = 0;
    g->phase = PH_ACT;
    return 1;
}

/* The group has written all T steps of its rollout. */
static void finish_rollout(frl_async *a, int32_t gi)
{
    frl_trainer *t = a->t;
    group *g = &a->g[gi];
    const frl_vec_env *v = t->venvs[gi];
    size_t ow = (size_t)t->policy->obs_w;
    memcpy((float *)frl_ring_at(t->ring, g->slot, FRL_RING_BOOTSTRAP_OBS) +
               (size_t)t->group_first[gi] * ow,
           frl_vec_env_observations(v), sizeof(float) * (size_t)v->n * ow);
    rollout *r = &a->open[g->seq % a->slots];
    if (++r->groups_done == t->groups) {
        frl_ring_commit(t->ring, r->slot);
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
static void abandon_open(frl_async *a)
{
    for (int32_t i = 0; i < a->slots; i++) {
        rollout *r = &a->open[i];
        if (r->seq >= a->committed)
            frl_ring_abandon(a->t->ring, r->slot);
        if (r->seq >= a->committed)
            r->seq = -1;
    }
    for (int32_t gi = 0; gi < a->t->groups; gi++) {
        a->g[gi].seq = a->committed;
        a->g[gi].slot = -1;
        a->g[gi].phase = PH_OPEN;
    }
}

/* ---- tasks ---- */

typedef struct task {
    int kind;              /* 0 none, 1 step, 2 act, 3 learn */
    int32_t group;         /* step */
    int32_t count;         /* act: groups in the batch (scratch.picked) */
} task;

enum { TASK_NONE, TASK_STEP, TASK_ACT, TASK_LEARN };

static int take_step(frl_async *a, task *k)
{
    if (a->serial_steps && a->stepping > 0)
        return 0;
    for (int32_t gi = 0; gi < a->t->groups; gi++)
        if (a->g[gi].phase == PH_STEP) {
            a->g[gi].phase = PH_BUSY;
            a->stepping++;
            k->kind = TASK_STEP;
            k->group = gi;
            return 1;
        }
    return 0;
}

static int take_act(frl_async *a, task *k, int32_t thread)
{
    int32_t n = 0;
    if (a->dev_acting)
        return 0; /* the device model takes one batch at a time */
    for (int32_t gi = 0; gi < a->t->groups; gi++) {
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
static const float *store_obs(frl_async *a, int32_t gi)
{
    frl_trainer *t = a->t;
    const group *g = &a->g[gi];
    const frl_vec_env *v = t->venvs[gi];
    size_t ow = (size_t)t->policy->obs_w;
    float *dst = (float *)frl_ring_at(t->ring, g->slot, FRL_RING_OBSERVATIONS) +
                 ((size_t)g->t * (size_t)t->B + (size_t)t->group_first[gi]) * ow;
    memcpy(dst, frl_vec_env_observations(v), sizeof(float) * (size_t)v->n * ow);
    return dst;
}

/* Sample row r of the batch (env `local` of group gi) from the head outputs. */
static void act_row(frl_async *a, const frl_weights_view *wv, int32_t gi, int32_t local,
                    const float *out)
{
    frl_trainer *t = a->t;
    const frl_policy *p = t->policy;
    const group *g = &a->g[gi];
    size_t row = (size_t)g->t * (size_t)t->B + (size_t)(t->group_first[gi] + local);
    size_t ab = p->discrete ? sizeof(int32_t) : sizeof(float) * (size_t)p->out_w;
    void *act = (unsigned char *)frl_ring_at(t->ring, g->slot, FRL_RING_ACTIONS) + row * ab;
    float *lp = (float *)frl_ring_at(t->ring, g->slot, FRL_RING_LOG_PROBS) + row;
    /* Each env samples from its own stream at the group's counter, so an env's
     * actions do not depend on which batch it was gathered into. */
    *lp = (float)frl_policy_head_act(p, wv->params, out, 0,
                                     (uint64_t)(t->group_first[gi] + local), (uint64_t)g->acts,
                                     act);
    frl_trainer_env_action(t, gi, local, act);
}

/* The batch's observations, in group order: stored in the groups' rows of their slots,
 * and gathered into buf when there are several groups. */
static const float *gather_obs(frl_async *a, const task *k, int32_t thread, float *buf,
                               int32_t *rows)
{
    const frl_trainer *t = a->t;
    size_t ow = (size_t)t->policy->obs_w;
    const int32_t *picked = a->scratch[thread].picked;
    const float *one = NULL;
    int32_t n = 0;
    for (int32_t i = 0; i < k->count; i++) {
        int32_t gi = picked[i], m = t->venvs[gi]->n;
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

/* Where the next row of the batch goes: a group and an env in it. */
typedef struct row_cursor {
    int32_t pi, local;
} row_cursor;

/* Sample n rows of head outputs out [n x out_w], continuing at *c. */
static void sample_rows(frl_async *a, const frl_weights_view *wv, const int32_t *picked,
                        int32_t n, const float *out, row_cursor *c)
{
    const frl_trainer *t = a->t;
    size_t ow = (size_t)t->policy->out_w;
    for (int32_t r = 0; r < n; r++) {
        act_row(a, wv, picked[c->pi], c->local, out + (size_t)r * ow);
        if (++c->local == t->venvs[picked[c->pi]]->n) {
            c->pi++;
            c->local = 0;
        }
    }
}

static void act_batch_cpu(frl_async *a, const task *k, int32_t thread,
                          const frl_weights_view *wv)
{
    const frl_policy *p = a->t->policy;
    act_scratch *sc = &a->scratch[thread];
    int32_t rows;
    const float *obs = gather_obs(a, k, thread, sc->obs, &rows);
    row_cursor c = {0, 0};
    for (int32_t first = 0; first < rows; first += a->chunk) {
        int32_t n = rows - first < a->chunk ? rows - first : a->chunk;
        frl_pass f;
        frl_policy_pass_layout(p, n, 0, sc->ws, &f);
        f.norm = &wv->norm;
        frl_policy_forward_heads(p, wv->params, n, obs + (size_t)first * (size_t)p->obs_w, &f,
                                 FRL_HEAD_ACTOR);
        sample_rows(a, wv, sc->picked, n, f.out, &c);
    }
}

/* The acting weights wv into the device model: from the learner model's snapshot of the
 * same index when it staged one (a device-to-device copy after the learner stream's
 * event, queued before the batch's forward, which waits for it), else from the host. */
static frl_status load_acting_weights(frl_async *a, const frl_weights_view *wv, char *err)
{
    const frl_policy *p = a->t->policy;
    if (wv->staged) {
        char why[FRL_ERRMSG_SIZE - 64] = "";
        if (frl_policy_plugin(p)->model_take(a->dev, p->dev, wv->index, why, sizeof why) != 0)
            return frl_fail(err, FRL_ERR_DEVICE, "taking the learner's weights on %s: %s",
                            p->rt->device.name, why);
        a->dev_takes++;
        return FRL_OK;
    }
    int norm = p->obs_norm;
    a->dev_uploads++;
    return frl_policy_device_load(p, a->dev, wv->params, norm ? wv->norm.use_mean : NULL,
                                  norm ? wv->norm.use_inv_std : NULL, err);
}

/* The batch on the device model, loading the acting weights when they moved on. The
 * heads are sampled on the host, from the same streams as on the CPU. */
static frl_status act_batch_device(frl_async *a, const task *k, int32_t thread,
                                   const frl_weights_view *wv, char *err)
{
    const frl_policy *p = a->t->policy;
    int32_t rows;
    const float *obs = gather_obs(a, k, thread, a->dev_obs, &rows);
    frl_status st = FRL_OK;
    if (a->dev_version != wv->version) {
        st = load_acting_weights(a, wv, err);
        a->dev_version = st == FRL_OK ? wv->version : ~(uint64_t)0;
    }
    if (st == FRL_OK)
        st = frl_policy_device_infer(p, a->dev, a->dev_rows, rows, obs, a->dev_out, NULL, err);
    if (st != FRL_OK) {
        a->dev_version = ~(uint64_t)0; /* the device's copy may be half written */
        return st;
    }
    row_cursor c = {0, 0};
    sample_rows(a, wv, a->scratch[thread].picked, rows, a->dev_out, &c);
    return FRL_OK;
}

/* One batch on the acting weights; *version: theirs. */
static frl_status act_batch(frl_async *a, const task *k, int32_t thread, uint64_t *version,
                            char *err)
{
    frl_weights_view wv;
    frl_weights_pin(&a->w, a->t->policy, &wv);
    *version = wv.version;
    frl_status st = FRL_OK;
    if (a->dev)
        st = act_batch_device(a, k, thread, &wv, err);
    else
        act_batch_cpu(a, k, thread, &wv);
    frl_weights_unpin(&a->w, &wv);
    return st;
}

static void act_done(frl_async *a, const task *k, int32_t thread, uint64_t version)
{
    for (int32_t i = 0; i < k->count; i++) {
        group *g = &a->g[a->scratch[thread].picked[i]];
        uint64_t *ver = frl_ring_at(a->t->ring, g->slot, FRL_RING_POLICY_VERSION);
        /* A step's version is the oldest that acted in it: lag is never understated. */
        ver[g->t] = version < ver[g->t] ? version : ver[g->t];
        g->acts++;
        g->phase = PH_STEP;
    }
}

static void step_done(frl_async *a, int32_t gi)
{
    frl_trainer *t = a->t;
    group *g = &a->g[gi];
    frl_trainer_store_step(t, gi, g->slot, g->t);
    t->env_steps += t->venvs[gi]->n;
    if (++g->t == t->T)
        finish_rollout(a, gi);
    else
        g->phase = PH_ACT;
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
static void act_failed(frl_async *a, const task *k, int32_t thread, frl_status st,
                       const char *msg)
{
    for (int32_t i = 0; i < k->count; i++)
        a->g[a->scratch[thread].picked[i]].phase = PH_ACT;
    a->sampler_failed = 1;
    char full[FRL_ERRMSG_SIZE];
    snprintf(full, sizeof full, "async sampler: %s", msg);
    fail_locked(a->run, a->index, st, full);
}

/* Run a sampling task without the lock; account for it with the lock. */
static void run_sampling(frl_async *a, const task *k, int32_t thread)
{
    double t0 = frl_now();
    frl_status st = FRL_OK;
    uint64_t version = 0;
    char err[FRL_ERRMSG_SIZE] = "";
    if (k->kind == TASK_STEP)
        st = frl_vec_env_step(a->t->venvs[k->group]);
    else
        st = act_batch(a, k, thread, &version, err);
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
            fail_locked(a->run, a->index, st, frl_vec_env_last_error(a->t->venvs[k->group]));
        }
    } else {
        a->busy_act += dt;
        a->dev_acting = 0;
        if (st == FRL_OK)
            act_done(a, k, thread, version);
        else
            act_failed(a, k, thread, st, err);
    }
    notify(a->run);
}

/* ---- the learner ---- */

/* Lag of the slot's steps behind the learner's present version. */
static void slot_lag(frl_async *a, int32_t slot, double *mean, double *max)
{
    const uint64_t *ver = frl_ring_at(a->t->ring, slot, FRL_RING_POLICY_VERSION);
    uint64_t now = a->t->policy->version;
    double sum = 0, hi = 0;
    for (int32_t s = 0; s < a->t->T; s++) {
        double lag = (double)(now - ver[s]);
        sum += lag;
        hi = lag > hi ? lag : hi;
    }
    *mean = sum / a->t->T;
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
    frl_async *a = ctx;
    const frl_policy *p = a->t->policy;
    *staged = 0;
    if (!p->dev || p->dev_version != v->version)
        return FRL_OK;
    int norm = p->obs_norm;
    char why[FRL_ERRMSG_SIZE - 64] = "";
    if (frl_policy_plugin(p)->model_stage(p->dev, v->index, norm ? v->norm.use_mean : NULL,
                                          norm ? v->norm.use_inv_std : NULL, v->norm.clip, why,
                                          sizeof why) != 0)
        return frl_fail(err, FRL_ERR_DEVICE, "async learner: staging the weights on %s: %s",
                        p->rt->device.name, why);
    *staged = 1;
    return FRL_OK;
}

static frl_status learn_next(frl_async *a)
{
    frl_trainer *t = a->t;
    int32_t slot;
    frl_status st = frl_ring_acquire_read(t->ring, &slot);
    if (st != FRL_OK)
        return frl_fail(t->err, FRL_ERR_INTERNAL, "async learner: a committed rollout is missing "
                        "from the ring: %s", frl_ring_last_error(t->ring));
    double mean, max;
    slot_lag(a, slot, &mean, &max);
    int64_t max_lag = frl_config_int(t->cfg, "sampler.max_lag");
    if (max_lag > 0 && max > (double)max_lag) {
        frl_ring_release(t->ring, slot);
        pthread_mutex_lock(&a->run->lock);
        t->slots_dropped++;
        t->metrics.slots_dropped = t->slots_dropped;
        notify(a->run);
        pthread_mutex_unlock(&a->run->lock);
        return FRL_OK;
    }
    if ((st = t->learn(t, slot, a->num_updates)) != FRL_OK)
        return st;
    /* A failed stage still publishes the host copy, which the sampler then acts from;
     * the update's metrics are kept and the failure ends the call. */
    frl_status staged = frl_weights_publish(&a->w, t->policy, a->dev ? stage_on_device : NULL,
                                            a, t->err);
    pthread_mutex_lock(&a->run->lock);
    frl_metrics *m = &t->metrics;
    m->time_env = a->busy_env;
    m->time_inference = a->busy_act;
    m->time_waiting = a->learner_wait;
    m->policy_lag_mean = mean;
    m->policy_lag_max = max;
    m->slots_dropped = t->slots_dropped;
    a->busy_env = a->busy_act = a->learner_wait = 0;
    /* A slot is free again: wake groups waiting for one. */
    notify(a->run);
    pthread_mutex_unlock(&a->run->lock);
    if (staged != FRL_OK)
        return staged;
    return frl_trainer_after_update(t);
}

/* The caller's thread, under the lock: is the run over? A stop request of any
 * trainer ends it; a trainer at its budget or target stops taking tasks, and the run
 * ends when all have. */
static int run_finished(frl_run *r)
{
    if (r->stop)
        return 1;
    int all_done = 1;
    for (int32_t i = 0; i < r->count; i++) {
        frl_async *a = r->m[i];
        frl_trainer *t = a->t;
        if (atomic_exchange(&t->stop, 0)) {
            char msg[FRL_ERRMSG_SIZE];
            snprintf(msg, sizeof msg, "training stopped by request at %lld steps",
                     (long long)t->env_steps);
            fail_locked(r, i, FRL_ERR_INTERRUPTED, msg);
            return 1;
        }
        if (!a->done && (t->updates + t->slots_dropped >= a->budget ||
                         frl_trainer_target_reached(t)))
            a->done = 1;
        all_done &= a->done;
    }
    r->stop = all_done;
    return all_done;
}

/* Spin for up to spin_s while nothing happens (the next task of a stepping loop is
 * usually microseconds away, and a condition variable's wake-up costs about as much),
 * then sleep. Events are bumped under the lock, so one that lands after the spin is
 * seen by the check that precedes the wait. */
static void spin_then_wait(frl_run *r)
{
    uint64_t seen = atomic_load_explicit(&r->events, memory_order_relaxed);
    pthread_mutex_unlock(&r->lock);
    double end = frl_now() + r->spin_s;
    for (uint32_t i = 1;; i++) {
        if (atomic_load_explicit(&r->events, memory_order_relaxed) != seen)
            break;
        if ((i & 63) == 0 && frl_now() > end)
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

static int take_learn(frl_async *a, task *k)
{
    if (a->ready == 0)
        return 0;
    a->ready--;
    k->kind = TASK_LEARN;
    return 1;
}

/* The next task of any trainer still running, searched from r->rr so that no trainer
 * starves: learning first (thread 0 only), then stepping (with a serial host callback
 * the callback is the resource to keep busy, and the batch of actions grows while it
 * runs), then inference. */
static int take_any(frl_run *r, int32_t thread, frl_async **who, task *k)
{
    for (int pass = thread == 0 ? 0 : 1; pass < 3; pass++)
        for (int32_t j = 0; j < r->count; j++) {
            frl_async *a = r->m[(r->rr + j) % r->count];
            if (a->done)
                continue;
            int got = pass == 0 ? take_learn(a, k)
                    : pass == 1 ? take_step(a, k)
                                : take_act(a, k, thread);
            if (got) {
                *who = a;
                r->rr = (r->rr + j + 1) % r->count;
                return 1;
            }
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
        if (thread == 0 ? run_finished(r) : r->stop)
            break;
        frl_async *a;
        task k;
        if (!take_any(r, thread, &a, &k)) {
            idle(r, thread);
            continue;
        }
        pthread_mutex_unlock(&r->lock);
        if (k.kind == TASK_LEARN) {
            frl_status st = learn_next(a);
            pthread_mutex_lock(&r->lock);
            if (st != FRL_OK)
                fail_locked(r, a->index, st, a->t->err);
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
 * other group's; a restart after a failure moves to fresh streams. */
static frl_status reset_group(frl_async *a, int32_t g, uint64_t restarts)
{
    frl_trainer *t = a->t;
    uint64_t seed = t->seed + (uint64_t)g * 0x9e3779b97f4a7c15ULL + restarts * 0xbf58476d1ce4e5b9ULL;
    frl_status st = frl_vec_env_reset(t->venvs[g], seed);
    if (st != FRL_OK)
        return frl_fail_msg(t->err, st, frl_vec_env_last_error(t->venvs[g]));
    a->g[g].restart = 0;
    return FRL_OK;
}

/* The first call resets every group; later calls reset the groups whose step failed
 * (their observations may be the bad ones). */
static frl_status start_groups(frl_async *a)
{
    frl_trainer *t = a->t;
    for (int32_t g = 0; g < t->groups; g++)
        if (!t->started || a->g[g].restart) {
            frl_status st = reset_group(a, g, t->started ? (uint64_t)a->committed + 1 : 0);
            if (st != FRL_OK)
                return st;
        }
    t->started = 1;
    return FRL_OK;
}

static frl_status begin(frl_async *a, frl_run *r, int32_t index, int64_t total_steps)
{
    frl_trainer *t = a->t;
    frl_status st = start_groups(a);
    if (st != FRL_OK)
        return st;
    int64_t per = (int64_t)t->T * t->B;
    a->budget = (total_steps + per - 1) / per;
    a->num_updates = a->budget;
    a->done = 0;
    a->sampler_failed = 0;
    a->run = r;
    a->index = index;
    return FRL_OK;
}

/* After the run: give back the rollouts of failed groups, forget the run, and put the
 * run's error on the trainer it belongs to. */
static void end(frl_async *a, const frl_run *r)
{
    if (a->sampler_failed)
        abandon_open(a);
    a->run = NULL;
    /* Sampling went on after the last update, and the run may have ended on episodes
     * that finished since: the progress fields are made those the run ended on. */
    frl_trainer_refresh_progress(a->t);
    atomic_store(&a->t->stop, 0);
    if (r->status != FRL_OK && r->failed == a->index)
        snprintf(a->t->err, sizeof a->t->err, "%s", r->err);
}

static frl_status init_run(frl_run *r, frl_async *const *m, int32_t count)
{
    memset(r, 0, sizeof *r);
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
    r->pool = m[0]->t->rt->pool;
    r->spin_s = 1e-9 * (double)frl_pool_spin_ns(r->pool);
    return FRL_OK;
}

frl_status frl_async_train_many(struct frl_async *const *m, int32_t count, int64_t total_steps,
                                int32_t *failed)
{
    frl_run r;
    *failed = -1;
    if (init_run(&r, m, count) != FRL_OK)
        return frl_fail(m[0]->t->err, FRL_ERR_THREAD, "async sampler: cannot initialise a mutex");
    frl_status st = FRL_OK;
    for (int32_t i = 0; i < count && st == FRL_OK; i++)
        if ((st = begin(m[i], &r, i, total_steps)) != FRL_OK)
            *failed = i;
    if (st == FRL_OK) {
        /* One long task per thread; nested pool calls become side jobs the idle
         * threads help with. */
        frl_pool_set_side_wake(r.pool, wake_helpers, &r);
        frl_pool_run(r.pool, m[0]->threads, worker, &r, NULL);
        frl_pool_set_side_wake(r.pool, NULL, NULL);
        st = r.status;
        *failed = r.failed;
    }
    for (int32_t i = 0; i < count; i++)
        end(m[i], &r);
    pthread_cond_destroy(&r.wake);
    pthread_mutex_destroy(&r.lock);
    return st;
}

frl_status frl_async_train(struct frl_async *a, int64_t total_steps)
{
    int32_t failed;
    frl_status st = frl_async_train_many(&a, 1, total_steps, &failed);
    /* The message is on the trainer already; make it the thread's last error too. */
    if (st != FRL_OK)
        return frl_fail_msg(NULL, st, a->t->err);
    return FRL_OK;
}
