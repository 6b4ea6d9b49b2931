/* MountainCar-v0, a port of Gymnasium 1.2.2's MountainCarEnv (Moore, 1990).
 *
 * All float64: velocity += (action - 1) * force - gravity * cos(3 * position),
 * clipped to +-max_speed; position += velocity, clipped to the track; at the
 * left wall a negative velocity is zeroed. Reward -1 every step.
 * State for get/set_state: position, velocity. */

/* Bit-faithfulness needs every product rounded on its own: no fused
 * multiply-add. GCC does not contract in ISO C mode (-std=c11); tell clang. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include <math.h>

#include "env/step_range.h"

#define MC_OBS_DIM 2
#define MC_MIN_POSITION (-1.2)
#define MC_MAX_POSITION 0.6
#define MC_MAX_SPEED 0.07
#define MC_GOAL_POSITION 0.5
#define MC_FORCE 0.001
#define MC_GRAVITY 0.0025

typedef struct mountain_car_sim {
    double position, velocity;
} mountain_car_sim;

_Static_assert(sizeof(mountain_car_sim) <= FRL_SIM_MAX_BYTES, "sim too large");

static const float mc_obs_low[MC_OBS_DIM] = {(float)MC_MIN_POSITION, -(float)MC_MAX_SPEED};
static const float mc_obs_high[MC_OBS_DIM] = {(float)MC_MAX_POSITION, (float)MC_MAX_SPEED};

static inline double mountain_car_clip(double x, double lo, double hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

static inline void mountain_car_observe_sim(const mountain_car_sim *s, float *obs)
{
    obs[0] = (float)s->position;
    obs[1] = (float)s->velocity;
}

static inline void mountain_car_step(void *sim, const void *action, float *obs, float *reward,
                                     uint8_t *terminated)
{
    mountain_car_sim *s = sim;
    double push = (double)(*(const int32_t *)action - 1) * MC_FORCE;
    /* Gymnasium adds the two terms first, then adds their sum to velocity. */
    double velocity = s->velocity + (push + cos(3 * s->position) * -MC_GRAVITY);
    velocity = mountain_car_clip(velocity, -MC_MAX_SPEED, MC_MAX_SPEED);
    double position = mountain_car_clip(s->position + velocity, MC_MIN_POSITION, MC_MAX_POSITION);
    if (position == MC_MIN_POSITION && velocity < 0)
        velocity = 0.0;
    s->position = position;
    s->velocity = velocity;
    /* goal_velocity is 0 for the registered id. */
    *terminated = (uint8_t)(position >= MC_GOAL_POSITION && velocity >= 0.0);
    *reward = -1.0f;
    mountain_car_observe_sim(s, obs);
}

static inline void mountain_car_reset(void *sim, frl_rng *rng, float *obs)
{
    mountain_car_sim *s = sim;
    s->position = frl_rng_uniform_range(rng, -0.6, -0.4);
    s->velocity = 0.0;
    mountain_car_observe_sim(s, obs);
}

static int32_t mountain_car_step_range(const frl_builtin_batch *b, int32_t begin, int32_t end)
{
    return frl_step_range_impl(b, begin, end, MC_OBS_DIM, sizeof(int32_t), mountain_car_step,
                        mountain_car_reset);
}

static void mountain_car_floor_steps(unsigned char *sims, frl_rng *rngs, int32_t n,
                                     const void *actions, float *obs, float *rewards)
{
    frl_floor_impl(sims, rngs, n, actions, obs, rewards, MC_OBS_DIM, sizeof(int32_t),
                   mountain_car_step, mountain_car_reset);
}

static void mountain_car_get_state(const void *sim, double *state)
{
    const mountain_car_sim *s = sim;
    state[0] = s->position;
    state[1] = s->velocity;
}

static int mountain_car_set_state(void *sim, const double *state)
{
    if (!isfinite(state[0]) || !isfinite(state[1]))
        return -1;
    mountain_car_sim *s = sim;
    s->position = state[0];
    s->velocity = state[1];
    return 0;
}

static void mountain_car_observe(const void *sim, float *obs)
{
    mountain_car_observe_sim(sim, obs);
}

/* A restored sim (frl_vec_env_restore): what set_state would take. */
static int mountain_car_check_sim(const void *sim, const void *configured, char *why, size_t size)
{
    static const char *const names[] = {"position", "velocity"};
    return frl_sim_state_check(&frl_env_mountain_car, sim, configured, names,
                               "the finite values", why, size);
}

const frl_env_class frl_env_mountain_car = {
    .name = "MountainCar-v0",
    .obs_dim = MC_OBS_DIM,
    .obs_low = mc_obs_low,
    .obs_high = mc_obs_high,
    .action_n = 3,
    .action_dim = 1,
    .action_low = NULL,
    .action_high = NULL,
    .state_dim = 2,
    .max_episode_steps = 200,
    .reset = mountain_car_reset,
    .step_range = mountain_car_step_range,
    .floor_steps = mountain_car_floor_steps,
    .get_state = mountain_car_get_state,
    .set_state = mountain_car_set_state,
    .state_rule = "finite values",
    .observe = mountain_car_observe,
    .check_sim = mountain_car_check_sim,
};
