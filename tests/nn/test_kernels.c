/* The nn kernel tables, checkasm-style: every table this CPU runs, scalar included,
 * against float64 references of every kernel within the bounds of float32 arithmetic,
 * and every SIMD table against the scalar one, on random inputs over many shapes
 * (tails included); the determinism contract of lib/nn/kernels.h bit for bit,
 * what that contract promises for empty dimensions, and the run-time choice of table
 * (CPU features, FRL_KERNELS). */
#include <check.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nn/kernels.h"
#include "nn/optim.h"
#include "test_util.h"

static const frl_kernels *ref;       /* the scalar table */
static const frl_kernels *tested[8]; /* runnable tables other than scalar */
static int ntested;
static const frl_kernels *tables[9]; /* every runnable table: scalar, then tested */
static int ntables;

/* ---- helpers ------------------------------------------------------------------ */

/* ck_assert records every passing check with the parent process; the element loops run
 * millions, so they test plainly and only report a failure. */
#define EXPECT(cond, ...)                \
    do {                                 \
        if (!(cond))                     \
            ck_abort_msg(__VA_ARGS__);   \
    } while (0)

static uint64_t rng_state;

static void rng_seed(uint64_t s) { rng_state = s; }

/* splitmix64: fixed seed, so every failure reproduces. */
static double rng_unit(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

/* Exact-size buffers, so ASan sees any access past an end. An empty one still gets a
 * float (malloc(0) may give NULL), holding NaN: a kernel that reads it spoils a result,
 * and one that writes it fails empty_kept() in builds without ASan too. */
static float *fbuf(int64_t n)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    ck_assert_ptr_nonnull(p);
    if (n <= 0)
        p[0] = NAN;
    return p;
}

static float *frand(int64_t n)
{
    float *p = fbuf(n);
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)(rng_unit() * 6.0 - 3.0);
    return p;
}

static float *fcopy(const float *src, int64_t n)
{
    float *p = fbuf(n);
    memcpy(p, src, (size_t)n * sizeof(float));
    return p;
}

/* Outputs start as NaN: an element a kernel forgets to write fails the comparison. */
static void poison(float *p, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = NAN;
}

/* An empty array (n == 0) still holds fbuf's NaN: the kernel wrote nothing there. */
static int empty_kept(const float *p, int64_t n) { return n > 0 || isnan(p[0]); }

static const char *act_name(frl_nn_act a)
{
    static const char *const names[] = {"linear", "tanh", "relu", "elu"};
    return names[a];
}

/* |got - want| <= tol; NaN must meet NaN. A NaN got with a number wanted fails. */
static int close_to(float got, float want, double tol)
{
    if (isnan(want))
        return isnan(got);
    return fabs((double)got - (double)want) <= tol;
}

/* ---- float64 references ----------------------------------------------------------
 * Every kernel of lib/nn/kernels.h computed in double from its contract, with the bound
 * its float32 arithmetic allows. Every table, scalar included, is held to them, so a
 * wrong scalar kernel fails here on any CPU, also where no SIMD table runs (the
 * comparisons with scalar below then check nothing). transpose and the activations
 * have their exact references further down. */

static const frl_nn_act acts[] = {FRL_NN_LINEAR, FRL_NN_TANH, FRL_NN_RELU, FRL_NN_ELU};

static double act_ref(double x, frl_nn_act act)
{
    switch (act) {
    case FRL_NN_TANH: return tanh(x);
    case FRL_NN_RELU: return x < 0 ? 0.0 : x;
    case FRL_NN_ELU: return x > 0 ? x : expm1(x);
    default: return x;
    }
}

/* Spacing of floats at |v|: the unit of the activations' error bound. */
static double ulp_at(double v)
{
    const float a = (float)fabs(v);
    return a >= FLT_MIN ? (double)nextafterf(a, INFINITY) - a : 0x1.0p-149;
}

/* Higham's gamma_L = L u / (1 - L u): L roundings of relative size u, each multiplying
 * or dividing, change a value by a factor within 1 +- gamma_L (Accuracy and Stability
 * of Numerical Algorithms, lemma 3.1). */
static double gamma_of(int64_t len, double u)
{
    return (double)len * u / (1.0 - (double)len * u);
}

/* The error bound of a chain of len terms (products or plain values, the start value
 * and the bias included) summed in float32, as every table computes each output
 * (kernels_simd.h, "Determinism"): a term is rounded once as a product (or not at all
 * inside an FMA) and once per addition it passes through, at most len - 1 in any order
 * of the additions, so |float - exact| <= gamma_len * mag, mag = sum |term| (Higham,
 * eq. 3.5: the bound holds for the tables' in-order sums and any reordering). The double
 * reference (products exact) adds its own gamma_len in u = 2^-53. With k = 65 terms
 * this is 3.9e-6 * mag, with 1000 terms 6e-5 * mag: an order of magnitude below a
 * missing, doubled or misplaced term of these random inputs (about mag / len). */
static double chain_tol(int64_t len, double mag)
{
    return (gamma_of(len, 0x1p-24) + gamma_of(len, 0x1p-53)) * mag;
}

/* A reference output: the value, the sum of |terms| of its chain (for the comparison
 * with scalar) and the bound on a table's distance from the value. */
typedef struct refv {
    double val, mag, tol;
} refv;

static refv chain_ref(double val, int64_t len, double mag)
{
    return (refv){val, mag, chain_tol(len, mag)};
}

static refv *rbuf(int64_t n)
{
    refv *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(refv));
    ck_assert_ptr_nonnull(p);
    return p;
}

static int near_ref(float got, refv r) { return fabs((double)got - r.val) <= r.tol; }

/* The pre-activations x . wt (+ b) with their bounds, for linear_fwd and its chains of
 * k (+1 with a bias) terms. */
static void ref_pre(int32_t m, int32_t n, int32_t k, const float *x, const float *wt,
                    const float *b, refv *pre)
{
    for (int32_t i = 0; i < m; i++)
        for (int32_t j = 0; j < n; j++) {
            double s = b ? b[j] : 0.0, mag = b ? fabs(b[j]) : 0.0;
            for (int32_t p = 0; p < k; p++) {
                const double term = (double)x[(int64_t)i * k + p] * wt[(int64_t)p * n + j];
                s += term;
                mag += fabs(term);
            }
            pre[(int64_t)i * n + j] = chain_ref(s, k + (b != NULL), mag);
        }
}

/* y = act(pre): the activations are 1-Lipschitz, so the pre-activation's bound carries
 * through; tanh and elu add their own rounding, within 4 ulps of the result in every
 * table (activations_accurate checks that), at most |y| + the carried bound. */
static refv ref_act(refv pre, frl_nn_act act)
{
    const double y = act_ref(pre.val, act);
    const int own = act == FRL_NN_TANH || act == FRL_NN_ELU ? 4 : 0;
    return (refv){y, pre.mag, pre.tol + own * ulp_at(fabs(y) + pre.tol)};
}

/* dx = dy . wt^T: chains of n products. */
static void ref_bwd_input(int32_t m, int32_t n, int32_t k, const float *dy, const float *wt,
                          refv *dx)
{
    for (int32_t i = 0; i < m; i++)
        for (int32_t p = 0; p < k; p++) {
            double s = 0.0, mag = 0.0;
            for (int32_t j = 0; j < n; j++) {
                const double term = (double)dy[(int64_t)i * n + j] * wt[(int64_t)p * n + j];
                s += term;
                mag += fabs(term);
            }
            dx[(int64_t)i * k + p] = chain_ref(s, n, mag);
        }
}

/* dwt (+)= x^T . dy and db (+)= column sums of dy: chains of m terms, plus the start
 * value when accumulating (dwt0 and db0 are not read otherwise: they may be NaN). */
static void ref_bwd_weight(int32_t m, int32_t n, int32_t k, const float *x, const float *dy,
                           const float *dwt0, const float *db0, int acc, refv *dwt, refv *db)
{
    for (int32_t p = 0; p < k; p++)
        for (int32_t j = 0; j < n; j++) {
            const int64_t e = (int64_t)p * n + j;
            double s = acc ? dwt0[e] : 0.0, mag = fabs(s);
            for (int32_t i = 0; i < m; i++) {
                const double term = (double)x[(int64_t)i * k + p] * dy[(int64_t)i * n + j];
                s += term;
                mag += fabs(term);
            }
            dwt[e] = chain_ref(s, m + acc, mag);
        }
    for (int32_t j = 0; db && j < n; j++) {
        double s = acc ? db0[j] : 0.0, mag = fabs(s);
        for (int32_t i = 0; i < m; i++) {
            s += dy[(int64_t)i * n + j];
            mag += fabs(dy[(int64_t)i * n + j]);
        }
        db[j] = chain_ref(s, m + acc, mag);
    }
}

/* dx = dy * act'(y), as chains over the terms of the product expanded. tanh: dy - dy y y,
 * three roundings (y y, 1 - y y, the product); elu with y <= 0: dy y + dy, two (y + 1,
 * the product); relu, and elu with y > 0, select dy or 0 exactly. */
static refv ref_act_bwd(float y, float dy, frl_nn_act act)
{
    const double g = dy, yv = y;
    if (act == FRL_NN_TANH)
        return chain_ref(g * (1.0 - yv * yv), 3, fabs(g) * (fabs(1.0 - yv * yv) + yv * yv));
    if (act == FRL_NN_ELU && yv <= 0)
        return chain_ref(g * (yv + 1.0), 2, fabs(g) * (fabs(yv) + 1.0));
    if (act == FRL_NN_RELU || act == FRL_NN_ELU)
        return chain_ref(yv > 0 ? g : 0.0, 0, 0.0);
    return chain_ref(g, 0, 0.0);
}

/* ---- every table against the references, the SIMD ones also against scalar -------- */

/* Product tolerance of the comparison with scalar (the brief of the SIMD work):
 * 1e-5 * sum |a b| + 1e-6 (the bias counts as a term). The activations are
 * 1-Lipschitz, so the same bound carries through them, plus a relative 1e-6 (8 float
 * ulps) for the activation's own rounding. */
static double scalar_tol(double mag, float want) { return 1e-5 * mag + 1e-6 + 1e-6 * fabs(want); }

static void expect_fwd_ref(const frl_kernels *t, int32_t m, int32_t n, int32_t k,
                           const float *b, frl_nn_act act, const refv *pre, const float *got)
{
    for (int64_t e = 0; e < (int64_t)m * n; e++) {
        const refv r = ref_act(pre[e], act);
        EXPECT(near_ref(got[e], r),
               "%s fwd m=%d n=%d k=%d %s bias=%d at [%ld][%ld]: %.9g vs float64 %.9g (tol %.3g)",
               t->name, m, n, k, act_name(act), b != NULL, (long)(e / n), (long)(e % n),
               got[e], r.val, r.tol);
    }
}

static void expect_fwd_scalar(const frl_kernels *t, int32_t m, int32_t n, int32_t k,
                              const float *x, const float *wt, const float *b,
                              frl_nn_act act, const refv *pre, const float *got)
{
    float *want = fbuf((int64_t)m * n);
    poison(want, (int64_t)m * n);
    ref->linear_fwd(m, n, k, x, wt, b, want, act);
    for (int64_t e = 0; e < (int64_t)m * n; e++) {
        const double tol = scalar_tol(pre[e].mag, want[e]);
        EXPECT(close_to(got[e], want[e], tol),
               "%s fwd m=%d n=%d k=%d %s bias=%d at [%ld][%ld]: %.9g vs scalar %.9g", t->name,
               m, n, k, act_name(act), b != NULL, (long)(e / n), (long)(e % n), got[e],
               want[e]);
    }
    free(want);
}

static void check_fwd(const frl_kernels *t, int32_t m, int32_t n, int32_t k)
{
    float *x = frand((int64_t)m * k), *wt = frand((int64_t)k * n), *b = frand(n);
    float *got = fbuf((int64_t)m * n);
    refv *pre = rbuf((int64_t)m * n);
    for (int bias = 0; bias < 2; bias++) {
        const float *bp = bias ? b : NULL;
        ref_pre(m, n, k, x, wt, bp, pre);
        for (size_t ai = 0; ai < sizeof acts / sizeof acts[0]; ai++) {
            poison(got, (int64_t)m * n);
            t->linear_fwd(m, n, k, x, wt, bp, got, acts[ai]);
            expect_fwd_ref(t, m, n, k, bp, acts[ai], pre, got);
            if (t != ref)
                expect_fwd_scalar(t, m, n, k, x, wt, bp, acts[ai], pre, got);
        }
    }
    free(x), free(wt), free(b), free(got), free(pre);
}

static void check_bwd_input(const frl_kernels *t, int32_t m, int32_t n, int32_t k)
{
    float *dy = frand((int64_t)m * n), *wt = frand((int64_t)k * n);
    float *want = fbuf((int64_t)m * k), *got = fbuf((int64_t)m * k);
    refv *r = rbuf((int64_t)m * k);
    ref_bwd_input(m, n, k, dy, wt, r);
    poison(want, (int64_t)m * k);
    poison(got, (int64_t)m * k);
    ref->linear_bwd_input(m, n, k, dy, wt, want);
    t->linear_bwd_input(m, n, k, dy, wt, got);
    for (int64_t e = 0; e < (int64_t)m * k; e++) {
        EXPECT(near_ref(got[e], r[e]),
               "%s bwd_input m=%d n=%d k=%d at [%ld][%ld]: %.9g vs float64 %.9g (tol %.3g)",
               t->name, m, n, k, (long)(e / k), (long)(e % k), got[e], r[e].val, r[e].tol);
        EXPECT(close_to(got[e], want[e], scalar_tol(r[e].mag, 0.0f)),
               "%s bwd_input m=%d n=%d k=%d at [%ld][%ld]: %.9g vs scalar %.9g", t->name, m,
               n, k, (long)(e / k), (long)(e % k), got[e], want[e]);
    }
    free(dy), free(wt), free(want), free(got), free(r);
}

/* The dwt and db a table left, against the float64 reference and against scalar. */
typedef struct bwd_weight_out {
    const float *dwt, *db;
} bwd_weight_out;

static void expect_bwd_weight(const frl_kernels *t, int32_t m, int32_t n, int32_t k, int acc,
                              const refv *rw, const refv *rb, bwd_weight_out got,
                              bwd_weight_out want)
{
    for (int64_t e = 0; e < (int64_t)k * n; e++) {
        EXPECT(near_ref(got.dwt[e], rw[e]) &&
                   close_to(got.dwt[e], want.dwt[e], scalar_tol(rw[e].mag, 0.0f)),
               "%s bwd_weight m=%d n=%d k=%d db=%d acc=%d at [%ld][%ld]: %.9g vs float64 "
               "%.9g (tol %.3g), scalar %.9g",
               t->name, m, n, k, got.db != NULL, acc, (long)(e / n), (long)(e % n),
               got.dwt[e], rw[e].val, rw[e].tol, want.dwt[e]);
    }
    for (int32_t j = 0; got.db && j < n; j++)
        EXPECT(near_ref(got.db[j], rb[j]) &&
                   close_to(got.db[j], want.db[j], scalar_tol(rb[j].mag, 0.0f)),
               "%s bwd_weight db m=%d n=%d acc=%d at [%d]: %.9g vs float64 %.9g (tol %.3g), "
               "scalar %.9g",
               t->name, m, n, acc, j, got.db[j], rb[j].val, rb[j].tol, want.db[j]);
}

/* One call of t and of scalar from the same dwt0 and db0 (db0 NULL: no bias gradient);
 * with accumulate == 0 their values do not count (the caller poisons them). */
static void check_bwd_weight_into(const frl_kernels *t, int32_t m, int32_t n, int32_t k,
                                  const float *x, const float *dy, const float *dwt0,
                                  const float *db0, int acc)
{
    float *want = fcopy(dwt0, (int64_t)k * n), *got = fcopy(dwt0, (int64_t)k * n);
    float *dbw = db0 ? fcopy(db0, n) : NULL, *dbg = db0 ? fcopy(db0, n) : NULL;
    refv *rw = rbuf((int64_t)k * n), *rb = rbuf(n);
    ref_bwd_weight(m, n, k, x, dy, dwt0, db0, acc, rw, db0 ? rb : NULL);
    ref->linear_bwd_weight(m, n, k, x, dy, want, dbw, acc);
    t->linear_bwd_weight(m, n, k, x, dy, got, dbg, acc);
    expect_bwd_weight(t, m, n, k, acc, rw, rb, (bwd_weight_out){got, dbg},
                      (bwd_weight_out){want, dbw});
    free(want), free(got), free(dbw), free(dbg), free(rw), free(rb);
}

/* Accumulates into random dwt and db, as training does, then overwrites poisoned ones
 * (accumulate == 0); each with and without the bias gradient (db NULL). */
static void check_bwd_weight(const frl_kernels *t, int32_t m, int32_t n, int32_t k)
{
    float *x = frand((int64_t)m * k), *dy = frand((int64_t)m * n);
    float *dwt0 = frand((int64_t)k * n), *db0 = frand(n);
    for (int acc = 1; acc >= 0; acc--)
        for (int with_db = 0; with_db < 2; with_db++) {
            if (!acc) {
                poison(dwt0, (int64_t)k * n);
                poison(db0, n);
            }
            check_bwd_weight_into(t, m, n, k, x, dy, dwt0, with_db ? db0 : NULL, acc);
        }
    free(x), free(dy), free(dwt0), free(db0);
}

/* Shapes: m, n, k on both sides of the vector widths (8, 16) and register tiles (6 or
 * 8 rows, 2 vectors), the narrow paths (outputs 1..7 wide), the typical layers, and 0
 * (empty_dims_follow_contract says what an empty dimension must give). */
static const int32_t ms[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64};
static const int32_t ns[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64, 65};
static const int32_t ks[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 64, 65};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Bigger shapes that reach the row chunks, the packed-panel splits and the unpacked
 * fallbacks (B too big for the scratch) of the SIMD code. */
static const int32_t big[][3] = {
    {70, 600, 20}, {300, 70, 70}, {13, 5, 1000}, {9, 37, 700}, {5, 1100, 37}, {2048, 64, 64},
};

typedef void (*check_fn)(const frl_kernels *, int32_t, int32_t, int32_t);

/* Every runnable table, scalar first. */
static void check_all_shapes(check_fn fn)
{
    for (int ti = 0; ti < ntables; ti++) {
        rng_seed(12345);
        for (size_t a = 0; a < COUNT(ms); a++)
            for (size_t b = 0; b < COUNT(ns); b++)
                for (size_t c = 0; c < COUNT(ks); c++)
                    fn(tables[ti], ms[a], ns[b], ks[c]);
        for (size_t s = 0; s < COUNT(big); s++)
            fn(tables[ti], big[s][0], big[s][1], big[s][2]);
    }
}

START_TEST(fwd_matches_reference) { check_all_shapes(check_fwd); }
END_TEST

START_TEST(bwd_input_matches_reference) { check_all_shapes(check_bwd_input); }
END_TEST

START_TEST(bwd_weight_matches_reference) { check_all_shapes(check_bwd_weight); }
END_TEST

/* y made an activation output of random pre-activations, exact zeros included. */
static float *act_outputs(int64_t n, frl_nn_act act)
{
    float *y = frand(n);
    for (int64_t i = 0; i < n; i++) {
        const float pre = i % 5 == 0 ? 0.0f : y[i];
        y[i] = act == FRL_NN_TANH   ? tanhf(pre)
               : act == FRL_NN_RELU ? (pre < 0 ? 0.0f : pre)
                                    : (pre > 0 ? pre : expm1f(pre));
    }
    return y;
}

/* dx and dx computed in place (dx == dy) against float64 and against scalar. */
static void check_act_bwd(const frl_kernels *t, frl_nn_act act, int64_t n)
{
    float *y = act_outputs(n, act), *dy = frand(n);
    float *want = fbuf(n), *got = fbuf(n), *inplace = fcopy(dy, n);
    poison(want, n);
    poison(got, n);
    ref->act_bwd(n, y, dy, want, act);
    t->act_bwd(n, y, dy, got, act);
    t->act_bwd(n, y, inplace, inplace, act);
    for (int64_t i = 0; i < n; i++) {
        const refv r = ref_act_bwd(y[i], dy[i], act);
        const double tol = 1e-6 * fabs(want[i]) + 1e-7;
        EXPECT(near_ref(got[i], r) && near_ref(inplace[i], r) &&
                   close_to(got[i], want[i], tol),
               "%s act_bwd %s n=%ld at %ld: %.9g / in place %.9g vs float64 %.9g (tol %.3g), "
               "scalar %.9g",
               t->name, act_name(act), (long)n, (long)i, got[i], inplace[i], r.val, r.tol,
               want[i]);
    }
    free(y), free(dy), free(want), free(got), free(inplace);
}

START_TEST(act_bwd_matches_reference)
{
    const int64_t lens[] = {0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 1000, 1001};
    for (int ti = 0; ti < ntables; ti++)
        for (size_t ai = 1; ai < COUNT(acts); ai++)
            for (size_t li = 0; li < COUNT(lens); li++) {
                rng_seed(99);
                check_act_bwd(tables[ti], acts[ai], lens[li]);
            }
}
END_TEST

/* ---- empty dimensions ------------------------------------------------------------ */

/* What lib/nn/kernels.h promises when m, n or k is 0, exactly, in every table (scalar
 * included; the sweeps above compare the others with it on these shapes too): an empty
 * output is not touched, and an empty sum is +0, the value every chain starts from. */

/* Every element is +0, bit for bit. */
static int all_pos_zero(const float *p, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (p[i] != 0.0f || signbit(p[i]))
            return 0;
    return 1;
}

/* k = 0 gives what one column of zeros in x gives: bias and activation only. */
static void empty_fwd(const frl_kernels *t, int32_t m, int32_t n, int32_t k)
{
    const int64_t mn = (int64_t)m * n;
    float *x = frand((int64_t)m * k), *wt = frand((int64_t)k * n), *b = frand(n);
    float *x0 = fbuf(m), *wt0 = frand(n), *y = fbuf(mn), *y0 = fbuf(mn);
    for (int32_t i = 0; i < m; i++)
        x0[i] = 0.0f;
    for (int bias = 0; bias < 2; bias++)
        for (size_t ai = 0; ai < COUNT(acts); ai++) {
            poison(y, mn);
            for (int64_t i = 0; i < mn; i++) /* not NaN: two unwritten arrays differ */
                y0[i] = -1.0f;
            t->linear_fwd(m, n, k, x, wt, bias ? b : NULL, y, acts[ai]);
            if (k == 0)
                t->linear_fwd(m, n, 1, x0, wt0, bias ? b : NULL, y0, acts[ai]);
            const int same = k > 0 || memcmp(y, y0, (size_t)mn * sizeof(float)) == 0;
            EXPECT(empty_kept(y, mn) && same,
                   "%s fwd m=%d n=%d k=%d %s bias=%d: not act(bias) or wrote an empty y",
                   t->name, m, n, k, act_name(acts[ai]), bias);
        }
    free(x), free(wt), free(b), free(x0), free(wt0), free(y), free(y0);
}

/* n = 0: dx = +0; m = 0 or k = 0: dx is empty. */
static void empty_bwd_input(const frl_kernels *t, int32_t m, int32_t n, int32_t k)
{
    const int64_t mk = (int64_t)m * k;
    float *dy = frand((int64_t)m * n), *wt = frand((int64_t)k * n), *dx = fbuf(mk);
    poison(dx, mk);
    t->linear_bwd_input(m, n, k, dy, wt, dx);
    EXPECT(empty_kept(dx, mk) && all_pos_zero(dx, mk),
           "%s bwd_input m=%d n=%d k=%d: dx is not +0 or an empty dx was written", t->name,
           m, n, k);
    free(dy), free(wt), free(dx);
}

/* m = 0: dwt and db are kept (accumulate) or +0 (=); k = 0: dwt is empty and db is what
 * any k gives (here k = 1); n = 0: both are empty. */
static void empty_bwd_weight(const frl_kernels *t, int32_t m, int32_t n, int32_t k)
{
    const int64_t kn = (int64_t)k * n;
    float *x = frand((int64_t)m * k), *x1 = frand(m), *dy = frand((int64_t)m * n);
    float *dw0 = frand(kn), *db0 = frand(n);
    for (int acc = 1; acc >= 0; acc--) {
        float *dw = fcopy(dw0, kn), *db = fcopy(db0, n), *dw1 = frand(n), *db1 = fcopy(db0, n);
        if (!acc) {
            poison(dw, kn);
            poison(db, n);
            for (int32_t j = 0; j < n; j++) /* not NaN: two unwritten arrays differ */
                db1[j] = -1.0f;
        }
        t->linear_bwd_weight(m, n, k, x, dy, dw, db, acc);
        t->linear_bwd_weight(m, n, 1, x1, dy, dw1, db1, acc);
        const int kept = acc ? !memcmp(dw, dw0, (size_t)kn * sizeof(float)) &&
                                   !memcmp(db, db0, (size_t)n * sizeof(float))
                             : all_pos_zero(dw, kn) && all_pos_zero(db, n);
        EXPECT(empty_kept(dw, kn) && empty_kept(db, n) && (m > 0 || kept) &&
                   !memcmp(db, db1, (size_t)n * sizeof(float)),
               "%s bwd_weight m=%d n=%d k=%d acc=%d: wrong dwt or db", t->name, m, n, k, acc);
        free(dw), free(db), free(dw1), free(db1);
    }
    free(x), free(x1), free(dy), free(dw0), free(db0);
}

/* The elementwise kernels with n = 0 touch nothing; an empty sum of squares is 0. */
static void empty_elementwise(const frl_kernels *t)
{
    float *y = fbuf(0), *dy = fbuf(0), *dx = fbuf(0), *p = fbuf(0), *m = fbuf(0), *v = fbuf(0);
    for (size_t ai = 1; ai < COUNT(acts); ai++)
        t->act_bwd(0, y, dy, dx, acts[ai]);
    const frl_adam_coef c = {1.0f, 0.9f, 0.999f, 1e-3f, 1.0f, 1e-8f};
    t->adam(0, p, dy, m, v, &c);
    EXPECT(empty_kept(dx, 0) && empty_kept(p, 0) && empty_kept(m, 0) && empty_kept(v, 0),
           "%s act_bwd or adam with n=0 wrote memory", t->name);
    EXPECT(t->sum_squares(0, y) == 0.0, "%s sum_squares(0) is not 0", t->name);
    free(y), free(dy), free(dx), free(p), free(m), free(v);
}

START_TEST(empty_dims_follow_contract)
{
    /* Around the paths: narrow (1..7), vector widths, row tiles and blocks. */
    const int32_t dims[] = {0, 1, 3, 7, 8, 9, 16, 17, 33, 65};
    rng_seed(11);
    for (int ti = -1; ti < ntested; ti++) {
        const frl_kernels *t = ti < 0 ? ref : tested[ti];
        empty_elementwise(t);
        for (size_t a = 0; a < COUNT(dims); a++)
            for (size_t b = 0; b < COUNT(dims); b++)
                for (size_t c = 0; c < COUNT(dims); c++) {
                    const int32_t m = dims[a], n = dims[b], k = dims[c];
                    if (m > 0 && n > 0 && k > 0)
                        continue;
                    empty_fwd(t, m, n, k);
                    empty_bwd_input(t, m, n, k);
                    empty_bwd_weight(t, m, n, k);
                }
    }
}
END_TEST

/* ---- activations against double precision --------------------------------------- */

/* y = act(x * 1): k = 1, wt = 1, no bias, so the pre-activation is x exactly. n = 1 runs
 * the narrow (row-vectorised) path, n = 37 the wide one with a masked tail. */
static void check_act_values(const frl_kernels *t, frl_nn_act act, const float *xs, int32_t cnt)
{
    const int32_t widths[] = {1, 37};
    for (size_t wi = 0; wi < COUNT(widths); wi++) {
        const int32_t n = widths[wi];
        float *x = fbuf(cnt), *wt = fbuf(n), *y = fbuf((int64_t)cnt * n);
        memcpy(x, xs, (size_t)cnt * sizeof(float));
        for (int32_t j = 0; j < n; j++)
            wt[j] = 1.0f;
        poison(y, (int64_t)cnt * n);
        t->linear_fwd(cnt, n, 1, x, wt, NULL, y, act);
        double worst = 0.0;
        for (int32_t i = 0; i < cnt; i++) {
            const double want = act_ref(xs[i], act);
            for (int32_t j = 0; j < n; j++) {
                const float got = y[(int64_t)i * n + j];
                if (isnan(want) || isinf(want)) {
                    EXPECT(isnan(want) ? isnan(got) : got == want, "%s %s(%.9g) = %.9g",
                           t->name, act_name(act), xs[i], got);
                    continue;
                }
                const double err = fabs(got - want) / ulp_at(want);
                worst = err > worst ? err : worst;
                /* 4 ulps: on a dense sweep glibc's tanhf and the SIMD tanh are within 2.2,
                 * expm1 within 1. */
                EXPECT(err <= 4.0, "%s %s(%.9g) = %.9g, want %.9g (%.2f ulp), n=%d",
                       t->name, act_name(act), xs[i], got, want, err, n);
            }
        }
        free(x), free(wt), free(y);
    }
}

START_TEST(activations_accurate)
{
    enum { SWEEP = 40000 };
    float *xs = fbuf(SWEEP + 64);
    int32_t cnt = 0;
    for (int i = 0; i < SWEEP; i++) /* [-12, 12] densely, through 0.625 and saturation */
        xs[cnt++] = (float)(-12.0 + 24.0 * i / (SWEEP - 1));
    const float special[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-40f, -1e-40f, 1e-4f, -1e-4f,
                             0.6249999f, 0.625f, -0.625f, 0.3465736f, -0.3465736f, 9.0f,
                             -9.0f, 9.5f, 20.0f, -20.0f, 88.0f, -88.0f, 100.0f, -100.0f,
                             1e30f, -1e30f, INFINITY, -INFINITY, NAN, -30.0f, -31.0f};
    for (size_t i = 0; i < COUNT(special); i++)
        xs[cnt++] = special[i];
    for (size_t ai = 1; ai < COUNT(acts); ai++) {
        check_act_values(ref, acts[ai], xs, cnt);
        for (int ti = 0; ti < ntested; ti++)
            check_act_values(tested[ti], acts[ai], xs, cnt);
    }
    free(xs);
}
END_TEST

/* A copy, so every table gives exactly the scalar result; poisoned outputs. */
START_TEST(transpose_matches_scalar)
{
    rng_seed(10);
    const int32_t dims[] = {0, 1, 3, 4, 5, 7, 8, 9, 16, 17, 33, 64, 65};
    for (size_t ri = 0; ri < COUNT(dims); ri++)
        for (size_t ci = 0; ci < COUNT(dims); ci++) {
            const int32_t r = dims[ri], c = dims[ci];
            float *src = frand((int64_t)r * c), *want = fbuf((int64_t)r * c);
            for (int32_t i = 0; i < r; i++)
                for (int32_t j = 0; j < c; j++)
                    want[(int64_t)j * r + i] = src[(int64_t)i * c + j];
            for (int ti = -1; ti < ntested; ti++) {
                const frl_kernels *t = ti < 0 ? ref : tested[ti];
                float *got = fbuf((int64_t)r * c);
                poison(got, (int64_t)r * c);
                t->transpose(r, c, src, got);
                EXPECT(memcmp(got, want, (size_t)r * c * sizeof(float)) == 0 &&
                           empty_kept(got, (int64_t)r * c),
                       "%s transpose %d x %d is wrong", t->name, r, c);
                free(got);
            }
            free(src), free(want);
        }
}
END_TEST

/* ---- the optimiser kernels ------------------------------------------------------- */

/* Lengths around the vector widths and the 1024-element blocks of the SIMD sums. */
static const int64_t opt_lens[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 1023, 1024,
                                   1025, 2049, 8833};

/* The float64 reference sums in the scalar table's order, so scalar must give its
 * bits. The SIMD tables sum float lanes of at most 34 squares (kernels_simd.h: blocks of
 * 1024 in four vectors, 32 a lane, and up to 3 more vectors of a short block's tail)
 * and add the lanes in double. The squares are positive, so the lanes' bound gamma_34
 * is relative to the sum; each double sum (the lanes', the reference's) adds gamma_n in
 * 2^-53. */
static double sum_squares_tol(int64_t n, double exact)
{
    return (gamma_of(34, 0x1p-24) + 2 * gamma_of(n, 0x1p-53)) * exact;
}

START_TEST(sum_squares_matches_reference)
{
    rng_seed(7);
    for (size_t li = 0; li < COUNT(opt_lens); li++) {
        const int64_t n = opt_lens[li];
        float *x = frand(n);
        double exact = 0;
        for (int64_t i = 0; i < n; i++)
            exact += (double)x[i] * x[i];
        const double want = ref->sum_squares(n, x);
        EXPECT(want == exact, "scalar sum_squares n=%ld: %.17g vs %.17g", (long)n, want, exact);
        for (int ti = 0; ti < ntested; ti++) {
            const double got = tested[ti]->sum_squares(n, x);
            EXPECT(fabs(got - exact) <= sum_squares_tol(n, exact),
                   "%s sum_squares n=%ld: %.17g vs float64 %.17g", tested[ti]->name, (long)n,
                   got, exact);
            /* Float partial sums of at most 34 terms: well within 1e-5 relative. */
            EXPECT(fabs(got - want) <= 1e-5 * want + 1e-30,
                   "%s sum_squares n=%ld: %.9g vs scalar %.9g", tested[ti]->name, (long)n, got,
                   want);
            EXPECT(got == tested[ti]->sum_squares(n, x), "%s sum_squares is not repeatable",
                   tested[ti]->name);
        }
        free(x);
    }
}
END_TEST

/* Squares near FLT_MAX overflow a float partial sum; the norm the optimiser uses must
 * stay finite, as the scalar table's double sum does (a clipped gradient, not a zero
 * one). */
START_TEST(grad_norm_survives_huge_elements)
{
    float g[40];
    for (int i = 0; i < 40; i++)
        g[i] = i == 17 ? 2e19f : 0.25f;
    const double want = sqrt(4e38 + 39 * 0.0625);
    for (int ti = -1; ti < ntested; ti++) {
        const frl_kernels *t = ti < 0 ? ref : tested[ti];
        const double norm = frl_grad_norm(t, g, 40);
        EXPECT(isfinite(norm) && fabs(norm - want) <= 1e-6 * want, "%s: norm %.9g, want %.9g",
               t->name, norm, want);
        const float scale = frl_clip_scale(norm, 0.5);
        EXPECT(scale > 0 && scale < 1e-19f, "%s: clip scale %.9g", t->name, scale);
    }
    EXPECT(frl_clip_scale(0.4, 0.5) == 1.0f && frl_clip_scale(2.0, 0) == 1.0f,
           "frl_clip_scale clips a norm within bounds");
    EXPECT(fabsf(frl_clip_scale(2.0, 0.5) - (float)(0.5 / (2.0 + 1e-6))) == 0.0f,
           "frl_clip_scale is not max / (norm + 1e-6)");
    /* optim.h: a zero or NaN norm leaves the gradient alone, an infinite one gives 0 */
    EXPECT(frl_clip_scale(0.0, 0.5) == 1.0f && frl_clip_scale(NAN, 0.5) == 1.0f &&
               frl_clip_scale(INFINITY, 0.5) == 0.0f,
           "frl_clip_scale at norms 0, NaN, inf: %g %g %g", (double)frl_clip_scale(0.0, 0.5),
           (double)frl_clip_scale(NAN, 0.5), (double)frl_clip_scale(INFINITY, 0.5));
}
END_TEST

/* Adam on one element in float64, from the contract (kernels.h), with the bounds of
 * the float32 chains (chain_tol, a chain's terms those of the expression expanded):
 *   m' = b1 m + (1 - b1) gs, gs = g gscale: the term (1 - b1) gs passes through four
 *     roundings (gs, 1 - b1, the product, the sum), b1 m through two;
 *   v' = b2 v + (1 - b2) gs gs: six (gs twice, 1 - b2, two products, the sum);
 *   p' = p - q, q = step m' / (sqrt(v') rbc2 + eps): the denominator's terms are
 *     positive, so its three roundings are relative; q has five, the difference six.
 * p' is computed from the table's own m' and v' (held to their bounds first), so each
 * line of the update is checked on its own, cancellation in m' not spreading to p'. */
typedef struct adam_ref {
    refv p, m, v;
} adam_ref;

static adam_ref ref_adam(float p, float g, float m, float v, float m1, float v1,
                         const frl_adam_coef *c)
{
    const double gs = (double)g * c->gscale, a1 = 1.0 - c->b1, a2 = 1.0 - c->b2;
    const double mt = (double)c->b1 * m, vt = (double)c->b2 * v;
    const double q = (double)c->step * m1 / (sqrt((double)v1) * c->rbc2 + c->eps);
    return (adam_ref){chain_ref(p - q, 6, fabs(p) + fabs(q)),
                      chain_ref(mt + a1 * gs, 4, fabs(mt) + fabs(a1 * gs)),
                      chain_ref(vt + a2 * gs * gs, 6, fabs(vt) + a2 * gs * gs)};
}

/* The state before (p, m, v) and after (p1, m1, v1) one step of table t. */
typedef struct adam_state {
    const float *p, *m, *v;
} adam_state;

/* A moment is stored as +0 below FLT_MIN (kernels.h): 0 where the reference may be
 * below it, else a normal float within the reference's bound. */
static int near_moment(float got, refv r)
{
    if (got == 0.0f && !signbit(got) && fabs(r.val) - r.tol < FLT_MIN)
        return 1;
    return fabsf(got) >= FLT_MIN && near_ref(got, r);
}

static void expect_adam_ref(const frl_kernels *t, int64_t n, const float *g, adam_state s0,
                            adam_state s1, const frl_adam_coef *c)
{
    for (int64_t i = 0; i < n; i++) {
        const adam_ref r = ref_adam(s0.p[i], g[i], s0.m[i], s0.v[i], s1.m[i], s1.v[i], c);
        EXPECT(near_moment(s1.m[i], r.m) && near_moment(s1.v[i], r.v) && near_ref(s1.p[i], r.p),
               "%s adam n=%ld at %ld: p %.9g m %.9g v %.9g vs float64 %.9g %.9g %.9g",
               t->name, (long)n, (long)i, s1.p[i], s1.m[i], s1.v[i], r.p.val, r.m.val,
               r.v.val);
    }
}

/* Every table against the reference, and the SIMD ones against the scalar bits for the
 * parameters and both moments, on gradients spanning many magnitudes, with and without
 * a clipping scale. */
START_TEST(adam_matches_reference)
{
    rng_seed(8);
    const frl_adam_coef coefs[] = {
        {1.0f, 0.9f, 0.999f, 2.5e-4f, 1.0f, 1e-5f},
        {0.37f, 0.9f, 0.999f, 1.9e-3f, 22.4f, 1e-8f},
    };
    for (size_t ci = 0; ci < COUNT(coefs); ci++)
        for (size_t li = 0; li < COUNT(opt_lens); li++) {
            const int64_t n = opt_lens[li];
            float *p = frand(n), *g = frand(n), *m = frand(n), *v = frand(n);
            for (int64_t i = 0; i < n; i++) {
                g[i] *= powf(10.0f, (float)(i % 13) - 8.0f);
                v[i] = fabsf(v[i]) * 1e-3f;
                if (i % 7 == 3) { /* a dead unit's: no gradient, moments near FLT_MIN */
                    g[i] = 0.0f;
                    m[i] *= 2.0f * FLT_MIN;
                    v[i] *= 1e3f * 2.0f * FLT_MIN;
                }
            }
            float *pr = fcopy(p, n), *mr = fcopy(m, n), *vr = fcopy(v, n);
            ref->adam(n, pr, g, mr, vr, &coefs[ci]);
            expect_adam_ref(ref, n, g, (adam_state){p, m, v}, (adam_state){pr, mr, vr},
                            &coefs[ci]);
            for (int ti = 0; ti < ntested; ti++) {
                float *pt = fcopy(p, n), *mt = fcopy(m, n), *vt = fcopy(v, n);
                tested[ti]->adam(n, pt, g, mt, vt, &coefs[ci]);
                expect_adam_ref(tested[ti], n, g, (adam_state){p, m, v},
                                (adam_state){pt, mt, vt}, &coefs[ci]);
                size_t bytes = (size_t)n * sizeof(float);
                EXPECT(!memcmp(pt, pr, bytes) && !memcmp(mt, mr, bytes) && !memcmp(vt, vr, bytes),
                       "%s adam n=%ld coef %zu: bits differ from scalar", tested[ti]->name,
                       (long)n, ci);
                free(pt), free(mt), free(vt);
            }
            /* The step moved the parameters, so the comparison above is not vacuous. */
            EXPECT(n == 0 || memcmp(pr, p, (size_t)n * sizeof(float)) != 0,
                   "scalar adam n=%ld changed nothing", (long)n);
            free(p), free(g), free(m), free(v), free(pr), free(mr), free(vr);
        }
}
END_TEST

/* A dead unit's moments (no gradient) end at +0, not in the subnormals where b1 x a few
 * ulps rounds back to the same ulps and every step would pay the CPU's assists; a
 * moment at FLT_MIN after the step is kept, and NaN stays NaN. */
START_TEST(adam_flushes_subnormal_moments)
{
    const frl_adam_coef c = {1.0f, 0.9f, 0.999f, 1e-3f, 1.0f, 1e-8f};
    const float sub = 4 * 0x1p-149f; /* 4 ulps: 0.9 x 4 ulps rounds to 4 ulps */
    float g[4] = {0.0f, 0.0f, 0.0f, NAN};
    float m0[4] = {sub, -FLT_MIN, 1.2f * FLT_MIN, 1.0f};
    float v0[4] = {sub, FLT_MIN, 1.0f, 1.0f};
    for (int ti = -1; ti < ntested; ti++) {
        const frl_kernels *t = ti < 0 ? ref : tested[ti];
        float p[4] = {1, 1, 1, 1}, m[4], v[4];
        memcpy(m, m0, sizeof m);
        memcpy(v, v0, sizeof v);
        t->adam(4, p, g, m, v, &c);
        EXPECT(m[0] == 0.0f && !signbit(m[0]) && v[0] == 0.0f && !signbit(v[0]),
               "%s: subnormal moments %g %g kept", t->name, m[0], v[0]);
        EXPECT(m[1] == 0.0f && !signbit(m[1]) && v[1] == 0.0f,
               "%s: moments decayed below FLT_MIN kept as %g %g", t->name, m[1], v[1]);
        EXPECT(m[2] >= FLT_MIN, "%s: m at FLT_MIN flushed to %g", t->name, m[2]);
        EXPECT(isnan(m[3]) && isnan(v[3]) && isnan(p[3]), "%s: NaN gradient hidden", t->name);
        EXPECT(p[0] == 1.0f && p[1] == 1.0f, "%s: a flushed moment moved p", t->name);
    }
}
END_TEST

/* A finite gradient whose square overflows (an exploding loss) leaves v at FLT_MAX, not
 * infinity: the parameter stays finite and can move again, and the state can be saved.
 * An infinite gradient still reaches the parameter, for the divergence check. */
START_TEST(adam_keeps_an_overflowed_v_finite)
{
    const frl_adam_coef c = {1.0f, 0.9f, 0.999f, 1e-3f, 1.0f, 1e-8f};
    float g[3] = {1e30f, -3e37f, INFINITY};
    for (int ti = -1; ti < ntested; ti++) {
        const frl_kernels *t = ti < 0 ? ref : tested[ti];
        float p[3] = {1, 1, 1}, m[3] = {0}, v[3] = {FLT_MAX, 0, 0};
        t->adam(3, p, g, m, v, &c);
        EXPECT(v[0] == FLT_MAX && v[1] == FLT_MAX, "%s: v overflowed to %g %g", t->name, v[0],
               v[1]);
        EXPECT(isfinite(p[0]) && isfinite(p[1]) && isfinite(m[0]) && isfinite(m[1]),
               "%s: p %g %g m %g %g not finite", t->name, p[0], p[1], m[0], m[1]);
        EXPECT(p[0] < 1.0f && p[1] > 1.0f, "%s: the step did not move p (%g %g)", t->name, p[0],
               p[1]);
        EXPECT(!isfinite(p[2]), "%s: an infinite gradient was hidden (p %g)", t->name, p[2]);
    }
}
END_TEST

/* ---- recurrent gates -------------------------------------------------------------
 * gru_fwd, gru_bwd, lstm_fwd and lstm_bwd (kernels.h: PyTorch's equations) against
 * float64, one unit at a time. A forward output's bound carries its inputs' bounds
 * through the equation to first order and adds the roundings of its sums and products
 * and the GATE_ULPS of sig and tanh; a backward output is a chain of products and sums
 * (chain_ref: the roundings on a term's longest path, over the terms expanded). The
 * SIMD tables' backward outputs must be scalar's bits; their forward ones may differ,
 * each within its own bound of float64. */

#define F32_U 0x1p-24 /* a float rounding: relative error at most 2^-24 */
#define GATE_ULPS 4   /* sig and tanh of a float, in every table (kernels.h) */

static double sig_ref(double x) { return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x)); }

static refv exact_v(double v) { return (refv){v, 0.0, 0.0}; }

/* How big a value within r.tol of r.val can be. */
static double size_of(refv r) { return fabs(r.val) + r.tol; }

/* How far a product of two values within a.tol and b.tol of a and b is from a b. */
static double prod_err(refv a, refv b)
{
    return fabs(a.val) * b.tol + fabs(b.val) * a.tol + a.tol * b.tol;
}

/* f(a), f = sig (is_sig) or tanh, computed from a float within del of a: f' del, f'
 * growing by at most e^(2 del) across that interval (|f''| <= 2 f'), plus f's own
 * GATE_ULPS. Below 2^-125 sig is only bounded: x < -87 gives sig(-87) (kernels.h). */
static refv ref_gate(double a, double del, int is_sig)
{
    const double y = is_sig ? sig_ref(a) : tanh(a);
    const double prop = (is_sig ? y * (1.0 - y) : 1.0 - y * y) * del * exp(2.0 * del);
    return (refv){y, 0.0, prop + GATE_ULPS * ulp_at(fabs(y) + prop) + (is_sig ? 0x1p-125 : 0)};
}

/* A unit's inputs v[array][block] give its outputs o[array][block]. */
typedef void (*gate_ref_fn)(double v[4][5], refv o[3][5]);

/* gx (r, z, n), gh (r, z, n), hp -> hout; gates r, z, n, gh_n. Each float sum
 * gx + gh is one rounding; n's argument two (a product and a sum), hout three on the
 * path of (1 - z) n. */
static void ref_gru_fwd(double v[4][5], refv o[3][5])
{
    const double *x = v[0], *y = v[1], hp = v[2][0], ar = x[0] + y[0], az = x[1] + y[1];
    const refv r = ref_gate(ar, F32_U * fabs(ar), 1), z = ref_gate(az, F32_U * fabs(az), 1);
    const double dn = prod_err(r, exact_v(y[2])) +
                      gamma_of(2, F32_U) * (fabs(x[2]) + size_of(r) * fabs(y[2]));
    const refv n = ref_gate(x[2] + r.val * y[2], dn, 0), omz = {1.0 - z.val, 0.0, z.tol};
    o[0][0] = (refv){omz.val * n.val + z.val * hp, 0.0,
                     prod_err(omz, n) + prod_err(z, exact_v(hp)) +
                         gamma_of(3, F32_U) * (size_of(omz) * size_of(n) + size_of(z) * fabs(hp))};
    o[1][0] = r, o[1][1] = z, o[1][2] = n, o[1][3] = exact_v(y[2]);
}

/* g (i, f, g, o), cp -> hout; cout; gates i, f, g, o, tanh(c). */
static void ref_lstm_fwd(double v[4][5], refv o[3][5])
{
    const double *a = v[0], cp = v[1][0];
    const refv ig = ref_gate(a[0], 0.0, 1), fg = ref_gate(a[1], 0.0, 1);
    const refv gg = ref_gate(a[2], 0.0, 0), og = ref_gate(a[3], 0.0, 1);
    const refv c = {fg.val * cp + ig.val * gg.val, 0.0,
                    prod_err(fg, exact_v(cp)) + prod_err(ig, gg) +
                        gamma_of(2, F32_U) * (size_of(fg) * fabs(cp) + size_of(ig) * size_of(gg))};
    const refv tc = ref_gate(c.val, c.tol, 0);
    o[0][0] = (refv){og.val * tc.val, 0.0, prod_err(og, tc) + F32_U * size_of(og) * size_of(tc)};
    o[1][0] = c;
    o[2][0] = ig, o[2][1] = fg, o[2][2] = gg, o[2][3] = og, o[2][4] = tc;
}

/* gates (r, z, n, gh_n), hp, dh -> dgx, dgh (r, z, n), dhp. da_n = dh (1 - z)(1 - n n)
 * has 5 roundings on a path, da_r = da_n gh_n r (1 - r) 9. */
static void ref_gru_bwd(double v[4][5], refv o[3][5])
{
    const double r = v[0][0], z = v[0][1], n = v[0][2], ghn = v[0][3], hp = v[1][0], d = v[2][0];
    const double dan = d * (1 - z) * (1 - n * n), dm = fabs(d) * (1 + fabs(z)) * (1 + n * n);
    o[0][0] = o[1][0] = chain_ref(dan * ghn * r * (1 - r), 9, dm * fabs(ghn * r) * (1 + fabs(r)));
    o[0][1] = o[1][1] = chain_ref(d * (hp - n) * z * (1 - z), 5,
                                  fabs(d) * (fabs(hp) + fabs(n)) * fabs(z) * (1 + fabs(z)));
    o[0][2] = chain_ref(dan, 5, dm);
    o[1][2] = chain_ref(dan * r, 6, dm * fabs(r));
    o[2][0] = chain_ref(d * z, 1, fabs(d * z));
}

/* gates (i, f, g, o, tanh c), cp, dh, dc -> dg (i, f, g, o), dcp. dc~ = dc + dh o
 * (1 - tc tc) has 5 roundings on a path, each gradient through it 4 more. */
static void ref_lstm_bwd(double v[4][5], refv o[3][5])
{
    const double ig = v[0][0], fg = v[0][1], gg = v[0][2], og = v[0][3], tc = v[0][4];
    const double cp = v[1][0], dh = v[2][0], dc = v[3][0];
    const double dct = dc + dh * og * (1 - tc * tc), dm = fabs(dc) + fabs(dh * og) * (1 + tc * tc);
    o[0][0] = chain_ref(dct * gg * ig * (1 - ig), 9, dm * fabs(gg * ig) * (1 + fabs(ig)));
    o[0][1] = chain_ref(dct * cp * fg * (1 - fg), 9, dm * fabs(cp * fg) * (1 + fabs(fg)));
    o[0][2] = chain_ref(dct * ig * (1 - gg * gg), 9, dm * fabs(ig) * (1 + gg * gg));
    o[0][3] = chain_ref(dh * tc * og * (1 - og), 4, fabs(dh * tc * og) * (1 + fabs(og)));
    o[1][0] = chain_ref(dct * fg, 6, dm * fabs(fg));
}

enum { GRU_FWD, GRU_BWD, LSTM_FWD, LSTM_BWD };

/* A gate kernel's arrays, each [rows x w h] for its w floats per unit. */
typedef struct gate_kind {
    int id, nin, nout, in_w[4], out_w[3];
    int alias_out, alias_in; /* kernels.h allows out[alias_out] == in[alias_in] */
    const char *name, *out_name[3];
    gate_ref_fn ref;
} gate_kind;

static const gate_kind gru_fwd_k = {GRU_FWD, 3, 2, {3, 3, 1}, {1, 4}, 0, 2,
                                    "gru_fwd", {"hout", "gates"}, ref_gru_fwd};
static const gate_kind gru_bwd_k = {GRU_BWD, 3, 3, {4, 1, 1}, {3, 3, 1}, 2, 2,
                                    "gru_bwd", {"dgx", "dgh", "dhp"}, ref_gru_bwd};
static const gate_kind lstm_fwd_k = {LSTM_FWD, 2, 3, {4, 1}, {1, 1, 5}, 1, 1,
                                     "lstm_fwd", {"hout", "cout", "gates"}, ref_lstm_fwd};
static const gate_kind lstm_bwd_k = {LSTM_BWD, 4, 2, {5, 1, 1, 1}, {4, 1}, 1, 3,
                                     "lstm_bwd", {"dg", "dcp"}, ref_lstm_bwd};

static void gate_call(const gate_kind *k, const frl_kernels *t, int32_t rows, int32_t h,
                      float *const *in, float *const *out)
{
    switch (k->id) {
    case GRU_FWD: t->gru_fwd(rows, h, in[0], in[1], in[2], out[0], out[1]); break;
    case GRU_BWD: t->gru_bwd(rows, h, in[0], in[1], in[2], out[0], out[1], out[2]); break;
    case LSTM_FWD: t->lstm_fwd(rows, h, in[0], in[1], out[0], out[1], out[2]); break;
    default: t->lstm_bwd(rows, h, in[0], in[1], in[2], in[3], out[0], out[1]); break;
    }
}

/* Pre-activations spread to +-15, deep into sig's tails (the old sigmoid lost its
 * digits there), states in [-3, 3]; a backward kernel's gates and previous cell or
 * state come from scalar's forward of such inputs. */
static void gate_inputs(const gate_kind *k, int32_t rows, int32_t h, float *in[4])
{
    const int64_t n = (int64_t)rows * h;
    for (int a = 0; a < k->nin; a++)
        in[a] = frand(n * k->in_w[a]);
    float *pre = frand(4 * n), *gh = frand(3 * n), *ho = fbuf(n), *co = fbuf(n);
    for (int64_t i = 0; i < 4 * n; i++)
        pre[i] *= 5.0f;
    if (k->id == GRU_FWD || k->id == LSTM_FWD)
        memcpy(in[0], pre, (size_t)(n * k->in_w[0]) * sizeof(float));
    else if (k->id == GRU_BWD)
        ref->gru_fwd(rows, h, pre, gh, in[1], ho, in[0]);
    else
        ref->lstm_fwd(rows, h, pre, in[1], ho, co, in[0]);
    free(pre), free(gh), free(ho), free(co);
}

/* t's outputs of one call, on poisoned arrays, are put in out. The same call a row at
 * a time, in place (out[alias_out] == in[alias_in]), must give the same bits: a row
 * depends on nothing else (kernels.h), and in place is allowed. */
static void gate_run(const gate_kind *k, const frl_kernels *t, int32_t rows, int32_t h,
                     float *const *in, float **out)
{
    const int64_t n = (int64_t)rows * h;
    float *rowwise[3];
    for (int o = 0; o < k->nout; o++) {
        out[o] = fbuf(n * k->out_w[o]), rowwise[o] = fbuf(n * k->out_w[o]);
        poison(out[o], n * k->out_w[o]);
        poison(rowwise[o], n * k->out_w[o]);
    }
    gate_call(k, t, rows, h, in, out);
    memcpy(rowwise[k->alias_out], in[k->alias_in], (size_t)n * sizeof(float));
    for (int32_t i = 0; i < rows; i++) {
        float *ri[4], *ro[3];
        for (int a = 0; a < k->nin; a++)
            ri[a] = in[a] + (int64_t)i * k->in_w[a] * h;
        for (int o = 0; o < k->nout; o++)
            ro[o] = rowwise[o] + (int64_t)i * k->out_w[o] * h;
        ri[k->alias_in] = ro[k->alias_out];
        gate_call(k, t, 1, h, ri, ro);
    }
    for (int o = 0; o < k->nout; o++) {
        EXPECT(empty_kept(out[o], n * k->out_w[o]) &&
                   !memcmp(out[o], rowwise[o], (size_t)(n * k->out_w[o]) * sizeof(float)),
               "%s %s rows=%d h=%d: %s a row at a time in place differs, or was written empty",
               t->name, k->name, rows, h, k->out_name[o]);
        free(rowwise[o]);
    }
}

/* Element (i, block b, j) of output o: got from t, want from scalar. */
static void expect_gate(const gate_kind *k, const frl_kernels *t, int32_t rows, int32_t h,
                        int o, int64_t i, int b, int32_t j, const float *const got[2], refv r)
{
    const int64_t e = (i * k->out_w[o] + b) * h + j;
    const float g = got[0][e], w = got[1][e];
    EXPECT(close_to(g, r.val, r.tol) && close_to(g, w, 2 * r.tol),
           "%s %s rows=%d h=%d: %s block %d at [%ld][%d] %.9g vs float64 %.9g (tol %.3g), "
           "scalar %.9g",
           t->name, k->name, rows, h, k->out_name[o], b, (long)i, j, g, r.val, r.tol, w);
}

static void check_gate(const gate_kind *k, const frl_kernels *t, int32_t rows, int32_t h,
                       float *const *in)
{
    float *got[3], *want[3];
    gate_run(k, t, rows, h, in, got);
    gate_run(k, ref, rows, h, in, want);
    for (int o = 0; o < k->nout; o++) /* backward: the same operations, the same bits */
        EXPECT(k->id == GRU_FWD || k->id == LSTM_FWD ||
                   !memcmp(got[o], want[o], (size_t)rows * h * k->out_w[o] * sizeof(float)),
               "%s %s rows=%d h=%d: %s differs from scalar's bits", t->name, k->name, rows, h,
               k->out_name[o]);
    for (int64_t i = 0; i < rows; i++)
        for (int32_t j = 0; j < h; j++) {
            double v[4][5];
            refv r[3][5];
            for (int a = 0; a < k->nin; a++)
                for (int b = 0; b < k->in_w[a]; b++)
                    v[a][b] = in[a][(i * k->in_w[a] + b) * h + j];
            k->ref(v, r);
            for (int o = 0; o < k->nout; o++)
                for (int b = 0; b < k->out_w[o]; b++)
                    expect_gate(k, t, rows, h, o, i, b, j, (const float *[2]){got[o], want[o]},
                                r[o][b]);
        }
    for (int o = 0; o < k->nout; o++)
        free(got[o]), free(want[o]);
}

/* Hidden sizes around the vector widths (8, 16), rows 0 (nothing written) to 5. */
static void check_gate_kernel(const gate_kind *k)
{
    const int32_t rows[] = {0, 1, 2, 5};
    const int32_t hs[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65};
    for (int ti = 0; ti < ntables; ti++) {
        rng_seed(21);
        for (size_t ri = 0; ri < COUNT(rows); ri++)
            for (size_t hi = 0; hi < COUNT(hs); hi++) {
                float *in[4];
                gate_inputs(k, rows[ri], hs[hi], in);
                check_gate(k, tables[ti], rows[ri], hs[hi], in);
                for (int a = 0; a < k->nin; a++)
                    free(in[a]);
            }
    }
}

START_TEST(gru_fwd_matches_reference) { check_gate_kernel(&gru_fwd_k); }
END_TEST

START_TEST(gru_bwd_matches_reference) { check_gate_kernel(&gru_bwd_k); }
END_TEST

START_TEST(lstm_fwd_matches_reference) { check_gate_kernel(&lstm_fwd_k); }
END_TEST

START_TEST(lstm_bwd_matches_reference) { check_gate_kernel(&lstm_bwd_k); }
END_TEST

/* sig and tanh of exact arguments, x in every block of one row: lstm_fwd's gates (i,
 * f, o sig, g tanh; cp = 0) and gru_fwd's r and z (gh = 0, so gx + gh is x). Within
 * GATE_ULPS (ref_gate), NaN for NaN, and NaN on to hout and cout. */
static void check_gate_values(const frl_kernels *t, const float *xs, int32_t cnt)
{
    float *a = fbuf(4 * (int64_t)cnt), *zero = fbuf(3 * (int64_t)cnt);
    float *ho = fbuf(cnt), *co = fbuf(cnt), *g = fbuf(5 * (int64_t)cnt);
    for (int64_t i = 0; i < 4 * (int64_t)cnt; i++)
        a[i] = xs[i % cnt];
    memset(zero, 0, 3 * (size_t)cnt * sizeof(float));
    for (int gru = 0; gru < 2; gru++) {
        if (gru)
            t->gru_fwd(1, cnt, a, zero, zero, ho, g);
        else
            t->lstm_fwd(1, cnt, a, zero, ho, co, g);
        for (int32_t j = 0; j < cnt; j++) {
            for (int b = 0; b < (gru ? 2 : 4); b++) {
                const refv r = ref_gate(xs[j], 0.0, b != 2 || gru);
                const float got = g[(int64_t)b * cnt + j];
                EXPECT(close_to(got, r.val, r.tol), "%s %s gate %d of %.9g: %.9g, want %.9g",
                       t->name, gru ? "gru_fwd" : "lstm_fwd", b, xs[j], got, r.val);
            }
            EXPECT(!isnan(xs[j]) || (isnan(ho[j]) && (gru || isnan(co[j]))),
                   "%s %s: NaN in, a number out", t->name, gru ? "gru_fwd" : "lstm_fwd");
        }
    }
    free(a), free(zero), free(ho), free(co), free(g);
}

START_TEST(gate_activations_accurate)
{
    enum { SWEEP = 60001 };
    float *xs = fbuf(SWEEP + 64);
    int32_t cnt = 0;
    for (int i = 0; i < SWEEP; i++) /* [-30, 30] densely: the old sigmoid was 0 below -17 */
        xs[cnt++] = (float)(-30.0 + 60.0 * i / (SWEEP - 1));
    const float special[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-40f, -1e-40f, 0.5f, -0.5f,
                             16.6f, -16.6f, 17.5f, -17.5f, 40.0f, -40.0f, 80.0f, -80.0f,
                             86.9f, -86.9f, 87.0f, -87.0f, 87.5f, -87.5f, 88.0f, -88.0f,
                             100.0f, -100.0f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN};
    for (size_t i = 0; i < COUNT(special); i++)
        xs[cnt++] = special[i];
    for (int ti = 0; ti < ntables; ti++)
        check_gate_values(tables[ti], xs, cnt);
    free(xs);
}
END_TEST

/* ---- determinism ------------------------------------------------------------------ */

/* (k, n) of the typical layers, plus odd ones for the tails and narrow paths. */
static const int32_t det_kn[][2] = {{4, 64}, {64, 64}, {64, 2}, {64, 1}, {3, 64}, {6, 64},
                                    {64, 3}, {5, 13}, {33, 7}, {2, 1}, {70, 300}, {1, 5}};
/* Two ways to split 256 rows into consecutive blocks. */
static const int32_t split4[] = {64, 64, 64, 64};
static const int32_t split_odd[] = {1, 7, 56, 3, 125, 64};

static void det_fwd_bwd_input(const frl_kernels *t, int32_t k, int32_t n, const int32_t *sp)
{
    const int32_t m = 256;
    float *x = frand((int64_t)m * k), *wt = frand((int64_t)k * n), *b = frand(n);
    float *dy = frand((int64_t)m * n);
    float *y1 = fbuf((int64_t)m * n), *y2 = fbuf((int64_t)m * n);
    float *dx1 = fbuf((int64_t)m * k), *dx2 = fbuf((int64_t)m * k);
    for (size_t ai = 0; ai < COUNT(acts); ai++) {
        poison(y2, (int64_t)m * n);
        t->linear_fwd(m, n, k, x, wt, b, y1, acts[ai]);
        for (int32_t i = 0, s = 0; i < m; i += sp[s++])
            t->linear_fwd(sp[s], n, k, x + (int64_t)i * k, wt, b, y2 + (int64_t)i * n, acts[ai]);
        EXPECT(memcmp(y1, y2, (size_t)m * n * sizeof(float)) == 0,
               "%s fwd k=%d n=%d %s: a split batch changed bits", t->name, k, n,
               act_name(acts[ai]));
    }
    poison(dx2, (int64_t)m * k);
    t->linear_bwd_input(m, n, k, dy, wt, dx1);
    for (int32_t i = 0, s = 0; i < m; i += sp[s++])
        t->linear_bwd_input(sp[s], n, k, dy + (int64_t)i * n, wt, dx2 + (int64_t)i * k);
    EXPECT(memcmp(dx1, dx2, (size_t)m * k * sizeof(float)) == 0,
           "%s bwd_input k=%d n=%d: a split batch changed bits", t->name, k, n);
    free(x), free(wt), free(b), free(dy), free(y1), free(y2), free(dx1), free(dx2);
}

/* One call over all rows equals accumulating consecutive blocks, bit for bit. */
static void det_bwd_weight(const frl_kernels *t, int32_t k, int32_t n, const int32_t *sp)
{
    const int32_t m = 256;
    float *x = frand((int64_t)m * k), *dy = frand((int64_t)m * n);
    float *dw1 = frand((int64_t)k * n), *db1 = frand(n);
    float *dw2 = fcopy(dw1, (int64_t)k * n), *db2 = fcopy(db1, n);
    t->linear_bwd_weight(m, n, k, x, dy, dw1, db1, 1);
    for (int32_t i = 0, s = 0; i < m; i += sp[s++])
        t->linear_bwd_weight(sp[s], n, k, x + (int64_t)i * k, dy + (int64_t)i * n, dw2, db2, 1);
    EXPECT(memcmp(dw1, dw2, (size_t)k * n * sizeof(float)) == 0 &&
           memcmp(db1, db2, (size_t)n * sizeof(float)) == 0,
           "%s bwd_weight k=%d n=%d: a split batch changed bits", t->name, k, n);
    /* Overwriting poisoned arrays equals accumulating into zeros, bit for bit. */
    float *dw3 = fbuf((int64_t)k * n), *db3 = fbuf(n);
    memset(dw2, 0, (size_t)k * n * sizeof(float));
    memset(db2, 0, (size_t)n * sizeof(float));
    poison(dw3, (int64_t)k * n);
    poison(db3, n);
    t->linear_bwd_weight(m, n, k, x, dy, dw2, db2, 1);
    t->linear_bwd_weight(m, n, k, x, dy, dw3, db3, 0);
    EXPECT(memcmp(dw3, dw2, (size_t)k * n * sizeof(float)) == 0 &&
           memcmp(db3, db2, (size_t)n * sizeof(float)) == 0,
           "%s bwd_weight k=%d n=%d: overwriting differs from accumulating into zeros",
           t->name, k, n);
    free(dw3), free(db3);
    free(x), free(dy), free(dw1), free(db1), free(dw2), free(db2);
}

START_TEST(split_batches_change_no_bit)
{
    for (int ti = 0; ti < ntables; ti++)
        for (size_t s = 0; s < COUNT(det_kn); s++) {
            rng_seed(7 + s);
            det_fwd_bwd_input(tables[ti], det_kn[s][0], det_kn[s][1], split4);
            det_fwd_bwd_input(tables[ti], det_kn[s][0], det_kn[s][1], split_odd);
            det_bwd_weight(tables[ti], det_kn[s][0], det_kn[s][1], split4);
            det_bwd_weight(tables[ti], det_kn[s][0], det_kn[s][1], split_odd);
        }
}
END_TEST

/* A row's output does not depend on its neighbours: row r alone (m = 1) equals row r of
 * the full batch. */
START_TEST(single_rows_match_batch)
{
    for (int ti = 0; ti < ntested; ti++)
        for (size_t s = 0; s < COUNT(det_kn); s++) {
            const int32_t k = det_kn[s][0], n = det_kn[s][1], m = 19;
            rng_seed(3 + s);
            float *x = frand((int64_t)m * k), *wt = frand((int64_t)k * n), *b = frand(n);
            float *y = fbuf((int64_t)m * n), *y1 = fbuf(n);
            tested[ti]->linear_fwd(m, n, k, x, wt, b, y, FRL_NN_TANH);
            for (int32_t i = 0; i < m; i++) {
                tested[ti]->linear_fwd(1, n, k, x + (int64_t)i * k, wt, b, y1, FRL_NN_TANH);
                EXPECT(memcmp(y1, y + (int64_t)i * n, (size_t)n * sizeof(float)) == 0,
                       "%s fwd k=%d n=%d row %d", tested[ti]->name, k, n, i);
            }
            free(x), free(wt), free(b), free(y), free(y1);
        }
}
END_TEST

/* ---- the choice of table ----------------------------------------------------------- */

static const char *expected_best(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return __builtin_cpu_supports("avx512f") ? "avx512" : "avx2";
#endif
    return "scalar";
}

/* ---- direct convolution ------------------------------------------------------ */

/* The patch matrix of an unpadded convolution, as nn/conv.c's im2col lays it out. */
static float *patches_of(const frl_conv_dims *d, int32_t images, const float *x)
{
    int64_t rows = (int64_t)images * d->out_h * d->out_w, k = (int64_t)d->kh * d->kw * d->in_c;
    float *pm = fbuf(rows * k), *row = pm;
    for (int32_t i = 0; i < images; i++)
        for (int32_t oh = 0; oh < d->out_h; oh++)
            for (int32_t ow = 0; ow < d->out_w; ow++)
                for (int32_t ki = 0; ki < d->kh; ki++)
                    for (int32_t kj = 0; kj < d->kw; kj++, row += d->in_c)
                        memcpy(row, x + (((int64_t)i * d->in_h + oh * d->stride + ki) * d->in_w +
                                         ow * d->stride + kj) * d->in_c,
                               sizeof(float) * (size_t)d->in_c);
    return pm;
}

/* The direct convolutions' shapes: both encoders' layers, then every tail (narrow
 * outputs of 1-7 channels, odd widths, outputs smaller than a register tile both ways,
 * corners left by whole tiles along the rows and down the columns, a tall narrow output
 * with no whole tile along its rows). in_h, in_w, in_c, out_c, k, stride. */
static const int32_t conv_shapes[][6] = {
    {84, 84, 4, 32, 8, 4},  {20, 20, 32, 64, 4, 2}, {9, 9, 64, 64, 3, 1},
    {72, 128, 3, 32, 8, 4}, {17, 31, 32, 64, 4, 2}, {7, 14, 64, 128, 3, 2},
    {5, 6, 1, 1, 1, 1},     {6, 7, 3, 5, 2, 1},     {9, 11, 2, 7, 3, 2},
    {9, 11, 2, 16, 3, 2},   {8, 8, 5, 8, 4, 4},     {10, 9, 3, 17, 3, 3},
    {4, 4, 2, 33, 4, 1},    {12, 5, 7, 130, 2, 2},  {6, 9, 20, 5, 2, 1},
    {13, 12, 17, 40, 3, 1}, {20, 6, 16, 24, 3, 1},
};

static frl_conv_dims conv_dims_of(const int32_t *sh)
{
    return (frl_conv_dims){sh[0], sh[1], sh[2], (sh[0] - sh[4]) / sh[5] + 1,
                           (sh[1] - sh[4]) / sh[5] + 1, sh[3], sh[4], sh[4], sh[5]};
}

/* Case si of 2 * COUNT(conv_shapes): each shape with 1-3 images, then with 19: more
 * than a tile's rows, which a table may tile down when an image's output is small, and
 * a remainder. Returns the images; *d the shape. */
static int32_t conv_case(size_t si, frl_conv_dims *d)
{
    *d = conv_dims_of(conv_shapes[si % COUNT(conv_shapes)]);
    return si < COUNT(conv_shapes) ? 1 + (int32_t)(si % 3) : 19;
}

/* The sanitizer builds leave out the 19 images of outputs 8 x 8 or larger (the
 * encoders' first layers: 6 of conv_fwd's test's 13 s under ASan), where no table
 * tiles down. */
static int sanitizer_skips(const frl_conv_dims *d, int32_t images)
{
    return FRL_TEST_SANITIZED && images == 19 && d->out_h >= 8 && d->out_w >= 8;
}

/* Every table's conv_fwd against the same table's im2col + linear_fwd, bit for bit, over
 * shapes with every tail (narrow outputs of 1-7 channels included: linear_fwd gives them
 * to another path), strides 1-4, kernels 1-8, the four activations and no bias. */
START_TEST(conv_fwd_is_im2col_bit_for_bit)
{
    rng_seed(21);
    static const frl_nn_act conv_acts[] = {FRL_NN_RELU, FRL_NN_LINEAR, FRL_NN_TANH, FRL_NN_ELU};
    int done = 0, declined = 0, runs = 0;
    for (size_t si = 0; si < 2 * COUNT(conv_shapes); si++) {
        frl_conv_dims d;
        const int32_t images = conv_case(si, &d);
        if (sanitizer_skips(&d, images))
            continue;
        runs++;
        int64_t in = (int64_t)images * d.in_h * d.in_w * d.in_c;
        int64_t rows = (int64_t)images * d.out_h * d.out_w, k = (int64_t)d.kh * d.kw * d.in_c;
        float *x = frand(in), *wt = frand(k * d.out_c), *b = frand(d.out_c);
        float *pm = patches_of(&d, images, x);
        float *want = fbuf(rows * d.out_c), *got = fbuf(rows * d.out_c);
        for (size_t ai = 0; ai < COUNT(conv_acts); ai++)
            for (int ti = 0; ti < ntables; ti++) {
                const frl_kernels *t = tables[ti];
                const float *bias = ai == 1 && si % 2 ? NULL : b;
                t->linear_fwd((int32_t)rows, d.out_c, (int32_t)k, pm, wt, bias, want, conv_acts[ai]);
                poison(got, rows * d.out_c);
                if (!t->conv_fwd(&d, images, x, wt, bias, got, conv_acts[ai])) {
                    /* declined: only a SIMD table, only for an output small both ways
                     * and fewer images than a tile's rows, and y untouched */
                    EXPECT(t != ref && d.out_w < 8 && d.out_h < 8 && images < 8 &&
                               isnan(got[0]),
                           "%s declined shape %zu", t->name, si);
                    declined++;
                    continue;
                }
                EXPECT(!memcmp(got, want, sizeof(float) * (size_t)(rows * d.out_c)),
                       "%s conv_fwd shape %zu act %zu: bits differ from im2col + linear_fwd",
                       t->name, si, ai);
                done++;
            }
        free(x), free(wt), free(b), free(pm), free(want), free(got);
    }
    /* the direct path ran for most shapes in every table, and a SIMD table declined the
     * smallest outputs (1 x 1 is below every table's tiles) */
    ck_assert_int_ge(done, runs * (int)COUNT(conv_acts) * ntables * 2 / 3);
    if (ntested)
        ck_assert_int_gt(declined, 0);
}
END_TEST

/* Every table's conv_bwd_weight against the same table's linear_bwd_weight on im2col's
 * patches, bit for bit: =, and += onto random gradients, with and without db; with 1-3
 * images, and with 19 where an image has fewer than 64 positions (a table may take
 * several such images a pass: 19 leaves a remainder). */
START_TEST(conv_bwd_weight_is_im2col_bit_for_bit)
{
    rng_seed(22);
    int done = 0, runs = 0;
    for (size_t si = 0; si < 2 * COUNT(conv_shapes); si++) {
        frl_conv_dims d;
        const int32_t images = conv_case(si, &d);
        if (images == 19 && d.out_h * d.out_w >= 64)
            continue;
        runs++;
        int64_t in = (int64_t)images * d.in_h * d.in_w * d.in_c, n = d.out_c;
        int64_t rows = (int64_t)images * d.out_h * d.out_w, k = (int64_t)d.kh * d.kw * d.in_c;
        float *x = frand(in), *dy = frand(rows * n), *w0 = frand(k * n), *b0 = frand(n);
        float *pm = patches_of(&d, images, x);
        for (int mode = 0; mode < 4; mode++) {
            int accumulate = mode & 1, with_db = mode < 2;
            for (int ti = 0; ti < ntables; ti++) {
                const frl_kernels *t = tables[ti];
                float *ww = fcopy(w0, k * n), *wb = fcopy(b0, n);
                float *gw = fcopy(w0, k * n), *gb = fcopy(b0, n);
                t->linear_bwd_weight((int32_t)rows, (int32_t)n, (int32_t)k, pm, dy, ww,
                                     with_db ? wb : NULL, accumulate);
                if (!t->conv_bwd_weight(&d, images, x, dy, gw, with_db ? gb : NULL,
                                        accumulate)) {
                    EXPECT(t != ref && n < 16 && !memcmp(gw, w0, sizeof(float) * (size_t)(k * n)),
                           "%s declined shape %zu or wrote", t->name, si);
                } else {
                    EXPECT(!memcmp(gw, ww, sizeof(float) * (size_t)(k * n)) &&
                               !memcmp(gb, wb, sizeof(float) * (size_t)n),
                           "%s conv_bwd_weight shape %zu mode %d: bits differ from im2col + "
                           "linear_bwd_weight", t->name, si, mode);
                    done++;
                }
                free(ww), free(wb), free(gw), free(gb);
            }
        }
        free(x), free(dy), free(w0), free(b0), free(pm);
    }
    ck_assert_int_ge(done, runs * 4 * ntables * 2 / 3);
}
END_TEST

/* col2im of an unpadded convolution: each position's patch gradients added to dx, in
 * position order, as nn/conv.c's scatter_patch adds them. */
static void col2im_of(const frl_conv_dims *d, int32_t images, const float *dp, float *dx)
{
    for (int32_t i = 0; i < images; i++)
        for (int32_t oh = 0; oh < d->out_h; oh++)
            for (int32_t ow = 0; ow < d->out_w; ow++)
                for (int32_t ki = 0; ki < d->kh; ki++)
                    for (int32_t kj = 0; kj < d->kw; kj++)
                        for (int32_t c = 0; c < d->in_c; c++)
                            dx[(((int64_t)i * d->in_h + oh * d->stride + ki) * d->in_w +
                                ow * d->stride + kj) * d->in_c + c] += *dp++;
}

/* wt's in_c x out_c block of each kernel position transposed, as conv_bwd_input takes it. */
static float *blocks_transposed(const frl_conv_dims *d, const float *wt)
{
    int64_t n = d->out_c, ch = d->in_c, kp = (int64_t)d->kh * d->kw;
    float *wtt = fbuf(kp * ch * n);
    for (int64_t p = 0; p < kp; p++)
        for (int64_t c = 0; c < ch; c++)
            for (int64_t j = 0; j < n; j++)
                wtt[(p * n + j) * ch + c] = wt[(p * ch + c) * n + j];
    return wtt;
}

/* Every table's conv_bwd_input against the same table's linear_bwd_input and col2im,
 * bit for bit, added onto a random dx (so +0 and -0 and the order of the additions
 * show), with 1-3 images and with 19: more than a tile's rows, which a table tiles down
 * when an image's output is small both ways, and a remainder. */
START_TEST(conv_bwd_input_is_col2im_bit_for_bit)
{
    rng_seed(23);
    int done = 0, declined = 0, runs = 0;
    for (size_t si = 0; si < 2 * COUNT(conv_shapes); si++) {
        frl_conv_dims d;
        const int32_t images = conv_case(si, &d);
        if (sanitizer_skips(&d, images))
            continue;
        runs++;
        int64_t in = (int64_t)images * d.in_h * d.in_w * d.in_c, n = d.out_c;
        int64_t rows = (int64_t)images * d.out_h * d.out_w, k = (int64_t)d.kh * d.kw * d.in_c;
        float *dy = frand(rows * n), *wt = frand(k * n), *dx0 = frand(in);
        float *wtt = blocks_transposed(&d, wt), *dp = fbuf(rows * k);
        for (int ti = 0; ti < ntables; ti++) {
            const frl_kernels *t = tables[ti];
            float *want = fcopy(dx0, in), *got = fcopy(dx0, in);
            t->linear_bwd_input((int32_t)rows, (int32_t)n, (int32_t)k, dy, wt, dp);
            col2im_of(&d, images, dp, want);
            if (!t->conv_bwd_input(&d, images, dy, wtt, got)) {
                EXPECT(t != ref && d.in_c < 16 && !memcmp(got, dx0, sizeof(float) * (size_t)in),
                       "%s declined shape %zu or wrote", t->name, si);
                declined++;
            } else {
                EXPECT(!memcmp(got, want, sizeof(float) * (size_t)in),
                       "%s conv_bwd_input shape %zu, %d images: bits differ from "
                       "linear_bwd_input + col2im", t->name, si, (int)images);
                done++;
            }
            free(want), free(got);
        }
        free(dy), free(wt), free(dx0), free(wtt), free(dp);
    }
    /* the scalar table ran every shape, each SIMD table the 6 with 16 channels or more
     * (with 1-3 images, and 19 but where the sanitizer builds leave those out) */
    ck_assert_int_ge(done, runs + ntested * 10);
    if (ntested)
        ck_assert_int_gt(declined, 0);
}
END_TEST

START_TEST(table_list)
{
    const frl_kernels *const *all = frl_kernels_all();
    ck_assert_ptr_nonnull(all[0]);
    ck_assert_str_eq(all[0]->name, "scalar");
    ck_assert_int_eq(frl_kernels_supported(all[0]), 1);
    int n = 0;
    for (; all[n]; n++) {
        ck_assert(all[n]->linear_fwd != NULL);
        ck_assert(all[n]->conv_fwd != NULL && all[n]->conv_bwd_weight != NULL &&
                  all[n]->conv_bwd_input != NULL);
        ck_assert(all[n]->linear_bwd_input != NULL);
        ck_assert(all[n]->linear_bwd_weight != NULL);
        ck_assert(all[n]->act_bwd != NULL);
        ck_assert(all[n]->sum_squares != NULL);
        ck_assert(all[n]->transpose != NULL);
        ck_assert(all[n]->adam != NULL);
        ck_assert(all[n]->gru_fwd != NULL && all[n]->gru_bwd != NULL);
        ck_assert(all[n]->lstm_fwd != NULL && all[n]->lstm_bwd != NULL);
    }
#if defined(__x86_64__) && defined(__GNUC__)
    ck_assert_int_eq(n, 3);
    ck_assert_str_eq(all[1]->name, "avx2");
    ck_assert_str_eq(all[2]->name, "avx512");
#endif
    ck_assert_int_eq(frl_kernels_supported(NULL), 0);
}
END_TEST

/* The fast path is taken where the CPU has it (main() cleared FRL_KERNELS). */
START_TEST(best_table_chosen)
{
    ck_assert_str_eq(frl_kernels_get()->name, expected_best());
    ck_assert_ptr_eq(frl_kernels_get(), frl_kernels_get());
    ck_assert_ptr_eq(frl_kernels_select(NULL), frl_kernels_get());
    ck_assert_ptr_eq(frl_kernels_select(""), frl_kernels_get());
    ck_assert_str_eq(frl_kernels_select("scalar")->name, "scalar");
    ck_assert_str_eq(frl_kernels_select("no-such-table")->name, expected_best());
    const frl_kernels *const *all = frl_kernels_all();
    for (int i = 0; all[i]; i++) /* a table the CPU cannot run is never handed out */
        ck_assert_str_eq(frl_kernels_select(all[i]->name)->name,
                         frl_kernels_supported(all[i]) ? all[i]->name : expected_best());
}
END_TEST

static void *get_table(void *arg)
{
    (void)arg;
    return (void *)frl_kernels_get();
}

START_TEST(first_use_is_thread_safe)
{
    pthread_t th[8];
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, get_table, NULL), 0);
    for (int i = 0; i < 8; i++) {
        void *got = NULL;
        ck_assert_int_eq(pthread_join(th[i], &got), 0);
        ck_assert_ptr_eq(got, frl_kernels_get());
    }
}
END_TEST

/* The table a fresh process picks with FRL_KERNELS=value: this program re-run with
 * --print-kernels (the choice is made once per process, so it needs a new one). */
static void kernels_in_child(const char *value, char *out, size_t cap)
{
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]);
        setenv("FRL_KERNELS", value, 1);
        execl("/proc/self/exe", "test_kernels", "--print-kernels", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    size_t len = 0;
    ssize_t r;
    while (len + 1 < cap && (r = read(fd[0], out + len, cap - 1 - len)) > 0)
        len += (size_t)r;
    out[len] = '\0';
    close(fd[0]);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char *nl = strchr(out, '\n');
    if (nl)
        *nl = '\0';
}

START_TEST(env_var_honoured)
{
    char got[64];
    kernels_in_child("scalar", got, sizeof got);
    ck_assert_str_eq(got, "scalar");
    kernels_in_child("bogus", got, sizeof got);
    ck_assert_str_eq(got, expected_best());
    const frl_kernels *const *all = frl_kernels_all();
    for (int i = 0; all[i]; i++) {
        kernels_in_child(all[i]->name, got, sizeof got);
        ck_assert_str_eq(got, frl_kernels_supported(all[i]) ? all[i]->name : expected_best());
    }
}
END_TEST

/* ---- main ---------------------------------------------------------------------------- */

/* Why this CPU cannot run a table, for the log. */
static const char *skip_reason(const frl_kernels *t)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2"))
        return "CPU lacks avx2";
    if (!__builtin_cpu_supports("fma"))
        return "CPU lacks fma";
    if (strcmp(t->name, "avx512") == 0 && !__builtin_cpu_supports("avx512f"))
        return "CPU lacks avx512f";
#endif
    (void)t;
    return "not supported here";
}

/* The learner computes input gradients as forward products with the untransposed
 * weights (lib/nn/mlp.c): in every table that must give linear_bwd_input's bits. */
START_TEST(fwd_on_untransposed_weights_is_bwd_input)
{
    const int32_t rows[] = {1, 2, 4, 7, 13, 64, 256};
    rng_seed(9);
    for (int ti = 0; ti < ntables; ti++)
        for (size_t di = 0; di < COUNT(det_kn); di++)
            for (size_t mi = 0; mi < COUNT(rows); mi++) {
                const int32_t k = det_kn[di][0], n = det_kn[di][1], m = rows[mi];
                float *dy = frand((int64_t)m * n), *wt = frand((int64_t)k * n);
                float *w = fbuf((int64_t)n * k), *a = fbuf((int64_t)m * k), *b = fbuf((int64_t)m * k);
                for (int32_t p = 0; p < k; p++)
                    for (int32_t j = 0; j < n; j++)
                        w[(int64_t)j * k + p] = wt[(int64_t)p * n + j];
                poison(a, (int64_t)m * k);
                poison(b, (int64_t)m * k);
                tables[ti]->linear_bwd_input(m, n, k, dy, wt, a);
                tables[ti]->linear_fwd(m, k, n, dy, w, NULL, b, FRL_NN_LINEAR);
                EXPECT(memcmp(a, b, (size_t)m * k * sizeof(float)) == 0,
                       "%s m=%d n=%d k=%d: dy.W differs from bwd_input", tables[ti]->name, m,
                       n, k);
                free(dy), free(wt), free(w), free(a), free(b);
            }
}
END_TEST

/* ThreadSanitizer finds races, and only the table's first use runs on several threads:
 * under it the single-threaded math (a minute there) is left to the plain and ASan
 * builds, which run every case. */
#define KERNELS_THREADS_ONLY FRL_TEST_TSAN

static Suite *kernels_suite(void)
{
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, table_list);
    tcase_add_test(tc, best_table_chosen);
    tcase_add_test(tc, first_use_is_thread_safe);
    tcase_add_test(tc, env_var_honoured);
    if (KERNELS_THREADS_ONLY) {
        printf("kernels: a ThreadSanitizer build runs the table cases only; the math cases "
               "start no threads (the plain and ASan builds run them)\n");
        suite_add_tcase(s, tc);
        return s;
    }
    tcase_add_test(tc, fwd_matches_reference);
    tcase_add_test(tc, conv_fwd_is_im2col_bit_for_bit);
    tcase_add_test(tc, conv_bwd_weight_is_im2col_bit_for_bit);
    tcase_add_test(tc, conv_bwd_input_is_col2im_bit_for_bit);
    tcase_add_test(tc, bwd_input_matches_reference);
    tcase_add_test(tc, bwd_weight_matches_reference);
    tcase_add_test(tc, act_bwd_matches_reference);
    tcase_add_test(tc, empty_dims_follow_contract);
    tcase_add_test(tc, activations_accurate);
    tcase_add_test(tc, split_batches_change_no_bit);
    tcase_add_test(tc, single_rows_match_batch);
    tcase_add_test(tc, fwd_on_untransposed_weights_is_bwd_input);
    tcase_add_test(tc, transpose_matches_scalar);
    tcase_add_test(tc, sum_squares_matches_reference);
    tcase_add_test(tc, grad_norm_survives_huge_elements);
    tcase_add_test(tc, adam_matches_reference);
    tcase_add_test(tc, adam_flushes_subnormal_moments);
    tcase_add_test(tc, adam_keeps_an_overflowed_v_finite);
    tcase_add_test(tc, gru_fwd_matches_reference);
    tcase_add_test(tc, gru_bwd_matches_reference);
    tcase_add_test(tc, lstm_fwd_matches_reference);
    tcase_add_test(tc, lstm_bwd_matches_reference);
    tcase_add_test(tc, gate_activations_accurate);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--print-kernels") == 0) {
        printf("%s\n", frl_kernels_get()->name);
        return 0;
    }
    /* The tests choose tables themselves; an inherited FRL_KERNELS would change the
     * answer of best_table_chosen. */
    unsetenv("FRL_KERNELS");
    /* FRL_TEST_SCALAR_ONLY=1 leaves the SIMD tables out: what a CPU without them checks
     * (the scalar table against the float64 references alone), on any CPU. */
    const char *only = getenv("FRL_TEST_SCALAR_ONLY");
    const int scalar_only = only && strcmp(only, "1") == 0;
    const frl_kernels *const *all = frl_kernels_all();
    tables[ntables++] = ref = all[0];
    printf("kernels: scalar: tested against float64\n");
    for (int i = 1; all[i]; i++) {
        if (!scalar_only && frl_kernels_supported(all[i])) {
            tables[ntables++] = tested[ntested++] = all[i];
            printf("kernels: %s: tested against float64 and scalar\n", all[i]->name);
        } else {
            printf("kernels: %s: skipped, %s\n", all[i]->name,
                   scalar_only ? "FRL_TEST_SCALAR_ONLY=1" : skip_reason(all[i]));
        }
    }
    fflush(stdout);
    return frl_test_run(kernels_suite());
}
