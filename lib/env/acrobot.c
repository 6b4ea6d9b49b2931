/* Acrobot-v1, a port of Gymnasium 1.2.2's AcrobotEnv ("book" dynamics of
 * Sutton and Barto, no torque noise).
 *
 * The reset state is drawn in float64 and cast to float32 (Gymnasium calls
 * .astype(np.float32)); the first step appends the torque and so works in
 * float64 from then on, which a float32 value held in a double reproduces
 * exactly. One step is one RK4 step over [0, 0.2] in float64, then angles
 * are wrapped into [-pi, pi] by repeated subtraction and velocities clipped.
 * State for get/set_state: theta1, theta2, dtheta1, dtheta2. */

/* Bit-faithfulness needs every product rounded on its own: no fused
 * multiply-add. GCC does not contract in ISO C mode (-std=c11); tell clang. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include <math.h>
#include <string.h>

#include "env/step_range.h"

#define AC_PI 3.141592653589793
#define AC_OBS_DIM 6
#define AC_DT 0.2
#define AC_MAX_VEL_1 (4 * AC_PI)
#define AC_MAX_VEL_2 (9 * AC_PI)
/* Link masses, lengths and inertias are all 1, centres of mass at 0.5; the
 * products Gymnasium forms from them are exact, so they are folded here. */
#define AC_G 9.8
#define AC_PHI1_COEF ((1.0 * 0.5 + 1.0 * 1.0) * AC_G) /* (m1*lc1 + m2*l1) * g */
#define AC_PHI2_COEF (1.0 * 0.5 * AC_G)               /* m2 * lc2 * g */

typedef struct acrobot_sim {
    double s[4];
} acrobot_sim;

_Static_assert(sizeof(acrobot_sim) <= FRL_SIM_MAX_BYTES, "sim too large");

static const float ac_obs_high[AC_OBS_DIM] = {1.0f, 1.0f, 1.0f, 1.0f, (float)AC_MAX_VEL_1,
                                              (float)AC_MAX_VEL_2};
static const float ac_obs_low[AC_OBS_DIM] = {-1.0f, -1.0f, -1.0f, -1.0f, -(float)AC_MAX_VEL_1,
                                             -(float)AC_MAX_VEL_2};

/* Gymnasium writes x**2 on NumPy float64 scalars, which NumPy computes with
 * the C library's pow(x, 2.0). glibc's pow is not always the correctly
 * rounded x * x: it may round the other way when x * x lies within about
 * 0.01 ulp of a midpoint between two doubles (documented error <= 0.54 ulp),
 * and in a chaotic system that last bit matters. So we form x * x and its
 * exact rounding error (Dekker's product, no FMA) and call pow only when the
 * error is at least 0.46 ulp (about 8% of squares) or outside the range
 * where the error term is exact. The exponent is read from a volatile so the
 * compiler cannot fold pow(x, 2.0) back into x * x. */
static volatile double ac_pow_exponent = 2.0;

static inline double acrobot_square(double x)
{
    double p = x * x;
    uint64_t bits;
    memcpy(&bits, &p, sizeof(bits));
    uint64_t e = bits >> 52; /* p >= 0, so this is the biased exponent */
    if (e > 200 && e < 2000 && (bits & 0xfffffffffffffULL) != 0) {
        double c = 134217729.0 * x; /* Veltkamp split, 2^27 + 1 */
        double hi = c - (c - x);
        double lo = x - hi;
        double err = ((hi * hi - p) + 2 * (hi * lo)) + lo * lo;
        uint64_t ulp_bits = (e - 52) << 52;
        double ulp;
        memcpy(&ulp, &ulp_bits, sizeof(ulp));
        if (fabs(err) < 0.46 * ulp)
            return p;
    }
    return pow(x, ac_pow_exponent);
}

/* Time derivative of (theta1, theta2, dtheta1, dtheta2) under torque a, with
 * each sum and product in Gymnasium's order (float addition is not
 * associative and the state bar is 1e-9). */
static inline void acrobot_dsdt(const double y[4], double a, double dy[4])
{
    double theta1 = y[0], theta2 = y[1], dtheta1 = y[2], dtheta2 = y[3];
    double c2 = cos(theta2);
    double s2 = sin(theta2);
    double d1 = ((0.25 + (1.25 + c2)) + 1.0) + 1.0;
    double d2 = (0.25 + 0.5 * c2) + 1.0;
    double phi2 = AC_PHI2_COEF * cos(theta1 + theta2 - AC_PI / 2.0);
    double phi1 = -0.5 * acrobot_square(dtheta2) * s2 - dtheta2 * dtheta1 * s2 +
                  AC_PHI1_COEF * cos(theta1 - AC_PI / 2) + phi2;
    double ddtheta2 = (a + d2 / d1 * phi1 - 0.5 * acrobot_square(dtheta1) * s2 - phi2) /
                      (1.25 - acrobot_square(d2) / d1);
    double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
    dy[0] = dtheta1;
    dy[1] = dtheta2;
    dy[2] = ddtheta1;
    dy[3] = ddtheta2;
}

/* One classic RK4 step of length AC_DT; the torque is constant over it. */
static inline void acrobot_rk4(double y[4], double a)
{
    const double dt = AC_DT;
    const double dt2 = dt / 2.0;
    double k1[4], k2[4], k3[4], k4[4], t[4];
    acrobot_dsdt(y, a, k1);
    for (int i = 0; i < 4; i++)
        t[i] = y[i] + dt2 * k1[i];
    acrobot_dsdt(t, a, k2);
    for (int i = 0; i < 4; i++)
        t[i] = y[i] + dt2 * k2[i];
    acrobot_dsdt(t, a, k3);
    for (int i = 0; i < 4; i++)
        t[i] = y[i] + dt * k3[i];
    acrobot_dsdt(t, a, k4);
    for (int i = 0; i < 4; i++)
        y[i] = y[i] + dt / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
}

/* Gymnasium wraps by repeated subtraction of 2pi. One subtraction is exact,
 * but once an angle is more than a turn out each one may round, unlike fmod,
 * so we loop too. set_state keeps angles in [-pi, pi] and velocities
 * bounded, so one step moves an angle a bounded distance and the loops are
 * short; the isfinite guard only keeps a corrupt sim from hanging. */
static inline double acrobot_wrap(double x)
{
    const double diff = AC_PI - -AC_PI;
    if (!isfinite(x))
        return x;
    while (x > AC_PI)
        x = x - diff;
    while (x < -AC_PI)
        x = x + diff;
    return x;
}

static inline double acrobot_bound(double x, double m)
{
    return x < -m ? -m : (x > m ? m : x);
}

static inline void acrobot_observe_sim(const acrobot_sim *s, float *obs)
{
    obs[0] = (float)cos(s->s[0]);
    obs[1] = (float)sin(s->s[0]);
    obs[2] = (float)cos(s->s[1]);
    obs[3] = (float)sin(s->s[1]);
    obs[4] = (float)s->s[2];
    obs[5] = (float)s->s[3];
}

static inline void acrobot_step(void *sim, const void *action, float *obs, float *reward,
                                uint8_t *terminated)
{
    acrobot_sim *s = sim;
    double torque = (double)(*(const int32_t *)action - 1); /* -1, 0, +1 */
    acrobot_rk4(s->s, torque);
    s->s[0] = acrobot_wrap(s->s[0]);
    s->s[1] = acrobot_wrap(s->s[1]);
    s->s[2] = acrobot_bound(s->s[2], AC_MAX_VEL_1);
    s->s[3] = acrobot_bound(s->s[3], AC_MAX_VEL_2);
    uint8_t term = (uint8_t)(-cos(s->s[0]) - cos(s->s[1] + s->s[0]) > 1.0);
    *terminated = term;
    *reward = term ? 0.0f : -1.0f;
    acrobot_observe_sim(s, obs);
}

static inline void acrobot_reset(void *sim, frl_rng *rng, float *obs)
{
    acrobot_sim *s = sim;
    for (int i = 0; i < 4; i++)
        s->s[i] = (double)(float)frl_rng_uniform_range(rng, -0.1, 0.1);
    acrobot_observe_sim(s, obs);
}

static int32_t acrobot_step_range(const frl_builtin_batch *b, int32_t begin, int32_t end)
{
    return frl_step_range_impl(b, begin, end, AC_OBS_DIM, sizeof(int32_t), acrobot_step, acrobot_reset);
}

static void acrobot_floor_steps(unsigned char *sims, frl_rng *rngs, int32_t n,
                                const void *actions, float *obs, float *rewards)
{
    frl_floor_impl(sims, rngs, n, actions, obs, rewards, AC_OBS_DIM, sizeof(int32_t),
                   acrobot_step, acrobot_reset);
}

static void acrobot_get_state(const void *sim, double *state)
{
    const acrobot_sim *s = sim;
    for (int i = 0; i < 4; i++)
        state[i] = s->s[i];
}

/* Every state Gymnasium can reach has angles in [-pi, pi] and velocities
 * within their bounds; anything else is rejected as impossible. */
static int acrobot_set_state(void *sim, const double *state)
{
    for (int i = 0; i < 4; i++)
        if (!isfinite(state[i]))
            return -1;
    if (fabs(state[0]) > AC_PI || fabs(state[1]) > AC_PI || fabs(state[2]) > AC_MAX_VEL_1 ||
        fabs(state[3]) > AC_MAX_VEL_2)
        return -1;
    acrobot_sim *s = sim;
    for (int i = 0; i < 4; i++)
        s->s[i] = state[i];
    return 0;
}

static void acrobot_observe(const void *sim, float *obs)
{
    acrobot_observe_sim(sim, obs);
}

/* A restored sim (frl_vec_env_restore): what set_state would take. */
static int acrobot_check_sim(const void *sim, const void *configured, char *why, size_t size)
{
    static const char *const names[] = {"theta1", "theta2", "dtheta1", "dtheta2"};
    return frl_sim_state_check(&frl_env_acrobot, sim, configured, names,
                               frl_env_acrobot.state_rule, why, size);
}

const frl_env_class frl_env_acrobot = {
    .name = "Acrobot-v1",
    .obs_dim = AC_OBS_DIM,
    .obs_low = ac_obs_low,
    .obs_high = ac_obs_high,
    .action_n = 3,
    .action_dim = 1,
    .action_low = NULL,
    .action_high = NULL,
    .state_dim = 4,
    .max_episode_steps = 500,
    .reset = acrobot_reset,
    .step_range = acrobot_step_range,
    .floor_steps = acrobot_floor_steps,
    .get_state = acrobot_get_state,
    .set_state = acrobot_set_state,
    .state_rule = "angles in [-pi, pi], |dtheta1| <= 4 pi, |dtheta2| <= 9 pi",
    .observe = acrobot_observe,
    .check_sim = acrobot_check_sim,
};
