/* Gymnasium's balance and reach tasks: InvertedPendulum-v5, InvertedDoublePendulum-v5,
 * Reacher-v5 (gymnasium/envs/mujoco/NAME_v5.py, default arguments). */
#include <math.h>

#include "mujoco/task.h"

/* ---- InvertedPendulum-v5: obs (qpos, qvel); reward 1 while |hinge angle| <= 0.2 ---- */

static void ip_reset(const mjt_ctx *c, mjData *d, frl_rng *rng)
{
    mjt_add_uniform(d->qpos, c->m->qpos0, c->m->nq, 0.01, rng);
    mjt_add_uniform(d->qvel, NULL, c->m->nv, 0.01, rng);
}

static void ip_observe(const mjt_ctx *c, const mjData *d, float *obs)
{
    obs = mjt_put(obs, d->qpos, c->m->nq, 0);
    mjt_put(obs, d->qvel, c->m->nv, 0);
}

static double ip_reward(const mjt_ctx *c, const mjData *d, const float *action,
                        const double *before, uint8_t *terminated)
{
    (void)action;
    (void)before;
    *terminated = !mjt_state_finite(c->m, d) || fabs(d->qpos[1]) > 0.2;
    return *terminated ? 0.0 : 1.0;
}

const mjt_task mjt_inverted_pendulum = {
    .name = "InvertedPendulum-v5",
    .xml = "inverted_pendulum.xml",
    .frame_skip = 2,
    .max_episode_steps = 1000,
    .obs_dim = 4,
    .reset = ip_reset,
    .observe = ip_observe,
    .reward = ip_reward,
};

/* ---- InvertedDoublePendulum-v5: the tip (site 0) must stay above height 1 ---- */

static void idp_reset(const mjt_ctx *c, mjData *d, frl_rng *rng)
{
    mjt_add_uniform(d->qpos, c->m->qpos0, c->m->nq, 0.1, rng);
    mjt_add_normal(d->qvel, NULL, c->m->nv, 0.1, rng);
}

static void idp_observe(const mjt_ctx *c, const mjData *d, float *obs)
{
    (void)c;
    *obs++ = (float)d->qpos[0];
    for (int i = 1; i < 3; i++)
        *obs++ = (float)sin(d->qpos[i]);
    for (int i = 1; i < 3; i++)
        *obs++ = (float)cos(d->qpos[i]);
    obs = mjt_put(obs, d->qvel, 3, 10.0);
    mjt_put(obs, d->qfrc_constraint, 1, 10.0);
}

static double idp_reward(const mjt_ctx *c, const mjData *d, const float *action,
                         const double *before, uint8_t *terminated)
{
    (void)c;
    (void)action;
    (void)before;
    double x = d->site_xpos[0], y = d->site_xpos[2];
    *terminated = y <= 1.0;
    double v1 = d->qvel[1], v2 = d->qvel[2];
    double dist_penalty = 0.01 * (x * x) + (y - 2) * (y - 2);
    double vel_penalty = 0.001 * (v1 * v1) + 0.005 * (v2 * v2);
    double alive_bonus = *terminated ? 0.0 : 10.0;
    return alive_bonus - dist_penalty - vel_penalty;
}

const mjt_task mjt_inverted_double_pendulum = {
    .name = "InvertedDoublePendulum-v5",
    .xml = "inverted_double_pendulum.xml",
    .frame_skip = 5,
    .max_episode_steps = 1000,
    .obs_dim = 9,
    .reset = idp_reset,
    .observe = idp_observe,
    .reward = idp_reward,
};

/* ---- Reacher-v5: bring the fingertip (body ids[0]) to the target (ids[1]) ---- */

static void reacher_reset(const mjt_ctx *c, mjData *d, frl_rng *rng)
{
    const mjModel *m = c->m;
    mjt_add_uniform(d->qpos, m->qpos0, m->nq, 0.1, rng);
    double goal[2];
    do {
        goal[0] = frl_rng_uniform_range(rng, -0.2, 0.2);
        goal[1] = frl_rng_uniform_range(rng, -0.2, 0.2);
    } while (!(sqrt(goal[0] * goal[0] + goal[1] * goal[1]) < 0.2));
    d->qpos[m->nq - 2] = goal[0];
    d->qpos[m->nq - 1] = goal[1];
    mjt_add_uniform(d->qvel, NULL, m->nv, 0.005, rng);
    d->qvel[m->nv - 2] = 0.0;
    d->qvel[m->nv - 1] = 0.0;
}

/* fingertip - target, in world coordinates (get_body_com reads xpos). */
static void reacher_gap(const mjt_ctx *c, const mjData *d, double *v)
{
    for (int k = 0; k < 3; k++)
        v[k] = d->xpos[3 * c->ids[0] + k] - d->xpos[3 * c->ids[1] + k];
}

static void reacher_observe(const mjt_ctx *c, const mjData *d, float *obs)
{
    double v[3];
    reacher_gap(c, d, v);
    for (int i = 0; i < 2; i++)
        *obs++ = (float)cos(d->qpos[i]);
    for (int i = 0; i < 2; i++)
        *obs++ = (float)sin(d->qpos[i]);
    obs = mjt_put(obs, d->qpos + 2, c->m->nq - 2, 0);
    obs = mjt_put(obs, d->qvel, 2, 0);
    mjt_put(obs, v, 2, 0);
}

static double reacher_reward(const mjt_ctx *c, const mjData *d, const float *action,
                             const double *before, uint8_t *terminated)
{
    (void)before;
    double v[3];
    reacher_gap(c, d, v);
    *terminated = 0;
    double reward_dist = -sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    float reward_ctrl = -mjt_ctrl_cost(action, c->m->nu, 1.0f);
    return reward_dist + (double)reward_ctrl;
}

const mjt_task mjt_reacher = {
    .name = "Reacher-v5",
    .xml = "reacher.xml",
    .frame_skip = 2,
    .max_episode_steps = 50,
    .obs_dim = 10,
    .ids = {"fingertip", "target"},
    .reset = reacher_reset,
    .observe = reacher_observe,
    .reward = reacher_reward,
};
