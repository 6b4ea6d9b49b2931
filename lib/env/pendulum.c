/* Pendulum-v1, a port of Gymnasium 1.2.2's PendulumEnv.
 *
 * The state (theta, theta_dot) is float64, but the clipped torque u is a
 * NumPy float32 scalar and, under NumPy 2's promotion rules (NEP 50), a Python
 * float times a float32 stays float32. So 3.0 * u and 0.001 * u**2 are rounded
 * to float32 before they meet the float64 terms; we round them the same way.
 * The episode never terminates (only the 200-step time limit ends it).
 * State for get/set_state: theta, theta_dot. */

/* Bit-faithfulness needs every product rounded on its own: no fused
 * multiply-add. GCC does not contract in ISO C mode (-std=c11); tell clang. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include <math.h>

#include "env/step_range.h"

#define PD_PI 3.141592653589793
#define PD_OBS_DIM 3
#define PD_MAX_SPEED 8.0
#define PD_MAX_TORQUE 2.0f
#define PD_DT 0.05
/* 3 * g / (2 * l) with g = 10, l = 1, and 3 / (m * l**2) with m = 1. */
#define PD_GRAV_COEF 15.0
#define PD_TORQUE_COEF 3.0f

typedef struct pendulum_sim {
    double theta, theta_dot;
} pendulum_sim;

_Static_assert(sizeof(pendulum_sim) <= FRL_SIM_MAX_BYTES, "sim too large");

static const float pd_obs_high[PD_OBS_DIM] = {1.0f, 1.0f, (float)PD_MAX_SPEED};
static const float pd_obs_low[PD_OBS_DIM] = {-1.0f, -1.0f, -(float)PD_MAX_SPEED};
static const float pd_action_high[1] = {PD_MAX_TORQUE};
static const float pd_action_low[1] = {-PD_MAX_TORQUE};

/* ((x + pi) mod 2pi) - pi with Python's floored modulo: the remainder takes
 * the sign of the divisor, and a zero remainder is +0. */
static inline double pendulum_angle_normalize(double x)
{
    const double two_pi = 2 * PD_PI;
    double m = fmod(x + PD_PI, two_pi);
    if (m != 0.0) {
        if (m < 0.0)
            m += two_pi;
    } else {
        m = 0.0;
    }
    return m - PD_PI;
}

static inline double pendulum_clip(double x, double lo, double hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

static inline void pendulum_observe_sim(const pendulum_sim *s, float *obs)
{
    obs[0] = (float)cos(s->theta);
    obs[1] = (float)sin(s->theta);
    obs[2] = (float)s->theta_dot;
}

static inline void pendulum_step(void *sim, const void *action, float *obs, float *reward,
                                 uint8_t *terminated)
{
    pendulum_sim *s = sim;
    float u = *(const float *)action;
    u = u < -PD_MAX_TORQUE ? -PD_MAX_TORQUE : (u > PD_MAX_TORQUE ? PD_MAX_TORQUE : u);
    double th = s->theta;
    double thdot = s->theta_dot;
    double an = pendulum_angle_normalize(th);
    /* 0.001 * u**2 is a float32 product (NEP 50); NumPy squares a float32
     * scalar with powf, which can differ from u * u by one float32 ulp when
     * u * u is exactly halfway between two floats: a cost change of at most
     * about 5e-10, below the resolution of the float32 reward. */
    float torque_cost = (float)0.001 * (u * u);
    double costs = an * an + 0.1 * (thdot * thdot) + (double)torque_cost;
    /* 3.0 * u is also a float32 product, rounded before joining float64. */
    float torque_acc = PD_TORQUE_COEF * u;
    double newthdot = thdot + (PD_GRAV_COEF * sin(th) + (double)torque_acc) * PD_DT;
    newthdot = pendulum_clip(newthdot, -PD_MAX_SPEED, PD_MAX_SPEED);
    s->theta = th + newthdot * PD_DT;
    s->theta_dot = newthdot;
    *reward = (float)-costs;
    *terminated = 0;
    pendulum_observe_sim(s, obs);
}

static inline void pendulum_reset(void *sim, frl_rng *rng, float *obs)
{
    pendulum_sim *s = sim;
    s->theta = frl_rng_uniform_range(rng, -PD_PI, PD_PI);
    s->theta_dot = frl_rng_uniform_range(rng, -1.0, 1.0);
    pendulum_observe_sim(s, obs);
}

static int32_t pendulum_step_range(const frl_builtin_batch *b, int32_t begin, int32_t end)
{
    return frl_step_range_impl(b, begin, end, PD_OBS_DIM, sizeof(float), pendulum_step, pendulum_reset);
}

static void pendulum_floor_steps(unsigned char *sims, frl_rng *rngs, int32_t n,
                                 const void *actions, float *obs, float *rewards)
{
    frl_floor_impl(sims, rngs, n, actions, obs, rewards, PD_OBS_DIM, sizeof(float),
                   pendulum_step, pendulum_reset);
}

static void pendulum_get_state(const void *sim, double *state)
{
    const pendulum_sim *s = sim;
    state[0] = s->theta;
    state[1] = s->theta_dot;
}

static int pendulum_set_state(void *sim, const double *state)
{
    if (!isfinite(state[0]) || !isfinite(state[1]))
        return -1;
    pendulum_sim *s = sim;
    s->theta = state[0];
    s->theta_dot = state[1];
    return 0;
}

static void pendulum_observe(const void *sim, float *obs)
{
    pendulum_observe_sim(sim, obs);
}

/* A restored sim (frl_vec_env_restore): what set_state would take. */
static int pendulum_check_sim(const void *sim, const void *configured, char *why, size_t size)
{
    static const char *const names[] = {"theta", "theta_dot"};
    return frl_sim_state_check(&frl_env_pendulum, sim, configured, names,
                               "the finite values", why, size);
}

const frl_env_class frl_env_pendulum = {
    .name = "Pendulum-v1",
    .obs_dim = PD_OBS_DIM,
    .obs_low = pd_obs_low,
    .obs_high = pd_obs_high,
    .action_n = 0,
    .action_dim = 1,
    .action_low = pd_action_low,
    .action_high = pd_action_high,
    .state_dim = 2,
    .max_episode_steps = 200,
    .reset = pendulum_reset,
    .step_range = pendulum_step_range,
    .floor_steps = pendulum_floor_steps,
    .get_state = pendulum_get_state,
    .set_state = pendulum_set_state,
    .state_rule = "finite values",
    .observe = pendulum_observe,
    .check_sim = pendulum_check_sim,
};
