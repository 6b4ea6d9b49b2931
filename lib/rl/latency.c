/* The latency model of elastic sub-policies: measuring layers and calls, predicting,
 * and the model's text form. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/cpu.h"
#include "core/c_numeric.h"
#include "rl/latency.h"

/* Timed samples last at least this long, so the clock's resolution does not matter. */
static const double SAMPLE_S = 2e-6;

/* No time a model holds is longer: a call of more than 1,000 s is no model's. */
static const double MAX_US = 1e9;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int32_t n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* Median seconds of one call of fn, sampled reps times, each sample enough calls to
 * last SAMPLE_S. */
typedef void (*timed_fn)(void *user);

static double time_median(timed_fn fn, void *user, int32_t reps, double *samples)
{
    int32_t calls = 1;
    for (;;) { /* calibrate; the first calls also warm the caches */
        double t0 = now_s();
        for (int32_t i = 0; i < calls; i++)
            fn(user);
        if (now_s() - t0 >= SAMPLE_S || calls >= 1 << 20)
            break;
        calls *= 2;
    }
    for (int32_t r = 0; r < reps; r++) {
        double t0 = now_s();
        for (int32_t i = 0; i < calls; i++)
            fn(user);
        samples[r] = (now_s() - t0) / calls;
    }
    return median(samples, reps);
}


/* ---- one act call ---- */

typedef struct act_call {
    frl_policy *p;
    frl_act_args a;
    uint64_t counter;
    frl_status st;
} act_call;

static void call_act(void *user)
{
    act_call *c = user;
    c->a.counter = c->counter++;
    frl_status st = frl_policy_act(c->p, &c->a);
    if (st != FRL_OK)
        c->st = st;
}

double frl_latency_act_us(frl_policy *p, int32_t batch, int32_t deterministic, int32_t reps,
                          char *err)
{
    const frl_allocator *al = &p->rt->alloc;
    size_t ow = (size_t)frl_space_width(p->obs_space), aw = (size_t)frl_space_width(p->act_space);
    float *obs = frl_alloc(al, sizeof(float) * (size_t)batch * ow, 64);
    float *act = frl_alloc(al, sizeof(float) * (size_t)batch * (aw ? aw : 1), 64);
    double *samples = frl_alloc(al, sizeof(double) * (size_t)reps, 64);
    double us = -1;
    if (!obs || !act || !samples) {
        frl_fail(err, FRL_ERR_NOMEM, "latency: out of memory for a batch of %d", (int)batch);
    } else {
        for (size_t i = 0; i < (size_t)batch * ow; i++)
            obs[i] = (float)((i * 7919u) % 200u) * 0.01f - 1.0f; /* inside every box here */
        act_call c = {.p = p, .st = FRL_OK};
        frl_act_args_init(&c.a);
        c.a.batch = batch;
        c.a.deterministic = deterministic;
        c.a.observations = obs;
        c.a.actions = act;
        c.a.observation_width = (int64_t)ow;
        c.a.action_width = (int64_t)aw;
        /* The lower of two medians, as for layers: a transient slowdown of a shared
         * machine moves one median and rarely both. */
        double s = time_median(call_act, &c, reps, samples);
        double s2 = time_median(call_act, &c, reps, samples);
        s = s2 < s ? s2 : s;
        if (c.st != FRL_OK) {
            char msg[FRL_ERRMSG_SIZE];
            snprintf(msg, sizeof msg, "%s", frl_last_error());
            frl_fail(err, c.st, "latency: acting failed: %s", msg);
        } else {
            us = s * 1e6;
        }
    }
    frl_free(al, obs);
    frl_free(al, act);
    frl_free(al, samples);
    return us;
}

/* ---- one layer ---- */

typedef struct layer_call {
    const frl_kernels *k;
    int32_t batch, in, out;
    frl_nn_act act;
    const float *x, *wt, *b;
    float *y;
} layer_call;

static void call_layer(void *user)
{
    layer_call *c = user;
    c->k->linear_fwd(c->batch, c->out, c->in, c->x, c->wt, c->b, c->y, c->act);
}

static double layer_us(const frl_kernels *k, const frl_allocator *al, int32_t batch, int32_t in,
                       int32_t out, frl_nn_act act, int32_t reps)
{
    size_t nx = (size_t)batch * (size_t)in, nw = (size_t)in * (size_t)out;
    float *buf = frl_alloc(al, sizeof(float) * (nx + nw + (size_t)out + (size_t)batch * out), 64);
    double *samples = frl_alloc(al, sizeof(double) * (size_t)reps, 64);
    double us = -1;
    if (buf && samples) {
        for (size_t i = 0; i < nx + nw + (size_t)out; i++)
            buf[i] = (float)((i * 2654435761u) % 1000u) * 1e-3f - 0.5f;
        layer_call c = {k, batch, in, out, act, buf, buf + nx, buf + nx + nw,
                        buf + nx + nw + out};
        us = time_median(call_layer, &c, reps, samples) * 1e6;
    }
    frl_free(al, buf);
    frl_free(al, samples);
    return us;
}

/* ---- the model ---- */

/* The actor's layers of architecture a: (in, out, activation) each. */
static int32_t actor_layers(const frl_elastic *e, const frl_elastic_arch *a,
                            frl_latency_layer *out)
{
    int32_t in = e->in_w;
    for (int32_t l = 0; l < a->depth; l++) {
        out[l] = (frl_latency_layer){in, a->width[l], (int32_t)e->act, 0};
        in = a->width[l];
    }
    out[a->depth] = (frl_latency_layer){in, e->out_w, (int32_t)FRL_NN_LINEAR, 0};
    return a->depth + 1;
}

static int32_t find_layer(const frl_latency_model *m, const frl_latency_layer *l)
{
    for (int32_t i = 0; i < m->n; i++)
        if (m->layer[i].in == l->in && m->layer[i].out == l->out && m->layer[i].act == l->act)
            return i;
    return -1;
}

double frl_latency_predict(const frl_latency_model *m, const frl_elastic *e,
                           const frl_elastic_arch *a)
{
    /* Checked first: actor_layers writes depth + 1 layers into ls. */
    if (a->depth < 1 || a->depth > m->depth || a->depth > e->depth)
        return -1;
    frl_latency_layer ls[FRL_MLP_MAX_LAYERS + 1];
    int32_t n = actor_layers(e, a, ls);
    double us = m->intercept_us[a->depth];
    for (int32_t i = 0; i < n; i++) {
        int32_t at = find_layer(m, &ls[i]);
        if (at < 0)
            return -1;
        us += m->layer[at].us;
    }
    return us;
}

/* A layer shape's time in the model; INFINITY when the model lacks it. */
static double layer_time(const frl_latency_model *m, int32_t in, int32_t out, int32_t act)
{
    frl_latency_layer l = {in, out, act, 0};
    int32_t at = find_layer(m, &l);
    return at < 0 ? INFINITY : m->layer[at].us;
}

/* The widths of depth d predicted fastest, by a shortest path over each layer's width
 * choices (a layer's time depends on its width and the one before it): cost[j] is the
 * fastest way to layer l's choice j, from[l][j] the choice before it. */
static void fastest_of_depth(const frl_latency_model *m, const frl_elastic *e, int32_t d,
                             frl_elastic_arch *a)
{
    int32_t c[FRL_MLP_MAX_LAYERS][FRL_ELASTIC_MAX_CHOICES + 1], n[FRL_MLP_MAX_LAYERS] = {0};
    int32_t from[FRL_MLP_MAX_LAYERS][FRL_ELASTIC_MAX_CHOICES + 1] = {{0}};
    a->depth = d;
    if (d < 1 || d > FRL_MLP_MAX_LAYERS) /* no layer to choose (callers pass 1 to depth) */
        return;
    double cost[FRL_ELASTIC_MAX_CHOICES + 1] = {0}, next[FRL_ELASTIC_MAX_CHOICES + 1] = {0};
    for (int32_t l = 0; l < d; l++)
        n[l] = frl_elastic_layer_choices(e, l, c[l]);
    for (int32_t j = 0; j < n[0]; j++)
        cost[j] = layer_time(m, e->in_w, c[0][j], (int32_t)e->act);
    for (int32_t l = 1; l < d; l++) {
        for (int32_t j = 0; j < n[l]; j++) {
            next[j] = INFINITY;
            from[l][j] = 0;
            for (int32_t k = 0; k < n[l - 1]; k++) {
                double t = cost[k] + layer_time(m, c[l - 1][k], c[l][j], (int32_t)e->act);
                if (t < next[j]) {
                    next[j] = t;
                    from[l][j] = k;
                }
            }
        }
        memcpy(cost, next, sizeof(double) * (size_t)n[l]);
    }
    int32_t j = 0;
    double best = INFINITY;
    for (int32_t k = 0; k < n[d - 1]; k++) {
        double t = cost[k] + layer_time(m, c[d - 1][k], e->out_w, (int32_t)FRL_NN_LINEAR);
        if (t < best) {
            best = t;
            j = k;
        }
    }
    for (int32_t l = d - 1; l >= 0; l--) {
        a->width[l] = c[l][j];
        j = l > 0 ? from[l][j] : 0;
    }
}

double frl_latency_fastest(const frl_latency_model *m, const frl_elastic *e,
                           frl_elastic_arch *best)
{
    frl_elastic_full(e, best);
    best->depth = 1;
    double best_us = -1;
    for (int32_t d = 1; d <= e->depth && d <= m->depth; d++) {
        frl_elastic_arch a;
        frl_elastic_full(e, &a);
        fastest_of_depth(m, e, d, &a);
        /* predicted as every caller predicts, so a budget compares the same sum */
        double us = frl_latency_predict(m, e, &a);
        if (us >= 0 && (best_us < 0 || us < best_us)) {
            best_us = us;
            *best = a;
        }
    }
    return best_us;
}

static frl_status add_layer(frl_latency_model *m, int32_t in, int32_t out, frl_nn_act act,
                            char *err)
{
    frl_latency_layer l = {in, out, (int32_t)act, 1e300};
    if (find_layer(m, &l) >= 0)
        return FRL_OK;
    if (m->n == FRL_LATENCY_MAX_LAYERS)
        return frl_fail(err, FRL_ERR_RANGE, "latency: more than %d layer shapes",
                        FRL_LATENCY_MAX_LAYERS);
    m->layer[m->n++] = l;
    return FRL_OK;
}

/* Every distinct layer shape of every architecture, listed from the choices (not by
 * enumerating architectures, whose number grows as choices^depth): layer l's inputs
 * are the observation or a choice of layer l - 1, its outputs a choice of layer l, and
 * each depth's output layer reads a choice of its last layer. */
static frl_status list_layers(frl_latency_model *m, const frl_elastic *e, char *err)
{
    frl_status st = FRL_OK;
    int32_t prev[FRL_ELASTIC_MAX_CHOICES + 1] = {e->in_w}, np = 1;
    for (int32_t l = 0; l < e->depth && st == FRL_OK; l++) {
        int32_t cur[FRL_ELASTIC_MAX_CHOICES + 1];
        int32_t nc = frl_elastic_layer_choices(e, l, cur);
        for (int32_t i = 0; i < np && st == FRL_OK; i++)
            for (int32_t j = 0; j < nc && st == FRL_OK; j++)
                st = add_layer(m, prev[i], cur[j], e->act, err);
        for (int32_t j = 0; j < nc && st == FRL_OK; j++)
            st = add_layer(m, cur[j], e->out_w, FRL_NN_LINEAR, err);
        memcpy(prev, cur, sizeof cur);
        np = nc;
    }
    return st;
}

/* A layer as acting runs it: act works through a batch in chunks of `chunk` rows, so
 * the layer's time is its full chunks' plus the remainder's. Timed on the whole batch
 * at once instead, a 128-wide layer at batch 1,024 (activations of 512 KiB, outside
 * L2) took longer than within act, and the narrow sub-policies' predictions came out
 * 15-27% slow (bench_latency). */
static double chunked_layer_us(const frl_policy *p, int32_t batch, int32_t chunk,
                               const frl_latency_layer *l)
{
    int32_t full = batch / chunk, rest = batch % chunk;
    double us = 0;
    if (full > 0)
        us = full * layer_us(p->k, &p->rt->alloc, chunk, l->in, l->out, (frl_nn_act)l->act,
                             101);
    if (rest > 0 && us >= 0) {
        double r = layer_us(p->k, &p->rt->alloc, rest, l->in, l->out, (frl_nn_act)l->act, 101);
        us = r < 0 ? r : us + r;
    }
    return us;
}

/* Each layer timed in two rounds, keeping the lower median: the first shapes timed
 * also pay for a cold cache and a clock still ramping up, which a second round does
 * not see. */
static frl_status measure_layers(frl_latency_model *m, const frl_elastic *e,
                                 const frl_policy *p, char *err)
{
    frl_status st = list_layers(m, e, err);
    int32_t chunk = frl_policy_act_chunk_rows(p);
    if (chunk < 1)
        return frl_fail(err, FRL_ERR_INTERNAL, "latency: the policy acts on no rows");
    for (int32_t round = 0; round < 2 && st == FRL_OK; round++)
        for (int32_t i = 0; i < m->n; i++) {
            frl_latency_layer *l = &m->layer[i];
            double us = chunked_layer_us(p, m->batch, chunk, l);
            if (us < 0)
                return frl_fail(err, FRL_ERR_NOMEM, "latency: out of memory");
            l->us = us < l->us ? us : l->us;
        }
    return st;
}

/* Measured act time less the layers' predicted sum, for one architecture. */
static frl_status residual(frl_latency_model *m, const frl_elastic *e, const frl_policy *p,
                           const float *heads, const frl_elastic_arch *a, double *out,
                           char *err)
{
    frl_policy *c;
    frl_status st = frl_elastic_cut(e, p, heads, a, &c, err);
    if (st != FRL_OK)
        return st;
    double us = frl_latency_act_us(c, m->batch, m->deterministic, 101, err);
    frl_policy_destroy(c);
    if (us < 0)
        return FRL_ERR_NOMEM;
    double keep = m->intercept_us[a->depth];
    m->intercept_us[a->depth] = 0;
    *out = us - frl_latency_predict(m, e, a);
    m->intercept_us[a->depth] = keep;
    return FRL_OK;
}

frl_status frl_latency_fit(frl_latency_model *m, const frl_elastic *e, const frl_policy *p,
                           const float *heads, int32_t batch, int32_t deterministic, char *err)
{
    memset(m, 0, sizeof *m);
    m->deterministic = deterministic != 0;
    if (batch < 1 || batch > FRL_LATENCY_MAX_BATCH)
        return frl_fail(err, FRL_ERR_RANGE, "latency: batch %d is not in 1..%d", (int)batch,
                        FRL_LATENCY_MAX_BATCH);
    m->batch = batch;
    snprintf(m->kernels, sizeof m->kernels, "%s", p->k->name);
    frl_cpu_name(m->machine, sizeof m->machine);
    frl_status st = measure_layers(m, e, p, err);
    /* Each depth's intercept: the median residual of its narrowest, a middle and its
     * widest architecture (the enumeration runs depth by depth). */
    m->depth = e->depth;
    int64_t first = 0;
    for (int32_t d = 1; d <= e->depth && st == FRL_OK; d++) {
        int64_t n = frl_elastic_count_depth(e, d);
        double r[3];
        for (int32_t i = 0; i < 3 && st == FRL_OK; i++) {
            frl_elastic_arch a;
            frl_elastic_nth(e, first + (n - 1) * i / 2, &a);
            st = residual(m, e, p, heads, &a, &r[i], err);
        }
        /* A call cannot cost less than its layers: a negative median comes from a
         * shared machine's speed changing between the two measurements (seen: -22 us
         * at batch 1,024 on a VM), and would make predictions negative, which callers
         * read as a model lacking a layer shape, and the model's text unloadable. */
        if (st == FRL_OK)
            m->intercept_us[d] = fmax(median(r, 3), 0.0);
        first += n;
    }
    return st;
}

/* ---- a model from another target's probe times ---- */

/* Least squares over the features in mask (bit j: feature j), the others 0: the
 * normal equations of those features solved by Gaussian elimination with partial
 * pivoting. 0 if they are singular. */
static int solve_masked(double ata[3][3], double atb[3], unsigned mask,
                        double x[3])
{
    int idx[3], k = 0;
    for (int j = 0; j < 3; j++)
        if (mask & (1u << j))
            idx[k++] = j;
    double a[3][4];
    for (int r = 0; r < k; r++) {
        for (int c = 0; c < k; c++)
            a[r][c] = ata[idx[r]][idx[c]];
        a[r][k] = atb[idx[r]];
    }
    for (int c = 0; c < k; c++) {
        int piv = c;
        for (int r = c + 1; r < k; r++)
            piv = fabs(a[r][c]) > fabs(a[piv][c]) ? r : piv;
        if (fabs(a[piv][c]) < 1e-12 * (1 + fabs(ata[0][0])))
            return 0;
        for (int j = 0; j <= k; j++) {
            double t = a[c][j];
            a[c][j] = a[piv][j];
            a[piv][j] = t;
        }
        for (int r = 0; r < k; r++)
            if (r != c) {
                double f = a[r][c] / a[c][c];
                for (int j = 0; j <= k; j++)
                    a[r][j] -= f * a[c][j];
            }
    }
    x[0] = x[1] = x[2] = 0;
    for (int r = 0; r < k; r++)
        x[idx[r]] = a[r][k] / a[r][r];
    return 1;
}

/* Non-negative least squares over three features by trying every subset of them (a
 * time cannot have a negative part): the feasible fit of the smallest squared error. */
static int fit_nonnegative(double (*f)[3], const double *y, int32_t n, double best[3])
{
    double ata[3][3] = {{0}}, atb[3] = {0}, best_err = INFINITY;
    for (int32_t i = 0; i < n; i++)
        for (int r = 0; r < 3; r++) {
            atb[r] += f[i][r] * y[i];
            for (int c = 0; c < 3; c++)
                ata[r][c] += f[i][r] * f[i][c];
        }
    for (unsigned mask = 1; mask < 8; mask++) {
        double x[3];
        if (!solve_masked(ata, atb, mask, x) || x[0] < 0 || x[1] < 0 || x[2] < 0)
            continue;
        double err = 0;
        for (int32_t i = 0; i < n; i++) {
            double d = y[i] - (x[0] * f[i][0] + x[1] * f[i][1] + x[2] * f[i][2]);
            err += d * d;
        }
        if (err < best_err) {
            best_err = err;
            memcpy(best, x, sizeof x);
        }
    }
    return best_err < INFINITY;
}

/* 1 when the n rows of features span all three: each column scaled to at most 1, the
 * Gram matrix's determinant over the product of its diagonal (Hadamard's ratio, 1 for
 * orthogonal columns, 0 for dependent ones) is clear of rounding. Probes of one depth
 * only leave the layers' term to chance: the fit drops it, and deeper sub-policies are
 * predicted faster than they run, on a target where nothing measures them. */
static int features_independent(double (*f)[3], int32_t n)
{
    double scale[3] = {0, 0, 0}, g[3][3] = {{0}};
    for (int32_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++)
            scale[c] = fmax(scale[c], fabs(f[i][c]));
    for (int c = 0; c < 3; c++)
        if (!(scale[c] > 0))
            return 0;
    for (int32_t i = 0; i < n; i++)
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++)
                g[r][c] += f[i][r] / scale[r] * (f[i][c] / scale[c]);
    double det = g[0][0] * (g[1][1] * g[2][2] - g[1][2] * g[2][1]) -
                 g[0][1] * (g[1][0] * g[2][2] - g[1][2] * g[2][0]) +
                 g[0][2] * (g[1][0] * g[2][1] - g[1][1] * g[2][0]);
    return det > 1e-9 * g[0][0] * g[1][1] * g[2][2];
}

/* The features of an architecture's actor: 1, its layers, its multiply-adds. */
static void features(const frl_elastic *e, const frl_elastic_arch *a, double f[3])
{
    frl_latency_layer ls[FRL_MLP_MAX_LAYERS + 1];
    int32_t n = actor_layers(e, a, ls);
    f[0] = 1;
    f[1] = n;
    f[2] = 0;
    for (int32_t i = 0; i < n; i++)
        f[2] += (double)ls[i].in * (double)ls[i].out;
}

frl_status frl_latency_fit_probes(frl_latency_model *m, const frl_elastic *e,
                                  const frl_elastic_arch *archs, const double *us, int32_t n,
                                  char *err)
{
    memset(m, 0, sizeof *m);
    for (int32_t i = 0; i < n; i++) {
        frl_status st = frl_elastic_check(e, &archs[i], err);
        if (st != FRL_OK)
            return st;
        if (!isfinite(us[i]) || !(us[i] > 0) || us[i] > MAX_US)
            return frl_fail(err, FRL_ERR_RANGE, "latency probes: time %d is %g us, not a "
                            "time (above 0, at most 1e9 us)", (int)i, us[i]);
    }
    double (*f)[3] = n > 0 ? malloc(sizeof(double[3]) * (size_t)n) : NULL, x[3] = {0, 0, 0};
    if (n > 0 && !f)
        return frl_fail(err, FRL_ERR_NOMEM, "latency probes: out of memory for %d times",
                        (int)n);
    for (int32_t i = 0; f && i < n; i++)
        features(e, &archs[i], f[i]);
    int spans = n >= 3 && f && features_independent(f, n);
    int fitted = spans && fit_nonnegative(f, us, n, x);
    free(f);
    if (!fitted)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                        "latency probes: %d times do not fit a model: give at least 3 "
                        "architectures of different depths and sizes%s", (int)n,
                        n >= 3 && !spans ? " (these do not tell a layer's cost from a "
                        "call's and the multiply-adds': add one of another depth, or of "
                        "another size at a depth given twice)" : "");
    m->batch = 1;
    m->deterministic = 1;
    snprintf(m->kernels, sizeof m->kernels, "probe");
    m->depth = e->depth;
    for (int32_t d = 1; d <= e->depth; d++)
        m->intercept_us[d] = x[0];
    frl_status st = list_layers(m, e, err);
    for (int32_t i = 0; i < m->n && st == FRL_OK; i++)
        m->layer[i].us = x[1] + x[2] * (double)m->layer[i].in * (double)m->layer[i].out;
    return st;
}

int frl_latency_to_text(const frl_latency_model *m, char *buf, size_t size)
{
    locale_t previous = frl_c_numeric_begin(); /* "0.5", whatever the host's locale */
    size_t at = (size_t)snprintf(buf, size, "fastrl-latency-model 1\nbatch %d\n"
                                 "deterministic %d\nkernels %s\n", (int)m->batch,
                                 (int)m->deterministic, m->kernels);
    if (m->machine[0] && at < size)
        at += (size_t)snprintf(buf + at, size - at, "machine %s\n", m->machine);
    for (int32_t d = 1; d <= m->depth && at < size; d++)
        at += (size_t)snprintf(buf + at, size - at, "intercept_us %d %.6f\n", (int)d,
                               m->intercept_us[d]);
    for (int32_t i = 0; i < m->n && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "layer %d %d %d %.6f\n", (int)m->layer[i].in,
                               (int)m->layer[i].out, (int)m->layer[i].act, m->layer[i].us);
    frl_c_numeric_end(previous);
    return at < size ? 0 : -1;
}

/* Fields of a line: each after blanks, the line then at its end (a carriage return
 * allowed). Anything after the last field, a number out of range or not finite, is a
 * corrupted or truncated file ("batch 25" for "batch 256" is caught by the newline
 * every line must end in, see parse_lines). */
static const char *skip_blanks(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

static int read_int(const char **s, long lo, long hi, int32_t *out)
{
    const char *at = skip_blanks(*s);
    int digit = (at[0] >= '0' && at[0] <= '9') ||
                (at[0] == '-' && at[1] >= '0' && at[1] <= '9');
    if (at == *s || !digit)
        return 0;
    char *end;
    long v = strtol(at, &end, 10); /* saturates on overflow: then out of range */
    if (v < lo || v > hi)
        return 0;
    *out = (int32_t)v;
    *s = end;
    return 1;
}

/* A time read (a model's, a probe's): finite, 0 to MAX_US. */
static int read_us(const char **s, double *out)
{
    const char *at = skip_blanks(*s);
    if (at == *s)
        return 0;
    char *end;
    double v = strtod(at, &end);
    if (end == at || !isfinite(v) || !(v >= 0) || v > MAX_US)
        return 0;
    *out = v;
    *s = end;
    return 1;
}

static int at_end(const char *s)
{
    s = skip_blanks(s);
    return *s == '\0' || (*s == '\r' && s[1] == '\0');
}

/* The line's rest after keyword kw (and a blank), or NULL for a line of another key. */
static const char *after_key(const char *line, const char *kw)
{
    size_t n = strlen(kw);
    return strncmp(line, kw, n) == 0 && (line[n] == ' ' || line[n] == '\t') ? line + n : NULL;
}

/* A word of up to size - 1 characters, the line ending after it. */
static int read_word(const char *s, char *out, size_t size)
{
    s = skip_blanks(s);
    size_t n = strcspn(s, " \t\r");
    if (n == 0 || n >= size || !at_end(s + n))
        return 0;
    memcpy(out, s, n);
    out[n] = '\0';
    return 1;
}

/* The rest of the line, blanks and a carriage return trimmed (a CPU's name has spaces). */
static int read_rest(const char *s, char *out, size_t size)
{
    s = skip_blanks(s);
    size_t n = strcspn(s, "\r");
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n == 0 || n >= size)
        return 0;
    memcpy(out, s, n);
    out[n] = '\0';
    return 1;
}

/* Bits of the keys read once: a key given twice (two models run together) is refused. */
enum { SEEN_VERSION = 1, SEEN_BATCH = 2, SEEN_DET = 4, SEEN_KERNELS = 8, SEEN_MACHINE = 16 };

static int once(uint32_t *seen, uint32_t bit)
{
    if (*seen & bit)
        return 0;
    *seen |= bit;
    return 1;
}

static int parse_intercept(frl_latency_model *m, const char *s, uint32_t *depths)
{
    int32_t d;
    double us;
    if (!read_int(&s, 1, FRL_MLP_MAX_LAYERS - 1, &d) || !read_us(&s, &us) || !at_end(s) ||
        (*depths & (1u << d)))
        return 0;
    m->intercept_us[d] = us;
    m->depth = d > m->depth ? d : m->depth;
    *depths |= 1u << d;
    return 1;
}

static int parse_layer(frl_latency_model *m, const char *s)
{
    frl_latency_layer l;
    if (!read_int(&s, 1, 1 << 24, &l.in) || !read_int(&s, 1, 1 << 24, &l.out) ||
        !read_int(&s, FRL_NN_LINEAR, FRL_NN_ELU, &l.act) || !read_us(&s, &l.us) ||
        !at_end(s) || m->n == FRL_LATENCY_MAX_LAYERS || find_layer(m, &l) >= 0)
        return 0;
    m->layer[m->n++] = l;
    return 1;
}

/* One line of the text; returns 1 if it was understood. */
static int parse_line(frl_latency_model *m, const char *line, uint32_t *seen, uint32_t *depths)
{
    const char *s;
    int32_t v;
    if ((s = after_key(line, "fastrl-latency-model")))
        return read_int(&s, 1, 1, &v) && at_end(s) && once(seen, SEEN_VERSION);
    if ((s = after_key(line, "batch")))
        return read_int(&s, 1, FRL_LATENCY_MAX_BATCH, &m->batch) && at_end(s) && once(seen, SEEN_BATCH);
    if ((s = after_key(line, "deterministic")))
        return read_int(&s, 0, 1, &m->deterministic) && at_end(s) && once(seen, SEEN_DET);
    if ((s = after_key(line, "kernels")))
        return read_word(s, m->kernels, sizeof m->kernels) && once(seen, SEEN_KERNELS);
    if ((s = after_key(line, "machine")))
        return read_rest(s, m->machine, sizeof m->machine) && once(seen, SEEN_MACHINE);
    if ((s = after_key(line, "intercept_us")))
        return parse_intercept(m, s, depths);
    if ((s = after_key(line, "layer")))
        return parse_layer(m, s);
    return 0;
}

/* Every depth up to the deepest named needs its own intercept line: a missing one would
 * predict that depth's sub-policies as if calling them cost nothing but their layers. */
static frl_status check_intercepts(const frl_latency_model *m, uint32_t seen, char *err)
{
    for (int32_t d = 1; d <= m->depth; d++) {
        if (!(seen & (1u << d)))
            return frl_fail(err, FRL_ERR_FORMAT, "latency model: no intercept_us line for "
                            "depth %d (depths 1 to %d need one each)", (int)d, (int)m->depth);
    }
    return FRL_OK;
}

static frl_status parse_lines(frl_latency_model *m, const char *text, char *err);

/* Read in the C locale, as frl_latency_to_text wrote it. */
frl_status frl_latency_from_text(frl_latency_model *m, const char *text, char *err)
{
    locale_t previous = frl_c_numeric_begin();
    frl_status st = parse_lines(m, text, err);
    frl_c_numeric_end(previous);
    return st;
}

static frl_status parse_lines(frl_latency_model *m, const char *text, char *err)
{
    memset(m, 0, sizeof *m);
    uint32_t seen = 0, depths = 0; /* bit d of depths: depth d's intercept line was read */
    int32_t line_no = 1;
    if (strncmp(text, "fastrl-latency-model ", 21) != 0)
        return frl_fail(err, FRL_ERR_FORMAT, "latency model: not a fastrl latency model (its "
                        "first line must be \"fastrl-latency-model 1\")");
    for (const char *s = text; *s; line_no++) {
        const char *end = strchr(s, '\n');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        char line[256];
        if (len >= sizeof line)
            return frl_fail(err, FRL_ERR_FORMAT, "latency model: line %d is too long",
                            (int)line_no);
        memcpy(line, s, len);
        line[len] = '\0';
        if (!end) /* frl_latency_to_text ends every line: the file was cut short */
            return frl_fail(err, FRL_ERR_FORMAT, "latency model: line %d does not end (no "
                            "newline): the file is truncated", (int)line_no);
        if (len > 0 && !parse_line(m, line, &seen, &depths))
            return frl_fail(err, FRL_ERR_FORMAT, "latency model: line %d is not understood "
                            "(a number out of range or not finite, something after the last "
                            "field, or a key or layer given twice): %.60s", (int)line_no, line);
        s = end ? end + 1 : s + len;
    }
    if (m->batch < 1 || m->n == 0)
        return frl_fail(err, FRL_ERR_FORMAT, "latency model: no batch or no layers");
    return check_intercepts(m, depths, err);
}
