/* Elastic policies (rl/elastic.h), progressive shrinking (algo/elastic_distill.h) and
 * the latency model (rl/latency.h): what a cut sub-policy is, that gradients go back
 * where its weights came from, that reordering units keeps every function, that
 * distillation brings sub-policies to the full one and survives a checkpoint, and that
 * the latency model predicts what acting measures. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "io/container.h"
#include "rl/latency.h"
#include "test_util.h"

typedef struct fixture {
    frl_runtime *rt;
    frl_config *cfg;
    frl_space *obs, *act;
    frl_policy *p;
    frl_elastic e;
    float *heads;
} fixture;

/* A policy of obs_w box observations and a box of 1 action (or discrete(n_act) when
 * n_act > 0) with the given settings, and its elastic shape. */
static void setup_fixture(fixture *f, int64_t obs_w, int64_t n_act, const char *settings)
{
    memset(f, 0, sizeof *f);
    f->rt = frl_test_runtime(1);
    f->cfg = frl_test_settings(settings);
    int64_t one = 1;
    ck_assert_int_eq(frl_space_create_box(&f->obs, NULL, 1, &obs_w, NULL, NULL), FRL_OK);
    if (n_act > 0)
        ck_assert_int_eq(frl_space_create_discrete(&f->act, NULL, n_act), FRL_OK);
    else
        ck_assert_int_eq(frl_space_create_box(&f->act, NULL, 1, &one, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_policy_create_seeded(&f->p, f->rt, f->cfg, f->obs, f->act, 7, "test"),
                     FRL_OK);
    char err[FRL_ERRMSG_SIZE];
    ck_assert_msg(frl_elastic_init(&f->e, f->p, f->cfg, err) == FRL_OK, "%s", err);
    f->heads = calloc(f->e.num_heads + 1, sizeof(float));
    double *work = calloc(frl_elastic_init_work(&f->e), sizeof(double));
    frl_elastic_init_heads(&f->e, f->heads, 3, work);
    free(work);
    /* Heads of a larger scale than init's, so a wrong head shows in the outputs. */
    for (size_t i = 0; i < f->e.num_heads; i++)
        f->heads[i] = (float)sin(0.37 * (double)i) * 0.5f;
}

static void teardown_fixture(fixture *f)
{
    free(f->heads);
    frl_policy_destroy(f->p);
    frl_space_destroy(f->obs);
    frl_space_destroy(f->act);
    frl_config_destroy(f->cfg);
    frl_runtime_destroy(f->rt);
}

/* The head outputs (means or logits, [rows x out]) of policy p on rows observations. */
static void outputs_of(frl_policy *p, const float *obs, int32_t rows, float *out)
{
    int32_t act[64];
    float acts[64];
    frl_act_args a;
    frl_act_args_init(&a);
    a.batch = rows;
    a.observations = obs;
    a.actions = p->discrete ? (void *)act : (void *)acts;
    a.deterministic = 1;
    a.outputs = out;
    frl_test_act_widths(&a, p);
    ck_assert_int_eq(frl_policy_act(p, &a), FRL_OK);
}

static void some_obs(float *obs, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        obs[i] = (float)sin(1.7 * (double)i + 0.3);
}

START_TEST(full_cut_is_the_policy)
{
    fixture f;
    setup_fixture(&f, 3, 0, "policy.hidden=16,16 elastic.widths=4,8");
    frl_elastic_arch a;
    frl_elastic_full(&f.e, &a);
    frl_policy *c;
    char err[FRL_ERRMSG_SIZE];
    ck_assert_msg(frl_elastic_cut(&f.e, f.p, f.heads, &a, &c, err) == FRL_OK, "%s", err);
    ck_assert_uint_eq(c->num_params, f.p->num_params);
    ck_assert(memcmp(c->params, f.p->params, sizeof(float) * c->num_params) == 0);
    frl_policy_destroy(c);
    teardown_fixture(&f);
}
END_TEST

/* <u, gather(v)> = <scatter(u), v> over every architecture: the gradient of a
 * sub-policy's weights lands on the weights it was gathered from, and nowhere else. */
START_TEST(gather_and_scatter_are_adjoint)
{
    fixture f;
    setup_fixture(&f, 3, 0, "policy.hidden=12,10,8 elastic.widths=2,4,6");
    size_t n = f.p->num_params, nh = f.e.num_heads;
    float *v = malloc(sizeof(float) * n), *vh = malloc(sizeof(float) * nh);
    float *sub = malloc(sizeof(float) * n), *u = malloc(sizeof(float) * n);
    float *g = calloc(n, sizeof(float)), *gh = calloc(nh, sizeof(float));
    for (size_t i = 0; i < n; i++)
        v[i] = (float)cos(0.11 * (double)i);
    for (size_t i = 0; i < nh; i++)
        vh[i] = (float)sin(0.23 * (double)i);
    int64_t count = frl_elastic_count(&f.e);
    ck_assert_int_eq(count, 4 + 16 + 64);
    for (int64_t k = 0; k < count; k++) {
        frl_elastic_arch a;
        frl_elastic_nth(&f.e, k, &a);
        frl_mlp sa, sc;
        size_t m = frl_elastic_sub_layout(&f.e, &a, &sa, &sc) - 1; /* less the log-std */
        frl_elastic_gather(&f.e, f.p, &a, v, vh, sub);
        for (size_t i = 0; i < m; i++)
            u[i] = (float)sin(0.05 * (double)(i + 31 * (size_t)k));
        memset(g, 0, sizeof(float) * n);
        memset(gh, 0, sizeof(float) * nh);
        frl_elastic_scatter_add(&f.e, f.p, &a, u, g, gh);
        double lhs = 0, rhs = 0;
        for (size_t i = 0; i < m; i++)
            lhs += (double)u[i] * sub[i];
        for (size_t i = 0; i < n; i++)
            rhs += (double)g[i] * v[i];
        for (size_t i = 0; i < nh; i++)
            rhs += (double)gh[i] * vh[i];
        ck_assert_msg(fabs(lhs - rhs) <= 1e-9 * (1 + fabs(lhs)), "arch %lld: %g vs %g",
                      (long long)k, lhs, rhs);
        ck_assert_float_eq(sub[m], v[f.p->log_std_off]); /* the log-std is copied */
    }
    free(v);
    free(vh);
    free(sub);
    free(u);
    free(g);
    free(gh);
    teardown_fixture(&f);
}
END_TEST

/* A sub-policy at full depth is the full policy with the dropped units silenced. */
START_TEST(narrow_cut_is_the_masked_policy)
{
    fixture f;
    setup_fixture(&f, 4, 3, "policy.hidden=16,12 policy.activation=relu elastic.widths=4,8");
    frl_elastic_arch a = {.depth = 2, .width = {8, 4}};
    frl_policy *c;
    char err[FRL_ERRMSG_SIZE];
    ck_assert_msg(frl_elastic_cut(&f.e, f.p, f.heads, &a, &c, err) == FRL_OK, "%s", err);
    /* Silence the dropped units: their outgoing weights, in the full policy's actor. */
    const frl_mlp *m = &f.p->actor;
    for (int32_t l = 0; l < 2; l++)
        for (int32_t j = a.width[l]; j < m->width[l + 1]; j++)
            for (int32_t o = 0; o < m->width[l + 2]; o++)
                f.p->params[m->off_w[l + 1] + (size_t)j * (size_t)m->width[l + 2] + (size_t)o] = 0;
    float obs[40], want[30], got[30];
    some_obs(obs, 40);
    outputs_of(f.p, obs, 10, want);
    outputs_of(c, obs, 10, got);
    for (int32_t i = 0; i < 30; i++)
        ck_assert_msg(fabsf(want[i] - got[i]) <= 1e-5f * (1 + fabsf(want[i])), "%d: %g vs %g",
                      (int)i, want[i], got[i]);
    frl_policy_destroy(c);
    teardown_fixture(&f);
}
END_TEST

/* Reordering by importance leaves every full-width architecture's function as it was
 * (heads of shallower depths included) and sorts each layer's units. */
START_TEST(reordering_keeps_every_function)
{
    fixture f;
    setup_fixture(&f, 3, 0, "policy.hidden=10,9,8 elastic.widths=2,4");
    float *moment = calloc(f.p->num_params, sizeof(float));
    float *work = malloc(sizeof(float) * frl_elastic_reorder_work(&f.e));
    float obs[30], before[3][10], after[3][10];
    some_obs(obs, 30);
    for (int32_t pass = 0; pass < 2; pass++)
        for (int32_t d = 1; d <= 3; d++) {
            frl_elastic_arch a;
            frl_elastic_full(&f.e, &a);
            a.depth = d;
            frl_policy *c;
            char err[FRL_ERRMSG_SIZE];
            ck_assert_msg(frl_elastic_cut(&f.e, f.p, f.heads, &a, &c, err) == FRL_OK, "%s", err);
            outputs_of(c, obs, 10, pass ? after[d - 1] : before[d - 1]);
            frl_policy_destroy(c);
            if (pass == 0 && d == 3) {
                for (size_t i = 0; i < f.p->num_params; i++)
                    moment[i] = f.p->params[i];
                float *const like[] = {moment};
                frl_elastic_reorder(&f.e, f.p, f.p->params, f.heads, like, 1, NULL, 0, work);
                /* a vector laid out like the parameters moves with them */
                ck_assert(memcmp(moment, f.p->params, sizeof(float) * f.p->num_params) == 0);
            }
        }
    for (int32_t d = 0; d < 3; d++)
        for (int32_t i = 0; i < 10; i++)
            ck_assert_msg(fabsf(before[d][i] - after[d][i]) <= 1e-5f * (1 + fabsf(before[d][i])),
                          "depth %d row %d: %g vs %g", (int)d + 1, (int)i, before[d][i],
                          after[d][i]);
    const frl_mlp *m = &f.p->actor;
    for (int32_t l = 0; l < 3; l++) { /* importance falls along each layer */
        double prev = 1e300;
        for (int32_t j = 0; j < m->width[l + 1]; j++) {
            double s = 0;
            for (int32_t o = 0; o < m->width[l + 2]; o++)
                s += fabs(f.p->params[m->off_w[l + 1] + (size_t)j * (size_t)m->width[l + 2] +
                                      (size_t)o]);
            ck_assert_msg(s <= prev * (1 + 1e-6), "layer %d unit %d", (int)l, (int)j);
            prev = s;
        }
    }
    free(moment);
    free(work);
    teardown_fixture(&f);
}
END_TEST

START_TEST(bad_architectures_and_policies_are_refused)
{
    fixture f;
    setup_fixture(&f, 3, 0, "policy.hidden=16,16 elastic.widths=4,8");
    frl_elastic_arch a;
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_elastic_arch_parse(&f.e, "8,3", &a, err), FRL_ERR_RANGE);
    ck_assert_msg(strstr(err, "width 3") && strstr(err, "4,8,16"), "%s", err);
    ck_assert_int_eq(frl_elastic_arch_parse(&f.e, "8,8,8", &a, err), FRL_ERR_RANGE);
    ck_assert_msg(strstr(err, "depth 3"), "%s", err);
    ck_assert_int_eq(frl_elastic_arch_parse(&f.e, "8,x", &a, err), FRL_ERR_INVALID_ARGUMENT);
    /* An element left empty ("8," was once depth 1) or not plain digits is no width. */
    const char *malformed[] = {"", "8,", ",8", "8,,8", "+8", " 8", "8 ", "0", "8,-4"};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        ck_assert_msg(frl_elastic_arch_parse(&f.e, malformed[i], &a, err) ==
                          FRL_ERR_INVALID_ARGUMENT, "\"%s\" was read", malformed[i]);
        ck_assert_msg(strstr(err, "write the kept widths"), "%s", err);
        ck_assert_int_eq(frl_elastic_arch_scan(malformed[i], &a, err), FRL_ERR_INVALID_ARGUMENT);
    }
    ck_assert_int_eq(frl_elastic_arch_scan("16,4", &a, err), FRL_OK);
    ck_assert_int_eq(a.depth, 2);
    ck_assert_int_eq(frl_elastic_arch_parse(&f.e, "16,4", &a, err), FRL_OK);
    ck_assert_int_eq(a.depth, 2);
    teardown_fixture(&f);

    const char *refused[][2] = {
        {"policy.hidden=16,16 policy.shared=true elastic.widths=4", "shared trunk"},
        {"policy.hidden=16,16 policy.core=gru elastic.widths=4", "recurrent core"},
        {"policy.hidden= elastic.widths=4", "no hidden layer"},
        {"policy.hidden=16,8 elastic.widths=12,32", "narrowest"},
        /* The message names the layer no choice fits, not the narrowest's position. */
        {"policy.hidden=32,8 elastic.widths=16", "hidden layer 1 (8 units)"},
        {"policy.hidden=8,32 elastic.widths=16", "hidden layer 0 (8 units)"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        frl_runtime *rt = frl_test_runtime(1);
        frl_config *cfg = frl_test_settings(refused[i][0]);
        frl_space *obs, *act;
        int64_t w = 3;
        ck_assert_int_eq(frl_space_create_box(&obs, NULL, 1, &w, NULL, NULL), FRL_OK);
        ck_assert_int_eq(frl_space_create_discrete(&act, NULL, 2), FRL_OK);
        frl_policy *p;
        ck_assert_int_eq(frl_policy_create_seeded(&p, rt, cfg, obs, act, 1, "t"), FRL_OK);
        frl_elastic e;
        ck_assert_int_ne(frl_elastic_init(&e, p, cfg, err), FRL_OK);
        ck_assert_msg(strstr(err, refused[i][1]), "%s: %s", refused[i][0], err);
        frl_policy_destroy(p);
        frl_space_destroy(obs);
        frl_space_destroy(act);
        frl_config_destroy(cfg);
        frl_runtime_destroy(rt);
    }
    /* Algorithms that train no elastic policy refuse the key rather than train a plain
     * one that fastrl cut cannot cut. */
    const char *algos[] = {"dqn", "es", "ga"};
    for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "elastic.widths=4,8 train.algo=%s", algos[i]);
        frl_runtime *rt = frl_test_runtime(1);
        frl_config *cfg = frl_test_settings(text);
        frl_trainer *t = NULL;
        ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_ERR_UNSUPPORTED);
        ck_assert_msg(t == NULL && strstr(frl_last_error(), "elastic.widths") &&
                          strstr(frl_last_error(), algos[i]),
                      "%s", frl_last_error());
        frl_config_destroy(cfg);
        frl_runtime_destroy(rt);
    }
}
END_TEST

/* ---- training ---- */

static const char *ELASTIC_RUN = "policy.hidden=32,32 elastic.widths=4,8,16 train.num_envs=4 "
                                 "train.rollout=256";

/* A trainer on Pendulum with the run's settings and `extra`, trained to steps. */
static frl_trainer *train_pendulum(frl_runtime *rt, const char *extra, int64_t steps)
{
    char text[512];
    snprintf(text, sizeof text, "%s %s", ELASTIC_RUN, extra);
    frl_config *cfg = frl_test_settings(text);
    frl_trainer *t;
    ck_assert_msg(frl_trainer_create(&t, rt, "Pendulum-v1", cfg) == FRL_OK, "%s",
                  frl_last_error());
    frl_config_destroy(cfg);
    ck_assert_msg(frl_trainer_train(t, steps) == FRL_OK, "%s", frl_last_error());
    return t;
}

/* The saved policy and head block of a trainer, through its checkpoint file. */
static frl_policy *saved_run(frl_trainer *t, frl_runtime *rt, const char *path, float **heads,
                             frl_elastic *e, const char *settings)
{
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_policy *p;
    ck_assert_int_eq(frl_policy_load(&p, rt, path), FRL_OK);
    frl_config *cfg = frl_test_settings(settings);
    char err[FRL_ERRMSG_SIZE];
    ck_assert_msg(frl_elastic_init(e, p, cfg, err) == FRL_OK, "%s", err);
    frl_config_destroy(cfg);
    frl_container *c;
    ck_assert_int_eq(frl_container_read(&c, path, NULL, err), FRL_OK);
    const frl_section *s = frl_container_find(c, "elastic.heads", FRL_DTYPE_F32,
                                              (int64_t)e->num_heads, err);
    ck_assert_msg(s != NULL, "%s", err);
    *heads = malloc(sizeof(float) * e->num_heads);
    memcpy(*heads, s->data, sizeof(float) * e->num_heads);
    frl_container_free(c);
    return p;
}

/* Mean squared distance of sub-policies' means to the full policy's, over every
 * architecture, on observations like Pendulum's. */
static double distance_to_full(const frl_elastic *e, frl_policy *p, const float *heads)
{
    float obs[3 * 64], full[64], sub[64];
    for (int32_t i = 0; i < 64; i++) {
        double th = 0.1 * i;
        obs[3 * i] = (float)cos(th);
        obs[3 * i + 1] = (float)sin(th);
        obs[3 * i + 2] = (float)(sin(0.7 * i) * 4);
    }
    outputs_of(p, obs, 64, full);
    double sum = 0;
    int64_t count = frl_elastic_count(e);
    for (int64_t k = 0; k < count; k++) {
        frl_elastic_arch a;
        frl_elastic_nth(e, k, &a);
        frl_policy *c;
        char err[FRL_ERRMSG_SIZE];
        ck_assert_int_eq(frl_elastic_cut(e, p, heads, &a, &c, err), FRL_OK);
        outputs_of(c, obs, 64, sub);
        frl_policy_destroy(c);
        for (int32_t i = 0; i < 64; i++)
            sum += (double)(sub[i] - full[i]) * (double)(sub[i] - full[i]);
    }
    return sum / (double)(64 * count);
}

START_TEST(distillation_brings_sub_policies_to_the_full_one)
{
    frl_runtime *rt = frl_test_runtime(2);
    /* The same budget in every build: a shorter one leaves the policy near its
     * initialisation, where every sub-policy is close to the full one anyway (ASan: 0.15
     * against 0.14 at 16K steps), and 64K steps take about a second under TSan. */
    int64_t steps = 64 * 1024;
    char path[64];
    double dist[2];
    for (int32_t distil = 0; distil < 2; distil++) {
        /* elastic.full_fraction=1: the whole run trains the full policy alone */
        frl_trainer *t = train_pendulum(rt, distil ? "elastic.full_fraction=0.25 "
                                                     "elastic.depth_fraction=0.25"
                                                   : "elastic.full_fraction=1", steps);
        snprintf(path, sizeof path, "/tmp/frl_elastic_%d.frl", (int)getpid());
        frl_elastic e;
        float *heads;
        frl_policy *p = saved_run(t, rt, path, &heads, &e, ELASTIC_RUN);
        dist[distil] = distance_to_full(&e, p, heads);
        free(heads);
        frl_policy_destroy(p);
        frl_trainer_destroy(t);
        unlink(path);
    }
    printf("elastic: sub-policies' mean squared distance to the full one: %.4g without "
           "distillation, %.4g with\n", dist[0], dist[1]);
    ck_assert_msg(dist[1] < 0.5 * dist[0], "%g vs %g", dist[1], dist[0]);
    frl_runtime_destroy(rt);
}
END_TEST

static int stop_at_update(void *user, const frl_metrics *m)
{
    frl_trainer **t = user;
    if (m->update == 6)
        frl_trainer_request_stop(*t);
    return 0;
}

/* Stopping, saving and resuming an elastic run continues it exactly: the heads, their
 * optimiser and the stage travel in the checkpoint. */
START_TEST(resumed_elastic_run_continues_exactly)
{
    frl_runtime *rt = frl_test_runtime(2);
    const char *extra = "elastic.full_fraction=0.2 elastic.depth_fraction=0.2";
    const int64_t whole = 10 * 1024;
    char path[64], path2[64];
    snprintf(path, sizeof path, "/tmp/frl_elastic_r%d.frl", (int)getpid());
    snprintf(path2, sizeof path2, "/tmp/frl_elastic_w%d.frl", (int)getpid());
    frl_trainer *t = train_pendulum(rt, extra, whole);
    frl_elastic e;
    float *h_whole, *h_resumed;
    frl_policy *p_whole = saved_run(t, rt, path2, &h_whole, &e, ELASTIC_RUN);
    frl_trainer_destroy(t);

    char text[512];
    snprintf(text, sizeof text, "%s %s", ELASTIC_RUN, extra);
    frl_config *cfg = frl_test_settings(text);
    ck_assert_int_eq(frl_trainer_create(&t, rt, "Pendulum-v1", cfg), FRL_OK);
    frl_config_destroy(cfg);
    /* stopped inside the width stage; the call plans the whole run, as the other did */
    frl_trainer_set_callback(t, stop_at_update, &t);
    ck_assert_int_eq(frl_trainer_train(t, whole), FRL_ERR_INTERRUPTED);
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 6);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);
    ck_assert_int_eq(frl_trainer_load(&t, rt, path, NULL), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, whole), FRL_OK);
    frl_policy *p_resumed = saved_run(t, rt, path, &h_resumed, &e, ELASTIC_RUN);
    ck_assert(memcmp(p_whole->params, p_resumed->params,
                     sizeof(float) * p_whole->num_params) == 0);
    ck_assert(memcmp(h_whole, h_resumed, sizeof(float) * e.num_heads) == 0);
    free(h_whole);
    free(h_resumed);
    frl_policy_destroy(p_whole);
    frl_policy_destroy(p_resumed);
    frl_trainer_destroy(t);
    unlink(path);
    unlink(path2);
    frl_runtime_destroy(rt);
}
END_TEST

/* A copy of the checkpoint at path in path2 with one section's element `at` replaced
 * by the bytes of *value (size bytes). */
static void forge_element(const char *path, const char *path2, const char *name, int64_t at,
                          const void *value, size_t size)
{
    char err[FRL_ERRMSG_SIZE];
    frl_container *c;
    ck_assert_int_eq(frl_container_read(&c, path, NULL, err), FRL_OK);
    int32_t n = frl_container_count(c);
    frl_section *s = calloc((size_t)n, sizeof *s);
    unsigned char *bad = NULL;
    for (int32_t i = 0; i < n; i++) {
        s[i] = *frl_container_at(c, i);
        if (!strcmp(s[i].name, name)) {
            size_t bytes = size * (size_t)s[i].count;
            bad = malloc(bytes);
            memcpy(bad, s[i].data, bytes);
            memcpy(bad + size * (size_t)at, value, size);
            s[i].data = bad;
        }
    }
    ck_assert(bad != NULL);
    ck_assert_int_eq(frl_container_write(path2, NULL, s, n, err), FRL_OK);
    frl_container_free(c);
    free(bad);
    free(s);
}

/* A checkpoint whose head block is not finite (a diverged run's, or a corrupted one
 * rewritten with a valid checksum) is refused on resuming, as policy.params is, rather
 * than resumed into sub-policies that act NaN. So is an Adam step count beyond 2^53:
 * INT64_MAX overflowed at the first update (UBSan). */
START_TEST(nonfinite_heads_are_refused)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_trainer *t = train_pendulum(rt, "elastic.full_fraction=0", 2048);
    char path[64], path2[64];
    snprintf(path, sizeof path, "/tmp/frl_elastic_n%d.frl", (int)getpid());
    snprintf(path2, sizeof path2, "/tmp/frl_elastic_m%d.frl", (int)getpid());
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);
    float nan = NAN;
    forge_element(path, path2, "elastic.heads", 1, &nan, sizeof nan);
    ck_assert_int_eq(frl_trainer_load(&t, rt, path2, NULL), FRL_ERR_FORMAT);
    ck_assert_msg(strstr(frl_last_error(), "elastic.heads"), "%s", frl_last_error());
    int64_t steps = INT64_MAX;
    forge_element(path, path2, "elastic.state", 1, &steps, sizeof steps);
    ck_assert_int_eq(frl_trainer_load(&t, rt, path2, NULL), FRL_ERR_FORMAT);
    ck_assert_msg(strstr(frl_last_error(), "elastic.state"), "%s", frl_last_error());
    unlink(path);
    unlink(path2);
    frl_runtime_destroy(rt);
}
END_TEST

/* elastic.widths set on resuming a plain run: the trainer it makes needs a head block
 * the run never saved. Said as the caller's override, with the saved value, not as a
 * corrupt file (FRL_ERR_FORMAT "no section"). */
START_TEST(elastic_widths_over_a_plain_run_are_named)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg = frl_test_settings("policy.hidden=16,16 train.num_envs=4 "
                                        "train.rollout=64");
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "Pendulum-v1", cfg), FRL_OK);
    frl_config_destroy(cfg);
    ck_assert_int_eq(frl_trainer_train(t, 256), FRL_OK);
    char path[64];
    snprintf(path, sizeof path, "/tmp/frl_elastic_p%d.frl", (int)getpid());
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);
    cfg = frl_test_settings("elastic.widths=4,8 train.lr=0.001");
    ck_assert_int_eq(frl_trainer_load(&t, rt, path, cfg), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(t);
    const char *m = frl_last_error();
    ck_assert_msg(strstr(m, "elastic.heads") && strstr(m, "elastic.widths=4,8 (saved: empty)"),
                  "%s", m);
    ck_assert_msg(!strstr(m, "train.lr"), "%s", m); /* the same value as saved: not named */
    frl_config_destroy(cfg);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* APPO: the async sampler's learner thread runs the distillation too, and a run that
 * stops mid-way still leaves a checkpoint whose sub-policies cut. */
START_TEST(async_elastic_run_distils)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_trainer *t = train_pendulum(rt, "sampler.mode=async elastic.full_fraction=0 "
                                        "elastic.depth_fraction=0.5",
                                    FRL_TEST_SHORT ? 8 * 1024 : 32 * 1024);
    char path[64];
    snprintf(path, sizeof path, "/tmp/frl_elastic_a%d.frl", (int)getpid());
    frl_elastic e;
    float *heads;
    frl_policy *p = saved_run(t, rt, path, &heads, &e, ELASTIC_RUN);
    /* the heads moved from their initialisation (orthogonal, zero biases) */
    double bias = 0;
    for (int32_t i = 0; i < e.out_w; i++)
        bias += fabs(heads[e.head_b[0][1] + (size_t)i]);
    ck_assert_msg(bias > 0, "the depth-1 actor head never trained");
    ck_assert(distance_to_full(&e, p, heads) < 1e30);
    free(heads);
    frl_policy_destroy(p);
    frl_trainer_destroy(t);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- latency ---- */

/* The model's accuracy is a timing on a shared VM whose speed drifts by up to 50% within
 * a second, so it is measured by bench/bench_latency (medians over rounds, printed) and
 * not judged here. What this checks holds on any machine: the fit runs at a batch of 1
 * and of 256, its model survives its text form (no negative time), and it predicts a
 * positive, finite time for every architecture, as each cut's act call measures one. */
enum { LATENCY_MAX_ARCHS = 64 };

static void check_fit_at(fixture *f, int32_t batch)
{
    frl_latency_model m, back;
    char err[FRL_ERRMSG_SIZE], text[8192];
    ck_assert_msg(frl_latency_fit(&m, &f->e, f->p, f->heads, batch, 0, err) == FRL_OK, "%s", err);
    ck_assert_int_eq(frl_latency_to_text(&m, text, sizeof text), 0);
    ck_assert_msg(frl_latency_from_text(&back, text, err) == FRL_OK, "%s", err);
    int64_t count = frl_elastic_count(&f->e);
    ck_assert_int_le(count, LATENCY_MAX_ARCHS);
    double worst = 0;
    for (int64_t k = 0; k < count; k++) {
        frl_elastic_arch a;
        frl_policy *cut = NULL;
        frl_elastic_nth(&f->e, k, &a);
        ck_assert_int_eq(frl_elastic_cut(&f->e, f->p, f->heads, &a, &cut, err), FRL_OK);
        double predicted = frl_latency_predict(&m, &f->e, &a);
        double measured = frl_latency_act_us(cut, batch, 0, 11, err);
        ck_assert_msg(isfinite(predicted) && predicted > 0, "batch %d, arch %d: %f",
                      (int)batch, (int)k, predicted);
        ck_assert_msg(measured > 0, "%s", err);
        double off = fabs(predicted - measured) / measured;
        worst = off > worst ? off : worst;
        frl_policy_destroy(cut);
    }
    printf("latency model at batch %d: %d architectures, worst single-round error %.0f%% "
           "(printed only: bench/bench_latency measures accuracy)\n", (int)batch, (int)count,
           100 * worst);
}

START_TEST(latency_model_predicts_acting)
{
    fixture f;
    setup_fixture(&f, 4, 2, "policy.hidden=64,64 elastic.widths=8,16,32");
    check_fit_at(&f, 1);
    check_fit_at(&f, 256);
    teardown_fixture(&f);
}
END_TEST

START_TEST(latency_model_text_round_trips)
{
    fixture f;
    setup_fixture(&f, 3, 0, "policy.hidden=8,8 elastic.widths=4");
    /* The model times layers in act's chunks: an MLP on a vector acts 256 rows a chunk
     * (doc/elastic.md). */
    ck_assert_int_eq(frl_policy_act_chunk_rows(f.p), 256);
    frl_latency_model m, back;
    char err[FRL_ERRMSG_SIZE], text[8192];
    ck_assert_int_eq(frl_latency_fit(&m, &f.e, f.p, f.heads, 2, 1, err), FRL_OK);
    ck_assert_int_eq(frl_latency_to_text(&m, text, sizeof text), 0);
    ck_assert_msg(frl_latency_from_text(&back, text, err) == FRL_OK, "%s", err);
    ck_assert_int_eq(back.batch, 2);
    ck_assert_int_eq(back.deterministic, 1);
    ck_assert_int_eq(back.n, m.n);
    frl_elastic_arch a;
    frl_elastic_full(&f.e, &a);
    ck_assert(fabs(frl_latency_predict(&back, &f.e, &a) - frl_latency_predict(&m, &f.e, &a)) <
              1e-5);
    ck_assert_int_eq(frl_latency_from_text(&back, "not a model\n", err), FRL_ERR_FORMAT);
    ck_assert_int_eq(frl_latency_from_text(&back, "fastrl-latency-model 1\nbatch 4\nlayer x\n",
                                           err), FRL_ERR_FORMAT);
    ck_assert_msg(strstr(err, "line 3"), "%s", err);
    ck_assert_int_eq(frl_latency_from_text(&back, "fastrl-latency-model 1\nbatch 4\n", err),
                     FRL_ERR_FORMAT);
    /* every depth up to the deepest named needs its intercept (else it counts as free) */
    ck_assert_int_eq(frl_latency_from_text(&back, "fastrl-latency-model 1\nbatch 1\n"
                                                  "intercept_us 2 1.0\nlayer 5 5 0 1.0\n",
                                           err), FRL_ERR_FORMAT);
    ck_assert_msg(strstr(err, "depth 1"), "%s", err);
    /* a model of other shapes cannot predict this policy */
    ck_assert_int_eq(frl_latency_from_text(&back, "fastrl-latency-model 1\nbatch 1\n"
                                                  "layer 5 5 0 1.0\n", err), FRL_OK);
    ck_assert(frl_latency_predict(&back, &f.e, &a) < 0);
    teardown_fixture(&f);
}
END_TEST

/* A corrupted, truncated or doubled model file is refused at its line rather than read
 * as another model: whatever follows a field, times not finite or beyond any call's, a
 * number out of range, a key given twice, a last line with no newline. */
START_TEST(latency_model_text_refuses_corruption)
{
    const char *head = "fastrl-latency-model 1\nbatch 4\ndeterministic 0\nkernels avx2\n"
                       "machine Some CPU @ 2.00GHz\nintercept_us 1 0.5\n";
    char text[512], err[FRL_ERRMSG_SIZE];
    frl_latency_model m;
    snprintf(text, sizeof text, "%slayer 3 8 1 0.25\nlayer 8 1 0 0.125\n", head);
    ck_assert_msg(frl_latency_from_text(&m, text, err) == FRL_OK, "%s", err);
    ck_assert_str_eq(m.machine, "Some CPU @ 2.00GHz");
    ck_assert_int_eq(m.n, 2);
    const char *bad[][2] = {
        {"layer 3 8 1 inf\n", "line 7"},
        {"layer 3 8 1 nan\n", "line 7"},
        {"layer 3 8 1 1e300\n", "line 7"},
        {"layer 3 8 1 -0.5\n", "line 7"},
        {"layer 3 8 1 0.25 junk\n", "line 7"},
        {"layer 3 8 1 0.25x\n", "line 7"},
        {"layer 3 8 9 0.25\n", "line 7"},          /* no such activation */
        {"layer 99999999999 8 1 0.25\n", "line 7"}, /* overflows an int */
        {"layer 3 8 1 0.25\nlayer 3 8 1 0.5\n", "line 8"},
        {"intercept_us 1 0.7\nlayer 3 8 1 0.25\n", "line 7"},
        {"intercept_us 2 inf\nlayer 3 8 1 0.25\n", "line 7"},
        {"batch 4\nlayer 3 8 1 0.25\n", "line 7"},
        {"kernels avx512\nlayer 3 8 1 0.25\n", "line 7"},
        {"layer 3 8 1 0.25", "does not end"},        /* truncated: "0.25" may be "0.2512" */
        {"layer 3 8 1 0.25\nlayer 8 1 0 0.1", "does not end"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, "%s%s", head, bad[i][0]);
        ck_assert_msg(frl_latency_from_text(&m, text, err) == FRL_ERR_FORMAT, "read: %s",
                      bad[i][0]);
        ck_assert_msg(strstr(err, bad[i][1]), "%s: %s", bad[i][0], err);
    }
    const char *bad_head[] = {
        "fastrl-latency-model 1\nbatch 99999999999\nintercept_us 1 1\nlayer 3 8 1 1\n",
        "fastrl-latency-model 1\nbatch 2097152\nintercept_us 1 1\nlayer 3 8 1 1\n",
        "fastrl-latency-model 1\nbatch 4 8\nintercept_us 1 1\nlayer 3 8 1 1\n",
        "fastrl-latency-model 1\nbatch 4\ndeterministic 2\nintercept_us 1 1\nlayer 3 8 1 1\n",
        "fastrl-latency-model 1\nbatch 4\nkernels avx2 avx512\nintercept_us 1 1\n"
        "layer 3 8 1 1\n",
        "fastrl-latency-model 1\nbatch 4\nkernels a-name-longer-than-fifteen\n"
        "intercept_us 1 1\nlayer 3 8 1 1\n",
        "fastrl-latency-model 12\nbatch 4\nintercept_us 1 1\nlayer 3 8 1 1\n",
    };
    for (size_t i = 0; i < sizeof bad_head / sizeof bad_head[0]; i++)
        ck_assert_msg(frl_latency_from_text(&m, bad_head[i], err) == FRL_ERR_FORMAT, "read: %s",
                      bad_head[i]);
    /* Windows line ends and a model of no machine line (written before it) still read. */
    ck_assert_int_eq(frl_latency_from_text(&m, "fastrl-latency-model 1\r\nbatch 4\r\n"
                                               "intercept_us 1 1\r\nlayer 3 8 1 1\r\n", err),
                     FRL_OK);
    ck_assert_str_eq(m.machine, "");
}
END_TEST

/* Probe times made by a known cost (0.2 us a call, 0.05 a layer, 1 ns a multiply-add)
 * give back that cost for every architecture; a cost with no per-layer part is fitted
 * without a negative one. */
START_TEST(latency_model_from_probe_times)
{
    fixture f;
    setup_fixture(&f, 3, 0, "policy.hidden=32,32 elastic.widths=4,8,16");
    const char *shapes[] = {"4", "16", "8,8", "32,32", "16,4"};
    frl_elastic_arch a[5];
    double us[5], flat[5];
    char err[FRL_ERRMSG_SIZE];
    for (int32_t i = 0; i < 5; i++) {
        ck_assert_int_eq(frl_elastic_arch_parse(&f.e, shapes[i], &a[i], err), FRL_OK);
        double macs = 3.0 * a[i].width[0], layers = a[i].depth + 1;
        for (int32_t l = 1; l < a[i].depth; l++)
            macs += (double)a[i].width[l - 1] * a[i].width[l];
        macs += a[i].width[a[i].depth - 1];
        us[i] = 0.2 + 0.05 * layers + 1e-3 * macs;
        flat[i] = 0.2 + 1e-3 * macs;
    }
    frl_latency_model m;
    ck_assert_msg(frl_latency_fit_probes(&m, &f.e, a, us, 5, err) == FRL_OK, "%s", err);
    ck_assert_int_eq(m.batch, 1);
    for (int32_t i = 0; i < 5; i++)
        ck_assert_msg(fabs(frl_latency_predict(&m, &f.e, &a[i]) - us[i]) < 1e-9, "%s: %g vs %g",
                      shapes[i], frl_latency_predict(&m, &f.e, &a[i]), us[i]);
    /* A depth the policy has not is no prediction, not a write past the layers. */
    frl_elastic_arch odd = a[2];
    odd.depth = 40;
    ck_assert(frl_latency_predict(&m, &f.e, &odd) < 0);
    odd.depth = -3;
    ck_assert(frl_latency_predict(&m, &f.e, &odd) < 0);
    ck_assert_int_eq(frl_latency_fit_probes(&m, &f.e, a, flat, 5, err), FRL_OK);
    for (int32_t i = 0; i < 5; i++)
        ck_assert(fabs(frl_latency_predict(&m, &f.e, &a[i]) - flat[i]) < 1e-9);
    ck_assert_int_eq(frl_latency_fit_probes(&m, &f.e, a, us, 2, err), FRL_ERR_INVALID_ARGUMENT);
    /* Three of one depth cannot tell a layer's cost from a call's: fitted anyway, the
     * layers' term went, and every two-layer sub-policy was predicted 0.05 us fast. */
    const char *one_depth[] = {"4", "8", "16"};
    frl_elastic_arch d1[3];
    double us1[3];
    for (int32_t i = 0; i < 3; i++) {
        ck_assert_int_eq(frl_elastic_arch_parse(&f.e, one_depth[i], &d1[i], err), FRL_OK);
        us1[i] = 0.2 + 0.05 * 2 + 1e-3 * 4.0 * d1[i].width[0];
    }
    ck_assert_int_eq(frl_latency_fit_probes(&m, &f.e, d1, us1, 3, err), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "another depth"), "%s", err);
    /* Times that are not times, and architectures the policy has not. */
    double bad_us[5] = {us[0], us[1], NAN, us[3], us[4]};
    ck_assert_int_eq(frl_latency_fit_probes(&m, &f.e, a, bad_us, 5, err), FRL_ERR_RANGE);
    bad_us[2] = -1;
    ck_assert_int_eq(frl_latency_fit_probes(&m, &f.e, a, bad_us, 5, err), FRL_ERR_RANGE);
    frl_elastic_arch deep[5];
    memcpy(deep, a, sizeof deep);
    deep[2].depth = 7;
    ck_assert_int_eq(frl_latency_fit_probes(&m, &f.e, deep, us, 5, err), FRL_ERR_RANGE);
    teardown_fixture(&f);
}
END_TEST

/* The fastest architecture is the least prediction over every architecture, whatever
 * the times: measured ones need not grow with the widths (it was taken to be the
 * narrowest of some depth, and a budget's error named one 5x slower than another). */
START_TEST(latency_model_finds_the_fastest)
{
    fixture f;
    setup_fixture(&f, 3, 0, "policy.hidden=12,10,8 elastic.widths=2,4,6");
    frl_latency_model m;
    char err[FRL_ERRMSG_SIZE];
    ck_assert_msg(frl_latency_fit_probes(&m, &f.e, (frl_elastic_arch[]){{1, {2}}, {2, {4, 4}},
                                         {3, {12, 10, 8}}}, (double[]){1, 2, 9}, 3, err) ==
                      FRL_OK, "%s", err);
    for (int32_t round = 0; round < 20; round++) {
        for (int32_t i = 0; i < m.n; i++) /* times of no order in the widths */
            m.layer[i].us = fabs(sin(1.3 * (double)(i + 1) * (double)(round + 1)));
        for (int32_t d = 1; d <= m.depth; d++)
            m.intercept_us[d] = round % 2 ? 0.5 * (double)(3 - d) : 0;
        double want = 1e300;
        for (int64_t k = 0; k < frl_elastic_count(&f.e); k++) {
            frl_elastic_arch a;
            frl_elastic_nth(&f.e, k, &a);
            want = fmin(want, frl_latency_predict(&m, &f.e, &a));
        }
        frl_elastic_arch best;
        double got = frl_latency_fastest(&m, &f.e, &best);
        ck_assert_int_eq(frl_elastic_check(&f.e, &best, err), FRL_OK);
        ck_assert_msg(got == want, "round %d: %g, the least is %g", (int)round, got, want);
        ck_assert(frl_latency_predict(&m, &f.e, &best) == got);
    }
    teardown_fixture(&f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("elastic");
    TCase *tc = tcase_create("elastic");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, full_cut_is_the_policy);
    tcase_add_test(tc, gather_and_scatter_are_adjoint);
    tcase_add_test(tc, narrow_cut_is_the_masked_policy);
    tcase_add_test(tc, reordering_keeps_every_function);
    tcase_add_test(tc, bad_architectures_and_policies_are_refused);
    tcase_add_test(tc, distillation_brings_sub_policies_to_the_full_one);
    tcase_add_test(tc, resumed_elastic_run_continues_exactly);
    tcase_add_test(tc, async_elastic_run_distils);
    tcase_add_test(tc, nonfinite_heads_are_refused);
    tcase_add_test(tc, elastic_widths_over_a_plain_run_are_named);
    tcase_add_test(tc, latency_model_predicts_acting);
    tcase_add_test(tc, latency_model_text_round_trips);
    tcase_add_test(tc, latency_model_text_refuses_corruption);
    tcase_add_test(tc, latency_model_from_probe_times);
    tcase_add_test(tc, latency_model_finds_the_fastest);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
