/* The built-in MuJoCo tasks (Hopper-v5, ...), run through the MuJoCo plugin
 * (env/mujoco_api.h) as host envs of the vec env. */
#ifndef FRL_ENV_MUJOCO_ENV_H
#define FRL_ENV_MUJOCO_ENV_H

#include "env/vec_env.h"

/* 1 when name is one of the MuJoCo task ids, known to the core whether or not the
 * plugin is there (so that asking for one without it says why it cannot run). */
int frl_mujoco_is_task(const char *name);
/* Those ids, index 0.. until NULL. */
const char *frl_mujoco_task_at(int32_t index);

/* num_envs envs of the MuJoCo task name, each with its own mjData on one shared model;
 * FRL_ERR_UNSUPPORTED with the reason when the plugin cannot be loaded. */
frl_status frl_mujoco_vec_env_create(frl_vec_env **out, frl_runtime *rt, const char *name,
                                     int32_t num_envs, const frl_config *cfg, const char *who);

/* "MuJoCo 4.0.0 (libfastrl-mujoco.so.0: 7 tasks)" or why the plugin is not available;
 * loads the plugin if it was not loaded yet. Static storage. */
const char *frl_mujoco_describe(void);

/* The floor of `fastrl bench env` for a MuJoCo task: n envs of it stepped by MuJoCo's
 * own loop on the calling thread (mujoco_api.h's bare_step), with plain C allocations
 * (a benchmark's, outside any runtime). */
typedef struct frl_mujoco_floor frl_mujoco_floor;
frl_status frl_mujoco_floor_open(frl_mujoco_floor **out, const char *name, int32_t n);
/* Reset every env (env i from seed i). */
void frl_mujoco_floor_reset(frl_mujoco_floor *f);
/* One step of every env; actions holds n rows of the task's action width. */
void frl_mujoco_floor_steps(frl_mujoco_floor *f, const float *actions);
/* The task's time limit, after which the benchmark resets the floor's envs. */
int32_t frl_mujoco_floor_limit(const frl_mujoco_floor *f);
void frl_mujoco_floor_close(frl_mujoco_floor *f);

#endif
