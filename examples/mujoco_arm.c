/* mujoco_arm: a two-link arm of our own, described in MJCF below, learns with PPO to put
 * its fingertip on a target placed at random each episode. The host owns the model's
 * meaning through frl_vec_env_create_mujoco's callbacks (observation, reward, the
 * target's placement); the library compiles the model once, gives each env its own
 * mjData and steps the envs on its threads. The target sits on two unactuated slide
 * joints, so it is part of qpos: MuJoCo's state, checkpoints included, holds it.
 *
 * Prints the greedy policy's mean return and mean final distance to the target before
 * and after training, and exits non-zero if a call fails or, with 100K steps or more,
 * the trained arm does not end nearer the target than the untrained one. Exits 77 (skip) without the MuJoCo
 * plugin. --steps N sets the training budget (default 300,000: about 5 s on 2 cores,
 * which ends 3 cm from the target on average, from 26 cm untrained).
 *
 * Build (with MuJoCo's headers, of the version `fastrl info` names):
 *   cc -std=c11 mujoco_arm.c -I<mujoco>/include $(pkg-config --cflags --libs fastrl) -lm */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mujoco/mujoco.h>

#include "fastrl.h"

enum { ENVS = 4, OBS = 10, TIP_SITE = 0, TARGET_BODY = 3, EPISODE = 50 };

/* No gravity and no contacts: a planar arm on a table, 0.1 m links, torque motors. */
static const char arm_xml[] =
    "<mujoco model=\"arm\">"
    "  <option timestep=\"0.01\" gravity=\"0 0 0\"/>"
    "  <default><joint damping=\"0.01\" armature=\"0.0005\"/>"
    "    <geom contype=\"0\" conaffinity=\"0\" density=\"500\"/></default>"
    "  <worldbody>"
    "    <body name=\"upper\">"
    "      <joint name=\"shoulder\" type=\"hinge\" axis=\"0 0 1\"/>"
    "      <geom type=\"capsule\" fromto=\"0 0 0 0.1 0 0\" size=\"0.01\"/>"
    "      <body name=\"fore\" pos=\"0.1 0 0\">"
    "        <joint name=\"elbow\" type=\"hinge\" axis=\"0 0 1\" limited=\"true\" range=\"-3 3\"/>"
    "        <geom type=\"capsule\" fromto=\"0 0 0 0.1 0 0\" size=\"0.01\"/>"
    "        <site name=\"tip\" pos=\"0.11 0 0\" size=\"0.005\"/>"
    "      </body>"
    "    </body>"
    "    <body name=\"target\">"
    "      <joint name=\"tx\" type=\"slide\" axis=\"1 0 0\" damping=\"0\" armature=\"0\"/>"
    "      <joint name=\"ty\" type=\"slide\" axis=\"0 1 0\" damping=\"0\" armature=\"0\"/>"
    "      <geom type=\"sphere\" size=\"0.01\"/>"
    "    </body>"
    "  </worldbody>"
    "  <actuator>"
    "    <motor joint=\"shoulder\" ctrllimited=\"true\" ctrlrange=\"-1 1\" gear=\"0.05\"/>"
    "    <motor joint=\"elbow\" ctrllimited=\"true\" ctrlrange=\"-1 1\" gear=\"0.05\"/>"
    "  </actuator>"
    "</mujoco>";

/* The last distance each env's reward saw: after an evaluation, that of its final
 * step. Each env writes only its own entry, so no lock is needed. */
typedef struct arm {
    double final_distance[ENVS];
} arm;

static void tip_minus_target(const mjData *d, double *v)
{
    for (int k = 0; k < 2; k++)
        v[k] = d->site_xpos[3 * TIP_SITE + k] - d->xpos[3 * TARGET_BODY + k];
}

static int observe(void *user, int32_t env, const void *model, const void *data, float *obs)
{
    const mjData *d = data;
    double v[2];
    (void)user;
    (void)env;
    (void)model;
    tip_minus_target(d, v);
    for (int j = 0; j < 2; j++) {
        obs[j] = (float)cos(d->qpos[j]);
        obs[2 + j] = (float)sin(d->qpos[j]);
        obs[4 + j] = (float)d->qpos[2 + j]; /* the target */
        obs[6 + j] = (float)d->qvel[j];
        obs[8 + j] = (float)v[j];
    }
    return 0;
}

/* Distance to the target, plus a small cost for effort. */
static int reward(void *user, int32_t env, const void *model, const void *data,
                  const float *action, float *r, uint8_t *terminated)
{
    arm *a = user;
    double v[2];
    (void)model;
    tip_minus_target(data, v);
    double dist = sqrt(v[0] * v[0] + v[1] * v[1]);
    *r = (float)(-dist - 0.01 * (action[0] * action[0] + action[1] * action[1]));
    *terminated = 0;
    if (env < ENVS)
        a->final_distance[env] = dist;
    return 0;
}

/* splitmix64, for the target's placement from the episode's seed. */
static double uniform(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

/* The arm near straight out, the target anywhere it can reach (0.05 to 0.19 m away). */
static int reset(void *user, int32_t env, const void *model, void *data, uint64_t seed)
{
    mjData *d = data;
    (void)user;
    (void)env;
    (void)model;
    d->qpos[0] = 0.2 * uniform(&seed) - 0.1;
    d->qpos[1] = 0.2 * uniform(&seed) - 0.1;
    double r = 0.05 + 0.14 * sqrt(uniform(&seed)), angle = 6.283185307179586 * uniform(&seed);
    d->qpos[2] = r * cos(angle);
    d->qpos[3] = r * sin(angle);
    return 0;
}

static int fail(const char *what)
{
    fprintf(stderr, "mujoco_arm: %s: %s\n", what, frl_last_error());
    return 1;
}

/* The greedy policy over 40 episodes: its mean return and the mean final distance. */
static int evaluate(frl_policy *p, frl_vec_env *v, arm *a, double *ret, double *dist)
{
    frl_eval_args ea;
    frl_eval_args_init(&ea);
    ea.episodes = 40;
    ea.seed = 2024;
    if (frl_policy_evaluate(p, v, &ea, ret) != FRL_OK)
        return -1;
    *dist = 0;
    for (int i = 0; i < ENVS; i++)
        *dist += a->final_distance[i] / ENVS;
    return 0;
}

int main(int argc, char **argv)
{
    long long steps = 300000;
    char *end = NULL;
    if (argc == 3 && strcmp(argv[1], "--steps") == 0)
        steps = strtoll(argv[2], &end, 10);
    /* Read whole: "abc" was 0 steps, "too few to check", and exit 0. */
    if ((argc != 1 && !end) || (end && *end) || steps < 1) {
        fprintf(stderr, "usage: mujoco_arm [--steps N (N >= 1)]\n");
        return 2;
    }
    if (!frl_mujoco_version()) {
        printf("mujoco_arm: SKIP: no MuJoCo plugin (%s)\n", frl_last_error());
        return 77;
    }
    frl_config *cfg;
    frl_runtime *rt;
    if (frl_config_create(&cfg, NULL) != FRL_OK ||
        frl_config_parse(cfg, "runtime.seed=3 env.frame_skip=2 env.max_episode_steps=50 "
                              "train.rollout=512 train.epochs=10 train.minibatches=32 "
                              "train.lr=3e-4 train.ent_coef=0 policy.obs_norm=true "
                              "train.reward_norm=true") != FRL_OK ||
        frl_runtime_create(&rt, cfg, NULL, NULL) != FRL_OK)
        return fail("runtime");
    arm a;
    memset(&a, 0, sizeof a);
    frl_mujoco_callbacks cb;
    frl_mujoco_callbacks_init(&cb);
    cb.observe = observe;
    cb.reward = reward;
    cb.reset = reset;
    frl_vec_env *train_env, *eval_env;
    frl_trainer *t;
    if (frl_vec_env_create_mujoco(&train_env, rt, arm_xml, &cb, &a, OBS, ENVS, cfg) != FRL_OK ||
        frl_vec_env_create_mujoco(&eval_env, rt, arm_xml, &cb, &a, OBS, ENVS, cfg) != FRL_OK)
        return fail("the arm");
    if (frl_trainer_create_vec(&t, rt, train_env, cfg) != FRL_OK)
        return fail("trainer");
    double ret0, dist0, ret1, dist1;
    if (evaluate(frl_trainer_policy(t), eval_env, &a, &ret0, &dist0) != 0)
        return fail("evaluate");
    printf("MuJoCo %s, %d envs\nbefore: greedy mean return %7.2f, final distance %.3f m\n",
           frl_mujoco_version(), ENVS, ret0, dist0);
    if (frl_trainer_train(t, steps) != FRL_OK)
        return fail("train");
    if (evaluate(frl_trainer_policy(t), eval_env, &a, &ret1, &dist1) != 0)
        return fail("evaluate");
    const frl_metrics *m = frl_trainer_metrics(t);
    printf("after %lld steps (%.1f s): greedy mean return %7.2f, final distance %.3f m\n",
           (long long)m->env_steps, m->seconds, ret1, dist1);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(eval_env);
    frl_vec_env_destroy(train_env);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
    if (steps < 100000) { /* the sanitizer builds' short run exercises the calls only */
        printf("(%lld steps are too few to expect learning: not checked)\n", steps);
        return 0;
    }
    if (!(dist1 < dist0)) {
        fprintf(stderr, "mujoco_arm: the trained arm ends no nearer the target\n");
        return 1;
    }
    return 0;
}
