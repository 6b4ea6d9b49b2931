/* The MuJoCo tasks through the C API: the plugin's task list against the core's, every
 * task stepped and seeded reproducibly on 1 and 2 threads, state round trips, bad input,
 * a simulation that blows up (the episode ends, the run goes on, the log says where),
 * and every library allocation of a create failing in turn. The transitions themselves
 * are checked against Gymnasium in bindings/python/tests/test_mujoco.py.
 *
 * Without the plugin (a build without -Dmujoco_dir) it prints why and exits 77, which
 * meson reports as SKIP. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/plugin_load.h"
#include "env/mujoco_api.h"
#include "env/mujoco_env.h"
#include "env/vec_env.h"
#include "fastrl.h"
#include "test_log_capture.h"
#include "test_util.h"

#define EXIT_SKIP 77

static const char *const tasks[] = {
    "InvertedPendulum-v5", "InvertedDoublePendulum-v5", "Reacher-v5", "Hopper-v5",
    "HalfCheetah-v5", "Walker2d-v5", "Ant-v5",
};
#define NTASKS ((int)(sizeof tasks / sizeof tasks[0]))

/* Random actions inside the action space, the same for a given (seed, step). */
static void fill_actions(frl_vec_env *v, uint64_t seed, int step)
{
    const frl_space *a = frl_vec_env_action_space(v);
    int64_t w = frl_space_width(a);
    int32_t n = frl_vec_env_num_envs(v);
    float *act = frl_vec_env_actions(v);
    uint64_t x = seed * 0x9e3779b97f4a7c15ULL + (uint64_t)step;
    for (int64_t k = 0; k < w * n; k++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        double u = (double)(x >> 11) * 0x1.0p-53;
        int64_t j = k % w;
        act[k] = (float)(frl_space_low(a)[j] + u * (frl_space_high(a)[j] - frl_space_low(a)[j]));
    }
}

/* obs, rewards and flags of `steps` steps from reset(seed), written to out. */
static void rollout(const char *name, int threads, uint64_t seed, int steps, float *out)
{
    frl_runtime *rt = frl_test_runtime(threads);
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, name, 3, NULL), FRL_OK);
    int64_t w = frl_space_width(frl_vec_env_observation_space(v));
    ck_assert_int_eq(frl_vec_env_reset(v, seed), FRL_OK);
    for (int t = 0; t < steps; t++) {
        fill_actions(v, seed, t);
        ck_assert_msg(frl_vec_env_step(v) == FRL_OK, "%s: %s", name, frl_vec_env_last_error(v));
        for (int i = 0; i < 3; i++) {
            ck_assert(isfinite(frl_vec_env_rewards(v)[i]));
            *out++ = frl_vec_env_rewards(v)[i];
            *out++ = (float)(frl_vec_env_terminated(v)[i] + 2 * frl_vec_env_truncated(v)[i]);
        }
        for (int64_t k = 0; k < 3 * w; k++) {
            ck_assert(isfinite(frl_vec_env_observations(v)[k]));
            *out++ = frl_vec_env_observations(v)[k];
        }
    }
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}

START_TEST(test_task_lists_agree)
{
    char why[256] = "";
    void *h = frl_plugin_open(FRL_MUJOCO_PLUGIN_FILE, "FRL_MUJOCO_PLUGIN", "", why, sizeof why);
    ck_assert_msg(h != NULL, "%s", why);
    const frl_mujoco_plugin *p = frl_plugin_table(h, FRL_MUJOCO_PLUGIN_FILE,
                                                  "FRL_MUJOCO_PLUGIN", FRL_MUJOCO_PLUGIN_SYMBOL,
                                                  FRL_MUJOCO_PLUGIN_ABI, why, sizeof why);
    ck_assert_msg(p != NULL, "%s", why);
    int n = 0;
    for (; p->task_at(n); n++)
        ck_assert_msg(frl_mujoco_is_task(p->task_at(n)), "the core does not know %s",
                      p->task_at(n));
    ck_assert_int_eq(n, NTASKS);
    for (int i = 0; i < NTASKS; i++)
        ck_assert(frl_mujoco_is_task(tasks[i]));
    ck_assert(!frl_mujoco_is_task("CartPole-v1"));
    ck_assert(!frl_mujoco_is_task(NULL));
    ck_assert_ptr_nonnull(strstr(frl_mujoco_describe(), "MuJoCo "));
}
END_TEST

/* Same seed: same results on 1 and 2 threads; another seed: other results. */
START_TEST(test_reproducible)
{
    const char *name = tasks[_i];
    enum { STEPS = 40, MAXW = 3 * (2 + 105) };
    float *a = malloc(sizeof(float) * STEPS * MAXW), *b = malloc(sizeof(float) * STEPS * MAXW);
    float *c = malloc(sizeof(float) * STEPS * MAXW);
    memset(a, 0, sizeof(float) * STEPS * MAXW);
    memset(b, 0, sizeof(float) * STEPS * MAXW);
    memset(c, 0, sizeof(float) * STEPS * MAXW);
    rollout(name, 1, 5, STEPS, a);
    rollout(name, 2, 5, STEPS, b);
    rollout(name, 2, 6, STEPS, c);
    ck_assert_msg(memcmp(a, b, sizeof(float) * STEPS * MAXW) == 0, "%s: threads change it", name);
    ck_assert_msg(memcmp(a, c, sizeof(float) * STEPS * MAXW) != 0, "%s: seed ignored", name);
    free(a);
    free(b);
    free(c);
}
END_TEST

/* Restoring a state twice and stepping the same actions gives the same steps. */
START_TEST(test_state_round_trip)
{
    const char *name = tasks[_i];
    frl_runtime *rt = frl_test_runtime(1);
    frl_env *e = NULL;
    ck_assert_int_eq(frl_env_create(&e, rt, name, NULL), FRL_OK);
    int32_t n = frl_env_state_size(e);
    ck_assert_int_gt(n, 4);
    int64_t ow = frl_space_width(frl_env_observation_space(e));
    float obs[2][110], o2[110], r[2];
    float act[8] = {0.3f, -0.2f, 0.1f, -0.4f, 0.2f, 0.0f, -0.1f, 0.4f};
    double *s = malloc(sizeof(double) * (size_t)n);
    uint8_t term, trunc;
    ck_assert_int_eq(frl_env_reset(e, 9, obs[0]), FRL_OK);
    ck_assert_int_eq(frl_env_step(e, act, obs[0], &r[0], &term, &trunc), FRL_OK);
    ck_assert_int_eq(frl_env_get_state(e, s, n), FRL_OK);
    ck_assert(s[n - 1] == 1.0); /* the elapsed count comes last */
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(frl_env_set_state(e, s, n, o2), FRL_OK);
        ck_assert_int_eq(frl_env_step(e, act, obs[k], &r[k], &term, &trunc), FRL_OK);
    }
    ck_assert(memcmp(obs[0], obs[1], sizeof(float) * (size_t)ow) == 0);
    ck_assert(r[0] == r[1]);
    free(s);
    frl_env_destroy(e);
    frl_runtime_destroy(rt);
}
END_TEST

/* action k of step t: the same in every run, inside [-0.4, 0.4] (within every task's
 * action range) */
static void step_action(float *act, int t)
{
    for (int k = 0; k < 8; k++)
        act[k] = 0.4f * sinf(0.7f * (float)t + 1.3f * (float)k);
}

/* steps [from, to) of env e with step_action, their observations and rewards in
 * obs[t * ow] and r[t], up to the episode's end; returns the step after the last */
static int steps_of(frl_env *e, int from, int to, int64_t ow, float *obs, float *r)
{
    float act[8];
    uint8_t term = 0, trunc = 0;
    int t = from;
    for (; t < to && !term && !trunc; t++) {
        step_action(act, t);
        ck_assert_int_eq(frl_env_step(e, act, obs + t * ow, &r[t], &term, &trunc), FRL_OK);
    }
    return t;
}

/* A run handed on through get_state and set_state to another env continues exactly as
 * the uninterrupted run does, observations and rewards bit for bit, so a checkpoint
 * resumes a run (Ant's forward reward reads where the torso was before the step, a
 * position the state carries: environments.md). */
START_TEST(test_state_continues_run)
{
    enum { STEPS = 30, HANDOFF = 4, OW = 110 };
    const char *name = tasks[_i];
    frl_runtime *rt = frl_test_runtime(1);
    frl_env *e = NULL, *f = NULL;
    ck_assert_int_eq(frl_env_create(&e, rt, name, NULL), FRL_OK);
    ck_assert_int_eq(frl_env_create(&f, rt, name, NULL), FRL_OK);
    int32_t n = frl_env_state_size(e);
    int64_t ow = frl_space_width(frl_env_observation_space(e));
    ck_assert_int_le(ow, OW);
    static float want[STEPS * OW], got[STEPS * OW];
    float rw[STEPS], rg[STEPS], o[OW];
    double *s = malloc(sizeof(double) * (size_t)n);
    ck_assert_int_eq(frl_env_reset(e, 9, o), FRL_OK);
    int end = steps_of(e, 0, STEPS, ow, want, rw);
    ck_assert_msg(end > HANDOFF + 1, "%s: the episode ended at step %d", name, end);
    ck_assert_int_eq(frl_env_reset(e, 9, o), FRL_OK);
    steps_of(e, 0, HANDOFF, ow, got, rg);
    ck_assert_int_eq(frl_env_get_state(e, s, n), FRL_OK);
    ck_assert_int_eq(frl_env_reset(f, 77, o), FRL_OK);
    steps_of(f, 0, 3, ow, got, rg); /* f's own past must not matter */
    ck_assert_int_eq(frl_env_set_state(f, s, n, o), FRL_OK);
    ck_assert_int_eq(steps_of(f, HANDOFF, STEPS, ow, got, rg), end);
    for (int t = HANDOFF; t < end; t++) {
        ck_assert_msg(rg[t] == rw[t], "%s step %d: reward %.9g, uninterrupted %.9g", name, t,
                      (double)rg[t], (double)rw[t]);
        ck_assert_msg(memcmp(got + t * ow, want + t * ow, sizeof(float) * (size_t)ow) == 0,
                      "%s step %d: observations differ", name, t);
    }
    free(s);
    frl_env_destroy(e);
    frl_env_destroy(f);
    frl_runtime_destroy(rt);
}
END_TEST

/* A randomising env's state carries its episode's model: another env of the same
 * settings, reset from another seed, steps on from it exactly as the first one does. */
START_TEST(test_randomised_state_moves)
{
    const char *name = tasks[_i];
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg = frl_test_settings("env.randomize_mass=0.4 env.randomize_friction=0.4 "
                                        "env.randomize_damping=0.4");
    frl_env *e = NULL, *f = NULL, *plain = NULL;
    ck_assert_int_eq(frl_env_create(&e, rt, name, cfg), FRL_OK);
    ck_assert_int_eq(frl_env_create(&f, rt, name, cfg), FRL_OK);
    ck_assert_int_eq(frl_env_create(&plain, rt, name, NULL), FRL_OK);
    int32_t n = frl_env_state_size(e);
    ck_assert_int_eq(n, frl_env_state_size(plain) + 2); /* the seed's two halves */
    float obs[2][110], r[2];
    float act[8] = {0.3f, -0.2f, 0.1f, -0.4f, 0.2f, 0.0f, -0.1f, 0.4f};
    double *s = malloc(sizeof(double) * (size_t)n);
    uint8_t term, trunc;
    ck_assert_int_eq(frl_env_reset(e, 9, obs[0]), FRL_OK);
    ck_assert_int_eq(frl_env_reset(f, 10, obs[1]), FRL_OK);
    ck_assert_int_eq(frl_env_step(e, act, obs[0], &r[0], &term, &trunc), FRL_OK);
    ck_assert_int_eq(frl_env_get_state(e, s, n), FRL_OK);
    /* both from the state (after set_state MuJoCo's derived quantities are the state's
     * own, which Ant's first reward reads: environments.md) */
    ck_assert_int_eq(frl_env_set_state(e, s, n, obs[0]), FRL_OK);
    ck_assert_int_eq(frl_env_set_state(f, s, n, obs[1]), FRL_OK);
    for (int t = 0; t < 5; t++) {
        ck_assert_int_eq(frl_env_step(e, act, obs[0], &r[0], &term, &trunc), FRL_OK);
        ck_assert_int_eq(frl_env_step(f, act, obs[1], &r[1], &term, &trunc), FRL_OK);
        int64_t ow = frl_space_width(frl_env_observation_space(e));
        ck_assert_msg(memcmp(obs[0], obs[1], sizeof(float) * (size_t)ow) == 0, "%s step %d",
                      name, t);
        ck_assert(r[0] == r[1]);
    }
    /* a seed half that is not a 32-bit integer: refused, named */
    s[n - 2] = 0.5;
    ck_assert_int_eq(frl_env_set_state(f, s, n, obs[1]), FRL_ERR_CALLBACK);
    ck_assert_msg(strstr(frl_env_last_error(f), "randomisation seed"), "%s",
                  frl_env_last_error(f));
    free(s);
    frl_env_destroy(e);
    frl_env_destroy(f);
    frl_env_destroy(plain);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(test_bad_input)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_env *e = NULL;
    ck_assert_int_eq(frl_env_create(&e, rt, "Hopper-v5", NULL), FRL_OK);
    int32_t n = frl_env_state_size(e);
    double s[64];
    float obs[16], r;
    uint8_t term, trunc;
    ck_assert_int_eq(frl_env_reset(e, 1, obs), FRL_OK);
    ck_assert_int_eq(frl_env_get_state(e, s, n), FRL_OK);
    ck_assert_int_eq(frl_env_set_state(e, s, n - 1, obs), FRL_ERR_SIZE);
    s[3] = NAN;
    ck_assert_int_eq(frl_env_set_state(e, s, n, obs), FRL_ERR_NONFINITE);
    float act[3] = {0, NAN, 0};
    ck_assert_int_eq(frl_env_step(e, act, obs, &r, &term, &trunc), FRL_ERR_NONFINITE);
    ck_assert_ptr_nonnull(strstr(frl_env_last_error(e), "NaN"));
    frl_env_destroy(e);
    /* A name that is not a task, and one that only looks like one. */
    ck_assert_int_eq(frl_env_create(&e, rt, "Hopper-v4", NULL), FRL_ERR_UNKNOWN_NAME);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "MuJoCo"));
    frl_runtime_destroy(rt);
}
END_TEST

/* A finite state whose observation is not (Hopper's height 1e39, beyond float32) is
 * refused as a built-in's is, and the env keeps its state and observation: it was taken,
 * and the batch held infinity for the policy. */
START_TEST(test_state_observed_nonfinite)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_env *e = NULL;
    ck_assert_int_eq(frl_env_create(&e, rt, "Hopper-v5", NULL), FRL_OK);
    int32_t n = frl_env_state_size(e);
    double s[64], kept[64], now[64];
    float obs[16], after[16];
    ck_assert_int_eq(frl_env_reset(e, 1, obs), FRL_OK);
    ck_assert_int_eq(frl_env_get_state(e, kept, n), FRL_OK);
    memcpy(s, kept, sizeof(double) * (size_t)n);
    s[1 + 1] = 1e39; /* after time: qpos[1], the torso's height, observed unclipped */
    ck_assert_int_eq(frl_env_set_state(e, s, n, after), FRL_ERR_NONFINITE);
    ck_assert_msg(strstr(frl_env_last_error(e), "infinity in obs[0]"), "%s",
                  frl_env_last_error(e));
    ck_assert_int_eq(frl_env_get_state(e, now, n), FRL_OK);
    ck_assert(memcmp(now, kept, sizeof(double) * (size_t)n) == 0);
    ck_assert_int_eq(frl_env_set_state(e, kept, n, after), FRL_OK);
    ck_assert(memcmp(after, obs, sizeof obs[0] * 11) == 0);
    frl_env_destroy(e);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- a simulation that blows up ---- */

START_TEST(test_unstable_simulation)
{
    log_capture cap = {.lock = PTHREAD_MUTEX_INITIALIZER};
    frl_runtime *rt = capturing_runtime(&cap);
    ck_assert_ptr_nonnull(rt);
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "Hopper-v5", 2, NULL), FRL_OK);
    ck_assert_int_eq(frl_vec_env_reset(v, 3), FRL_OK);
    double s[64];
    char err[FRL_ERRMSG_SIZE];
    int32_t n = v->state_dim + 1;
    /* Env 1's velocities (after time and Hopper's 6 positions) far beyond what the
     * integrator survives. */
    ck_assert_int_eq(frl_vec_env_get_state_at(v, 1, s, n, err), FRL_OK);
    for (int k = 1 + 6; k < 1 + 12; k++)
        s[k] = 1e300;
    ck_assert_int_eq(frl_vec_env_set_state_at(v, 1, s, n, err), FRL_OK);
    memset(frl_vec_env_actions(v), 0, sizeof(float) * 6);
    ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
    ck_assert_int_eq(frl_vec_env_truncated(v)[1], 1);
    ck_assert(frl_vec_env_rewards(v)[1] == 0.0f);
    ck_assert_int_eq(frl_vec_env_truncated(v)[0], 0);
    ck_assert_int_eq(cap.warnings, 1);
    ck_assert_msg(strstr(cap.text, "env 1 step 1") && strstr(cap.text, "Hopper-v5") &&
                  strstr(cap.text, "MuJoCo"), "log: %s", cap.text);
    /* The run goes on: the next step resets env 1. */
    ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
    ck_assert_int_eq(frl_vec_env_reset_steps(v)[1], 1);
    for (int k = 0; k < 2 * 11; k++)
        ck_assert(isfinite(frl_vec_env_observations(v)[k]));
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- every library allocation of a create failing in turn ---- */

typedef struct failing {
    pthread_mutex_t lock;
    long calls, fail_at, live;
} failing;

static void *failing_alloc(void *user, size_t size, size_t alignment)
{
    failing *f = user;
    pthread_mutex_lock(&f->lock);
    long n = ++f->calls;
    int fail = n == f->fail_at;
    f->live += !fail;
    pthread_mutex_unlock(&f->lock);
    void *p = NULL;
    if (!fail && posix_memalign(&p, alignment < sizeof(void *) ? sizeof(void *) : alignment,
                                size ? size : 1) != 0)
        p = NULL;
    return p;
}

static void failing_free(void *user, void *p)
{
    failing *f = user;
    pthread_mutex_lock(&f->lock);
    f->live--;
    pthread_mutex_unlock(&f->lock);
    free(p);
}

START_TEST(test_allocation_failures)
{
    int failed_creates = 0;
    for (long k = 1;; k++) {
        failing f = {.lock = PTHREAD_MUTEX_INITIALIZER};
        frl_allocator al;
        frl_allocator_init(&al);
        al.alloc = failing_alloc;
        al.free = failing_free;
        al.user = &f;
        frl_runtime *rt = NULL;
        if (frl_runtime_create(&rt, NULL, &al, NULL) != FRL_OK) {
            ck_assert_int_eq(f.live, 0);
            continue;
        }
        f.fail_at = f.calls + (k > f.calls ? k - f.calls : 1);
        frl_vec_env *v = NULL;
        frl_status st = frl_vec_env_create(&v, rt, "Ant-v5", 4, NULL);
        if (st == FRL_OK) {
            frl_vec_env_destroy(v);
            frl_runtime_destroy(rt);
            ck_assert_int_eq(f.live, 0);
            break;
        }
        ck_assert_int_eq(st, FRL_ERR_NOMEM);
        ck_assert_ptr_null(v);
        failed_creates++;
        frl_runtime_destroy(rt);
        ck_assert_int_eq(f.live, 0);
        ck_assert_int_lt(k, 200);
    }
    ck_assert_int_gt(failed_creates, 2);
}
END_TEST

/* ---- checkpoints: a resumed run continues exactly ---- */

static frl_trainer *small_trainer(frl_runtime *rt, frl_vec_env *v)
{
    frl_config *cfg = frl_test_settings("train.num_envs=4 train.rollout=64 train.epochs=1 "
                                        "train.minibatches=2 train.anneal_lr=false");
    frl_trainer *t = NULL;
    frl_status st = v ? frl_trainer_create_vec(&t, rt, v, cfg)
                      : frl_trainer_create(&t, rt, "Hopper-v5", cfg);
    ck_assert_msg(st == FRL_OK, "%s", frl_last_error());
    frl_config_destroy(cfg);
    return t;
}

START_TEST(test_checkpoint_resume)
{
    frl_runtime *rt = frl_test_runtime(2);
    char path[] = "/tmp/frl_test_mujoco_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    frl_trainer *t = small_trainer(rt, NULL);
    ck_assert_int_eq(frl_trainer_train(t, 512), FRL_OK);
    ck_assert_msg(frl_trainer_save(t, path) == FRL_OK, "%s", frl_trainer_last_error(t));
    ck_assert_int_eq(frl_trainer_train(t, 1536), FRL_OK);
    frl_metrics want = *frl_trainer_metrics(t);
    frl_trainer_destroy(t);
    /* By name, as `fastrl train --resume` does. */
    ck_assert_msg(frl_trainer_load(&t, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(frl_trainer_train(t, 1536), FRL_OK);
    ck_assert(frl_trainer_metrics(t)->mean_return == want.mean_return);
    ck_assert(frl_trainer_metrics(t)->policy_loss == want.policy_loss);
    frl_trainer_destroy(t);
    /* On a vec env of the task that the host made. */
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "Hopper-v5", 4, NULL), FRL_OK);
    ck_assert_msg(frl_trainer_load_vec(&t, rt, path, v, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(frl_trainer_train(t, 1536), FRL_OK);
    ck_assert(frl_trainer_metrics(t)->mean_return == want.mean_return);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    /* Another task's vec env is refused, naming both. */
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "Walker2d-v5", 4, NULL), FRL_OK);
    ck_assert_int_eq(frl_trainer_load_vec(&t, rt, path, v, NULL), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "Walker2d-v5"));
    frl_vec_env_destroy(v);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* The plugin writes its own messages: in a host's decimal-comma locale (a game engine
 * that called setlocale(LC_ALL, "")) a refused seed half read "state[9] = 0,5". The
 * locale is made with localedef in a temporary folder where the system lacks it. */
static int comma_locale(void)
{
    if (setlocale(LC_NUMERIC, "de_DE.UTF-8"))
        return 1;
    char dir[] = "/tmp/frl_test_mujoco_XXXXXX", cmd[256];
    if (!mkdtemp(dir))
        return 0;
    snprintf(cmd, sizeof cmd, "localedef -i de_DE -f UTF-8 %s/de_DE.UTF-8 >/dev/null 2>&1",
             dir);
    int made = system(cmd) == 0;
    if (made) {
        setenv("LOCPATH", dir, 1);
        made = setlocale(LC_NUMERIC, "de_DE.UTF-8") != NULL;
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir); /* glibc has loaded what it needs */
    if (system(cmd) != 0)
        printf("test_mujoco: could not remove %s\n", dir);
    return made;
}

START_TEST(test_messages_in_c_locale)
{
    if (!comma_locale()) {
        printf("test_messages_in_c_locale: not run: no de_DE.UTF-8 locale and localedef "
               "cannot make one\n");
        return;
    }
    ck_assert_str_eq(localeconv()->decimal_point, ",");
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg = frl_test_settings("env.randomize_mass=0.4"); /* a seed in the state */
    frl_env *e = NULL;
    ck_assert_int_eq(frl_env_create(&e, rt, "Hopper-v5", cfg), FRL_OK);
    int32_t n = frl_env_state_size(e);
    double *s = malloc(sizeof(double) * (size_t)n);
    float obs[16];
    ck_assert_int_eq(frl_env_reset(e, 1, obs), FRL_OK);
    ck_assert_int_eq(frl_env_get_state(e, s, n), FRL_OK);
    s[n - 2] = 0.5;
    ck_assert_int_eq(frl_env_set_state(e, s, n, obs), FRL_ERR_CALLBACK);
    ck_assert_msg(strstr(frl_env_last_error(e), "= 0.5 is not half"), "%s",
                  frl_env_last_error(e));
    ck_assert_str_eq(localeconv()->decimal_point, ","); /* the host's locale kept */
    setlocale(LC_NUMERIC, "C");
    free(s);
    frl_env_destroy(e);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

static Suite *mujoco_suite(void)
{
    Suite *s = suite_create("mujoco");
    TCase *tc = tcase_create("tasks");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_task_lists_agree);
    tcase_add_loop_test(tc, test_reproducible, 0, NTASKS);
    tcase_add_loop_test(tc, test_state_round_trip, 0, NTASKS);
    tcase_add_loop_test(tc, test_state_continues_run, 0, NTASKS);
    tcase_add_loop_test(tc, test_randomised_state_moves, 0, NTASKS);
    tcase_add_test(tc, test_bad_input);
    tcase_add_test(tc, test_state_observed_nonfinite);
    tcase_add_test(tc, test_unstable_simulation);
    tcase_add_test(tc, test_allocation_failures);
    tcase_add_test(tc, test_checkpoint_resume);
    tcase_add_test(tc, test_messages_in_c_locale);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    frl_runtime *rt = NULL;
    frl_vec_env *v = NULL;
    if (frl_runtime_create(&rt, NULL, NULL, NULL) != FRL_OK)
        return EXIT_FAILURE;
    frl_status st = frl_vec_env_create(&v, rt, "Hopper-v5", 1, NULL);
    if (st != FRL_OK) {
        printf("mujoco: SKIP: %s\n", frl_last_error());
        frl_runtime_destroy(rt);
        return st == FRL_ERR_UNSUPPORTED ? EXIT_SKIP : EXIT_FAILURE;
    }
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
    return frl_test_run(mujoco_suite());
}
