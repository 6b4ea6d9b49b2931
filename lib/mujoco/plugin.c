/* libfastrl-mujoco.so.0: the plugin side of env/mujoco_api.h. It links libmujoco (the
 * one in the pinned pip package, see meson.build) and embeds the tasks' MJCF models
 * (assets.c), so it needs no data folder at run time.
 *
 * MuJoCo reports errors through mju_user_error and, by default, ends the process; a
 * library must not. Where no host installed handlers of its own, the plugin installs
 * some: an error inside a guarded call jumps back to it and the call fails with
 * MuJoCo's message; warnings are kept for the next failure's message instead of being
 * printed on stdout. A host (or Python's mujoco module) that installed handlers keeps
 * them, and then owns MuJoCo's errors. */
#include <math.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/mujoco_api.h"
#include "mujoco/task.h"

/* The state get/set covers: time, qpos, qvel, act, history and plastic buffers, plugin
 * state and the solver's warm start; ctrl is overwritten by each step's action. */
#define MJT_STATE_SPEC (mjSTATE_FULLPHYSICS | mjSTATE_WARMSTART)

static const mjt_task *const tasks[] = {
    &mjt_inverted_pendulum, &mjt_inverted_double_pendulum, &mjt_reacher, &mjt_hopper,
    &mjt_half_cheetah, &mjt_walker2d, &mjt_ant,
};
#define TASK_COUNT ((int32_t)(sizeof tasks / sizeof tasks[0]))

typedef struct mjt_model {
    const mjt_task *task;
    mjModel *m;
    mjt_ctx ctx;
    float *action_low, *action_high;
    atomic_int refs;
} mjt_model;

typedef struct mjt_env {
    mjt_model *model;
    mjData *d;
    char fault[256]; /* what the last faulty step met */
} mjt_env;

/* ---- MuJoCo's errors, turned into failures of the guarded call ---- */

static _Thread_local jmp_buf *guard_jump;
static _Thread_local char last_message[256];

static void on_error(const char *msg)
{
    snprintf(last_message, sizeof last_message, "%s", msg);
    if (guard_jump)
        longjmp(*guard_jump, 1);
}

static void on_warning(const char *msg)
{
    snprintf(last_message, sizeof last_message, "%s", msg);
}

static void install_handlers(void)
{
    if (!mju_user_error)
        mju_user_error = on_error;
    if (!mju_user_warning)
        mju_user_warning = on_warning;
}

/* Run fn(arg) with MuJoCo's errors caught: 0, or -1 with MuJoCo's message in why. */
static int guarded(void (*fn)(void *), void *arg, char *why, size_t size)
{
    jmp_buf here;
    jmp_buf *outer = guard_jump;
    volatile int failed = 0;
    if (setjmp(here) == 0) {
        guard_jump = &here;
        fn(arg);
    } else {
        failed = 1;
        snprintf(why, size, "MuJoCo error: %s", last_message);
    }
    guard_jump = outer;
    return failed ? -1 : 0;
}

/* ---- models ---- */

static const frl_text_file *find_asset(const char *name)
{
    for (const frl_text_file *f = frl_mujoco_assets; f->name; f++)
        if (strcmp(f->name, name) == 0)
            return f;
    return NULL;
}

static const mjt_task *find_task(const char *name)
{
    for (int32_t i = 0; i < TASK_COUNT; i++)
        if (strcmp(tasks[i]->name, name) == 0)
            return tasks[i];
    return NULL;
}

/* mj_loadXML through a virtual file system holding the embedded file. */
static mjModel *compile_asset(const frl_text_file *f, char *why, size_t size)
{
    mjVFS vfs;
    mj_defaultVFS(&vfs);
    mjModel *m = NULL;
    if (mj_addBufferVFS(&vfs, f->name, f->text, f->size) != 0)
        snprintf(why, size, "MuJoCo could not take the embedded model %s", f->name);
    else if (!(m = mj_loadXML(f->name, &vfs, why, (int)size)) && !why[0])
        snprintf(why, size, "MuJoCo could not compile %s", f->name);
    mj_deleteVFS(&vfs);
    return m;
}

static int resolve_ids(mjt_model *md, char *why, size_t size)
{
    const mjt_task *t = md->task;
    for (int k = 0; k < MJT_MAX_IDS && t->ids[k]; k++) {
        md->ctx.ids[k] = mj_name2id(md->m, t->sites ? mjOBJ_SITE : mjOBJ_BODY, t->ids[k]);
        if (md->ctx.ids[k] < 0) {
            snprintf(why, size, "%s: the model has no %s '%s'", t->name,
                     t->sites ? "site" : "body", t->ids[k]);
            return -1;
        }
    }
    return 0;
}

/* Action bounds from the actuators' ctrlrange, as Gymnasium's MujocoEnv reads them. */
static int action_bounds(mjt_model *md, char *why, size_t size)
{
    int nu = md->m->nu;
    md->action_low = malloc(sizeof(float) * (size_t)(2 * nu));
    if (!md->action_low) {
        snprintf(why, size, "out of memory");
        return -1;
    }
    md->action_high = md->action_low + nu;
    for (int i = 0; i < nu; i++) {
        md->action_low[i] = (float)md->m->actuator_ctrlrange[2 * i];
        md->action_high[i] = (float)md->m->actuator_ctrlrange[2 * i + 1];
    }
    return 0;
}

static void model_free(mjt_model *md)
{
    if (md->m)
        mj_deleteModel(md->m);
    free(md->action_low);
    free(md);
}

/* The model's shape for the vec env. */
static void describe(const mjt_model *md, frl_mujoco_info *info)
{
    memset(info, 0, sizeof *info);
    info->obs_dim = md->task->obs_dim;
    info->action_dim = md->m->nu;
    info->action_low = md->action_low;
    info->action_high = md->action_high;
    info->state_size = mj_stateSize(md->m, MJT_STATE_SPEC);
    info->max_episode_steps = md->task->max_episode_steps;
    info->dt = md->ctx.dt;
}

static void *model_open(const char *name, frl_mujoco_info *info, char *why, size_t size)
{
    install_handlers();
    why[0] = '\0';
    const mjt_task *t = find_task(name);
    const frl_text_file *f = t ? find_asset(t->xml) : NULL;
    if (!t || !f) {
        snprintf(why, size, t ? "the plugin lacks %s's model" : "no MuJoCo task '%s'",
                 t ? t->name : name);
        return NULL;
    }
    mjt_model *md = calloc(1, sizeof *md);
    if (!md) {
        snprintf(why, size, "out of memory");
        return NULL;
    }
    md->task = t;
    atomic_init(&md->refs, 1);
    md->m = compile_asset(f, why, size);
    if (!md->m || resolve_ids(md, why, size) != 0 || action_bounds(md, why, size) != 0) {
        model_free(md);
        return NULL;
    }
    md->ctx.m = md->m;
    md->ctx.dt = md->m->opt.timestep * t->frame_skip;
    describe(md, info);
    return md;
}

static void model_release(void *model)
{
    mjt_model *md = model;
    if (md && atomic_fetch_sub(&md->refs, 1) == 1)
        model_free(md);
}

/* ---- envs ---- */

typedef struct make_data_call {
    const mjModel *m;
    mjData *d;
} make_data_call;

static void make_data(void *arg)
{
    make_data_call *c = arg;
    c->d = mj_makeData(c->m);
}

static void *env_create(void *model, char *why, size_t size)
{
    mjt_model *md = model;
    mjt_env *e = calloc(1, sizeof *e);
    make_data_call call = {md->m, NULL};
    if (!e || guarded(make_data, &call, why, size) != 0 || !call.d) {
        if (e && !call.d && !why[0])
            snprintf(why, size, "MuJoCo could not allocate its data for %s", md->task->name);
        if (!e)
            snprintf(why, size, "out of memory");
        free(e);
        return NULL;
    }
    e->model = md;
    e->d = call.d;
    atomic_fetch_add(&md->refs, 1);
    return e;
}

static void env_close(void *user)
{
    mjt_env *e = user;
    if (!e)
        return;
    mj_deleteData(e->d);
    model_release(e->model);
    free(e);
}

static int env_observe(void *user, float *obs)
{
    mjt_env *e = user;
    e->model->task->observe(&e->model->ctx, e->d, obs);
    return 0;
}

/* What a guarded reset or step works on. */
typedef struct env_call {
    mjt_env *e;
    uint64_t seed;
    const float *action;
    float *obs;
    float *reward;
    uint8_t *terminated;
    const double *state;
    int faulted;
} env_call;

/* mj_resetData, the task's noise on qpos and qvel, mj_forward (Gymnasium's reset and
 * set_state). The stream is the seed's own: the vec env gives every env its seed. */
static void do_reset(void *arg)
{
    env_call *c = arg;
    const mjt_model *md = c->e->model;
    frl_rng rng = frl_rng_stream(c->seed, 0);
    mj_resetData(md->m, c->e->d);
    md->task->reset(&md->ctx, c->e->d, &rng);
    mj_forward(md->m, c->e->d);
    md->task->observe(&md->ctx, c->e->d, c->obs);
}

/* Warnings MuJoCo has counted on d so far. */
static int warning_total(const mjData *d)
{
    int n = 0;
    for (int i = 0; i < mjNWARNING; i++)
        n += d->warning[i].number;
    return n;
}

/* The first warning whose count rose since `before` (a copy of d->warning), as text;
 * 0 when none did. */
static int describe_warning(const mjData *d, const mjWarningStat *before, char *out,
                            size_t size)
{
    for (int i = 0; i < mjNWARNING; i++)
        if (d->warning[i].number > before[i].number) {
            snprintf(out, size, "MuJoCo warning: %s",
                     mju_warningText(i, (size_t)d->warning[i].lastinfo));
            return 1;
        }
    return 0;
}

static int state_finite(const mjModel *m, const mjData *d)
{
    int ok = 1;
    for (int i = 0; i < m->nq; i++)
        ok &= isfinite(d->qpos[i]) != 0;
    for (int i = 0; i < m->nv; i++)
        ok &= isfinite(d->qvel[i]) != 0;
    return ok;
}

/* Gymnasium's do_simulation: ctrl = action, frame_skip mj_steps, then
 * mj_rnePostConstraint so that cfrc_ext and the other force quantities are current. */
static void do_step(void *arg)
{
    env_call *c = arg;
    const mjt_model *md = c->e->model;
    const mjt_task *t = md->task;
    mjData *d = c->e->d;
    double before[2] = {0, 0};
    mjWarningStat warnings[mjNWARNING];
    memcpy(warnings, d->warning, sizeof warnings);
    int counted = warning_total(d);
    if (t->track)
        t->track(&md->ctx, d, before);
    for (int i = 0; i < md->m->nu; i++)
        d->ctrl[i] = c->action[i];
    for (int32_t k = 0; k < t->frame_skip; k++)
        mj_step(md->m, d);
    mj_rnePostConstraint(md->m, d);
    if (warning_total(d) != counted || !state_finite(md->m, d)) {
        char what[160];
        if (!describe_warning(d, warnings, what, sizeof what))
            snprintf(what, sizeof what, "the simulation state is not finite");
        snprintf(c->e->fault, sizeof c->e->fault, "%.40s: %.160s", t->name, what);
        c->faulted = 1;
        return;
    }
    t->observe(&md->ctx, d, c->obs);
    *c->reward = (float)t->reward(&md->ctx, d, c->action, before, c->terminated);
}

/* After a fault: the model's initial state (mj_resetData also rewinds MuJoCo's arena,
 * which an error may have left in use) and its observation. */
static void do_recover(void *arg)
{
    env_call *c = arg;
    const mjt_model *md = c->e->model;
    mj_resetData(md->m, c->e->d);
    mj_forward(md->m, c->e->d);
    md->task->observe(&md->ctx, c->e->d, c->obs);
    *c->reward = 0.0f;
    *c->terminated = 0;
}

static void do_set_state(void *arg)
{
    env_call *c = arg;
    const mjt_model *md = c->e->model;
    mj_setState(md->m, c->e->d, c->state, MJT_STATE_SPEC);
    mj_forward(md->m, c->e->d);
}

static int env_reset(void *user, uint64_t seed, float *obs)
{
    char why[256];
    env_call c = {.e = user, .seed = seed, .obs = obs};
    return guarded(do_reset, &c, why, sizeof why) == 0 ? 0 : 1;
}

static int env_step(void *user, const void *action, float *obs, float *reward,
                    uint8_t *terminated, uint8_t *truncated)
{
    char why[256];
    env_call c = {.e = user, .action = action, .obs = obs, .reward = reward,
                  .terminated = terminated};
    *truncated = 0;
    if (guarded(do_step, &c, why, sizeof why) != 0) {
        snprintf(c.e->fault, sizeof c.e->fault, "%.40s: %.200s", c.e->model->task->name, why);
        c.faulted = 1;
    }
    if (!c.faulted)
        return 0;
    return guarded(do_recover, &c, why, sizeof why) == 0 ? FRL_MUJOCO_FAULT : 2;
}

static const char *env_fault(void *user)
{
    mjt_env *e = user;
    return e->fault;
}

static int env_get_state(void *user, double *state)
{
    mjt_env *e = user;
    mj_getState(e->model->m, e->d, state, MJT_STATE_SPEC);
    return 0;
}

static int env_set_state(void *user, const double *state)
{
    char why[256];
    env_call c = {.e = user, .state = state};
    return guarded(do_set_state, &c, why, sizeof why) == 0 ? 0 : 3;
}

static void env_bare_step(void *user, const float *action)
{
    mjt_env *e = user;
    const mjModel *m = e->model->m;
    for (int i = 0; i < m->nu; i++)
        e->d->ctrl[i] = action[i];
    for (int32_t k = 0; k < e->model->task->frame_skip; k++)
        mj_step(m, e->d);
}

static const char *version(void)
{
    return mj_versionString();
}

static const char *task_at(int32_t index)
{
    return index >= 0 && index < TASK_COUNT ? tasks[index]->name : NULL;
}

static const frl_mujoco_plugin table = {
    .abi = FRL_MUJOCO_PLUGIN_ABI,
    .version = version,
    .task_at = task_at,
    .model_open = model_open,
    .model_release = model_release,
    .env_create = env_create,
    .callbacks = {
        .struct_size = sizeof(frl_env_callbacks),
        .reset = env_reset,
        .step = env_step,
        .close = env_close,
        .get_state = env_get_state,
        .set_state = env_set_state,
    },
    .observe = env_observe,
    .fault = env_fault,
    .bare_step = env_bare_step,
};

__attribute__((visibility("default"))) const frl_mujoco_plugin *frl_mujoco_plugin_get(void);
const frl_mujoco_plugin *frl_mujoco_plugin_get(void)
{
    return &table;
}
