/* Policy files whose checksums are right but whose values no policy can act on: a
 * normaliser that freezes to an infinite mean or a zero 1/std, a log-std whose draws
 * overflow, box bounds that become infinities or an empty interval as floats, an
 * epsilon outside [0, 1]. Each is refused at load with FRL_ERR_FORMAT naming the section
 * (before, the first three loaded and acted NaN or inf with FRL_OK); the file as saved
 * still loads, and a saved Q-policy acts with the epsilon it had. Also a trainer
 * checkpoint from an older version: an IMPALA run saved with train.advantage=gae; and
 * the refusal when an override of train.algo meets a saved key of the old algorithm, and
 * a saved observation the space cannot hold. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rl/policy.h"
#include "trainer/trainer.h"
#include "test_util.h"
#include "trainer_checks.h"

typedef struct fix {
    frl_runtime *rt;
    frl_policy *p;
    char path[64], bad[72];
} fix;

/* A policy on a box(3) observation with box(2) actions in [-1, 1] (discrete(3) with
 * discrete), saved to f->path. */
static void make(fix *f, int discrete, const char *settings)
{
    f->rt = frl_test_runtime(1);
    int64_t shape = 3, ashape = 2;
    float lo[2] = {-1, -1}, hi[2] = {1, 1};
    frl_space *os, *as;
    ck_assert_int_eq(frl_space_create_box(&os, NULL, 1, &shape, NULL, NULL), FRL_OK);
    if (discrete)
        ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 3), FRL_OK);
    else
        ck_assert_int_eq(frl_space_create_box(&as, NULL, 1, &ashape, lo, hi), FRL_OK);
    frl_config *cfg = frl_test_settings(settings);
    ck_assert_int_eq(frl_policy_create(&f->p, f->rt, cfg, os, as), FRL_OK);
    frl_config_destroy(cfg);
    frl_space_destroy(os);
    frl_space_destroy(as);
    forged_paths("frl_policy_file", f->path, f->bad);
    ck_assert_int_eq(frl_policy_save(f->p, f->path), FRL_OK);
}

static void unmake(fix *f)
{
    frl_policy_destroy(f->p);
    unlink(f->path);
    unlink(f->bad);
    frl_runtime_destroy(f->rt);
}

/* Loading path fails with FRL_ERR_FORMAT, saying words; nothing is made. */
static void expect_format(fix *f, const char *path, const char *words)
{
    frl_policy *q = (frl_policy *)1;
    frl_status st = frl_policy_load(&q, f->rt, path);
    ck_assert_msg(st == FRL_ERR_FORMAT, "status %d (%s), want FRL_ERR_FORMAT", (int)st,
                  frl_last_error());
    ck_assert_ptr_null(q);
    ck_assert_msg(strstr(frl_last_error(), words), "'%s' does not say '%s'", frl_last_error(),
                  words);
}

static void expect_loads(fix *f, const char *path)
{
    frl_policy *q = NULL;
    ck_assert_msg(frl_policy_load(&q, f->rt, path) == FRL_OK, "%s", frl_last_error());
    frl_policy_destroy(q);
}

/* policy.obsnorm is [count, mean[w], m2[w]]; user is {count, mean[0], m2[0]}. */
static void set_norm(void *data, uint64_t count, void *user)
{
    double *v = data;
    const double *want = user;
    v[0] = want[0];
    v[1] = want[1];
    v[1 + (count - 1) / 2] = want[2];
}

START_TEST(normaliser_that_cannot_freeze)
{
    fix f;
    make(&f, 0, "policy.obs_norm=true");
    /* A float mean of inf; a variance of 1e299 (1/std 0 as a float); a count of 1.5 and
     * sums of 0 (1/std 1e4: still usable, so it loads). */
    double huge_mean[3] = {10, 1e39, 10}, huge_var[3] = {10, 0, 1e300}, small[3] = {1.5, 0, 0};
    rewrite_section(f.path, f.bad, "policy.obsnorm", set_norm, huge_mean);
    expect_format(&f, f.bad, "policy.obsnorm element 0");
    rewrite_section(f.path, f.bad, "policy.obsnorm", set_norm, huge_var);
    expect_format(&f, f.bad, "policy.obsnorm element 0");
    rewrite_section(f.path, f.bad, "policy.obsnorm", set_norm, small);
    expect_loads(&f, f.bad);
    expect_loads(&f, f.path);
    unmake(&f);
}
END_TEST

/* The last out_w values of policy.params are the log-stds; user is the first's value. */
static void set_log_std(void *data, uint64_t count, void *user)
{
    ((float *)data)[count - 2] = *(const float *)user;
}

START_TEST(log_std_out_of_bounds)
{
    fix f;
    make(&f, 0, "");
    float far = 100, edge = 80, below = -81;
    rewrite_section(f.path, f.bad, "policy.params", set_log_std, &far);
    expect_format(&f, f.bad, "log_std[0] is 100");
    rewrite_section(f.path, f.bad, "policy.params", set_log_std, &below);
    expect_format(&f, f.bad, "log_std[0] is -81");
    rewrite_section(f.path, f.bad, "policy.params", set_log_std, &edge);
    expect_loads(&f, f.bad);
    /* Nor written: the earlier file stays as it was. */
    f.p->params[f.p->log_std_off + 1] = 90;
    ck_assert_int_eq(frl_policy_save(f.p, f.path), FRL_ERR_RANGE);
    ck_assert_ptr_nonnull(strstr(frl_policy_last_error(f.p), "log_std[1] is 90"));
    expect_loads(&f, f.path);
    unmake(&f);
}
END_TEST

/* policy.act_space of box(2): [kind, n, rank, shape, low0, low1, high0, high1]. */
static void set_bounds(void *data, uint64_t count, void *user)
{
    (void)count;
    const double *b = user;
    ((double *)data)[4] = b[0];
    ((double *)data)[6] = b[1];
}

START_TEST(bounds_that_are_not_floats)
{
    fix f;
    make(&f, 0, "");
    double beyond[2] = {-1e39, 1e39}, both_inf[2] = {INFINITY, INFINITY},
           both_big[2] = {1e39, 1e39}, empty[2] = {-INFINITY, -INFINITY}, crossed[2] = {1, 0},
           unbounded[2] = {-INFINITY, INFINITY};
    const double *refused[] = {beyond, both_inf, both_big, empty, crossed};
    for (int i = 0; i < 5; i++) {
        rewrite_section(f.path, f.bad, "policy.act_space", set_bounds, (void *)refused[i]);
        expect_format(&f, f.bad, "policy.act_space: element 0 of the box");
    }
    rewrite_section(f.path, f.bad, "policy.act_space", set_bounds, unbounded);
    expect_loads(&f, f.bad);
    unmake(&f);
}
END_TEST

static void set_double(void *data, uint64_t count, void *user)
{
    (void)count;
    *(double *)data = *(const double *)user;
}

/* A Q-policy's epsilon is the one it acted with when saved (DQN's schedule moves it away
 * from policy.epsilon), so the loaded policy draws the same actions. */
START_TEST(q_policy_keeps_its_epsilon)
{
    fix f;
    make(&f, 1, "policy.head=q policy.epsilon=0.05");
    atomic_store(&f.p->epsilon, 0.625);
    ck_assert_int_eq(frl_policy_save(f.p, f.path), FRL_OK);
    frl_policy *q;
    ck_assert_msg(frl_policy_load(&q, f.rt, f.path) == FRL_OK, "%s", frl_last_error());
    double eps = atomic_load(&q->epsilon);
    ck_assert_double_eq(eps, 0.625);
    enum { N = 64 };
    float obs[N * 3];
    int32_t act[2][N];
    for (int i = 0; i < N * 3; i++)
        obs[i] = sinf((float)i);
    for (int k = 0; k < 2; k++) {
        frl_act_args a;
        frl_act_args_init(&a);
        frl_test_act_widths(&a, f.p);
        a.batch = N;
        a.observations = obs;
        a.actions = act[k];
        ck_assert_int_eq(frl_policy_act(k ? q : f.p, &a), FRL_OK);
    }
    ck_assert_mem_eq(act[0], act[1], sizeof act[0]);
    frl_policy_destroy(q);
    double over = 2, nan = NAN;
    rewrite_section(f.path, f.bad, "policy.epsilon", set_double, &over);
    expect_format(&f, f.bad, "policy.epsilon is 2");
    rewrite_section(f.path, f.bad, "policy.epsilon", set_double, &nan);
    expect_format(&f, f.bad, "policy.epsilon is nan");
    unmake(&f);
}
END_TEST

/* A CartPole run of 64 steps (4 envs x 8, 8 hidden units, plus `extra`) saved to path. */
static void save_small_run(frl_runtime *rt, const char *extra, const char *path)
{
    frl_config *cfg = frl_test_settings("train.num_envs=4 train.rollout=8 policy.hidden=8");
    ck_assert_int_eq(frl_config_parse(cfg, extra), FRL_OK);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 64), FRL_OK);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
}

/* An IMPALA run saved before IMPALA refused train.advantage=gae holds that key's default
 * (a checkpoint's settings set every key), which its learner never read: it loads and
 * trains on (it was refused, so no such run could be resumed). */
START_TEST(impala_checkpoint_from_before_loads)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], bad[72], text[4096];
    forged_paths("frl_impala_old", path, bad);
    save_small_run(rt, "train.algo=impala", path);
    frl_trainer *t;
    char err[FRL_ERRMSG_SIZE];
    frl_container *c = NULL;
    ck_assert_int_eq(frl_container_read(&c, path, NULL, err), FRL_OK);
    const frl_section *st = frl_container_find(c, "trainer.settings", FRL_DTYPE_TEXT, -1, err);
    ck_assert_ptr_nonnull(st);
    ck_assert_uint_lt(st->count, sizeof text);
    memcpy(text, st->data, st->count);
    text[st->count] = '\0';
    frl_container_free(c);
    char *at = strstr(text, "train.advantage=vtrace");
    ck_assert_ptr_nonnull(at);
    memcpy(at, "train.advantage=gae   ", 22); /* as such files hold it */
    rewrite_text(path, bad, "trainer.settings", text);
    ck_assert_msg(frl_trainer_load(&t, rt, bad, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(frl_trainer_train(t, 128), FRL_OK);
    frl_trainer_destroy(t);
    unlink(path);
    unlink(bad);
    frl_runtime_destroy(rt);
}
END_TEST

/* A checkpoint's settings never hold dist.comm (a communicator's handle is the process's):
 * one forged into the file is dropped on load, not passed to the MPI plugin as a handle. */
START_TEST(saved_dist_comm_is_dropped)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], bad[72], text[4096];
    forged_paths("frl_dist_comm", path, bad);
    save_small_run(rt, "", path);
    char err[FRL_ERRMSG_SIZE];
    frl_container *c = NULL;
    ck_assert_int_eq(frl_container_read(&c, path, NULL, err), FRL_OK);
    const frl_section *st = frl_container_find(c, "trainer.settings", FRL_DTYPE_TEXT, -1, err);
    ck_assert_ptr_nonnull(st);
    ck_assert_uint_lt(st->count + 32, sizeof text);
    ck_assert_ptr_null(memmem(st->data, st->count, "dist.comm", 9));
    memcpy(text, st->data, st->count);
    snprintf(text + st->count, sizeof text - st->count, "\ndist.comm=12345\n");
    frl_container_free(c);
    rewrite_text(path, bad, "trainer.settings", text);
    frl_trainer *t;
    ck_assert_msg(frl_trainer_load(&t, rt, bad, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(frl_cfg_int(t->cfg, FRL_KEY_DIST_COMM), -1);
    frl_trainer_destroy(t);
    unlink(path);
    unlink(bad);
    frl_runtime_destroy(rt);
}
END_TEST

/* A text section with a NUL inside ("CartPole-v1\0x" as trainer.env) was read up to the
 * NUL, as CartPole-v1: refused, named, as a policy file's settings are. */
START_TEST(nul_in_a_text_section_is_refused)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], bad[72];
    forged_paths("frl_nul_env", path, bad);
    save_small_run(rt, "", path);
    rewrite_bytes(path, bad, "trainer.env", "CartPole-v1\0x", 13);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_load(&t, rt, bad, NULL), FRL_ERR_FORMAT);
    ck_assert_msg(strstr(frl_last_error(), "trainer.env holds a NUL byte"), "%s",
                  frl_last_error());
    unlink(path);
    unlink(bad);
    frl_runtime_destroy(rt);
}
END_TEST

/* A policy file's settings with a NUL inside were parsed up to it, and the keys after it
 * silently dropped (policy.hidden=8 then NUL then policy.hidden=64 loaded as 8 units, a
 * file that says two things): refused, as the trainer's text sections are. */
START_TEST(nul_in_policy_settings_is_refused)
{
    fix f;
    make(&f, 0, "policy.hidden=8");
    static const char text[] = "policy.hidden=8\n\0policy.hidden=64\n";
    rewrite_bytes(f.path, f.bad, "policy.settings", text, sizeof text - 1);
    expect_format(&f, f.bad, "policy.settings holds a NUL byte");
    expect_loads(&f, f.path);
    unmake(&f);
}
END_TEST

/* A Gaussian head's log-std beyond +-80 (acting's draws overflow past it, and no policy
 * file holds it) ends the run as diverged at that update, rather than training on until
 * a save fails or something overflows. */
START_TEST(log_std_past_its_bound_is_divergence)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg = frl_test_settings("train.num_envs=2 train.rollout=8 policy.hidden=8 "
                                        "train.minibatches=1 train.epochs=1");
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "Pendulum-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 16), FRL_OK);
    frl_policy *p = frl_trainer_policy(t);
    p->params[p->log_std_off] = 80.5f; /* as if the last updates had pushed it there */
    ck_assert_int_eq(frl_trainer_train(t, 32), FRL_ERR_NONFINITE);
    ck_assert_msg(strstr(frl_last_error(), "log_std[0]"), "%s", frl_last_error());
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* A PPO checkpoint loaded with train.algo=impala keeps PPO's saved train.advantage=gae,
 * which IMPALA refuses: the refusal says the value is the saved run's, not the caller's,
 * and the load goes through once the caller overrides it too. */
START_TEST(algo_override_names_the_saved_run)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], bad[72];
    forged_paths("frl_algo_switch", path, bad);
    save_small_run(rt, "", path);
    frl_trainer *t;
    frl_config *over = frl_test_settings("train.algo=impala");
    t = (frl_trainer *)1;
    ck_assert_int_eq(frl_trainer_load(&t, rt, path, over), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(frl_last_error(), "overrides the saved train.algo=ppo") &&
                      strstr(frl_last_error(), "train.advantage=gae"),
                  "%s", frl_last_error());
    ck_assert_int_eq(frl_config_set(over, "train.advantage", "vtrace"), FRL_OK);
    ck_assert_msg(frl_trainer_load(&t, rt, path, over) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(frl_trainer_train(t, 128), FRL_OK);
    frl_trainer_destroy(t);
    frl_config_destroy(over);
    unlink(path);
    unlink(bad);
    frl_runtime_destroy(rt);
}
END_TEST

static void nan_at_env1(void *data, uint64_t count, void *user)
{
    ck_assert_uint_ge(count, 8);
    ((float *)data)[4 + 2] = NAN; /* CartPole: env 1's pole angle */
}

static void not_started(void *data, uint64_t count, void *user)
{
    ck_assert_uint_ge(count, 6);
    ((int64_t *)data)[5] = 0; /* as a save after a failed callback leaves it */
}

/* A checkpoint whose saved observation holds NaN (checksums right) is refused at load,
 * naming the section, env and element; before, it loaded and the next act refused it.
 * The same NaN in a run whose envs reset when it goes on (trainer.counters' "started"
 * 0, as a save after a failed callback writes it) loads: the reset replaces it. */
START_TEST(saved_observations_checked)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], bad[72], reset[80];
    forged_paths("frl_saved_obs", path, bad);
    snprintf(reset, sizeof reset, "%s.reset", bad);
    save_small_run(rt, "", path);
    frl_trainer *t;
    rewrite_section(path, bad, "env.obs", nan_at_env1, NULL);
    t = (frl_trainer *)1;
    ck_assert_int_eq(frl_trainer_load(&t, rt, bad, NULL), FRL_ERR_FORMAT);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(frl_last_error(), "env.obs: env 1 holds NaN at obs[2]"), "%s",
                  frl_last_error());
    rewrite_section(bad, reset, "trainer.counters", not_started, NULL);
    ck_assert_msg(frl_trainer_load(&t, rt, reset, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(frl_trainer_train(t, 128), FRL_OK);
    frl_trainer_destroy(t);
    unlink(path);
    unlink(bad);
    unlink(reset);
    frl_runtime_destroy(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("policy_file");
    TCase *tc = tcase_create("policy_file");
    tcase_add_test(tc, normaliser_that_cannot_freeze);
    tcase_add_test(tc, log_std_out_of_bounds);
    tcase_add_test(tc, bounds_that_are_not_floats);
    tcase_add_test(tc, q_policy_keeps_its_epsilon);
    tcase_add_test(tc, impala_checkpoint_from_before_loads);
    tcase_add_test(tc, saved_dist_comm_is_dropped);
    tcase_add_test(tc, nul_in_a_text_section_is_refused);
    tcase_add_test(tc, nul_in_policy_settings_is_refused);
    tcase_add_test(tc, log_std_past_its_bound_is_divergence);
    tcase_add_test(tc, algo_override_names_the_saved_run);
    tcase_add_test(tc, saved_observations_checked);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
