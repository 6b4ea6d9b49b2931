/* Models of the MuJoCo plugin: MuJoCo's error handling, and compiling a built-in task's
 * embedded MJCF or a host's.
 *
 * MuJoCo reports errors through mju_user_error and, by default, ends the process; a
 * library must not. Where no host installed handlers of its own, the plugin installs
 * some: an error inside a guarded call jumps back to it and the call fails with
 * MuJoCo's message; warnings are kept for the next failure's message instead of being
 * printed on stdout. A host (or Python's mujoco module) that installed handlers keeps
 * them, and then owns MuJoCo's errors. */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/c_numeric.h"
#include "mujoco/plugin.h"

static const mjt_task *const tasks[] = {
    &mjt_inverted_pendulum, &mjt_inverted_double_pendulum, &mjt_reacher, &mjt_hopper,
    &mjt_half_cheetah, &mjt_walker2d, &mjt_ant,
};
#define TASK_COUNT ((int32_t)(sizeof tasks / sizeof tasks[0]))

const char *mjt_task_at(int32_t index)
{
    return index >= 0 && index < TASK_COUNT ? tasks[index]->name : NULL;
}

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

static void install_once(void)
{
    if (!mju_user_error)
        mju_user_error = on_error;
    if (!mju_user_warning)
        mju_user_warning = on_warning;
}

/* Once per process: two threads opening models at once would otherwise both write
 * MuJoCo's global handler pointers (a data race, if of equal values). */
void mjt_install_handlers(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install_once);
}

int mjt_guarded(void (*fn)(void *), void *arg, char *why, size_t size)
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

/* ---- compiling ---- */

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

/* mj_loadXML of text through a virtual file system holding it as `name`. */
static mjModel *compile_text(const char *name, const char *text, size_t bytes, char *why,
                             size_t size)
{
    mjVFS vfs;
    mj_defaultVFS(&vfs);
    mjModel *m = NULL;
    if (bytes > 0x7fffffff || mj_addBufferVFS(&vfs, name, text, (int)bytes) != 0)
        snprintf(why, size, "MuJoCo could not take the model text (%zu bytes)", bytes);
    else if (!(m = mj_loadXML(name, &vfs, why, (int)size)) && !why[0])
        snprintf(why, size, "MuJoCo could not compile the model");
    mj_deleteVFS(&vfs);
    return m;
}

/* A host's MJCF: the XML itself, or a file MuJoCo reads (and whose folder it searches
 * for included files and meshes). Text read from a file by the host may begin with
 * UTF-8's byte order mark, which MuJoCo's XML parser skips. */
static mjModel *compile_mjcf(const char *mjcf, char *why, size_t size)
{
    const char *p = mjcf;
    if (strncmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '<')
        return compile_text("model.xml", mjcf, strlen(mjcf), why, size);
    mjModel *m = mj_loadXML(mjcf, NULL, why, (int)size);
    if (!m && !why[0])
        snprintf(why, size, "MuJoCo could not load %.200s", mjcf);
    return m;
}

static int resolve_ids(mjt_model *md, char *why, size_t size)
{
    const mjt_task *t = md->task;
    for (int k = 0; t && k < MJT_MAX_IDS && t->ids[k]; k++) {
        md->ctx.ids[k] = mj_name2id(md->m, t->sites ? mjOBJ_SITE : mjOBJ_BODY, t->ids[k]);
        if (md->ctx.ids[k] < 0) {
            snprintf(why, size, "%s: the model has no %s '%s'", t->name,
                     t->sites ? "site" : "body", t->ids[k]);
            return -1;
        }
    }
    return 0;
}

/* A limited actuator's range is the action space's bounds: finite, low <= high. */
static int range_usable(float low, float high)
{
    return isfinite(low) && isfinite(high) && low <= high;
}

static int bad_range(const mjt_model *md, int i, char *why, size_t size)
{
    const char *name = mj_id2name(md->m, mjOBJ_ACTUATOR, i);
    frl_snprintf_c(why, size, "%s: actuator %d%s%.40s%s has ctrlrange [%g, %g]; a limited "
                   "actuator needs finite bounds with low <= high (as float32)", md->name, i,
                   name ? " ('" : "", name ? name : "", name ? "')" : "",
                   md->m->actuator_ctrlrange[2 * i], md->m->actuator_ctrlrange[2 * i + 1]);
    return -1;
}

/* Action bounds from the actuators' ctrlrange, as Gymnasium's MujocoEnv reads them;
 * unbounded for an actuator whose control is not limited. */
static int action_bounds(mjt_model *md, char *why, size_t size)
{
    int nu = md->m->nu;
    if (nu < 1) {
        snprintf(why, size, "%s has no actuators, so no action can move it", md->name);
        return -1;
    }
    md->action_low = malloc(sizeof(float) * (size_t)(2 * nu));
    if (!md->action_low) {
        snprintf(why, size, "out of memory");
        return -1;
    }
    md->action_high = md->action_low + nu;
    for (int i = 0; i < nu; i++) {
        int limited = md->m->actuator_ctrllimited[i];
        md->action_low[i] = limited ? (float)md->m->actuator_ctrlrange[2 * i] : -INFINITY;
        md->action_high[i] = limited ? (float)md->m->actuator_ctrlrange[2 * i + 1] : INFINITY;
        if (limited && !range_usable(md->action_low[i], md->action_high[i]))
            return bad_range(md, i, why, size);
    }
    return 0;
}

static void model_free(mjt_model *md)
{
    if (md->m)
        mj_deleteModel(md->m);
    free(md->mass_mask);
    free(md->friction_mask);
    free(md->damping_mask);
    free(md->action_low);
    free(md);
}

void mjt_model_release(void *model)
{
    mjt_model *md = model;
    if (md && atomic_fetch_sub(&md->refs, 1) == 1)
        model_free(md);
}

void mjt_model_retain(mjt_model *md)
{
    atomic_fetch_add(&md->refs, 1);
}

/* The model's shape for the vec env. */
static void describe(const mjt_model *md, frl_mujoco_info *info)
{
    memset(info, 0, sizeof *info);
    info->obs_dim = md->obs_dim;
    info->action_dim = md->m->nu;
    info->action_low = md->action_low;
    info->action_high = md->action_high;
    info->state_size = mj_stateSize(md->m, MJT_STATE_SPEC) +
                       (md->task ? md->task->carried : 0) +
                       (md->randomised ? MJT_SEED_VALUES : 0);
    info->max_episode_steps = md->task ? md->task->max_episode_steps : 0;
    info->dt = md->ctx.dt;
}

static mjt_model *model_new(const frl_mujoco_settings *set)
{
    mjt_model *md = calloc(1, sizeof *md);
    if (!md)
        return NULL;
    atomic_init(&md->refs, 1);
    md->set = *set;
    md->randomised = set->randomize_mass > 0 || set->randomize_friction > 0 ||
                     set->randomize_damping > 0;
    return md;
}

/* What every model does once compiled: ids, bounds, the step's period; NULL (the
 * model freed) on failure. */
static void *finish(mjt_model *md, int32_t own_skip, frl_mujoco_info *info, char *why,
                    size_t size)
{
    if (!md->m || resolve_ids(md, why, size) != 0 || action_bounds(md, why, size) != 0) {
        model_free(md);
        return NULL;
    }
    md->frame_skip = md->set.frame_skip > 0 ? md->set.frame_skip : own_skip;
    md->ctx.m = md->m;
    md->ctx.dt = md->m->opt.timestep * md->frame_skip;
    describe(md, info);
    return md;
}

void *mjt_model_open(const char *name, const frl_mujoco_settings *set, frl_mujoco_info *info,
                     char *why, size_t size)
{
    mjt_install_handlers();
    why[0] = '\0';
    const mjt_task *t = find_task(name);
    const frl_text_file *f = t ? find_asset(t->xml) : NULL;
    if (!t || !f) {
        snprintf(why, size, t ? "the plugin lacks %s's model" : "no MuJoCo task '%s'",
                 t ? t->name : name);
        return NULL;
    }
    mjt_model *md = model_new(set);
    if (!md) {
        snprintf(why, size, "out of memory");
        return NULL;
    }
    md->task = t;
    md->obs_dim = t->obs_dim;
    snprintf(md->name, sizeof md->name, "%s", t->name);
    md->m = compile_text(f->name, f->text, (size_t)f->size, why, size);
    return finish(md, t->frame_skip, info, why, size);
}

/* The dofs of joint j. */
static int joint_dofs(const mjModel *m, int j)
{
    switch (m->jnt_type[j]) {
    case mjJNT_FREE: return 6;
    case mjJNT_BALL: return 3;
    default: return 1;
    }
}

/* mask[n] flags for names (objects of type obj), or NULL when names is NULL; -1 with why
 * naming the first name the model lacks. A joint flags its dofs. */
static int name_mask(const mjModel *m, const char *const *names, int obj, int n,
                     const char *what, unsigned char **mask, char *why, size_t size)
{
    *mask = NULL;
    if (!names)
        return 0;
    if (!(*mask = calloc((size_t)n + 1, 1))) {
        snprintf(why, size, "out of memory");
        return -1;
    }
    for (const char *const *p = names; *p; p++) {
        int id = mj_name2id(m, obj, *p);
        if (id < 0) {
            snprintf(why, size, "callbacks.%s: the model has no %s named '%.60s'", what,
                     obj == mjOBJ_BODY ? "body" : obj == mjOBJ_GEOM ? "geom" : "joint", *p);
            return -1;
        }
        if (obj == mjOBJ_BODY && id == 0) { /* the mass scaling never visits it */
            snprintf(why, size, "callbacks.%s: '%.60s' is the world body, which has no mass "
                     "to randomise", what, *p);
            return -1;
        }
        if (obj != mjOBJ_JOINT) {
            (*mask)[id] = 1;
            continue;
        }
        for (int k = 0; k < joint_dofs(m, id); k++)
            (*mask)[m->jnt_dofadr[id] + k] = 1;
    }
    return 0;
}

/* The host's named randomisation into masks over the compiled model. */
static int host_masks(mjt_model *md, const frl_mujoco_callbacks *cb, char *why, size_t size)
{
    const mjModel *m = md->m;
    if (!m)
        return 0; /* finish reports the compile error */
    return name_mask(m, cb->randomize_bodies, mjOBJ_BODY, m->nbody, "randomize_bodies",
                     &md->mass_mask, why, size) ||
           name_mask(m, cb->randomize_geoms, mjOBJ_GEOM, m->ngeom, "randomize_geoms",
                     &md->friction_mask, why, size) ||
           name_mask(m, cb->randomize_joints, mjOBJ_JOINT, m->nv, "randomize_joints",
                     &md->damping_mask, why, size)
               ? -1
               : 0;
}

void *mjt_model_open_mjcf(const char *mjcf, const frl_mujoco_host *host,
                          const frl_mujoco_settings *set, frl_mujoco_info *info, char *why,
                          size_t size)
{
    mjt_install_handlers();
    why[0] = '\0';
    mjt_model *md = model_new(set);
    if (!md) {
        snprintf(why, size, "out of memory");
        return NULL;
    }
    md->host = *host;
    md->obs_dim = host->obs_dim;
    snprintf(md->name, sizeof md->name, "MuJoCo model");
    md->m = compile_mjcf(mjcf, why, size);
    if (host_masks(md, &host->cb, why, size) != 0) {
        model_free(md);
        return NULL;
    }
    /* the lists are the host's, read only here */
    md->host.cb.randomize_bodies = md->host.cb.randomize_geoms = NULL;
    md->host.cb.randomize_joints = NULL;
    return finish(md, 1, info, why, size);
}
