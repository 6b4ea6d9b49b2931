/* The envs of the MuJoCo plugin: one mjData each (and one mjModel copy each when the
 * settings randomise the model per episode), behind the frl_env_callbacks the vec env
 * steps. Every call into MuJoCo that can raise an error runs guarded (model.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/c_numeric.h"
#include "mujoco/plugin.h"

/* ---- creating ---- */

typedef struct make_call {
    const mjModel *base;
    int copy;
    mjModel *m;
    mjData *d;
} make_call;

static void make_data(void *arg)
{
    make_call *c = arg;
    c->m = c->copy ? mj_copyModel(NULL, c->base) : (mjModel *)c->base;
    c->d = c->m ? mj_makeData(c->m) : NULL;
}

void *mjt_env_create(void *model, int32_t index, char *why, size_t size)
{
    mjt_model *md = model;
    mjt_env *e = calloc(1, sizeof *e);
    make_call call = {md->m, md->randomised, NULL, NULL};
    why[0] = '\0';
    if (!e || mjt_guarded(make_data, &call, why, size) != 0 || !call.d) {
        if (!why[0])
            snprintf(why, size, "out of memory for %s's data", md->name);
        if (call.copy && call.m)
            mj_deleteModel(call.m);
        free(e);
        return NULL;
    }
    e->model = md;
    e->m = call.m;
    e->d = call.d;
    e->ctx = md->ctx;
    e->ctx.m = e->m;
    e->index = index;
    mjt_model_retain(md);
    return e;
}

void mjt_env_close(void *user)
{
    mjt_env *e = user;
    if (!e)
        return;
    mj_deleteData(e->d);
    if (e->m != e->model->m)
        mj_deleteModel(e->m);
    mjt_model_release(e->model);
    free(e);
}

/* ---- what a task or a host makes of the data ---- */

/* A host callback's nonzero return, named in e->fault for the vec env's message, as
 * MJT_HOST_FAILED: the host's own code may be any int, FRL_MUJOCO_FAULT included, which
 * the vec env would take for a simulation fault and end the episode on quietly. */
static int host_failed(mjt_env *e, const char *callback, int rc)
{
    if (rc == 0)
        return 0;
    snprintf(e->fault, sizeof e->fault, "%.40s: the host's %s callback returned %d",
             e->model->name, callback, rc);
    return MJT_HOST_FAILED;
}

static int observe(mjt_env *e, float *obs)
{
    const mjt_model *md = e->model;
    if (!md->task)
        return host_failed(e, "observe",
                           md->host.cb.observe(md->host.user, e->index, e->m, e->d, obs));
    md->task->observe(&e->ctx, e->d, obs);
    return 0;
}

static int reward(mjt_env *e, const float *action, const double *before, float *r,
                  uint8_t *terminated)
{
    const mjt_model *md = e->model;
    if (!md->task)
        return host_failed(e, "reward", md->host.cb.reward(md->host.user, e->index, e->m,
                                                           e->d, action, r, terminated));
    *r = (float)md->task->reward(&e->ctx, e->d, action, before, terminated);
    return 0;
}

/* MuJoCo's error in `what` (its message in why), named in e->fault. */
static void mujoco_failed(mjt_env *e, const char *what, const char *why)
{
    snprintf(e->fault, sizeof e->fault, "%.40s: %s: %.180s", e->model->name, what, why);
}

/* ---- domain randomisation ---- */

/* x[i] = base[i] * U(1 - r, 1 + r) for i < n, each its own draw, where mask (NULL: all)
 * flags i; every i draws, so a mask changes no other element's factor. */
static void scale_each(mjtNum *x, const mjtNum *base, int n, int stride, double r,
                       const unsigned char *mask, frl_rng *rng)
{
    for (int i = 0; i < n; i++) {
        double f = frl_rng_uniform_range(rng, 1.0 - r, 1.0 + r);
        if (!mask || mask[i])
            x[i * stride] = base[i * stride] * f;
    }
}

/* An explicit contact pair's friction overrides its geoms' (MuJoCo's <pair>): its two
 * sliding coefficients take one factor, as a geom's one sliding coefficient does, when
 * either geom is randomised. Every pair draws, so naming changes no other factor. */
static void scale_pairs(mjModel *m, const mjModel *base, double r, const unsigned char *mask,
                        frl_rng *rng)
{
    for (int p = 0; p < m->npair; p++) {
        double f = frl_rng_uniform_range(rng, 1.0 - r, 1.0 + r);
        if (mask && !mask[m->pair_geom1[p]] && !mask[m->pair_geom2[p]])
            continue;
        for (int k = 0; k < 2; k++)
            m->pair_friction[5 * p + k] = base->pair_friction[5 * p + k] * f;
    }
}

/* A new episode's model: every body's mass (its inertia by the same factor), every
 * geom's and contact pair's sliding friction and every dof's damping scaled from the
 * shared model's (a host's named ones only, when it names them), from a stream of its
 * own so the initial state's draws do not depend on it; then the constants MuJoCo
 * derives from them (mj_setConst, which uses d as scratch). The pairs draw last, so a
 * model without them draws what it did before they were randomised. */
static void randomise(mjt_env *e, uint64_t seed)
{
    const mjModel *base = e->model->m;
    mjModel *m = e->m;
    const frl_mujoco_settings *s = &e->model->set;
    frl_rng rng = frl_rng_stream(seed, 1);
    const mjt_model *md = e->model;
    for (int b = 1; b < m->nbody && s->randomize_mass > 0; b++) {
        double f = frl_rng_uniform_range(&rng, 1.0 - s->randomize_mass, 1.0 + s->randomize_mass);
        if (md->mass_mask && !md->mass_mask[b])
            continue;
        m->body_mass[b] = base->body_mass[b] * f;
        for (int k = 0; k < 3; k++)
            m->body_inertia[3 * b + k] = base->body_inertia[3 * b + k] * f;
    }
    if (s->randomize_friction > 0)
        scale_each(m->geom_friction, base->geom_friction, m->ngeom, 3, s->randomize_friction,
                   md->friction_mask, &rng);
    if (s->randomize_damping > 0)
        scale_each(m->dof_damping, base->dof_damping, m->nv, 1, s->randomize_damping,
                   md->damping_mask, &rng);
    if (s->randomize_friction > 0)
        scale_pairs(m, base, s->randomize_friction, md->friction_mask, &rng);
    mj_setConst(m, e->d);
}

/* ---- reset and step, guarded ---- */

/* mj_forward, and for a host's model mj_rnePostConstraint as after a step: mj_forward
 * leaves cfrc_ext, cfrc_int and cacc as they were (zero after mj_resetData, the last
 * step's after set_state), so a host's observe would read a resting robot's contact
 * forces as none at reset, and after set_state whatever the env did before. The
 * built-in tasks keep Gymnasium's behaviour (its reset and set_state call mj_forward
 * alone). */
static void forward(mjt_env *e)
{
    mj_forward(e->m, e->d);
    if (!e->model->task)
        mj_rnePostConstraint(e->m, e->d);
}

/* The positions the next step's reward measures its progress from, read where the
 * data is now (after a reset, a step or a set_state that carries none). */
static void track(mjt_env *e)
{
    if (e->model->task && e->model->task->track)
        e->model->task->track(&e->ctx, e->d, e->before);
}

/* Where the state's carried values and, after them, a randomising env's seed lie. */
static int carried_at(const mjt_env *e)
{
    return mj_stateSize(e->m, MJT_STATE_SPEC);
}

static int carried_count(const mjt_env *e)
{
    return e->model->task ? e->model->task->carried : 0;
}

typedef struct env_call {
    mjt_env *e;
    uint64_t seed;
    const float *action;
    float *obs;
    float *reward;
    uint8_t *terminated;
    const double *state;
    int rc;        /* a host callback's nonzero return */
    int faulted;
} env_call;

/* A host's reset that left a value of the state not finite: its error, naming the first
 * such value. Else the reset succeeded and either its first step was taken for a
 * simulation fault, episode after episode (qpos, qvel, applied forces), or the next
 * get_state failed, so no checkpoint could be written (a NaN in userdata). */
static int host_reset_finite(mjt_env *e)
{
    const mjModel *m = e->m;
    const mjData *d = e->d;
    const struct {
        const char *name;
        const mjtNum *v;
        long n;
    } parts[] = {
        {"time", &d->time, 1},
        {"qpos", d->qpos, m->nq},
        {"qvel", d->qvel, m->nv},
        {"act", d->act, m->na},
        {"ctrl", d->ctrl, m->nu},
        {"qfrc_applied", d->qfrc_applied, m->nv},
        {"xfrc_applied", d->xfrc_applied, 6L * m->nbody},
        {"mocap_pos", d->mocap_pos, 3L * m->nmocap},
        {"mocap_quat", d->mocap_quat, 4L * m->nmocap},
        {"userdata", d->userdata, m->nuserdata},
    };
    for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++)
        for (long i = 0; i < parts[k].n; i++) {
            double x = parts[k].v[i];
            if (isfinite(x))
                continue;
            snprintf(e->fault, sizeof e->fault, "%.40s: the host's reset callback left "
                     "%s[%ld] = %g", e->model->name, parts[k].name, i, x);
            return MJT_HOST_FAILED;
        }
    return 0;
}

/* The first warning whose count rose since `before`, as text; 0 when none did. */
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

/* A warning the reset's mj_forward raised (mj_resetData zeroed the counts before it), named
 * in e->fault: else the reset succeeded, its warning unseen (the plugin's handler prints
 * nothing), and every first step was a fault, episode after episode. */
static int reset_warned(mjt_env *e)
{
    static const mjWarningStat none[mjNWARNING];
    char what[160];
    if (!describe_warning(e->d, none, what, sizeof what))
        return 0;
    snprintf(e->fault, sizeof e->fault, "%.40s: reset: %.180s", e->model->name, what);
    return 1;
}

/* mj_resetData, the task's noise or the host's reset, forward (Gymnasium's reset and
 * set_state). The stream is the seed's own: the vec env gives every env its seed. */
static void do_reset(void *arg)
{
    env_call *c = arg;
    mjt_env *e = c->e;
    const mjt_model *md = e->model;
    if (md->randomised) {
        e->episode_seed = c->seed;
        randomise(e, c->seed);
    }
    mj_resetData(e->m, e->d);
    if (!md->task && md->host.cb.reset) {
        c->rc = host_failed(e, "reset",
                            md->host.cb.reset(md->host.user, e->index, e->m, e->d, c->seed));
        if (c->rc == 0)
            c->rc = host_reset_finite(e);
    } else if (md->task) {
        frl_rng rng = frl_rng_stream(c->seed, 0);
        md->task->reset(&e->ctx, e->d, &rng);
    }
    if (c->rc == 0) {
        forward(e);
        c->rc = reset_warned(e);
    }
    if (c->rc == 0) {
        track(e);
        c->rc = observe(e, c->obs);
    }
}

int mjt_env_reset(void *user, uint64_t seed, float *obs)
{
    char why[256];
    env_call c = {.e = user, .seed = seed, .obs = obs};
    c.e->fault[0] = '\0';
    if (mjt_guarded(do_reset, &c, why, sizeof why) != 0) {
        mujoco_failed(c.e, "reset", why);
        return 1;
    }
    return c.rc;
}

/* 1 when any of MuJoCo's warning counts on d differs from `before` (a copy of
 * d->warning). Counts are compared one by one, not summed: when a step's checks find a
 * bad qpos, qvel or qacc, MuJoCo resets the data, which zeroes every count, and then
 * counts that one warning, so a total can come out unchanged (a warning the reset's
 * mj_forward raised, say, traded for the blow-up) while the state was thrown away. */
static int warnings_changed(const mjData *d, const mjWarningStat *before)
{
    for (int i = 0; i < mjNWARNING; i++)
        if (d->warning[i].number != before[i].number)
            return 1;
    return 0;
}

/* Gymnasium's do_simulation: ctrl = action, frame_skip mj_steps, then
 * mj_rnePostConstraint so that cfrc_ext and the other force quantities are current
 * (for the tasks that read them, and every host model). A warning or a non-finite
 * state marks the step faulted instead. */
static void do_step(void *arg)
{
    env_call *c = arg;
    mjt_env *e = c->e;
    const mjt_model *md = e->model;
    mjData *d = e->d;
    mjWarningStat warnings[mjNWARNING];
    memcpy(warnings, d->warning, sizeof warnings);
    for (int i = 0; i < e->m->nu; i++)
        d->ctrl[i] = c->action[i];
    for (int32_t k = 0; k < md->frame_skip; k++)
        mj_step(e->m, d);
    if (!md->task || md->task->post_constraint) /* a host may read cfrc_ext */
        mj_rnePostConstraint(e->m, d);
    if (warnings_changed(d, warnings) || !mjt_state_finite(e->m, d)) {
        char what[160];
        if (!describe_warning(d, warnings, what, sizeof what))
            snprintf(what, sizeof what, "%s",
                     mjt_state_finite(e->m, d)
                         ? "MuJoCo reset the simulation (its warning counts were cleared)"
                         : "the simulation state is not finite");
        snprintf(e->fault, sizeof e->fault, "%.40s: %.160s", md->name, what);
        c->faulted = 1;
        return;
    }
    c->rc = observe(e, c->obs);
    if (c->rc == 0)
        c->rc = reward(e, c->action, e->before, c->reward, c->terminated);
    track(e);
}

/* e->fault (a host callback's failure on the initial state), then the step fault that
 * led there (its model name dropped: the message names it once), each cut to fit. */
static void append_cause(mjt_env *e, const char *cause)
{
    char first[sizeof e->fault];
    memcpy(first, e->fault, sizeof first);
    size_t skip = strlen(e->model->name) + 2; /* "name: " */
    const char *c = strncmp(cause, e->model->name, skip - 2) == 0 && strlen(cause) >= skip
                        ? cause + skip
                        : cause;
    snprintf(e->fault, sizeof e->fault, "%.100s, on the initial state after a faulty step "
             "(%.90s)", first, c);
}

/* After a fault: the model's initial state (mj_resetData also rewinds MuJoCo's arena,
 * which an error may have left in use) and its observation. */
static void do_recover(void *arg)
{
    env_call *c = arg;
    mj_resetData(c->e->m, c->e->d);
    forward(c->e);
    track(c->e);
    c->rc = observe(c->e, c->obs);
    *c->reward = 0.0f;
    *c->terminated = 0;
}

int mjt_env_step(void *user, const void *action, float *obs, float *reward_out,
                 uint8_t *terminated, uint8_t *truncated)
{
    char why[256];
    mjt_env *e = user;
    env_call c = {.e = e, .action = action, .obs = obs, .reward = reward_out,
                  .terminated = terminated};
    *truncated = 0;
    e->fault[0] = '\0';
    if (mjt_guarded(do_step, &c, why, sizeof why) != 0) {
        snprintf(e->fault, sizeof e->fault, "%.40s: %.200s", e->model->name, why);
        c.faulted = 1;
    }
    if (!c.faulted)
        return c.rc;
    char cause[sizeof e->fault];
    memcpy(cause, e->fault, sizeof cause);
    if (mjt_guarded(do_recover, &c, why, sizeof why) != 0) {
        mujoco_failed(e, "resetting after a faulty step", why);
        return 2;
    }
    if (c.rc) /* the host's callback failed on the initial state: say what led there too */
        append_cause(e, cause);
    return c.rc ? c.rc : FRL_MUJOCO_FAULT;
}

const char *mjt_env_fault(void *user)
{
    mjt_env *e = user;
    return e->fault;
}

/* ---- state ---- */

/* MuJoCo's state, the task's carried values, and for a randomising env its episode's
 * seed: the model it was stepping is made again from it (the factors themselves would be
 * hundreds of values). */
int mjt_env_get_state(void *user, double *state)
{
    mjt_env *e = user;
    mj_getState(e->m, e->d, state, MJT_STATE_SPEC);
    for (int k = 0; k < carried_count(e); k++)
        state[carried_at(e) + k] = e->before[k];
    if (e->model->randomised) {
        double *seed = state + carried_at(e) + carried_count(e);
        seed[0] = (double)(e->episode_seed >> 32);
        seed[1] = (double)(e->episode_seed & 0xffffffffu);
    }
    return 0;
}

/* The seed a randomising env's state holds: 0, or -1 (why in e->fault) when its halves
 * are not integers in [0, 2^32). */
static int saved_seed(mjt_env *e, const double *state, uint64_t *seed)
{
    int at = carried_at(e) + carried_count(e);
    const double *half = state + at;
    for (int k = 0; k < MJT_SEED_VALUES; k++)
        if (!(half[k] >= 0 && half[k] < 4294967296.0 && half[k] == floor(half[k]))) {
            frl_snprintf_c(e->fault, sizeof e->fault, "%.40s: set_state: state[%d] = %g is "
                           "not half of a randomisation seed (an integer in [0, 2^32))",
                           e->model->name, at + k, half[k]);
            return -1;
        }
    *seed = (uint64_t)half[0] << 32 | (uint64_t)half[1];
    return 0;
}

static void do_set_state(void *arg)
{
    env_call *c = arg;
    if (c->e->model->randomised) {
        c->e->episode_seed = c->seed;
        randomise(c->e, c->seed);
    }
    mj_setState(c->e->m, c->e->d, c->state, MJT_STATE_SPEC);
    forward(c->e);
    track(c->e);
    for (int k = 0; k < carried_count(c->e); k++)
        c->e->before[k] = c->state[carried_at(c->e) + k];
}

int mjt_env_set_state(void *user, const double *state)
{
    char why[256];
    env_call c = {.e = user, .state = state};
    c.e->fault[0] = '\0';
    if (c.e->model->randomised && saved_seed(c.e, state, &c.seed) != 0)
        return 3;
    if (mjt_guarded(do_set_state, &c, why, sizeof why) == 0)
        return 0;
    mujoco_failed(c.e, "set_state", why);
    return 3;
}

static void do_observe(void *arg)
{
    env_call *c = arg;
    c->rc = observe(c->e, c->obs);
}

/* Guarded as a reset or step is: a host's observe may call into MuJoCo, whose error
 * would otherwise return into MuJoCo's caller and the state be taken. */
int mjt_env_observe(void *user, float *obs)
{
    char why[256];
    env_call c = {.e = user, .obs = obs};
    c.e->fault[0] = '\0';
    if (mjt_guarded(do_observe, &c, why, sizeof why) == 0)
        return c.rc;
    mujoco_failed(c.e, "observe", why);
    return 1;
}

void mjt_env_bare_step(void *user, const float *action)
{
    mjt_env *e = user;
    for (int i = 0; i < e->m->nu; i++)
        e->d->ctrl[i] = action[i];
    for (int32_t k = 0; k < e->model->frame_skip; k++)
        mj_step(e->m, e->d);
}
