/* Initial-state distributions of the built-in environments.
 *
 * Our random streams are not NumPy's, so resets cannot match Gymnasium draw
 * for draw; they must match it in distribution. For each environment we draw
 * N resets, one per stream frl_rng_stream(SEED, i), and check every state
 * component against the uniform law Gymnasium uses: the range strictly, and
 * mean, variance, extremes, a 20-bin histogram and pairwise correlations
 * within 5 standard errors (or a tail probability of about 1e-9). */
#include <check.h>

#include "test_util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/registry.h"

#define N_DRAWS 20000
#define SEED 20251
#define Z 5.0
#define BINS 20
#define PI 3.141592653589793

typedef struct component {
    double lo, hi;  /* uniform on [lo, hi); lo == hi means the constant lo */
    int float32;    /* drawn in float64, then cast to float32 (Acrobot) */
} component;

typedef struct init_spec {
    const char *id;
    int n;
    component c[FRL_SIM_MAX_STATE];
} init_spec;

static const init_spec specs[] = {
    {"CartPole-v1", 4, {{-0.05, 0.05, 0}, {-0.05, 0.05, 0}, {-0.05, 0.05, 0}, {-0.05, 0.05, 0}}},
    {"Pendulum-v1", 2, {{-PI, PI, 0}, {-1.0, 1.0, 0}}},
    {"Acrobot-v1", 4, {{-0.1, 0.1, 1}, {-0.1, 0.1, 1}, {-0.1, 0.1, 1}, {-0.1, 0.1, 1}}},
    {"MountainCar-v0", 2, {{-0.6, -0.4, 0}, {0.0, 0.0, 0}}},
    {"MountainCarContinuous-v0", 3, {{-0.6, -0.4, 0}, {0.0, 0.0, 0}, {0.0, 0.0, 0}}},
};
enum { N_SPECS = sizeof(specs) / sizeof(specs[0]) };

/* Draws N_DRAWS resets into states[N_DRAWS][state_dim], checking on the way
 * that the first observation is the one observe() gives for the state. */
static double *draw_resets(const frl_env_class *c)
{
    double *states = malloc(sizeof(double) * N_DRAWS * (size_t)c->state_dim);
    unsigned char *sim = aligned_alloc(64, FRL_SIM_MAX_BYTES);
    ck_assert_ptr_nonnull(states);
    ck_assert_ptr_nonnull(sim);
    for (int i = 0; i < N_DRAWS; i++) {
        frl_rng rng = frl_rng_stream(SEED, (uint64_t)i);
        float obs[FRL_OBS_MAX_DIM], seen[FRL_OBS_MAX_DIM];
        c->reset(sim, &rng, obs);
        ck_assert_msg(rng.counter > 0 || c->state_dim == 0, "%s: reset drew nothing", c->name);
        c->observe(sim, seen);
        ck_assert_mem_eq(obs, seen, sizeof(float) * (size_t)c->obs_dim);
        c->get_state(sim, states + (size_t)i * (size_t)c->state_dim);
    }
    free(sim);
    return states;
}

/* The strict range: [lo, hi) for a float64 draw. A float32 cast can round a
 * draw just below hi up to (float)hi, or lo to (float)lo, so it widens the
 * range to [(float)lo, (float)hi] and every value must be a float32. */
static void check_range(const char *id, int k, const component *cp, const double *x, int stride)
{
    double lo = cp->float32 ? (double)(float)cp->lo : cp->lo;
    double hi = cp->float32 ? (double)(float)cp->hi : cp->hi;
    for (int i = 0; i < N_DRAWS; i++) {
        double v = x[(size_t)i * (size_t)stride];
        if (cp->lo == cp->hi) {
            ck_assert_msg(v == cp->lo, "%s[%d]: draw %d is %.17g, want constant %.17g", id, k, i, v,
                          cp->lo);
            continue;
        }
        int in = cp->float32 ? (v >= lo && v <= hi) : (v >= lo && v < hi);
        ck_assert_msg(in, "%s[%d]: draw %d = %.17g outside its range", id, k, i, v);
        if (cp->float32)
            ck_assert_msg((double)(float)v == v, "%s[%d]: %.17g is not a float32", id, k, v);
    }
}

static void check_moments(const char *id, int k, const component *cp, const double *x, int stride)
{
    double w = cp->hi - cp->lo, mu = 0.5 * (cp->lo + cp->hi);
    double var = w * w / 12.0, mu4 = w * w * w * w / 80.0;
    double sum = 0, sum2 = 0, mn = (double)INFINITY, mx = -(double)INFINITY;
    long bins[BINS] = {0};
    for (int i = 0; i < N_DRAWS; i++) {
        double v = x[(size_t)i * (size_t)stride];
        sum += v;
        mn = fmin(mn, v);
        mx = fmax(mx, v);
        int b = (int)((v - cp->lo) / w * BINS);
        bins[b < 0 ? 0 : (b >= BINS ? BINS - 1 : b)]++;
    }
    double mean = sum / N_DRAWS;
    for (int i = 0; i < N_DRAWS; i++) {
        double d = x[(size_t)i * (size_t)stride] - mean;
        sum2 += d * d;
    }
    double s2 = sum2 / (N_DRAWS - 1);
    double mean_tol = Z * sqrt(var / N_DRAWS);
    double var_tol = Z * sqrt((mu4 - var * var) / N_DRAWS);
    /* P(min > lo + t w) = (1 - t)^N ~ exp(-t N): t = 20 / N gives ~2e-9. */
    double edge = 20.0 * w / N_DRAWS;
    printf("%-25s [%d] mean %+.6f (want %+.6f +- %.1e) var %.6g (want %.6g +- %.1e) "
           "min %+.6f max %+.6f\n",
           id, k, mean, mu, mean_tol, s2, var, var_tol, mn, mx);
    ck_assert_msg(fabs(mean - mu) <= mean_tol, "%s[%d]: mean %.9g, want %.9g", id, k, mean, mu);
    ck_assert_msg(fabs(s2 - var) <= var_tol, "%s[%d]: variance %.9g, want %.9g", id, k, s2, var);
    ck_assert_msg(mn < cp->lo + edge && mx > cp->hi - edge, "%s[%d]: extremes %.9g %.9g", id, k,
                  mn, mx);
    double p = 1.0 / BINS, expect = N_DRAWS * p, sd = sqrt(N_DRAWS * p * (1 - p));
    for (int b = 0; b < BINS; b++)
        ck_assert_msg(fabs((double)bins[b] - expect) <= Z * sd, "%s[%d]: bin %d holds %ld, want %.0f",
                      id, k, b, bins[b], expect);
}

/* Components are drawn independently: sample correlations stay within
 * 5 / sqrt(N) of zero. */
static void check_independence(const init_spec *sp, const double *x)
{
    for (int a = 0; a < sp->n; a++) {
        for (int b = a + 1; b < sp->n; b++) {
            if (sp->c[a].lo == sp->c[a].hi || sp->c[b].lo == sp->c[b].hi)
                continue;
            double ma = 0.5 * (sp->c[a].lo + sp->c[a].hi), mb = 0.5 * (sp->c[b].lo + sp->c[b].hi);
            double sab = 0, saa = 0, sbb = 0;
            for (int i = 0; i < N_DRAWS; i++) {
                double da = x[(size_t)i * (size_t)sp->n + (size_t)a] - ma;
                double db = x[(size_t)i * (size_t)sp->n + (size_t)b] - mb;
                sab += da * db;
                saa += da * da;
                sbb += db * db;
            }
            double r = sab / sqrt(saa * sbb);
            ck_assert_msg(fabs(r) <= Z / sqrt(N_DRAWS), "%s: corr(%d, %d) = %.4f", sp->id, a, b, r);
        }
    }
}

START_TEST(test_initial_distribution)
{
    const init_spec *sp = &specs[_i];
    const frl_env_class *c = frl_env_class_find(sp->id);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(c->state_dim, sp->n);
    double *x = draw_resets(c);
    for (int k = 0; k < sp->n; k++) {
        check_range(sp->id, k, &sp->c[k], x + k, sp->n);
        if (sp->c[k].lo != sp->c[k].hi)
            check_moments(sp->id, k, &sp->c[k], x + k, sp->n);
    }
    check_independence(sp, x);
    fflush(stdout);
    free(x);
}
END_TEST

/* A reset is a pure function of its stream: the same stream gives the same
 * state, another stream or the next draw of the same stream another one. */
START_TEST(test_reset_determinism)
{
    const frl_env_class *c = frl_env_class_find(specs[_i].id);
    ck_assert_ptr_nonnull(c);
    unsigned char *sim = aligned_alloc(64, FRL_SIM_MAX_BYTES);
    ck_assert_ptr_nonnull(sim);
    double s1[FRL_SIM_MAX_STATE], s2[FRL_SIM_MAX_STATE], s3[FRL_SIM_MAX_STATE];
    double s4[FRL_SIM_MAX_STATE];
    float obs[FRL_OBS_MAX_DIM];
    frl_rng a = frl_rng_stream(SEED, 5), b = frl_rng_stream(SEED, 5), d = frl_rng_stream(SEED, 6);
    c->reset(sim, &a, obs);
    c->get_state(sim, s1);
    c->reset(sim, &b, obs);
    c->get_state(sim, s2);
    c->reset(sim, &d, obs);
    c->get_state(sim, s3);
    c->reset(sim, &a, obs);
    c->get_state(sim, s4);
    size_t bytes = sizeof(double) * (size_t)c->state_dim;
    ck_assert_mem_eq(s1, s2, bytes);
    ck_assert(memcmp(s1, s3, bytes) != 0);
    ck_assert(memcmp(s1, s4, bytes) != 0);
    free(sim);
}
END_TEST

static Suite *init_suite(void)
{
    Suite *s = suite_create("env_init");
    TCase *tc = tcase_create("init");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_initial_distribution, 0, N_SPECS);
    tcase_add_loop_test(tc, test_reset_determinism, 0, N_SPECS);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return frl_test_run(init_suite());
}
