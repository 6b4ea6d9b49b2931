/* `fastrl bench train [ENV] [--steps N] [--threads T] [--set key=value ...]`: end-to-end
 * training throughput against the FLOP floor measured in the same run.
 *
 * The floor is the time the run's network arithmetic would take at the rate of
 * OpenBLAS sgemm on the dominant layer shape (minibatch rows x 64 x 64), single
 * threaded, times the thread count: fraction = floor time / measured time. FLOPs per
 * env step are counted from the layer shapes: one forward pass to act, then per epoch
 * a forward pass, the weight gradients and the input gradients of every layer but the
 * first (for a recurrent policy, its cores' products too: recurrent_macs). Prints the
 * time per stage and peak RSS. For train.algo=dqn the learner alone is measured against
 * sgemm on its minibatch's shape (report_dqn). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"
#include "openblas_core.h"
#include "nn/kernels.h"
#include "algo/ppo.h"
#include "trainer/trainer.h"

/* MACs of one forward pass, and of the input gradients (all layers but the first). */
static void mlp_macs(const frl_mlp *m, double *fwd, double *in_grad)
{
    for (int32_t l = 0; l < m->layers; l++) {
        double macs = (double)m->width[l] * m->width[l + 1];
        *fwd += macs;
        *in_grad += l > 0 ? macs : 0;
    }
}

/* A recurrent policy's towers (encoder, core) and heads. A core's step is G h (in + h)
 * MACs; its backward computes the weight gradients (as many) and the input gradients
 * of the state (G h h) and, after an encoder, of the core's input (G h in). */
static void recurrent_macs(const frl_policy *p, double *fwd, double *in_grad)
{
    for (int32_t i = 0; i < p->towers; i++) {
        const frl_rnn *c = &p->core[i];
        double gh = (double)c->gates * c->h;
        if (p->enc[i].layers)
            mlp_macs(&p->enc[i], fwd, in_grad);
        *fwd += gh * (c->in + c->h);
        *in_grad += gh * c->h + (p->enc[i].layers ? gh * c->in : 0);
    }
    mlp_macs(&p->actor, fwd, in_grad);
    mlp_macs(&p->critic, fwd, in_grad);
    *in_grad += (double)p->actor.width[0] * (p->actor.width[1] + p->critic.width[1]);
}

/* A conv encoder's layers (lib/nn/cnn.c): each a GEMM of out_h * out_w rows by patch by
 * out_c. The first layer's input is pixels, so no input gradient is made for it. */
static void conv_macs(const frl_cnn *n, double *fwd, double *in_grad)
{
    for (int32_t i = 0; i < n->layers; i++) {
        const frl_conv2d *c = &n->conv[i];
        double macs = (double)c->out_h * c->out_w * c->out_c * c->patch;
        *fwd += macs;
        *in_grad += i ? macs : 0;
    }
}

/* epochs: the passes the learner made over each rollout (A2C's one, whatever
 * train.epochs says). */
static double flops_per_step(const frl_trainer *t, double epochs)
{
    const frl_policy *p = t->policy;
    double fwd = 0, in_grad = 0;
    if (p->towers) {
        recurrent_macs(p, &fwd, &in_grad);
        return 2.0 * (fwd + epochs * (2 * fwd + in_grad));
    }
    conv_macs(&p->cnn, &fwd, &in_grad);
    if (p->shared)
        mlp_macs(&p->trunk, &fwd, &in_grad);
    mlp_macs(&p->actor, &fwd, &in_grad);
    mlp_macs(&p->critic, &fwd, &in_grad);
    if (p->shared)
        in_grad += (double)p->actor.width[0] * (p->actor.width[1] + p->critic.width[1]);
    return 2.0 * (fwd + epochs * (2 * fwd + in_grad));
}

/* Single-threaded GFLOP/s of y[m x h] = x[m x h] . w[h x h], sgemm or our kernel. */
static double gemm_rate(int32_t m, int32_t h, int ours)
{
    size_t hh = (size_t)h;
    float *x = calloc((size_t)m * hh, sizeof(float)), *w = calloc(hh * hh, sizeof(float));
    float *y = calloc((size_t)m * hh, sizeof(float)), *b = calloc(hh, sizeof(float));
    const frl_kernels *k = frl_kernels_get();
    double best = 0;
    for (int rep = 0; x && w && y && b && rep < 5; rep++) {
        int iters = 0;
        double t0 = cli_now(), t1 = t0;
        while (t1 - t0 < 0.05) {
            if (ours)
                k->linear_fwd(m, h, h, x, w, NULL, y, FRL_NN_LINEAR);
            else
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, h, h, 1.0f, x, h,
                            w, h, 0.0f, y, h);
            iters++;
            t1 = cli_now();
        }
        double rate = 2.0 * m * (double)hh * (double)hh * iters / (t1 - t0) / 1e9;
        best = rate > best ? rate : best;
    }
    free(x);
    free(w);
    free(y);
    free(b);
    return best;
}

typedef struct train_bench {
    const char *env;
    int64_t steps;
} train_bench;

/* Option a with its value v (NULL: none); 0, or 2 after saying why it is refused. */
static int parse_option(const char *a, const char *v, train_bench *o, frl_config *cfg)
{
    frl_status st = FRL_OK;
    if (!strcmp(a, "--steps") && v)
        return cli_parse_int("bench train", a, v, 1, INT64_MAX, &o->steps);
    if (!strcmp(a, "--threads") && v)
        st = frl_config_set(cfg, "runtime.threads", v);
    else if (!strcmp(a, "--set") && v)
        return cli_set("bench train", cfg, v);
    else {
        fprintf(stderr, "fastrl bench train: unknown or incomplete option '%s'\n", a);
        return 2;
    }
    return st == FRL_OK ? 0 : cli_bad_option(a, st);
}

/* 0, 2 for a usage error (said why), or -1 for --help. */
static int parse(int argc, char **argv, train_bench *o, frl_config *cfg)
{
    o->env = NULL;
    o->steps = 1000000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return -1;
        if (a[0] != '-' && o->env) {
            /* a second name replaced the first without a word */
            fprintf(stderr, "fastrl bench train: one environment, not both %s and %s\n",
                    o->env, a);
            return 2;
        }
        if (a[0] != '-') {
            o->env = a;
            continue;
        }
        int rc = parse_option(a, v, o, cfg);
        if (rc != 0)
            return rc;
        i++;
    }
    if (!o->env)
        o->env = "CartPole-v1";
    return 0;
}

/* Sum the stage times over all updates through the callback, and the learner's passes
 * (epochs_done: PPO's epochs, fewer when train.target_kl stops one; DQN's minibatches). */
typedef struct stage_sums {
    double env, inference, backward, optimizer, replay;
    int64_t minibatches;
    int64_t updates;
} stage_sums;

static int add_stages(void *user, const frl_metrics *m)
{
    stage_sums *s = user;
    s->env += m->time_env;
    s->inference += m->time_inference;
    s->backward += m->time_backward;
    s->optimizer += m->time_optimizer;
    s->replay += m->time_replay;
    s->minibatches += m->epochs_done;
    s->updates++;
    return 0;
}

/* The epochs the learner ran per update, as it reported them: train.epochs is PPO's and
 * IMPALA's, while A2C always makes one (counted with 4, its floor was 1.5 of its run).
 * Before any update, the learner's own setting. */
static double epochs_run(const frl_trainer *t, const stage_sums *s)
{
    if (s->updates > 0)
        return (double)s->minibatches / (double)s->updates;
    return (double)((const frl_ppo *)t->learner.impl)->s.epochs;
}

static int report(frl_trainer *t, double seconds, const stage_sums *s)
{
    const frl_metrics *m = frl_trainer_metrics(t);
    int32_t threads = frl_runtime_threads(t->rt);
    int32_t rows = ((const frl_ppo *)t->learner.impl)->M;
    double sgemm = gemm_rate(rows, 64, 0), ours = gemm_rate(rows, 64, 1);
    double epochs = epochs_run(t, s);
    double fps = flops_per_step(t, epochs), total = fps * (double)m->env_steps;
    double floor_s = total / (sgemm * 1e9 * threads);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("env: %s  envs: %d  rollout: %d  epochs: %.4g  minibatch rows: %d  threads: %d\n",
           t->env_name, (int)t->B, (int)t->T, epochs, (int)rows, (int)threads);
    printf("env steps: %lld in %.3f s (trainer create to last update)\n", (long long)m->env_steps,
           seconds);
    printf("network FLOPs per env step: %.1f K; total %.2f GFLOP; achieved %.1f GFLOP/s\n",
           fps / 1e3, total / 1e9, total / seconds / 1e9);
    printf("same-run single-thread rate, %d x 64 x 64: OpenBLAS sgemm (core %s) %.1f GFLOP/s, "
           "fastrl %s kernel %.1f GFLOP/s\n", (int)rows, frl_openblas_core(), sgemm,
           frl_kernels_get()->name, ours);
    printf("FLOP floor at sgemm rate x %d threads: %.3f s; fraction of floor reached: %.2f\n",
           (int)threads, floor_s, floor_s / seconds);
    printf("last update's stages (s): env %.4f inference %.4f backward %.4f optimizer %.4f\n",
           m->time_env, m->time_inference, m->time_backward, m->time_optimizer);
    printf("mean return (last 100 episodes): %.2f\n", m->mean_return);
    printf("peak RSS: %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
    printf("env_steps_per_second: %.1f\n", (double)m->env_steps / seconds);
    return 0;
}

/* DQN: FLOPs of one minibatch of `rows`: the online network's forward, weight and
 * input gradients, and forward passes of x' through the target network (and the online
 * one for double Q). Its floor is sgemm on [rows x h] . [h x h], h the widest hidden
 * layer, the shape most of the arithmetic has. */
static int report_dqn(frl_trainer *t, double seconds, const stage_sums *s)
{
    const frl_policy *p = t->policy;
    double fwd = 0, in_grad = 0;
    conv_macs(&p->cnn, &fwd, &in_grad);
    if (p->shared)
        mlp_macs(&p->trunk, &fwd, &in_grad);
    mlp_macs(&p->actor, &fwd, &in_grad);
    mlp_macs(&p->critic, &fwd, &in_grad);
    int32_t rows = (int32_t)frl_cfg_int(t->cfg, FRL_KEY_TRAIN_BATCH_SIZE);
    int32_t h = p->shared ? p->trunk.width[1] : p->actor.width[p->actor.layers > 1 ? 1 : 0];
    double next_passes = 1 + frl_cfg_bool(t->cfg, FRL_KEY_TRAIN_DOUBLE_Q);
    double per_batch = 2.0 * rows * (2 * fwd + in_grad + next_passes * fwd);
    double learn_flops = per_batch * (double)s->minibatches;
    double learn_s = s->backward + s->optimizer;
    double sgemm = gemm_rate(rows, h, 0), ours = gemm_rate(rows, h, 1);
    const frl_metrics *m = frl_trainer_metrics(t);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("env: %s  envs: %d  train_freq: %d  minibatch rows: %d  minibatches: %lld  "
           "hidden width: %d\n", t->env_name, (int)t->B, (int)t->T, (int)rows,
           (long long)s->minibatches, (int)h);
    printf("env steps: %lld in %.3f s (trainer create to last update)\n",
           (long long)m->env_steps, seconds);
    printf("learner: %.2f GFLOP in %.3f s (forward, backward and Adam): %.1f GFLOP/s\n",
           learn_flops / 1e9, learn_s, learn_s > 0 ? learn_flops / learn_s / 1e9 : 0);
    printf("same-run single-thread rate, %d x %d x %d: OpenBLAS sgemm (core %s) %.1f GFLOP/s, "
           "fastrl %s kernel %.1f GFLOP/s\n", (int)rows, (int)h, (int)h, frl_openblas_core(), sgemm,
           frl_kernels_get()->name, ours);
    printf("learner's fraction of the sgemm floor: %.2f\n",
           learn_s > 0 ? learn_flops / learn_s / 1e9 / sgemm : 0);
    printf("all updates' stages (s): env %.3f inference %.3f replay %.3f backward %.3f "
           "optimizer %.3f other %.3f\n", s->env, s->inference, s->replay, s->backward,
           s->optimizer, seconds - s->env - s->inference - s->replay - s->backward - s->optimizer);
    printf("peak RSS: %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
    printf("env_steps_per_second: %.1f\n", (double)m->env_steps / seconds);
    return 0;
}

/* The learners whose arithmetic a report counts: PPO's (report reads its minibatch
 * rows) and DQN's (report_dqn). Any other is refused before it trains: report read a
 * PPO learner out of its memory (an ES or GA population's, R2D2's). */
static int measurable(const frl_trainer *t)
{
    static const char *const names[] = {"ppo", "impala", "a2c", "dqn"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(t->learner.ops->name, names[i]))
            return 1;
    fprintf(stderr, "fastrl bench train: train.algo=%s has no FLOP floor here (ppo, impala, "
                    "a2c and dqn have one); fastrl train reports its env steps per second\n",
            t->learner.ops->name);
    return 0;
}

int cli_bench_train(int argc, char **argv)
{
    frl_config *cfg;
    train_bench o;
    if (frl_config_create(&cfg, NULL) != FRL_OK)
        return cli_fail("config", FRL_ERR_NOMEM);
    int rc = parse(argc, argv, &o, cfg);
    if (rc != 0) {
        fprintf(rc < 0 ? stdout : stderr, "usage: fastrl bench train [ENV] [--steps N] "
                "[--threads T] [--set key=value ...]\n");
        frl_config_destroy(cfg);
        return rc < 0 ? 0 : 2;
    }
    frl_runtime *rt = NULL;
    frl_trainer *t = NULL;
    frl_status st = frl_runtime_create(&rt, cfg, NULL, NULL);
    double t0 = cli_now();
    if (st == FRL_OK)
        st = frl_trainer_create(&t, rt, o.env, cfg);
    stage_sums sums = {0};
    if (st == FRL_OK && !measurable(t)) {
        frl_trainer_destroy(t);
        frl_runtime_destroy(rt);
        frl_config_destroy(cfg);
        return 2;
    }
    if (st == FRL_OK) {
        frl_trainer_set_callback(t, add_stages, &sums);
        st = frl_trainer_train(t, o.steps);
    }
    double seconds = cli_now() - t0;
    int dqn = st == FRL_OK && !strcmp(t->learner.ops->name, "dqn");
    if (dqn) {
        rc = report_dqn(t, seconds, &sums);
        frl_trainer_destroy(t);
        frl_runtime_destroy(rt);
        frl_config_destroy(cfg);
        return rc;
    }
    rc = st == FRL_OK ? report(t, seconds, &sums) : cli_fail("bench train", st);
    if (rc == 0)
        printf("all updates' stages (s): env %.3f inference %.3f backward %.3f optimizer %.3f "
               "other %.3f\n", sums.env, sums.inference, sums.backward, sums.optimizer,
               seconds - sums.env - sums.inference - sums.backward - sums.optimizer);
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
    frl_config_destroy(cfg);
    return rc;
}
