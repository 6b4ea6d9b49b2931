/* CartPole-v1, a port of Gymnasium 1.2.2's CartPoleEnv (Barto, Sutton and
 * Anderson, 1983) with its explicit Euler integrator.
 *
 * Everything is float64 as in Gymnasium; the observation is the float32 cast
 * of the new state. The reward is 1.0 on every step, the terminating one
 * included. State for get/set_state: x, x_dot, theta, theta_dot.
 *
 * CartPoleNoVel-v1 (sb3-contrib's partially observed benchmark) is the same
 * simulator observed through x and theta only: the two classes share the sim,
 * its dynamics and reset, and differ only in the observation they write. */

/* Bit-faithfulness needs every product rounded on its own: no fused
 * multiply-add. GCC does not contract in ISO C mode (-std=c11); tell clang. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include <math.h>

#include "env/step_range.h"

#define CP_PI 3.141592653589793
#define CP_OBS_DIM 4
#define CPNV_OBS_DIM 2

/* Constants are written as Gymnasium derives them so each one is the same
 * double (the compiler folds them with IEEE double rounding). */
#define CP_GRAVITY 9.8
#define CP_MASSPOLE 0.1
#define CP_TOTAL_MASS (CP_MASSPOLE + 1.0)
#define CP_LENGTH 0.5
#define CP_POLEMASS_LENGTH (CP_MASSPOLE * CP_LENGTH)
#define CP_FORCE_MAG 10.0
#define CP_TAU 0.02
#define CP_THETA_THRESHOLD (12 * 2 * CP_PI / 360)
#define CP_X_THRESHOLD 2.4

typedef struct cartpole_sim {
    double x, x_dot, theta, theta_dot;
} cartpole_sim;

_Static_assert(sizeof(cartpole_sim) <= FRL_SIM_MAX_BYTES, "sim too large");

static const float cp_obs_high[CP_OBS_DIM] = {
    (float)(CP_X_THRESHOLD * 2), INFINITY, (float)(CP_THETA_THRESHOLD * 2), INFINITY};
static const float cp_obs_low[CP_OBS_DIM] = {
    -(float)(CP_X_THRESHOLD * 2), -INFINITY, -(float)(CP_THETA_THRESHOLD * 2), -INFINITY};

/* NoVel keeps CartPole's bounds for the two values it observes. */
static const float cpnv_obs_high[CPNV_OBS_DIM] = {(float)(CP_X_THRESHOLD * 2),
                                                  (float)(CP_THETA_THRESHOLD * 2)};
static const float cpnv_obs_low[CPNV_OBS_DIM] = {-(float)(CP_X_THRESHOLD * 2),
                                                 -(float)(CP_THETA_THRESHOLD * 2)};

static inline void cartpole_observe_sim(const cartpole_sim *s, float *obs)
{
    obs[0] = (float)s->x;
    obs[1] = (float)s->x_dot;
    obs[2] = (float)s->theta;
    obs[3] = (float)s->theta_dot;
}

static inline void novel_observe_sim(const cartpole_sim *s, float *obs)
{
    obs[0] = (float)s->x;
    obs[1] = (float)s->theta;
}

/* One Euler step of the dynamics, without the observation. */
static inline void cartpole_advance(cartpole_sim *s, const void *action, float *reward,
                                    uint8_t *terminated)
{
    double force = *(const int32_t *)action == 1 ? CP_FORCE_MAG : -CP_FORCE_MAG;
    double costheta = cos(s->theta);
    double sintheta = sin(s->theta);
    /* Operation order follows Gymnasium's expressions term by term. */
    double temp = (force + CP_POLEMASS_LENGTH * (s->theta_dot * s->theta_dot) * sintheta) /
                  CP_TOTAL_MASS;
    double thetaacc = (CP_GRAVITY * sintheta - costheta * temp) /
                      (CP_LENGTH * (4.0 / 3.0 - CP_MASSPOLE * (costheta * costheta) / CP_TOTAL_MASS));
    double xacc = temp - CP_POLEMASS_LENGTH * thetaacc * costheta / CP_TOTAL_MASS;
    /* Explicit Euler: positions advance with the old velocities. */
    s->x = s->x + CP_TAU * s->x_dot;
    s->x_dot = s->x_dot + CP_TAU * xacc;
    s->theta = s->theta + CP_TAU * s->theta_dot;
    s->theta_dot = s->theta_dot + CP_TAU * thetaacc;
    *terminated = (uint8_t)(s->x < -CP_X_THRESHOLD || s->x > CP_X_THRESHOLD ||
                            s->theta < -CP_THETA_THRESHOLD || s->theta > CP_THETA_THRESHOLD);
    *reward = 1.0f;
}

static inline void cartpole_draw(cartpole_sim *s, frl_rng *rng)
{
    s->x = frl_rng_uniform_range(rng, -0.05, 0.05);
    s->x_dot = frl_rng_uniform_range(rng, -0.05, 0.05);
    s->theta = frl_rng_uniform_range(rng, -0.05, 0.05);
    s->theta_dot = frl_rng_uniform_range(rng, -0.05, 0.05);
}

static inline void cartpole_step(void *sim, const void *action, float *obs, float *reward,
                                 uint8_t *terminated)
{
    cartpole_advance(sim, action, reward, terminated);
    cartpole_observe_sim(sim, obs);
}

static inline void cartpole_reset(void *sim, frl_rng *rng, float *obs)
{
    cartpole_draw(sim, rng);
    cartpole_observe_sim(sim, obs);
}

static inline void novel_step(void *sim, const void *action, float *obs, float *reward,
                              uint8_t *terminated)
{
    cartpole_advance(sim, action, reward, terminated);
    novel_observe_sim(sim, obs);
}

static inline void novel_reset(void *sim, frl_rng *rng, float *obs)
{
    cartpole_draw(sim, rng);
    novel_observe_sim(sim, obs);
}

static int32_t cartpole_step_range(const frl_builtin_batch *b, int32_t begin, int32_t end)
{
    return frl_step_range_impl(b, begin, end, CP_OBS_DIM, sizeof(int32_t), cartpole_step, cartpole_reset);
}

static void cartpole_floor_steps(unsigned char *sims, frl_rng *rngs, int32_t n,
                                 const void *actions, float *obs, float *rewards)
{
    frl_floor_impl(sims, rngs, n, actions, obs, rewards, CP_OBS_DIM, sizeof(int32_t),
                   cartpole_step, cartpole_reset);
}

static int32_t novel_step_range(const frl_builtin_batch *b, int32_t begin, int32_t end)
{
    return frl_step_range_impl(b, begin, end, CPNV_OBS_DIM, sizeof(int32_t), novel_step,
                               novel_reset);
}

static void novel_floor_steps(unsigned char *sims, frl_rng *rngs, int32_t n,
                              const void *actions, float *obs, float *rewards)
{
    frl_floor_impl(sims, rngs, n, actions, obs, rewards, CPNV_OBS_DIM, sizeof(int32_t),
                   novel_step, novel_reset);
}

static void cartpole_get_state(const void *sim, double *state)
{
    const cartpole_sim *s = sim;
    state[0] = s->x;
    state[1] = s->x_dot;
    state[2] = s->theta;
    state[3] = s->theta_dot;
}

static int cartpole_set_state(void *sim, const double *state)
{
    for (int i = 0; i < 4; i++)
        if (!isfinite(state[i]))
            return -1;
    cartpole_sim *s = sim;
    s->x = state[0];
    s->x_dot = state[1];
    s->theta = state[2];
    s->theta_dot = state[3];
    return 0;
}

static void cartpole_observe(const void *sim, float *obs)
{
    cartpole_observe_sim(sim, obs);
}

static void novel_observe(const void *sim, float *obs)
{
    novel_observe_sim(sim, obs);
}

/* A restored sim (frl_vec_env_restore): what set_state would take. */
static int cartpole_check_sim(const void *sim, const void *configured, char *why, size_t size)
{
    static const char *const names[] = {"x", "x_dot", "theta", "theta_dot"};
    return frl_sim_state_check(&frl_env_cartpole, sim, configured, names,
                               "the finite values", why, size);
}

const frl_env_class frl_env_cartpole = {
    .name = "CartPole-v1",
    .obs_dim = CP_OBS_DIM,
    .obs_low = cp_obs_low,
    .obs_high = cp_obs_high,
    .action_n = 2,
    .action_dim = 1,
    .action_low = NULL,
    .action_high = NULL,
    .state_dim = 4,
    .max_episode_steps = 500,
    .reset = cartpole_reset,
    .step_range = cartpole_step_range,
    .floor_steps = cartpole_floor_steps,
    .get_state = cartpole_get_state,
    .set_state = cartpole_set_state,
    .state_rule = "finite values",
    .observe = cartpole_observe,
    .check_sim = cartpole_check_sim,
};

/* The state is the full simulator state, so a checkpoint restores the hidden
 * velocities too. */
const frl_env_class frl_env_cartpole_novel = {
    .name = "CartPoleNoVel-v1",
    .obs_dim = CPNV_OBS_DIM,
    .obs_low = cpnv_obs_low,
    .obs_high = cpnv_obs_high,
    .action_n = 2,
    .action_dim = 1,
    .action_low = NULL,
    .action_high = NULL,
    .state_dim = 4,
    .max_episode_steps = 500,
    .reset = novel_reset,
    .step_range = novel_step_range,
    .floor_steps = novel_floor_steps,
    .get_state = cartpole_get_state,
    .set_state = cartpole_set_state,
    .state_rule = "finite values",
    .observe = novel_observe,
    .check_sim = cartpole_check_sim,
};
