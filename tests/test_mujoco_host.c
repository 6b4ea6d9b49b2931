/* A host's own MuJoCo model (frl_vec_env_create_mujoco): callbacks see the env's index,
 * model and data; frame skip; reset callbacks; domain randomisation within its ranges,
 * of named bodies, geoms and joints;
 * MuJoCo's messages for models it cannot load; bad arguments; failing callbacks;
 * checkpoints of a host model's run.
 *
 * Built against the MuJoCo headers the plugin uses (FRL_TEST_MUJOCO_H); without them, or
 * without the plugin, it prints why and exits 77 (SKIP). */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "env/vec_env.h"
#include "fastrl.h"
#include "test_log_capture.h"
#include "test_util.h"

#define EXIT_SKIP 77

#if FRL_TEST_MUJOCO_H
#include <mujoco/mujoco.h>

/* A box on a damped slider, pushed by one motor. */
static const char slider_xml[] =
    "<mujoco><option timestep=\"0.01\"/><worldbody>"
    "<geom name=\"floor\" type=\"plane\" size=\"5 5 0.1\"/>"
    "<body name=\"cart\" pos=\"0 0 0.2\"><joint name=\"x\" type=\"slide\" axis=\"1 0 0\" "
    "damping=\"0.5\"/><geom name=\"box\" type=\"box\" size=\"0.1 0.1 0.1\" mass=\"2\"/>"
    "</body></worldbody><actuator><motor joint=\"x\" ctrlrange=\"-1 1\" ctrllimited=\"true\" "
    "gear=\"5\"/></actuator></mujoco>";

/* The same box sunk 1 mm into the floor, so that every state has contacts. */
static const char resting_xml[] =
    "<mujoco><option timestep=\"0.01\"/><worldbody>"
    "<geom name=\"floor\" type=\"plane\" size=\"5 5 0.1\"/>"
    "<body name=\"cart\" pos=\"0 0 0.099\"><joint name=\"x\" type=\"slide\" axis=\"1 0 0\" "
    "damping=\"0.5\"/><geom name=\"box\" type=\"box\" size=\"0.1 0.1 0.1\" mass=\"2\"/>"
    "</body></worldbody><actuator><motor joint=\"x\" ctrlrange=\"-1 1\" ctrllimited=\"true\" "
    "gear=\"5\"/></actuator></mujoco>";

/* The box and a target it is rewarded for staying near: a mocap body that a host's reset
 * places, a scale in userdata and a push in xfrc_applied, none of them qpos or qvel. */
static const char target_xml[] =
    "<mujoco><option timestep=\"0.01\"/><size nuserdata=\"1\"/><worldbody>"
    "<geom name=\"floor\" type=\"plane\" size=\"5 5 0.1\"/>"
    "<body name=\"target\" mocap=\"true\" pos=\"0 0 0.5\"><geom type=\"sphere\" "
    "size=\"0.05\" contype=\"0\" conaffinity=\"0\"/></body>"
    "<body name=\"cart\" pos=\"0 0 0.2\"><joint name=\"x\" type=\"slide\" axis=\"1 0 0\" "
    "damping=\"0.5\"/><geom name=\"box\" type=\"box\" size=\"0.1 0.1 0.1\" mass=\"2\"/>"
    "</body></worldbody><actuator><motor joint=\"x\" ctrlrange=\"-1 1\" ctrllimited=\"true\" "
    "gear=\"5\"/></actuator></mujoco>";

enum { MAX_ENVS = 8 };

typedef struct host {
    pthread_mutex_t lock;
    double mass[MAX_ENVS], damping[MAX_ENVS], friction[MAX_ENVS];
    int max_index;
    int fail_observe;      /* observe returns this when nonzero */
    int fail_reward;       /* reward returns this when nonzero */
    int fail_reset;        /* reset returns this when nonzero */
    int nan_reward;
    int set_qpos;          /* reset callback puts qpos[0] = seed-derived value */
    int target;            /* target_xml: reset places the target, reward reads it */
} host;

static int observe(void *user, int32_t env, const void *model, const void *data, float *obs)
{
    host *h = user;
    const mjData *d = data;
    (void)model;
    if (h->fail_observe)
        return h->fail_observe;
    obs[0] = (float)d->qpos[0];
    obs[1] = (float)d->qvel[0];
    pthread_mutex_lock(&h->lock);
    h->max_index = env > h->max_index ? env : h->max_index;
    pthread_mutex_unlock(&h->lock);
    return 0;
}

static int reward(void *user, int32_t env, const void *model, const void *data,
                  const float *action, float *r, uint8_t *terminated)
{
    host *h = user;
    const mjModel *m = model;
    const mjData *d = data;
    (void)action;
    if (h->fail_reward)
        return h->fail_reward;
    *r = h->nan_reward ? NAN : (float)d->qpos[0];
    *terminated = 0;
    if (h->target) {
        *r = (float)(-fabs(d->qpos[0] - d->mocap_pos[0]) * d->userdata[0]);
        return 0;
    }
    if (env < MAX_ENVS) { /* what this env's model holds this episode */
        h->mass[env] = m->body_mass[1];
        h->damping[env] = m->dof_damping[0];
        h->friction[env] = m->geom_friction[3 * 1];
    }
    return 0;
}

static int reset(void *user, int32_t env, const void *model, void *data, uint64_t seed)
{
    host *h = user;
    mjData *d = data;
    (void)model;
    (void)env;
    if (h->fail_reset)
        return h->fail_reset;
    if (h->set_qpos)
        d->qpos[0] = (double)(seed % 1000) / 1000.0;
    if (h->target) {
        d->mocap_pos[0] = (double)(seed >> 8 & 1023) / 512.0 - 1.0;
        d->userdata[0] = 1.0 + (double)(seed >> 20 & 3);
        d->xfrc_applied[6 * 2] = ((double)(seed >> 24 & 7) - 3.5) * 0.4; /* the cart, x */
    }
    return 0;
}

static frl_mujoco_callbacks callbacks(int with_reset)
{
    frl_mujoco_callbacks cb;
    frl_mujoco_callbacks_init(&cb);
    cb.observe = observe;
    cb.reward = reward;
    cb.reset = with_reset ? reset : NULL;
    return cb;
}

static frl_vec_env *make(frl_runtime *rt, host *h, int n, const char *settings)
{
    frl_mujoco_callbacks cb = callbacks(1);
    frl_config *cfg = frl_test_settings(settings ? settings : "");
    frl_vec_env *v = NULL;
    frl_status st = frl_vec_env_create_mujoco(&v, rt, h->target ? target_xml : slider_xml, &cb,
                                              h, 2, n, cfg);
    ck_assert_msg(st == FRL_OK, "%s", frl_last_error());
    frl_config_destroy(cfg);
    return v;
}

static void push(frl_vec_env *v, float a, int steps)
{
    for (int t = 0; t < steps; t++) {
        float *act = frl_vec_env_actions(v);
        for (int i = 0; i < frl_vec_env_num_envs(v); i++)
            act[i] = a;
        ck_assert_msg(frl_vec_env_step(v) == FRL_OK, "%s", frl_vec_env_last_error(v));
    }
}

START_TEST(test_slider_moves)
{
    host h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = frl_test_runtime(2);
    frl_vec_env *v = make(rt, &h, 4, NULL);
    ck_assert(frl_space_low(frl_vec_env_action_space(v))[0] == -1.0f);
    ck_assert(isinf(frl_space_high(frl_vec_env_observation_space(v))[0]));
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    push(v, 1.0f, 20);
    for (int i = 0; i < 4; i++) {
        ck_assert(frl_vec_env_observations(v)[2 * i] > 0.01f);    /* moved right */
        ck_assert(frl_vec_env_observations(v)[2 * i + 1] > 0.0f);
        ck_assert(frl_vec_env_rewards(v)[i] == frl_vec_env_observations(v)[2 * i]);
    }
    ck_assert_int_eq(h.max_index, 3);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* env.frame_skip: the simulated time per env step (time is the state's first value). */
START_TEST(test_frame_skip)
{
    host h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = frl_test_runtime(1);
    for (int skip = 1; skip <= 4; skip *= 2) {
        char text[64];
        snprintf(text, sizeof text, "env.frame_skip=%d", skip);
        frl_vec_env *v = make(rt, &h, 1, skip == 1 ? "" : text);
        ck_assert_int_eq(frl_vec_env_reset(v, 3), FRL_OK);
        push(v, 0.5f, 3);
        double s[64];
        char err[FRL_ERRMSG_SIZE];
        ck_assert_int_eq(frl_vec_env_get_state_at(v, 0, s, v->state_dim + 1, err), FRL_OK);
        ck_assert_msg(fabs(s[0] - 0.03 * skip) < 1e-12, "skip %d: time %g", skip, s[0]);
        ck_assert(s[v->state_dim] == 3.0); /* elapsed steps */
        frl_vec_env_destroy(v);
    }
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(test_reset_callback)
{
    host h = {.lock = PTHREAD_MUTEX_INITIALIZER, .set_qpos = 1};
    frl_runtime *rt = frl_test_runtime(1);
    frl_vec_env *v = make(rt, &h, 4, NULL);
    ck_assert_int_eq(frl_vec_env_reset(v, 9), FRL_OK);
    const float *o = frl_vec_env_observations(v);
    int differ = 0;
    for (int i = 0; i < 4; i++) {
        ck_assert(o[2 * i] >= 0.0f && o[2 * i] < 1.0f);
        differ += i > 0 && o[2 * i] != o[0];
    }
    ck_assert_int_gt(differ, 0); /* each env its own seed */
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* Each episode's factors lie in [1 - r, 1 + r] and differ between envs; r = 0 leaves
 * the model as written. */
START_TEST(test_randomisation)
{
    host h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = frl_test_runtime(2);
    frl_vec_env *v = make(rt, &h, MAX_ENVS, "env.randomize_mass=0.5 env.randomize_damping=0.3 "
                                            "env.randomize_friction=0.2");
    double seen_mass[2][MAX_ENVS];
    for (int episode = 0; episode < 2; episode++) {
        ck_assert_int_eq(frl_vec_env_reset(v, 5 + (uint64_t)episode), FRL_OK);
        push(v, 0.3f, 1);
        int distinct = 0;
        for (int i = 0; i < MAX_ENVS; i++) {
            ck_assert(h.mass[i] >= 2.0 * 0.5 && h.mass[i] <= 2.0 * 1.5);
            ck_assert(h.damping[i] >= 0.5 * 0.7 && h.damping[i] <= 0.5 * 1.3);
            ck_assert(h.friction[i] >= 1.0 * 0.8 && h.friction[i] <= 1.0 * 1.2);
            distinct += i > 0 && h.mass[i] != h.mass[0];
            seen_mass[episode][i] = h.mass[i];
        }
        ck_assert_int_eq(distinct, MAX_ENVS - 1);
    }
    ck_assert(seen_mass[0][0] != seen_mass[1][0]); /* new factors each episode */
    frl_vec_env_destroy(v);
    v = make(rt, &h, 2, NULL);
    ck_assert_int_eq(frl_vec_env_reset(v, 5), FRL_OK);
    push(v, 0.3f, 1);
    ck_assert(h.mass[0] == 2.0 && h.mass[1] == 2.0 && h.damping[0] == 0.5);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* Two damped sliders, a and b, each pushed by its own motor. */
static const char pair_xml[] =
    "<mujoco><option timestep=\"0.01\"/><worldbody>"
    "<geom name=\"floor\" type=\"plane\" size=\"5 5 0.1\"/>"
    "<body name=\"a\" pos=\"0 0 0.2\"><joint name=\"ja\" type=\"slide\" axis=\"1 0 0\" "
    "damping=\"0.5\"/><geom name=\"ga\" type=\"box\" size=\"0.1 0.1 0.1\" mass=\"2\"/></body>"
    "<body name=\"b\" pos=\"0 1 0.2\"><joint name=\"jb\" type=\"slide\" axis=\"1 0 0\" "
    "damping=\"0.5\"/><geom name=\"gb\" type=\"box\" size=\"0.1 0.1 0.1\" mass=\"2\"/></body>"
    "</worldbody><actuator><motor joint=\"ja\" ctrlrange=\"-1 1\" ctrllimited=\"true\"/>"
    "<motor joint=\"jb\" ctrlrange=\"-1 1\" ctrllimited=\"true\"/></actuator></mujoco>";

/* What each env's model held in its last step: mass of a and b, friction of ga and gb,
 * damping of ja's and jb's dofs. */
static double pair_seen[MAX_ENVS][6];

static int pair_reward(void *user, int32_t env, const void *model, const void *data,
                       const float *action, float *r, uint8_t *terminated)
{
    const mjModel *m = model;
    const mjData *d = data;
    (void)user;
    (void)action;
    *r = (float)d->qpos[0];
    *terminated = 0;
    double seen[6] = {m->body_mass[1], m->body_mass[2], m->geom_friction[3 * 1],
                      m->geom_friction[3 * 2], m->dof_damping[0], m->dof_damping[1]};
    if (env < MAX_ENVS)
        memcpy(pair_seen[env], seen, sizeof seen);
    return 0;
}

/* Named randomisation: only the named body, geom and joint take factors; the others
 * keep the model's values. A name the model lacks is refused, naming it. */
START_TEST(test_named_randomisation)
{
    host h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = frl_test_runtime(2);
    static const char *const bodies[] = {"a", NULL}, *const geoms[] = {"gb", NULL},
                             *const joints[] = {"jb", NULL}, *const wrong[] = {"a", "c", NULL};
    frl_mujoco_callbacks cb = callbacks(0);
    cb.reward = pair_reward;
    cb.randomize_bodies = bodies;
    cb.randomize_geoms = geoms;
    cb.randomize_joints = joints;
    frl_config *cfg = frl_test_settings("env.randomize_mass=0.5 env.randomize_damping=0.3 "
                                        "env.randomize_friction=0.2");
    frl_vec_env *v = NULL;
    frl_status st = frl_vec_env_create_mujoco(&v, rt, pair_xml, &cb, &h, 2, MAX_ENVS, cfg);
    ck_assert_msg(st == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(frl_vec_env_reset(v, 9), FRL_OK);
    push(v, 0.3f, 1);
    int varied[6] = {0};
    for (int i = 0; i < MAX_ENVS; i++)
        for (int k = 0; k < 6; k++)
            varied[k] += pair_seen[i][k] != pair_seen[0][k];
    /* named: a's mass, gb's friction, jb's damping vary; the others are the model's */
    ck_assert_int_eq(varied[0], MAX_ENVS - 1);
    ck_assert_int_eq(varied[3], MAX_ENVS - 1);
    ck_assert_int_eq(varied[5], MAX_ENVS - 1);
    ck_assert(pair_seen[3][1] == 2.0 && pair_seen[3][2] == 1.0 && pair_seen[3][4] == 0.5);
    frl_vec_env_destroy(v);
    cb.randomize_bodies = wrong;
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, pair_xml, &cb, &h, 2, 2, cfg),
                     FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(v);
    ck_assert_msg(strstr(frl_last_error(), "randomize_bodies: the model has no body named 'c'"),
                  "%s", frl_last_error());
    cb.randomize_bodies = bodies;
    /* a NULL argument clears *out first, as every constructor does (it was left as is) */
    v = (frl_vec_env *)&h;
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, NULL, &cb, &h, 2, 2, cfg), FRL_ERR_NULL);
    ck_assert_ptr_null(v);
    cb.randomize_joints = (const char *const[]){"floor", NULL}; /* a geom, not a joint */
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, pair_xml, &cb, &h, 2, 2, cfg),
                     FRL_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(frl_last_error(), "no joint named 'floor'"), "%s", frl_last_error());
    /* the world body: accepted, it randomised nothing (the mass loop skips it) */
    cb.randomize_joints = NULL;
    cb.randomize_bodies = (const char *const[]){"world", NULL};
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, pair_xml, &cb, &h, 2, 2, cfg),
                     FRL_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(frl_last_error(), "'world' is the world body"), "%s",
                  frl_last_error());
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* pair_xml's sliders on the floor through explicit contact pairs, whose friction MuJoCo
 * uses instead of the geoms'. */
static const char contact_xml[] =
    "<mujoco><option timestep=\"0.01\"/><worldbody>"
    "<geom name=\"floor\" type=\"plane\" size=\"5 5 0.1\"/>"
    "<body name=\"a\" pos=\"0 0 0.1\"><joint name=\"ja\" type=\"slide\" axis=\"1 0 0\"/>"
    "<geom name=\"ga\" type=\"box\" size=\"0.1 0.1 0.1\" mass=\"2\"/></body>"
    "<body name=\"b\" pos=\"0 1 0.1\"><joint name=\"jb\" type=\"slide\" axis=\"1 0 0\"/>"
    "<geom name=\"gb\" type=\"box\" size=\"0.1 0.1 0.1\" mass=\"2\"/></body></worldbody>"
    "<contact><pair geom1=\"floor\" geom2=\"ga\" friction=\"0.7 0.7 0.005 0.0001 0.0001\"/>"
    "<pair geom1=\"floor\" geom2=\"gb\" friction=\"0.9 0.9 0.005 0.0001 0.0001\"/></contact>"
    "<actuator><motor joint=\"ja\" ctrlrange=\"-1 1\" ctrllimited=\"true\"/>"
    "<motor joint=\"jb\" ctrlrange=\"-1 1\" ctrllimited=\"true\"/></actuator></mujoco>";

/* What each env's model held in its last step: both pairs' five friction coefficients. */
static double contact_seen[MAX_ENVS][10];

static int contact_reward(void *user, int32_t env, const void *model, const void *data,
                          const float *action, float *r, uint8_t *terminated)
{
    const mjModel *m = model;
    (void)user, (void)data, (void)action;
    *r = 0.0f;
    *terminated = 0;
    if (env < MAX_ENVS)
        memcpy(contact_seen[env], m->pair_friction, sizeof contact_seen[env]);
    return 0;
}

/* env.randomize_friction reaches explicit contact pairs, whose friction overrides the
 * geoms' (before, a model with <pair> contacts kept its friction, randomised or not): a
 * pair's two sliding coefficients take one factor, its others stay; with named geoms,
 * only the pairs that hold one. */
START_TEST(test_contact_pairs_randomised)
{
    host h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = frl_test_runtime(2);
    frl_mujoco_callbacks cb = callbacks(0);
    cb.reward = contact_reward;
    frl_config *cfg = frl_test_settings("env.randomize_friction=0.2");
    const double base[2] = {0.7, 0.9};
    for (int named = 0; named < 2; named++) {
        cb.randomize_geoms = named ? (const char *const[]){"gb", NULL} : NULL;
        frl_vec_env *v = NULL;
        frl_status st = frl_vec_env_create_mujoco(&v, rt, contact_xml, &cb, &h, 2, MAX_ENVS, cfg);
        ck_assert_msg(st == FRL_OK, "%s", frl_last_error());
        ck_assert_int_eq(frl_vec_env_reset(v, 11), FRL_OK);
        push(v, 0.3f, 1);
        for (int p = 0; p < 2; p++) {
            int varied = 0, randomised = !named || p == 1;
            for (int i = 0; i < MAX_ENVS; i++) {
                const double *f = contact_seen[i] + 5 * p;
                ck_assert(f[0] == f[1] && f[2] == 0.005 && f[3] == 0.0001 && f[4] == 0.0001);
                ck_assert(f[0] >= 0.8 * base[p] - 1e-12 && f[0] <= 1.2 * base[p] + 1e-12);
                ck_assert(randomised || f[0] == base[p]);
                varied += f[0] != contact_seen[0][5 * p];
            }
            ck_assert_int_eq(varied, randomised ? MAX_ENVS - 1 : 0);
        }
        frl_vec_env_destroy(v);
    }
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(test_models_mujoco_refuses)
{
    host h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = frl_test_runtime(1);
    frl_mujoco_callbacks cb = callbacks(0);
    frl_vec_env *v = NULL;
    /* Broken XML: MuJoCo's own message comes through. */
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, "<mujoco><worldbody><body>", &cb, &h, 2,
                                               1, NULL),
                     FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(v);
    ck_assert_msg(strstr(frl_last_error(), "frl_vec_env_create_mujoco: ") &&
                      strlen(frl_last_error()) > 40, "%s", frl_last_error());
    /* A missing file names the file. */
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, "/nonexistent/arm.xml", &cb, &h, 2, 1,
                                               NULL),
                     FRL_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(frl_last_error(), "arm.xml"), "%s", frl_last_error());
    /* Nothing to actuate. */
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, "<mujoco><worldbody><body><joint "
                                               "type=\"slide\"/><geom size=\"0.1\"/></body>"
                                               "</worldbody></mujoco>", &cb, &h, 2, 1, NULL),
                     FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "no actuators"));
    /* An actuator without a control range: an unbounded action. */
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, "<mujoco><worldbody><body><joint "
                                               "name=\"j\" type=\"slide\"/><geom size=\"0.1\"/>"
                                               "</body></worldbody><actuator><motor joint=\"j\"/>"
                                               "</actuator></mujoco>", &cb, &h, 2, 1, NULL),
                     FRL_OK);
    ck_assert(isinf(frl_space_low(frl_vec_env_action_space(v))[0]));
    frl_vec_env_destroy(v);
    /* Text read from a file with a UTF-8 byte order mark is still the XML, not a path. */
    char bom_xml[2048];
    snprintf(bom_xml, sizeof bom_xml, "\xEF\xBB\xBF\n%s", slider_xml);
    ck_assert_msg(frl_vec_env_create_mujoco(&v, rt, bom_xml, &cb, &h, 2, 1, NULL) == FRL_OK,
                  "%s", frl_last_error());
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(test_bad_arguments)
{
    host h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = frl_test_runtime(1);
    frl_mujoco_callbacks cb = callbacks(0);
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create_mujoco(NULL, rt, slider_xml, &cb, &h, 2, 1, NULL),
                     FRL_ERR_NULL);
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, NULL, slider_xml, &cb, &h, 2, 1, NULL),
                     FRL_ERR_NULL);
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, NULL, &cb, &h, 2, 1, NULL), FRL_ERR_NULL);
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, slider_xml, NULL, &h, 2, 1, NULL),
                     FRL_ERR_NULL);
    frl_mujoco_callbacks half = cb;
    half.reward = NULL;
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, slider_xml, &half, &h, 2, 1, NULL),
                     FRL_ERR_NULL);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "reward"));
    frl_mujoco_callbacks old = cb;
    old.struct_size = sizeof(size_t);
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, slider_xml, &old, &h, 2, 1, NULL),
                     FRL_ERR_VERSION);
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, slider_xml, &cb, &h, 0, 1, NULL),
                     FRL_ERR_RANGE);
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, slider_xml, &cb, &h, 2, 0, NULL),
                     FRL_ERR_RANGE);
    frl_config *cfg = NULL;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_set_float(cfg, "env.randomize_mass", 0.95), FRL_ERR_RANGE);
    frl_config_destroy(cfg);
    /* A limited actuator's range that cannot bound an action space, named. */
    static const char nan_range[] =
        "<mujoco><worldbody><body><joint name=\"x\" type=\"slide\"/><geom size=\"0.1\"/>"
        "</body></worldbody><actuator><motor name=\"push\" joint=\"x\" ctrlrange=\"nan 1\" "
        "ctrllimited=\"true\"/></actuator></mujoco>";
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, nan_range, &cb, &h, 2, 1, NULL),
                     FRL_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(frl_last_error(), "actuator 0 ('push') has ctrlrange [nan, 1]"), "%s",
                  frl_last_error());
    frl_runtime_destroy(rt);
}
END_TEST

static void expect_error(frl_vec_env *v, const char *text)
{
    ck_assert_msg(strstr(frl_vec_env_last_error(v), text), "'%s' lacks '%s'",
                  frl_vec_env_last_error(v), text);
}

START_TEST(test_failing_callbacks)
{
    host h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = frl_test_runtime(1);
    frl_vec_env *v = make(rt, &h, 2, NULL);
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    h.fail_observe = 7;
    float *act = frl_vec_env_actions(v);
    act[0] = act[1] = 0.1f;
    ck_assert_int_eq(frl_vec_env_step(v), FRL_ERR_CALLBACK);
    expect_error(v, "env 0 step 1: MuJoCo model: the host's observe callback returned 7");
    h.fail_observe = 0;
    h.fail_reward = 5;
    ck_assert_int_eq(frl_vec_env_step(v), FRL_OK); /* the failed envs reset */
    ck_assert_int_eq(frl_vec_env_step(v), FRL_ERR_CALLBACK);
    expect_error(v, "env 0 step 3: MuJoCo model: the host's reward callback returned 5");
    h.fail_reward = 0;
    h.fail_reset = 4;
    ck_assert_int_eq(frl_vec_env_reset(v, 2), FRL_ERR_CALLBACK);
    expect_error(v, "MuJoCo model: the host's reset callback returned 4");
    h.fail_reset = 0;
    ck_assert_int_eq(frl_vec_env_reset(v, 2), FRL_OK);
    h.nan_reward = 1;
    ck_assert_int_eq(frl_vec_env_step(v), FRL_ERR_NONFINITE);
    expect_error(v, "reward callback returned NaN reward"); /* not the "step callback" */
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* A callback that fails with the code the plugin's step uses for a simulation fault
 * (FRL_MUJOCO_FAULT, 9) is still the host's error: it was taken for a blow-up, the step
 * succeeded and the episode ended truncated, with only a log line. */
START_TEST(test_callback_fails_with_fault_code)
{
    host h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = frl_test_runtime(1);
    frl_vec_env *v = make(rt, &h, 1, NULL);
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    h.fail_observe = 9;
    ck_assert_int_eq(frl_vec_env_step(v), FRL_ERR_CALLBACK);
    expect_error(v, "the host's observe callback returned 9");
    h.fail_observe = 0;
    ck_assert_int_eq(frl_vec_env_step(v), FRL_OK); /* the failed env resets */
    h.fail_reward = 9;
    ck_assert_int_eq(frl_vec_env_step(v), FRL_ERR_CALLBACK);
    expect_error(v, "the host's reward callback returned 9");
    ck_assert_int_eq(atomic_load(&v->faults), 0);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

static int nan_observe(void *user, int32_t env, const void *model, const void *data,
                       float *obs)
{
    const mjData *d = data;
    (void)user, (void)env, (void)model;
    obs[0] = (float)d->qpos[0];
    obs[1] = d->qpos[0] > 0.5 ? NAN : (float)d->qvel[0];
    return 0;
}

/* An env's state and observation before a set_state that must leave them as they were. */
typedef struct kept_env {
    double state[64];
    float obs[2];
    int32_t n;
} kept_env;

/* Reset the vec env, push env 0 for 3 steps, and keep what it holds then. */
static void keep_env(frl_vec_env *v, kept_env *k)
{
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    push(v, 0.5f, 3);
    k->n = v->state_dim + 1;
    memcpy(k->obs, frl_vec_env_observations(v), sizeof k->obs);
    ck_assert_int_eq(frl_vec_env_get_state_at(v, 0, k->state, k->n, err), FRL_OK);
}

static void assert_kept(frl_vec_env *v, const kept_env *k)
{
    char err[FRL_ERRMSG_SIZE];
    double now[64];
    ck_assert_int_eq(frl_vec_env_get_state_at(v, 0, now, k->n, err), FRL_OK);
    ck_assert(memcmp(now, k->state, sizeof(double) * (size_t)k->n) == 0);
    ck_assert(memcmp(frl_vec_env_observations(v), k->obs, sizeof k->obs) == 0);
}

/* set_state's observation is checked as a step's: a NaN the host's observe writes for
 * the state is an error naming it (it was taken into the batch), and a refused state or
 * a failing observe leaves the env with its own state and observation. */
START_TEST(test_set_state_observation_checked)
{
    host h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = frl_test_runtime(1);
    frl_mujoco_callbacks cb = callbacks(0);
    cb.observe = nan_observe;
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, slider_xml, &cb, &h, 2, 1, NULL), FRL_OK);
    kept_env k;
    keep_env(v, &k);
    double s[64];
    char err[FRL_ERRMSG_SIZE];
    memcpy(s, k.state, sizeof(double) * (size_t)k.n);
    s[1] = 0.75; /* after time: qpos[0], which the observe turns into NaN */
    ck_assert_int_eq(frl_vec_env_set_state_at(v, 0, s, k.n, err), FRL_ERR_NONFINITE);
    ck_assert_msg(strstr(err, "NaN in obs[1]"), "%s", err);
    assert_kept(v, &k);
    /* a step's NaN is named as the observe callback's (it said "step callback") */
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    frl_status st = FRL_OK;
    for (int t = 0; t < 1000 && st == FRL_OK; t++) {
        ((float *)frl_vec_env_actions(v))[0] = 1.0f;
        st = frl_vec_env_step(v);
    }
    ck_assert_int_eq(st, FRL_ERR_NONFINITE);
    expect_error(v, "observe callback returned NaN in obs[1]");
    frl_vec_env_destroy(v);
    /* an observe that fails: the same */
    v = make(rt, &h, 1, NULL);
    keep_env(v, &k);
    s[1] = 0.25;
    h.fail_observe = 6;
    ck_assert_int_eq(frl_vec_env_set_state_at(v, 0, s, k.n, err), FRL_ERR_CALLBACK);
    ck_assert_msg(strstr(err, "the host's observe callback returned 6"), "%s", err);
    h.fail_observe = 0;
    assert_kept(v, &k);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* mju_error of the MuJoCo the plugin loaded (a dependency of the plugin alone, local
 * to it, so found by its soname), for a host callback that calls into MuJoCo. */
typedef void (*mju_error_fn)(const char *msg, ...);
static mju_error_fn plugin_mju_error(void)
{
    char soname[64];
    snprintf(soname, sizeof soname, "libmujoco.so.%s", frl_mujoco_version());
    void *h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    ck_assert_msg(h != NULL, "%s", dlerror());
    void *sym = dlsym(h, "mju_error");
    ck_assert_ptr_nonnull(sym);
    mju_error_fn fn;
    memcpy(&fn, &sym, sizeof fn); /* object to function pointer, as POSIX allows */
    dlclose(h);
    return fn;
}

static mju_error_fn observe_error; /* set: erroring_observe raises a MuJoCo error */

static int erroring_observe(void *user, int32_t env, const void *model, const void *data,
                            float *obs)
{
    const mjData *d = data;
    (void)user, (void)env, (void)model;
    if (observe_error)
        observe_error("test: observe met %s", "an error");
    obs[0] = (float)d->qpos[0];
    obs[1] = (float)d->qvel[0];
    return 0;
}

/* A MuJoCo error in the observe after set_state fails the set_state with MuJoCo's
 * message, as in a reset or step, and the env keeps its state and observation: outside
 * the plugin's guard the handler returned into MuJoCo's caller, and the state was taken. */
START_TEST(test_observe_error_after_set_state)
{
    host h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = frl_test_runtime(1);
    frl_mujoco_callbacks cb = callbacks(0);
    cb.observe = erroring_observe;
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, slider_xml, &cb, &h, 2, 1, NULL), FRL_OK);
    kept_env k;
    keep_env(v, &k);
    double s[64];
    char err[FRL_ERRMSG_SIZE];
    memcpy(s, k.state, sizeof(double) * (size_t)k.n);
    s[1] = 0.25; /* after time: qpos[0] */
    observe_error = plugin_mju_error();
    frl_status st = frl_vec_env_set_state_at(v, 0, s, k.n, err);
    observe_error = NULL;
    ck_assert_int_eq(st, FRL_ERR_CALLBACK);
    ck_assert_msg(strstr(err, "observe: MuJoCo error: test: observe met an error"), "%s", err);
    assert_kept(v, &k);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

static int observe_qpos(void *user, int32_t env, const void *model, const void *data,
                        float *obs)
{
    (void)user, (void)env, (void)model;
    obs[0] = (float)((const mjData *)data)->qpos[0];
    return 0;
}

/* Which value nan_reset leaves not finite: 0 qvel[0], 1 userdata[0] (a "closest so
 * far" start of +inf), 2 xfrc_applied[6], 3 mocap_quat[2]. */
static int nan_part;

static int nan_reset(void *user, int32_t env, const void *model, void *data, uint64_t seed)
{
    mjData *d = data;
    (void)user, (void)env, (void)model, (void)seed;
    if (nan_part == 0)
        d->qvel[0] = NAN;
    else if (nan_part == 1)
        d->userdata[0] = INFINITY;
    else if (nan_part == 2)
        d->xfrc_applied[6] = NAN;
    else
        d->mocap_quat[2] = NAN;
    return 0;
}

/* A reset callback that leaves a value of the state not finite is the host's error,
 * named. Else the reset succeeded (the observe reads qpos only) and either every first
 * step was a simulation fault, the run going on with one-step episodes and log lines
 * (qvel, an applied force), or get_state failed, so the run could never be saved
 * (userdata, mocap). */
START_TEST(test_reset_leaves_nan)
{
    static const char *const named[] = {"qvel[0] = nan", "userdata[0] = inf",
                                        "xfrc_applied[6] = nan", "mocap_quat[2] = nan"};
    for (nan_part = 0; nan_part < 4; nan_part++) {
        host h = {.lock = PTHREAD_MUTEX_INITIALIZER};
        frl_runtime *rt = frl_test_runtime(1);
        frl_mujoco_callbacks cb = callbacks(0);
        cb.observe = observe_qpos;
        cb.reset = nan_reset;
        frl_vec_env *v = NULL;
        ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, target_xml, &cb, &h, 1, 1, NULL),
                         FRL_OK);
        ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_ERR_CALLBACK);
        char want[96];
        snprintf(want, sizeof want, "the host's reset callback left %s", named[nan_part]);
        expect_error(v, want);
        frl_vec_env_destroy(v);
        frl_runtime_destroy(rt);
    }
}
END_TEST

/* A host model's run saves and continues exactly on a vec env the host makes again. */
/* What frl_mujoco_array and frl_mujoco_name_id gave inside the callbacks: the
 * number of lookups that disagreed with MuJoCo's own structs, and how many ran. */
typedef struct lookups {
    pthread_mutex_t lock;
    int wrong, checked;
    char first[160];
} lookups;

static void lookup_expect(lookups *l, int ok, const char *what)
{
    pthread_mutex_lock(&l->lock);
    l->checked++;
    if (!ok && l->wrong++ == 0)
        snprintf(l->first, sizeof l->first, "%s (%s)", what, frl_last_error());
    pthread_mutex_unlock(&l->lock);
}

/* name's array is at want with rows x cols elements of type. */
static void expect_array(lookups *l, const void *m, const void *d, const char *name,
                         const void *want, int64_t rows, int64_t cols, int32_t type)
{
    void *ptr = NULL;
    int64_t r = -1, c = -1;
    int32_t t = -1;
    frl_status st = frl_mujoco_array(m, d, name, &ptr, &r, &c, &t);
    lookup_expect(l, st == FRL_OK && ptr == want && r == rows && c == cols && t == type, name);
}

static int observe_lookups(void *user, int32_t env, const void *model, const void *data,
                           float *obs)
{
    lookups *l = user;
    const mjModel *m = model;
    const mjData *d = data;
    (void)env;
    expect_array(l, m, d, "qpos", d->qpos, m->nq, 1, FRL_MUJOCO_FLOAT64);
    expect_array(l, m, d, "xpos", d->xpos, m->nbody, 3, FRL_MUJOCO_FLOAT64);
    expect_array(l, m, d, "ctrl", d->ctrl, m->nu, 1, FRL_MUJOCO_FLOAT64);
    expect_array(l, m, NULL, "body_mass", m->body_mass, m->nbody, 1, FRL_MUJOCO_FLOAT64);
    expect_array(l, m, NULL, "geom_type", m->geom_type, m->ngeom, 1, FRL_MUJOCO_INT32);
    expect_array(l, m, NULL, "actuator_ctrlrange", m->actuator_ctrlrange, m->nu, 2,
                 FRL_MUJOCO_FLOAT64);
    expect_array(l, m, NULL, "actuator_ctrllimited", m->actuator_ctrllimited, m->nu, 1,
                 FRL_MUJOCO_UINT8);
    /* Scalars and fixed vectors of mjData, as 1 x 1 and n x 1 arrays. */
    expect_array(l, m, d, "time", &d->time, 1, 1, FRL_MUJOCO_FLOAT64);
    expect_array(l, m, d, "ncon", &d->ncon, 1, 1, FRL_MUJOCO_INT32);
    expect_array(l, m, d, "energy", d->energy, 2, 1, FRL_MUJOCO_FLOAT64);
    /* The arena's arrays of this step: the constraint solver's (the box is sunk into
     * the floor, so there are contacts), sized by mjData's counts. */
    expect_array(l, m, d, "efc_force", d->nefc ? d->efc_force : NULL, d->nefc, 1,
                 FRL_MUJOCO_FLOAT64);
    expect_array(l, m, d, "efc_KBIP", d->nefc ? d->efc_KBIP : NULL, d->nefc, 4,
                 FRL_MUJOCO_FLOAT64);
    lookup_expect(l, d->nefc > 0, "contacts with the floor");
    /* No mocap bodies: an empty array. */
    expect_array(l, m, d, "mocap_pos", NULL, 0, 3, FRL_MUJOCO_FLOAT64);
    int32_t id = -5;
    lookup_expect(l, frl_mujoco_name_id(m, "body", "cart", &id) == FRL_OK && id == 1, "cart");
    lookup_expect(l, frl_mujoco_name_id(m, "geom", "floor", &id) == FRL_OK && id == 0, "floor");
    lookup_expect(l, frl_mujoco_name_id(m, "joint", "x", &id) == FRL_OK && id == 0, "x");
    /* Not arrays of numbers, or no such name: refused, nothing written. */
    void *ptr = &id;
    lookup_expect(l, frl_mujoco_array(m, d, "contact", &ptr, NULL, NULL, NULL) ==
                         FRL_ERR_UNKNOWN_NAME && ptr == &id, "contact refused");
    lookup_expect(l, frl_mujoco_array(m, NULL, "names", &ptr, NULL, NULL, NULL) ==
                         FRL_ERR_UNKNOWN_NAME, "names refused");
    lookup_expect(l, frl_mujoco_array(m, d, "solver", &ptr, NULL, NULL, NULL) ==
                         FRL_ERR_UNKNOWN_NAME, "solver (structs) refused");
    lookup_expect(l, frl_mujoco_array(m, d, "threadpool", &ptr, NULL, NULL, NULL) ==
                         FRL_ERR_UNKNOWN_NAME, "threadpool (a pointer) refused");
    lookup_expect(l, frl_mujoco_array(m, NULL, "qpos", &ptr, NULL, NULL, NULL) ==
                         FRL_ERR_UNKNOWN_NAME, "qpos is not the model's");
    lookup_expect(l, frl_mujoco_name_id(m, "body", "nothing", &id) == FRL_ERR_UNKNOWN_NAME &&
                         id == -1, "no body 'nothing'");
    lookup_expect(l, frl_mujoco_name_id(m, "bodies", "cart", &id) == FRL_ERR_INVALID_ARGUMENT,
                  "no kind 'bodies'");
    obs[0] = (float)d->qpos[0];
    obs[1] = (float)d->qvel[0];
    return 0;
}

static int reward_lookups(void *user, int32_t env, const void *model, const void *data,
                          const float *action, float *r, uint8_t *terminated)
{
    (void)user, (void)env, (void)model, (void)action;
    *r = (float)((const mjData *)data)->qpos[0];
    *terminated = 0;
    return 0;
}

/* An arena array sized by the model that a step did not lay out (the islands, with no
 * contact on the slider): it gave nv rows at a NULL pointer, which a host reads through.
 * It reads as empty where its memory is absent, and as the step's array where present. */
static int observe_islands(void *user, int32_t env, const void *model, const void *data,
                           float *obs)
{
    lookups *l = user;
    const mjModel *m = model;
    const mjData *d = data;
    (void)env;
    void *ptr = &ptr;
    int64_t rows = -1;
    frl_status st = frl_mujoco_array(m, d, "dof_island", &ptr, &rows, NULL, NULL);
    lookup_expect(l, st == FRL_OK && ptr == d->dof_island && rows == (ptr ? m->nv : 0),
                  "dof_island");
    lookup_expect(l, ptr == NULL, "the slider lays out no islands");
    obs[0] = (float)d->qpos[0];
    obs[1] = (float)d->qvel[0];
    return 0;
}

START_TEST(test_absent_arena_arrays_are_empty)
{
    lookups l = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = frl_test_runtime(1);
    frl_mujoco_callbacks cb = callbacks(0);
    cb.observe = observe_islands;
    cb.reward = reward_lookups;
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, slider_xml, &cb, &l, 2, 1, NULL),
                     FRL_OK);
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    push(v, 0.5f, 2);
    ck_assert_msg(l.wrong == 0, "%d of %d lookups wrong, first: %s", l.wrong, l.checked,
                  l.first);
    ck_assert_int_gt(l.checked, 0);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(test_arrays_by_name)
{
    lookups l = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = frl_test_runtime(2);
    frl_mujoco_callbacks cb = callbacks(0);
    cb.observe = observe_lookups;
    cb.reward = reward_lookups;
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, resting_xml, &cb, &l, 2, 3, NULL),
                     FRL_OK);
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    push(v, 0.5f, 3);
    ck_assert_msg(l.wrong == 0, "%d of %d lookups wrong, first: %s", l.wrong, l.checked,
                  l.first);
    ck_assert_int_eq(l.checked, 4 * 3 * 24); /* reset and 3 steps, 3 envs, 24 checks */
    /* Bad arguments outside the callbacks. */
    ck_assert_int_eq(frl_mujoco_array(NULL, NULL, "qpos", NULL, NULL, NULL, NULL), FRL_ERR_NULL);
    ck_assert_int_eq(frl_mujoco_array(&l, NULL, NULL, NULL, NULL, NULL, NULL), FRL_ERR_NULL);
    int32_t id;
    ck_assert_int_eq(frl_mujoco_name_id(NULL, "body", "cart", &id), FRL_ERR_NULL);
    ck_assert_int_eq(frl_mujoco_name_id(&l, "body", "cart", NULL), FRL_ERR_NULL);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- what a host reads after a reset or set_state ---- */

/* The cart's contact force, up (cfrc_ext's last value of body 1), and qpos. */
static int observe_contact(void *user, int32_t env, const void *model, const void *data,
                           float *obs)
{
    const mjData *d = data;
    (void)user, (void)env, (void)model;
    obs[0] = (float)d->qpos[0];
    obs[1] = (float)d->cfrc_ext[6 + 5];
    return 0;
}

/* The box resting on the floor pushes on it from the first observation on, and one
 * state observes the same whatever the env did before it (mj_forward alone leaves
 * cfrc_ext zero after a reset and stale after set_state). */
START_TEST(test_contact_forces_observed)
{
    host h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = frl_test_runtime(1);
    frl_mujoco_callbacks cb = callbacks(0);
    cb.observe = observe_contact;
    frl_vec_env *a = NULL, *b = NULL;
    ck_assert_int_eq(frl_vec_env_create_mujoco(&a, rt, resting_xml, &cb, &h, 2, 1, NULL), FRL_OK);
    ck_assert_int_eq(frl_vec_env_create_mujoco(&b, rt, resting_xml, &cb, &h, 2, 1, NULL), FRL_OK);
    ck_assert_int_eq(frl_vec_env_reset(a, 1), FRL_OK);
    ck_assert_int_eq(frl_vec_env_reset(b, 1), FRL_OK);
    ck_assert_msg(frl_vec_env_observations(a)[1] > 1.0f, "reset: contact force %g",
                  frl_vec_env_observations(a)[1]);
    push(a, 1.0f, 5);
    double s[64];
    char err[FRL_ERRMSG_SIZE];
    int32_t n = a->state_dim + 1;
    ck_assert_int_eq(frl_vec_env_get_state_at(a, 0, s, n, err), FRL_OK);
    push(a, -1.0f, 3);
    ck_assert_int_eq(frl_vec_env_set_state_at(a, 0, s, n, err), FRL_OK);
    ck_assert_int_eq(frl_vec_env_set_state_at(b, 0, s, n, err), FRL_OK);
    ck_assert_msg(frl_vec_env_observations(a)[1] == frl_vec_env_observations(b)[1],
                  "one state, contact forces %g and %g", frl_vec_env_observations(a)[1],
                  frl_vec_env_observations(b)[1]);
    ck_assert(frl_vec_env_observations(b)[1] > 1.0f);
    frl_vec_env_destroy(a);
    frl_vec_env_destroy(b);
    frl_runtime_destroy(rt);
}
END_TEST

static int observe_force(void *user, int32_t env, const void *model, const void *data,
                         float *obs)
{
    const mjData *d = data;
    (void)user, (void)env, (void)model;
    obs[0] = (float)d->qpos[0];
    obs[1] = (float)d->actuator_force[0];
    return 0;
}

/* mj_forward after set_state computes the actuators' forces from ctrl, so ctrl is state:
 * one state observed the last action of whichever env took it. */
START_TEST(test_state_holds_ctrl)
{
    host h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = frl_test_runtime(1);
    frl_mujoco_callbacks cb = callbacks(0);
    cb.observe = observe_force;
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, slider_xml, &cb, &h, 2, 2, NULL), FRL_OK);
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    float *act = frl_vec_env_actions(v);
    act[0] = 0.9f;
    act[1] = -0.9f;
    ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
    double s[64];
    char err[FRL_ERRMSG_SIZE];
    int32_t n = v->state_dim + 1;
    ck_assert_int_eq(frl_vec_env_get_state_at(v, 0, s, n, err), FRL_OK);
    ck_assert_int_eq(frl_vec_env_set_state_at(v, 0, s, n, err), FRL_OK);
    ck_assert_int_eq(frl_vec_env_set_state_at(v, 1, s, n, err), FRL_OK);
    const float *obs = frl_vec_env_observations(v);
    ck_assert_msg(obs[1] == 0.9f && obs[3] == 0.9f, "one state, actuator forces %g and %g",
                  (double)obs[1], (double)obs[3]);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- an env that cannot be made ---- */

/* The process's address space in bytes (/proc/self/statm), or 0. */
static size_t address_space(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f && fscanf(f, "%lu", &pages) != 1)
        pages = 0;
    if (f)
        fclose(f);
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* Each env's mjData takes a 1 GiB arena; with the address space capped 1.5 GiB above
 * what the process has, env 0 fits and env 1 does not. Run in a child (the cap stays
 * with it), which writes the create's message to fd. */
static void create_capped(int fd)
{
    static const char big_xml[] =
        "<mujoco><size memory=\"1G\"/><worldbody><body><joint name=\"x\" type=\"slide\"/>"
        "<geom size=\"0.1\"/></body></worldbody><actuator><motor joint=\"x\"/></actuator>"
        "</mujoco>";
    host h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = frl_test_runtime(1);
    frl_mujoco_callbacks cb = callbacks(0);
    frl_vec_env *v = NULL;
    rlim_t limit = address_space() + (3u << 29);
    struct rlimit cap = {.rlim_cur = limit, .rlim_max = limit};
    frl_status st = setrlimit(RLIMIT_AS, &cap) == 0
                        ? frl_vec_env_create_mujoco(&v, rt, big_xml, &cb, &h, 2, 4, NULL)
                        : FRL_OK;
    const char *msg = st == FRL_OK ? "created" : frl_last_error();
    ssize_t written = write(fd, msg, strlen(msg));
    _exit(written < 0);
}

/* The create's message names the env whose data could not be made (it said "env -1"). */
START_TEST(test_env_create_fails)
{
    if (FRL_TEST_SANITIZED) { /* a sanitizer reserves terabytes of address space */
        printf("test_env_create_fails: skipped under a sanitizer\n");
        return;
    }
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        create_capped(fds[1]);
    }
    close(fds[1]);
    char msg[FRL_ERRMSG_SIZE] = "";
    ssize_t n = read(fds[0], msg, sizeof msg - 1);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    msg[n > 0 ? n : 0] = '\0';
    ck_assert_msg(strstr(msg, "MuJoCo model env 1: ") && strstr(msg, "memory"), "%s", msg);
}
END_TEST

/* ---- a blow-up MuJoCo answers by resetting the data ---- */

/* An unlimited motor on a slider. */
static const char free_motor_xml[] =
    "<mujoco><option timestep=\"0.01\"/><worldbody><body name=\"cart\" pos=\"0 0 0.2\">"
    "<joint name=\"x\" type=\"slide\" axis=\"1 0 0\"/><geom type=\"box\" "
    "size=\"0.1 0.1 0.1\" mass=\"2\"/></body></worldbody><actuator><motor joint=\"x\"/>"
    "</actuator></mujoco>";

/* A control beyond MuJoCo's 1e10: the reset's mj_forward warns (and zeroes it). */
static int blowup_reset(void *user, int32_t env, const void *model, void *data, uint64_t seed)
{
    mjData *d = data;
    (void)user, (void)env, (void)model, (void)seed;
    d->ctrl[0] = 1e11;
    return 0;
}

static int blowup_observe(void *user, int32_t env, const void *model, const void *data,
                          float *obs)
{
    const mjData *d = data;
    (void)env, (void)model;
    obs[0] = (float)d->qpos[0];
    obs[1] = (float)d->qvel[0];
    return user ? *(const int *)user : 0; /* a test's code, else success */
}

static int blowup_reward(void *user, int32_t env, const void *model, const void *data,
                         const float *action, float *r, uint8_t *terminated)
{
    (void)user, (void)env, (void)model, (void)data, (void)action;
    *r = 1.0f;
    *terminated = 0;
    return 0;
}

static frl_vec_env *blowup_env_user(frl_runtime *rt, int with_reset, int *fail_observe)
{
    frl_mujoco_callbacks cb;
    frl_mujoco_callbacks_init(&cb);
    cb.observe = blowup_observe;
    cb.reward = blowup_reward;
    cb.reset = with_reset ? blowup_reset : NULL;
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create_mujoco(&v, rt, free_motor_xml, &cb, fail_observe, 2,
                                               1, NULL), FRL_OK);
    return v;
}

static frl_vec_env *blowup_env(frl_runtime *rt, int with_reset)
{
    return blowup_env_user(rt, with_reset, NULL);
}

/* The step that blew up is a fault (truncated, reward 0, logged) even when the warning
 * counts MuJoCo's reset left add up to the ones before the step: set_state's mj_forward
 * warns of a control beyond 1e10, then the step's checks find the velocity of 1e20 bad
 * (MuJoCo resets the data, clearing every warning count, then counts that one). */
START_TEST(test_blowup_after_warning)
{
    log_capture cap = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = capturing_runtime(&cap);
    ck_assert_ptr_nonnull(rt);
    frl_vec_env *v = blowup_env(rt, 0);
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    ((float *)frl_vec_env_actions(v))[0] = 0.125f;
    ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
    double s[64];
    char err[FRL_ERRMSG_SIZE];
    int32_t n = v->state_dim + 1, ctrl = -1;
    ck_assert_int_eq(frl_vec_env_get_state_at(v, 0, s, n, err), FRL_OK);
    for (int32_t k = 3; k < n - 1 && ctrl < 0; k++) /* after time, qpos[0] and qvel[0] */
        ctrl = s[k] == 0.125 ? k : -1;
    ck_assert_int_ge(ctrl, 0);
    s[ctrl] = 1e11;
    s[2] = 1e20; /* qvel[0] */
    ck_assert_msg(frl_vec_env_set_state_at(v, 0, s, n, err) == FRL_OK, "%s", err);
    ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
    ck_assert_int_eq(frl_vec_env_truncated(v)[0], 1);
    ck_assert(frl_vec_env_rewards(v)[0] == 0.0f);
    ck_assert_int_eq(cap.warnings, 1);
    ck_assert_msg(strstr(cap.text, "env 0 step 2") && strstr(cap.text, "QVEL"), "log: %s",
                  cap.text);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* A step that blew up, then a host observe that fails on the model's initial state the
 * env falls back to: the error names both, the callback's code and MuJoCo's warning (it
 * had named only the callback, the cause of it all lost). */
START_TEST(test_observe_fails_after_a_fault)
{
    frl_runtime *rt = frl_test_runtime(1);
    int fail = 0;
    frl_vec_env *v = blowup_env_user(rt, 0, &fail);
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    double s[64];
    char err[FRL_ERRMSG_SIZE];
    int32_t n = v->state_dim + 1;
    ck_assert_int_eq(frl_vec_env_get_state_at(v, 0, s, n, err), FRL_OK);
    s[2] = 1e20; /* qvel[0] */
    ck_assert_msg(frl_vec_env_set_state_at(v, 0, s, n, err) == FRL_OK, "%s", err);
    fail = 9;
    ((float *)frl_vec_env_actions(v))[0] = 0.0f;
    ck_assert_int_eq(frl_vec_env_step(v), FRL_ERR_CALLBACK);
    const char *e = frl_vec_env_last_error(v);
    ck_assert_msg(strstr(e, "the host's observe callback returned 9") && strstr(e, "QVEL"),
                  "%s", e);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* A reset whose mj_forward MuJoCo warns about fails, with MuJoCo's warning: it succeeded
 * (the plugin's warning handler prints nothing) and every first step was a fault, the
 * run going on with one-step episodes and a log line each. */
START_TEST(test_reset_warning_fails)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_vec_env *v = blowup_env(rt, 1);
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_ERR_CALLBACK);
    expect_error(v, "MuJoCo model: reset: MuJoCo warning: ");
    expect_error(v, "CTRL");
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* settings: the env's own, beside the time limit (a randomising model's state holds its
 * episode's seed, so the resumed episodes run on the same masses and damping). */
static void check_checkpoint(const char *settings, int target)
{
    host h = {.lock = PTHREAD_MUTEX_INITIALIZER, .set_qpos = 1, .target = target};
    frl_runtime *rt = frl_test_runtime(2);
    char path[] = "/tmp/frl_test_mujoco_host_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    frl_config *cfg = frl_test_settings("train.rollout=32 train.epochs=1 train.minibatches=2 "
                                        "train.anneal_lr=false env.max_episode_steps=50");
    char env_settings[160];
    snprintf(env_settings, sizeof env_settings, "env.max_episode_steps=50 %s", settings);
    frl_vec_env *v = make(rt, &h, 4, env_settings);
    frl_trainer *t = NULL;
    ck_assert_msg(frl_trainer_create_vec(&t, rt, v, cfg) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(frl_trainer_train(t, 256), FRL_OK);
    ck_assert_msg(frl_trainer_save(t, path) == FRL_OK, "%s", frl_trainer_last_error(t));
    ck_assert_int_eq(frl_trainer_train(t, 768), FRL_OK);
    frl_metrics want = *frl_trainer_metrics(t);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    v = make(rt, &h, 4, env_settings);
    ck_assert_msg(frl_trainer_load_vec(&t, rt, path, v, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(frl_trainer_train(t, 768), FRL_OK);
    ck_assert_msg(frl_trainer_metrics(t)->mean_return == want.mean_return,
                  "%s%s: %.9g, not %.9g", settings, target ? " (target)" : "",
                  frl_trainer_metrics(t)->mean_return, want.mean_return);
    ck_assert(frl_trainer_metrics(t)->policy_loss == want.policy_loss);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_config_destroy(cfg);
    unlink(path);
    frl_runtime_destroy(rt);
}

START_TEST(test_checkpoint)
{
    check_checkpoint("", 0);
    check_checkpoint("env.randomize_mass=0.5 env.randomize_damping=0.5", 0);
    /* what a host's reset set besides qpos (a mocap target, userdata, an applied force)
     * is state too: a resumed episode keeps its target */
    check_checkpoint("", 1);
}
END_TEST

static Suite *host_suite(void)
{
    Suite *s = suite_create("mujoco_host");
    TCase *tc = tcase_create("models");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_slider_moves);
    tcase_add_test(tc, test_frame_skip);
    tcase_add_test(tc, test_reset_callback);
    tcase_add_test(tc, test_randomisation);
    tcase_add_test(tc, test_named_randomisation);
    tcase_add_test(tc, test_models_mujoco_refuses);
    tcase_add_test(tc, test_bad_arguments);
    tcase_add_test(tc, test_failing_callbacks);
    tcase_add_test(tc, test_callback_fails_with_fault_code);
    tcase_add_test(tc, test_observe_fails_after_a_fault);
    tcase_add_test(tc, test_contact_pairs_randomised);
    tcase_add_test(tc, test_set_state_observation_checked);
    tcase_add_test(tc, test_observe_error_after_set_state);
    tcase_add_test(tc, test_reset_leaves_nan);
    tcase_add_test(tc, test_blowup_after_warning);
    tcase_add_test(tc, test_reset_warning_fails);
    tcase_add_test(tc, test_env_create_fails);
    tcase_add_test(tc, test_contact_forces_observed);
    tcase_add_test(tc, test_state_holds_ctrl);
    tcase_add_test(tc, test_checkpoint);
    tcase_add_test(tc, test_arrays_by_name);
    tcase_add_test(tc, test_absent_arena_arrays_are_empty);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    const char *version = frl_mujoco_version();
    if (!version) {
        printf("mujoco_host: SKIP: no MuJoCo plugin: %s\n", frl_last_error());
        return EXIT_SKIP;
    }
    char built[32]; /* the headers' version, as mj_versionString spells it */
    snprintf(built, sizeof built, "%d.%d.%d", mjVERSION_HEADER / 1000000,
             mjVERSION_HEADER / 1000 % 1000, mjVERSION_HEADER % 1000);
    if (strcmp(version, built) != 0) {
        printf("mujoco_host: the plugin runs MuJoCo %s, this test was built with %s\n",
               version, built);
        return EXIT_FAILURE;
    }
    return frl_test_run(host_suite());
}

#else

int main(void)
{
    printf("mujoco_host: SKIP: built without MuJoCo's headers (-Dmujoco_dir not given)\n");
    return EXIT_SKIP;
}

#endif
