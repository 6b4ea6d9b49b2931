/* The synchronous sampler (sampler.mode=sync): one vec env; each update acts and steps
 * T times into a ring slot, then the learner takes the slot on the same thread. */
#include <stdint.h>
#include <string.h>

#include "core/device.h"
#include "env/vec_step.h"
#include "rl/policy_rnn.h"
#include "sampler/sampler.h"

typedef struct sync_sampler {
    frl_sampler base;
    int32_t slot;               /* being written */
    int32_t act_rows;           /* rows per acting task */
    int32_t threads;
    float **ws;                 /* per thread: acting workspace */
    float *dev_out;             /* runtime.device=cuda: the actor's outputs of one step */
    float *dev_stacked;         /* and a frame stack's rows, the device's input */
    /* the rollout's times, into the metrics once it is whole (a failed one left the
     * last update's metrics with its partial times) */
    double time_env, time_inference;
} sync_sampler;

static int32_t sync_groups(const frl_config *cfg)
{
    (void)cfg;
    return 1;
}

static int32_t sync_slots(const frl_config *cfg, int32_t groups)
{
    (void)groups;
    (void)cfg;
    return 1;
}

static void sync_destroy(frl_sampler *base)
{
    sync_sampler *s = (sync_sampler *)base;
    if (!s)
        return;
    frl_runtime *rt = s->base.h->rt;
    for (int32_t i = 0; s->ws && i < s->threads; i++)
        frl_free(&rt->alloc, s->ws[i]);
    frl_free(&rt->alloc, s->ws);
    if (s->dev_out)
        frl_device_host_free(&rt->device, &rt->alloc, s->dev_out);
    if (s->dev_stacked)
        frl_device_host_free(&rt->device, &rt->alloc, s->dev_stacked);
    frl_free(&rt->alloc, s);
}

/* Sync sampling on a device: one forward of all envs per step into a pinned buffer,
 * from which the pool's tasks sample (with a frame stack, of the envs' stacks, built in
 * another). */
static frl_status alloc_device_outputs(sync_sampler *s)
{
    const frl_sampler_host *h = s->base.h;
    const frl_policy *p = h->policy;
    size_t bytes = sizeof(float) * (size_t)h->B * (size_t)p->out_w;
    char why[FRL_ERRMSG_SIZE / 2] = "";
    s->dev_out = frl_device_host_alloc(&h->rt->device, &h->rt->alloc, bytes, why, sizeof why);
    if (s->dev_out && p->stack > 1)
        s->dev_stacked = frl_device_host_alloc(&h->rt->device, &h->rt->alloc,
                                               sizeof(float) * (size_t)h->B *
                                                   (size_t)frl_policy_input_row_w(p),
                                               why, sizeof why);
    if (!s->dev_out || (p->stack > 1 && !s->dev_stacked))
        return frl_fail(h->err, FRL_ERR_NOMEM, "the buffers of %d envs' inference: %s",
                        (int)h->B, why);
    return FRL_OK;
}

/* The device's input for this step: the observations, or each env's frame stack (from
 * zeros where the vec env's autoreset began an episode; the state steps on in
 * device_act once the forward succeeded, so a failed one keeps the frames the envs
 * hold: they did not step). */
static const float *device_input(sync_sampler *s, const float *obs)
{
    const frl_sampler_host *h = s->base.h;
    if (!s->dev_stacked)
        return obs;
    frl_policy_stack_build(h->policy, h->B, obs, h->book->state,
                           frl_vec_env_reset_steps(h->venvs[0]), s->dev_stacked);
    return s->dev_stacked;
}

/* The actor's outputs of every env on the device, into s->dev_out: a recurrent
 * policy's step carries the envs' states (zeros where the vec env's autoreset began an
 * episode), any other policy's forward reads device_input. */
static frl_status device_act(sync_sampler *s, const float *obs)
{
    const frl_sampler_host *h = s->base.h;
    if (h->policy->towers)
        return frl_policy_device_step(h->policy, h->B, obs, h->book->state,
                                      frl_vec_env_reset_steps(h->venvs[0]), s->dev_out, NULL,
                                      h->err);
    frl_status st = frl_policy_device_forward(h->policy, h->B, device_input(s, obs),
                                              s->dev_out, NULL, h->err);
    if (st == FRL_OK && s->dev_stacked)
        frl_policy_stack_advance(h->policy, h->B, obs, h->book->state,
                                 frl_vec_env_reset_steps(h->venvs[0]));
    return st;
}

/* Acting splits the envs over the threads (an action depends only on its row, so the
 * split changes no result), in pieces of at most 256 rows. */
static frl_status alloc_workspaces(sync_sampler *s)
{
    const frl_sampler_host *h = s->base.h;
    s->threads = frl_runtime_threads(h->rt);
    int32_t per = (h->B + s->threads - 1) / s->threads;
    s->act_rows = per < 256 ? per : 256;
    s->ws = frl_alloc(&h->rt->alloc, sizeof(float *) * (size_t)s->threads, 64);
    if (!s->ws)
        return frl_fail(h->err, FRL_ERR_NOMEM, "sync sampler: out of memory");
    size_t floats = frl_policy_pass_floats(h->policy, s->act_rows, 0);
    for (int32_t i = 0; i < s->threads; i++)
        if (!(s->ws[i] = frl_alloc(&h->rt->alloc, sizeof(float) * floats, 64)))
            return frl_fail(h->err, FRL_ERR_NOMEM, "sync sampler: out of memory for workspaces");
    return FRL_OK;
}

static frl_status sync_create(frl_sampler **out, frl_sampler_host *h)
{
    sync_sampler *s = frl_alloc(&h->rt->alloc, sizeof *s, FRL_CACHE_LINE);
    *out = (frl_sampler *)s;
    if (!s)
        return frl_fail(h->err, FRL_ERR_NOMEM, "sync sampler: out of memory");
    s->base.ops = &frl_sampler_sync;
    s->base.h = h;
    frl_status st = alloc_workspaces(s);
    if (st == FRL_OK && h->policy->dev)
        st = alloc_device_outputs(s);
    return st;
}

/* ---- acting ---- */

typedef struct act_job {
    sync_sampler *s;
    int32_t step;
} act_job;

static int act_task(void *user, int32_t task, int32_t thread)
{
    act_job *j = user;
    sync_sampler *s = j->s;
    const frl_sampler_host *h = s->base.h;
    const frl_policy *p = h->policy;
    int32_t first = task * s->act_rows;
    int32_t rows = h->B - first < s->act_rows ? h->B - first : s->act_rows;
    size_t row0 = (size_t)j->step * (size_t)h->B + (size_t)first;
    const float *obs = (const float *)frl_ring_at(h->ring, s->slot, FRL_RING_OBSERVATIONS) +
                       row0 * (size_t)p->obs_w;
    unsigned char *act = frl_ring_at(h->ring, s->slot, FRL_RING_ACTIONS);
    float *lp = (float *)frl_ring_at(h->ring, s->slot, FRL_RING_LOG_PROBS) + row0;
    size_t ab = p->discrete ? sizeof(int32_t) : sizeof(float) * (size_t)p->out_w;
    frl_pass f;
    frl_policy_pass_layout(p, rows, 0, s->ws[thread], &f);
    /* Values come later, in one batch (the learner's). On a device the outputs are
     * there already (rollout_step). */
    if (s->dev_out)
        f.out = s->dev_out + (size_t)first * (size_t)p->out_w;
    else if (p->state_w)
        /* The vec env's autoreset flags of the last step start those rows' episodes. */
        frl_policy_state_step(p, p->params, &p->norm, rows, obs,
                              h->book->state + (size_t)first * (size_t)p->state_w,
                              frl_vec_env_reset_steps(h->venvs[0]) + first, s->ws[thread],
                              FRL_HEAD_ACTOR, &f.out, NULL);
    else
        frl_policy_forward_heads(p, p->params, rows, obs, &f, FRL_HEAD_ACTOR);
    for (int32_t r = 0; r < rows; r++) {
        void *a = act + (row0 + (size_t)r) * ab;
        lp[r] = (float)frl_policy_head_act(p, p->params, f.out + (size_t)r * (size_t)p->out_w, 0,
                                          (uint64_t)(h->env_first + first + r),
                                          (uint64_t)h->book->pr.rollout_steps, a);
        frl_rollout_env_action(p, h->venvs[0], first + r, a);
    }
    return 0;
}

/* *clock is the time the step starts, and becomes the time it ends: two clock reads a
 * step, not three. */
static frl_status rollout_step(sync_sampler *s, int32_t step, double *clock)
{
    frl_sampler_host *h = s->base.h;
    frl_vec_env *venv = h->venvs[0];
    size_t ow = (size_t)h->policy->obs_w, B = (size_t)h->B;
    float *obs = (float *)frl_ring_at(h->ring, s->slot, FRL_RING_OBSERVATIONS) + (size_t)step * B * ow;
    memcpy(obs, frl_vec_env_observations(venv), sizeof(float) * B * ow);
    ((uint64_t *)frl_ring_at(h->ring, s->slot, FRL_RING_POLICY_VERSION))[step] = h->policy->version;
    act_job j = {s, step};
    int32_t failed, tasks = (h->B + s->act_rows - 1) / s->act_rows;
    if (s->dev_out) {
        frl_status st = device_act(s, obs);
        if (st != FRL_OK)
            return st;
    }
    if (frl_pool_run(h->rt->pool, tasks, act_task, &j, &failed) != 0)
        return frl_fail(h->err, FRL_ERR_INTERNAL, "acting failed in task %d", (int)failed);
    double t1 = frl_now();
    frl_status st = frl_vec_env_step_held(venv);
    if (st != FRL_OK) {
        /* A failed step leaves observations that mean nothing (a host's NaN among
         * them): the next train starts from a reset, not from them, as async does. */
        h->book->pr.started = 0;
        return frl_fail_msg(h->err, st, frl_last_error());
    }
    frl_rollout_store_step(h->book, h->ring, venv, 0, s->slot, step);
    h->book->pr.rollout_steps++;
    h->book->pr.env_steps += (int64_t)h->B * h->ranks;
    double t2 = frl_now();
    s->time_inference += t1 - *clock;
    s->time_env += t2 - t1;
    *clock = t2;
    return FRL_OK;
}

static frl_status rollout(sync_sampler *s)
{
    frl_sampler_host *h = s->base.h;
    frl_status st = frl_ring_acquire_write(h->ring, &s->slot);
    if (st != FRL_OK)
        return frl_fail_msg(h->err, st, frl_ring_last_error(h->ring));
    s->time_env = s->time_inference = 0;
    frl_rollout_begin_state(h->book, h->ring, s->slot, h->venvs[0], 0);
    double clock = frl_now();
    int32_t steps = 0, stop = 0;
    if (h->rollout_begins)
        st = h->rollout_begins(h->owner);
    for (; steps < h->T && st == FRL_OK && !stop; steps++) {
        st = rollout_step(s, steps, &clock);
        if (st == FRL_OK && h->step_done)
            st = h->step_done(h->owner, steps + 1, &stop);
    }
    h->ring->slot[s->slot].steps = steps;
    if (st == FRL_OK && h->rollout_ends)
        st = h->rollout_ends(h->owner, steps);
    if (st != FRL_OK) {
        /* The slot is given back, so the run can go on after the caller fixes the cause. */
        frl_ring_abandon(h->ring, s->slot);
        return st;
    }
    memcpy(frl_ring_at(h->ring, s->slot, FRL_RING_BOOTSTRAP_OBS), frl_vec_env_observations(h->venvs[0]),
           sizeof(float) * (size_t)h->B * (size_t)h->policy->obs_w);
    return frl_ring_commit(h->ring, s->slot);
}

/* ---- the loop ---- */

static frl_status learn(frl_sampler_host *h, int64_t num_updates)
{
    int32_t slot;
    frl_status st = frl_ring_acquire_read(h->ring, &slot);
    if (st != FRL_OK)
        return frl_fail_msg(h->err, st, frl_ring_last_error(h->ring));
    return h->learn(h->owner, slot, num_updates);
}

static frl_status start(frl_sampler_host *h)
{
    if (h->book->pr.started)
        return FRL_OK;
    /* A run's first start resets from the seed; a distributed run resumed (envs not
     * restored) from streams of its update count, not the start's episodes again. */
    uint64_t salt = (uint64_t)h->book->pr.updates * 0x9e3779b97f4a7c15ULL;
    frl_status st = frl_vec_env_reset_from(h->venvs[0], h->seed ^ salt, h->env_first);
    if (st != FRL_OK)
        return frl_fail_msg(h->err, st, frl_last_error());
    frl_rollout_zero_state(h->book, h->venvs[0], 0);
    h->book->pr.started = 1;
    return FRL_OK;
}

typedef struct sync_update {
    sync_sampler *s;
    int64_t num_updates;
} sync_update;

static frl_status rollout_and_learn(void *arg)
{
    sync_update *u = arg;
    frl_status st = rollout(u->s);
    if (st != FRL_OK)
        return st;
    frl_metrics *m = u->s->base.h->metrics; /* the update's own, which learning adds to */
    m->time_env = u->s->time_env;
    m->time_inference = u->s->time_inference;
    return learn(u->s->base.h, u->num_updates);
}

/* Between calls the ring's one slot is free (a failed rollout or update gives it back),
 * so a slot in any other state was taken through frl_trainer_ring. Refused before the
 * envs are reset, and by name: acquire_write said only "no slot is free". */
static frl_status check_ring_free(const frl_sampler_host *h)
{
    static const char *const how[] = {"", "acquired for writing", "committed",
                                      "acquired for reading"};
    for (int32_t s = 0; s < frl_ring_slots(h->ring); s++) {
        frl_slot_state st = frl_ring_slot_state(h->ring, s);
        if (st != FRL_SLOT_FREE)
            return frl_fail(h->err, FRL_ERR_STATE, "sync sampler: ring slot %d is held outside "
                            "the trainer (%s through frl_trainer_ring): give it back "
                            "(frl_ring_release, once acquired for reading) before training",
                            (int)s, how[st]);
    }
    return FRL_OK;
}

static frl_status sync_train(frl_sampler *base, int64_t total_steps)
{
    frl_sampler_host *h = base->h;
    int64_t per = (int64_t)h->T * h->B * h->ranks;
    /* Whole rollouts, rounded up, without total + per - 1 (it wrapped negative near
     * INT64_MAX, "train until the target or a stop", and DQN's epsilon fell to its
     * final value after one update); at most INT64_MAX / per, since learners multiply
     * it by per again. */
    int64_t updates = total_steps / per + (total_steps % per != 0);
    sync_update u = {(sync_sampler *)base, updates < INT64_MAX / per ? updates : INT64_MAX / per};
    frl_status st = check_ring_free(h);
    if (st == FRL_OK)
        st = start(h);
    if (st == FRL_OK)
        return frl_sampler_loop(h, total_steps, rollout_and_learn, &u);
    atomic_store(h->stop, 0); /* as the loop does when it ends */
    return st;
}

const frl_sampler_ops frl_sampler_sync = {
    .name = "sync",
    .groups = sync_groups,
    .slots = sync_slots,
    .max_groups = 1,
    .overlaps_learning = 0,
    .carries_state = 1,
    .no_save = NULL,
    .create = sync_create,
    .destroy = sync_destroy,
    .train = sync_train,
    .train_many = NULL,
    .lock = frl_sampler_no_lock,
    .unlock = frl_sampler_no_lock,
};
