/* The asynchronous sampler (sampler.mode=async) through the public API: it trains,
 * reports lag, honours max_lag, runs host batch callbacks one at a time from library
 * threads, carries a callback's failure to the caller and goes on after it, and
 * survives 1,000 stops at random moments with no slot lost or leaked. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"
#include "test_watchdog.h"

static frl_runtime *runtime(int threads)
{
    frl_config *cfg;
    frl_runtime *rt;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "runtime.threads", threads), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "runtime.seed", 3), FRL_OK);
    ck_assert_int_eq(frl_runtime_create(&rt, cfg, NULL, NULL), FRL_OK);
    frl_config_destroy(cfg);
    return rt;
}

static const char *small = "sampler.mode=async train.num_envs=8 train.rollout=16 "
                           "policy.hidden=16";

/* Every slot is free, being written or ready: none is left being read. */
static void check_ring(frl_trainer *t)
{
    frl_ring *r = frl_trainer_ring(t);
    for (int32_t s = 0; s < frl_ring_slots(r); s++)
        ck_assert_int_ne(frl_ring_slot_state(r, s), FRL_SLOT_READING);
}

/* ---- a host world: agents walk a line; the batch callback can be slow or fail ---- */

typedef struct world {
    float pos[64];
    atomic_int inside;      /* calls running now */
    atomic_int overlapped;  /* a call started while another ran */
    atomic_long calls;
    long fail_at, nan_at;   /* call number that fails / returns NaN (0: never) */
    int huge;               /* rewards of 3e38: the returns overflow, an update diverges */
    int delay_us;
    pthread_t caller;
    atomic_int off_caller;  /* calls made on a thread other than train's */
    uint64_t reset_seed[8]; /* the first env's seed of each reset call */
    int resets;
} world;

static int world_reset(void *user, int32_t n, const uint64_t *seeds, float *obs)
{
    world *w = user;
    if (w->resets < 8)
        w->reset_seed[w->resets++] = seeds[0];
    for (int32_t i = 0; i < n; i++) {
        w->pos[i] = (float)(seeds[i] % 5) * 0.1f;
        obs[i] = w->pos[i];
    }
    return 0;
}

static void busy_wait_us(int us)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static int world_step(void *user, int32_t n, const void *actions, const uint8_t *reset_mask,
                      const uint64_t *seeds, float *obs, float *rewards, uint8_t *term,
                      uint8_t *trunc)
{
    world *w = user;
    if (atomic_fetch_add(&w->inside, 1) != 0)
        atomic_store(&w->overlapped, 1);
    if (!pthread_equal(pthread_self(), w->caller))
        atomic_store(&w->off_caller, 1);
    long call = atomic_fetch_add(&w->calls, 1) + 1;
    busy_wait_us(w->delay_us);
    const int32_t *a = actions;
    for (int32_t i = 0; i < n; i++) {
        if (reset_mask[i]) {
            w->pos[i] = (float)(seeds[i] % 5) * 0.1f;
        } else {
            w->pos[i] += a[i] ? 0.1f : -0.1f;
        }
        term[i] = w->pos[i] >= 1.0f || w->pos[i] <= -1.0f;
        rewards[i] = w->huge ? 3e38f : w->pos[i] >= 1.0f ? 1.0f : 0.0f;
        trunc[i] = 0;
        obs[i] = w->pos[i];
    }
    if (call == w->nan_at)
        obs[0] = 0.0f / 0.0f;
    atomic_fetch_sub(&w->inside, 1);
    return call == w->fail_at ? 7 : 0;
}

static frl_vec_env *world_env(frl_runtime *rt, world *w, int32_t n)
{
    frl_space *obs, *act;
    float lo = -2, hi = 2;
    int64_t shape = 1;
    ck_assert_int_eq(frl_space_create_box(&obs, NULL, 1, &shape, &lo, &hi), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&act, NULL, 2), FRL_OK);
    frl_batch_env_callbacks cb;
    frl_batch_env_callbacks_init(&cb);
    cb.reset = world_reset;
    cb.step = world_step;
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create_batch(&v, rt, &cb, w, n, obs, act, NULL), FRL_OK);
    frl_space_destroy(obs);
    frl_space_destroy(act);
    return v;
}

/* ---- tests ---- */

START_TEST(async_trains_and_reports_lag)
{
    frl_runtime *rt = runtime(2);
    frl_config *cfg = frl_test_settings(small);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 8 * 16 * 40), FRL_OK);
    const frl_metrics *m = frl_trainer_metrics(t);
    /* The budget is counted in rollouts learned (or dropped), as in sync mode. */
    ck_assert_int_eq(m->update, 40);
    ck_assert_int_ge(m->env_steps, 8 * 16 * 40);
    ck_assert(m->policy_lag_mean >= 0 && m->policy_lag_mean <= m->policy_lag_max);
    /* Two slots: a rollout is at most one being learned plus the one written behind. */
    ck_assert(m->policy_lag_max <= 3);
    ck_assert_int_eq(m->slots_dropped, 0);
    ck_assert_uint_eq(frl_policy_version(frl_trainer_policy(t)), 40);
    check_ring(t);
    /* A second call continues to a larger total. */
    ck_assert_int_eq(frl_trainer_train(t, 8 * 16 * 50), FRL_OK);
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 50);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* Learning slowly (a sleeping callback) lets sampling run ahead; no rollout learned may
 * lag more than max_lag, and every rollout is learned or counted as dropped. */
static int slow_check_lag(void *user, const frl_metrics *m)
{
    int64_t *max_lag = user;
    ck_assert(m->policy_lag_max <= (double)*max_lag);
    usleep(2000);
    return 0;
}

START_TEST(async_max_lag_drops_and_counts)
{
    frl_runtime *rt = runtime(2);
    frl_config *cfg = frl_test_settings("sampler.mode=async train.num_envs=8 train.rollout=8 "
                               "policy.hidden=16 sampler.slots=6 sampler.max_lag=1");
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    int64_t max_lag = 1;
    frl_trainer_set_callback(t, slow_check_lag, &max_lag);
    ck_assert_int_eq(frl_trainer_train(t, 8 * 8 * 60), FRL_OK);
    const frl_metrics *m = frl_trainer_metrics(t);
    ck_assert_int_eq(m->update + m->slots_dropped, 60);
    printf("max_lag=1, 6 slots, slow learner: %lld learned, %lld dropped\n",
           (long long)m->update, (long long)m->slots_dropped);
    check_ring(t);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* The first update's callback holds the learner until the sampler has filled every
 * slot: those rollouts were acted on by version 1 or older, so the third of them lags
 * by 2 when its turn comes and max_lag=1 drops it (no timing: a wait for the ring). */
static int fill_ring_once(void *user, const frl_metrics *m)
{
    frl_trainer *t = user;
    if (m->update != 1)
        return 0;
    frl_ring *r = frl_trainer_ring(t);
    for (int i = 0; i < 60000; i++) {
        int free_slots = 0;
        for (int32_t s = 0; s < frl_ring_slots(r); s++)
            free_slots += frl_ring_slot_state(r, s) == FRL_SLOT_FREE;
        if (free_slots == 0)
            return 0;
        usleep(1000);
    }
    return 1; /* the sampler never filled the ring */
}

/* A checkpoint keeps the rollouts dropped for lag: they count toward the budget, so the
 * continued run ends where the uninterrupted one would (it learned the dropped ones
 * again, as extra updates, and reported slots_dropped from 0). */
START_TEST(async_resume_keeps_dropped_rollouts)
{
    frl_runtime *rt = runtime(2);
    char path[] = "/tmp/frl_async_drop_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    frl_config *cfg = frl_test_settings("sampler.mode=async train.num_envs=8 train.rollout=8 "
                                        "policy.hidden=16 sampler.slots=6 sampler.max_lag=1");
    frl_trainer *t, *b;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    frl_trainer_set_callback(t, fill_ring_once, t);
    int64_t total = 8 * 8 * 20;
    ck_assert_msg(frl_trainer_train(t, total) == FRL_OK, "%s", frl_trainer_last_error(t));
    const frl_metrics *m = frl_trainer_metrics(t);
    ck_assert_int_ge(m->slots_dropped, 1);
    ck_assert_int_eq(m->update + m->slots_dropped, 20);
    ck_assert_msg(frl_trainer_save(t, path) == FRL_OK, "%s", frl_last_error());
    ck_assert_msg(frl_trainer_load(&b, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    const frl_metrics *mb = frl_trainer_metrics(b);
    ck_assert_int_eq(mb->slots_dropped, m->slots_dropped);
    ck_assert_msg(frl_trainer_train(b, total) == FRL_OK, "%s", frl_trainer_last_error(b));
    ck_assert_int_eq(mb->update, m->update);
    ck_assert_int_eq(mb->env_steps, m->env_steps);
    /* and on: every further rollout is learned or dropped, counted from the file's */
    ck_assert_msg(frl_trainer_train(b, total + 8 * 8 * 5) == FRL_OK, "%s",
                  frl_trainer_last_error(b));
    ck_assert_int_eq(mb->update + mb->slots_dropped, 25);
    check_ring(b);
    frl_trainer_destroy(b);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* A stop requested from the callback of the budget's last update. */
static int stop_at_update(void *user, const frl_metrics *m)
{
    const int64_t *at = user;
    if (m->update == *at)
        frl_trainer_request_stop((frl_trainer *)(uintptr_t)at[1]);
    return 0;
}

/* A stop requested during the last update of the budget does not interrupt the call,
 * as in sync mode (the flag is read only before an update would start, and none does):
 * the call returns FRL_OK, and the request does not carry over. */
START_TEST(async_stop_in_last_update_is_not_an_interruption)
{
    frl_runtime *rt = runtime(2);
    const char *const modes[] = {small, "train.num_envs=8 train.rollout=16 policy.hidden=16"};
    for (int i = 0; i < 2; i++) {
        frl_config *cfg = frl_test_settings(modes[i]);
        frl_trainer *t;
        ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
        int64_t at[2] = {5, (int64_t)(uintptr_t)t};
        frl_trainer_set_callback(t, stop_at_update, at);
        frl_status st = frl_trainer_train(t, 8 * 16 * 5);
        ck_assert_msg(st == FRL_OK, "%s: %s", modes[i], frl_trainer_last_error(t));
        ck_assert_int_eq(frl_trainer_metrics(t)->update, 5);
        ck_assert_int_eq(frl_trainer_train(t, 8 * 16 * 6), FRL_OK);
        ck_assert_int_eq(frl_trainer_metrics(t)->update, 6);
        frl_trainer_destroy(t);
        frl_config_destroy(cfg);
    }
    frl_runtime_destroy(rt);
}
END_TEST

static frl_trainer *world_trainer(frl_runtime *rt, world *w, frl_vec_env **v, int groups,
                                  const char *extra)
{
    for (int g = 0; g < groups; g++) {
        w[g].caller = pthread_self();
        v[g] = world_env(rt, &w[g], 8);
    }
    char text[256];
    snprintf(text, sizeof text, "sampler.mode=async train.rollout=8 policy.hidden=8 %s", extra);
    frl_config *cfg = frl_test_settings(text);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create_vecs(&t, rt, v, groups, cfg), FRL_OK);
    frl_config_destroy(cfg);
    return t;
}

/* A run on several of the host's vec envs has no call that continues it (frl_trainer_load
 * rebuilds built-ins, frl_trainer_load_vec takes one vec env): its save is refused, naming
 * why, and writes nothing. It once wrote a file that both loads refused, each sending
 * the caller to the other. One vec env still saves. */
START_TEST(save_over_several_host_vecs_refused)
{
    frl_runtime *rt = runtime(2);
    frl_vec_env *v[2];
    for (int g = 0; g < 2; g++)
        ck_assert_int_eq(frl_vec_env_create(&v[g], rt, "CartPole-v1", 4, NULL), FRL_OK);
    frl_config *cfg = frl_test_settings("sampler.mode=async train.rollout=8 policy.hidden=8");
    char path[] = "/tmp/frl_async_vecs_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    unlink(path);
    for (int count = 2; count >= 1; count--) {
        frl_trainer *t;
        ck_assert_int_eq(frl_trainer_create_vecs(&t, rt, v, count, cfg), FRL_OK);
        ck_assert_int_eq(frl_trainer_train(t, 256), FRL_OK);
        frl_status st = frl_trainer_save(t, path);
        if (count == 2) {
            ck_assert_int_eq(st, FRL_ERR_UNSUPPORTED);
            ck_assert_msg(strstr(frl_last_error(), "frl_trainer_create_vecs") &&
                              strstr(frl_last_error(), "nothing is written"),
                          "%s", frl_last_error());
            ck_assert_int_ne(access(path, F_OK), 0);
        } else {
            ck_assert_msg(st == FRL_OK, "%s", frl_trainer_last_error(t));
            frl_trainer *u;
            ck_assert_msg(frl_trainer_load(&u, rt, path, NULL) == FRL_OK, "%s",
                          frl_last_error());
            frl_trainer_destroy(u);
        }
        frl_trainer_destroy(t);
    }
    unlink(path);
    frl_config_destroy(cfg);
    for (int g = 0; g < 2; g++)
        frl_vec_env_destroy(v[g]);
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(async_batch_callbacks_never_overlap)
{
    frl_runtime *rt = runtime(2);
    world w[2];
    memset(w, 0, sizeof w);
    w[0].delay_us = w[1].delay_us = 50;
    frl_vec_env *v[2];
    frl_trainer *t = world_trainer(rt, w, v, 2, "");
    ck_assert_int_eq(frl_trainer_train(t, 16 * 8 * 20), FRL_OK);
    /* The two groups share one serial "engine": never two batch calls at once. */
    ck_assert_int_eq(atomic_load(&w[0].overlapped) | atomic_load(&w[1].overlapped), 0);
    long calls = atomic_load(&w[0].calls) + atomic_load(&w[1].calls);
    ck_assert_int_ge(calls, 2 * 8 * 20);
    printf("batch callbacks: %ld calls, some off the caller's thread: %d\n", calls,
           atomic_load(&w[0].off_caller) | atomic_load(&w[1].off_caller));
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v[0]);
    frl_vec_env_destroy(v[1]);
    frl_runtime_destroy(rt);
}
END_TEST

/* A failing callback stops the run with its error; the run goes on when called again. */
static void failure_then_continue(long fail_at, long nan_at, frl_status want, const char *text)
{
    frl_runtime *rt = runtime(2);
    world w[2];
    memset(w, 0, sizeof w);
    w[1].fail_at = fail_at;
    w[1].nan_at = nan_at;
    frl_vec_env *v[2];
    frl_trainer *t = world_trainer(rt, w, v, 2, "");
    ck_assert_int_eq(frl_trainer_train(t, 16 * 8 * 20), want);
    ck_assert_ptr_nonnull(strstr(frl_trainer_last_error(t), text));
    ck_assert_ptr_nonnull(strstr(frl_last_error(), text));
    /* which group: each numbers its envs from 0, and the message said "env 0" alone */
    ck_assert_msg(strstr(frl_last_error(), "env group 1 (venvs[1]): "), "%s", frl_last_error());
    check_ring(t);
    /* The rollouts being written were given back: the next call fills fresh ones. */
    ck_assert_int_eq(frl_trainer_train(t, 16 * 8 * 20), FRL_OK);
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 20);
    check_ring(t);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v[0]);
    frl_vec_env_destroy(v[1]);
    frl_runtime_destroy(rt);
}

START_TEST(async_callback_failure_reaches_caller)
{
    failure_then_continue(30, 0, FRL_ERR_CALLBACK, "batch step callback returned 7");
}
END_TEST

START_TEST(async_callback_nan_reaches_caller)
{
    failure_then_continue(0, 45, FRL_ERR_NONFINITE, "NaN in obs[0]");
}
END_TEST

/* A group whose step fails again before any rollout was committed since its last
 * restart is reset from fresh streams again: the restarts' seeds never repeat (they
 * were made from the committed count alone, so a group failing twice in a row was
 * reset twice into the same episodes). */
START_TEST(async_restarts_never_repeat_seeds)
{
    frl_runtime *rt = runtime(2);
    world w[2];
    memset(w, 0, sizeof w);
    w[1].fail_at = 1; /* the group's very first step fails */
    frl_vec_env *v[2];
    frl_trainer *t = world_trainer(rt, w, v, 2, "");
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(frl_trainer_train(t, 16 * 8 * 20), FRL_ERR_CALLBACK);
        ck_assert_int_eq(frl_trainer_metrics(t)->update, 0);
        w[1].fail_at = atomic_load(&w[1].calls) + 1; /* and the next one too */
    }
    /* The first reset and two restarts of group 1, each from other streams. */
    ck_assert_int_eq(w[1].resets, 3);
    for (int a = 0; a < w[1].resets; a++)
        for (int b = 0; b < a; b++)
            ck_assert_msg(w[1].reset_seed[a] != w[1].reset_seed[b], "resets %d and %d of "
                          "group 1 drew the same seed", b, a);
    check_ring(t);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v[0]);
    frl_vec_env_destroy(v[1]);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- 1,000 stops at random moments ---- */

typedef struct stopper {
    frl_trainer *t;
    int delay_us;
} stopper;

static void *stop_later(void *arg)
{
    stopper *s = arg;
    usleep((useconds_t)s->delay_us);
    frl_trainer_request_stop(s->t);
    return NULL;
}

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return *x >> 33;
}

/* `iterations` train calls of a trainer of `settings` on 2 threads, most stopped at a
 * random moment within max_delay_us, now and then destroyed and made again; every call
 * returns OK or INTERRUPTED with the ring consistent, and the last trainer still trains
 * to a budget. A budget is `unit` steps times 1..40. */
static void random_stops(const char *settings, int iterations, int max_delay_us, int64_t unit)
{
    frl_runtime *rt = runtime(2);
    frl_config *cfg = frl_test_settings(settings);
    uint64_t x = 12345;
    int interrupted = 0, finished = 0;
    frl_trainer *t = NULL;
    for (int i = 0; i < iterations; i++) {
        /* Now and then start over: destroying a paused trainer must free everything. */
        if (!t || lcg(&x) % 50 == 0) {
            frl_trainer_destroy(t);
            ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
        }
        /* One call in 8 has no stop at all, so some reach their budget even where
         * the machine (or a sanitizer) is slow. */
        int with_stop = lcg(&x) % 8 != 0;
        stopper s = {t, (int)(lcg(&x) % (uint64_t)max_delay_us)};
        pthread_t th;
        if (with_stop)
            ck_assert_int_eq(pthread_create(&th, NULL, stop_later, &s), 0);
        int64_t total = frl_trainer_metrics(t)->env_steps + unit * (int64_t)(1 + lcg(&x) % 40);
        frl_status st = frl_trainer_train(t, total);
        ck_assert(st == FRL_OK || st == FRL_ERR_INTERRUPTED);
        interrupted += st == FRL_ERR_INTERRUPTED;
        finished += st == FRL_OK;
        if (with_stop)
            pthread_join(th, NULL);
        check_ring(t);
    }
    printf("[%s] %d random stops: %d interrupted, %d finished their budget\n", settings,
           iterations, interrupted, finished);
    ck_assert_int_gt(interrupted, 0);
    ck_assert_int_gt(finished, 0);
    /* Nothing was lost on the way: the last trainer still trains to a budget. */
    frl_test_trains_on(t, unit * 20);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}

START_TEST(async_thousand_random_stops)
{
    /* TSan checks every access of each stop: 300 of them there (30 s of its suite for
     * 1,000); the other builds make 1,000 */
    random_stops("sampler.mode=async train.num_envs=4 train.rollout=4 policy.hidden=8 "
                 "sampler.slots=3", FRL_TEST_TSAN ? 300 : 1000, 1500, 16);
}
END_TEST

/* Groups of 512 envs infer in pieces of 256 rows on 2 threads (several tasks a step):
 * stops land between a group's pieces too. (40 under TSan, 12 s for 100 there.) */
START_TEST(async_pieces_random_stops)
{
    random_stops("sampler.mode=async train.num_envs=1024 train.rollout=2 policy.hidden=8",
                 FRL_TEST_TSAN ? 40 : 100, 3000, 2048);
}
END_TEST

/* ---- bad input ---- */

START_TEST(async_bad_input)
{
    frl_runtime *rt = runtime(2);
    frl_trainer *t;
    frl_config *cfg = frl_test_settings("sampler.mode=async train.num_envs=2 sampler.groups=3");
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_ERR_RANGE);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "sampler.groups 3"));
    frl_config_destroy(cfg);
    /* Left at its default (2), sampler.groups follows a single env down to one group. */
    cfg = frl_test_settings("sampler.mode=async train.num_envs=1 train.rollout=8");
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 64), FRL_OK);
    /* A ring slot the host holds is refused, not waited for (it would be forever);
     * once it is handed back, training goes on. */
    frl_ring *ring = frl_trainer_ring(t);
    int32_t slot;
    ck_assert_int_eq(frl_ring_acquire_write(ring, &slot), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 128), FRL_ERR_STATE);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "held outside the trainer"));
    ck_assert_int_eq(frl_ring_commit(ring, slot), FRL_OK);
    ck_assert_int_eq(frl_ring_acquire_read(ring, &slot), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 128), FRL_ERR_STATE);
    ck_assert_int_eq(frl_ring_release(ring, slot), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 128), FRL_OK);
    /* A slot the host committed is refused too: the learner took it as the oldest
     * rollout, and one of the trainer's stayed ready for good. */
    ck_assert_int_eq(frl_ring_acquire_write(ring, &slot), FRL_OK);
    ck_assert_int_eq(frl_ring_commit(ring, slot), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 256), FRL_ERR_STATE);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "committed through frl_trainer_ring"));
    ck_assert_int_eq(frl_ring_acquire_read(ring, &slot), FRL_OK);
    ck_assert_int_eq(frl_ring_release(ring, slot), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 256), FRL_OK);
    check_ring(t);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);

    world w[2];
    memset(w, 0, sizeof w);
    frl_vec_env *v[2] = {world_env(rt, &w[0], 4), world_env(rt, &w[1], 4)};
    cfg = frl_test_settings("sampler.mode=sync");
    ck_assert_int_eq(frl_trainer_create_vecs(&t, rt, v, 2, cfg), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "sampler.mode=async"));
    frl_config_destroy(cfg);
    frl_vec_env *same[2] = {v[0], v[0]};
    ck_assert_int_eq(frl_trainer_create_vecs(&t, rt, same, 2, NULL), FRL_ERR_INVALID_ARGUMENT);
    frl_vec_env *cart;
    ck_assert_int_eq(frl_vec_env_create(&cart, rt, "CartPole-v1", 4, NULL), FRL_OK);
    frl_vec_env *mixed[2] = {v[0], cart};
    ck_assert_int_eq(frl_trainer_create_vecs(&t, rt, mixed, 2, NULL), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "spaces differ"));
    ck_assert_int_eq(frl_trainer_create_vecs(&t, rt, v, 0, NULL), FRL_ERR_RANGE);
    ck_assert_int_eq(frl_trainer_create_vecs(&t, rt, NULL, 2, NULL), FRL_ERR_NULL);
    /* the message names the call made, whatever the count (it said create_vec for 1) */
    ck_assert_str_eq(frl_last_error(), "frl_trainer_create_vecs: venvs is NULL");
    ck_assert_int_eq(frl_trainer_create_vecs(&t, NULL, v, 1, NULL), FRL_ERR_NULL);
    ck_assert_str_eq(frl_last_error(), "frl_trainer_create_vecs: runtime is NULL");
    ck_assert_ptr_null(t);

    frl_vec_env_destroy(cart);
    frl_vec_env_destroy(v[0]);
    frl_vec_env_destroy(v[1]);
    frl_runtime_destroy(rt);
}
END_TEST

/* Q (here: logits) of the policy on a few fixed CartPole observations. */
static void policy_outputs(frl_policy *p, float *out)
{
    float obs[4 * 4];
    int32_t actions[4];
    for (int i = 0; i < 16; i++)
        obs[i] = (float)(0.05 * sin(1.7 * i));
    frl_act_args a;
    frl_act_args_init(&a);
    a.observations = obs;
    a.batch = 4;
    a.observation_width = 4;
    a.action_width = 1;
    a.actions = actions;
    a.outputs = out;
    a.deterministic = 1;
    ck_assert_msg(frl_policy_act(p, &a) == FRL_OK, "%s", frl_last_error());
}

/* An async trainer saves between train calls (every group's envs and the recurrent
 * states) and the file continues in async mode with the same weights and counters; a
 * load that would make another number of groups is refused, naming both. */
START_TEST(async_save_and_resume)
{
    frl_runtime *rt = runtime(2);
    char path[] = "/tmp/frl_async_ckpt_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    frl_config *cfg = frl_test_settings(small);
    frl_trainer *t, *b;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 8 * 16 * 6), FRL_OK);
    ck_assert_msg(frl_trainer_save(t, path) == FRL_OK, "%s", frl_last_error());
    ck_assert_msg(frl_trainer_load(&b, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    const frl_metrics *ma = frl_trainer_metrics(t), *mb = frl_trainer_metrics(b);
    ck_assert_int_eq(ma->env_steps, mb->env_steps);
    ck_assert_int_eq(ma->episodes, mb->episodes);
    float qa[8], qb[8];
    policy_outputs(frl_trainer_policy(t), qa);
    policy_outputs(frl_trainer_policy(b), qb);
    ck_assert_mem_eq(qa, qb, sizeof qa);
    int64_t before = mb->env_steps;
    ck_assert_msg(frl_trainer_train(b, before + 8 * 16 * 4) == FRL_OK, "%s",
                  frl_trainer_last_error(b));
    ck_assert_int_ge(frl_trainer_metrics(b)->env_steps, before + 8 * 16 * 4);
    frl_trainer_destroy(b);
    static const char *const other[] = {"sampler.groups=4", "sampler.mode=sync"};
    for (int i = 0; i < 2; i++) {
        frl_config *over = frl_test_settings(other[i]);
        b = (frl_trainer *)1;
        ck_assert_int_eq(frl_trainer_load(&b, rt, path, over), FRL_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_null(b);
        ck_assert_msg(strstr(frl_last_error(), "saved with 2 env groups"), "%s: %s", other[i],
                      frl_last_error());
        frl_config_destroy(over);
    }
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    /* A sync run's file continues in async mode with one group. */
    cfg = frl_test_settings("train.num_envs=8 train.rollout=16 policy.hidden=16");
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 8 * 16 * 3), FRL_OK);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);
    frl_config *over = frl_test_settings("sampler.mode=async sampler.groups=1");
    ck_assert_msg(frl_trainer_load(&b, rt, path, over) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(frl_trainer_train(b, 8 * 16 * 6), FRL_OK);
    ck_assert_int_eq(frl_trainer_metrics(b)->update, 6);
    frl_trainer_destroy(b);
    frl_config_destroy(over);
    frl_config_destroy(cfg);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* Whether the settings t runs with (its settings.txt) hold the line `line`. */
static int settings_have(frl_trainer *t, const char *line)
{
    char dir[] = "/tmp/frl_async_out_XXXXXX", path[64], text[256], cmd[80];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(frl_trainer_set_output(t, dir), FRL_OK);
    snprintf(path, sizeof path, "%s/settings.txt", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    int found = 0;
    while (fgets(text, sizeof text, f))
        found |= strncmp(text, line, strlen(line)) == 0 && text[strlen(line)] == '\n';
    fclose(f);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    return found;
}

/* Async PPO is decoupled unless train.decoupled says otherwise; a checkpoint sets every
 * key, and its train.decoupled=false (the key's default) made the loaded run plain PPO. */
START_TEST(async_resume_stays_decoupled)
{
    frl_runtime *rt = runtime(2);
    char path[] = "/tmp/frl_async_ckpt_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    frl_config *cfg = frl_test_settings(small);
    frl_trainer *t, *b;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert(settings_have(t, "train.decoupled=true"));
    ck_assert_int_eq(frl_trainer_train(t, 8 * 16 * 2), FRL_OK);
    ck_assert_msg(frl_trainer_save(t, path) == FRL_OK, "%s", frl_last_error());
    ck_assert_msg(frl_trainer_load(&b, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert(settings_have(b, "train.decoupled=true"));
    frl_trainer_destroy(b);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* A save from the metrics callback: a sync trainer is between rollouts then (it saves);
 * an async one's env groups are still stepping, so it is refused, nothing written. */
typedef struct saver {
    frl_trainer *t;
    const char *path;
    frl_status st;
    frl_status policy_st; /* the policy's own save and an act, in either mode */
} saver;

/* The trainer's policy is the learner's, written only on the thread that calls back
 * (async acting reads published copies), so saving it and acting with it are safe from
 * the callback in both modes; TSan watches this test. */
static frl_status use_policy(frl_trainer *t, const char *path)
{
    frl_policy *p = frl_trainer_policy(t);
    char file[80];
    snprintf(file, sizeof file, "%s.policy", path);
    frl_status st = frl_policy_save(p, file);
    unlink(file);
    float obs[4] = {0.01f, 0.0f, -0.02f, 0.0f};
    int32_t action = -1;
    frl_act_args a;
    frl_act_args_init(&a);
    frl_test_act_widths(&a, p);
    a.batch = 1;
    a.observations = obs;
    a.actions = &action;
    a.deterministic = 1;
    if (st == FRL_OK)
        st = frl_policy_act(p, &a);
    return st == FRL_OK && (action == 0 || action == 1) ? FRL_OK : FRL_ERR_INTERNAL;
}

static int save_in_callback(void *user, const frl_metrics *m)
{
    saver *s = user;
    (void)m;
    s->st = frl_trainer_save(s->t, s->path);
    frl_status st = use_policy(s->t, s->path);
    s->policy_st = s->policy_st != FRL_OK ? s->policy_st : st;
    return 0;
}

START_TEST(save_from_the_callback)
{
    frl_runtime *rt = runtime(2);
    char path[64];
    snprintf(path, sizeof path, "/tmp/frl_async_cb_save_%d.frl", (int)getpid());
    const char *const modes[] = {small, "train.num_envs=8 train.rollout=16 policy.hidden=16"};
    for (int i = 0; i < 2; i++) {
        unlink(path);
        frl_config *cfg = frl_test_settings(modes[i]);
        frl_trainer *t;
        ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
        saver s = {t, path, FRL_OK, FRL_OK};
        frl_trainer_set_callback(t, save_in_callback, &s);
        ck_assert_int_eq(frl_trainer_train(t, 8 * 16 * 3), FRL_OK);
        ck_assert_int_eq(s.st, i == 0 ? FRL_ERR_STATE : FRL_OK);
        ck_assert_int_eq(s.policy_st, FRL_OK);
        ck_assert_int_eq(access(path, F_OK) == 0, i == 1);
        frl_trainer_set_callback(t, NULL, NULL);
        ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK); /* after train returned */
        frl_trainer_destroy(t);
        frl_config_destroy(cfg);
    }
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* Minibatches of several shards: idle sampler threads help the learner (the pool's side
 * jobs), which TSan watches here; the run still learns CartPole a little. */
START_TEST(async_helpers_share_the_learner)
{
    frl_runtime *rt = runtime(2);
    frl_config *cfg = frl_test_settings("sampler.mode=async train.num_envs=16 train.rollout=64 "
                               "train.minibatches=2 policy.hidden=32,32");
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 16 * 64 * 30), FRL_OK);
    const frl_metrics *m = frl_trainer_metrics(t);
    ck_assert_int_eq(m->update, 30);
    ck_assert(m->mean_return > 22.0); /* random play averages about 22 */
    check_ring(t);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- several policies in one run ---- */

typedef struct seen {
    int calls;
    pthread_t thread;
    int off_thread;
} seen;

static int count_updates(void *user, const frl_metrics *m)
{
    seen *s = user;
    (void)m;
    s->calls++;
    s->off_thread |= !pthread_equal(pthread_self(), s->thread);
    return 0;
}

/* Three trainers (two CartPole populations members with their own seeds, one Acrobot)
 * share a runtime's threads; each learns with its own policy to its own budget. */
START_TEST(train_many_trains_each_its_own_policy)
{
    frl_runtime *rt = runtime(2);
    const char *text[3] = {"train.seed_offset=1", "train.seed_offset=2", ""};
    const char *env[3] = {"CartPole-v1", "CartPole-v1", "Acrobot-v1"};
    frl_trainer *t[3];
    seen s[3];
    for (int i = 0; i < 3; i++) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s %s", small, text[i]);
        frl_config *cfg = frl_test_settings(buf);
        ck_assert_int_eq(frl_trainer_create(&t[i], rt, env[i], cfg), FRL_OK);
        frl_config_destroy(cfg);
        s[i] = (seen){0, pthread_self(), 0};
        frl_trainer_set_callback(t[i], count_updates, &s[i]);
    }
    ck_assert_int_eq(frl_trainer_train_many(t, 3, 8 * 16 * 30), FRL_OK);
    float w[3][4];
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(frl_trainer_metrics(t[i])->update, 30);
        ck_assert_int_eq(s[i].calls, 30);
        ck_assert_int_eq(s[i].off_thread, 0); /* callbacks on the calling thread */
        ck_assert_uint_eq(frl_policy_version(frl_trainer_policy(t[i])), 30);
        check_ring(t[i]);
        float obs[6] = {0.01f, 0.02f, -0.03f, 0.04f, 0.0f, 0.0f};
        int32_t act;
        frl_act_args a;
        frl_act_args_init(&a);
        frl_test_act_widths(&a, frl_trainer_policy(t[i]));
        a.batch = 1;
        a.observations = obs;
        a.actions = &act;
        a.values = &w[i][0];
        ck_assert_int_eq(frl_policy_act(frl_trainer_policy(t[i]), &a), FRL_OK);
    }
    /* Different seeds: different policies (their values differ). */
    ck_assert(w[0][0] != w[1][0]);
    /* They go on, alone or together. */
    ck_assert_int_eq(frl_trainer_train(t[0], 8 * 16 * 35), FRL_OK);
    ck_assert_int_eq(frl_trainer_train_many(t, 2, 8 * 16 * 40), FRL_OK);
    ck_assert_int_eq(frl_trainer_metrics(t[0])->update, 40);
    ck_assert_int_eq(frl_trainer_metrics(t[1])->update, 40);
    ck_assert_int_eq(frl_trainer_metrics(t[2])->update, 30);
    for (int i = 0; i < 3; i++)
        frl_trainer_destroy(t[i]);
    frl_runtime_destroy(rt);
}
END_TEST

/* A failure in one trainer's envs ends the run with that trainer named. */
START_TEST(train_many_failure_names_the_trainer)
{
    frl_runtime *rt = runtime(2);
    world w[2];
    memset(w, 0, sizeof w);
    w[0].fail_at = 25;
    frl_vec_env *v[2];
    frl_trainer *t[2];
    frl_config *cfg = frl_test_settings(small);
    ck_assert_int_eq(frl_trainer_create(&t[0], rt, "CartPole-v1", cfg), FRL_OK);
    frl_config_destroy(cfg);
    t[1] = world_trainer(rt, w, v, 2, "");
    ck_assert_int_eq(frl_trainer_train_many(t, 2, 16 * 8 * 20), FRL_ERR_CALLBACK);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "trainers[1]: "));
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "batch step callback returned 7"));
    ck_assert_ptr_nonnull(strstr(frl_trainer_last_error(t[1]), "returned 7"));
    ck_assert_int_eq(frl_trainer_train_many(t, 2, 16 * 8 * 20), FRL_OK);
    /* Bad input. */
    frl_trainer *same[2] = {t[0], t[0]};
    ck_assert_int_eq(frl_trainer_train_many(same, 2, 100), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(frl_trainer_train_many(t, 0, 100), FRL_ERR_RANGE);
    ck_assert_int_eq(frl_trainer_train_many(NULL, 2, 100), FRL_ERR_NULL);
    ck_assert_int_eq(frl_trainer_train_many(t, 2, -1), FRL_ERR_RANGE);
    frl_trainer *sync;
    cfg = frl_test_settings("train.num_envs=4");
    ck_assert_int_eq(frl_trainer_create(&sync, rt, "CartPole-v1", cfg), FRL_OK);
    frl_config_destroy(cfg);
    frl_trainer *mixed[2] = {t[0], sync};
    ck_assert_int_eq(frl_trainer_train_many(mixed, 2, 100), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "not an async trainer"));
    frl_runtime *rt2 = runtime(1);
    frl_trainer *other;
    cfg = frl_test_settings(small);
    ck_assert_int_eq(frl_trainer_create(&other, rt2, "CartPole-v1", cfg), FRL_OK);
    frl_config_destroy(cfg);
    frl_trainer *two_rt[2] = {t[0], other};
    ck_assert_int_eq(frl_trainer_train_many(two_rt, 2, 100), FRL_ERR_INVALID_ARGUMENT);
    /* Two trainers on one vec env would step it from two threads at once: the second
     * is refused at creation, so train_many never meets the pair. */
    frl_trainer *twin = (frl_trainer *)1;
    cfg = frl_test_settings("sampler.mode=async train.rollout=8 policy.hidden=8");
    ck_assert_int_eq(frl_trainer_create_vec(&twin, rt, v[1], cfg), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(twin);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "already another trainer's vec env"));
    frl_config_destroy(cfg);
    frl_trainer_destroy(other);
    frl_runtime_destroy(rt2);
    frl_trainer_destroy(sync);
    frl_trainer_destroy(t[0]);
    frl_trainer_destroy(t[1]);
    frl_vec_env_destroy(v[0]);
    frl_vec_env_destroy(v[1]);
    frl_runtime_destroy(rt);
}
END_TEST

/* A trainer whose update diverged (FRL_ERR_NONFINITE) is refused by the next call, alone
 * or with others, before anything steps: it used to act on NaN and report the
 * divergence again, and its partners trained on meanwhile. */
START_TEST(train_many_refuses_a_diverged_trainer)
{
    frl_runtime *rt = runtime(2);
    world w[1];
    memset(w, 0, sizeof w);
    w[0].huge = 1;
    frl_vec_env *v[1];
    frl_trainer *t[2];
    frl_config *cfg = frl_test_settings(small);
    ck_assert_int_eq(frl_trainer_create(&t[0], rt, "CartPole-v1", cfg), FRL_OK);
    frl_config_destroy(cfg);
    t[1] = world_trainer(rt, w, v, 1, "train.gamma=0.99");
    ck_assert_int_eq(frl_trainer_train_many(t, 2, 16 * 8 * 20), FRL_ERR_NONFINITE);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "trainers[1]: "));
    int64_t updates = frl_trainer_metrics(t[0])->update;
    int64_t steps = frl_trainer_metrics(t[1])->env_steps;
    ck_assert_int_eq(frl_trainer_train_many(t, 2, 16 * 8 * 40), FRL_ERR_NONFINITE);
    ck_assert_int_eq(frl_trainer_metrics(t[0])->update, updates);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "trainers[1]: "));
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "has diverged"));
    ck_assert_int_eq(frl_trainer_train(t[1], 16 * 8 * 40), FRL_ERR_NONFINITE);
    ck_assert_int_eq(frl_trainer_metrics(t[1])->env_steps, steps);
    check_ring(t[1]);
    /* The healthy one trains on alone. */
    ck_assert_int_eq(frl_trainer_train(t[0], 16 * 8 * 40), FRL_OK);
    frl_trainer_destroy(t[0]);
    frl_trainer_destroy(t[1]);
    frl_vec_env_destroy(v[0]);
    frl_runtime_destroy(rt);
}
END_TEST

/* A stop request to any member stops them all, and all go on afterwards. */
START_TEST(train_many_stop)
{
    frl_runtime *rt = runtime(2);
    frl_trainer *t[2];
    for (int i = 0; i < 2; i++) {
        frl_config *cfg = frl_test_settings(small);
        ck_assert_int_eq(frl_trainer_create(&t[i], rt, "CartPole-v1", cfg), FRL_OK);
        frl_config_destroy(cfg);
    }
    stopper s = {t[1], 3000};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, stop_later, &s), 0);
    ck_assert_int_eq(frl_trainer_train_many(t, 2, (int64_t)1 << 40), FRL_ERR_INTERRUPTED);
    pthread_join(th, NULL);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "trainers[1]: training stopped by request"));
    int64_t u0 = frl_trainer_metrics(t[0])->update, u1 = frl_trainer_metrics(t[1])->update;
    ck_assert_int_eq(frl_trainer_train_many(t, 2, 8 * 16 * (u0 > u1 ? u0 : u1) + 8 * 16 * 3), FRL_OK);
    frl_trainer_destroy(t[0]);
    frl_trainer_destroy(t[1]);
    frl_runtime_destroy(rt);
}
END_TEST

/* The run ends on the target; the metrics it returns show the return it ended on,
 * although sampling went on after the last update. */
START_TEST(async_target_is_in_the_final_metrics)
{
    frl_runtime *rt = runtime(2);
    frl_config *cfg = frl_test_settings("sampler.mode=async train.target_return=200");
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 2000000), FRL_OK);
    const frl_metrics *m = frl_trainer_metrics(t);
    ck_assert(m->mean_return >= 200);
    ck_assert_int_lt(m->env_steps, 2000000);
    ck_assert_int_eq(m->episodes >= 100, 1);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

static int record_lag(void *user, const frl_metrics *m)
{
    double *worst = user;
    *worst = m->policy_lag_max > *worst ? m->policy_lag_max : *worst;
    return 0;
}

/* A loaded trainer acts on the loaded weights from its first step: the acting buffers
 * were filled at create, and acting on them lagged by every saved update (with
 * sampler.max_lag set, every rollout was dropped and train never ended). */
START_TEST(async_load_acts_on_loaded_weights)
{
    frl_runtime *rt = runtime(2);
    char path[] = "/tmp/frl_async_lag_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    frl_config *cfg = frl_test_settings("sampler.mode=async train.num_envs=8 "
                                        "train.rollout=16 policy.hidden=16 sampler.max_lag=3");
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 8 * 16 * 30), FRL_OK);
    ck_assert_msg(frl_trainer_save(t, path) == FRL_OK, "%s", frl_last_error());
    frl_trainer_destroy(t);
    ck_assert_msg(frl_trainer_load(&t, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    double worst = 0;
    frl_trainer_set_callback(t, record_lag, &worst);
    frl_test_watchdog w;
    frl_test_watchdog_start(&w, t, 30);
    frl_status st = frl_trainer_train(t, 8 * 16 * 40);
    frl_test_watchdog_stop(&w);
    const frl_metrics *m = frl_trainer_metrics(t);
    ck_assert_msg(st == FRL_OK, "%s", frl_trainer_last_error(t));
    ck_assert_int_eq(m->update, 40);
    ck_assert_int_eq(m->slots_dropped, 0);
    ck_assert_msg(worst <= 3, "a rollout after the load lagged %g versions", worst);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

static int stop_at_five(void *user, const frl_metrics *m)
{
    (void)user;
    return m->update >= 5;
}

/* train(INT64_MAX) means "until the target or a stop": the rollout budget is rounded
 * up without overflowing (it wrapped negative, and train returned FRL_OK at once). */
START_TEST(async_train_without_end)
{
    frl_runtime *rt = runtime(2);
    frl_config *cfg = frl_test_settings(small);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    frl_trainer_set_callback(t, stop_at_five, NULL);
    ck_assert_int_eq(frl_trainer_train(t, INT64_MAX), FRL_ERR_CALLBACK);
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 5);
    ck_assert_int_eq(frl_trainer_train(t, INT64_MAX - 100), FRL_ERR_CALLBACK);
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 6);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* One thread: the caller samples and learns in turn, and still finishes. */
START_TEST(async_one_thread)
{
    frl_runtime *rt = runtime(1);
    frl_config *cfg = frl_test_settings(small);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 8 * 16 * 10), FRL_OK);
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 10);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

typedef struct nested_train {
    frl_trainer *t;
    frl_status st;
} nested_train;

static int train_in_task(void *user, int32_t task, int32_t thread)
{
    (void)thread;
    nested_train *n = user;
    if (task == 0)
        n->st = frl_trainer_train(n->t, 8 * 16 * 4);
    return 0;
}

/* Trained from inside a task of its runtime's pool, the async sampler's loops (one per
 * thread at once) would run one inside another on that thread: it hung whenever the
 * task was not on thread 0. Now refused, and the trainer trains outside afterwards. */
START_TEST(async_refuses_training_inside_a_pool_task)
{
    frl_runtime *rt = runtime(2);
    frl_config *cfg = frl_test_settings(small);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    for (int round = 0; round < 8; round++) {
        nested_train n = {t, FRL_OK};
        ck_assert_int_eq(frl_runtime_parallel_for(rt, 2, train_in_task, &n), FRL_OK);
        ck_assert_int_eq(n.st, FRL_ERR_STATE);
        ck_assert_msg(strstr(frl_trainer_last_error(t), "frl_runtime_parallel_for"), "%s",
                      frl_trainer_last_error(t));
    }
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 0);
    ck_assert_int_eq(frl_trainer_train(t, 8 * 16 * 4), FRL_OK);
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 4);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

static int stop_at_once(void *user, const frl_metrics *m)
{
    (void)user, (void)m;
    return 1;
}

/* A ready rollout the host reads through frl_trainer_ring and releases is gone: the
 * next call counts it as lost and trains (it failed with FRL_ERR_INTERNAL, "a committed
 * rollout is missing from the ring", after stepping). */
START_TEST(a_ready_rollout_read_by_the_host)
{
    frl_config *cfg = frl_test_settings("sampler.mode=async train.num_envs=8 sampler.groups=4 "
                                        "train.rollout=8 sampler.slots=8 policy.hidden=8");
    frl_runtime *rt = runtime(2);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    frl_ring *ring = frl_trainer_ring(t);
    int32_t slot = -1;
    for (int k = 0; k < 50 && slot < 0; k++) { /* until a call leaves a rollout ready */
        frl_trainer_set_callback(t, stop_at_once, NULL);
        ck_assert_int_eq(frl_trainer_train(t, 1000000), FRL_ERR_CALLBACK);
        if (frl_ring_acquire_read(ring, &slot) != FRL_OK)
            slot = -1;
    }
    ck_assert_int_ge(slot, 0);
    ck_assert_int_eq(frl_ring_release(ring, slot), FRL_OK);
    frl_trainer_set_callback(t, NULL, NULL);
    int64_t updates = frl_trainer_metrics(t)->update;
    frl_status st = frl_trainer_train(t, frl_trainer_metrics(t)->env_steps + 8 * 8 * 4);
    ck_assert_msg(st == FRL_OK, "%s", frl_trainer_last_error(t));
    ck_assert_int_gt(frl_trainer_metrics(t)->update, updates);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("async");
    TCase *tc = tcase_create("async");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, async_trains_and_reports_lag);
    tcase_add_test(tc, save_from_the_callback);
    tcase_add_test(tc, save_over_several_host_vecs_refused);
    tcase_add_test(tc, async_max_lag_drops_and_counts);
    tcase_add_test(tc, async_resume_keeps_dropped_rollouts);
    tcase_add_test(tc, async_stop_in_last_update_is_not_an_interruption);
    tcase_add_test(tc, async_batch_callbacks_never_overlap);
    tcase_add_test(tc, async_callback_failure_reaches_caller);
    tcase_add_test(tc, async_callback_nan_reaches_caller);
    tcase_add_test(tc, async_restarts_never_repeat_seeds);
    tcase_add_test(tc, async_thousand_random_stops);
    tcase_add_test(tc, async_pieces_random_stops);
    tcase_add_test(tc, async_bad_input);
    tcase_add_test(tc, async_save_and_resume);
    tcase_add_test(tc, async_resume_stays_decoupled);
    tcase_add_test(tc, async_one_thread);
    tcase_add_test(tc, async_refuses_training_inside_a_pool_task);
    tcase_add_test(tc, a_ready_rollout_read_by_the_host);
    tcase_add_test(tc, async_load_acts_on_loaded_weights);
    tcase_add_test(tc, async_train_without_end);
    tcase_add_test(tc, async_target_is_in_the_final_metrics);
    tcase_add_test(tc, async_helpers_share_the_learner);
    tcase_add_test(tc, train_many_trains_each_its_own_policy);
    tcase_add_test(tc, train_many_failure_names_the_trainer);
    tcase_add_test(tc, train_many_refuses_a_diverged_trainer);
    tcase_add_test(tc, train_many_stop);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
