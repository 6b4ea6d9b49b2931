/* MountainCarContinuous-v0, a port of Gymnasium 1.2.2's
 * Continuous_MountainCarEnv.
 *
 * Gymnasium's state is a float64 array after reset but a float32 array after
 * every step, and under NumPy 2's promotion rules (NEP 50) the arithmetic of a
 * step depends on that dtype and on the type of the clipped force: the
 * unclipped action element stays an np.float32, while an action outside
 * [-1, 1] is replaced by the Python float +-1.0. A Python float meeting a
 * float32 is rounded to float32 first, in arithmetic and in comparisons. So
 * the sim keeps a flag "state is float32" and follows the same four paths.
 * The reward penalises the unclipped action: -0.1 * action**2 in float64,
 * plus 100 on reaching the goal.
 * State for get/set_state: position, velocity, is_float32 (0 or 1). */

/* Bit-faithfulness needs every product rounded on its own: no fused
 * multiply-add. GCC does not contract in ISO C mode (-std=c11); tell clang. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include <float.h>
#include <math.h>

#include "env/step_range.h"

#define MCC_OBS_DIM 2
#define MCC_MIN_POSITION (-1.2)
#define MCC_MAX_POSITION 0.6
#define MCC_MAX_SPEED 0.07
#define MCC_GOAL_POSITION 0.45
#define MCC_POWER 0.0015
#define MCC_GRAVITY 0.0025

typedef struct mountain_car_continuous_sim {
    double position, velocity;
    int32_t is_f32; /* 1 once a step has made Gymnasium's state float32 */
} mountain_car_continuous_sim;

_Static_assert(sizeof(mountain_car_continuous_sim) <= FRL_SIM_MAX_BYTES, "sim too large");

static const float mcc_obs_low[MCC_OBS_DIM] = {(float)MCC_MIN_POSITION, -(float)MCC_MAX_SPEED};
static const float mcc_obs_high[MCC_OBS_DIM] = {(float)MCC_MAX_POSITION, (float)MCC_MAX_SPEED};
static const float mcc_action_low[1] = {-1.0f};
static const float mcc_action_high[1] = {1.0f};

/* The float64 path (first step after reset): only an np.float32 force keeps
 * its product and difference in float32. */
static inline uint8_t mcc_step_f64(mountain_car_continuous_sim *s, float a, int force_f32)
{
    double gravity = MCC_GRAVITY * cos(3 * s->position);
    double velocity = s->velocity;
    if (force_f32)
        velocity += (double)(a * (float)MCC_POWER - (float)gravity);
    else
        velocity += (a > 0.0f ? 1.0 : -1.0) * MCC_POWER - gravity;
    if (velocity > MCC_MAX_SPEED)
        velocity = MCC_MAX_SPEED;
    if (velocity < -MCC_MAX_SPEED)
        velocity = -MCC_MAX_SPEED;
    double position = s->position + velocity;
    if (position > MCC_MAX_POSITION)
        position = MCC_MAX_POSITION;
    if (position < MCC_MIN_POSITION)
        position = MCC_MIN_POSITION;
    if (position == MCC_MIN_POSITION && velocity < 0)
        velocity = 0.0;
    /* The goal test sees the float64 values; the stored state is float32. */
    s->position = (double)(float)position;
    s->velocity = (double)(float)velocity;
    return (uint8_t)(position >= MCC_GOAL_POSITION && velocity >= 0.0);
}

/* The float32 path: every operation and every comparison constant is
 * float32; only cos(3 * position) and the +-1.0 force term are float64, and
 * they are rounded to float32 when they meet the float32 values. */
static inline uint8_t mcc_step_f32(mountain_car_continuous_sim *s, float a, int force_f32)
{
    float position = (float)s->position;
    float velocity = (float)s->velocity;
    double gravity = MCC_GRAVITY * cos((double)(3.0f * position));
    if (force_f32)
        velocity += a * (float)MCC_POWER - (float)gravity;
    else
        velocity += (float)((a > 0.0f ? 1.0 : -1.0) * MCC_POWER - gravity);
    if (velocity > (float)MCC_MAX_SPEED)
        velocity = (float)MCC_MAX_SPEED;
    if (velocity < -(float)MCC_MAX_SPEED)
        velocity = -(float)MCC_MAX_SPEED;
    position += velocity;
    if (position > (float)MCC_MAX_POSITION)
        position = (float)MCC_MAX_POSITION;
    if (position < (float)MCC_MIN_POSITION)
        position = (float)MCC_MIN_POSITION;
    if (position == (float)MCC_MIN_POSITION && velocity < 0.0f)
        velocity = 0.0f;
    s->position = (double)position;
    s->velocity = (double)velocity;
    return (uint8_t)(position >= (float)MCC_GOAL_POSITION && velocity >= 0.0f);
}

static inline void mcc_observe_sim(const mountain_car_continuous_sim *s, float *obs)
{
    obs[0] = (float)s->position;
    obs[1] = (float)s->velocity;
}

static inline void mcc_step(void *sim, const void *action, float *obs, float *reward,
                            uint8_t *terminated)
{
    mountain_car_continuous_sim *s = sim;
    float a = *(const float *)action;
    /* min(max(a, -1.0), 1.0) keeps the np.float32 unless a is strictly out. */
    int force_f32 = a >= -1.0f && a <= 1.0f;
    uint8_t term = s->is_f32 ? mcc_step_f32(s, a, force_f32) : mcc_step_f64(s, a, force_f32);
    s->is_f32 = 1; /* the state becomes a float32 array whichever path ran */
    /* math.pow(action[0], 2) * 0.1 on the unclipped action, in float64. */
    double r = term ? 100.0 : 0.0;
    r -= (double)a * (double)a * 0.1;
    /* Beyond float's range (|a| > 5.8e19, a finite action) the float would be -inf, a
     * reward no env may give: the nearest float instead (Gymnasium's float64 has none). */
    *reward = r < -FLT_MAX ? -FLT_MAX : (float)r;
    *terminated = term;
    mcc_observe_sim(s, obs);
}

static inline void mcc_reset(void *sim, frl_rng *rng, float *obs)
{
    mountain_car_continuous_sim *s = sim;
    s->position = frl_rng_uniform_range(rng, -0.6, -0.4);
    s->velocity = 0.0;
    s->is_f32 = 0; /* np.array([uniform, 0]) is float64 */
    mcc_observe_sim(s, obs);
}

static int32_t mcc_step_range(const frl_builtin_batch *b, int32_t begin, int32_t end)
{
    return frl_step_range_impl(b, begin, end, MCC_OBS_DIM, sizeof(float), mcc_step, mcc_reset);
}

static void mcc_floor_steps(unsigned char *sims, frl_rng *rngs, int32_t n, const void *actions,
                            float *obs, float *rewards)
{
    frl_floor_impl(sims, rngs, n, actions, obs, rewards, MCC_OBS_DIM, sizeof(float), mcc_step,
                   mcc_reset);
}

static void mcc_get_state(const void *sim, double *state)
{
    const mountain_car_continuous_sim *s = sim;
    state[0] = s->position;
    state[1] = s->velocity;
    state[2] = (double)s->is_f32;
}

/* The flag must be 0 or 1, and a float32 state must hold float32 values. */
static int mcc_set_state(void *sim, const double *state)
{
    if (!isfinite(state[0]) || !isfinite(state[1]))
        return -1;
    if (state[2] != 0.0 && state[2] != 1.0)
        return -1;
    int is_f32 = state[2] == 1.0;
    if (is_f32 && ((double)(float)state[0] != state[0] || (double)(float)state[1] != state[1]))
        return -1;
    mountain_car_continuous_sim *s = sim;
    s->position = state[0];
    s->velocity = state[1];
    s->is_f32 = is_f32;
    return 0;
}

static void mcc_observe(const void *sim, float *obs)
{
    mcc_observe_sim(sim, obs);
}

/* A restored sim (frl_vec_env_restore): what set_state would take. */
static int mcc_check_sim(const void *sim, const void *configured, char *why, size_t size)
{
    static const char *const names[] = {"position", "velocity", "is_f32"};
    return frl_sim_state_check(&frl_env_mountain_car_continuous, sim, configured, names,
                               frl_env_mountain_car_continuous.state_rule, why, size);
}

const frl_env_class frl_env_mountain_car_continuous = {
    .name = "MountainCarContinuous-v0",
    .obs_dim = MCC_OBS_DIM,
    .obs_low = mcc_obs_low,
    .obs_high = mcc_obs_high,
    .action_n = 0,
    .action_dim = 1,
    .action_low = mcc_action_low,
    .action_high = mcc_action_high,
    .state_dim = 3,
    .max_episode_steps = 999,
    .reset = mcc_reset,
    .step_range = mcc_step_range,
    .floor_steps = mcc_floor_steps,
    .get_state = mcc_get_state,
    .set_state = mcc_set_state,
    .state_rule = "is_f32 0 or 1, and float32 values when it is 1",
    .observe = mcc_observe,
    .check_sim = mcc_check_sim,
};
