/* The MuJoCo plugin's own view of its models and envs, shared by its files: model.c
 * (MuJoCo's error handling, loading and compiling models), env.c (the envs' callbacks)
 * and plugin.c (the table the core loads). */
#ifndef FRL_MUJOCO_PLUGIN_H
#define FRL_MUJOCO_PLUGIN_H

#include <stdatomic.h>
#include <stddef.h>

#include "env/mujoco_api.h"
#include "mujoco/task.h"

/* The state get/set covers: time, qpos, qvel, act, history and plastic buffers, plugin
 * state and the solver's warm start, and the user inputs: what a host's reset may set
 * that the next steps read (applied forces, mocap bodies, active equalities, userdata)
 * and ctrl, which each step overwrites but set_state's mj_forward turns into the
 * actuator forces (and accelerations, constraint forces, sensors) the observation after
 * it reads, which would otherwise be those of the env's own last action. Then the task's
 * carried values (mjt_task.carried), and for a randomising model the episode's
 * randomisation seed as two 32-bit halves (MJT_SEED_VALUES), before the vec env's
 * elapsed count. */
#define MJT_STATE_SPEC (mjSTATE_FULLPHYSICS | mjSTATE_WARMSTART | mjSTATE_USER)
#define MJT_SEED_VALUES 2

/* What an env's call returns when a host callback failed (its own code is in the fault
 * text); never FRL_MUJOCO_FAULT. */
#define MJT_HOST_FAILED 4

/* One compiled model, shared read-only by its envs: a built-in task's (task set) or a
 * host's (task NULL, host set). */
typedef struct mjt_model {
    const mjt_task *task;
    frl_mujoco_host host;
    mjModel *m;
    mjt_ctx ctx;                 /* ctx.dt from the frame skip below */
    int32_t frame_skip;
    int32_t obs_dim;
    frl_mujoco_settings set;
    int randomised;              /* any randomize_* > 0: every env has its own model */
    /* A host's named randomisation (frl_mujoco_callbacks.randomize_*): which bodies,
     * geoms and dofs take their factor; NULL: all */
    unsigned char *mass_mask, *friction_mask, *damping_mask;
    char name[64];               /* the task's id, or "MuJoCo model" for a host's */
    float *action_low, *action_high;
    atomic_int refs;
} mjt_model;

typedef struct mjt_env {
    mjt_model *model;
    mjModel *m;                  /* model->m, or the env's own copy when randomised */
    mjData *d;
    mjt_ctx ctx;                 /* model->ctx over m */
    int32_t index;
    uint64_t episode_seed;       /* what randomised this episode's model, when it is */
    double before[MJT_MAX_BEFORE]; /* the task's track values for the next step */
    char fault[256];             /* what the last call that failed or faulted met */
} mjt_env;

/* Run fn(arg) with MuJoCo's errors caught (where the plugin's handlers are installed):
 * 0, or -1 with MuJoCo's message in why. */
int mjt_guarded(void (*fn)(void *), void *arg, char *why, size_t size);
/* Install the plugin's error and warning handlers where the host has none. */
void mjt_install_handlers(void);

void *mjt_model_open(const char *name, const frl_mujoco_settings *set, frl_mujoco_info *info,
                     char *why, size_t size);
void *mjt_model_open_mjcf(const char *mjcf, const frl_mujoco_host *host,
                          const frl_mujoco_settings *set, frl_mujoco_info *info, char *why,
                          size_t size);
void mjt_model_release(void *model);
const char *mjt_task_at(int32_t index);
void mjt_model_retain(mjt_model *md);

/* The envs' side of the table (env.c). */
void *mjt_env_create(void *model, int32_t index, char *why, size_t size);
void mjt_env_close(void *user);
int mjt_env_reset(void *user, uint64_t seed, float *obs);
int mjt_env_step(void *user, const void *action, float *obs, float *reward,
                 uint8_t *terminated, uint8_t *truncated);
int mjt_env_get_state(void *user, double *state);
int mjt_env_set_state(void *user, const double *state);
int mjt_env_observe(void *user, float *obs);
const char *mjt_env_fault(void *user);
void mjt_env_bare_step(void *user, const float *action);

/* MuJoCo's named arrays and objects (arrays.c). */
int mjt_array(const void *model, const void *data, const char *name, frl_mujoco_found *out);
int mjt_name_id(const void *model, const char *kind, const char *name);

#endif
