/* A checkpoint's built-in simulators are raw structs that a file only guards with CRCs:
 * every class checks a restored sim (its settings, counts and indices, finite values)
 * and a forged one is refused with FRL_ERR_FORMAT naming the env and the field, before
 * anything is written (a MemoryProbe-v0 sim with 0 cues divided by zero at the next
 * reset, one with 100,000 wrote past the observation). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "env/registry.h"
#include "env/vec_env.h"
#include "env/vec_env_state.h"
#include "test_util.h"

enum { N = 2, FORGED = 1 };

/* One field of env FORGED's sim, a double or an int32, at a byte offset. */
typedef struct forgery {
    const char *env;
    size_t offset;
    int is_int;
    double value;
    const char *words; /* in the message after "env.sims: env 1 holds no ENV simulator" */
} forgery;

static frl_vec_env *started(frl_runtime *rt, const char *env, uint64_t seed)
{
    frl_vec_env *v = NULL;
    ck_assert_msg(frl_vec_env_create(&v, rt, env, N, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(frl_vec_env_reset(v, seed), FRL_OK);
    memset(frl_vec_env_actions(v), 0, v->action_bytes * N); /* action 0, or torque 0 */
    for (int k = 0; k < 3; k++)
        ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
    return v;
}

/* v's sections written to path with section `name` replaced by data. */
static void save_with(const frl_vec_env *v, const char *name, const void *data,
                      const char *path)
{
    frl_section sec[FRL_VEC_ENV_SECTIONS];
    int32_t n = 0;
    frl_vec_env_snap snap;
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_vec_env_snapshot(v, &snap, sec, &n, err), FRL_OK);
    for (int32_t i = 0; i < n; i++)
        if (strcmp(sec[i].name, name) == 0)
            sec[i].data = data;
    ck_assert_int_eq(frl_container_write(path, NULL, sec, n, err), FRL_OK);
    frl_vec_env_snap_free(&snap);
}

static void save_with_sims(const frl_vec_env *v, const uint8_t *sims, const char *path)
{
    save_with(v, "env.sims", sims, path);
}

/* Restore path into a fresh vec env of env: the status, and whether its sims stayed. */
static frl_status restore(frl_runtime *rt, const char *env, const char *path, char *err)
{
    frl_vec_env *w = started(rt, env, 9);
    static uint8_t before[N * FRL_SIM_MAX_BYTES];
    memcpy(before, w->b.sims, sizeof before);
    frl_container *c = NULL;
    ck_assert_int_eq(frl_container_read(&c, path, NULL, err), FRL_OK);
    frl_status st = frl_vec_env_restore(w, c, err);
    if (st != FRL_OK)
        ck_assert_msg(memcmp(before, w->b.sims, sizeof before) == 0, "%s: sims changed", env);
    frl_container_free(c);
    frl_vec_env_destroy(w);
    return st;
}

START_TEST(forged_sims_refused)
{
    static const forgery cases[] = {
        {"CartPole-v1", 0, 0, NAN, "x is nan"},
        {"CartPole-v1", 8, 0, 1e39, "observation[1] would not be finite"},
        {"MountainCar-v0", 0, 0, -1e300, "observation[0] would not be finite"},
        {"CartPoleNoVel-v1", 16, 0, INFINITY, "theta is inf"},
        {"Acrobot-v1", 0, 0, 4.0, "angles in [-pi, pi]"},
        {"Acrobot-v1", 24, 0, 30.0, "|dtheta2| <= 9 pi"},
        {"MountainCar-v0", 8, 0, NAN, "velocity is nan"},
        {"MountainCarContinuous-v0", 16, 1, 7, "is_f32 0 or 1"},
        {"MountainCarContinuous-v0", 0, 0, -INFINITY, "position is -inf"},
        {"Pendulum-v1", 8, 0, -INFINITY, "theta_dot is -inf"},
        {"MemoryProbe-v0", 0, 1, 0, "cues 0, delay"},
        {"MemoryProbe-v0", 0, 1, 100000, "cues 100000, delay"},
        {"MemoryProbe-v0", 4, 1, 999, "the settings give 4,"},
        {"MemoryProbe-v0", 8, 1, -1, "cue -1 is outside [0, 4)"},
        {"MemoryProbe-v0", 12, 1, 1000, "t 1000 is outside"},
        /* the ended episode's t = D + 2 in an env that steps on: it never ended */
        {"MemoryProbe-v0", 12, 1, 22, "not one a MemoryProbe-v0 episode goes on from"},
    };
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], err[FRL_ERRMSG_SIZE], want[96];
    snprintf(path, sizeof path, "/tmp/frl_sim_restore_%d", (int)getpid());
    static uint8_t sims[N * FRL_SIM_MAX_BYTES];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const forgery *f = &cases[k];
        frl_vec_env *v = started(rt, f->env, 4);
        memcpy(sims, v->b.sims, sizeof sims);
        uint8_t *at = sims + FORGED * FRL_SIM_MAX_BYTES + f->offset;
        int32_t i = (int32_t)f->value;
        if (f->is_int)
            memcpy(at, &i, sizeof i);
        else
            memcpy(at, &f->value, sizeof f->value);
        save_with_sims(v, sims, path);
        ck_assert_int_eq(restore(rt, f->env, path, err), FRL_ERR_FORMAT);
        if (strstr(f->words, "goes on from"))
            snprintf(want, sizeof want, "env.sims: env 1 is not waiting for its reset");
        else
            snprintf(want, sizeof want, "env.sims: env 1 holds no %s simulator: ", f->env);
        ck_assert_msg(strstr(err, want) && strstr(err, f->words), "case %d: %s", (int)k, err);
        save_with_sims(v, v->b.sims, path); /* the same file unforged loads */
        ck_assert_msg(restore(rt, f->env, path, err) == FRL_OK, "%s: %s", f->env, err);
        frl_vec_env_destroy(v);
    }
    remove(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* The built-ins that run on callbacks (PixelGrid-v0 here; the ray and MuJoCo tasks
 * alike) refuse a forged state in their set_state: that is the file's fault too, so
 * FRL_ERR_FORMAT, not the FRL_ERR_CALLBACK of a host's refusal (frl_trainer_load gave
 * it, which its table does not list). */
START_TEST(forged_callback_builtin_state_refused)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], err[FRL_ERRMSG_SIZE];
    snprintf(path, sizeof path, "/tmp/frl_sim_restore_c%d", (int)getpid());
    frl_vec_env *v = started(rt, "PixelGrid-v0", 4);
    frl_section sec[FRL_VEC_ENV_SECTIONS];
    int32_t n = 0;
    frl_vec_env_snap snap;
    ck_assert_int_eq(frl_vec_env_snapshot(v, &snap, sec, &n, err), FRL_OK);
    double states[N * 64];
    int found = 0;
    for (int32_t i = 0; i < n; i++)
        if (strcmp(sec[i].name, "env.states") == 0) {
            ck_assert(sec[i].count <= (int64_t)(sizeof states / sizeof states[0]));
            memcpy(states, sec[i].data, sizeof(double) * (size_t)sec[i].count);
            found = 1;
        }
    frl_vec_env_snap_free(&snap);
    ck_assert(found);
    states[0] = 3.5e38;
    save_with(v, "env.states", states, path);
    frl_status st = restore(rt, "PixelGrid-v0", path, err);
    ck_assert_msg(st == FRL_ERR_FORMAT, "%s: %s", frl_status_name(st), err);
    ck_assert_msg(strstr(err, "the saved state of env 0"), "%s", err);
    frl_vec_env_destroy(v);
    remove(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* A forged negative elapsed count is refused too (it put off the time limit by as many
 * steps, and episode lengths came out negative). */
START_TEST(forged_elapsed_refused)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], err[FRL_ERRMSG_SIZE];
    snprintf(path, sizeof path, "/tmp/frl_sim_restore_e%d", (int)getpid());
    frl_vec_env *v = started(rt, "CartPole-v1", 4);
    int32_t elapsed[N] = {3, INT32_MIN};
    save_with(v, "env.elapsed", elapsed, path);
    ck_assert_int_eq(restore(rt, "CartPole-v1", path, err), FRL_ERR_FORMAT);
    ck_assert_msg(strstr(err, "env.elapsed: env 1 has -2147483648 elapsed steps"), "%s", err);
    elapsed[1] = INT32_MAX; /* the most a run holds */
    save_with(v, "env.elapsed", elapsed, path);
    ck_assert_msg(restore(rt, "CartPole-v1", path, err) == FRL_OK, "%s", err);
    frl_vec_env_destroy(v);
    remove(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* Every built-in class has the check (a new class without one would restore raw), and
 * the rule its set_state's refusals quote. */
START_TEST(every_class_checks)
{
    for (int32_t i = 0; frl_env_class_at(i); i++) {
        ck_assert_msg(frl_env_class_at(i)->check_sim != NULL, "%s", frl_env_class_at(i)->name);
        ck_assert_msg(frl_env_class_at(i)->state_rule != NULL, "%s", frl_env_class_at(i)->name);
    }
}
END_TEST

/* Step t's actions for every env: a mix that ends episodes now and then. */
static void write_actions(frl_vec_env *v, int32_t t)
{
    for (int32_t i = 0; i < v->n; i++) {
        if (v->action_n)
            ((int32_t *)frl_vec_env_actions(v))[i] = (i * 7 + t * 3) % v->action_n;
        else
            ((float *)frl_vec_env_actions(v))[i] = (float)((i + t) % 5) - 2.0f;
    }
}

static void same_arrays(const frl_vec_env *a, const frl_vec_env *b, const char *env, int t)
{
    size_t n = (size_t)a->n;
    ck_assert_msg(memcmp(a->b.obs, b->b.obs, sizeof(float) * n * (size_t)a->obs_w) == 0 &&
                  memcmp(a->b.rewards, b->b.rewards, sizeof(float) * n) == 0 &&
                  memcmp(a->b.terminated, b->b.terminated, n) == 0 &&
                  memcmp(a->b.truncated, b->b.truncated, n) == 0 &&
                  memcmp(a->b.reset_step, b->b.reset_step, n) == 0 &&
                  memcmp(a->b.done_return, b->b.done_return, sizeof(float) * n) == 0 &&
                  memcmp(a->b.done_length, b->b.done_length, sizeof(int32_t) * n) == 0 &&
                  a->total_episodes == b->total_episodes && a->total_steps == b->total_steps,
                  "%s step %d: the restored run went another way", env, t);
}

/* The k-th env to run: every built-in class, then the pixel envs (host envs whose
 * states go through get_state and set_state); NULL after the last. */
static const char *env_at(int32_t k)
{
    static const char *const pixels[] = {"PixelGrid-v0", "PixelGoal-v0", NULL};
    int32_t classes = frl_env_class_count();
    return k < classes ? frl_env_class_at(k)->name : pixels[k - classes < 2 ? k - classes : 2];
}

/* A restored vec env continues bit for bit as the one saved, on another thread count,
 * every built-in, with envs in more than one chunk. */
START_TEST(restored_run_continues_identically)
{
    enum { M = 130, BEFORE = 37, AFTER = 60 };
    frl_runtime *r2 = frl_test_runtime(2), *r3 = frl_test_runtime(3);
    char path[64], err[FRL_ERRMSG_SIZE];
    snprintf(path, sizeof path, "/tmp/frl_sim_restore_r%d", (int)getpid());
    for (int32_t k = 0; env_at(k); k++) {
        const char *env = env_at(k);
        frl_vec_env *v = NULL, *w = NULL;
        ck_assert_int_eq(frl_vec_env_create(&v, r2, env, M, NULL), FRL_OK);
        ck_assert_int_eq(frl_vec_env_create(&w, r3, env, M, NULL), FRL_OK);
        ck_assert_int_eq(frl_vec_env_reset(v, 21), FRL_OK);
        for (int t = 0; t < BEFORE; t++) {
            write_actions(v, t);
            ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
        }
        save_with(v, "", NULL, path);
        frl_container *c = NULL;
        ck_assert_int_eq(frl_container_read(&c, path, NULL, err), FRL_OK);
        ck_assert_msg(frl_vec_env_restore(w, c, err) == FRL_OK, "%s: %s", env, err);
        frl_container_free(c);
        same_arrays(v, w, env, BEFORE);
        for (int t = BEFORE; t < BEFORE + AFTER; t++) {
            write_actions(v, t);
            write_actions(w, t);
            ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
            ck_assert_int_eq(frl_vec_env_step(w), FRL_OK);
            same_arrays(v, w, env, t);
        }
        frl_vec_env_destroy(v);
        frl_vec_env_destroy(w);
    }
    remove(path);
    frl_runtime_destroy(r2);
    frl_runtime_destroy(r3);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_restore");
    TCase *tc = tcase_create("sim_restore");
    tcase_add_test(tc, forged_sims_refused);
    tcase_add_test(tc, every_class_checks);
    tcase_add_test(tc, forged_elapsed_refused);
    tcase_add_test(tc, forged_callback_builtin_state_refused);
    tcase_add_test(tc, restored_run_continues_identically);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
