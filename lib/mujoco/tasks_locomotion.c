/* Gymnasium's locomotion tasks: Hopper-v5, HalfCheetah-v5, Walker2d-v5, Ant-v5
 * (gymnasium/envs/mujoco/NAME_v5.py, default arguments: current x (and y) positions left
 * out of the observation, termination when unhealthy). Forward velocity is the change
 * of x over the env step's dt, measured at the root joint (qpos[0]) for the planar
 * walkers and at the torso body's position (ids[0]) for the ant. */
#include <math.h>

#include "mujoco/task.h"

/* Uniform noise on qpos and qvel (Hopper, Walker2d). */
static void uniform_reset(const mjt_ctx *c, mjData *d, frl_rng *rng, double scale)
{
    mjt_add_uniform(d->qpos, c->m->qpos0, c->m->nq, scale, rng);
    mjt_add_uniform(d->qvel, NULL, c->m->nv, scale, rng);
}

/* Uniform noise on qpos, Gaussian on qvel (HalfCheetah, Ant). */
static void mixed_reset(const mjt_ctx *c, mjData *d, frl_rng *rng, double scale)
{
    mjt_add_uniform(d->qpos, c->m->qpos0, c->m->nq, scale, rng);
    mjt_add_normal(d->qvel, NULL, c->m->nv, scale, rng);
}

static void track_root_x(const mjt_ctx *c, const mjData *d, double *before)
{
    (void)c;
    before[0] = d->qpos[0];
}

/* qpos without the root x, then qvel clipped to +-clip_qvel (0: not clipped). */
static void planar_observe(const mjt_ctx *c, const mjData *d, float *obs, double clip_qvel)
{
    obs = mjt_put(obs, d->qpos + 1, c->m->nq - 1, 0);
    mjt_put(obs, d->qvel, c->m->nv, clip_qvel);
}

/* forward + healthy - ctrl, as Gymnasium groups it. */
static double walker_reward(const mjt_ctx *c, const mjData *d, const float *action,
                            const double *before, int healthy, float ctrl_weight)
{
    double x_velocity = (d->qpos[0] - before[0]) / c->dt;
    double rewards = x_velocity + (healthy ? 1.0 : 0.0);
    float ctrl_cost = mjt_ctrl_cost(action, c->m->nu, ctrl_weight);
    return rewards - (double)ctrl_cost;
}

/* ---- Hopper-v5 ---- */

static void hopper_reset(const mjt_ctx *c, mjData *d, frl_rng *rng)
{
    uniform_reset(c, d, rng, 0.005);
}

static void hopper_observe(const mjt_ctx *c, const mjData *d, float *obs)
{
    planar_observe(c, d, obs, 10.0);
}

/* Every state value after the root's x and z in (-100, 100), z > 0.7, |angle| < 0.2. */
static int hopper_healthy(const mjt_ctx *c, const mjData *d)
{
    int ok = 1;
    for (int i = 2; i < c->m->nq; i++)
        ok &= -100.0 < d->qpos[i] && d->qpos[i] < 100.0;
    for (int i = 0; i < c->m->nv; i++)
        ok &= -100.0 < d->qvel[i] && d->qvel[i] < 100.0;
    double z = d->qpos[1], angle = d->qpos[2];
    return ok && 0.7 < z && z < INFINITY && -0.2 < angle && angle < 0.2;
}

static double hopper_reward(const mjt_ctx *c, const mjData *d, const float *action,
                            const double *before, uint8_t *terminated)
{
    int healthy = hopper_healthy(c, d);
    *terminated = !healthy;
    return walker_reward(c, d, action, before, healthy, 0.001f);
}

const mjt_task mjt_hopper = {
    .name = "Hopper-v5",
    .xml = "hopper.xml",
    .frame_skip = 4,
    .max_episode_steps = 1000,
    .obs_dim = 11,
    .reset = hopper_reset,
    .track = track_root_x,
    .observe = hopper_observe,
    .reward = hopper_reward,
};

/* ---- HalfCheetah-v5: never terminates ---- */

static void cheetah_reset(const mjt_ctx *c, mjData *d, frl_rng *rng)
{
    mixed_reset(c, d, rng, 0.1);
}

static void cheetah_observe(const mjt_ctx *c, const mjData *d, float *obs)
{
    planar_observe(c, d, obs, 0);
}

static double cheetah_reward(const mjt_ctx *c, const mjData *d, const float *action,
                             const double *before, uint8_t *terminated)
{
    *terminated = 0;
    double forward = (d->qpos[0] - before[0]) / c->dt;
    return forward - (double)mjt_ctrl_cost(action, c->m->nu, 0.1f);
}

const mjt_task mjt_half_cheetah = {
    .name = "HalfCheetah-v5",
    .xml = "half_cheetah.xml",
    .frame_skip = 5,
    .max_episode_steps = 1000,
    .obs_dim = 17,
    .reset = cheetah_reset,
    .track = track_root_x,
    .observe = cheetah_observe,
    .reward = cheetah_reward,
};

/* ---- Walker2d-v5 (its own walker2d_v5.xml: both feet with the same friction) ---- */

static void walker_reset(const mjt_ctx *c, mjData *d, frl_rng *rng)
{
    uniform_reset(c, d, rng, 0.005);
}

static void walker_observe(const mjt_ctx *c, const mjData *d, float *obs)
{
    planar_observe(c, d, obs, 10.0);
}

static double walker2d_reward(const mjt_ctx *c, const mjData *d, const float *action,
                              const double *before, uint8_t *terminated)
{
    double z = d->qpos[1], angle = d->qpos[2];
    int healthy = 0.8 < z && z < 2.0 && -1.0 < angle && angle < 1.0;
    *terminated = !healthy;
    return walker_reward(c, d, action, before, healthy, 0.001f);
}

const mjt_task mjt_walker2d = {
    .name = "Walker2d-v5",
    .xml = "walker2d_v5.xml",
    .frame_skip = 4,
    .max_episode_steps = 1000,
    .obs_dim = 17,
    .reset = walker_reset,
    .track = track_root_x,
    .observe = walker_observe,
    .reward = walker2d_reward,
};

/* ---- Ant-v5: observation with the bodies' external contact forces ---- */

enum { ANT_FORCE_VALUES = 6 }; /* cfrc_ext per body: torque then force */

static void ant_reset(const mjt_ctx *c, mjData *d, frl_rng *rng)
{
    mixed_reset(c, d, rng, 0.1);
}

static void ant_track(const mjt_ctx *c, const mjData *d, double *before)
{
    before[0] = d->xpos[3 * c->ids[0]];
    before[1] = d->xpos[3 * c->ids[0] + 1];
}

/* qpos without x and y, qvel, then cfrc_ext of every body but the world, clipped. */
static void ant_observe(const mjt_ctx *c, const mjData *d, float *obs)
{
    const mjModel *m = c->m;
    obs = mjt_put(obs, d->qpos + 2, m->nq - 2, 0);
    obs = mjt_put(obs, d->qvel, m->nv, 0);
    mjt_put(obs, d->cfrc_ext + ANT_FORCE_VALUES, (m->nbody - 1) * ANT_FORCE_VALUES, 1.0);
}

/* 0.0005 * the sum of squares of every body's clipped contact forces, world included. */
static double ant_contact_cost(const mjModel *m, const mjData *d)
{
    double sq[ANT_FORCE_VALUES * 16];
    int n = m->nbody * ANT_FORCE_VALUES;
    n = n < (int)(sizeof sq / sizeof sq[0]) ? n : (int)(sizeof sq / sizeof sq[0]);
    for (int k = 0; k < n; k++) {
        double f = mjt_clip(d->cfrc_ext[k], -1.0, 1.0);
        sq[k] = f * f;
    }
    return 0.0005 * mjt_numpy_sum(sq, n);
}

static double ant_reward(const mjt_ctx *c, const mjData *d, const float *action,
                         const double *before, uint8_t *terminated)
{
    const mjModel *m = c->m;
    int healthy = mjt_state_finite(m, d) && 0.2 <= d->qpos[2] && d->qpos[2] <= 1.0;
    *terminated = !healthy;
    double x_velocity = (d->xpos[3 * c->ids[0]] - before[0]) / c->dt;
    double rewards = x_velocity + (healthy ? 1.0 : 0.0);
    float ctrl_cost = mjt_ctrl_cost(action, m->nu, 0.5f);
    double costs = (double)ctrl_cost + ant_contact_cost(m, d);
    return rewards - costs;
}

const mjt_task mjt_ant = {
    .name = "Ant-v5",
    .xml = "ant.xml",
    .frame_skip = 5,
    .max_episode_steps = 1000,
    .obs_dim = 105,
    .ids = {"torso"},
    .post_constraint = 1,
    .reset = ant_reset,
    .track = ant_track,
    .carried = 2,
    .observe = ant_observe,
    .reward = ant_reward,
};
