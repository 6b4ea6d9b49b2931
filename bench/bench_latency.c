/* bench_latency: the elastic latency model (lib/rl/latency.c, doc/elastic.md) predicted
 * against measured acting, for every sub-policy, over rounds that each fit the model
 * and then measure.
 *
 *   bench_latency [--hidden 64,64] [--widths 8,16,32] [--batches 1,256,1024]
 *                 [--rounds 7] [--deterministic]
 *
 * A policy of --hidden units on CartPole's spaces (4 inputs, 2 discrete actions),
 * elastic over --widths, one thread. Each round fits the model (frl_latency_fit at the
 * batch) and then times every sub-policy's act call (frl_latency_act_us, 101 samples).
 * Per batch and architecture: the medians over the rounds of the predicted and the
 * measured microseconds, the median of the rounds' errors (predicted - measured, in %
 * of measured, judged against 15% or 1 us; the test suite does not time it) and the worst round's.
 * Per batch: the worst median error, the architectures within the test's bound, the
 * worst single round (one fit against one later measurement, as `fastrl cut` does),
 * and the fit's median time. Printed, never asserted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"
#include "bench_time.h"
#include "rl/latency.h"

enum { MAX_ROUNDS = 31, MAX_ARCHS = 256, MAX_BATCHES = 8 };

typedef struct opts {
    const char *hidden, *widths;
    int batches[MAX_BATCHES];
    int32_t nbatches, rounds, deterministic;
} opts;

typedef struct setup {
    frl_runtime *rt;
    frl_config *cfg;
    frl_space *obs, *act;
    frl_policy *p;
    frl_elastic e;
    float *heads;
    frl_policy *cut[MAX_ARCHS];
    int64_t count;
} setup;

static void parse(opts *o, int argc, char **argv)
{
    *o = (opts){"64,64", "8,16,32", {1, 256, 1024}, 3, 7, 0};
    bench_args_init(argc, argv, "bench_latency",
                    "usage: bench_latency [--hidden 64,64] [--widths 8,16,32] "
                    "[--batches 1,256,1024]\n"
                    "                     [--rounds 7 (odd, 3..31)] [--deterministic]\n");
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "--deterministic")) {
            o->deterministic = 1;
            continue;
        }
        const char *v = bench_value(argc, argv, i++);
        if (!strcmp(k, "--hidden")) {
            o->hidden = v;
        } else if (!strcmp(k, "--widths")) {
            o->widths = v;
        } else if (!strcmp(k, "--batches")) {
            o->nbatches = bench_list(k, v, o->batches, MAX_BATCHES, 1, 1 << 20);
        } else if (!strcmp(k, "--rounds")) {
            o->rounds = (int32_t)bench_int(k, v, 3, MAX_ROUNDS);
            if (o->rounds % 2 == 0) /* the median is then one round's, as reported */
                bench_refuse("--rounds: an odd number");
        } else {
            bench_unknown(k);
        }
    }
}

/* The config, runtime, spaces and policy, through the public API (its message on
 * failure). */
static frl_status make_policy(setup *s, const opts *o, char *err)
{
    char text[256];
    int64_t four = 4;
    snprintf(text, sizeof text, "runtime.threads=1 policy.hidden=%s elastic.widths=%s",
             o->hidden, o->widths);
    frl_status st = frl_config_create(&s->cfg, NULL);
    if (st == FRL_OK)
        st = frl_config_parse(s->cfg, text);
    if (st == FRL_OK)
        st = frl_runtime_create(&s->rt, s->cfg, NULL, NULL);
    if (st == FRL_OK)
        st = frl_space_create_box(&s->obs, NULL, 1, &four, NULL, NULL);
    if (st == FRL_OK)
        st = frl_space_create_discrete(&s->act, NULL, 2);
    if (st == FRL_OK)
        st = frl_policy_create_seeded(&s->p, s->rt, s->cfg, s->obs, s->act, 7, "bench");
    if (st != FRL_OK)
        snprintf(err, FRL_ERRMSG_SIZE, "%s", frl_last_error());
    return st;
}

/* The policy, its elastic view with heads of a trained run's scale, and every cut. */
static frl_status make(setup *s, const opts *o, char *err)
{
    frl_status st = make_policy(s, o, err);
    if (st == FRL_OK)
        st = frl_elastic_init(&s->e, s->p, s->cfg, err);
    if (st != FRL_OK)
        return st;
    int64_t count = frl_elastic_count(&s->e);
    if (count > MAX_ARCHS)
        return frl_fail(err, FRL_ERR_RANGE, "%lld architectures (at most %d)",
                        (long long)count, MAX_ARCHS);
    s->heads = calloc(s->e.num_heads + 1, sizeof(float));
    if (!s->heads)
        return frl_fail(err, FRL_ERR_NOMEM, "out of memory for the heads");
    for (size_t i = 0; i < s->e.num_heads; i++)
        s->heads[i] = (float)sin(0.37 * (double)i) * 0.5f;
    for (; s->count < count; s->count++) { /* count: the cuts made, for destroy */
        frl_elastic_arch a;
        frl_elastic_nth(&s->e, s->count, &a);
        st = frl_elastic_cut(&s->e, s->p, s->heads, &a, &s->cut[s->count], err);
        if (st != FRL_OK)
            return st;
    }
    return FRL_OK;
}

static void destroy(setup *s)
{
    for (int64_t k = 0; k < s->count; k++)
        frl_policy_destroy(s->cut[k]);
    free(s->heads);
    frl_policy_destroy(s->p);
    frl_space_destroy(s->obs);
    frl_space_destroy(s->act);
    frl_runtime_destroy(s->rt);
    frl_config_destroy(s->cfg);
}

typedef struct rounds {
    double pred[MAX_ARCHS][MAX_ROUNDS], meas[MAX_ARCHS][MAX_ROUNDS], fit_s[MAX_ROUNDS];
} rounds;

static frl_status measure(setup *s, const opts *o, int32_t batch, rounds *r, char *err)
{
    for (int32_t i = 0; i < o->rounds; i++) {
        frl_latency_model m;
        double t0 = bench_now();
        frl_status st = frl_latency_fit(&m, &s->e, s->p, s->heads, batch, o->deterministic, err);
        if (st != FRL_OK)
            return st;
        r->fit_s[i] = bench_now() - t0;
        for (int64_t k = 0; k < s->count; k++) {
            frl_elastic_arch a;
            frl_elastic_nth(&s->e, k, &a);
            r->pred[k][i] = frl_latency_predict(&m, &s->e, &a);
            r->meas[k][i] = frl_latency_act_us(s->cut[k], batch, o->deterministic, 101, err);
            if (r->pred[k][i] < 0 || r->meas[k][i] < 0) {
                snprintf(err, FRL_ERRMSG_SIZE, "architecture %lld: predicted %g us, measured "
                         "%g us", (long long)k, r->pred[k][i], r->meas[k][i]);
                return FRL_ERR_INTERNAL;
            }
        }
    }
    return FRL_OK;
}

/* One line per architecture, then the batch's summary. */
static void report(const setup *s, const opts *o, int32_t batch, rounds *r)
{
    printf("\nbatch %d, %s, %d rounds\n%-12s %12s %12s %10s %10s\n", (int)batch,
           o->deterministic ? "deterministic" : "sampled", (int)o->rounds, "widths",
           "predicted us", "measured us", "median err", "worst err");
    double worst_median = 0, worst_round = 0;
    int within = 0;
    for (int64_t k = 0; k < s->count; k++) {
        double err[MAX_ROUNDS], diff[MAX_ROUNDS], worst = 0;
        for (int32_t i = 0; i < o->rounds; i++) {
            diff[i] = r->pred[k][i] - r->meas[k][i];
            err[i] = 100.0 * diff[i] / r->meas[k][i];
            worst = fabs(err[i]) > fabs(worst) ? err[i] : worst;
        }
        double e = bench_median(err, o->rounds), d = bench_median(diff, o->rounds);
        double meas = bench_median(r->meas[k], o->rounds);
        within += fabs(d) <= fmax(0.15 * meas, 1.0);
        worst_median = fmax(worst_median, fabs(e));
        worst_round = fmax(worst_round, fabs(worst));
        frl_elastic_arch a;
        char w[64];
        frl_elastic_nth(&s->e, k, &a);
        frl_elastic_arch_text(&a, w, sizeof w);
        printf("%-12s %12.3f %12.3f %+9.1f%% %+9.1f%%\n", w,
               bench_median(r->pred[k], o->rounds), meas, e, worst);
    }
    printf("batch %d: worst median error %.1f%%; %d of %lld within 15%% or 1 us (medians); "
           "worst single round %.1f%%; fit %.3f s (median)\n", (int)batch, worst_median,
           within, (long long)s->count, worst_round, bench_median(r->fit_s, o->rounds));
}

int main(int argc, char **argv)
{
    opts o;
    parse(&o, argc, argv);
    setup s = {0};
    char err[FRL_ERRMSG_SIZE] = "";
    rounds *r = malloc(sizeof *r);
    frl_status st = r ? make(&s, &o, err) : FRL_ERR_NOMEM;
    if (st == FRL_OK)
        printf("bench_latency: policy.hidden=%s elastic.widths=%s, kernels %s, 1 thread, "
               "%lld architectures\n", o.hidden, o.widths, s.p->k->name, (long long)s.count);
    for (int32_t b = 0; b < o.nbatches && st == FRL_OK; b++)
        if ((st = measure(&s, &o, o.batches[b], r, err)) == FRL_OK)
            report(&s, &o, o.batches[b], r);
    if (st != FRL_OK)
        fprintf(stderr, "bench_latency: %s (%s)\n", err[0] ? err : "failed",
                frl_status_name(st));
    destroy(&s);
    free(r);
    return st == FRL_OK ? 0 : 1;
}
