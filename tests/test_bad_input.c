/* Bad input through the public API: every mistake a host can make gives its own
 * documented frl_status, leaves *out NULL and the handle unchanged, and sets a
 * message (frl_last_error() and the handle's *_last_error) that names the place:
 * the argument, the key, the env index and the step.
 *
 * Includes failures raised on pool threads (a host callback failing in env 3 of 7 on a
 * 2-thread runtime), which must reach the caller with the env index intact.
 *
 * Public API only; links against libfastrl. Passes with CK_FORK=no too (every test
 * frees what it creates, and no test depends on another's state). */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fastrl.h"
#include "test_util.h"

/* ---- helpers ---------------------------------------------------------------------- */

/* A non-NULL pointer that a constructor must overwrite with NULL on failure. */
static char junk_storage;
#define JUNK ((void *)&junk_storage)

/* Every word in the NULL-terminated list must occur in msg. */
static void expect_words_at(int line, const char *msg, ...)
{
    ck_assert_msg(msg != NULL, "line %d: message is NULL", line);
    ck_assert_msg(msg[0] != '\0', "line %d: message is empty", line);
    va_list ap;
    va_start(ap, msg);
    for (const char *w = va_arg(ap, const char *); w; w = va_arg(ap, const char *))
        ck_assert_msg(strstr(msg, w) != NULL, "line %d: message \"%s\" lacks \"%s\"", line,
                      msg, w);
    va_end(ap);
}
#define EXPECT_WORDS(msg, ...) expect_words_at(__LINE__, (msg), __VA_ARGS__, (const char *)NULL)

/* Run call, check its exact status, then that frl_last_error() holds every word. */
#define EXPECT_ERR(call, want, ...)                                                          \
    do {                                                                                     \
        frl_status got_ = (call);                                                            \
        ck_assert_msg(got_ == (want), "line %d: %s gave %s, expected %s (message: %s)",      \
                      __LINE__, #call, frl_status_name(got_), frl_status_name(want),         \
                      frl_last_error());                                                     \
        expect_words_at(__LINE__, frl_last_error(), __VA_ARGS__, (const char *)NULL);        \
    } while (0)

#define EXPECT_OK(call)                                                                      \
    do {                                                                                     \
        frl_status got_ = (call);                                                            \
        ck_assert_msg(got_ == FRL_OK, "line %d: %s gave %s: %s", __LINE__, #call,            \
                      frl_status_name(got_), frl_last_error());                              \
    } while (0)

static frl_runtime *make_rt(int threads)
{
    frl_config *cfg = NULL;
    frl_runtime *rt = NULL;
    EXPECT_OK(frl_config_create(&cfg, NULL));
    EXPECT_OK(frl_config_set_int(cfg, "runtime.threads", threads));
    EXPECT_OK(frl_runtime_create(&rt, cfg, NULL, NULL));
    frl_config_destroy(cfg);
    return rt;
}

static frl_config *make_cfg_steps(int64_t max_steps)
{
    frl_config *cfg = NULL;
    EXPECT_OK(frl_config_create(&cfg, NULL));
    EXPECT_OK(frl_config_set_int(cfg, "env.max_episode_steps", max_steps));
    return cfg;
}

static frl_space *make_box(int64_t n)
{
    frl_space *s = NULL;
    EXPECT_OK(frl_space_create_box(&s, NULL, 1, &n, NULL, NULL));
    return s;
}

static frl_space *make_discrete(int64_t n)
{
    frl_space *s = NULL;
    EXPECT_OK(frl_space_create_discrete(&s, NULL, n));
    return s;
}

static int sleep_ns(long ns)
{
    struct timespec ts = {0, ns};
    return nanosleep(&ts, NULL);
}

/* ---- a host environment for the callback tests -------------------------------------
 * obs = [index, t]; discrete(3) actions; reward 1 per step. Failure injection per env. */

enum { HOST_OBS = 2, HOST_ACTIONS = 3, NHOST = 7 };

typedef struct host {
    int index;
    int t;              /* steps in the current episode */
    int terminate_at;   /* step returns terminated when t reaches this (0: never) */
    int step_rc;        /* step returns this (0: succeed) */
    int reset_rc;       /* reset returns this */
    int bad_obs;        /* step writes 1: NaN, 2: +inf, 3: -inf into obs[1] */
    int bad_reset_obs;  /* reset writes NaN into obs[0] */
    int bad_reward;     /* step writes 1: NaN, 2: +inf reward */
    int wait_for_env3;  /* env 0: wait (bounded) until env 3 has run in this step */
    int steps, resets, closes, invalid_actions;
    pthread_t last_thread;
} host;

static atomic_int env3_ran;

static int host_reset(void *user, uint64_t seed, float *obs)
{
    host *h = user;
    (void)seed;
    h->resets++;
    if (h->reset_rc)
        return h->reset_rc;
    h->t = 0;
    obs[0] = (float)h->index;
    obs[1] = 0.0f;
    if (h->bad_reset_obs)
        obs[0] = NAN;
    return 0;
}

static int host_step(void *user, const void *action, float *obs, float *reward,
                     uint8_t *terminated, uint8_t *truncated)
{
    host *h = user;
    int32_t a = *(const int32_t *)action;
    h->invalid_actions += a < 0 || a >= HOST_ACTIONS; /* checked on the main thread */
    h->steps++;
    h->last_thread = pthread_self();
    if (h->wait_for_env3)
        for (int spin = 0; spin < 20000 && !atomic_load(&env3_ran); spin++)
            sleep_ns(100000); /* up to 2 s; never reached on a 2-thread pool */
    if (h->index == 3)
        atomic_store(&env3_ran, 1);
    if (h->step_rc)
        return h->step_rc;
    h->t++;
    obs[0] = (float)h->index;
    obs[1] = (float)h->t;
    *reward = 1.0f;
    *terminated = (uint8_t)(h->terminate_at > 0 && h->t >= h->terminate_at);
    *truncated = 0;
    if (h->bad_obs)
        obs[1] = h->bad_obs == 1 ? NAN : (h->bad_obs == 2 ? INFINITY : -INFINITY);
    if (h->bad_reward)
        *reward = h->bad_reward == 1 ? NAN : INFINITY;
    return 0;
}

static void host_close(void *user)
{
    ((host *)user)->closes++;
}

static void host_init_all(host *hosts, void **users, int n)
{
    memset(hosts, 0, sizeof(host) * (size_t)n);
    for (int i = 0; i < n; i++) {
        hosts[i].index = i;
        users[i] = &hosts[i];
    }
}

static void host_callbacks(frl_env_callbacks *cb)
{
    frl_env_callbacks_init(cb);
    cb->reset = host_reset;
    cb->step = host_step;
    cb->close = host_close;
}

/* ---- status names and the NULL-handle conventions -------------------------------- */

START_TEST(status_names_distinct)
{
    for (int a = 0; a >= (int)FRL_ERR_DEVICE; a--) {
        const char *na = frl_status_name((frl_status)a);
        ck_assert_ptr_nonnull(na);
        ck_assert_msg(na[0] != '\0', "status %d has an empty name", a);
        ck_assert_msg(strncmp(na, "FRL_", 4) == 0, "status %d: odd name %s", a, na);
        ck_assert_str_ne(na, "FRL_ERR_UNKNOWN_STATUS");
        for (int b = a - 1; b >= (int)FRL_ERR_DEVICE; b--)
            ck_assert_msg(strcmp(na, frl_status_name((frl_status)b)) != 0,
                          "statuses %d and %d share the name %s", a, b, na);
    }
    ck_assert_str_eq(frl_status_name(FRL_OK), "FRL_OK");
    ck_assert_str_eq(frl_status_name(FRL_ERR_NULL), "FRL_ERR_NULL");
    ck_assert_str_eq(frl_status_name(FRL_ERR_INTERNAL), "FRL_ERR_INTERNAL");
    static const int unknown[] = {1, 2, 100, -20, -1000, INT_MAX, INT_MIN};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        ck_assert_str_eq(frl_status_name((frl_status)unknown[i]), "FRL_ERR_UNKNOWN_STATUS");
    ck_assert_ptr_nonnull(frl_last_error());
}
END_TEST

START_TEST(null_handles_are_harmless)
{
    /* destroy(NULL) is a no-op; init(NULL) too. */
    frl_config_destroy(NULL);
    frl_runtime_destroy(NULL);
    frl_space_destroy(NULL);
    frl_env_destroy(NULL);
    frl_vec_env_destroy(NULL);
    frl_allocator_init(NULL);
    frl_logger_init(NULL);
    frl_env_callbacks_init(NULL);
    frl_batch_env_callbacks_init(NULL);

    /* Accessors on NULL give 0 / NULL; *_last_error(NULL) gives a message, not NULL. */
    ck_assert_int_eq(frl_runtime_threads(NULL), 0);
    ck_assert_uint_eq(frl_runtime_seed(NULL), 0);
    ck_assert_int_eq((int)frl_space_get_kind(NULL), 0);
    ck_assert_int_eq(frl_space_n(NULL), 0);
    ck_assert_int_eq(frl_space_rank(NULL), 0);
    ck_assert_ptr_null(frl_space_shape(NULL));
    ck_assert_ptr_null(frl_space_low(NULL));
    ck_assert_ptr_null(frl_space_high(NULL));
    ck_assert_int_eq(frl_space_width(NULL), 0);
    ck_assert_ptr_null(frl_env_observation_space(NULL));
    ck_assert_ptr_null(frl_env_action_space(NULL));
    ck_assert_int_eq(frl_env_state_size(NULL), 0);
    ck_assert_int_eq(frl_vec_env_num_envs(NULL), 0);
    ck_assert_ptr_null(frl_vec_env_observation_space(NULL));
    ck_assert_ptr_null(frl_vec_env_action_space(NULL));
    ck_assert_ptr_null(frl_vec_env_name(NULL));
    ck_assert_ptr_null(frl_vec_env_actions(NULL));
    ck_assert_ptr_null(frl_vec_env_observations(NULL));
    ck_assert_ptr_null(frl_vec_env_rewards(NULL));
    ck_assert_ptr_null(frl_vec_env_terminated(NULL));
    ck_assert_ptr_null(frl_vec_env_truncated(NULL));
    ck_assert_ptr_null(frl_vec_env_reset_steps(NULL));
    ck_assert_ptr_null(frl_vec_env_episode_returns(NULL));
    ck_assert_ptr_null(frl_vec_env_episode_lengths(NULL));
    ck_assert_int_eq(frl_vec_env_total_steps(NULL), 0);
    ck_assert_int_eq(frl_vec_env_total_episodes(NULL), 0);
    EXPECT_WORDS(frl_config_last_error(NULL), "NULL");
    EXPECT_WORDS(frl_runtime_last_error(NULL), "NULL");
    EXPECT_WORDS(frl_env_last_error(NULL), "NULL");
    EXPECT_WORDS(frl_vec_env_last_error(NULL), "NULL");
    ck_assert_ptr_null(frl_env_name_at(-1));
    ck_assert_ptr_null(frl_env_name_at(INT32_MAX));
    ck_assert_int_eq(frl_config_is_set(NULL, "runtime.threads"), 0);
    ck_assert_ptr_null(frl_config_next("no.such.key"));
}
END_TEST

/* ---- config ----------------------------------------------------------------------- */

START_TEST(config_null_arguments)
{
    frl_config *cfg = JUNK;
    EXPECT_ERR(frl_config_create(NULL, NULL), FRL_ERR_NULL, "frl_config_create", "out");
    EXPECT_OK(frl_config_create(&cfg, NULL));
    frl_config *clone = JUNK;
    EXPECT_ERR(frl_config_clone(NULL, cfg), FRL_ERR_NULL, "frl_config_clone", "out");
    EXPECT_ERR(frl_config_clone(&clone, NULL), FRL_ERR_NULL, "frl_config_clone", "cfg");
    ck_assert_msg(clone == NULL, "frl_config_clone(&out, NULL) left *out unchanged");

    EXPECT_ERR(frl_config_set_int(NULL, "runtime.seed", 1), FRL_ERR_NULL, "set_int", "cfg");
    EXPECT_ERR(frl_config_set_float(NULL, "runtime.seed", 1), FRL_ERR_NULL, "set_float", "cfg");
    EXPECT_ERR(frl_config_set_bool(NULL, "runtime.seed", 1), FRL_ERR_NULL, "set_bool", "cfg");
    EXPECT_ERR(frl_config_set(NULL, "runtime.seed", "1"), FRL_ERR_NULL, "frl_config_set", "cfg");
    EXPECT_ERR(frl_config_parse(NULL, "runtime.seed=1"), FRL_ERR_NULL, "parse", "cfg");
    EXPECT_ERR(frl_config_unset(NULL, "runtime.seed"), FRL_ERR_NULL, "unset", "cfg");

    EXPECT_ERR(frl_config_set_int(cfg, NULL, 1), FRL_ERR_NULL, "key");
    EXPECT_WORDS(frl_config_last_error(cfg), "key");
    EXPECT_ERR(frl_config_set_float(cfg, NULL, 1), FRL_ERR_NULL, "key");
    EXPECT_ERR(frl_config_set_bool(cfg, NULL, 1), FRL_ERR_NULL, "key");
    EXPECT_ERR(frl_config_set(cfg, NULL, "1"), FRL_ERR_NULL, "key");
    EXPECT_ERR(frl_config_set(cfg, "runtime.seed", NULL), FRL_ERR_NULL, "text");
    EXPECT_WORDS(frl_config_last_error(cfg), "text");
    EXPECT_ERR(frl_config_parse(cfg, NULL), FRL_ERR_NULL, "text");
    EXPECT_ERR(frl_config_unset(cfg, NULL), FRL_ERR_NULL, "key");

    int64_t i = 0;
    double d = 0;
    int b = 0;
    char buf[32];
    EXPECT_ERR(frl_config_get_int(cfg, NULL, &i), FRL_ERR_NULL, "key");
    EXPECT_ERR(frl_config_get_float(cfg, NULL, &d), FRL_ERR_NULL, "key");
    EXPECT_ERR(frl_config_get_bool(cfg, NULL, &b), FRL_ERR_NULL, "key");
    EXPECT_ERR(frl_config_get_text(cfg, NULL, buf, sizeof buf), FRL_ERR_NULL, "key");
    EXPECT_ERR(frl_config_get_int(cfg, "runtime.seed", NULL), FRL_ERR_NULL, "out");
    EXPECT_ERR(frl_config_get_float(cfg, "runtime.seed", NULL), FRL_ERR_NULL, "out");
    EXPECT_ERR(frl_config_get_bool(cfg, "runtime.seed", NULL), FRL_ERR_NULL, "out");
    EXPECT_ERR(frl_config_get_text(cfg, "runtime.seed", NULL, 8), FRL_ERR_NULL, "buf");
    ck_assert_int_eq(frl_config_is_set(cfg, NULL), 0);

    frl_config_key_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    EXPECT_ERR(frl_config_describe("runtime.seed", NULL), FRL_ERR_NULL, "info");
    EXPECT_ERR(frl_config_describe(NULL, &info), FRL_ERR_NULL, "key");

    /* Nothing was set by any of this. */
    for (const char *k = frl_config_next(NULL); k; k = frl_config_next(k))
        ck_assert_int_eq(frl_config_is_set(cfg, k), 0);
    frl_config_destroy(cfg);
}
END_TEST

START_TEST(config_unknown_key)
{
    frl_config *cfg = NULL;
    EXPECT_OK(frl_config_create(&cfg, NULL));
    int64_t i;
    double d;
    int b;
    char buf[64];
    frl_config_key_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;

    /* A typo in the runtime namespace: the message names the key and the near keys. */
    EXPECT_ERR(frl_config_set_int(cfg, "runtime.thread", 2), FRL_ERR_UNKNOWN_NAME,
               "'runtime.thread'", "runtime.threads");
    EXPECT_WORDS(frl_config_last_error(cfg), "'runtime.thread'", "runtime.threads");
    EXPECT_ERR(frl_config_set_float(cfg, "runtime.thread", 2), FRL_ERR_UNKNOWN_NAME,
               "runtime.thread");
    EXPECT_ERR(frl_config_set_bool(cfg, "runtime.thread", 1), FRL_ERR_UNKNOWN_NAME,
               "runtime.thread");
    EXPECT_ERR(frl_config_set(cfg, "runtime.thread", "2"), FRL_ERR_UNKNOWN_NAME,
               "runtime.thread");
    EXPECT_ERR(frl_config_unset(cfg, "bogus.key"), FRL_ERR_UNKNOWN_NAME, "bogus.key");
    EXPECT_ERR(frl_config_get_int(cfg, "bogus.key", &i), FRL_ERR_UNKNOWN_NAME, "bogus.key");
    EXPECT_ERR(frl_config_get_float(cfg, "bogus.key", &d), FRL_ERR_UNKNOWN_NAME, "bogus.key");
    EXPECT_ERR(frl_config_get_bool(NULL, "bogus.key", &b), FRL_ERR_UNKNOWN_NAME, "bogus.key");
    EXPECT_ERR(frl_config_get_text(cfg, "bogus.key", buf, sizeof buf), FRL_ERR_UNKNOWN_NAME,
               "bogus.key");
    EXPECT_ERR(frl_config_describe("bogus.key", &info), FRL_ERR_UNKNOWN_NAME, "bogus.key");
    /* A key without a namespace: the message lists every key. */
    EXPECT_ERR(frl_config_set_int(cfg, "threads", 2), FRL_ERR_UNKNOWN_NAME, "'threads'",
               "runtime.threads");
    /* parse names the bad pair's key and applies nothing. */
    EXPECT_ERR(frl_config_parse(cfg, "runtime.seed=3 nokey=4"), FRL_ERR_UNKNOWN_NAME, "nokey");
    ck_assert_int_eq(frl_config_is_set(cfg, "runtime.seed"), 0);
    ck_assert_int_eq(frl_config_is_set(cfg, "runtime.thread"), 0);
    frl_config_destroy(cfg);
}
END_TEST

START_TEST(config_bad_values)
{
    frl_config *cfg = NULL;
    EXPECT_OK(frl_config_create(&cfg, NULL));
    int64_t v = 0;
    EXPECT_OK(frl_config_set_int(cfg, "runtime.seed", 7));

    /* Out of range: the message names the key, the value and the range. */
    EXPECT_ERR(frl_config_set_int(cfg, "runtime.threads", -1), FRL_ERR_RANGE,
               "runtime.threads", "-1", "[0, 1024]");
    EXPECT_WORDS(frl_config_last_error(cfg), "runtime.threads", "-1");
    EXPECT_ERR(frl_config_set_int(cfg, "runtime.threads", 1025), FRL_ERR_RANGE,
               "runtime.threads", "1025");
    EXPECT_ERR(frl_config_set_int(cfg, "runtime.threads", INT64_MIN), FRL_ERR_RANGE,
               "runtime.threads");
    EXPECT_ERR(frl_config_set(cfg, "runtime.threads", "-1"), FRL_ERR_RANGE, "runtime.threads");
    EXPECT_ERR(frl_config_set_int(cfg, "env.max_episode_steps", -2), FRL_ERR_RANGE,
               "env.max_episode_steps");
    EXPECT_ERR(frl_config_set_int(cfg, "runtime.spin_us", -5), FRL_ERR_RANGE,
               "runtime.spin_us");
    EXPECT_ERR(frl_config_set_int(cfg, "runtime.seed", -1), FRL_ERR_RANGE, "runtime.seed");
    /* A clip of 0 would zero every normalised observation: out of range. */
    EXPECT_ERR(frl_config_set(cfg, "policy.obs_clip", "0"), FRL_ERR_RANGE, "policy.obs_clip");
    EXPECT_ERR(frl_config_parse(cfg, "runtime.seed=3 runtime.threads=-1"), FRL_ERR_RANGE,
               "runtime.threads");

    /* Wrong type: names the key, its type and the type used. */
    EXPECT_ERR(frl_config_set_float(cfg, "runtime.threads", 2.0), FRL_ERR_TYPE,
               "runtime.threads", "int", "float");
    EXPECT_WORDS(frl_config_last_error(cfg), "runtime.threads");
    EXPECT_ERR(frl_config_set_float(cfg, "runtime.threads", NAN), FRL_ERR_TYPE,
               "runtime.threads");
    EXPECT_ERR(frl_config_set_bool(cfg, "runtime.threads", 1), FRL_ERR_TYPE, "runtime.threads",
               "bool");
    int b = 0;
    EXPECT_ERR(frl_config_get_bool(cfg, "runtime.threads", &b), FRL_ERR_TYPE,
               "runtime.threads", "bool");

    /* Unparsable text: names the key and the text. */
    EXPECT_ERR(frl_config_set(cfg, "runtime.threads", "four"), FRL_ERR_PARSE,
               "runtime.threads", "four");
    EXPECT_WORDS(frl_config_last_error(cfg), "runtime.threads", "four");
    EXPECT_ERR(frl_config_set(cfg, "runtime.threads", ""), FRL_ERR_PARSE, "runtime.threads");
    EXPECT_ERR(frl_config_set(cfg, "runtime.threads", "2.5"), FRL_ERR_PARSE, "2.5");
    EXPECT_ERR(frl_config_set(cfg, "runtime.threads", "3x"), FRL_ERR_PARSE, "3x");
    EXPECT_ERR(frl_config_parse(cfg, "runtime.threads=2 garbage"), FRL_ERR_PARSE, "garbage");
    EXPECT_ERR(frl_config_parse(cfg, "runtime.threads=2 runtime.seed=x"), FRL_ERR_PARSE,
               "runtime.seed");

    /* NaN and infinity are not finite, whatever the key's type: FRL_ERR_NONFINITE. */
    EXPECT_ERR(frl_config_set(cfg, "runtime.seed", "nan"), FRL_ERR_NONFINITE, "runtime.seed");
    EXPECT_ERR(frl_config_set(cfg, "runtime.seed", "inf"), FRL_ERR_NONFINITE, "runtime.seed");
    EXPECT_ERR(frl_config_set(cfg, "runtime.seed", "-inf"), FRL_ERR_NONFINITE, "runtime.seed");
    /* Every FLOAT key (none in 0.1.0) refuses NaN and infinity from every setter. */
    for (const char *k = frl_config_next(NULL); k; k = frl_config_next(k)) {
        frl_config_key_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        EXPECT_OK(frl_config_describe(k, &info));
        if (info.type != FRL_CONFIG_FLOAT)
            continue;
        EXPECT_ERR(frl_config_set_float(cfg, k, NAN), FRL_ERR_NONFINITE, k);
        EXPECT_ERR(frl_config_set_float(cfg, k, INFINITY), FRL_ERR_NONFINITE, k);
        EXPECT_ERR(frl_config_set(cfg, k, "nan"), FRL_ERR_NONFINITE, k);
        ck_assert_int_eq(frl_config_is_set(cfg, k), 0);
    }

    /* On every error above the config was left unchanged. */
    ck_assert_int_eq(frl_config_is_set(cfg, "runtime.threads"), 0);
    ck_assert_int_eq(frl_config_is_set(cfg, "env.max_episode_steps"), 0);
    ck_assert_int_eq(frl_config_is_set(cfg, "runtime.spin_us"), 0);
    EXPECT_OK(frl_config_get_int(cfg, "runtime.seed", &v));
    ck_assert_int_eq(v, 7);

    /* get_text: too small a buffer is FRL_ERR_SIZE and names the key; the buffer is
     * still NUL-terminated. */
    char buf[4] = {'x', 'x', 'x', 'x'};
    EXPECT_OK(frl_config_set_int(cfg, "runtime.seed", 123456));
    EXPECT_ERR(frl_config_get_text(cfg, "runtime.seed", buf, sizeof buf), FRL_ERR_SIZE,
               "runtime.seed");
    ck_assert_msg(memchr(buf, '\0', sizeof buf) != NULL, "get_text left buf unterminated");
    /* A zero-sized (non-NULL) buffer is a size problem, not a NULL pointer. */
    EXPECT_ERR(frl_config_get_text(cfg, "runtime.seed", buf, 0), FRL_ERR_SIZE, "runtime.seed");

    /* describe: a table too old (struct_size 0 or too small) is FRL_ERR_VERSION. */
    frl_config_key_info info;
    memset(&info, 0, sizeof info);
    EXPECT_ERR(frl_config_describe("runtime.seed", &info), FRL_ERR_VERSION, "struct_size");
    info.struct_size = sizeof(size_t);
    EXPECT_ERR(frl_config_describe("runtime.seed", &info), FRL_ERR_VERSION, "struct_size");
    ck_assert_ptr_null(info.name);
    frl_config_destroy(cfg);
}
END_TEST

/* Tables given to constructors: a struct_size too small for the fields the library
 * needs is a version mismatch (FRL_ERR_VERSION, like the callback tables); a table
 * lacking a required function is FRL_ERR_NULL naming it. */
static void *null_alloc(void *user, size_t size, size_t alignment)
{
    (void)user;
    (void)size;
    (void)alignment;
    return NULL;
}
static void noop_free(void *user, void *ptr)
{
    (void)user;
    (void)ptr;
}

START_TEST(allocator_and_logger_tables)
{
    frl_allocator a;
    frl_config *cfg = JUNK;
    frl_runtime *rt = JUNK;
    frl_space *s = JUNK;

    frl_allocator_init(&a);
    a.struct_size = 0;
    EXPECT_ERR(frl_config_create(&cfg, &a), FRL_ERR_VERSION, "allocator");
    ck_assert_ptr_null(cfg);
    EXPECT_ERR(frl_runtime_create(&rt, NULL, &a, NULL), FRL_ERR_VERSION, "allocator");
    ck_assert_ptr_null(rt);
    EXPECT_ERR(frl_space_create_discrete(&s, &a, 3), FRL_ERR_VERSION, "allocator");
    ck_assert_ptr_null(s);

    /* Half a table is refused; an untouched one (both NULL) means the default. */
    frl_allocator_init(&a);
    a.alloc = null_alloc;
    EXPECT_ERR(frl_config_create(&cfg, &a), FRL_ERR_NULL, "free");
    EXPECT_ERR(frl_runtime_create(&rt, NULL, &a, NULL), FRL_ERR_NULL, "free");
    frl_allocator_init(&a);
    a.free = noop_free;
    EXPECT_ERR(frl_space_create_discrete(&s, &a, 3), FRL_ERR_NULL, "alloc");
    frl_allocator_init(&a);
    ck_assert_int_eq(frl_space_create_discrete(&s, &a, 3), FRL_OK);
    frl_space_destroy(s);

    /* An allocator that always fails: FRL_ERR_NOMEM, nothing created. */
    frl_allocator_init(&a);
    a.alloc = null_alloc;
    a.free = noop_free;
    cfg = JUNK;
    EXPECT_ERR(frl_config_create(&cfg, &a), FRL_ERR_NOMEM, "frl_config_create", "memory");
    ck_assert_ptr_null(cfg);
    rt = JUNK;
    EXPECT_ERR(frl_runtime_create(&rt, NULL, &a, NULL), FRL_ERR_NOMEM, "memory");
    ck_assert_ptr_null(rt);

    frl_logger l;
    frl_logger_init(&l);
    l.struct_size = 0;
    rt = JUNK;
    EXPECT_ERR(frl_runtime_create(&rt, NULL, NULL, &l), FRL_ERR_VERSION, "logger");
    ck_assert_ptr_null(rt);
}
END_TEST

/* ---- runtime ---------------------------------------------------------------------- */

static int fail_task_5(void *user, int32_t task, int32_t thread)
{
    (void)thread;
    atomic_fetch_add((atomic_int *)user, 1);
    return task == 5 ? 42 : 0;
}

START_TEST(runtime_bad_input)
{
    EXPECT_ERR(frl_runtime_create(NULL, NULL, NULL, NULL), FRL_ERR_NULL, "frl_runtime_create",
               "out");
    /* runtime.threads = -1 is refused when set, so no runtime can be made with it. */
    frl_config *cfg = NULL;
    EXPECT_OK(frl_config_create(&cfg, NULL));
    EXPECT_ERR(frl_config_set_int(cfg, "runtime.threads", -1), FRL_ERR_RANGE, "runtime.threads");
    EXPECT_ERR(frl_config_set(cfg, "runtime.threads", "-1"), FRL_ERR_RANGE, "runtime.threads");
    frl_config_destroy(cfg);

    frl_runtime *rt = make_rt(2);
    atomic_int ran = 0;
    EXPECT_ERR(frl_runtime_parallel_for(NULL, 4, fail_task_5, &ran), FRL_ERR_NULL, "rt");
    EXPECT_ERR(frl_runtime_parallel_for(rt, 4, NULL, &ran), FRL_ERR_NULL, "fn");
    EXPECT_WORDS(frl_runtime_last_error(rt), "fn");
    EXPECT_ERR(frl_runtime_parallel_for(rt, -1, fail_task_5, &ran), FRL_ERR_RANGE, "num_tasks",
               "-1");
    EXPECT_WORDS(frl_runtime_last_error(rt), "num_tasks");
    ck_assert_int_eq(atomic_load(&ran), 0);
    /* A failing task: all tasks still run; the status is FRL_ERR_CALLBACK and the
     * message names the task and its value, on the caller's thread. */
    for (int rep = 0; rep < 20; rep++) {
        atomic_store(&ran, 0);
        EXPECT_ERR(frl_runtime_parallel_for(rt, 64, fail_task_5, &ran), FRL_ERR_CALLBACK,
                   "task 5", "42");
        EXPECT_WORDS(frl_runtime_last_error(rt), "task 5", "42");
        ck_assert_int_eq(atomic_load(&ran), 64);
    }
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- spaces ----------------------------------------------------------------------- */

START_TEST(space_bad_input)
{
    frl_space *s = JUNK;
    EXPECT_ERR(frl_space_create_discrete(NULL, NULL, 3), FRL_ERR_NULL, "out");
    EXPECT_ERR(frl_space_create_discrete(&s, NULL, 0), FRL_ERR_RANGE, "n = 0");
    ck_assert_ptr_null(s);
    s = JUNK;
    EXPECT_ERR(frl_space_create_discrete(&s, NULL, -4), FRL_ERR_RANGE, "-4");
    ck_assert_ptr_null(s);
    EXPECT_ERR(frl_space_create_discrete(&s, NULL, (int64_t)1 << 31), FRL_ERR_RANGE,
               "2147483648");

    int64_t shape[9] = {2, 3, 1, 1, 1, 1, 1, 1, 1};
    float low[6] = {0, 0, 0, 0, 0, 0}, high[6] = {1, 1, 1, 1, 1, 1};
    EXPECT_ERR(frl_space_create_box(NULL, NULL, 1, shape, NULL, NULL), FRL_ERR_NULL, "out");
    s = JUNK;
    EXPECT_ERR(frl_space_create_box(&s, NULL, 1, NULL, NULL, NULL), FRL_ERR_NULL, "shape");
    ck_assert_ptr_null(s);
    s = JUNK;
    EXPECT_ERR(frl_space_create_box(&s, NULL, 0, shape, NULL, NULL), FRL_ERR_RANGE, "rank 0");
    ck_assert_ptr_null(s);
    EXPECT_ERR(frl_space_create_box(&s, NULL, -1, shape, NULL, NULL), FRL_ERR_RANGE, "rank");
    EXPECT_ERR(frl_space_create_box(&s, NULL, 9, shape, NULL, NULL), FRL_ERR_RANGE, "rank 9");
    int64_t zero_dim[2] = {2, 0};
    EXPECT_ERR(frl_space_create_box(&s, NULL, 2, zero_dim, NULL, NULL), FRL_ERR_RANGE,
               "shape[1]");
    int64_t huge[2] = {(int64_t)1 << 20, (int64_t)1 << 20};
    EXPECT_ERR(frl_space_create_box(&s, NULL, 2, huge, NULL, NULL), FRL_ERR_RANGE, "shape[1]");
    /* 2^31 elements: one more than the int32 row widths of vec envs, policies and rings
     * hold (it was accepted, and wrapped to INT32_MIN there). 2^31 - 1 passes the check,
     * so the refusing allocator gives FRL_ERR_NOMEM. */
    size_t gib = (size_t)1 << 30; /* refused above: no 16 GiB is touched */
    frl_allocator small = frl_test_capped_allocator(&gib);
    int64_t two31[2] = {(int64_t)1 << 16, (int64_t)1 << 15};
    EXPECT_ERR(frl_space_create_box(&s, &small, 2, two31, NULL, NULL), FRL_ERR_RANGE,
               "shape[1]", "2^31 - 1");
    int64_t max31[1] = {INT32_MAX};
    EXPECT_ERR(frl_space_create_box(&s, &small, 1, max31, NULL, NULL), FRL_ERR_NOMEM,
               "out of memory");

    /* low > high at element 4, NaN in low, NaN in high: FRL_ERR_RANGE naming it. */
    low[4] = 2.0f;
    s = JUNK;
    EXPECT_ERR(frl_space_create_box(&s, NULL, 2, shape, low, high), FRL_ERR_RANGE, "element 4");
    ck_assert_ptr_null(s);
    low[4] = 0.0f;
    low[2] = NAN;
    EXPECT_ERR(frl_space_create_box(&s, NULL, 2, shape, low, high), FRL_ERR_RANGE, "element 2");
    low[2] = 0.0f;
    high[5] = NAN;
    EXPECT_ERR(frl_space_create_box(&s, NULL, 2, shape, low, high), FRL_ERR_RANGE, "element 5");
    EXPECT_ERR(frl_space_create_box(&s, NULL, 2, shape, NULL, high), FRL_ERR_RANGE, "element 5");
    /* A high of -inf (even above a low of -inf) or a low of +inf (even below a high of
     * +inf) leaves no value in the box: a policy file could not hold it. */
    high[5] = -INFINITY;
    EXPECT_ERR(frl_space_create_box(&s, NULL, 2, shape, NULL, high), FRL_ERR_RANGE, "element 5");
    high[5] = 1.0f;
    low[0] = INFINITY;
    high[0] = INFINITY;
    EXPECT_ERR(frl_space_create_box(&s, NULL, 2, shape, low, high), FRL_ERR_RANGE, "element 0");
    high[0] = 1.0f; /* +inf > 1 */
    EXPECT_ERR(frl_space_create_box(&s, NULL, 2, shape, low, high), FRL_ERR_RANGE, "element 0");
    low[0] = -INFINITY;
    high[0] = INFINITY; /* the unbounded element is fine */
    EXPECT_OK(frl_space_create_box(&s, NULL, 2, shape, low, high));
    frl_space_destroy(s);
}
END_TEST

/* ---- environment creation --------------------------------------------------------- */

START_TEST(env_create_bad_input)
{
    frl_runtime *rt = make_rt(2);
    frl_env *e = JUNK;
    frl_vec_env *v = JUNK;

    EXPECT_ERR(frl_env_create(NULL, rt, "CartPole-v1", NULL), FRL_ERR_NULL, "frl_env_create",
               "out");
    EXPECT_ERR(frl_env_create(&e, NULL, "CartPole-v1", NULL), FRL_ERR_NULL, "frl_env_create",
               "runtime");
    ck_assert_ptr_null(e);
    e = JUNK;
    EXPECT_ERR(frl_env_create(&e, rt, NULL, NULL), FRL_ERR_NULL, "frl_env_create", "name");
    ck_assert_ptr_null(e);
    EXPECT_ERR(frl_vec_env_create(NULL, rt, "CartPole-v1", 4, NULL), FRL_ERR_NULL, "out");
    EXPECT_ERR(frl_vec_env_create(&v, NULL, "CartPole-v1", 4, NULL), FRL_ERR_NULL, "runtime");
    ck_assert_ptr_null(v);
    v = JUNK;
    EXPECT_ERR(frl_vec_env_create(&v, rt, NULL, 4, NULL), FRL_ERR_NULL, "name");
    ck_assert_ptr_null(v);

    /* Unknown name: the message names it and lists every built-in. Ids are exact. */
    static const char *const bad_names[] = {"CartPole-v0", "cartpole-v1", "", "CartPole-v1 "};
    for (size_t k = 0; k < sizeof bad_names / sizeof bad_names[0]; k++) {
        char quoted[64];
        snprintf(quoted, sizeof quoted, "'%s'", bad_names[k]);
        e = JUNK;
        EXPECT_ERR(frl_env_create(&e, rt, bad_names[k], NULL), FRL_ERR_UNKNOWN_NAME,
                   "frl_env_create", quoted);
        ck_assert_ptr_null(e);
        for (int32_t i = 0; frl_env_name_at(i); i++)
            EXPECT_WORDS(frl_last_error(), frl_env_name_at(i));
        v = JUNK;
        EXPECT_ERR(frl_vec_env_create(&v, rt, bad_names[k], 4, NULL), FRL_ERR_UNKNOWN_NAME,
                   "frl_vec_env_create", quoted);
        ck_assert_ptr_null(v);
        for (int32_t i = 0; frl_env_name_at(i); i++)
            EXPECT_WORDS(frl_last_error(), frl_env_name_at(i));
    }

    /* num_envs outside [1, 2^24]: FRL_ERR_RANGE naming num_envs and the value. */
    static const int32_t bad_n[] = {0, -1, INT32_MIN, (1 << 24) + 1, INT32_MAX};
    for (size_t k = 0; k < sizeof bad_n / sizeof bad_n[0]; k++) {
        char num[32];
        snprintf(num, sizeof num, "%d", (int)bad_n[k]);
        v = JUNK;
        EXPECT_ERR(frl_vec_env_create(&v, rt, "CartPole-v1", bad_n[k], NULL), FRL_ERR_RANGE,
                   "num_envs", num);
        ck_assert_ptr_null(v);
    }
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- single env: state machine and actions ---------------------------------------- */

START_TEST(env_step_state_errors)
{
    frl_runtime *rt = make_rt(1);
    frl_config *cfg = make_cfg_steps(2);
    frl_env *e = NULL;
    EXPECT_OK(frl_env_create(&e, rt, "CartPole-v1", cfg));
    float obs[4], reward = 0;
    uint8_t term = 0, trunc = 0;
    int32_t a = 1;

    /* Step before reset. */
    EXPECT_ERR(frl_env_step(e, &a, obs, &reward, &term, &trunc), FRL_ERR_STATE,
               "frl_env_step", "reset");
    EXPECT_WORDS(frl_env_last_error(e), "frl_env_step", "reset");

    /* NULL arguments, each named. */
    EXPECT_ERR(frl_env_reset(NULL, 1, obs), FRL_ERR_NULL, "frl_env_reset", "env");
    EXPECT_ERR(frl_env_reset(e, 1, NULL), FRL_ERR_NULL, "frl_env_reset", "obs");
    EXPECT_WORDS(frl_env_last_error(e), "obs");
    EXPECT_ERR(frl_env_step(NULL, &a, obs, &reward, &term, &trunc), FRL_ERR_NULL, "env");
    EXPECT_ERR(frl_env_step(e, NULL, obs, &reward, &term, &trunc), FRL_ERR_NULL, "action");
    EXPECT_ERR(frl_env_step(e, &a, NULL, &reward, &term, &trunc), FRL_ERR_NULL, "obs");
    EXPECT_ERR(frl_env_step(e, &a, obs, NULL, &term, &trunc), FRL_ERR_NULL, "reward");
    EXPECT_ERR(frl_env_step(e, &a, obs, &reward, NULL, &trunc), FRL_ERR_NULL, "terminated");
    EXPECT_ERR(frl_env_step(e, &a, obs, &reward, &term, NULL), FRL_ERR_NULL, "truncated");
    EXPECT_WORDS(frl_env_last_error(e), "truncated");

    EXPECT_OK(frl_env_reset(e, 5, obs));

    /* An out-of-range action fails and changes nothing: same state after. */
    int32_t size = frl_env_state_size(e);
    ck_assert_int_eq(size, 5);
    double before[5], after[5];
    EXPECT_OK(frl_env_get_state(e, before, size));
    static const int32_t bad_actions[] = {-1, 2, INT32_MIN, INT32_MAX};
    for (size_t k = 0; k < 4; k++) {
        char txt[32];
        snprintf(txt, sizeof txt, "action %d", (int)bad_actions[k]);
        EXPECT_ERR(frl_env_step(e, &bad_actions[k], obs, &reward, &term, &trunc),
                   FRL_ERR_RANGE, "env 0", "step", txt);
        EXPECT_WORDS(frl_env_last_error(e), "env 0", txt);
        EXPECT_OK(frl_env_get_state(e, after, size));
        ck_assert_msg(memcmp(before, after, sizeof before) == 0,
                      "an invalid action changed the state");
    }

    /* Step after the episode ended (time limit 2) without reset: FRL_ERR_STATE. */
    EXPECT_OK(frl_env_step(e, &a, obs, &reward, &term, &trunc));
    ck_assert_int_eq(trunc, 0);
    EXPECT_OK(frl_env_step(e, &a, obs, &reward, &term, &trunc));
    ck_assert_int_eq(trunc, 1);
    EXPECT_ERR(frl_env_step(e, &a, obs, &reward, &term, &trunc), FRL_ERR_STATE, "frl_env_step",
               "ended", "reset");
    EXPECT_WORDS(frl_env_last_error(e), "ended", "reset");
    /* ...and stays refused, with a valid action or not, until reset. */
    EXPECT_ERR(frl_env_step(e, &a, obs, &reward, &term, &trunc), FRL_ERR_STATE, "reset");
    EXPECT_OK(frl_env_reset(e, 6, obs));
    EXPECT_OK(frl_env_step(e, &a, obs, &reward, &term, &trunc));

    frl_env_destroy(e);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(env_state_errors)
{
    frl_runtime *rt = make_rt(1);
    frl_env *e = NULL;
    EXPECT_OK(frl_env_create(&e, rt, "CartPole-v1", NULL));
    float obs[4];
    EXPECT_OK(frl_env_reset(e, 11, obs));
    int32_t size = frl_env_state_size(e);
    ck_assert_int_eq(size, 5);
    double good[6], st[6], check[6];
    EXPECT_OK(frl_env_get_state(e, good, size));

    EXPECT_ERR(frl_env_get_state(NULL, st, size), FRL_ERR_NULL, "frl_env_get_state", "env");
    EXPECT_ERR(frl_env_get_state(e, NULL, size), FRL_ERR_NULL, "frl_env_get_state", "state");
    EXPECT_ERR(frl_env_set_state(NULL, good, size, obs), FRL_ERR_NULL, "frl_env_set_state");
    EXPECT_ERR(frl_env_set_state(e, NULL, size, obs), FRL_ERR_NULL, "frl_env_set_state",
               "state");

    /* Wrong sizes: FRL_ERR_SIZE naming both sizes. */
    EXPECT_ERR(frl_env_get_state(e, st, 4), FRL_ERR_SIZE, "state", "4", "5");
    EXPECT_WORDS(frl_env_last_error(e), "4", "5");
    EXPECT_ERR(frl_env_get_state(e, st, 6), FRL_ERR_SIZE, "6", "5");
    EXPECT_ERR(frl_env_get_state(e, st, 0), FRL_ERR_SIZE, "0", "5");
    EXPECT_ERR(frl_env_get_state(e, st, -1), FRL_ERR_SIZE, "-1", "5");
    EXPECT_ERR(frl_env_set_state(e, good, 4, obs), FRL_ERR_SIZE, "4", "5");
    EXPECT_ERR(frl_env_set_state(e, good, 6, obs), FRL_ERR_SIZE, "6", "5");

    /* Non-finite values: FRL_ERR_NONFINITE naming the element. */
    memcpy(st, good, sizeof(double) * 5);
    st[1] = NAN;
    EXPECT_ERR(frl_env_set_state(e, st, size, obs), FRL_ERR_NONFINITE, "state[1]");
    EXPECT_WORDS(frl_env_last_error(e), "state[1]");
    st[1] = INFINITY;
    EXPECT_ERR(frl_env_set_state(e, st, size, obs), FRL_ERR_NONFINITE, "state[1]");
    st[1] = good[1];
    st[4] = NAN; /* the elapsed count */
    EXPECT_ERR(frl_env_set_state(e, st, size, obs), FRL_ERR_NONFINITE, "state[4]");
    /* A bad elapsed count: FRL_ERR_RANGE. */
    st[4] = -1;
    EXPECT_ERR(frl_env_set_state(e, st, size, obs), FRL_ERR_RANGE, "state[4]");
    st[4] = 1.5;
    EXPECT_ERR(frl_env_set_state(e, st, size, obs), FRL_ERR_RANGE, "state[4]");
    /* A finite state whose observation is not (1e39 overflows float32): FRL_ERR_RANGE
     * naming the observation element, the simulator left as it was. */
    memcpy(st, good, sizeof(double) * 5);
    st[1] = 1e39;
    float kept[4];
    memcpy(kept, obs, sizeof kept);
    EXPECT_ERR(frl_env_set_state(e, st, size, obs), FRL_ERR_RANGE, "observation[1]",
               "CartPole-v1");
    ck_assert_mem_eq(kept, obs, sizeof kept);

    /* None of the failed calls changed the env. */
    EXPECT_OK(frl_env_get_state(e, check, size));
    ck_assert_msg(memcmp(good, check, sizeof(double) * 5) == 0, "a failed set_state changed it");
    frl_env_destroy(e);

    /* A host env without simulator state: FRL_ERR_UNSUPPORTED. */
    host h;
    void *user = &h;
    host_init_all(&h, &user, 1);
    frl_env_callbacks cb;
    host_callbacks(&cb);
    frl_space *os = make_box(HOST_OBS), *as = make_discrete(HOST_ACTIONS);
    EXPECT_OK(frl_env_create_callbacks(&e, rt, &cb, &h, os, as, NULL));
    ck_assert_int_eq(frl_env_state_size(e), 0);
    EXPECT_ERR(frl_env_get_state(e, st, 1), FRL_ERR_UNSUPPORTED, "state");
    EXPECT_ERR(frl_env_set_state(e, st, 1, obs), FRL_ERR_UNSUPPORTED, "state");
    frl_env_destroy(e);
    ck_assert_int_eq(h.closes, 1);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- vec env: action validation --------------------------------------------------- */

typedef struct snapshot {
    float obs[64 * 4];
    float rewards[64];
    uint8_t term[64], trunc[64], reset_steps[64];
    int64_t steps, episodes;
} snapshot;

static void take_snapshot(const frl_vec_env *v, snapshot *s)
{
    int32_t n = frl_vec_env_num_envs(v);
    int64_t w = frl_space_width(frl_vec_env_observation_space(v));
    ck_assert_int_le(n * w, 64 * 4);
    memset(s, 0, sizeof *s);
    memcpy(s->obs, frl_vec_env_observations(v), sizeof(float) * (size_t)(n * w));
    memcpy(s->rewards, frl_vec_env_rewards(v), sizeof(float) * (size_t)n);
    memcpy(s->term, frl_vec_env_terminated(v), (size_t)n);
    memcpy(s->trunc, frl_vec_env_truncated(v), (size_t)n);
    memcpy(s->reset_steps, frl_vec_env_reset_steps(v), (size_t)n);
    s->steps = frl_vec_env_total_steps(v);
    s->episodes = frl_vec_env_total_episodes(v);
}

static void expect_same(const snapshot *a, const snapshot *b, const char *what)
{
    ck_assert_msg(memcmp(a->obs, b->obs, sizeof a->obs) == 0, "%s: observations changed", what);
    ck_assert_msg(memcmp(a->rewards, b->rewards, sizeof a->rewards) == 0, "%s: rewards", what);
    ck_assert_msg(memcmp(a->term, b->term, sizeof a->term) == 0, "%s: terminated", what);
    ck_assert_msg(memcmp(a->trunc, b->trunc, sizeof a->trunc) == 0, "%s: truncated", what);
    ck_assert_msg(memcmp(a->reset_steps, b->reset_steps, sizeof a->reset_steps) == 0,
                  "%s: reset_steps", what);
    ck_assert_msg(a->steps == b->steps, "%s: total_steps %lld -> %lld", what,
                  (long long)a->steps, (long long)b->steps);
    ck_assert_msg(a->episodes == b->episodes, "%s: total_episodes changed", what);
}

static int32_t policy(int64_t t, int32_t i)
{
    return (int32_t)((t * 7 + i * 3) % 2);
}

START_TEST(vec_discrete_action_out_of_range)
{
    enum { N = 8 };
    frl_runtime *rt = make_rt(2);
    frl_vec_env *v = NULL, *ref = NULL;
    EXPECT_OK(frl_vec_env_create(&v, rt, "CartPole-v1", N, NULL));
    EXPECT_OK(frl_vec_env_create(&ref, rt, "CartPole-v1", N, NULL));
    int32_t *act = frl_vec_env_actions(v), *ref_act = frl_vec_env_actions(ref);

    /* Step before reset. */
    EXPECT_ERR(frl_vec_env_step(v), FRL_ERR_STATE, "frl_vec_env_step", "reset");
    EXPECT_WORDS(frl_vec_env_last_error(v), "reset");
    EXPECT_ERR(frl_vec_env_step(NULL), FRL_ERR_NULL, "frl_vec_env_step");
    EXPECT_ERR(frl_vec_env_reset(NULL, 1), FRL_ERR_NULL, "frl_vec_env_reset");

    EXPECT_OK(frl_vec_env_reset(v, 99));
    EXPECT_OK(frl_vec_env_reset(ref, 99));
    int64_t t = 0;
    for (; t < 3; t++) {
        for (int32_t i = 0; i < N; i++)
            act[i] = ref_act[i] = policy(t, i);
        EXPECT_OK(frl_vec_env_step(v));
        EXPECT_OK(frl_vec_env_step(ref));
    }

    static const int32_t bad[] = {-1, 2, INT32_MIN, INT32_MAX};
    static const int32_t where[] = {5, 0, N - 1, 3};
    for (size_t k = 0; k < 4; k++) {
        snapshot before, after;
        take_snapshot(v, &before);
        for (int32_t i = 0; i < N; i++)
            act[i] = policy(t, i);
        act[where[k]] = bad[k];
        char env[16], txt[32];
        snprintf(env, sizeof env, "env %d", (int)where[k]);
        snprintf(txt, sizeof txt, "action %d", (int)bad[k]);
        EXPECT_ERR(frl_vec_env_step(v), FRL_ERR_RANGE, env, "step", txt, "[0, 2)");
        EXPECT_WORDS(frl_vec_env_last_error(v), env, "step", txt);
        take_snapshot(v, &after);
        expect_same(&before, &after, "invalid discrete action");
    }
    /* Two bad actions: the lowest env index is reported. */
    for (int32_t i = 0; i < N; i++)
        act[i] = policy(t, i);
    act[6] = 9;
    act[2] = -3;
    EXPECT_ERR(frl_vec_env_step(v), FRL_ERR_RANGE, "env 2", "action -3");

    /* The refused steps left no trace: v continues exactly like ref. */
    for (; t < 40; t++) {
        for (int32_t i = 0; i < N; i++)
            act[i] = ref_act[i] = policy(t, i);
        EXPECT_OK(frl_vec_env_step(v));
        EXPECT_OK(frl_vec_env_step(ref));
        snapshot a, b;
        take_snapshot(v, &a);
        take_snapshot(ref, &b);
        expect_same(&a, &b, "after refused steps");
    }
    /* Nor in the step count the messages give: the same refusal reads the same. */
    act[1] = ref_act[1] = 7;
    EXPECT_ERR(frl_vec_env_step(v), FRL_ERR_RANGE, "env 1");
    EXPECT_ERR(frl_vec_env_step(ref), FRL_ERR_RANGE, "env 1");
    ck_assert_str_eq(frl_vec_env_last_error(v), frl_vec_env_last_error(ref));
    frl_vec_env_destroy(v);
    frl_vec_env_destroy(ref);
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(vec_box_action_nonfinite)
{
    enum { N = 7 };
    frl_runtime *rt = make_rt(2);
    frl_vec_env *v = NULL, *ref = NULL;
    EXPECT_OK(frl_vec_env_create(&v, rt, "Pendulum-v1", N, NULL));
    EXPECT_OK(frl_vec_env_create(&ref, rt, "Pendulum-v1", N, NULL));
    ck_assert_int_eq(frl_space_get_kind(frl_vec_env_action_space(v)), FRL_SPACE_BOX);
    float *act = frl_vec_env_actions(v), *ref_act = frl_vec_env_actions(ref);
    EXPECT_OK(frl_vec_env_reset(v, 3));
    EXPECT_OK(frl_vec_env_reset(ref, 3));
    int64_t t = 0;
    for (; t < 4; t++) {
        for (int32_t i = 0; i < N; i++)
            act[i] = ref_act[i] = (float)(i - 3) * 0.5f;
        EXPECT_OK(frl_vec_env_step(v));
        EXPECT_OK(frl_vec_env_step(ref));
    }
    static const struct {
        float value;
        const char *word;
    } bad[] = {{NAN, "NaN"}, {INFINITY, "infinite"}, {-INFINITY, "infinite"}};
    for (size_t k = 0; k < 3; k++) {
        snapshot before, after;
        take_snapshot(v, &before);
        for (int32_t i = 0; i < N; i++)
            act[i] = 0.25f;
        act[3] = bad[k].value;
        EXPECT_ERR(frl_vec_env_step(v), FRL_ERR_NONFINITE, "env 3", "step", bad[k].word);
        EXPECT_WORDS(frl_vec_env_last_error(v), "env 3", "step", bad[k].word);
        take_snapshot(v, &after);
        expect_same(&before, &after, "non-finite box action");
    }
    /* The lowest bad env is named. */
    for (int32_t i = 0; i < N; i++)
        act[i] = 0.0f;
    act[5] = NAN;
    act[1] = INFINITY;
    EXPECT_ERR(frl_vec_env_step(v), FRL_ERR_NONFINITE, "env 1", "infinite");
    /* Finite actions outside the box are not errors (and not clipped by validation). */
    for (; t < 30; t++) {
        for (int32_t i = 0; i < N; i++)
            act[i] = ref_act[i] = (float)(i - 3) * 100.0f;
        EXPECT_OK(frl_vec_env_step(v));
        EXPECT_OK(frl_vec_env_step(ref));
        snapshot a, b;
        take_snapshot(v, &a);
        take_snapshot(ref, &b);
        expect_same(&a, &b, "after refused box steps");
    }

    /* frl_env_step with a NaN box action: FRL_ERR_NONFINITE, env 0. */
    frl_env *e = NULL;
    EXPECT_OK(frl_env_create(&e, rt, "Pendulum-v1", NULL));
    float obs[3], reward;
    uint8_t term, trunc;
    EXPECT_OK(frl_env_reset(e, 1, obs));
    float a = NAN;
    EXPECT_ERR(frl_env_step(e, &a, obs, &reward, &term, &trunc), FRL_ERR_NONFINITE, "env 0",
               "NaN");
    EXPECT_WORDS(frl_env_last_error(e), "env 0", "NaN");
    a = 0.5f;
    EXPECT_OK(frl_env_step(e, &a, obs, &reward, &term, &trunc));
    frl_env_destroy(e);

    frl_vec_env_destroy(v);
    frl_vec_env_destroy(ref);
    frl_runtime_destroy(rt);
}
END_TEST

/* An env that autoresets this step ignores its action: a bad one there is no error. */
START_TEST(autoreset_ignores_invalid_action)
{
    enum { N = 6 };
    frl_runtime *rt = make_rt(2);
    frl_config *cfg = make_cfg_steps(2);
    frl_vec_env *v = NULL;

    /* Discrete. */
    EXPECT_OK(frl_vec_env_create(&v, rt, "CartPole-v1", N, cfg));
    int32_t *act = frl_vec_env_actions(v);
    EXPECT_OK(frl_vec_env_reset(v, 1));
    for (int s = 0; s < 2; s++) {
        for (int32_t i = 0; i < N; i++)
            act[i] = i % 2;
        EXPECT_OK(frl_vec_env_step(v));
    }
    for (int32_t i = 0; i < N; i++)
        ck_assert_int_eq(frl_vec_env_truncated(v)[i] | frl_vec_env_terminated(v)[i], 1);
    for (int32_t i = 0; i < N; i++)
        act[i] = i % 2 ? -1 : 77;
    EXPECT_OK(frl_vec_env_step(v));
    for (int32_t i = 0; i < N; i++)
        ck_assert_int_eq(frl_vec_env_reset_steps(v)[i], 1);
    /* Now nobody is resetting: the same actions are refused. */
    EXPECT_ERR(frl_vec_env_step(v), FRL_ERR_RANGE, "env 0", "action 77");
    frl_vec_env_destroy(v);

    /* Box: NaN and infinity in resetting envs are ignored; a finite-check still runs
     * for the others in the same step. */
    EXPECT_OK(frl_vec_env_create(&v, rt, "Pendulum-v1", N, cfg));
    float *fact = frl_vec_env_actions(v);
    EXPECT_OK(frl_vec_env_reset(v, 2));
    for (int s = 0; s < 2; s++) {
        for (int32_t i = 0; i < N; i++)
            fact[i] = 0.1f;
        EXPECT_OK(frl_vec_env_step(v));
    }
    for (int32_t i = 0; i < N; i++) {
        ck_assert_int_eq(frl_vec_env_truncated(v)[i], 1);
        fact[i] = i % 2 ? NAN : INFINITY;
    }
    EXPECT_OK(frl_vec_env_step(v));
    for (int32_t i = 0; i < N; i++) {
        ck_assert_int_eq(frl_vec_env_reset_steps(v)[i], 1);
        ck_assert_msg(isfinite(frl_vec_env_observations(v)[3 * i]), "obs not finite");
    }
    EXPECT_ERR(frl_vec_env_step(v), FRL_ERR_NONFINITE, "env 0");
    frl_vec_env_destroy(v);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- callback tables -------------------------------------------------------------- */

static int batch_reset_ok(void *user, int32_t n, const uint64_t *seeds, float *obs);
static int batch_step_ok(void *user, int32_t n, const void *actions, const uint8_t *mask,
                         const uint64_t *seeds, float *obs, float *rewards, uint8_t *term,
                         uint8_t *trunc);
static void batch_close(void *user);

/* State functions that are never called: creation is refused before any callback. */
static int no_get_state(void *user, double *state)
{
    (void)user;
    (void)state;
    return 1;
}

static int no_set_state(void *user, const double *state)
{
    (void)user;
    (void)state;
    return 1;
}

START_TEST(callback_tables_bad)
{
    frl_runtime *rt = make_rt(2);
    host hosts[NHOST];
    void *users[NHOST];
    host_init_all(hosts, users, NHOST);
    frl_space *os = make_box(HOST_OBS), *as = make_discrete(HOST_ACTIONS);
    /* Discrete observations are float32 indices: n above 2^24 is refused. */
    frl_space *ds = make_discrete((1 << 24) + 1);
    frl_env_callbacks cb;
    frl_env *e = JUNK;
    frl_vec_env *v = JUNK;

    EXPECT_ERR(frl_env_create_callbacks(NULL, rt, &cb, &hosts[0], os, as, NULL), FRL_ERR_NULL,
               "out");
    host_callbacks(&cb);
    EXPECT_ERR(frl_env_create_callbacks(&e, NULL, &cb, &hosts[0], os, as, NULL), FRL_ERR_NULL,
               "runtime");
    ck_assert_ptr_null(e);
    e = JUNK;
    EXPECT_ERR(frl_env_create_callbacks(&e, rt, NULL, &hosts[0], os, as, NULL), FRL_ERR_NULL,
               "frl_env_create_callbacks", "callbacks");
    ck_assert_ptr_null(e);
    EXPECT_ERR(frl_vec_env_create_callbacks(&v, rt, NULL, users, NHOST, os, as, NULL),
               FRL_ERR_NULL, "frl_vec_env_create_callbacks", "callbacks");
    ck_assert_ptr_null(v);

    /* A NULL step or reset: FRL_ERR_NULL naming it. */
    cb.step = NULL;
    EXPECT_ERR(frl_env_create_callbacks(&e, rt, &cb, &hosts[0], os, as, NULL), FRL_ERR_NULL,
               "frl_env_create_callbacks", "step");
    EXPECT_ERR(frl_vec_env_create_callbacks(&v, rt, &cb, users, NHOST, os, as, NULL),
               FRL_ERR_NULL, "callbacks.step");
    host_callbacks(&cb);
    cb.reset = NULL;
    EXPECT_ERR(frl_vec_env_create_callbacks(&v, rt, &cb, users, NHOST, os, as, NULL),
               FRL_ERR_NULL, "callbacks.reset");

    /* struct_size too small for the required fields: FRL_ERR_VERSION. */
    static const size_t small[] = {0, sizeof(size_t), offsetof(frl_env_callbacks, step)};
    for (size_t k = 0; k < 3; k++) {
        host_callbacks(&cb);
        cb.struct_size = small[k];
        EXPECT_ERR(frl_env_create_callbacks(&e, rt, &cb, &hosts[0], os, as, NULL),
                   FRL_ERR_VERSION, "struct_size");
        ck_assert_ptr_null(e);
        EXPECT_ERR(frl_vec_env_create_callbacks(&v, rt, &cb, users, NHOST, os, as, NULL),
                   FRL_ERR_VERSION, "struct_size");
        ck_assert_ptr_null(v);
    }
    /* A struct_size that ends inside a field: half a close pointer was copied, the create
     * succeeded and the destroy called the torn pointer (a crash). */
    host_callbacks(&cb);
    cb.struct_size = offsetof(frl_env_callbacks, close) + 4;
    EXPECT_ERR(frl_vec_env_create_callbacks(&v, rt, &cb, users, NHOST, os, as, NULL),
               FRL_ERR_VERSION, "struct_size", "inside a field");
    ck_assert_ptr_null(v);
    EXPECT_ERR(frl_env_create_callbacks(&e, rt, &cb, &hosts[0], os, as, NULL),
               FRL_ERR_VERSION, "struct_size", "inside a field");
    ck_assert_ptr_null(e);
    /* one that ends at a field's end takes the fields before it, the rest defaulted */
    cb.struct_size = offsetof(frl_env_callbacks, close);
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, NHOST, os, as, NULL),
                     FRL_OK);
    frl_vec_env_destroy(v);

    /* state_size without the state functions, or negative. */
    host_callbacks(&cb);
    cb.state_size = 3;
    EXPECT_ERR(frl_vec_env_create_callbacks(&v, rt, &cb, users, NHOST, os, as, NULL),
               FRL_ERR_INVALID_ARGUMENT, "state_size");
    cb.state_size = -1;
    EXPECT_ERR(frl_vec_env_create_callbacks(&v, rt, &cb, users, NHOST, os, as, NULL),
               FRL_ERR_INVALID_ARGUMENT, "state_size");
    /* 2^31 - 1 values and the elapsed count after them: no int32 size holds both. */
    cb.state_size = INT32_MAX;
    cb.get_state = no_get_state;
    cb.set_state = no_set_state;
    EXPECT_ERR(frl_vec_env_create_callbacks(&v, rt, &cb, users, NHOST, os, as, NULL),
               FRL_ERR_INVALID_ARGUMENT, "state_size", "2147483647");
    ck_assert_ptr_null(v);

    /* NULL users, NULL spaces, bad num_envs, a discrete observation space. */
    host_callbacks(&cb);
    EXPECT_ERR(frl_vec_env_create_callbacks(&v, rt, &cb, NULL, NHOST, os, as, NULL),
               FRL_ERR_NULL, "users");
    EXPECT_ERR(frl_vec_env_create_callbacks(&v, rt, &cb, users, NHOST, NULL, as, NULL),
               FRL_ERR_NULL, "observation space");
    EXPECT_ERR(frl_vec_env_create_callbacks(&v, rt, &cb, users, NHOST, os, NULL, NULL),
               FRL_ERR_NULL, "action space");
    EXPECT_ERR(frl_env_create_callbacks(&e, rt, &cb, &hosts[0], NULL, as, NULL), FRL_ERR_NULL,
               "observation space");
    EXPECT_ERR(frl_vec_env_create_callbacks(&v, rt, &cb, users, 0, os, as, NULL), FRL_ERR_RANGE,
               "num_envs");
    EXPECT_ERR(frl_vec_env_create_callbacks(&v, rt, &cb, users, -3, os, as, NULL), FRL_ERR_RANGE,
               "num_envs", "-3");
    EXPECT_ERR(frl_vec_env_create_callbacks(&v, rt, &cb, users, NHOST, ds, as, NULL),
               FRL_ERR_RANGE, "observation space", "2^24");
    EXPECT_ERR(frl_env_create_callbacks(&e, rt, &cb, &hosts[0], ds, as, NULL),
               FRL_ERR_RANGE, "2^24");
    ck_assert_ptr_null(e);
    ck_assert_ptr_null(v);

    /* Batch tables. */
    frl_batch_env_callbacks bcb;
    int batch_closes = 0;
    frl_batch_env_callbacks_init(&bcb);
    bcb.reset = batch_reset_ok;
    bcb.step = batch_step_ok;
    bcb.close = batch_close;
    EXPECT_ERR(frl_vec_env_create_batch(NULL, rt, &bcb, &batch_closes, NHOST, os, as, NULL),
               FRL_ERR_NULL, "out");
    v = JUNK;
    EXPECT_ERR(frl_vec_env_create_batch(&v, NULL, &bcb, &batch_closes, NHOST, os, as, NULL),
               FRL_ERR_NULL, "runtime");
    ck_assert_ptr_null(v);
    EXPECT_ERR(frl_vec_env_create_batch(&v, rt, NULL, &batch_closes, NHOST, os, as, NULL),
               FRL_ERR_NULL, "frl_vec_env_create_batch", "callbacks");
    bcb.step = NULL;
    EXPECT_ERR(frl_vec_env_create_batch(&v, rt, &bcb, &batch_closes, NHOST, os, as, NULL),
               FRL_ERR_NULL, "callbacks.step");
    bcb.step = batch_step_ok;
    bcb.reset = NULL;
    EXPECT_ERR(frl_vec_env_create_batch(&v, rt, &bcb, &batch_closes, NHOST, os, as, NULL),
               FRL_ERR_NULL, "callbacks.reset");
    bcb.reset = batch_reset_ok;
    bcb.struct_size = 0;
    EXPECT_ERR(frl_vec_env_create_batch(&v, rt, &bcb, &batch_closes, NHOST, os, as, NULL),
               FRL_ERR_VERSION, "struct_size");
    bcb.struct_size = sizeof bcb;
    EXPECT_ERR(frl_vec_env_create_batch(&v, rt, &bcb, &batch_closes, NHOST, ds, as, NULL),
               FRL_ERR_RANGE, "2^24");
    EXPECT_ERR(frl_vec_env_create_batch(&v, rt, &bcb, &batch_closes, NHOST, os, NULL, NULL),
               FRL_ERR_NULL, "action space");
    EXPECT_ERR(frl_vec_env_create_batch(&v, rt, &bcb, &batch_closes, -1, os, as, NULL),
               FRL_ERR_RANGE, "num_envs");
    ck_assert_ptr_null(v);

    /* No failed create called a close callback or any other callback. */
    ck_assert_int_eq(batch_closes, 0);
    for (int i = 0; i < NHOST; i++) {
        ck_assert_int_eq(hosts[i].closes, 0);
        ck_assert_int_eq(hosts[i].resets + hosts[i].steps, 0);
    }
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_space_destroy(ds);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- host callback failures on pool threads --------------------------------------- */

static frl_vec_env *make_host_vec(frl_runtime *rt, host *hosts, void **users)
{
    frl_env_callbacks cb;
    host_callbacks(&cb);
    frl_space *os = make_box(HOST_OBS), *as = make_discrete(HOST_ACTIONS);
    frl_vec_env *v = NULL;
    host_init_all(hosts, users, NHOST);
    EXPECT_OK(frl_vec_env_create_callbacks(&v, rt, &cb, users, NHOST, os, as, NULL));
    frl_space_destroy(os);
    frl_space_destroy(as);
    return v;
}

static void set_actions(frl_vec_env *v)
{
    int32_t *a = frl_vec_env_actions(v);
    for (int32_t i = 0; i < NHOST; i++)
        a[i] = i % HOST_ACTIONS;
}

/* Step with env 3's failure armed (by arm/disarm flipping *flag) until it has happened
 * at least three times on a worker thread (env 0 waits for env 3, so the two run on
 * different threads). Every failing step must give want, with the words in
 * frl_last_error() and frl_vec_env_last_error(); after each, a step with the failure
 * disarmed succeeds. */
static void fail_on_worker(frl_vec_env *v, host *hosts, int *flag, int value, frl_status want,
                           const char *w1, const char *w2)
{
    pthread_t self = pthread_self();
    int on_worker = 0;
    for (int attempt = 0; attempt < 50 && on_worker < 3; attempt++) {
        atomic_store(&env3_ran, 0);
        hosts[0].wait_for_env3 = 1;
        *flag = value;
        set_actions(v);
        EXPECT_ERR(frl_vec_env_step(v), want, "env 3", "step", w1, w2);
        EXPECT_WORDS(frl_vec_env_last_error(v), "env 3", "step", w1, w2);
        on_worker += !pthread_equal(hosts[3].last_thread, self);
        hosts[0].wait_for_env3 = 0;
        *flag = 0;
        set_actions(v);
        EXPECT_OK(frl_vec_env_step(v));
    }
    ck_assert_msg(on_worker > 0, "env 3 never ran on a worker thread");
}

START_TEST(callback_failures_reach_caller)
{
    frl_runtime *rt = make_rt(2);
    host hosts[NHOST];
    void *users[NHOST];
    frl_vec_env *v = make_host_vec(rt, hosts, users);

    EXPECT_ERR(frl_vec_env_step(v), FRL_ERR_STATE, "reset");
    EXPECT_OK(frl_vec_env_reset(v, 8));
    for (int t = 0; t < 3; t++) {
        set_actions(v);
        EXPECT_OK(frl_vec_env_step(v));
    }

    /* A step callback returning 5. */
    fail_on_worker(v, hosts, &hosts[3].step_rc, 5, FRL_ERR_CALLBACK, "5", "callback");
    /* NaN, +inf and -inf written into obs. */
    fail_on_worker(v, hosts, &hosts[3].bad_obs, 1, FRL_ERR_NONFINITE, "NaN", "obs");
    fail_on_worker(v, hosts, &hosts[3].bad_obs, 2, FRL_ERR_NONFINITE, "inf", "obs");
    fail_on_worker(v, hosts, &hosts[3].bad_obs, 3, FRL_ERR_NONFINITE, "inf", "obs");
    /* NaN and infinite rewards. */
    fail_on_worker(v, hosts, &hosts[3].bad_reward, 1, FRL_ERR_NONFINITE, "NaN", "reward");
    fail_on_worker(v, hosts, &hosts[3].bad_reward, 2, FRL_ERR_NONFINITE, "infinite", "reward");

    /* Healthy again: stepping works. */
    for (int t = 0; t < 3; t++) {
        set_actions(v);
        EXPECT_OK(frl_vec_env_step(v));
    }

    /* A reset callback failing in env 3: the reset fails naming env 3 and "reset", and
     * the vec env then needs a successful reset before it steps. */
    hosts[3].reset_rc = 6;
    EXPECT_ERR(frl_vec_env_reset(v, 9), FRL_ERR_CALLBACK, "env 3", "reset", "6");
    EXPECT_WORDS(frl_vec_env_last_error(v), "env 3", "reset", "6");
    hosts[3].reset_rc = 0;
    hosts[3].bad_reset_obs = 1;
    EXPECT_ERR(frl_vec_env_reset(v, 9), FRL_ERR_NONFINITE, "env 3", "reset", "NaN");
    hosts[3].bad_reset_obs = 0;
    EXPECT_OK(frl_vec_env_reset(v, 9));
    set_actions(v);
    EXPECT_OK(frl_vec_env_step(v));

    frl_vec_env_destroy(v);
    for (int i = 0; i < NHOST; i++) {
        ck_assert_int_eq(hosts[i].closes, 1);
        ck_assert_int_eq(hosts[i].invalid_actions, 0);
    }
    frl_runtime_destroy(rt);
}
END_TEST

/* Failures through the single-env wrapper name env 0 and the step, on both messages. */
START_TEST(single_env_callback_failure)
{
    frl_runtime *rt = make_rt(1);
    host h;
    void *user;
    host_init_all(&h, &user, 1);
    frl_env_callbacks cb;
    host_callbacks(&cb);
    frl_space *os = make_box(HOST_OBS), *as = make_discrete(HOST_ACTIONS);
    frl_env *e = NULL;
    EXPECT_OK(frl_env_create_callbacks(&e, rt, &cb, &h, os, as, NULL));
    float obs[HOST_OBS], reward;
    uint8_t term, trunc;
    int32_t a = 1;
    h.reset_rc = 4;
    EXPECT_ERR(frl_env_reset(e, 1, obs), FRL_ERR_CALLBACK, "env 0", "reset", "4");
    EXPECT_WORDS(frl_env_last_error(e), "env 0", "reset", "4");
    EXPECT_ERR(frl_env_step(e, &a, obs, &reward, &term, &trunc), FRL_ERR_STATE, "reset");
    h.reset_rc = 0;
    EXPECT_OK(frl_env_reset(e, 1, obs));
    h.step_rc = 5;
    EXPECT_ERR(frl_env_step(e, &a, obs, &reward, &term, &trunc), FRL_ERR_CALLBACK, "env 0",
               "step", "5");
    EXPECT_WORDS(frl_env_last_error(e), "env 0", "step", "5");
    h.step_rc = 0;
    h.bad_reward = 1;
    EXPECT_OK(frl_env_reset(e, 2, obs));
    EXPECT_ERR(frl_env_step(e, &a, obs, &reward, &term, &trunc), FRL_ERR_NONFINITE, "env 0",
               "reward");
    h.bad_reward = 0;
    /* The next step says why a reset is wanted: the failure, not an episode's end. */
    EXPECT_ERR(frl_env_step(e, &a, obs, &reward, &term, &trunc), FRL_ERR_STATE,
               "last step failed", "frl_env_reset");
    a = 3;
    EXPECT_OK(frl_env_reset(e, 3, obs));
    EXPECT_ERR(frl_env_step(e, &a, obs, &reward, &term, &trunc), FRL_ERR_RANGE, "env 0",
               "action 3");
    frl_env_destroy(e);
    ck_assert_int_eq(h.closes, 1);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
}
END_TEST

/* An autoreset whose reset callback fails ends no episode: total_episodes counts only
 * the episode that really ended (the step before). */
START_TEST(failed_autoreset_counts_no_episode)
{
    frl_runtime *rt = make_rt(2);
    host hosts[NHOST];
    void *users[NHOST];
    frl_vec_env *v = make_host_vec(rt, hosts, users);
    hosts[3].terminate_at = 2;
    EXPECT_OK(frl_vec_env_reset(v, 1));
    set_actions(v);
    EXPECT_OK(frl_vec_env_step(v));
    set_actions(v);
    EXPECT_OK(frl_vec_env_step(v));
    ck_assert_int_eq(frl_vec_env_terminated(v)[3], 1);
    ck_assert_int_eq(frl_vec_env_total_episodes(v), 1);
    hosts[3].reset_rc = 9;
    set_actions(v);
    EXPECT_ERR(frl_vec_env_step(v), FRL_ERR_CALLBACK, "env 3", "reset", "9");
    ck_assert_msg(frl_vec_env_total_episodes(v) == 1,
                  "total_episodes is %lld after a failed autoreset (expected 1)",
                  (long long)frl_vec_env_total_episodes(v));
    hosts[3].reset_rc = 0;
    hosts[3].terminate_at = 0;
    set_actions(v);
    EXPECT_OK(frl_vec_env_step(v));
    ck_assert_int_eq(frl_vec_env_reset_steps(v)[3], 1);
    ck_assert_int_eq(frl_vec_env_total_episodes(v), 1);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- batch callbacks -------------------------------------------------------------- */

typedef struct world {
    int closes;
    int step_rc, reset_rc;
    int nan_obs_agent;      /* step writes NaN into this agent's obs (-1: none) */
    int inf_reward_agent;   /* step writes +inf into this agent's reward (-1: none) */
    int nan_reset_reward;   /* write NaN rewards for agents being reset */
    int nan_reset_obs_agent;/* reset writes NaN into this agent's obs (-1: none) */
    int steps, resets;
} world;

static int batch_reset_ok(void *user, int32_t n, const uint64_t *seeds, float *obs)
{
    world *w = user;
    (void)seeds;
    w->resets++;
    if (w->reset_rc)
        return w->reset_rc;
    for (int32_t i = 0; i < n; i++) {
        obs[i * HOST_OBS] = (float)i;
        obs[i * HOST_OBS + 1] = i == w->nan_reset_obs_agent ? NAN : 0.0f;
    }
    return 0;
}

static int batch_step_ok(void *user, int32_t n, const void *actions, const uint8_t *mask,
                         const uint64_t *seeds, float *obs, float *rewards, uint8_t *term,
                         uint8_t *trunc)
{
    world *w = user;
    (void)actions;
    (void)seeds;
    w->steps++;
    if (w->step_rc)
        return w->step_rc;
    for (int32_t i = 0; i < n; i++) {
        obs[i * HOST_OBS] = (float)i;
        obs[i * HOST_OBS + 1] = (float)w->steps;
        rewards[i] = mask[i] && w->nan_reset_reward ? NAN : 1.0f;
        term[i] = 0;
        trunc[i] = 0;
    }
    if (w->nan_obs_agent >= 0)
        obs[w->nan_obs_agent * HOST_OBS + 1] = NAN;
    if (w->inf_reward_agent >= 0)
        rewards[w->inf_reward_agent] = INFINITY;
    return 0;
}

static void batch_close(void *user)
{
    ((world *)user)->closes++;
}

START_TEST(batch_failures)
{
    frl_runtime *rt = make_rt(2);
    frl_space *os = make_box(HOST_OBS), *as = make_discrete(HOST_ACTIONS);
    frl_config *cfg = make_cfg_steps(3);
    world w;
    memset(&w, 0, sizeof w);
    w.nan_obs_agent = w.inf_reward_agent = w.nan_reset_obs_agent = -1;
    frl_batch_env_callbacks cb;
    frl_batch_env_callbacks_init(&cb);
    cb.reset = batch_reset_ok;
    cb.step = batch_step_ok;
    cb.close = batch_close;
    frl_vec_env *v = NULL;
    EXPECT_OK(frl_vec_env_create_batch(&v, rt, &cb, &w, NHOST, os, as, cfg));

    EXPECT_ERR(frl_vec_env_step(v), FRL_ERR_STATE, "reset");
    w.reset_rc = 3;
    EXPECT_ERR(frl_vec_env_reset(v, 1), FRL_ERR_CALLBACK, "reset", "3");
    EXPECT_WORDS(frl_vec_env_last_error(v), "reset", "3");
    w.reset_rc = 0;
    w.nan_reset_obs_agent = 3;
    EXPECT_ERR(frl_vec_env_reset(v, 1), FRL_ERR_NONFINITE, "env 3", "reset", "NaN");
    w.nan_reset_obs_agent = -1;
    EXPECT_OK(frl_vec_env_reset(v, 1));
    set_actions(v);
    EXPECT_OK(frl_vec_env_step(v));

    w.step_rc = 5;
    set_actions(v);
    EXPECT_ERR(frl_vec_env_step(v), FRL_ERR_CALLBACK, "step", "5");
    EXPECT_WORDS(frl_vec_env_last_error(v), "step", "5");
    w.step_rc = 0;

    w.nan_obs_agent = 3;
    set_actions(v);
    EXPECT_ERR(frl_vec_env_step(v), FRL_ERR_NONFINITE, "env 3", "step", "NaN", "obs");
    EXPECT_WORDS(frl_vec_env_last_error(v), "env 3", "step", "NaN");
    w.nan_obs_agent = -1;

    w.inf_reward_agent = 3;
    set_actions(v);
    EXPECT_ERR(frl_vec_env_step(v), FRL_ERR_NONFINITE, "env 3", "step", "reward");
    EXPECT_WORDS(frl_vec_env_last_error(v), "env 3", "reward");
    w.inf_reward_agent = -1;

    /* Out-of-range action for agent 4: refused before the callback is called. */
    int before = w.steps;
    set_actions(v);
    ((int32_t *)frl_vec_env_actions(v))[4] = HOST_ACTIONS;
    EXPECT_ERR(frl_vec_env_step(v), FRL_ERR_RANGE, "env 4", "action 3");
    ck_assert_int_eq(w.steps, before);

    /* Rewards of agents being reset are ignored, NaN or not (time limit 3). */
    EXPECT_OK(frl_vec_env_reset(v, 2));
    w.nan_reset_reward = 1;
    for (int t = 0; t < 8; t++) {
        set_actions(v);
        EXPECT_OK(frl_vec_env_step(v));
    }
    ck_assert_int_gt(frl_vec_env_total_episodes(v), 0);
    frl_vec_env_destroy(v);
    ck_assert_int_eq(w.closes, 1);
    frl_config_destroy(cfg);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bad_input");
    TCase *tc = tcase_create("bad_input");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, status_names_distinct);
    tcase_add_test(tc, null_handles_are_harmless);
    tcase_add_test(tc, config_null_arguments);
    tcase_add_test(tc, config_unknown_key);
    tcase_add_test(tc, config_bad_values);
    tcase_add_test(tc, allocator_and_logger_tables);
    tcase_add_test(tc, runtime_bad_input);
    tcase_add_test(tc, space_bad_input);
    tcase_add_test(tc, env_create_bad_input);
    tcase_add_test(tc, env_step_state_errors);
    tcase_add_test(tc, env_state_errors);
    tcase_add_test(tc, vec_discrete_action_out_of_range);
    tcase_add_test(tc, vec_box_action_nonfinite);
    tcase_add_test(tc, autoreset_ignores_invalid_action);
    tcase_add_test(tc, callback_tables_bad);
    tcase_add_test(tc, callback_failures_reach_caller);
    tcase_add_test(tc, single_env_callback_failure);
    tcase_add_test(tc, failed_autoreset_counts_no_episode);
    tcase_add_test(tc, batch_failures);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
