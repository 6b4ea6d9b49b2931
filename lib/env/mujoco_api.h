/* The interface between libfastrl and its MuJoCo plugin (libfastrl-mujoco.so.0), which
 * the core loads with dlopen the first time an environment asks for MuJoCo (a built-in
 * MuJoCo task such as "Hopper-v5"). The core links nothing of MuJoCo: libmujoco is a
 * dependency of the plugin alone. Internal: both sides are built from this tree and the
 * ABI number guards against a plugin from another build.
 *
 * A model is one compiled mjModel, shared read-only by every env made from it; an env is
 * one mjData. The envs are host environments to the vec env (frl_env_callbacks, stepped
 * on the pool's threads), so autoreset, time limits, checks and state travel the same
 * path as any host env's. Calls return 0 (or a pointer) on success, else nonzero (NULL)
 * with a sentence in why. */
#ifndef FRL_ENV_MUJOCO_API_H
#define FRL_ENV_MUJOCO_API_H

#include <stddef.h>
#include <stdint.h>

#include "fastrl.h"

#define FRL_MUJOCO_PLUGIN_ABI 3u
#define FRL_MUJOCO_PLUGIN_SYMBOL "frl_mujoco_plugin_get"
#define FRL_MUJOCO_PLUGIN_FILE "libfastrl-mujoco.so.0"

/* What a model gives the vec env. The arrays belong to the model. */
typedef struct frl_mujoco_info {
    int32_t obs_dim;            /* floats per observation */
    int32_t action_dim;         /* box actions: mjModel.nu */
    const float *action_low;    /* action_dim values: the actuators' ctrlrange */
    const float *action_high;
    int32_t state_size;         /* float64 values of get/set_state */
    int32_t max_episode_steps;  /* Gymnasium's TimeLimit for the id */
    double dt;                  /* seconds per env step: timestep x frame skip */
} frl_mujoco_info;

/* What a model takes from the config (env.frame_skip, env.randomize_*). */
typedef struct frl_mujoco_settings {
    int32_t frame_skip;         /* 0: the task's own (1 for a host's model) */
    double randomize_mass;      /* each episode, factors uniform in [1 - r, 1 + r] */
    double randomize_friction;
    double randomize_damping;
} frl_mujoco_settings;

/* A host's model (frl_vec_env_create_mujoco): its callbacks, user and observation
 * width, copied by the plugin. */
typedef struct frl_mujoco_host {
    frl_mujoco_callbacks cb;
    void *user;
    int32_t obs_dim;
} frl_mujoco_host;

/* Where one of MuJoCo's named arrays lies (frl_mujoco_array). */
typedef struct frl_mujoco_found {
    void *ptr;                  /* NULL when the array is empty */
    int64_t rows, cols;
    int32_t type;               /* frl_mujoco_type */
} frl_mujoco_found;

typedef struct frl_mujoco_plugin {
    uint32_t abi;               /* FRL_MUJOCO_PLUGIN_ABI, first (frl_plugin_table) */
    const char *(*version)(void); /* MuJoCo's version string ("4.0.0") */
    /* The task ids, index 0.. until NULL. */
    const char *(*task_at)(int32_t index);
    /* A model of task name with one reference held by the caller. */
    void *(*model_open)(const char *name, const frl_mujoco_settings *set,
                        frl_mujoco_info *info, char *why, size_t size);
    /* A model of a host's MJCF (the XML when it starts with '<', else a path); why
     * carries MuJoCo's message when it does not load. */
    void *(*model_open_mjcf)(const char *mjcf, const frl_mujoco_host *host,
                             const frl_mujoco_settings *set, frl_mujoco_info *info,
                             char *why, size_t size);
    /* Drop one reference; the last frees the model. */
    void (*model_release)(void *model);
    /* Env `index` of model (its own mjData, and its own mjModel copy when the settings
     * randomise), which takes a reference to the model; the callbacks' close frees the
     * env and drops that reference. */
    void *(*env_create)(void *model, int32_t index, char *why, size_t size);
    /* reset, step, close, get_state and set_state of an env (state_size is left 0:
     * the core sets it from frl_mujoco_info). */
    frl_env_callbacks callbacks;
    /* The observation of the env's current state (after set_state). */
    int (*observe)(void *env, float *obs);
    /* What the env's last call met when it returned FRL_MUJOCO_FAULT (MuJoCo's warning
     * text) or failed (MuJoCo's error, a reset's warning, or which host callback returned
     * what); "" after a call that succeeded. */
    const char *(*fault)(void *env);
    /* The benchmarks' floor, MuJoCo's own loop: ctrl = action and the frame skip's
     * mj_step calls, nothing else (no observation, reward, checks or fault handling). */
    void (*bare_step)(void *env, const float *action);
    /* The array `name` of model (data NULL) or of data: 0, or -1 when neither has an
     * array of numbers by that name. */
    int (*array)(const void *model, const void *data, const char *name,
                 frl_mujoco_found *out);
    /* The id of object `name` of kind ("body", "site", ... as mju_str2Type reads it):
     * the id, -1 for no such object, -2 for no such kind. */
    int (*name_id)(const void *model, const char *kind, const char *name);
} frl_mujoco_plugin;

/* Returned by the step callback when the simulation went wrong: MuJoCo raised a warning
 * (an unstable or non-finite acceleration, a full contact or constraint buffer) or the
 * state is not finite. The env has been put back to the model's initial state and its
 * observation written; the vec env ends the episode there (truncated, reward 0), says
 * so in the runtime's log, and counts it, so a training run goes on. */
#define FRL_MUJOCO_FAULT 9

typedef const frl_mujoco_plugin *(*frl_mujoco_plugin_get_fn)(void);

#endif
