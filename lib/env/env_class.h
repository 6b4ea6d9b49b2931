/* The internal description of a built-in environment.
 *
 * A built-in is a plain struct of simulator state (its "sim") plus a table of
 * functions. Its per-step dynamics are static inline functions in its own file,
 * expanded by step_range.h into a loop over a range of environments, so the hot
 * loop has no indirect call per environment. */
#ifndef FRL_ENV_ENV_CLASS_H
#define FRL_ENV_ENV_CLASS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/rng.h"
#include "env/values.h"

enum {
    FRL_SIM_MAX_BYTES = 64,   /* largest sim struct of any built-in */
    FRL_SIM_MAX_STATE = 8,    /* largest state_dim (float64 values) */
    FRL_OBS_MAX_DIM = 65      /* largest observation of any built-in (MemoryProbe, K = 64) */
};

/* Structure-of-arrays view of N environments; a step_range call touches only
 * entries [begin, end) of every array, so disjoint ranges run on different
 * threads without sharing a cache line of state (sims are 64-byte strided). */
typedef struct frl_builtin_batch {
    unsigned char *sims;          /* N sims, FRL_SIM_MAX_BYTES apart */
    frl_rng *rngs;                /* N streams, used by reset */
    const void *actions;          /* int32_t[N] (discrete) or float[N * action_dim] (box) */
    float *obs;                   /* N * obs_dim */
    int32_t obs_dim;              /* observation floats per env (configured shape) */
    float *rewards;               /* N */
    uint8_t *terminated;          /* N */
    uint8_t *truncated;           /* N */
    uint8_t *reset_step;          /* N: 1 where this step was an autoreset */
    uint8_t *needs_reset;         /* N: 1 where the previous step ended an episode */
    int32_t *elapsed;             /* N: steps in the current episode */
    double *ep_return;            /* N: running return of the current episode */
    float *done_return;           /* N: return of the episode that ended this step */
    int32_t *done_length;         /* N: its length */
    int32_t max_episode_steps;    /* 0 = no time limit */
    /* NULL, or N flags for one step (frl_vec_env_step_active): an env whose flag is 0 is
     * not stepped, its state kept, with reward 0 and no flags (the population engine's
     * envs with nothing left to run). */
    const uint8_t *active;
} frl_builtin_batch;

struct frl_config;

/* The spaces an environment's settings give it (see configure below). */
typedef struct frl_env_shape {
    int32_t obs_dim;
    int32_t action_n;
} frl_env_shape;

typedef struct frl_env_class {
    const char *name;
    int32_t obs_dim;
    const float *obs_low;         /* obs_dim values */
    const float *obs_high;
    int32_t action_n;             /* > 0: discrete(action_n), actions are int32_t */
    int32_t action_dim;           /* box: float actions per env; 1 for discrete */
    const float *action_low;      /* box only, action_dim values; NULL for discrete */
    const float *action_high;
    int32_t state_dim;            /* float64 values in get/set_state */
    int32_t max_episode_steps;    /* Gymnasium's TimeLimit for the registered id */
    /* Draw the initial state from rng and write the first observation. */
    void (*reset)(void *sim, frl_rng *rng, float *obs);
    /* Step every environment in [begin, end) with autoreset and statistics; returns
     * the number of episodes that ended. */
    int32_t (*step_range)(const frl_builtin_batch *b, int32_t begin, int32_t end);
    /* The floor: the same dynamics in a bare loop (no validation, no flags, no
     * statistics, no time limit; reset on termination only), for benchmarks. */
    void (*floor_steps)(unsigned char *sims, frl_rng *rngs, int32_t n, const void *actions,
                        float *obs, float *rewards);
    void (*get_state)(const void *sim, double *state);
    /* Returns 0, or -1 if the state is not finite or otherwise impossible. */
    int (*set_state)(void *sim, const double *state);
    /* The states set_state takes, in words, for the message of one it refuses. */
    const char *state_rule;
    /* Observation of the current sim (used after set_state). */
    void (*observe)(const void *sim, float *obs);
    /* Optional (NULL: the fixed shape above). An environment with settings reads them
     * from cfg (NULL: the defaults) and gives the shape they imply; where sims is not
     * NULL it also writes them into each of the n sims, before any reset. obs_low and
     * obs_high must then hold the widest obs_dim's values. */
    void (*configure)(const struct frl_config *cfg, unsigned char *sims, int32_t n,
                      frl_env_shape *shape);
    /* Required. Whether sim, raw bytes a checkpoint restores, is one this class can be
     * in under the vec env's settings, which configured holds (a sim of the same vec
     * env: configure's fields are current): 0, or nonzero with the bad field and value
     * in why. A checkpoint is only CRC-checked, and a forged count or index in a sim
     * divided by zero or overflowed the observation. */
    int (*check_sim)(const void *sim, const void *configured, char *why, size_t size);
} frl_env_class;

/* A check_sim for a class whose sim is its state: every value finite (the first that
 * is not named from names), then set_state on a scratch copy of configured must accept
 * it (its ranges; rule says what they are), and its observation must be finite. */
static inline int frl_sim_state_check(const frl_env_class *c, const void *sim,
                                      const void *configured, const char *const *names,
                                      const char *rule, char *why, size_t size)
{
    double state[FRL_SIM_MAX_STATE];
    unsigned char scratch[FRL_SIM_MAX_BYTES];
    c->get_state(sim, state);
    for (int32_t i = 0; i < c->state_dim; i++)
        if (!isfinite(state[i])) {
            snprintf(why, size, "%s is %g", names[i], state[i]);
            return 1;
        }
    memcpy(scratch, configured, sizeof scratch);
    if (c->set_state(scratch, state) != 0) {
        snprintf(why, size, "the state is outside %s", rule);
        return 1;
    }
    /* Finite doubles beyond float32's range give an infinite observation. */
    float obs[FRL_OBS_MAX_DIM];
    c->observe(scratch, obs);
    int64_t k = frl_find_nonfinite(obs, c->obs_dim);
    if (k < 0)
        return 0;
    snprintf(why, size, "its observation[%d] would not be finite (beyond float32)", (int)k);
    return 1;
}

/* The built-ins, each defined in its own file and listed by the registry
 * (env/registry.h). */
extern const frl_env_class frl_env_cartpole;
extern const frl_env_class frl_env_pendulum;
extern const frl_env_class frl_env_acrobot;
extern const frl_env_class frl_env_mountain_car;
extern const frl_env_class frl_env_mountain_car_continuous;
extern const frl_env_class frl_env_cartpole_novel;
extern const frl_env_class frl_env_memory_probe;

#endif
