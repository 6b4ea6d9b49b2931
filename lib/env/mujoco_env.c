/* See mujoco_env.h. The plugin is loaded once per process, the first time a MuJoCo task
 * is asked for, and stays loaded: MuJoCo keeps process-wide state (its error handlers),
 * and unloading it under a host that also uses MuJoCo would pull it from under the host. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/plugin_load.h"
#include "core/table.h"
#include "env/mujoco_api.h"
#include "env/mujoco_env.h"

/* The ids the plugin provides (lib/mujoco/tasks_*.c); the plugin's own list must agree,
 * which tests/test_mujoco.c checks. */
static const char *const task_ids[] = {
    "InvertedPendulum-v5", "InvertedDoublePendulum-v5", "Reacher-v5", "Hopper-v5",
    "HalfCheetah-v5", "Walker2d-v5", "Ant-v5",
};

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const frl_mujoco_plugin *plugin;
static char load_why[FRL_ERRMSG_SIZE - 80];
static char description[FRL_ERRMSG_SIZE];

static void load(void)
{
    void *h = frl_plugin_open(FRL_MUJOCO_PLUGIN_FILE, "FRL_MUJOCO_PLUGIN",
                              "build with -Dmujoco=enabled (scripts/test.sh does)", load_why,
                              sizeof load_why);
    if (h)
        plugin = frl_plugin_table(h, FRL_MUJOCO_PLUGIN_FILE, "FRL_MUJOCO_PLUGIN",
                                  FRL_MUJOCO_PLUGIN_SYMBOL, FRL_MUJOCO_PLUGIN_ABI, load_why,
                                  sizeof load_why);
    if (h && !plugin)
        dlclose(h);
    if (plugin) {
        int32_t n = 0;
        while (plugin->task_at(n))
            n++;
        snprintf(description, sizeof description, "MuJoCo %s (%s: %d tasks)",
                 plugin->version(), FRL_MUJOCO_PLUGIN_FILE, (int)n);
    } else {
        snprintf(description, sizeof description, "not available: %s", load_why);
    }
}

static const frl_mujoco_plugin *get_plugin(void)
{
    pthread_once(&load_once, load);
    return plugin;
}

const char *frl_mujoco_describe(void)
{
    get_plugin();
    return description;
}

/* name's entry in task_ids (static storage), or NULL. */
static const char *task_id(const char *name)
{
    for (size_t i = 0; name && i < sizeof task_ids / sizeof task_ids[0]; i++)
        if (strcmp(task_ids[i], name) == 0)
            return task_ids[i];
    return NULL;
}

int frl_mujoco_is_task(const char *name)
{
    return task_id(name) != NULL;
}

const char *frl_mujoco_task_at(int32_t index)
{
    int32_t n = (int32_t)(sizeof task_ids / sizeof task_ids[0]);
    return index >= 0 && index < n ? task_ids[index] : NULL;
}

/* The spaces of a model: observations unbounded (as Gymnasium's), actions the
 * actuators' ranges. */
static frl_status model_spaces(const frl_runtime *rt, const frl_mujoco_info *info,
                               frl_space **obs, frl_space **act)
{
    int64_t obs_shape = info->obs_dim, act_shape = info->action_dim;
    frl_status st = frl_space_create_box(obs, &rt->alloc, 1, &obs_shape, NULL, NULL);
    if (st == FRL_OK)
        st = frl_space_create_box(act, &rt->alloc, 1, &act_shape, info->action_low,
                                  info->action_high);
    return st;
}

/* The env.* settings a MuJoCo model takes. */
static frl_mujoco_settings settings_of(const frl_config *cfg)
{
    frl_mujoco_settings s;
    s.frame_skip = (int32_t)frl_cfg_int(cfg, FRL_KEY_ENV_FRAME_SKIP);
    s.randomize_mass = frl_cfg_float(cfg, FRL_KEY_ENV_RANDOMIZE_MASS);
    s.randomize_friction = frl_cfg_float(cfg, FRL_KEY_ENV_RANDOMIZE_FRICTION);
    s.randomize_damping = frl_cfg_float(cfg, FRL_KEY_ENV_RANDOMIZE_DAMPING);
    return s;
}

/* users[0..n): one env each; on failure the ones made are closed again. */
static frl_status make_envs(const frl_mujoco_plugin *p, void *model, void **users,
                            int32_t n, const char *name, const char *who)
{
    char why[FRL_ERRMSG_SIZE - 80] = "";
    for (int32_t i = 0; i < n; i++) {
        users[i] = p->env_create(model, i, why, sizeof why);
        if (!users[i]) {
            for (int32_t k = 0; k < i; k++)
                p->callbacks.close(users[k]);
            return frl_fail(NULL, FRL_ERR_NOMEM, "%s: %s env %d: %s", who, name, (int)i, why);
        }
    }
    return FRL_OK;
}

/* The vec env over users, which then owns them and one reference to model. */
static frl_status wrap_envs(frl_vec_env **out, frl_runtime *rt, const frl_mujoco_plugin *p,
                            void *model, const frl_mujoco_info *info, void **users,
                            int32_t n, const frl_config *cfg, const char *name,
                            const char *who)
{
    frl_space *obs = NULL, *act = NULL;
    frl_status st = model_spaces(rt, info, &obs, &act);
    frl_env_callbacks cb = p->callbacks;
    cb.state_size = info->state_size;
    if (st == FRL_OK)
        st = frl_vec_env_create_hosted(out, rt, &cb, users, n, obs, act, cfg,
                                       info->max_episode_steps, who);
    frl_space_destroy(obs);
    frl_space_destroy(act);
    if (st != FRL_OK)
        return st;
    (*out)->task = task_id(name);
    (*out)->observe = p->observe;
    (*out)->fault = p->fault;
    (*out)->fault_code = FRL_MUJOCO_FAULT;
    (*out)->release = p->model_release;
    (*out)->owner = model;
    return FRL_OK;
}

/* The vec env of model's num_envs envs (name: the task's id, NULL for a host's model);
 * model's reference passes to the vec env, or is dropped on failure. */
static frl_status envs_of_model(frl_vec_env **out, frl_runtime *rt, const frl_mujoco_plugin *p,
                                void *model, const frl_mujoco_info *info, int32_t num_envs,
                                const frl_config *cfg, const char *name, const char *who)
{
    void **users = frl_alloc(&rt->alloc, sizeof(void *) * (size_t)num_envs, 16);
    frl_status st = users ? make_envs(p, model, users, num_envs, name ? name : "MuJoCo model",
                                      who)
                          : frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory", who);
    if (st == FRL_OK) {
        st = wrap_envs(out, rt, p, model, info, users, num_envs, cfg, name, who);
        if (st != FRL_OK)
            for (int32_t i = 0; i < num_envs; i++)
                p->callbacks.close(users[i]);
    }
    if (st != FRL_OK)
        p->model_release(model);
    frl_free(&rt->alloc, users);
    return st;
}

frl_status frl_mujoco_vec_env_create(frl_vec_env **out, frl_runtime *rt, const char *name,
                                     int32_t num_envs, const frl_config *cfg, const char *who)
{
    const frl_mujoco_plugin *p = get_plugin();
    if (!p)
        return frl_fail(NULL, FRL_ERR_UNSUPPORTED, "%s: %s needs the MuJoCo plugin, which is %s",
                        who, name, description);
    char why[FRL_ERRMSG_SIZE - 80] = "";
    frl_mujoco_info info;
    frl_mujoco_settings set = settings_of(cfg);
    void *model = p->model_open(name, &set, &info, why, sizeof why);
    if (!model)
        return frl_fail(NULL, FRL_ERR_UNSUPPORTED, "%s: %s: %s", who, name, why);
    return envs_of_model(out, rt, p, model, &info, num_envs, cfg, name, who);
}

FRL_API const char *frl_mujoco_version(void)
{
    const frl_mujoco_plugin *p = get_plugin();
    return p ? p->version() : NULL;
}

static frl_status no_plugin(const char *who)
{
    return frl_fail(NULL, FRL_ERR_UNSUPPORTED, "%s: the MuJoCo plugin is %s", who,
                    description);
}

FRL_API frl_status frl_mujoco_array(const void *model, const void *data, const char *name,
                                    void **ptr, int64_t *rows, int64_t *cols, int32_t *type)
{
    static const char who[] = "frl_mujoco_array";
    if (!model || !name)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: %s is NULL", who, !model ? "model" : "name");
    const frl_mujoco_plugin *p = get_plugin();
    if (!p)
        return no_plugin(who);
    frl_mujoco_found f;
    if (p->array(model, data, name, &f) != 0)
        return frl_fail(NULL, FRL_ERR_UNKNOWN_NAME,
                        "%s: MuJoCo %s has no array of numbers named '%s' (mujoco.h's %s "
                        "fields name them)", who, p->version(), name,
                        data ? "mjData" : "mjModel");
    if (ptr)
        *ptr = f.ptr;
    if (rows)
        *rows = f.rows;
    if (cols)
        *cols = f.cols;
    if (type)
        *type = f.type;
    return FRL_OK;
}

FRL_API frl_status frl_mujoco_name_id(const void *model, const char *kind, const char *name,
                                      int32_t *id)
{
    static const char who[] = "frl_mujoco_name_id";
    if (!model || !kind || !name || !id)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: %s is NULL", who,
                        !model ? "model" : !kind ? "kind" : !name ? "name" : "id");
    *id = -1;
    const frl_mujoco_plugin *p = get_plugin();
    if (!p)
        return no_plugin(who);
    int found = p->name_id(model, kind, name);
    if (found == -2)
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT,
                        "%s: '%s' is not a kind of MuJoCo object (body, joint, geom, site, "
                        "actuator, sensor, ...)", who, kind);
    if (found < 0)
        return frl_fail(NULL, FRL_ERR_UNKNOWN_NAME, "%s: the model has no %s named '%s'", who,
                        kind, name);
    *id = found;
    return FRL_OK;
}

/* The arguments of frl_vec_env_create_mujoco, before the plugin is asked. */
static frl_status check_host_model(frl_vec_env **out, frl_runtime *rt, const char *mjcf,
                                   const frl_mujoco_callbacks *cb,
                                   frl_mujoco_callbacks *table, int32_t obs_w,
                                   int32_t num_envs, const char *who)
{
    if (out)
        *out = NULL; /* first, as every constructor: a caller's stale handle never stays */
    if (!out || !rt || !mjcf || !cb)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: %s is NULL", who,
                        !out ? "out" : !rt ? "runtime" : !mjcf ? "mjcf" : "callbacks");
    frl_mujoco_callbacks_init(table);
    frl_status st = frl_copy_table(table, sizeof *table, cb, offsetof(frl_mujoco_callbacks, reset),
                                   who, "callbacks", "frl_mujoco_callbacks_init");
    if (st == FRL_OK && (!table->observe || !table->reward))
        st = frl_fail(NULL, FRL_ERR_NULL, "%s: callbacks.%s is NULL", who,
                      table->observe ? "reward" : "observe");
    if (st == FRL_OK && (obs_w < 1 || obs_w > 65536))
        st = frl_fail(NULL, FRL_ERR_RANGE, "%s: observation_width %d is outside [1, 65536]", who,
                      (int)obs_w);
    if (st == FRL_OK && (num_envs < 1 || num_envs > FRL_MAX_ENVS))
        st = frl_fail(NULL, FRL_ERR_RANGE, "%s: num_envs %d is outside [1, %d]", who,
                      (int)num_envs, FRL_MAX_ENVS);
    return st;
}

FRL_API frl_status frl_vec_env_create_mujoco(frl_vec_env **out, frl_runtime *rt,
                                             const char *mjcf, const frl_mujoco_callbacks *cb,
                                             void *user, int32_t observation_width,
                                             int32_t num_envs, const frl_config *cfg)
{
    static const char who[] = "frl_vec_env_create_mujoco";
    frl_mujoco_host host = {.user = user, .obs_dim = observation_width};
    frl_status st = check_host_model(out, rt, mjcf, cb, &host.cb, observation_width, num_envs,
                                     who);
    if (st != FRL_OK)
        return st;
    const frl_mujoco_plugin *p = get_plugin();
    if (!p)
        return no_plugin(who);
    char why[FRL_ERRMSG_SIZE - 80] = "";
    frl_mujoco_info info;
    frl_mujoco_settings set = settings_of(cfg);
    void *model = p->model_open_mjcf(mjcf, &host, &set, &info, why, sizeof why);
    if (!model)
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "%s: %s", who, why);
    return envs_of_model(out, rt, p, model, &info, num_envs, cfg, NULL, who);
}

/* ---- the benchmarks' floor ---- */

struct frl_mujoco_floor {
    const frl_mujoco_plugin *p;
    void *model;
    frl_mujoco_info info;
    int32_t n;
    void **envs;
    float *obs; /* the reset observations, unused */
};

void frl_mujoco_floor_close(frl_mujoco_floor *f)
{
    if (!f)
        return;
    for (int32_t i = 0; f->envs && i < f->n; i++)
        if (f->envs[i])
            f->p->callbacks.close(f->envs[i]);
    if (f->model)
        f->p->model_release(f->model);
    free(f->envs);
    free(f->obs);
    free(f);
}

frl_status frl_mujoco_floor_open(frl_mujoco_floor **out, const char *name, int32_t n)
{
    const frl_mujoco_plugin *p = get_plugin();
    char why[FRL_ERRMSG_SIZE - 80] = "";
    *out = NULL;
    if (n < 1)
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: a floor of %d envs (need >= 1)", name, (int)n);
    if (!p)
        return frl_fail(NULL, FRL_ERR_UNSUPPORTED, "%s needs the MuJoCo plugin, which is %s",
                        name, description);
    frl_mujoco_floor *f = calloc(1, sizeof *f);
    if (!f)
        return frl_fail(NULL, FRL_ERR_NOMEM, "out of memory");
    f->p = p;
    f->n = n;
    frl_mujoco_settings set = settings_of(NULL);
    f->model = p->model_open(name, &set, &f->info, why, sizeof why);
    if (!f->model) {
        frl_mujoco_floor_close(f);
        return frl_fail(NULL, FRL_ERR_UNSUPPORTED, "%s: %s", name, why);
    }
    f->envs = calloc((size_t)n, sizeof(void *));
    f->obs = malloc(sizeof(float) * (size_t)f->info.obs_dim);
    for (int32_t i = 0; f->envs && f->obs && i < n; i++)
        if (!(f->envs[i] = p->env_create(f->model, i, why, sizeof why)))
            break;
    if (!f->envs || !f->obs || !f->envs[n - 1]) {
        frl_mujoco_floor_close(f);
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: %s", name, why[0] ? why : "out of memory");
    }
    frl_mujoco_floor_reset(f);
    *out = f;
    return FRL_OK;
}

void frl_mujoco_floor_reset(frl_mujoco_floor *f)
{
    for (int32_t i = 0; i < f->n; i++)
        f->p->callbacks.reset(f->envs[i], (uint64_t)i, f->obs);
}

void frl_mujoco_floor_steps(frl_mujoco_floor *f, const float *actions)
{
    for (int32_t i = 0; i < f->n; i++)
        f->p->bare_step(f->envs[i], actions + (size_t)i * (size_t)f->info.action_dim);
}

int32_t frl_mujoco_floor_limit(const frl_mujoco_floor *f)
{
    return f->info.max_episode_steps;
}
