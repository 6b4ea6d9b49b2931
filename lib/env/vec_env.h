/* Internal view of frl_vec_env, shared with the single-env wrapper (env.c). */
#ifndef FRL_ENV_VEC_ENV_H
#define FRL_ENV_VEC_ENV_H

#include <stdatomic.h>
#include <string.h>

#include "core/runtime.h"
#include "core/space.h"
#include "env/env_class.h"
#include "env/values.h"

enum { FRL_MAX_ENVS = 1 << 24 }; /* envs of one vec env */

typedef enum vec_kind {
    VEC_BUILTIN = 1,  /* a built-in, stepped by env_class step_range */
    VEC_CALLBACKS,    /* one host env per index, stepped by the pool */
    VEC_BATCH         /* one host world stepping all envs in one callback */
} vec_kind;

struct frl_vec_env {
    frl_runtime *rt;
    vec_kind kind;
    int32_t n;
    const frl_env_class *cls;   /* VEC_BUILTIN */
    frl_space *obs_space;
    frl_space *act_space;
    int32_t obs_w;              /* floats per observation (frl_space_row_floats: an
                                   image's bytes travel as 4-byte words) */
    int32_t obs_n;              /* discrete observation space: n (obs_w is 1); 0 for a box */
    int32_t act_w;              /* values per action (1 for discrete) */
    int32_t action_n;           /* discrete n; 0 for box */
    size_t action_bytes;        /* bytes per env in the actions array */
    int32_t state_dim;          /* simulator values, without the elapsed count */
    frl_builtin_batch b;        /* every per-env array, in one arena */
    void *arena;
    uint64_t *seeds;            /* VEC_BATCH: reset seeds per env */
    void **users;               /* VEC_CALLBACKS: user pointer per env */
    frl_env_callbacks cb;
    frl_batch_env_callbacks bcb;
    void *batch_user;
    /* Envs the library made as host envs (the MuJoCo tasks): the observation of the
     * current state after set_state (NULL: host envs cannot report one), and what the
     * users share, released after their close callbacks. */
    int (*observe)(void *user, float *obs);
    void (*release)(void *owner);
    void *owner;
    /* A step that returns fault_code (nonzero) went wrong inside a simulator the library
     * runs: fault(user) says what; the episode ends there (vec_step.c). After any other
     * failure of such an env, fault(user) says what failed, or is "". */
    const char *task;           /* a built-in MuJoCo task's id (static), else NULL */
    /* The built-in whose tuned settings a trainer on v starts from: task's, or a ray
     * task's for a host's map, which names no task (a checkpoint would remake the task's
     * own room), so only frl_trainer_load_vec continues its runs. */
    const char *settings_of;
    /* A vec env made by name: the env.* settings it was made with (NULL otherwise), which
     * a trainer on it records (its own config may say otherwise), so a checkpoint's
     * settings remake these envs. */
    frl_config *env_cfg;
    int fault_code;
    const char *(*fault)(void *user);
    atomic_llong faults;        /* such steps so far, all envs (test_mujoco_host reads it) */
    /* Set while a reset, step or set_state runs: a call on v from one of its own
     * callbacks (or from a second thread) would step envs mid-step, so it is refused. */
    atomic_int busy;
    /* Set while a trainer runs on v (frl_trainer_create_vec and the rest): its samplers
     * step v through frl_vec_env_step_held and frl_vec_env_reset_from, and the public
     * reset, step and evaluations are refused, since a step of its envs from elsewhere
     * (a metrics callback, a second trainer) would put the run out of step with them. */
    atomic_int held;
    int32_t chunk;              /* envs per pool task */
    int32_t num_chunks;
    int64_t *chunk_episodes;    /* episodes ended in each chunk this step */
    int32_t *chunk_status;      /* frl_status of each chunk this step */
    char (*chunk_err)[FRL_ERRMSG_SIZE];
    int has_reset;
    int64_t step_calls;
    int64_t total_steps;
    int64_t total_episodes;
    char err[FRL_ERRMSG_SIZE];
};

/* The message of env i's failed callback `what` that returned rc: what the simulator the
 * library runs says went wrong when it says so, else the callback and its value. */
void frl_vec_env_callback_failed(const frl_vec_env *v, int32_t i, const char *what, int rc,
                                 char *err);

/* Claim v for a call that runs its envs (FRL_ERR_STATE naming `who` if a reset, step or
 * set_state is already running on it); frl_vec_env_leave gives it back. */
frl_status frl_vec_env_enter(frl_vec_env *v, const char *who);
/* The same refusal without taking the env: for checks that must name a nested call
 * before any other state (mid-reset, the env reads as never reset). */
frl_status frl_vec_env_check_idle(frl_vec_env *v, const char *who);
static inline void frl_vec_env_leave(frl_vec_env *v)
{
    atomic_store_explicit(&v->busy, 0, memory_order_release);
}

/* A trainer takes v (0; FRL_ERR_INVALID_ARGUMENT naming `who` and `what` if another
 * trainer has it) and gives it back. */
frl_status frl_vec_env_hold(frl_vec_env *v, const char *who, const char *what);
static inline void frl_vec_env_release(frl_vec_env *v)
{
    atomic_store_explicit(&v->held, 0, memory_order_release);
}

/* FRL_ERR_STATE naming `who` when a trainer holds v: the public calls that run or
 * read out its envs. */
frl_status frl_vec_env_check_free(const frl_vec_env *v, const char *who);

/* The built-in id v was made from by name (a built-in's or a MuJoCo task's), or NULL for
 * host envs: what a checkpoint names so the run can be made again. */
static inline const char *frl_vec_env_builtin_name(const frl_vec_env *v)
{
    return v->kind == VEC_BUILTIN ? v->cls->name : v->task;
}

/* The create functions, with `who` naming the public function in error messages. The
 * one by name (a built-in or a MuJoCo task) is in vec_env_named.h. */
/* out, rt and num_envs checked as every create function does (*out set to NULL). */
frl_status frl_vec_env_check_args(frl_vec_env **out, frl_runtime *rt, int32_t num_envs,
                                  const char *who);
/* num_envs envs of the built-in class c. */
frl_status frl_vec_env_create_builtin(frl_vec_env **out, frl_runtime *rt,
                                     const frl_env_class *c, int32_t num_envs,
                                     const frl_config *cfg, const char *who);
frl_status frl_vec_env_create_callbacks_as(frl_vec_env **out, frl_runtime *rt,
                                           const frl_env_callbacks *cb, void *const *users,
                                           int32_t num_envs, const frl_space *observation_space,
                                           const frl_space *action_space, const frl_config *cfg,
                                           const char *who);

/* Host envs with a time limit of default_limit steps where env.max_episode_steps is -1
 * (0: none), as the MuJoCo tasks need. On failure the caller keeps users. */
frl_status frl_vec_env_create_hosted(frl_vec_env **out, frl_runtime *rt,
                                     const frl_env_callbacks *cb, void *const *users,
                                     int32_t num_envs, const frl_space *observation_space,
                                     const frl_space *action_space, const frl_config *cfg,
                                     int32_t default_limit, const char *who);

/* State of env i: state_dim simulator values, then the elapsed step count. */
/* A host's get_state output for env i: finite, or FRL_ERR_NONFINITE naming the value
 * (set_state refuses such a state, so a checkpoint holding one could not be resumed). */
frl_status frl_vec_env_check_host_state(const double *state, int32_t size, int32_t i,
                                        char *err);

frl_status frl_vec_env_get_state_at(frl_vec_env *v, int32_t i, double *state, int32_t size,
                                    char *err);
frl_status frl_vec_env_set_state_at(frl_vec_env *v, int32_t i, const double *state,
                                    int32_t size, char *err);

/* FRL_OK when s may be an observation space: a box, an image, or discrete(n) with
 * n <= FRL_DISCRETE_OBS_MAX (FRL_ERR_RANGE "<who>: ..." into err otherwise). */
frl_status frl_check_observation_space(const frl_space *s, const char *who, char *err);
/* FRL_OK when s may be an action space: not an image (FRL_ERR_UNSUPPORTED). */
frl_status frl_check_action_space(const frl_space *s, const char *who, char *err);

#endif
