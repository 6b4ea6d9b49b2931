/* A program built against the 0.2 header (tests/abi/0.2/fastrl.h) and linked against a
 * 0.2-shaped library (the link stub beside it), run against the current libfastrl.so.0:
 * what every engine or controller built once against 0.2 meets after an upgrade.
 *
 * 0.2's initialisers were exported functions that cleared the library's sizeof of each
 * table. Once a table grows (frl_act_args did in 0.3), that overruns the caller's
 * smaller struct. Each table here sits on the stack twice: alone (AddressSanitizer's
 * redzones catch a write past it in the sanitizer build) and followed by a guard (every
 * build catches a write into it). The program then does real work through 0.2-sized
 * tables: a runtime with a logger and an allocator, host envs through callbacks, and a
 * policy acting with 0.2's frl_act_args, which has no width fields. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastrl.h" /* the 0.2 header */

enum { GUARD = 64, FILL = 0xA5 };

static int failures;

static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        failures++;
    }
}

static int guard_intact(const unsigned char *g)
{
    for (int i = 0; i < GUARD; i++)
        if (g[i] != FILL)
            return 0;
    return 1;
}

/* Initialise a table that has a guard after it; the guard must be untouched and
 * struct_size must be this program's sizeof. */
#define CHECK_INIT(type, init)                                                            \
    do {                                                                                  \
        struct {                                                                          \
            type t;                                                                       \
            unsigned char guard[GUARD];                                                   \
        } s;                                                                              \
        memset(&s, FILL, sizeof s);                                                       \
        init(&s.t);                                                                       \
        expect(guard_intact(s.guard), #init " wrote past the caller's " #type);           \
        expect(s.t.struct_size == sizeof s.t, #init " set a struct_size other than the "  \
                                              "0.2 sizeof of " #type);                    \
        type alone;                                                                       \
        init(&alone); /* ASan: a write past `alone` is a stack-buffer-overflow */         \
        expect(alone.struct_size == sizeof alone, #init ": struct_size of a lone table"); \
    } while (0)

static int log_calls;
static void on_log(void *user, frl_log_level level, const char *message)
{
    (void)user, (void)level, (void)message;
    log_calls++;
}

static int env_reset(void *user, uint64_t seed, float *obs)
{
    (void)user;
    obs[0] = (float)(seed % 7) * 0.1f;
    obs[1] = 0.5f;
    return 0;
}

static int env_step(void *user, const void *action, float *obs, float *reward,
                    uint8_t *terminated, uint8_t *truncated)
{
    (void)user;
    obs[0] += *(const int32_t *)action ? 0.1f : -0.1f;
    *reward = 1.0f;
    *terminated = obs[0] > 1.0f || obs[0] < -1.0f;
    *truncated = 0;
    return 0;
}

static void check_inits(void)
{
    CHECK_INIT(frl_allocator, frl_allocator_init);
    CHECK_INIT(frl_logger, frl_logger_init);
    CHECK_INIT(frl_env_callbacks, frl_env_callbacks_init);
    CHECK_INIT(frl_batch_env_callbacks, frl_batch_env_callbacks_init);
    CHECK_INIT(frl_act_args, frl_act_args_init);
    frl_allocator a;
    frl_allocator_init(&a);
    expect(a.alloc && a.free, "0.2's frl_allocator_init filled in the default functions");
    frl_logger l;
    frl_logger_init(&l);
    expect(l.max_level == FRL_LOG_INFO && !l.log, "frl_logger_init's defaults");
}

/* Work through 0.2-sized tables end to end. */
static void check_work(void)
{
    frl_allocator a;
    frl_logger lg;
    frl_allocator_init(&a);
    frl_logger_init(&lg);
    lg.log = on_log;
    lg.max_level = FRL_LOG_DEBUG;
    frl_runtime *rt = NULL;
    frl_status st = frl_runtime_create(&rt, NULL, &a, &lg);
    expect(st == FRL_OK, "frl_runtime_create with 0.2 allocator and logger tables");
    if (st != FRL_OK)
        return;
    frl_space *obs = NULL, *act = NULL;
    int64_t shape[1] = {2};
    frl_space_create_box(&obs, NULL, 1, shape, NULL, NULL);
    frl_space_create_discrete(&act, NULL, 2);
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = env_reset;
    cb.step = env_step;
    void *users[4] = {NULL, NULL, NULL, NULL};
    frl_vec_env *venv = NULL;
    st = frl_vec_env_create_callbacks(&venv, rt, &cb, users, 4, obs, act, NULL);
    expect(st == FRL_OK, "frl_vec_env_create_callbacks with a 0.2 callback table");
    expect(st == FRL_OK && frl_vec_env_reset(venv, 3) == FRL_OK, "reset the host envs");
    frl_policy *p = NULL;
    st = frl_policy_create(&p, rt, NULL, obs, act);
    expect(st == FRL_OK, "frl_policy_create");
    if (st == FRL_OK && venv) {
        frl_act_args args; /* 0.2's: no observation_width or action_width */
        frl_act_args_init(&args);
        args.batch = 4;
        args.observations = frl_vec_env_observations(venv);
        args.actions = frl_vec_env_actions(venv);
        args.deterministic = 1;
        st = frl_policy_act(p, &args);
        if (st != FRL_OK)
            fprintf(stderr, "frl_policy_act: %s\n", frl_last_error());
        expect(st == FRL_OK, "frl_policy_act with 0.2's frl_act_args");
        expect(st == FRL_OK && frl_vec_env_step(venv) == FRL_OK, "step with its actions");
    }
    frl_policy_destroy(p);
    frl_vec_env_destroy(venv);
    frl_space_destroy(obs);
    frl_space_destroy(act);
    frl_runtime_destroy(rt);
}

int main(void)
{
    uint32_t abi = frl_abi_version();
    printf("built against ABI 0.2, running against ABI %u.%u\n", abi >> 16, abi & 0xffff);
    check_inits();
    check_work();
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
