/* frl_trainer through the public API: identical runs, exact resume from a
 * checkpoint, stopping from another thread or from the callback, outputs, bad input. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

static frl_runtime *runtime(int threads, const char *extra)
{
    frl_config *cfg;
    frl_runtime *rt;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "runtime.threads", threads), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "runtime.seed", 7), FRL_OK);
    ck_assert_int_eq(frl_config_parse(cfg, extra), FRL_OK);
    ck_assert_int_eq(frl_runtime_create(&rt, cfg, NULL, NULL), FRL_OK);
    frl_config_destroy(cfg);
    return rt;
}

/* A fingerprint of the policy: its log-probs and values on fixed observations. */
static void fingerprint(frl_trainer *t, float *out)
{
    float obs[64 * 4];
    int32_t act[64];
    for (int i = 0; i < 64 * 4; i++)
        obs[i] = (float)((i * 13) % 17) * 0.05f - 0.4f;
    frl_act_args a;
    frl_act_args_init(&a);
    frl_test_act_widths(&a, frl_trainer_policy(t));
    a.batch = 64;
    a.observations = obs;
    a.actions = act;
    a.log_probs = out;
    a.values = out + 64;
    ck_assert_int_eq(frl_policy_act(frl_trainer_policy(t), &a), FRL_OK);
}

static const char *small = "train.num_envs=8 train.rollout=32 policy.hidden=16,16";

static void run_cartpole_with(int threads, int64_t steps, const char *extra, float *fp,
                              double *ret)
{
    frl_runtime *rt = runtime(threads, "");
    frl_config *cfg = frl_test_settings(small);
    ck_assert_int_eq(frl_config_parse(cfg, extra), FRL_OK);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, steps), FRL_OK);
    ck_assert_int_ge(frl_trainer_metrics(t)->env_steps, steps);
    fingerprint(t, fp);
    *ret = frl_trainer_metrics(t)->mean_return;
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}

static void run_cartpole(int threads, int64_t steps, float *fp, double *ret)
{
    run_cartpole_with(threads, steps, "", fp, ret);
}

/* Decoupled PPO centres the clip on the learner's policy at the update's start and
 * weighs advantages by min(rho, pi/mu): with the sync sampler that policy is the one
 * that acted, so forcing it on must change nothing, with GAE or with V-trace. */
START_TEST(decoupled_without_lag_changes_nothing)
{
    static const char *pairs[][2] = {
        {"", "train.decoupled=true"},
        {"train.advantage=vtrace", "train.advantage=vtrace train.decoupled=true"},
    };
    for (int i = 0; i < 2; i++) {
        float a[128], b[128];
        double ra, rb;
        run_cartpole_with(2, 8000, pairs[i][0], a, &ra);
        run_cartpole_with(2, 8000, pairs[i][1], b, &rb);
        double worst = 0;
        for (int k = 0; k < 128; k++)
            worst = fmax(worst, fabs((double)a[k] - (double)b[k]));
        printf("decoupled, sync: '%s' against '%s': returns %.6f and %.6f, log-probs and "
               "values within %.3g\n", pairs[i][0], pairs[i][1], ra, rb, worst);
        ck_assert_msg(worst < 1e-4, "'%s' and '%s' differ by %g", pairs[i][0], pairs[i][1],
                      worst);
    }
}
END_TEST

START_TEST(same_seed_same_run_any_thread_count)
{
    float a[128], b[128], c[128];
    double ra, rb, rc;
    run_cartpole(2, 20000, a, &ra);
    run_cartpole(2, 20000, b, &rb);
    run_cartpole(1, 20000, c, &rc);
    ck_assert(memcmp(a, b, sizeof a) == 0 && ra == rb);
    /* Shards are fixed-size and reduced in order, so the thread count changes nothing. */
    ck_assert(memcmp(a, c, sizeof a) == 0 && ra == rc);
}
END_TEST

static int stop_at_update(void *user, const frl_metrics *m)
{
    frl_trainer **t = user;
    if (m->update == 5)
        frl_trainer_request_stop(*t);
    return 0;
}

START_TEST(resume_continues_exactly)
{
    float whole[128], resumed[128];
    double r_whole;
    run_cartpole(2, 24000, whole, &r_whole);
    char path[128];
    snprintf(path, sizeof path, "/tmp/frl_test_trainer_%d.frl", (int)getpid());
    frl_runtime *rt = runtime(2, "");
    frl_config *cfg = frl_test_settings(small);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    frl_trainer_set_callback(t, stop_at_update, &t);
    ck_assert_int_eq(frl_trainer_train(t, 24000), FRL_ERR_INTERRUPTED);
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 5);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);
    ck_assert_int_eq(frl_trainer_load(&t, rt, path, NULL), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 24000), FRL_OK);
    fingerprint(t, resumed);
    ck_assert(memcmp(whole, resumed, sizeof whole) == 0);
    ck_assert(frl_trainer_metrics(t)->mean_return == r_whole);
    /* A trainer checkpoint also loads as a policy. */
    frl_policy *p;
    ck_assert_int_eq(frl_policy_load(&p, rt, path), FRL_OK);
    frl_policy_destroy(p);
    frl_trainer_destroy(t);
    unlink(path);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

static void *stop_later(void *arg)
{
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    frl_trainer_request_stop(arg);
    return NULL;
}

/* Refuse two updates after the one in *user. */
static int refuse(void *user, const frl_metrics *m)
{
    return m->update == *(int64_t *)user + 2 ? 42 : 0;
}

START_TEST(stop_from_thread_and_callback)
{
    frl_runtime *rt = runtime(2, "");
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", NULL), FRL_OK);
    pthread_t th;
    pthread_create(&th, NULL, stop_later, t);
    ck_assert_int_eq(frl_trainer_train(t, (int64_t)1 << 40), FRL_ERR_INTERRUPTED);
    pthread_join(th, NULL);
    int64_t steps = frl_trainer_metrics(t)->env_steps;
    ck_assert_int_gt(steps, 0);
    /* The run goes on after an interruption. */
    int64_t from = frl_trainer_metrics(t)->update;
    frl_trainer_set_callback(t, refuse, &from);
    ck_assert_int_eq(frl_trainer_train(t, (int64_t)1 << 40), FRL_ERR_CALLBACK);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "42"));
    ck_assert_int_gt(frl_trainer_metrics(t)->env_steps, steps);
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(outputs_are_written)
{
    char dir[128], path[256];
    snprintf(dir, sizeof dir, "/tmp/frl_test_out_%d", (int)getpid());
    mkdir(dir, 0777);
    frl_runtime *rt = runtime(1, "");
    frl_config *cfg = frl_test_settings(small);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_set_output(t, "/nonexistent/dir"), FRL_ERR_IO);
    ck_assert_int_eq(frl_trainer_set_output(t, dir), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 1280), FRL_OK);
    /* Refused directories leave the run writing where it did: "" (which would be the
     * root), one too long for a path, one that does not exist. */
    static char longdir[5000];
    memset(longdir, 'd', sizeof longdir - 1);
    ck_assert_int_eq(frl_trainer_set_output(t, ""), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(frl_trainer_set_output(t, longdir), FRL_ERR_RANGE);
    ck_assert_int_eq(frl_trainer_set_output(t, "/nonexistent/dir"), FRL_ERR_IO);
    ck_assert_int_eq(frl_trainer_train(t, 2560), FRL_OK);
    frl_trainer_destroy(t);
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[1024];
    int lines = 0;
    while (fgets(line, sizeof line, f))
        lines++;
    fclose(f);
    ck_assert_int_eq(lines, 1 + 10); /* header + 2560 / 256 updates */
    snprintf(path, sizeof path, "rm -rf %s", dir);
    ck_assert_int_eq(system(path), 0);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* The update numbers in a metrics file, in order; their count. */
static int metrics_updates(const char *dir, long *updates, int max)
{
    char path[256], line[2048];
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    int n = -1; /* the header */
    while (fgets(line, sizeof line, f))
        if (n++ >= 0 && n <= max)
            updates[n - 1] = strtol(line, NULL, 10);
    fclose(f);
    return n;
}

/* A new output directory gets its first row at the next update, whatever
 * train.log_every says (it waited log_every steps after the last row written in the
 * old directory). */
START_TEST(new_output_dir_gets_a_row)
{
    char a[128], b[128], cmd[300];
    long upd[4];
    snprintf(a, sizeof a, "/tmp/frl_test_outa_%d", (int)getpid());
    snprintf(b, sizeof b, "/tmp/frl_test_outb_%d", (int)getpid());
    mkdir(a, 0777);
    mkdir(b, 0777);
    frl_runtime *rt = runtime(1, "");
    frl_config *cfg = frl_test_settings(small);
    ck_assert_int_eq(frl_config_parse(cfg, "train.log_every=1000000"), FRL_OK);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_set_output(t, a), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 256), FRL_OK);
    ck_assert_int_eq(frl_trainer_set_output(t, b), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 512), FRL_OK);
    frl_trainer_destroy(t);
    ck_assert_int_eq(metrics_updates(a, upd, 4), 1);
    ck_assert_int_eq(metrics_updates(b, upd, 4), 1);
    ck_assert_int_eq(upd[0], 2);
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", a, b);
    ck_assert_int_eq(system(cmd), 0);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* A trainer of the small settings writing its outputs into dir (made here), trained to
 * 1280 steps and saved to ck (dir/checkpoint.frl): returned for more training. */
static frl_trainer *saved_run(frl_runtime *rt, const frl_config *cfg, const char *tag,
                              char *dir, size_t dir_size, char *ck, size_t ck_size)
{
    snprintf(dir, dir_size, "/tmp/frl_test_%s_%d", tag, (int)getpid());
    snprintf(ck, ck_size, "%s/checkpoint.frl", dir);
    mkdir(dir, 0777);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_set_output(t, dir), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 1280), FRL_OK);
    ck_assert_int_eq(frl_trainer_save(t, ck), FRL_OK);
    return t;
}

/* A run resumed from a checkpoint older than its metrics file (rows written after the
 * save, as before a kill) continues the file with one row an update, in order. */
START_TEST(resumed_metrics_have_one_row_an_update)
{
    char dir[128], ck[192];
    frl_runtime *rt = runtime(1, "");
    frl_config *cfg = frl_test_settings(small);
    frl_trainer *t = saved_run(rt, cfg, "resumed", dir, sizeof dir, ck, sizeof ck);
    ck_assert_int_eq(frl_trainer_train(t, 2560), FRL_OK); /* 5 rows past the checkpoint */
    frl_trainer_destroy(t);
    long u[16];
    ck_assert_int_eq(metrics_updates(dir, u, 16), 10);
    ck_assert_int_eq(frl_trainer_load(&t, rt, ck, NULL), FRL_OK);
    ck_assert_int_eq(frl_trainer_set_output(t, dir), FRL_OK);
    ck_assert_int_eq(metrics_updates(dir, u, 16), 5);
    ck_assert_int_eq(frl_trainer_train(t, 3072), FRL_OK);
    frl_trainer_destroy(t);
    ck_assert_int_eq(metrics_updates(dir, u, 16), 12);
    for (int i = 0; i < 12; i++)
        ck_assert_int_eq(u[i], i + 1);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* A created trainer that trained before frl_trainer_set_output replaces the file: it
 * continues no run there (it used to append to another run's rows, cut at its own
 * update count). */
START_TEST(created_trainer_replaces_metrics)
{
    char dir[128];
    snprintf(dir, sizeof dir, "/tmp/frl_test_replaced_%d", (int)getpid());
    mkdir(dir, 0777);
    frl_runtime *rt = runtime(1, "");
    frl_config *cfg = frl_test_settings(small);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_set_output(t, dir), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 2560), FRL_OK); /* another run's 10 rows */
    frl_trainer_destroy(t);
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 1280), FRL_OK); /* 5 updates, no output */
    ck_assert_int_eq(frl_trainer_set_output(t, dir), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 2560), FRL_OK);
    frl_trainer_destroy(t);
    long u[16];
    ck_assert_int_eq(metrics_updates(dir, u, 16), 5);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(u[i], 6 + i);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* metrics.csv's header is written through by frl_trainer_set_output, so a file that
 * cannot be written is refused there (FRL_ERR_IO, as doc/api.md says), not at the first
 * update of a train call; the run keeps writing where it did. */
START_TEST(unwritable_metrics_refused_by_set_output)
{
    if (access("/dev/full", W_OK) != 0)
        return; /* no /dev/full here */
    char a[128], b[128], cmd[320], path[192];
    snprintf(a, sizeof a, "/tmp/frl_test_fulla_%d", (int)getpid());
    snprintf(b, sizeof b, "/tmp/frl_test_fullb_%d", (int)getpid());
    snprintf(path, sizeof path, "%s/metrics.csv", b);
    mkdir(a, 0777);
    mkdir(b, 0777);
    ck_assert_int_eq(symlink("/dev/full", path), 0);
    frl_runtime *rt = runtime(1, "");
    frl_config *cfg = frl_test_settings(small);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_set_output(t, a), FRL_OK);
    ck_assert_int_eq(frl_trainer_set_output(t, b), FRL_ERR_IO);
    ck_assert_msg(strstr(frl_trainer_last_error(t), "metrics.csv"), "%s",
                  frl_trainer_last_error(t));
    ck_assert_int_eq(frl_trainer_train(t, 256), FRL_OK);
    frl_trainer_destroy(t);
    long u[4];
    ck_assert_int_eq(metrics_updates(a, u, 4), 1);
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", a, b);
    ck_assert_int_eq(system(cmd), 0);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* Each line of dir's metrics.csv has the header's number of fields. */
static void assert_whole_rows(const char *dir)
{
    char path[256], line[4096];
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    int want = -1;
    while (fgets(line, sizeof line, f)) {
        int commas = 0;
        for (const char *p = line; *p; p++)
            commas += *p == ',';
        want = want < 0 ? commas : want;
        ck_assert_msg(commas == want, "a row of %d fields, not %d: %s", commas + 1, want + 1,
                      line);
    }
    fclose(f);
}

/* A resumed run's metrics file whose last row was cut short (a write that failed, as on
 * a full disk, before the save the run resumes from) gets whole rows: the partial one
 * is cut, not continued by the next row (which made one line of both). */
START_TEST(resumed_metrics_cut_a_partial_row)
{
    char dir[128], ck[192], path[192];
    frl_runtime *rt = runtime(1, "");
    frl_config *cfg = frl_test_settings(small);
    frl_trainer *t = saved_run(rt, cfg, "partial", dir, sizeof dir, ck, sizeof ck);
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    frl_trainer_destroy(t);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(truncate(path, sb.st_size - 20), 0); /* row 5 loses its end */
    ck_assert_int_eq(frl_trainer_load(&t, rt, ck, NULL), FRL_OK);
    ck_assert_int_eq(frl_trainer_set_output(t, dir), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 1536), FRL_OK);
    frl_trainer_destroy(t);
    assert_whole_rows(dir);
    long u[16];
    ck_assert_int_eq(metrics_updates(dir, u, 16), 5);
    ck_assert_int_eq(u[3], 4);
    ck_assert_int_eq(u[4], 6);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(bad_input)
{
    frl_runtime *rt = runtime(1, "");
    frl_trainer *t = (frl_trainer *)1;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "NoSuchEnv-v0", NULL), FRL_ERR_UNKNOWN_NAME);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(frl_trainer_create(&t, NULL, "CartPole-v1", NULL), FRL_ERR_NULL);
    ck_assert_int_eq(frl_trainer_create(&t, rt, NULL, NULL), FRL_ERR_NULL);
    frl_config *cfg = frl_test_settings("train.num_envs=3 train.rollout=5 train.minibatches=4");
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "train.minibatches"));
    /* IMPALA's loss takes neither GAE nor decoupling: refused, not ignored. */
    const char *impala_bad[2] = {"train.algo=impala train.advantage=gae",
                                 "train.algo=impala train.decoupled=true"};
    for (int i = 0; i < 2; i++) {
        frl_config_destroy(cfg);
        cfg = frl_test_settings(impala_bad[i]);
        ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg),
                         FRL_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(frl_last_error(), i ? "train.decoupled" : "train.advantage=gae"),
                      "%s", frl_last_error());
    }
    /* A2C's loss takes GAE's advantages undecoupled, on either sampler: likewise. */
    const char *a2c_bad[2] = {"train.algo=a2c train.advantage=vtrace",
                              "train.algo=a2c train.decoupled=true sampler.mode=async"};
    for (int i = 0; i < 2; i++) {
        frl_config_destroy(cfg);
        cfg = frl_test_settings(a2c_bad[i]);
        ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg),
                         FRL_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(frl_last_error(), i ? "train.decoupled" : "train.advantage=vtrace"),
                      "%s", frl_last_error());
    }
    frl_config_destroy(cfg);
    cfg = frl_test_settings("train.algo=a2c train.advantage=gae train.decoupled=false");
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    cfg = frl_test_settings("train.algo=impala train.advantage=vtrace train.decoupled=false");
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    frl_trainer_destroy(t);
    ck_assert_int_eq(frl_trainer_load(&t, rt, "/nonexistent.frl", NULL), FRL_ERR_IO);
    ck_assert_int_eq(frl_trainer_train(NULL, 10), FRL_ERR_NULL);
    frl_trainer_request_stop(NULL);
    ck_assert_ptr_null(frl_trainer_policy(NULL));
    /* A policy file is not a trainer checkpoint. */
    ck_assert_int_eq(frl_trainer_create(&t, rt, "Pendulum-v1", NULL), FRL_OK);
    char path[128];
    snprintf(path, sizeof path, "/tmp/frl_test_policy_only_%d.frl", (int)getpid());
    ck_assert_int_eq(frl_policy_save(frl_trainer_policy(t), path), FRL_OK);
    frl_trainer_destroy(t);
    ck_assert_int_eq(frl_trainer_load(&t, rt, path, NULL), FRL_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "not a trainer checkpoint"));
    unlink(path);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* Overrides that change what the saved arrays were made for are the caller's mistake, said
 * in the settings' terms (not as a corrupted section), before anything runs. */
START_TEST(resume_refuses_a_changed_shape)
{
    frl_runtime *rt = runtime(1, "");
    frl_config *cfg = frl_test_settings("train.num_envs=4 train.rollout=8");
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 64), FRL_OK);
    char path[128];
    snprintf(path, sizeof path, "/tmp/frl_test_shape_%d.frl", (int)getpid());
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);
    frl_config *envs = frl_test_settings("train.num_envs=8");
    ck_assert_int_eq(frl_trainer_load(&t, rt, path, envs), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "train.num_envs 4"));
    ck_assert_ptr_null(t);
    frl_config *net = frl_test_settings("policy.hidden=8,8");
    ck_assert_int_eq(frl_trainer_load(&t, rt, path, net), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "policy.hidden"));
    ck_assert_ptr_null(t);
    /* The same value as saved, and an override that leaves the arrays alone, load. */
    frl_config *same = frl_test_settings("train.num_envs=4 train.lr=0.001");
    ck_assert_int_eq(frl_trainer_load(&t, rt, path, same), FRL_OK);
    ck_assert_str_eq(frl_vec_env_name(frl_trainer_vec_env(t)), "CartPole-v1"); /* the file's */
    frl_trainer_destroy(t);
    unlink(path);
    frl_config_destroy(same);
    frl_config_destroy(net);
    frl_config_destroy(envs);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* A host world whose step fails once, on call 40. */
typedef struct flaky {
    int calls;
} flaky;

static int flaky_reset(void *user, int32_t n, const uint64_t *seeds, float *obs)
{
    (void)user;
    (void)seeds;
    memset(obs, 0, sizeof(float) * (size_t)n);
    return 0;
}

static int flaky_step(void *user, int32_t n, const void *actions, const uint8_t *mask,
                      const uint64_t *seeds, float *obs, float *rew, uint8_t *term, uint8_t *trunc)
{
    flaky *f = user;
    (void)actions;
    (void)mask;
    (void)seeds;
    if (++f->calls == 40)
        return -5;
    for (int32_t i = 0; i < n; i++) {
        obs[i] = 0;
        rew[i] = 1;
        term[i] = 1;
        trunc[i] = 0;
    }
    return 0;
}

/* A trainer over 4 host agents with a 1-float observation and 2 actions, stepped by
 * `step` through the batch callback. */
typedef int (*batch_step_fn)(void *user, int32_t n, const void *actions, const uint8_t *mask,
                             const uint64_t *seeds, float *obs, float *rew, uint8_t *term,
                             uint8_t *trunc);

typedef struct host_trainer {
    frl_runtime *rt;
    frl_space *os, *as;
    frl_vec_env *v;
    frl_config *cfg;
    frl_trainer *t;
} host_trainer;

static void host_trainer_create(host_trainer *h, int threads, batch_step_fn step, void *user,
                                const char *text)
{
    h->rt = runtime(threads, "");
    int64_t one = 1;
    ck_assert_int_eq(frl_space_create_box(&h->os, NULL, 1, &one, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&h->as, NULL, 2), FRL_OK);
    frl_batch_env_callbacks cb;
    frl_batch_env_callbacks_init(&cb);
    cb.reset = flaky_reset;
    cb.step = step;
    ck_assert_int_eq(frl_vec_env_create_batch(&h->v, h->rt, &cb, user, 4, h->os, h->as, NULL),
                     FRL_OK);
    h->cfg = frl_test_settings(text);
    ck_assert_int_eq(frl_trainer_create_vec(&h->t, h->rt, h->v, h->cfg), FRL_OK);
}

static void host_trainer_destroy(host_trainer *h)
{
    frl_trainer_destroy(h->t);
    frl_vec_env_destroy(h->v);
    frl_space_destroy(h->os);
    frl_space_destroy(h->as);
    frl_config_destroy(h->cfg);
    frl_runtime_destroy(h->rt);
}

static int keep_metrics(void *user, const frl_metrics *m)
{
    *(frl_metrics *)user = *m;
    return 0;
}

START_TEST(recovers_after_a_failed_rollout)
{
    flaky w = {0};
    host_trainer h;
    host_trainer_create(&h, 2, flaky_step, &w, "train.rollout=16");
    frl_trainer *t = h.t;
    frl_metrics last;
    memset(&last, 0, sizeof last);
    frl_trainer_set_callback(t, keep_metrics, &last);
    ck_assert_int_eq(frl_trainer_train(t, 4000), FRL_ERR_CALLBACK);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "-5"));
    /* The metrics stay the last update's: the failed rollout's times are not in them
     * (they replaced time_env and time_inference). */
    const frl_metrics *m = frl_trainer_metrics(t);
    ck_assert_int_ge(last.update, 1);
    ck_assert_int_eq(m->update, last.update);
    ck_assert(m->time_env == last.time_env && m->time_inference == last.time_inference);
    frl_trainer_set_callback(t, NULL, NULL);
    /* The failed rollout's slot was given back: training goes on. */
    ck_assert_int_eq(frl_trainer_train(t, 4000), FRL_OK);
    ck_assert_int_ge(frl_trainer_metrics(t)->env_steps, 4000);
    /* A stop requested while idle applies to the next call, once. */
    frl_trainer_request_stop(t);
    ck_assert_int_eq(frl_trainer_train(t, 8000), FRL_ERR_INTERRUPTED);
    ck_assert_int_eq(frl_trainer_train(t, 8000), FRL_OK);
    /* A batch world's state is the host's alone: it cannot be saved in a checkpoint
     * (test_trainer_host covers the host envs that can). */
    ck_assert_int_eq(frl_trainer_save(t, "/tmp/frl_unused.frl"), FRL_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "batch world"));
    host_trainer_destroy(&h);
}
END_TEST

/* The trainer's ring slot held by the host, in each state, is refused by name before
 * anything is reset or stepped (it failed as "frl_ring_acquire_write: no slot is
 * free", after resetting the envs); given back, training goes on. */
START_TEST(a_slot_the_host_holds_is_refused)
{
    static const char *const held[3] = {"acquired for writing", "committed",
                                        "acquired for reading"};
    flaky w = {0};
    host_trainer h;
    host_trainer_create(&h, 1, flaky_step, &w, "train.rollout=16");
    frl_ring *ring = frl_trainer_ring(h.t);
    int32_t slot;
    ck_assert_int_eq(frl_ring_acquire_write(ring, &slot), FRL_OK);
    for (int i = 0; i < 3; i++) {
        if (i == 1)
            ck_assert_int_eq(frl_ring_commit(ring, slot), FRL_OK);
        if (i == 2)
            ck_assert_int_eq(frl_ring_acquire_read(ring, &slot), FRL_OK);
        ck_assert_int_eq(frl_trainer_train(h.t, 64), FRL_ERR_STATE);
        ck_assert_msg(strstr(frl_last_error(), held[i]), "%s", frl_last_error());
        ck_assert_ptr_nonnull(strstr(frl_trainer_last_error(h.t), "frl_trainer_ring"));
        ck_assert_int_eq(w.calls, 0);
    }
    ck_assert_int_eq(frl_ring_release(ring, slot), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(h.t, 64), FRL_OK);
    ck_assert_int_eq(w.calls, 16);
    ck_assert_int_eq(frl_ring_slot_state(ring, 0), FRL_SLOT_FREE);
    host_trainer_destroy(&h);
}
END_TEST

/* One NaN observation at the 40th call, then healthy steps. */
static int nan_once_step(void *user, int32_t n, const void *actions, const uint8_t *mask,
                         const uint64_t *seeds, float *obs, float *rew, uint8_t *term,
                         uint8_t *trunc)
{
    flaky *f = user;
    (void)actions;
    (void)mask;
    (void)seeds;
    f->calls++;
    for (int32_t i = 0; i < n; i++) {
        obs[i] = f->calls == 40 && i == 1 ? NAN : 0.25f * (float)(f->calls % 4);
        rew[i] = 1;
        term[i] = f->calls % 8 == 0;
        trunc[i] = 0;
    }
    return 0;
}

/* The refused observation must not reach the next rollout, the policy or the
 * normaliser: the next train starts from a reset and learns on finite data. */
START_TEST(a_refused_observation_is_not_learned_from)
{
    flaky w = {0};
    host_trainer h;
    host_trainer_create(&h, 2, nan_once_step, &w, "train.rollout=16 policy.obs_norm=true");
    ck_assert_int_eq(frl_trainer_train(h.t, 4000), FRL_ERR_NONFINITE);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "NaN"));
    ck_assert_msg(frl_trainer_train(h.t, 4000) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_ge(frl_trainer_metrics(h.t)->env_steps, 4000);
    host_trainer_destroy(&h);
}
END_TEST

/* Finite but enormous rewards: the returns overflow float, the loss gradient becomes
 * infinite and Adam's step NaN. The trainer must say so, not train on garbage. */
static int huge_step(void *user, int32_t n, const void *actions, const uint8_t *mask,
                     const uint64_t *seeds, float *obs, float *rew, uint8_t *term, uint8_t *trunc)
{
    (void)user;
    (void)actions;
    (void)mask;
    (void)seeds;
    for (int32_t i = 0; i < n; i++) {
        obs[i] = 0.5f;
        rew[i] = 3e38f;
        term[i] = 0;
        trunc[i] = 0;
    }
    return 0;
}

START_TEST(divergence_is_reported)
{
    host_trainer h;
    host_trainer_create(&h, 1, huge_step, NULL, "train.rollout=16 train.gamma=0.99");
    frl_trainer *t = h.t;
    char path[64];
    snprintf(path, sizeof path, "/tmp/frl_diverged_%d.frl", (int)getpid());
    ck_assert_int_eq(frl_policy_save(frl_trainer_policy(t), path), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 640), FRL_ERR_NONFINITE);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "diverged"));
    /* It stops at the first bad update (4 envs x 16 steps), not at the end of the budget. */
    ck_assert_int_eq(frl_trainer_metrics(t)->env_steps, 64);
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 1);
    /* Called again, it refuses at once: it stepped the envs on NaN actions and reported
     * "diverged at update 2", as if anew. */
    ck_assert_int_eq(frl_trainer_train(t, 640), FRL_ERR_NONFINITE);
    ck_assert_int_eq(frl_trainer_metrics(t)->env_steps, 64);
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 1);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "has diverged"));
    ck_assert_ptr_nonnull(strstr(frl_trainer_last_error(t), "has diverged"));
    /* Saving it is refused (loading would refuse the file), and the earlier file stays
     * (frl_trainer_save writes the policy through the same code; this batch world's
     * trainer cannot be saved at all). */
    ck_assert_int_eq(frl_policy_save(frl_trainer_policy(t), path), FRL_ERR_NONFINITE);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "not finite"));
    frl_policy *kept;
    ck_assert_int_eq(frl_policy_load(&kept, h.rt, path), FRL_OK);
    frl_policy_destroy(kept);
    unlink(path);
    host_trainer_destroy(&h);
}
END_TEST

/* A world whose step fails once, on call 40; with `ends`, every episode ends on call 39
 * just before. Rewards differ by agent, and no other episode ends. */
typedef struct ending {
    int calls, ends;
} ending;

static int ending_step(void *user, int32_t n, const void *actions, const uint8_t *mask,
                       const uint64_t *seeds, float *obs, float *rew, uint8_t *term,
                       uint8_t *trunc)
{
    ending *e = user;
    (void)actions;
    (void)mask;
    (void)seeds;
    if (++e->calls == 40)
        return -5;
    for (int32_t i = 0; i < n; i++) {
        obs[i] = 0.1f * (float)i;
        rew[i] = 1.0f + (float)i;
        term[i] = e->ends && e->calls == 39;
        trunc[i] = 0;
    }
    return 0;
}

/* The rewards (normalised) of the rollout after a restart: a world whose episodes ended
 * before the failed step, and one whose episodes were cut by it. */
static void rewards_after_restart(int ends, float *out)
{
    ending e = {0, ends};
    host_trainer h;
    host_trainer_create(&h, 1, ending_step, &e, "train.rollout=16 train.reward_norm=true");
    ck_assert_int_eq(frl_trainer_train(h.t, 4000), FRL_ERR_CALLBACK);
    ck_assert_int_eq(frl_trainer_train(h.t, frl_trainer_metrics(h.t)->env_steps + 64), FRL_OK);
    void *r;
    size_t bytes;
    ck_assert_int_eq(frl_ring_array(frl_trainer_ring(h.t), 0, FRL_RING_REWARDS, &r, &bytes),
                     FRL_OK);
    ck_assert_uint_eq(bytes, sizeof(float) * 16 * 4);
    memcpy(out, r, bytes);
    host_trainer_destroy(&h);
}

/* After a failed step the envs restart from a reset, so the reward normaliser's running
 * discounted returns restart too: the run goes on as if the cut episodes had ended. The
 * returns of the cut episodes were carried into the new ones. */
START_TEST(a_restart_forgets_the_cut_returns)
{
    float cut[64], ended[64];
    rewards_after_restart(0, cut);
    rewards_after_restart(1, ended);
    for (int i = 0; i < 64; i++)
        ck_assert_msg(cut[i] == ended[i], "reward %d after the restart: %g, want %g", i,
                      (double)cut[i], (double)ended[i]);
}
END_TEST

static int ones_step(void *user, int32_t n, const void *actions, const uint8_t *mask,
                     const uint64_t *seeds, float *obs, float *rew, uint8_t *term, uint8_t *trunc)
{
    (void)user, (void)actions, (void)mask, (void)seeds;
    for (int32_t i = 0; i < n; i++) {
        obs[i] = 0;
        rew[i] = 1;
        term[i] = trunc[i] = 0;
    }
    return 0;
}

/* The reward normaliser starts from Gymnasium's NormalizeReward prior (variance 1 over a
 * count of 1e-4): the first step's 4 alike rewards of 1 are scaled as it scales them
 * (200 for 8 envs; from no prior the variance was 0 and the scale 1e4). */
START_TEST(reward_norm_starts_as_gymnasium)
{
    host_trainer h;
    host_trainer_create(&h, 1, ones_step, NULL, "train.rollout=16 train.reward_norm=true");
    ck_assert_int_eq(frl_trainer_train(h.t, 16 * 4), FRL_OK);
    void *r;
    size_t bytes;
    ck_assert_int_eq(frl_ring_array(frl_trainer_ring(h.t), 0, FRL_RING_REWARDS, &r, &bytes),
                     FRL_OK);
    /* RunningMeanStd.update with the batch (mean 1, variance 0, count 4) */
    double count = 1e-4, n = 4, tot = count + n, m2 = 1e-4 + 1.0 * count * n / tot;
    double want = 1.0 / sqrt(m2 / tot + 1e-8);
    for (int b = 0; b < 4; b++)
        ck_assert_msg(fabs(((float *)r)[b] - want) < 1e-4 * want, "step 0 env %d: %g, want %g",
                      b, (double)((float *)r)[b], want);
    host_trainer_destroy(&h);
}
END_TEST

/* A trainer on a built-in vec env records the env.* settings the vec env was made with
 * (not its own config's), so frl_trainer_load remakes those envs: a 5-step time limit
 * came back as the default 500, and a MemoryProbe's delay as 20 (a load refused). */
START_TEST(builtin_vec_env_settings_recorded)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/frl_test_vec_env_keys_%d.frl", (int)getpid());
    frl_runtime *rt = runtime(1, "");
    frl_config *vc = frl_test_settings("env.max_episode_steps=5");
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "CartPole-v1", 4, vc), FRL_OK);
    frl_config *tc = frl_test_settings("train.rollout=16 train.num_envs=4");
    frl_trainer *a, *b;
    ck_assert_int_eq(frl_trainer_create_vec(&a, rt, v, tc), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(a, 64), FRL_OK);
    ck_assert_int_eq(frl_trainer_save(a, path), FRL_OK);
    ck_assert_msg(frl_trainer_load(&b, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(frl_trainer_train(a, 512), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(b, 512), FRL_OK);
    const frl_metrics *ma = frl_trainer_metrics(a), *mb = frl_trainer_metrics(b);
    ck_assert(ma->mean_length <= 5 && mb->mean_length <= 5);
    ck_assert_int_eq(ma->episodes, mb->episodes);
    ck_assert(ma->mean_return == mb->mean_return);
    frl_trainer_destroy(a);
    frl_trainer_destroy(b);
    frl_vec_env_destroy(v);
    frl_config_destroy(vc);
    frl_config_destroy(tc);
    remove(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* Every learner's run continues from its checkpoint. A saved file sets every key, and
 * IMPALA's saved train.advantage=gae (the key's default; IMPALA reads V-trace's
 * advantages whatever it says) made frl_trainer_load refuse the file. A load that
 * succeeds leaves the thread's last error as it was: looking for the sections a file
 * may lack (trainer.unlearned, env.g1.totals, ...) once wrote "no section" there. */
START_TEST(every_learner_resumes)
{
    static const char *const algos[] = {"ppo", "impala", "a2c", "dqn",
                                        "dqn train.prioritized=true train.save_replay=true"};
    char path[64], before[256];
    snprintf(path, sizeof path, "/tmp/frl_test_algos_%d.frl", (int)getpid());
    frl_runtime *rt = runtime(1, "");
    for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++) {
        char text[160];
        snprintf(text, sizeof text, "train.algo=%s train.num_envs=4 train.rollout=8 "
                                    "policy.hidden=8", algos[i]);
        frl_config *cfg = frl_test_settings(text);
        frl_trainer *t;
        ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
        ck_assert_int_eq(frl_trainer_train(t, 4 * 8 * 2), FRL_OK);
        ck_assert_msg(frl_trainer_save(t, path) == FRL_OK, "%s: %s", algos[i], frl_last_error());
        frl_trainer_destroy(t);
        ck_assert_int_eq(frl_config_set_int(NULL, "train.rollout", 8), FRL_ERR_NULL);
        snprintf(before, sizeof before, "%s", frl_last_error());
        ck_assert_msg(frl_trainer_load(&t, rt, path, NULL) == FRL_OK, "%s: %s", algos[i],
                      frl_last_error());
        ck_assert_msg(strcmp(frl_last_error(), before) == 0, "%s: the load left \"%s\"",
                      algos[i], frl_last_error());
        ck_assert_int_eq(frl_trainer_train(t, 4 * 8 * 4), FRL_OK);
        frl_trainer_destroy(t);
        frl_config_destroy(cfg);
    }
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

static int a2c_ratio_stats(void *user, const frl_metrics *m)
{
    double *worst = user;
    worst[0] = m->clip_fraction > worst[0] ? m->clip_fraction : worst[0];
    worst[1] = m->approx_kl > worst[1] ? m->approx_kl : worst[1];
    return 0;
}

/* A2C's one pass learns from the policy that acted, so rho = 1: doc/api.md promises a
 * clip_fraction and approx_kl of 0. The stored float log-probability against the
 * learner's double one made rho - 1 a rounding error, and with train.clip = 0 every
 * such row counted as clipped. */
START_TEST(a2c_reports_no_clipping)
{
    static const char *const envs[] = {"CartPole-v1", "Pendulum-v1"};
    frl_runtime *rt = runtime(1, "");
    for (int i = 0; i < 2; i++) {
        frl_config *cfg = frl_test_settings("train.algo=a2c policy.hidden=8");
        frl_trainer *t;
        ck_assert_int_eq(frl_trainer_create(&t, rt, envs[i], cfg), FRL_OK);
        double worst[2] = {0, 0};
        frl_trainer_set_callback(t, a2c_ratio_stats, worst);
        ck_assert_int_eq(frl_trainer_train(t, 5 * 8 * 4), FRL_OK);
        ck_assert_msg(worst[0] == 0 && worst[1] == 0, "%s: clip_fraction %g, approx_kl %g",
                      envs[i], worst[0], worst[1]);
        frl_trainer_destroy(t);
        frl_config_destroy(cfg);
    }
    frl_runtime_destroy(rt);
    /* With the async sampler the rows were acted by weights an update or more old, so
     * rho != 1 and approx_kl measures that lag; A2C clips nothing, so clip_fraction
     * stays 0 (it counted every row, with train.clip = 0). */
    rt = runtime(2, "");
    frl_config *cfg = frl_test_settings("train.algo=a2c policy.hidden=8 sampler.mode=async");
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    double worst[2] = {0, 0};
    frl_trainer_set_callback(t, a2c_ratio_stats, worst);
    ck_assert_int_eq(frl_trainer_train(t, 40 * 8 * 4), FRL_OK);
    ck_assert_msg(worst[0] == 0, "async: clip_fraction %g", worst[0]);
    ck_assert_msg(worst[1] > 0, "async: approx_kl %g with rows acted by older weights",
                  worst[1]);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

static int stop_at_two(void *user, const frl_metrics *m)
{
    *(double *)user = m->epsilon;
    return m->update >= 2;
}

/* train(INT64_MAX) means "until the target or a stop": the sync sampler's update count
 * (the learners' schedules) is rounded up without overflowing. It wrapped negative, and
 * DQN's epsilon fell from 1 to its final 0.05 after the first update. */
START_TEST(sync_train_without_end)
{
    frl_runtime *rt = runtime(1, "");
    frl_config *cfg = frl_test_settings("train.algo=dqn train.num_envs=4 policy.hidden=16 "
                                        "train.learning_starts=0");
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    double eps = 0;
    frl_trainer_set_callback(t, stop_at_two, &eps);
    ck_assert_int_eq(frl_trainer_train(t, INT64_MAX), FRL_ERR_CALLBACK);
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 2);
    ck_assert_msg(eps > 0.99, "epsilon %g after one update of an endless run", eps);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* Steps of the trainer's envs from its metrics callback: refused (a metrics callback). */
static int step_from_callback(void *user, const frl_metrics *m)
{
    frl_trainer *t = user;
    (void)m;
    frl_vec_env *v = frl_trainer_vec_env(t);
    ck_assert_int_eq(frl_vec_env_step(v), FRL_ERR_STATE);
    ck_assert_msg(strstr(frl_last_error(), "is a trainer's"), "%s", frl_last_error());
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_ERR_STATE);
    return 0;
}

/* A trainer's vec env is stepped by the trainer alone: a step or reset from its metrics
 * callback, an evaluation, a population's evaluation or a second trainer on it is
 * refused, and nothing changes (the run matches one without those calls). Once the
 * trainer is gone a host's vec env is free again. Before, each of them went through and
 * the trainer went on with envs out of step with its run. */
START_TEST(a_trainers_vec_env_is_its_own)
{
    frl_runtime *rt = runtime(1, "");
    frl_config *cfg = frl_test_settings(small);
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "CartPole-v1", 8, NULL), FRL_OK);
    frl_trainer *t, *second = (frl_trainer *)1, *plain;
    ck_assert_int_eq(frl_trainer_create_vec(&t, rt, v, cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_create_vec(&second, rt, v, cfg), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(second);
    ck_assert_msg(strstr(frl_last_error(), "already another trainer's"), "%s",
                  frl_last_error());
    /* another runtime's vec env: named as the argument is (it said venvs[0]) */
    frl_runtime *other = runtime(1, "");
    ck_assert_int_eq(frl_trainer_create_vec(&second, other, v, cfg), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(frl_last_error(), "frl_trainer_create_vec: venv belongs to another "
                                           "runtime"), "%s", frl_last_error());
    frl_runtime_destroy(other);
    frl_trainer_set_callback(t, step_from_callback, t);
    ck_assert_int_eq(frl_trainer_train(t, 512), FRL_OK);
    float with[128], without[128];
    fingerprint(t, with);
    frl_eval_args ea;
    frl_eval_args_init(&ea);
    ea.episodes = 2;
    ck_assert_int_eq(frl_policy_evaluate(frl_trainer_policy(t), v, &ea, NULL), FRL_ERR_STATE);
    frl_population *pop;
    ck_assert_int_eq(frl_population_create(&pop, frl_trainer_policy(t), 2), FRL_OK);
    frl_population_eval_args pa;
    frl_population_eval_args_init(&pa);
    ck_assert_int_eq(frl_population_evaluate(pop, v, &pa, NULL), FRL_ERR_STATE);
    frl_population_destroy(pop);
    ck_assert_int_eq(frl_trainer_create(&plain, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(plain, 512), FRL_OK);
    fingerprint(plain, without);
    ck_assert_int_eq(memcmp(with, without, sizeof with), 0);
    frl_trainer_destroy(plain);
    frl_trainer_destroy(t);
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
    ck_assert_int_eq(frl_trainer_create_vec(&t, rt, v, cfg), FRL_OK);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trainer");
    TCase *tc = tcase_create("trainer");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, same_seed_same_run_any_thread_count);
    tcase_add_test(tc, decoupled_without_lag_changes_nothing);
    tcase_add_test(tc, resume_continues_exactly);
    tcase_add_test(tc, stop_from_thread_and_callback);
    tcase_add_test(tc, outputs_are_written);
    tcase_add_test(tc, new_output_dir_gets_a_row);
    tcase_add_test(tc, resumed_metrics_have_one_row_an_update);
    tcase_add_test(tc, created_trainer_replaces_metrics);
    tcase_add_test(tc, unwritable_metrics_refused_by_set_output);
    tcase_add_test(tc, resumed_metrics_cut_a_partial_row);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, resume_refuses_a_changed_shape);
    tcase_add_test(tc, recovers_after_a_failed_rollout);
    tcase_add_test(tc, a_slot_the_host_holds_is_refused);
    tcase_add_test(tc, a_refused_observation_is_not_learned_from);
    tcase_add_test(tc, divergence_is_reported);
    tcase_add_test(tc, sync_train_without_end);
    tcase_add_test(tc, a_restart_forgets_the_cut_returns);
    tcase_add_test(tc, reward_norm_starts_as_gymnasium);
    tcase_add_test(tc, builtin_vec_env_settings_recorded);
    tcase_add_test(tc, every_learner_resumes);
    tcase_add_test(tc, a2c_reports_no_clipping);
    tcase_add_test(tc, a_trainers_vec_env_is_its_own);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
