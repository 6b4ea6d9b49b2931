/* MemoryProbe-v0: a test of memory for the recurrent policies of issue 18.
 *
 * One of K cues is shown on the first observation only; D blank observations
 * follow; then a blank observation with the answer flag set asks for the cue.
 * The action taken there is scored (1 if it names the cue, else 0) and ends the
 * episode; the actions before it are ignored and earn 0.
 *
 * Observation, K + 1 floats in [0, 1]: [0, K) the cue one-hot (only at t = 0),
 * [K] the answer flag (only at t = D + 1). Actions: discrete(K).
 * t counts the steps taken in the episode; an episode is D + 2 steps.
 *
 * K = env.memory_cues and D = env.memory_delay are settings, so the shape is
 * configured per vec env (the class's configure hook) and every sim carries its
 * own K and D: the step and reset functions then need no other context.
 * State for get/set_state: cue, t (K and D come from the settings, not the state). */
#include <math.h>

#include "core/config.h"
#include "env/step_range.h"

#define MP_MAX_CUES 64
#define MP_MAX_DELAY 10000
#define MP_DEFAULT_CUES 4

typedef struct memory_sim {
    int32_t cues, delay; /* K and D, written by configure */
    int32_t cue;         /* the answer, in [0, K) */
    int32_t t;           /* steps taken this episode, in [0, D + 2] */
} memory_sim;

_Static_assert(sizeof(memory_sim) <= FRL_SIM_MAX_BYTES, "sim too large");
_Static_assert(MP_MAX_CUES + 1 <= FRL_OBS_MAX_DIM, "observation too large");

/* Long enough for the widest configuration; a vec env reads the first K + 1. */
static const float mp_obs_low[MP_MAX_CUES + 1] = {0.0f};
#define MP_ONE8 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f
static const float mp_obs_high[MP_MAX_CUES + 1] = {MP_ONE8, MP_ONE8, MP_ONE8, MP_ONE8,
                                                   MP_ONE8, MP_ONE8, MP_ONE8, MP_ONE8, 1.0f};

static inline void memory_observe_sim(const memory_sim *s, float *obs)
{
    for (int32_t k = 0; k <= s->cues; k++)
        obs[k] = 0.0f;
    if (s->t == 0)
        obs[s->cue] = 1.0f;
    else if (s->t == s->delay + 1)
        obs[s->cues] = 1.0f;
}

static inline void memory_step(void *sim, const void *action, float *obs, float *reward,
                               uint8_t *terminated)
{
    memory_sim *s = sim;
    int answering = s->t == s->delay + 1;
    *reward = answering && *(const int32_t *)action == s->cue ? 1.0f : 0.0f;
    *terminated = (uint8_t)answering;
    s->t++;
    memory_observe_sim(s, obs);
}

/* The modulo's bias is below K / 2^64: immaterial for K <= 64. */
static inline void memory_reset(void *sim, frl_rng *rng, float *obs)
{
    memory_sim *s = sim;
    s->cue = (int32_t)(frl_rng_next(rng) % (uint64_t)s->cues);
    s->t = 0;
    memory_observe_sim(s, obs);
}

/* The obs stride is the configured K + 1, which the batch carries. */
static int32_t memory_step_range(const frl_builtin_batch *b, int32_t begin, int32_t end)
{
    return frl_step_range_impl(b, begin, end, b->obs_dim, sizeof(int32_t), memory_step,
                               memory_reset);
}

static void memory_floor_steps(unsigned char *sims, frl_rng *rngs, int32_t n,
                               const void *actions, float *obs, float *rewards)
{
    int32_t obs_dim = n > 0 ? ((const memory_sim *)(const void *)sims)->cues + 1 : 0;
    frl_floor_impl(sims, rngs, n, actions, obs, rewards, obs_dim, sizeof(int32_t), memory_step,
                   memory_reset);
}

static void memory_get_state(const void *sim, double *state)
{
    const memory_sim *s = sim;
    state[0] = (double)s->cue;
    state[1] = (double)s->t;
}

/* A state must be whole numbers within this sim's K and D, and one an episode goes on
 * from: t <= D + 1. At D + 2, where the answer step leaves an ended episode, no step is
 * the answer, so an episode set there never ended (check_sim still takes D + 2: a saved
 * env waiting for its autoreset holds it). */
static int memory_set_state(void *sim, const double *state)
{
    memory_sim *s = sim;
    if (!(state[0] >= 0 && state[0] < s->cues && state[0] == floor(state[0])))
        return -1;
    if (!(state[1] >= 0 && state[1] <= s->delay + 1 && state[1] == floor(state[1])))
        return -1;
    s->cue = (int32_t)state[0];
    s->t = (int32_t)state[1];
    return 0;
}

static void memory_observe(const void *sim, float *obs)
{
    memory_observe_sim(sim, obs);
}

/* The settings' ranges are the config keys' own (checked when they are set). */
static void memory_configure(const frl_config *cfg, unsigned char *sims, int32_t n,
                             frl_env_shape *shape)
{
    int32_t cues = (int32_t)frl_cfg_int(cfg, FRL_KEY_ENV_MEMORY_CUES);
    int32_t delay = (int32_t)frl_cfg_int(cfg, FRL_KEY_ENV_MEMORY_DELAY);
    shape->obs_dim = cues + 1;
    shape->action_n = cues;
    for (int32_t i = 0; sims && i < n; i++) {
        memory_sim *s = (memory_sim *)(void *)(sims + (size_t)i * FRL_SIM_MAX_BYTES);
        *s = (memory_sim){.cues = cues, .delay = delay, .cue = 0, .t = 0};
    }
}

/* A restored sim (frl_vec_env_restore): K and D as the vec env's settings give them (a
 * forged K of 0 divided by zero at the next reset, a large one wrote past the
 * observation), the cue and the step count within them. */
static int memory_check_sim(const void *sim, const void *configured, char *why, size_t size)
{
    const memory_sim *s = sim, *c = configured;
    if (s->cues != c->cues || s->delay != c->delay)
        snprintf(why, size, "cues %d, delay %d; the settings give %d, %d", (int)s->cues,
                 (int)s->delay, (int)c->cues, (int)c->delay);
    else if (s->cue < 0 || s->cue >= s->cues)
        snprintf(why, size, "cue %d is outside [0, %d)", (int)s->cue, (int)s->cues);
    else if (s->t < 0 || s->t > s->delay + 2)
        snprintf(why, size, "t %d is outside [0, %d]", (int)s->t, (int)s->delay + 2);
    else
        return 0;
    return 1;
}

/* obs_dim and action_n are those of the default K; configure gives the real ones.
 * No time limit: every episode ends at D + 2 steps. */
const frl_env_class frl_env_memory_probe = {
    .name = "MemoryProbe-v0",
    .obs_dim = MP_DEFAULT_CUES + 1,
    .obs_low = mp_obs_low,
    .obs_high = mp_obs_high,
    .action_n = MP_DEFAULT_CUES,
    .action_dim = 1,
    .action_low = NULL,
    .action_high = NULL,
    .state_dim = 2,
    .max_episode_steps = 0,
    .reset = memory_reset,
    .step_range = memory_step_range,
    .floor_steps = memory_floor_steps,
    .get_state = memory_get_state,
    .set_state = memory_set_state,
    .state_rule = "whole numbers: cue in [0, env.memory_cues), t in [0, env.memory_delay + 1]",
    .observe = memory_observe,
    .configure = memory_configure,
    .check_sim = memory_check_sim,
};
