/* Trainers on host vec envs through the public API: train.num_envs against the vec
 * env's size, checkpoints of per-env callbacks with state (saved through get_state,
 * continued with frl_trainer_load_vec exactly as an uninterrupted run), the refusals
 * for hosts without state, batch worlds and async trainers, and the checks
 * frl_trainer_load_vec makes before it touches the vec env. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

/* ---- a host env with state: a walker on a line ---- */

/* Position and velocity are the whole simulator; the action pushes left or right. The
 * velocity carries over between steps, so an env restored without its state would
 * diverge from the uninterrupted run at once. */
typedef struct walker {
    double x, v;
    int fail_get, fail_set; /* make get_state / set_state return -7 */
    int fail_step;          /* make step return -7 */
    int huge, huge_steps;   /* reward FLT_MAX a step and end the episode every 2 steps */
    int sets, resets;       /* set_state and reset calls */
    int stale, stale_steps; /* steps taken while stale: set by a test, cleared by reset */
    struct saver *saver;    /* the next step waits while another thread saves */
    frl_trainer *train_in_get; /* get_state trains this trainer (the save holds it) */
    frl_status get_train_st;
} walker;

/* A save from another thread, made while the training thread is inside a step. */
typedef struct saver {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stage;              /* 1: a step waits; 2: the save returned */
    frl_trainer *t;
    const char *path;
    frl_status st;
    frl_status (*call)(frl_trainer *t, const char *path); /* NULL: frl_trainer_save */
    char msg[512]; /* the saving thread's last error after the call */
} saver;

static void saver_wait(saver *s, int stage)
{
    pthread_mutex_lock(&s->lock);
    while (s->stage < stage)
        pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

static void saver_move(saver *s, int stage)
{
    pthread_mutex_lock(&s->lock);
    s->stage = stage;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

static void *saver_thread(void *arg)
{
    saver *s = arg;
    saver_wait(s, 1);
    s->st = s->call ? s->call(s->t, s->path) : frl_trainer_save(s->t, s->path);
    snprintf(s->msg, sizeof s->msg, "%s", frl_last_error());
    saver_move(s, 2);
    return NULL;
}

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void observe(const walker *w, float *obs)
{
    obs[0] = (float)w->x;
    obs[1] = (float)w->v;
}

static int walker_reset(void *user, uint64_t seed, float *obs)
{
    walker *w = user;
    w->resets++;
    w->stale = 0;
    w->x = (double)(mix(seed) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    w->v = 0;
    observe(w, obs);
    return 0;
}

static int walker_step(void *user, const void *action, float *obs, float *reward,
                       uint8_t *terminated, uint8_t *truncated)
{
    walker *w = user;
    if (w->fail_step)
        return -7;
    if (w->saver) {
        saver_move(w->saver, 1);
        saver_wait(w->saver, 2);
        w->saver = NULL;
    }
    w->stale_steps += w->stale;
    w->v = 0.9 * w->v + (*(const int32_t *)action ? 0.03 : -0.03);
    w->x += w->v;
    *reward = w->huge ? FLT_MAX : (float)(1.0 - fabs(w->x));
    *terminated = fabs(w->x) > 1.5 || (w->huge && ++w->huge_steps % 2 == 0);
    *truncated = 0;
    observe(w, obs);
    return 0;
}

static int walker_get(void *user, double *state)
{
    walker *w = user;
    if (w->train_in_get) {
        w->get_train_st = frl_trainer_train(w->train_in_get, 1 << 20);
        w->train_in_get = NULL;
    }
    state[0] = w->x;
    state[1] = w->fail_get == 2 ? NAN : w->v;
    return w->fail_get == 1 ? -7 : 0;
}

static int walker_set(void *user, const double *state)
{
    walker *w = user;
    w->sets++;
    if (w->fail_set)
        return -7;
    w->x = state[0];
    w->v = state[1];
    return 0;
}

enum { WALKERS = 6 };

static frl_runtime *runtime(int threads)
{
    frl_config *cfg = frl_test_settings("runtime.seed=7");
    frl_runtime *rt;
    ck_assert_int_eq(frl_config_set_int(cfg, "runtime.threads", threads), FRL_OK);
    ck_assert_int_eq(frl_runtime_create(&rt, cfg, NULL, NULL), FRL_OK);
    frl_config_destroy(cfg);
    return rt;
}

/* n walkers over w[0..n) with obs_dim observations, `actions` discrete actions and
 * state_size state values (2 is the walker's own; other sizes are for mismatches). */
static frl_vec_env *walkers_shaped(frl_runtime *rt, walker *w, int n, int64_t obs_dim,
                                   int64_t actions, int32_t state_size)
{
    frl_space *os, *as;
    ck_assert_int_eq(frl_space_create_box(&os, NULL, 1, &obs_dim, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, actions), FRL_OK);
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = walker_reset;
    cb.step = walker_step;
    if (state_size > 0) {
        cb.state_size = state_size;
        cb.get_state = walker_get;
        cb.set_state = walker_set;
    }
    void *users[16];
    for (int i = 0; i < n; i++)
        users[i] = &w[i];
    frl_config *cfg = frl_test_settings("env.max_episode_steps=40");
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, n, os, as, cfg), FRL_OK);
    frl_config_destroy(cfg);
    frl_space_destroy(os);
    frl_space_destroy(as);
    return v;
}

static frl_vec_env *walkers(frl_runtime *rt, walker *w, int n, int with_state)
{
    return walkers_shaped(rt, w, n, 2, 2, with_state ? 2 : 0);
}

static int zero_reset(void *user, int32_t n, const uint64_t *seeds, float *obs)
{
    (void)user;
    (void)seeds;
    memset(obs, 0, sizeof(float) * 2 * (size_t)n);
    return 0;
}

static int zero_step(void *user, int32_t n, const void *actions, const uint8_t *mask,
                     const uint64_t *seeds, float *obs, float *rew, uint8_t *term, uint8_t *trunc)
{
    (void)user;
    (void)actions;
    (void)mask;
    (void)seeds;
    memset(obs, 0, sizeof(float) * 2 * (size_t)n);
    memset(rew, 0, sizeof(float) * (size_t)n);
    memset(term, 0, (size_t)n);
    memset(trunc, 0, (size_t)n);
    return 0;
}

/* A batch world of n agents with the walkers' spaces. */
static frl_vec_env *batch_world(frl_runtime *rt, int n)
{
    int64_t two = 2;
    frl_space *os, *as;
    ck_assert_int_eq(frl_space_create_box(&os, NULL, 1, &two, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 2), FRL_OK);
    frl_batch_env_callbacks cb;
    frl_batch_env_callbacks_init(&cb);
    cb.reset = zero_reset;
    cb.step = zero_step;
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create_batch(&v, rt, &cb, NULL, n, os, as, NULL), FRL_OK);
    frl_space_destroy(os);
    frl_space_destroy(as);
    return v;
}

static const char *small = "train.rollout=32 train.minibatches=4 policy.hidden=16,16";

static frl_trainer *trainer_on(frl_runtime *rt, frl_vec_env *v, const char *text)
{
    frl_config *cfg = frl_test_settings(text);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create_vec(&t, rt, v, cfg), FRL_OK);
    frl_config_destroy(cfg);
    return t;
}

/* A fingerprint of the policy: log-probs and values on fixed observations. */
static void fingerprint(frl_trainer *t, float *out)
{
    frl_policy *p = frl_trainer_policy(t);
    int64_t w = frl_space_width(frl_policy_observation_space(p));
    float obs[64 * 4];
    int32_t act[64];
    for (int i = 0; i < 64 * w; i++)
        obs[i] = (float)((i * 13) % 17) * 0.05f - 0.4f;
    frl_act_args a;
    frl_act_args_init(&a);
    frl_test_act_widths(&a, p);
    a.batch = 64;
    a.observations = obs;
    a.actions = act;
    a.log_probs = out;
    a.values = out + 64;
    ck_assert_int_eq(frl_policy_act(p, &a), FRL_OK);
}

static int stop_at_update(void *user, const frl_metrics *m)
{
    frl_trainer **t = user;
    if (m->update == 5)
        frl_trainer_request_stop(*t);
    return 0;
}

static void temp_path(char *path, size_t size, const char *what)
{
    snprintf(path, size, "/tmp/frl_test_trainer_host_%s_%d.frl", what, (int)getpid());
}

/* Train walkers to update 5, save them to path, and destroy everything but the file. */
static void save_walkers_at_update_5(const char *path, int64_t total)
{
    frl_runtime *rt = runtime(2);
    walker w[WALKERS];
    memset(w, 0, sizeof w);
    frl_vec_env *v = walkers(rt, w, WALKERS, 1);
    frl_trainer *t = trainer_on(rt, v, small);
    frl_trainer_set_callback(t, stop_at_update, &t);
    ck_assert_int_eq(frl_trainer_train(t, total), FRL_ERR_INTERRUPTED);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}

/* ---- defect 2: train.num_envs against the host vec env's size ---- */

START_TEST(num_envs_set_to_another_size_is_refused)
{
    frl_runtime *rt = runtime(1);
    walker w[WALKERS];
    memset(w, 0, sizeof w);
    frl_vec_env *v = walkers(rt, w, WALKERS, 1);
    frl_config *cfg = frl_test_settings("train.num_envs=8");
    frl_trainer *t = (frl_trainer *)1;
    ck_assert_int_eq(frl_trainer_create_vec(&t, rt, v, cfg), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(frl_last_error(), "train.num_envs=8") &&
                      strstr(frl_last_error(), "6 envs"),
                  "message: %s", frl_last_error());
    frl_config_destroy(cfg);
    /* The same size, or none, is the vec env's. */
    t = trainer_on(rt, v, "train.num_envs=6 train.rollout=8 train.minibatches=2");
    ck_assert_int_eq(frl_ring_envs(frl_trainer_ring(t)), WALKERS);
    frl_trainer_destroy(t);
    t = trainer_on(rt, v, "train.rollout=8 train.minibatches=2");
    ck_assert_int_eq(frl_ring_envs(frl_trainer_ring(t)), WALKERS);
    frl_trainer_destroy(t);
    /* A built-in's defaults (CartPole: 16 envs) are not the caller's setting. */
    frl_vec_env *cart;
    ck_assert_int_eq(frl_vec_env_create(&cart, rt, "CartPole-v1", 4, NULL), FRL_OK);
    t = trainer_on(rt, cart, "train.rollout=8 train.minibatches=2");
    ck_assert_int_eq(frl_ring_envs(frl_trainer_ring(t)), 4);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(cart);
    /* Several vec envs: the setting is their sum. */
    walker w2[3];
    memset(w2, 0, sizeof w2);
    frl_vec_env *g[2] = {walkers(rt, w2, 3, 1), v};
    cfg = frl_test_settings("sampler.mode=async train.num_envs=4 train.rollout=8 "
                            "train.minibatches=2");
    ck_assert_int_eq(frl_trainer_create_vecs(&t, rt, g, 2, cfg), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(frl_last_error(), "train.num_envs=4") &&
                      strstr(frl_last_error(), "9 envs"),
                  "message: %s", frl_last_error());
    ck_assert_int_eq(frl_config_set_int(cfg, "train.num_envs", 9), FRL_OK);
    ck_assert_int_eq(frl_trainer_create_vecs(&t, rt, g, 2, cfg), FRL_OK);
    ck_assert_int_eq(frl_ring_envs(frl_trainer_ring(t)), 9);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_vec_env_destroy(g[0]);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- defect 3: checkpoints of per-env callbacks with state ---- */

START_TEST(host_state_resume_continues_exactly)
{
    enum { TOTAL = WALKERS * 32 * 12 };
    /* The uninterrupted run. */
    frl_runtime *rt = runtime(2);
    walker wa[WALKERS];
    memset(wa, 0, sizeof wa);
    frl_vec_env *va = walkers(rt, wa, WALKERS, 1);
    frl_trainer *t = trainer_on(rt, va, small);
    ck_assert_int_eq(frl_trainer_train(t, TOTAL), FRL_OK);
    float whole[128];
    fingerprint(t, whole);
    frl_metrics mw = *frl_trainer_metrics(t);
    ck_assert_int_gt(mw.episodes, 0);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(va);
    frl_runtime_destroy(rt);

    /* Stopped at update 5, saved, everything destroyed; continued on fresh walkers
     * (with other values, so only set_state can make them right) on one thread. */
    char path[160];
    temp_path(path, sizeof path, "resume");
    save_walkers_at_update_5(path, TOTAL);
    rt = runtime(1);
    walker wb[WALKERS];
    for (int i = 0; i < WALKERS; i++)
        wb[i] = (walker){.x = 123.0 + i, .v = -4.0};
    frl_vec_env *vb = walkers(rt, wb, WALKERS, 1);
    t = (frl_trainer *)1;
    ck_assert_int_eq(frl_trainer_load_vec(&t, rt, path, vb, NULL), FRL_OK);
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 5);
    ck_assert_ptr_eq(frl_trainer_vec_env(t), vb);
    ck_assert_int_eq(frl_trainer_train(t, TOTAL), FRL_OK);
    float resumed[128];
    fingerprint(t, resumed);
    const frl_metrics *mr = frl_trainer_metrics(t);
    ck_assert(memcmp(whole, resumed, sizeof whole) == 0);
    ck_assert_int_eq(mr->update, mw.update);
    ck_assert_int_eq(mr->env_steps, mw.env_steps);
    ck_assert_int_eq(mr->episodes, mw.episodes);
    ck_assert(mr->mean_return == mw.mean_return && mr->mean_length == mw.mean_length);
    ck_assert(mr->policy_loss == mw.policy_loss && mr->value_loss == mw.value_loss);
    /* The hosts' simulators end where the uninterrupted run's did. */
    for (int i = 0; i < WALKERS; i++)
        ck_assert_msg(wb[i].x == wa[i].x && wb[i].v == wa[i].v, "walker %d: %g %g, want %g %g",
                      i, wb[i].x, wb[i].v, wa[i].x, wa[i].v);
    /* The checkpoint of a host run still loads as a policy. */
    frl_policy *p;
    ck_assert_int_eq(frl_policy_load(&p, rt, path), FRL_OK);
    frl_policy_destroy(p);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(vb);
    frl_runtime_destroy(rt);
    unlink(path);
}
END_TEST

/* The file at path is the one saved before: size and first bytes. */
static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

START_TEST(save_refusals_say_why)
{
    char path[160];
    temp_path(path, sizeof path, "refused");
    unlink(path);
    frl_runtime *rt = runtime(2);
    /* Per-env callbacks without state. */
    walker w[WALKERS];
    memset(w, 0, sizeof w);
    frl_vec_env *v = walkers(rt, w, WALKERS, 0);
    frl_trainer *t = trainer_on(rt, v, small);
    ck_assert_int_eq(frl_trainer_train(t, WALKERS * 32), FRL_OK);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(frl_last_error(), "state_size") && strstr(frl_last_error(), "get_state") &&
                      strstr(frl_last_error(), "frl_policy_save"),
                  "message: %s", frl_last_error());
    ck_assert_ptr_nonnull(strstr(frl_trainer_last_error(t), "state_size"));
    ck_assert_int_ne(access(path, F_OK), 0);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    /* A batch world. */
    v = batch_world(rt, 4);
    t = trainer_on(rt, v, "train.rollout=16 train.minibatches=2 policy.hidden=8");
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(frl_last_error(), "batch") && strstr(frl_last_error(), "frl_policy_save"),
                  "message: %s", frl_last_error());
    ck_assert_int_ne(access(path, F_OK), 0);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    /* A get_state callback that fails: its error, and the file saved before stays. */
    v = walkers(rt, w, WALKERS, 1);
    t = trainer_on(rt, v, small);
    ck_assert_int_eq(frl_trainer_train(t, WALKERS * 32), FRL_OK);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    long before = file_size(path);
    w[3].fail_get = 1;
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_ERR_CALLBACK);
    ck_assert_msg(strstr(frl_last_error(), "env 3") && strstr(frl_last_error(), "get_state") &&
                      strstr(frl_last_error(), "-7"),
                  "message: %s", frl_last_error());
    ck_assert_int_eq(file_size(path), before);
    /* One that writes NaN: set_state would refuse it, so the save does. */
    w[3].fail_get = 2;
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_ERR_NONFINITE);
    ck_assert_msg(strstr(frl_last_error(), "env 3") && strstr(frl_last_error(), "state[1]"),
                  "message: %s", frl_last_error());
    ck_assert_int_eq(file_size(path), before);
    w[3].fail_get = 0;
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    /* An async trainer on savable envs saves, and the file continues on the host's vec
     * env (the envs' states through set_state). */
    v = walkers(rt, w, WALKERS, 1);
    t = trainer_on(rt, v, "sampler.mode=async train.rollout=8 train.minibatches=2 "
                          "policy.hidden=8");
    ck_assert_int_eq(frl_trainer_train(t, WALKERS * 8 * 3), FRL_OK);
    ck_assert_msg(frl_trainer_save(t, path) == FRL_OK, "%s", frl_last_error());
    int64_t saved_steps = frl_trainer_metrics(t)->env_steps;
    frl_trainer_destroy(t);
    ck_assert_msg(frl_trainer_load_vec(&t, rt, path, v, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(frl_trainer_metrics(t)->env_steps, saved_steps);
    ck_assert_int_eq(frl_trainer_train(t, saved_steps + WALKERS * 8 * 3), FRL_OK);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
    unlink(path);
}
END_TEST

/* load_vec refuses with want, the message holding a and b, creates nothing and leaves
 * the walkers' simulators alone. */
static void refused(frl_runtime *rt, const char *path, frl_vec_env *v, const frl_config *cfg,
                    frl_status want, const char *a, const char *b)
{
    frl_trainer *t = (frl_trainer *)1;
    ck_assert_int_eq(frl_trainer_load_vec(&t, rt, path, v, cfg), want);
    ck_assert_ptr_null(t);
    const char *m = frl_last_error();
    ck_assert_msg(strncmp(m, "frl_trainer_load_vec: ", 22) == 0 && strstr(m, a) &&
                      (!b || strstr(m, b)),
                  "message: %s (want '%s' and '%s')", m, a, b ? b : "");
}

/* An async run saved after a step failed resets every env when loaded: the failed
 * group's observations may be the bad ones, and the file cannot say which group failed.
 * In the process that saw the failure, only that group resets. */
START_TEST(async_save_after_a_failed_step_resets_on_load)
{
    char path[160];
    temp_path(path, sizeof path, "failed_step");
    frl_runtime *rt = runtime(2);
    walker w[WALKERS] = {{0}};
    frl_vec_env *v = walkers(rt, w, WALKERS, 1);
    frl_trainer *t = trainer_on(rt, v, "sampler.mode=async sampler.groups=2 train.rollout=8 "
                                       "train.minibatches=2 policy.hidden=8");
    ck_assert_int_eq(frl_trainer_train(t, WALKERS * 8 * 3), FRL_OK);
    w[0].fail_step = 1;
    ck_assert_int_eq(frl_trainer_train(t, WALKERS * 8 * 6), FRL_ERR_CALLBACK);
    w[0].fail_step = 0;
    ck_assert_msg(frl_trainer_save(t, path) == FRL_OK, "%s", frl_last_error());
    int before[WALKERS];
    for (int i = 0; i < WALKERS; i++)
        before[i] = w[i].resets;
    /* this process: the failed group (walkers 0-2) resets, the other steps on */
    ck_assert_int_eq(frl_trainer_train(t, frl_trainer_metrics(t)->env_steps + WALKERS * 8),
                     FRL_OK);
    ck_assert_int_gt(w[0].resets, before[0]);
    frl_trainer_destroy(t);
    /* a loaded run: every env resets before it steps (stepping on from the restored
     * state would act on what the failed step may have left) */
    ck_assert_msg(frl_trainer_load_vec(&t, rt, path, v, NULL) == FRL_OK, "%s", frl_last_error());
    for (int i = 0; i < WALKERS; i++)
        w[i].stale = 1;
    ck_assert_int_eq(frl_trainer_train(t, frl_trainer_metrics(t)->env_steps + WALKERS * 8),
                     FRL_OK);
    for (int i = 0; i < WALKERS; i++)
        ck_assert_msg(w[i].stale_steps == 0, "walker %d stepped on after the load", i);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
    unlink(path);
}
END_TEST

START_TEST(load_vec_checks_the_vec_env_first)
{
    char path[160];
    temp_path(path, sizeof path, "checks");
    save_walkers_at_update_5(path, WALKERS * 32 * 12);
    frl_runtime *rt = runtime(2);
    walker w[16];
    for (int i = 0; i < 16; i++)
        w[i] = (walker){.x = 50.0, .v = 1.0};
    frl_vec_env *v;

    v = walkers(rt, w, WALKERS, 1);
    frl_trainer *t = (frl_trainer *)1;
    ck_assert_int_eq(frl_trainer_load_vec(NULL, rt, path, v, NULL), FRL_ERR_NULL);
    ck_assert_int_eq(frl_trainer_load_vec(&t, NULL, path, v, NULL), FRL_ERR_NULL);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(frl_trainer_load_vec(&t, rt, NULL, v, NULL), FRL_ERR_NULL);
    ck_assert_int_eq(frl_trainer_load_vec(&t, rt, path, NULL, NULL), FRL_ERR_NULL);
    refused(rt, "/nonexistent/ckpt.frl", v, NULL, FRL_ERR_IO, "/nonexistent/ckpt.frl", NULL);
    frl_config *cfg = frl_test_settings("train.num_envs=5");
    refused(rt, path, v, cfg, FRL_ERR_INVALID_ARGUMENT, "train.num_envs=5", "6 envs");
    frl_config_destroy(cfg);
    frl_runtime *other = runtime(1);
    frl_vec_env *vo = walkers(other, w, WALKERS, 1);
    refused(rt, path, vo, NULL, FRL_ERR_INVALID_ARGUMENT, "another runtime", NULL);
    frl_vec_env_destroy(vo);
    frl_runtime_destroy(other);
    frl_vec_env_destroy(v);

    /* Vec envs that do not fit the run: their sizes, spaces and state named. */
    v = walkers(rt, w, 4, 1);
    refused(rt, path, v, NULL, FRL_ERR_SIZE, "6 envs", "4");
    frl_vec_env_destroy(v);
    v = walkers_shaped(rt, w, WALKERS, 3, 2, 2);
    refused(rt, path, v, NULL, FRL_ERR_SIZE, "box[2]", "box[3]");
    frl_vec_env_destroy(v);
    v = walkers_shaped(rt, w, WALKERS, 2, 3, 2);
    refused(rt, path, v, NULL, FRL_ERR_SIZE, "discrete(2)", "discrete(3)");
    frl_vec_env_destroy(v);
    v = walkers_shaped(rt, w, WALKERS, 2, 2, 3);
    refused(rt, path, v, NULL, FRL_ERR_SIZE, "state_size 2", "3");
    frl_vec_env_destroy(v);
    v = walkers(rt, w, WALKERS, 0);
    refused(rt, path, v, NULL, FRL_ERR_SIZE, "state_size 2", "0");
    frl_vec_env_destroy(v);
    v = batch_world(rt, WALKERS);
    refused(rt, path, v, NULL, FRL_ERR_INVALID_ARGUMENT, "batch", NULL);
    frl_vec_env_destroy(v);
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "CartPole-v1", WALKERS, NULL), FRL_OK);
    refused(rt, path, v, NULL, FRL_ERR_INVALID_ARGUMENT, "host", "CartPole-v1");
    frl_vec_env_destroy(v);
    for (int i = 0; i < 16; i++)
        ck_assert(w[i].x == 50.0 && w[i].v == 1.0 && w[i].sets == 0);

    /* frl_trainer_load cannot make the host's envs: it says which function can. */
    ck_assert_int_eq(frl_trainer_load(&t, rt, path, NULL), FRL_ERR_UNKNOWN_NAME);
    ck_assert_msg(strstr(frl_last_error(), "frl_trainer_load_vec"), "message: %s",
                  frl_last_error());

    /* A set_state that fails: its error, no trainer, and the vec env wants a reset. */
    v = walkers(rt, w, WALKERS, 1);
    w[2].fail_set = 1;
    refused(rt, path, v, NULL, FRL_ERR_CALLBACK, "env 2", "set_state");
    ck_assert_int_eq(frl_vec_env_step(v), FRL_ERR_STATE);
    w[2].fail_set = 0;
    ck_assert_int_eq(frl_trainer_load_vec(&t, rt, path, v, NULL), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, WALKERS * 32 * 6), FRL_OK);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
    unlink(path);
}
END_TEST

/* A built-in's checkpoint continues on a vec env of that built-in as through
 * frl_trainer_load, and is refused on another (both ids named). */
START_TEST(load_vec_of_a_builtin)
{
    enum { TOTAL = 8 * 32 * 8 };
    char path[160];
    temp_path(path, sizeof path, "builtin");
    frl_runtime *rt = runtime(2);
    frl_config *cfg = frl_test_settings("train.num_envs=8 train.rollout=32 policy.hidden=16,16");
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    frl_config_destroy(cfg);
    frl_trainer_set_callback(t, stop_at_update, &t);
    ck_assert_int_eq(frl_trainer_train(t, TOTAL), FRL_ERR_INTERRUPTED);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);

    float a[128], b[128];
    ck_assert_int_eq(frl_trainer_load(&t, rt, path, NULL), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, TOTAL), FRL_OK);
    fingerprint(t, a);
    frl_trainer_destroy(t);
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "CartPole-v1", 8, NULL), FRL_OK);
    ck_assert_int_eq(frl_trainer_load_vec(&t, rt, path, v, NULL), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, TOTAL), FRL_OK);
    fingerprint(t, b);
    ck_assert(memcmp(a, b, sizeof a) == 0);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);

    ck_assert_int_eq(frl_vec_env_create(&v, rt, "Acrobot-v1", 8, NULL), FRL_OK);
    refused(rt, path, v, NULL, FRL_ERR_INVALID_ARGUMENT, "CartPole-v1", "Acrobot-v1");
    frl_vec_env_destroy(v);
    walker w[8];
    memset(w, 0, sizeof w);
    v = walkers_shaped(rt, w, 8, 4, 2, 2);
    refused(rt, path, v, NULL, FRL_ERR_INVALID_ARGUMENT, "CartPole-v1", "host");
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
    unlink(path);
}
END_TEST

/* Finite rewards can still make an episode's return overflow a float (two steps of
 * FLT_MAX here). The episode window held infinity, which frl_trainer_load refuses, so
 * the save refused to write the run at all (it once wrote the file over the good one);
 * the vec env now reports such a return as FLT_MAX, and the run saves and loads.
 * (DQN with learning_starts beyond the run, so no update diverges on such rewards.) */
START_TEST(save_keeps_a_window_of_huge_returns)
{
    char path[160];
    temp_path(path, sizeof path, "window");
    frl_runtime *rt = runtime(1);
    walker w[WALKERS];
    memset(w, 0, sizeof w);
    frl_vec_env *v = walkers(rt, w, WALKERS, 1);
    frl_trainer *t = trainer_on(rt, v, "train.algo=dqn train.learning_starts=100000 "
                                       "train.train_freq=4 policy.hidden=16,16");
    ck_assert_int_eq(frl_trainer_train(t, WALKERS * 8), FRL_OK);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    struct stat before;
    ck_assert_int_eq(stat(path, &before), 0);
    for (int i = 0; i < WALKERS; i++)
        w[i].huge = 1;
    ck_assert_int_eq(frl_trainer_train(t, WALKERS * 16), FRL_OK);
    double mean = frl_trainer_metrics(t)->mean_return;
    ck_assert_msg(isfinite(mean) && mean > 1e37, "mean return %g", mean);
    ck_assert_msg(frl_trainer_save(t, path) == FRL_OK, "%s", frl_trainer_last_error(t));
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    /* The new file replaced the earlier one, and loads. */
    struct stat after;
    ck_assert_int_eq(stat(path, &after), 0);
    ck_assert(after.st_ino != before.st_ino);
    for (int i = 0; i < WALKERS; i++)
        w[i].huge = 0;
    v = walkers(rt, w, WALKERS, 1);
    ck_assert_msg(frl_trainer_load_vec(&t, rt, path, v, NULL) == FRL_OK, "%s", frl_last_error());
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
    unlink(path);
}
END_TEST

static int save_from_callback(void *user, const frl_metrics *m)
{
    saver *s = user;
    (void)m;
    s->st = frl_trainer_save(s->t, s->path);
    return 0;
}

/* A sync trainer saved from another thread while it steps would write the counters and
 * env states of a rollout no update learned from, which no uninterrupted run passes
 * through: refused (it wrote such a file). Its metrics callback still may save. */
START_TEST(save_from_another_thread_mid_rollout_is_refused)
{
    char path[160];
    temp_path(path, sizeof path, "mid_rollout");
    unlink(path);
    frl_runtime *rt = runtime(1);
    walker w[WALKERS];
    memset(w, 0, sizeof w);
    frl_vec_env *v = walkers(rt, w, WALKERS, 1);
    frl_trainer *t = trainer_on(rt, v, small);
    ck_assert_int_eq(frl_trainer_train(t, WALKERS * 32), FRL_OK);
    saver s = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, t, path, FRL_OK, NULL,
               ""};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, saver_thread, &s), 0);
    w[2].saver = &s;
    ck_assert_int_eq(frl_trainer_train(t, WALKERS * 32 * 2), FRL_OK);
    pthread_join(th, NULL);
    ck_assert_int_eq(s.st, FRL_ERR_STATE);
    /* said on the saving thread; the trainer's buffer is the train call's (a refusal
     * written there replaced the message of a train call failing meanwhile) */
    ck_assert_msg(strstr(s.msg, "mid-update"), "%s", s.msg);
    ck_assert_ptr_null(strstr(frl_trainer_last_error(t), "mid-update"));
    ck_assert_int_ne(access(path, F_OK), 0);
    s.st = FRL_ERR_INTERNAL;
    frl_trainer_set_callback(t, save_from_callback, &s);
    ck_assert_int_eq(frl_trainer_train(t, WALKERS * 32 * 3), FRL_OK);
    ck_assert_msg(s.st == FRL_OK, "%s", frl_trainer_last_error(t));
    ck_assert_int_eq(access(path, F_OK), 0);
    /* frl_trainer_set_output likewise: another thread would close the files train is
     * writing. */
    char dir[176];
    snprintf(dir, sizeof dir, "%s.out", path);
    mkdir(dir, 0777);
    saver o = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, t, dir, FRL_OK,
               frl_trainer_set_output, ""};
    frl_trainer_set_callback(t, NULL, NULL);
    ck_assert_int_eq(pthread_create(&th, NULL, saver_thread, &o), 0);
    w[2].saver = &o;
    ck_assert_int_eq(frl_trainer_train(t, WALKERS * 32 * 4), FRL_OK);
    pthread_join(th, NULL);
    ck_assert_int_eq(o.st, FRL_ERR_STATE);
    ck_assert_msg(strstr(o.msg, "writes the outputs"), "%s", o.msg);
    ck_assert_ptr_null(strstr(frl_trainer_last_error(t), "writes the outputs"));
    ck_assert_int_eq(frl_trainer_set_output(t, dir), FRL_OK);
    /* A save holds the trainer: a train call made while it reads the run (here from a
     * get_state callback; another thread alike) is refused, not stepping the envs under
     * it, and the file is the run as it was. */
    int64_t steps = frl_trainer_metrics(t)->env_steps;
    w[1].train_in_get = t;
    w[1].get_train_st = FRL_OK;
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    ck_assert_int_eq(w[1].get_train_st, FRL_ERR_STATE);
    ck_assert_int_eq(frl_trainer_metrics(t)->env_steps, steps);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
    unlink(path);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trainer_host");
    TCase *tc = tcase_create("trainer_host");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, num_envs_set_to_another_size_is_refused);
    tcase_add_test(tc, host_state_resume_continues_exactly);
    tcase_add_test(tc, save_refusals_say_why);
    tcase_add_test(tc, load_vec_checks_the_vec_env_first);
    tcase_add_test(tc, async_save_after_a_failed_step_resets_on_load);
    tcase_add_test(tc, load_vec_of_a_builtin);
    tcase_add_test(tc, save_from_another_thread_mid_rollout_is_refused);
    tcase_add_test(tc, save_keeps_a_window_of_huge_returns);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
