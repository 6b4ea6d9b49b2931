/* The recurrent cores (lib/nn/rnn.h) against float64 references.
 *
 * - Gradients: for GRU and LSTM cores of several small shapes (one wide enough for the
 *   SIMD tables' full vectors and tails), with episode starts in mid-sequence and a
 *   nonzero state0, the float32 gradient of frl_rnn_seq_backward for L = sum w . out is
 *   compared, parameter by parameter and gate block by gate block (wx, wh, bx, bh), and
 *   for dx, with central differences of an independent float64 forward written from
 *   PyTorch's gate equations. With bptt = k < T the reference is the truncated objective:
 *   at each step t > 0 with t % k == 0 the incoming state is the one the unperturbed
 *   parameters give (detached). Each check also shows that it could fail: the truncated
 *   objective's gradient differs from the whole one, and the resets change the gradient.
 * - Every kernel table this CPU runs gives gradients within the same bounds.
 * - Consistency: frl_rnn_step over the steps gives the sequence forward's bits and final
 *   state; a row that resets ignores its state (NaN there included).
 * - Workspaces: the sequence's arrays are aligned, disjoint and inside the size
 *   frl_rnn_seq_floats gives; nothing is written past it (a poisoned guard), nothing
 *   unwritten is read (the workspace starts as NaN), and T = 1, B = 1 work. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "nn/kernels.h"
#include "nn/rnn.h"
#include "test_util.h"

#define MAXH 32
#define MAXIN 16
#define PBASE 7   /* the core's parameters start here in the flat vector */
#define PTAIL 5   /* and other parameters follow them */
#define GUARD 64  /* floats of poisoned guard after every workspace */

/* Tolerance of a float32 gradient g against the float64 finite difference fd:
 * |g - fd| <= TOL_REL max(1, |fd|) + TOL_ABS (at least 2.5e-5).
 * The finite difference is exact to about 1e-9 here (h = 1e-6 in double: truncation
 * error ~h^2 |L'''|, cancellation ~1e-16 |L| / h with |L| < 100), so the bound is for
 * float32 alone: each forward and backward value carries a few ulps (6e-8 relative each)
 * from the products over in + h terms and the transcendental functions, compounded over
 * at most T = 7 steps and summed over T B rows for a weight gradient. The worst error
 * observed, printed per case, is about 3e-7 of max(1, |fd|) on every table (gcc and
 * clang, release and sanitized builds), so the bound has a margin of some 80. The
 * 2e-3 max(1, |fd|) + 1e-4 one could allow for float32 would hide the mistakes that
 * matter here: a gradient that leaks across a reset or a truncation point carries only
 * a later step's share, often 1e-3 or less. The checks below also require every gate
 * block's gradient to exceed 40 times the bound's floor somewhere, and the truncated and
 * the whole objectives' gradients (and those with and without the resets) to differ by
 * more than 20 times the bound. */
#define TOL_REL 2e-5
#define TOL_ABS 5e-6

static double tol(double fd) { return TOL_REL * fmax(1.0, fabs(fd)) + TOL_ABS; }

/* ---- the kernel tables this CPU runs ---- */

static const frl_kernels *tables[8];
static int ntables;

static void find_tables(void)
{
    if (ntables)
        return;
    for (const frl_kernels *const *t = frl_kernels_all(); *t && ntables < 8; t++)
        if (frl_kernels_supported(*t))
            tables[ntables++] = *t;
}

/* ---- poisoned buffers ---- */

static const uint32_t POISON = 0x7fc5a5a5u; /* a quiet NaN with a payload */

static void poison(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        memcpy(p + i, &POISON, sizeof POISON);
}

static int is_poison(const float *p)
{
    uint32_t u;
    memcpy(&u, p, sizeof u);
    return u == POISON;
}

/* n floats, 64-byte aligned, and GUARD more after them; all poisoned. */
static float *ws_alloc(size_t n)
{
    size_t bytes = ((n + GUARD) * sizeof(float) + 63) & ~(size_t)63;
    float *p = aligned_alloc(64, bytes);
    ck_assert_ptr_nonnull(p);
    poison(p, n + GUARD);
    return p;
}

static void ws_check_guard(const float *ws, size_t n, const char *what)
{
    for (size_t i = 0; i < GUARD; i++)
        ck_assert_msg(is_poison(ws + n + i), "%s: float %zu past the %zu of the workspace "
                      "was written", what, i, n);
}

/* ---- a problem: a core, its parameters, a sequence ---- */

typedef struct problem {
    const char *name;
    frl_rnn r;
    int32_t T, B, sw;
    size_t np;          /* PBASE + the core's parameters + PTAIL */
    float *params;      /* [np] */
    float *x;           /* [T B x in] */
    float *state0;      /* [B x sw] */
    uint8_t *starts;    /* [T x B] or NULL */
    float *w;           /* [T B x h]: the loss weights, dL/dout */
} problem;

/* Starts: column 0 at T / 2, column 1 at 0 (state0 unused) and at T - 2, column 2 at 1
 * and T - 2; with bptt = 3 and T = 7 column 0's start falls on a truncation point. */
static int start_at(int32_t T, int32_t t, int32_t b)
{
    switch (b) {
    case 0: return T > 1 && t == T / 2;
    case 1: return t == 0 || (T > 3 && t == T - 2);
    case 2: return t == 1 || (T > 3 && t == T - 2);
    default: return 0;
    }
}

static void problem_make(problem *P, const char *name, frl_rnn_kind kind, int32_t in, int32_t h,
                         int32_t T, int32_t B, int with_starts, uint64_t seed)
{
    ck_assert(in <= MAXIN && h <= MAXH);
    memset(P, 0, sizeof *P);
    P->name = name;
    frl_rnn_init(&P->r, kind, in, h, PBASE);
    ck_assert_int_eq(P->r.gates, kind == FRL_RNN_LSTM ? 4 : 3);
    ck_assert_uint_eq(P->r.num_params, (size_t)P->r.gates * (size_t)h * (size_t)(in + h + 2));
    ck_assert_uint_eq(P->r.off_wx, PBASE);
    P->T = T;
    P->B = B;
    P->sw = frl_rnn_state_w(&P->r);
    ck_assert_int_eq(P->sw, kind == FRL_RNN_LSTM ? 2 * h : h);
    P->np = PBASE + P->r.num_params + PTAIL;
    size_t n = (size_t)T * (size_t)B;
    P->params = malloc(sizeof(float) * P->np);
    P->x = malloc(sizeof(float) * n * (size_t)in);
    P->state0 = malloc(sizeof(float) * (size_t)B * (size_t)P->sw);
    P->w = malloc(sizeof(float) * n * (size_t)h);
    P->starts = with_starts ? malloc(n) : NULL;
    ck_assert(P->params && P->x && P->state0 && P->w && (P->starts || !with_starts));
    frl_rng rng = frl_rng_stream(seed, 0x524e4e);
    size_t gw = (size_t)P->r.gates * (size_t)h;
    for (size_t i = 0; i < P->np; i++) {
        int bias = i >= P->r.off_bx && i < P->r.off_bx + 2 * gw;
        P->params[i] = (float)frl_rng_uniform_range(&rng, bias ? -0.5 : -0.7, bias ? 0.5 : 0.7);
    }
    for (size_t i = 0; i < n * (size_t)in; i++)
        P->x[i] = (float)frl_rng_uniform_range(&rng, -1, 1);
    for (int32_t b = 0; b < B; b++)
        for (int32_t j = 0; j < P->sw; j++) /* h in (-0.9, 0.9), an LSTM's c wider */
            P->state0[b * P->sw + j] =
                (float)frl_rng_uniform_range(&rng, j < h ? -0.9 : -1.5, j < h ? 0.9 : 1.5);
    for (size_t i = 0; i < n * (size_t)h; i++)
        P->w[i] = (float)frl_rng_uniform_range(&rng, -1, 1);
    if (P->starts)
        for (int32_t t = 0; t < T; t++)
            for (int32_t b = 0; b < B; b++)
                P->starts[t * B + b] = (uint8_t)start_at(T, t, b);
}

static void problem_free(problem *P)
{
    free(P->params);
    free(P->x);
    free(P->state0);
    free(P->w);
    free(P->starts);
}

/* ---- float64 reference ---- */

static double sig_d(double v) { return 1.0 / (1.0 + exp(-v)); }

/* One step of one column: s [sw] (resets applied) is replaced by the new state. */
static void ref_cell(const frl_rnn *r, const double *p, const double *x, double *s)
{
    int32_t h = r->h, gw = r->gates * h;
    double a[4 * MAXH], g[4 * MAXH], hn[MAXH], cn[MAXH];
    for (int32_t j = 0; j < gw; j++) {
        double sx = p[r->off_bx + (size_t)j], sh = p[r->off_bh + (size_t)j];
        for (int32_t i = 0; i < r->in; i++)
            sx += x[i] * p[r->off_wx + (size_t)i * (size_t)gw + (size_t)j];
        for (int32_t i = 0; i < h; i++)
            sh += s[i] * p[r->off_wh + (size_t)i * (size_t)gw + (size_t)j];
        a[j] = sx;
        g[j] = sh;
    }
    for (int32_t j = 0; j < h; j++) {
        if (r->kind == FRL_RNN_GRU) {
            double rg = sig_d(a[j] + g[j]), z = sig_d(a[h + j] + g[h + j]);
            double n = tanh(a[2 * h + j] + rg * g[2 * h + j]);
            hn[j] = (1 - z) * n + z * s[j];
        } else {
            double i = sig_d(a[j] + g[j]), f = sig_d(a[h + j] + g[h + j]);
            double gg = tanh(a[2 * h + j] + g[2 * h + j]), o = sig_d(a[3 * h + j] + g[3 * h + j]);
            cn[j] = f * s[h + j] + i * gg;
            hn[j] = o * tanh(cn[j]);
        }
    }
    memcpy(s, hn, sizeof(double) * (size_t)h);
    if (r->kind == FRL_RNN_LSTM)
        memcpy(s + h, cn, sizeof(double) * (size_t)h);
}

/* L = sum w . out over the sequence for parameters p and inputs x (double). detach
 * (or NULL): [T B x sw], the incoming states that replace the computed ones at every
 * step t > 0 with t % bptt == 0. incoming (or NULL) receives each step's incoming state
 * before its reset, out (or NULL) the outputs. starts: as in the problem, or NULL. */
static double ref_loss(const problem *P, const double *p, const double *x,
                       const uint8_t *starts, int32_t bptt, const double *detach,
                       double *incoming, double *out)
{
    const frl_rnn *r = &P->r;
    int32_t T = P->T, B = P->B, h = r->h, sw = P->sw;
    double loss = 0, s[2 * MAXH];
    for (int32_t b = 0; b < B; b++) {
        for (int32_t j = 0; j < sw; j++)
            s[j] = P->state0[b * sw + j];
        for (int32_t t = 0; t < T; t++) {
            size_t row = (size_t)t * (size_t)B + (size_t)b;
            if (detach && t > 0 && t % bptt == 0)
                memcpy(s, detach + row * (size_t)sw, sizeof(double) * (size_t)sw);
            if (incoming)
                memcpy(incoming + row * (size_t)sw, s, sizeof(double) * (size_t)sw);
            if (starts && starts[row])
                memset(s, 0, sizeof(double) * (size_t)sw);
            ref_cell(r, p, x + row * (size_t)r->in, s);
            for (int32_t j = 0; j < h; j++)
                loss += (double)P->w[row * (size_t)h + (size_t)j] * s[j];
            if (out)
                memcpy(out + row * (size_t)h, s, sizeof(double) * (size_t)h);
        }
    }
    return loss;
}

/* Central differences of the (truncated, if bptt < T) objective: gp [num_params] over
 * the core's parameters, gx [T B x in] over the inputs. */
static void ref_gradients(const problem *P, const uint8_t *starts, int32_t bptt, double *gp,
                          double *gx)
{
    size_t nx = (size_t)P->T * (size_t)P->B * (size_t)P->r.in;
    double *p = malloc(sizeof(double) * P->np), *x = malloc(sizeof(double) * nx);
    double *inc = malloc(sizeof(double) * (size_t)P->T * (size_t)P->B * (size_t)P->sw);
    ck_assert(p && x && inc);
    for (size_t i = 0; i < P->np; i++)
        p[i] = P->params[i];
    for (size_t i = 0; i < nx; i++)
        x[i] = P->x[i];
    ref_loss(P, p, x, starts, bptt, NULL, inc, NULL); /* the unperturbed states */
    const double *det = bptt < P->T ? inc : NULL, eps = 1e-6;
    for (size_t j = 0; j < P->r.num_params; j++) {
        double *v = p + P->r.off_wx + j, keep = *v;
        *v = keep + eps;
        double up = ref_loss(P, p, x, starts, bptt, det, NULL, NULL);
        *v = keep - eps;
        double dn = ref_loss(P, p, x, starts, bptt, det, NULL, NULL);
        *v = keep;
        gp[j] = (up - dn) / (2 * eps);
    }
    for (size_t j = 0; j < nx; j++) {
        double keep = x[j];
        x[j] = keep + eps;
        double up = ref_loss(P, p, x, starts, bptt, det, NULL, NULL);
        x[j] = keep - eps;
        double dn = ref_loss(P, p, x, starts, bptt, det, NULL, NULL);
        x[j] = keep;
        gx[j] = (up - dn) / (2 * eps);
    }
    free(p);
    free(x);
    free(inc);
}

/* ---- the library's gradient ---- */

/* Forward and backward with table k in a poisoned workspace: grads [np] (only the core's
 * range written, checked), dx [T B x in], out [T B x h]. Also checks that the guard
 * after the workspace, dout and x stay untouched, that a second backward (the forward's
 * arrays intact) accumulating into zeros gives the same bits, and that accumulating
 * into nonzero gradients adds. */
static void lib_gradients(const problem *P, const frl_kernels *k, int32_t bptt, float *grads,
                          float *dx, float *out)
{
    const frl_rnn *r = &P->r;
    int32_t T = P->T, B = P->B;
    size_t n = (size_t)T * (size_t)B, nws = frl_rnn_seq_floats(r, T, B, 1);
    size_t nx = n * (size_t)r->in, nout = n * (size_t)r->h;
    size_t lo = r->off_wx, hi = r->off_wx + r->num_params;
    float *ws = ws_alloc(nws), *g2 = malloc(sizeof(float) * P->np);
    float *wcopy = malloc(sizeof(float) * nout), *xcopy = malloc(sizeof(float) * nx);
    ck_assert(g2 && wcopy && xcopy);
    memcpy(wcopy, P->w, sizeof(float) * nout);
    memcpy(xcopy, P->x, sizeof(float) * nx);
    frl_rnn_seq s;
    frl_rnn_seq_layout(r, T, B, 1, ws, &s);
    frl_rnn_seq_forward(r, k, P->params, P->x, P->state0, P->starts, &s);
    memcpy(out, s.out, sizeof(float) * nout);
    const float sentinel = 1234.5f;
    for (size_t i = 0; i < P->np; i++)
        grads[i] = i >= lo && i < hi ? NAN : sentinel;
    poison(dx, nx);
    frl_rnn_seq_backward(r, k, P->params, grads, 0, P->x, P->starts, bptt, P->w, dx, &s);
    ws_check_guard(ws, nws, P->name);
    for (size_t i = 0; i < P->np; i++)
        if (i < lo || i >= hi)
            ck_assert_msg(grads[i] == sentinel, "%s %s: gradient %zu outside the core written",
                          P->name, k->name, i);
    ck_assert_msg(memcmp(wcopy, P->w, sizeof(float) * nout) == 0, "dout changed");
    ck_assert_msg(memcmp(xcopy, P->x, sizeof(float) * nx) == 0, "x changed");
    ck_assert_msg(memcmp(out, s.out, sizeof(float) * nout) == 0, "backward changed out");

    /* accumulate = 1 into zeros: the same bits (dx NULL: nothing written there) */
    for (size_t i = 0; i < P->np; i++)
        g2[i] = i >= lo && i < hi ? 0.0f : sentinel;
    frl_rnn_seq_backward(r, k, P->params, g2, 1, P->x, P->starts, bptt, P->w, NULL, &s);
    ck_assert_msg(memcmp(g2, grads, sizeof(float) * P->np) == 0,
                  "%s %s: accumulating into zeros differs from writing", P->name, k->name);
    /* into nonzero values: adds */
    for (size_t i = lo; i < hi; i++)
        g2[i] = 0.25f;
    frl_rnn_seq_backward(r, k, P->params, g2, 1, P->x, P->starts, bptt, P->w, NULL, &s);
    for (size_t i = lo; i < hi; i++)
        ck_assert_msg(fabs((double)g2[i] - (0.25 + grads[i])) <= 1e-5 * (1 + fabs(grads[i])),
                      "%s %s: accumulate: %g + %g gave %g", P->name, k->name, 0.25,
                      (double)grads[i], (double)g2[i]);
    ws_check_guard(ws, nws, P->name);
    free(ws);
    free(g2);
    free(wcopy);
    free(xcopy);
}

/* ---- the gradient check ---- */

static const char *group_name[4] = {"wx", "wh", "bx", "bh"};

/* The group (0 wx, 1 wh, 2 bx, 3 bh), gate block and, for a weight, input row of the
 * core's parameter j (relative to off_wx). */
static void param_place(const frl_rnn *r, size_t j, int *group, int *gate, int *row)
{
    size_t gw = (size_t)r->gates * (size_t)r->h, a = (size_t)r->in * gw, b = (size_t)r->h * gw;
    size_t col;
    if (j < a) {
        *group = 0, *row = (int)(j / gw), col = j % gw;
    } else if (j < a + b) {
        *group = 1, *row = (int)((j - a) / gw), col = (j - a) % gw;
    } else if (j < a + b + gw) {
        *group = 2, *row = 0, col = j - a - b;
    } else {
        *group = 3, *row = 0, col = j - a - b - gw;
    }
    *gate = (int)(col / (size_t)r->h);
}

static const char *gate_name(const frl_rnn *r, int gate)
{
    static const char *gru[3] = {"r", "z", "n"}, *lstm[4] = {"i", "f", "g", "o"};
    return r->kind == FRL_RNN_LSTM ? lstm[gate] : gru[gate];
}

/* The largest difference between two reference gradients, in units of the tolerance. */
static double max_diff_tol(const double *a, const double *b, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(a[i] - b[i]) / tol(a[i]));
    return worst;
}

/* Every runnable table's gradient of P (bptt) against the reference's finite
 * differences; the forward's outputs against the reference's too. */
static void check_gradients(const problem *P, int32_t bptt)
{
    find_tables();
    const frl_rnn *r = &P->r;
    size_t np = r->num_params, n = (size_t)P->T * (size_t)P->B;
    size_t nx = n * (size_t)r->in, nout = n * (size_t)r->h;
    double *fd = malloc(sizeof(double) * np), *fdx = malloc(sizeof(double) * nx);
    double *ref_out = malloc(sizeof(double) * nout), *p = malloc(sizeof(double) * P->np);
    double *xd = malloc(sizeof(double) * nx);
    float *grads = malloc(sizeof(float) * P->np), *dx = malloc(sizeof(float) * nx);
    float *out = malloc(sizeof(float) * nout);
    ck_assert(fd && fdx && ref_out && p && xd && grads && dx && out);
    ref_gradients(P, P->starts, bptt, fd, fdx);
    for (size_t i = 0; i < P->np; i++)
        p[i] = P->params[i];
    for (size_t i = 0; i < nx; i++)
        xd[i] = P->x[i];
    ref_loss(P, p, xd, P->starts, P->T, NULL, NULL, ref_out);

    /* Every gate block of every group matters in this problem (else its check is empty). */
    double block_max[4][4] = {{0}};
    for (size_t j = 0; j < np; j++) {
        int g, gate, row;
        param_place(r, j, &g, &gate, &row);
        block_max[g][gate] = fmax(block_max[g][gate], fabs(fd[j]));
    }
    for (int g = 0; g < 4; g++)
        for (int gate = 0; gate < r->gates; gate++)
            ck_assert_msg(block_max[g][gate] > 1e-3, "%s: d/d%s_%s is at most %g: no check",
                          P->name, group_name[g], gate_name(r, gate), block_max[g][gate]);
    double dx_max = 0;
    for (size_t i = 0; i < nx; i++)
        dx_max = fmax(dx_max, fabs(fdx[i]));
    ck_assert_msg(dx_max > 1e-3, "%s: dx is at most %g", P->name, dx_max);

    /* The check can fail: the truncation and the resets each change the gradient. */
    double *alt = malloc(sizeof(double) * np), *altx = malloc(sizeof(double) * nx);
    ck_assert(alt && altx);
    if (bptt < P->T) {
        ref_gradients(P, P->starts, P->T, alt, altx);
        double d = max_diff_tol(fd, alt, np);
        ck_assert_msg(d > 20, "%s: truncation changes the gradient by only %.3g tolerances",
                      P->name, d);
    }
    if (P->starts) {
        ref_gradients(P, NULL, bptt, alt, altx);
        double d = max_diff_tol(fd, alt, np);
        ck_assert_msg(d > 20, "%s: the resets change the gradient by only %.3g tolerances",
                      P->name, d);
    }
    free(alt);
    free(altx);

    for (int ti = 0; ti < ntables; ti++) {
        const frl_kernels *k = tables[ti];
        lib_gradients(P, k, bptt, grads, dx, out);
        double worst_out = 0, worst_dx = 0, worst_all = 0;
        for (size_t i = 0; i < nout; i++) {
            double e = fabs(out[i] - ref_out[i]);
            ck_assert_msg(e <= 1e-5, "%s %s: out[%zu] %.9g, reference %.9g", P->name, k->name,
                          i, (double)out[i], ref_out[i]);
            worst_out = fmax(worst_out, e);
        }
        for (size_t j = 0; j < np; j++) {
            int g, gate, row;
            param_place(r, j, &g, &gate, &row);
            double got = grads[r->off_wx + j], e = fabs(got - fd[j]);
            ck_assert_msg(e <= tol(fd[j]), "%s (bptt %d) %s: d/d%s_%s[%d][%zu]: library %.9g, "
                          "finite difference %.9g", P->name, (int)bptt, k->name, group_name[g],
                          gate_name(r, gate), row, (size_t)(j % (size_t)r->h), got, fd[j]);
            worst_all = fmax(worst_all, e / fmax(1, fabs(fd[j])));
        }
        for (size_t i = 0; i < nx; i++) {
            double e = fabs(dx[i] - fdx[i]);
            ck_assert_msg(e <= tol(fdx[i]), "%s (bptt %d) %s: dx[%zu]: library %.9g, finite "
                          "difference %.9g", P->name, (int)bptt, k->name, i, (double)dx[i],
                          fdx[i]);
            worst_dx = fmax(worst_dx, e / fmax(1, fabs(fdx[i])));
        }
        printf("%-26s bptt %d %-7s %4zu params: worst error / max(1,|fd|): params %.1e, "
               "dx %.1e; out %.1e\n", P->name, (int)bptt, k->name, np, worst_all, worst_dx,
               worst_out);
    }
    fflush(stdout);
    free(fd);
    free(fdx);
    free(ref_out);
    free(p);
    free(xd);
    free(grads);
    free(dx);
    free(out);
}

static void grad_case(const char *name, frl_rnn_kind kind, int32_t in, int32_t h, int32_t T,
                      int32_t B, int starts, int32_t bptt, uint64_t seed)
{
    problem P;
    problem_make(&P, name, kind, in, h, T, B, starts, seed);
    check_gradients(&P, bptt);
    problem_free(&P);
}

/* The whole sequence (bptt >= T), resets in mid-sequence and at t = 0. */
START_TEST(gru_gradient_across_resets)
{
    grad_case("gru in4 h3 T6 B3 starts", FRL_RNN_GRU, 4, 3, 6, 3, 1, 6, 1);
    grad_case("gru in5 h5 T7 B2 starts", FRL_RNN_GRU, 5, 5, 7, 2, 1, 100, 2);
    grad_case("gru in3 h2 T4 B3", FRL_RNN_GRU, 3, 2, 4, 3, 0, 4, 3);
}
END_TEST

START_TEST(lstm_gradient_across_resets)
{
    grad_case("lstm in4 h3 T6 B3 starts", FRL_RNN_LSTM, 4, 3, 6, 3, 1, 6, 11);
    grad_case("lstm in5 h5 T7 B2 starts", FRL_RNN_LSTM, 5, 5, 7, 2, 1, 100, 12);
    grad_case("lstm in3 h2 T4 B3", FRL_RNN_LSTM, 3, 2, 4, 3, 0, 4, 13);
}
END_TEST

/* Truncated backpropagation: the gradient of the objective with the state detached at
 * every t % bptt == 0 (t > 0), with and without resets (one on a truncation point). */
START_TEST(gru_gradient_truncated)
{
    grad_case("gru in3 h5 T7 B2 starts", FRL_RNN_GRU, 3, 5, 7, 2, 1, 2, 21);
    grad_case("gru in5 h4 T7 B3 starts", FRL_RNN_GRU, 5, 4, 7, 3, 1, 3, 22);
    grad_case("gru in3 h2 T5 B2", FRL_RNN_GRU, 3, 2, 5, 2, 0, 1, 23);
    grad_case("gru in4 h3 T6 B2", FRL_RNN_GRU, 4, 3, 6, 2, 0, 4, 24);
}
END_TEST

START_TEST(lstm_gradient_truncated)
{
    grad_case("lstm in3 h5 T7 B2 starts", FRL_RNN_LSTM, 3, 5, 7, 2, 1, 2, 31);
    grad_case("lstm in5 h4 T7 B3 starts", FRL_RNN_LSTM, 5, 4, 7, 3, 1, 3, 32);
    grad_case("lstm in3 h2 T5 B2", FRL_RNN_LSTM, 3, 2, 5, 2, 0, 1, 33);
    grad_case("lstm in4 h3 T6 B2", FRL_RNN_LSTM, 4, 3, 6, 2, 0, 4, 34);
}
END_TEST

/* One row, one step; one row over a sequence with a reset. */
START_TEST(gradient_single_row_and_step)
{
    grad_case("gru in3 h4 T1 B1", FRL_RNN_GRU, 3, 4, 1, 1, 0, 1, 41);
    grad_case("lstm in3 h4 T1 B1", FRL_RNN_LSTM, 3, 4, 1, 1, 0, 1, 42);
    grad_case("gru in4 h3 T1 B3", FRL_RNN_GRU, 4, 3, 1, 3, 0, 1, 43);
    grad_case("lstm in4 h3 T1 B3", FRL_RNN_LSTM, 4, 3, 1, 3, 0, 1, 44);
    grad_case("gru in5 h5 T5 B1 starts", FRL_RNN_GRU, 5, 5, 5, 1, 1, 5, 45);
    grad_case("lstm in5 h5 T5 B1 starts", FRL_RNN_LSTM, 5, 5, 5, 1, 1, 3, 46);
}
END_TEST

/* h = 17: the SIMD tables' full vectors (8 or 16 floats) and their tails. */
START_TEST(gradient_wide)
{
    grad_case("gru in4 h17 T4 B2 starts", FRL_RNN_GRU, 4, 17, 4, 2, 1, 4, 51);
    grad_case("lstm in4 h17 T4 B2 starts", FRL_RNN_LSTM, 4, 17, 4, 2, 1, 3, 52);
}
END_TEST

/* ---- consistency of the step and the sequence ---- */

static void check_step_matches_seq(frl_rnn_kind kind, int32_t in, int32_t h, int32_t T,
                                   int32_t B, uint64_t seed)
{
    find_tables();
    problem P;
    problem_make(&P, kind == FRL_RNN_LSTM ? "lstm" : "gru", kind, in, h, T, B, 1, seed);
    const frl_rnn *r = &P.r;
    size_t hh = (size_t)h, sw = (size_t)P.sw, bb = (size_t)B;
    for (int ti = 0; ti < ntables; ti++) {
        const frl_kernels *k = tables[ti];
        /* the sequence, forward only, and with the training arrays: the same bits */
        size_t nws = frl_rnn_seq_floats(r, T, B, 0), nwt = frl_rnn_seq_floats(r, T, B, 1);
        float *ws = ws_alloc(nws), *wt = ws_alloc(nwt);
        frl_rnn_seq s, st;
        frl_rnn_seq_layout(r, T, B, 0, ws, &s);
        frl_rnn_seq_layout(r, T, B, 1, wt, &st);
        frl_rnn_seq_forward(r, k, P.params, P.x, P.state0, P.starts, &s);
        frl_rnn_seq_forward(r, k, P.params, P.x, P.state0, P.starts, &st);
        ws_check_guard(ws, nws, "forward");
        ws_check_guard(wt, nwt, "forward (training)");
        ck_assert(memcmp(s.out, st.out, sizeof(float) * (size_t)T * bb * hh) == 0);
        float *fin = malloc(sizeof(float) * bb * sw), *state = malloc(sizeof(float) * bb * sw);
        float *out = malloc(sizeof(float) * bb * hh);
        size_t nstep = frl_rnn_step_floats(r, B);
        float *work = ws_alloc(nstep);
        ck_assert(fin && state && out);
        frl_rnn_seq_final_state(r, &s, fin);
        memcpy(state, P.state0, sizeof(float) * bb * sw);
        for (int32_t t = 0; t < T; t++) {
            const uint8_t *reset = P.starts + (size_t)t * bb;
            for (size_t b = 0; b < bb; b++) /* a reset row's state is never read */
                if (reset[b])
                    poison(state + b * sw, sw);
            poison(out, bb * hh);
            frl_rnn_step(r, k, P.params, B, P.x + (size_t)t * bb * (size_t)in, state, reset,
                         out, work);
            ws_check_guard(work, nstep, "step");
            ck_assert_msg(memcmp(out, s.out + (size_t)t * bb * hh, sizeof(float) * bb * hh) == 0,
                          "%s %s: step %d differs from the sequence's", P.name, k->name, (int)t);
        }
        ck_assert_msg(memcmp(state, fin, sizeof(float) * bb * sw) == 0,
                      "%s %s: final state differs", P.name, k->name);
        /* the last step's output is the state's h */
        for (size_t b = 0; b < bb; b++)
            ck_assert(memcmp(state + b * sw, out + b * hh, sizeof(float) * hh) == 0);
        free(ws);
        free(wt);
        free(fin);
        free(state);
        free(out);
        free(work);
    }
    problem_free(&P);
}

START_TEST(step_matches_sequence)
{
    check_step_matches_seq(FRL_RNN_GRU, 4, 3, 6, 3, 61);
    check_step_matches_seq(FRL_RNN_LSTM, 4, 3, 6, 3, 62);
    check_step_matches_seq(FRL_RNN_GRU, 3, 17, 5, 3, 63);
    check_step_matches_seq(FRL_RNN_LSTM, 5, 17, 5, 3, 64);
    check_step_matches_seq(FRL_RNN_GRU, 3, 5, 1, 1, 65);
    check_step_matches_seq(FRL_RNN_LSTM, 3, 5, 1, 1, 66);
}
END_TEST

/* A reset row gives what a zero state gives, whatever its state held (NaN too); the
 * other rows are untouched by the flags; reset == NULL resets nothing. */
static void check_reset_row(frl_rnn_kind kind, uint64_t seed)
{
    find_tables();
    enum { B = 4 };
    problem P;
    problem_make(&P, "reset", kind, 3, 5, 1, B, 0, seed);
    const frl_rnn *r = &P.r;
    size_t h = 5, sw = (size_t)P.sw;
    uint8_t reset[B] = {1, 0, 1, 0}, none[B] = {0, 0, 0, 0};
    for (int ti = 0; ti < ntables; ti++) {
        const frl_kernels *k = tables[ti];
        float sa[B * 10], sb[B * 10], sc[B * 10], oa[B * 5], ob[B * 5], oc[B * 5];
        size_t nstep = frl_rnn_step_floats(r, B);
        float *work = ws_alloc(nstep);
        memcpy(sa, P.state0, sizeof(float) * B * sw);
        memcpy(sb, P.state0, sizeof(float) * B * sw);
        memcpy(sc, P.state0, sizeof(float) * B * sw);
        for (size_t b = 0; b < B; b++)
            if (reset[b]) {
                poison(sa + b * sw, sw);
                memset(sb + b * sw, 0, sizeof(float) * sw);
            }
        frl_rnn_step(r, k, P.params, B, P.x, sa, reset, oa, work);
        frl_rnn_step(r, k, P.params, B, P.x, sb, none, ob, work);
        ck_assert(memcmp(oa, ob, sizeof oa) == 0);
        ck_assert(memcmp(sa, sb, sizeof(float) * B * sw) == 0);
        for (size_t i = 0; i < B * h; i++)
            ck_assert(isfinite(oa[i]));
        /* NULL: no resets, the rows' own states */
        frl_rnn_step(r, k, P.params, B, P.x, sc, NULL, oc, work);
        for (size_t b = 0; b < B; b++)
            ck_assert((memcmp(oc + b * h, oa + b * h, sizeof(float) * h) == 0) == !reset[b]);
        ws_check_guard(work, nstep, "step");
        /* the sequence: a NaN state0 in a column that starts at t = 0 is never read */
        uint8_t starts[B] = {1, 0, 1, 0};
        float s0[B * 10];
        memcpy(s0, P.state0, sizeof(float) * B * sw);
        poison(s0, sw);
        poison(s0 + 2 * sw, sw);
        size_t nws = frl_rnn_seq_floats(r, 1, B, 1);
        float *ws = ws_alloc(nws);
        frl_rnn_seq s;
        frl_rnn_seq_layout(r, 1, B, 1, ws, &s);
        frl_rnn_seq_forward(r, k, P.params, P.x, s0, starts, &s);
        ck_assert(memcmp(s.out, oa, sizeof oa) == 0);
        free(ws);
        free(work);
    }
    problem_free(&P);
}

START_TEST(reset_row_ignores_state)
{
    check_reset_row(FRL_RNN_GRU, 71);
    check_reset_row(FRL_RNN_LSTM, 72);
}
END_TEST

/* ---- the sequence's workspace ---- */

typedef struct span {
    const char *name;
    const float *p;
    size_t n;
} span;

static void check_layout(frl_rnn_kind kind, int32_t in, int32_t h, int32_t T, int32_t B,
                         int training)
{
    frl_rnn r;
    frl_rnn_init(&r, kind, in, h, 0);
    int lstm = kind == FRL_RNN_LSTM;
    size_t nws = frl_rnn_seq_floats(&r, T, B, training);
    size_t n = (size_t)T * (size_t)B, b = (size_t)B, hh = (size_t)h, g = (size_t)r.gates;
    float *ws = ws_alloc(nws);
    frl_rnn_seq s;
    memset(&s, 0xff, sizeof s); /* every field must be set */
    frl_rnn_seq_layout(&r, T, B, training, ws, &s);
    ck_assert_int_eq(s.T, T);
    ck_assert_int_eq(s.B, B);
    span sp[13] = {
        {"gx", s.gx, n * g * hh}, {"hp", s.hp, n * hh}, {"gates", s.gates, n * (g + 1) * hh},
        {"out", s.out, n * hh}, {"gh", s.gh, b * g * hh}, {"cp", s.cp, n * hh},
        {"c", s.c, n * hh}, {"dgx", s.dgx, n * g * hh}, {"dgh", s.dgh, n * g * hh},
        {"dh", s.dh, b * hh}, {"dhp", s.dhp, b * hh}, {"dc", s.dc, b * hh},
        {"dcp", s.dcp, b * hh}};
    /* which arrays exist: cp, c, dc, dcp for an LSTM; d* when training; an LSTM's dgh
     * is its dgx */
    int present[13] = {1, 1, 1, 1, 1, lstm, lstm, training, training && !lstm, training,
                       training, training && lstm, training && lstm};
    for (int i = 0; i < 13; i++) {
        if (i == 8 && training && lstm) {
            ck_assert_ptr_eq(s.dgh, s.dgx);
            continue;
        }
        if (!present[i]) {
            ck_assert_msg(sp[i].p == NULL, "%s should be NULL", sp[i].name);
            continue;
        }
        ck_assert_msg(sp[i].p >= ws && sp[i].p + sp[i].n <= ws + nws, "%s outside [0, %zu)",
                      sp[i].name, nws);
        ck_assert_msg(((uintptr_t)sp[i].p & 63) == 0, "%s not 64-byte aligned", sp[i].name);
        for (int j = 0; j < i; j++)
            if (present[j] && !(j == 8 && lstm))
                ck_assert_msg(sp[i].p + sp[i].n <= sp[j].p || sp[j].p + sp[j].n <= sp[i].p,
                              "%s and %s overlap", sp[i].name, sp[j].name);
    }
    free(ws);
}

START_TEST(sequence_layout)
{
    /* {in, h, T, B}; {3, 2, 3, 2} and {3, 4, 4, 4} make arrays whose sizes are multiples of
     * 16, and {2, 11, 3, 1} a GRU's gh of 33, so no padding hides a size planned short */
    static const int32_t shapes[][4] = {{3, 5, 1, 1}, {3, 5, 1, 3}, {4, 3, 6, 1}, {4, 2, 5, 3},
                                        {5, 17, 4, 2}, {1, 1, 1, 1}, {3, 2, 3, 2}, {3, 4, 4, 4},
                                        {2, 11, 3, 1}};
    for (int kind = 0; kind < 2; kind++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            for (int training = 0; training < 2; training++)
                check_layout(kind ? FRL_RNN_LSTM : FRL_RNN_GRU, shapes[i][0], shapes[i][1],
                             shapes[i][2], shapes[i][3], training);
    /* a forward pass's sizes grow with T and B; training needs more */
    frl_rnn r;
    frl_rnn_init(&r, FRL_RNN_LSTM, 3, 4, 0);
    ck_assert_uint_gt(frl_rnn_seq_floats(&r, 4, 2, 1), frl_rnn_seq_floats(&r, 4, 2, 0));
    ck_assert_uint_gt(frl_rnn_seq_floats(&r, 5, 2, 0), frl_rnn_seq_floats(&r, 4, 2, 0));
}
END_TEST

/* ---- parameters ---- */

/* The layout frl_rnn_init gives, and the initialisation: orthogonal wx and wh, zero
 * biases but the LSTM's forget gate (1), nothing outside the core written. */
START_TEST(init_params)
{
    for (int kind = 0; kind < 2; kind++) {
        frl_rnn r;
        int32_t in = 4, h = 3;
        frl_rnn_init(&r, kind ? FRL_RNN_LSTM : FRL_RNN_GRU, in, h, PBASE);
        size_t gw = (size_t)r.gates * (size_t)h;
        ck_assert_uint_eq(r.param_base, PBASE);
        ck_assert_uint_eq(r.off_wx, PBASE);
        ck_assert_uint_eq(r.off_wh, PBASE + (size_t)in * gw);
        ck_assert_uint_eq(r.off_bx, r.off_wh + (size_t)h * gw);
        ck_assert_uint_eq(r.off_bh, r.off_bx + gw);
        ck_assert_uint_eq(r.num_params, r.off_bh + gw - PBASE);
        size_t np = PBASE + r.num_params + PTAIL;
        float *p = malloc(sizeof(float) * np);
        double *work = malloc(sizeof(double) * frl_rnn_init_work(&r));
        ck_assert(p && work);
        for (size_t i = 0; i < np; i++)
            p[i] = 7.0f;
        frl_rng rng = frl_rng_stream(5, 6);
        frl_rnn_init_params(&r, p, 0.0f, &rng, work);
        for (size_t i = 0; i < PBASE; i++)
            ck_assert(p[i] == 7.0f);
        for (size_t i = PBASE + r.num_params; i < np; i++)
            ck_assert(p[i] == 7.0f);
        for (size_t j = 0; j < 2 * gw; j++) {
            int forget = kind && j >= (size_t)h && j < 2 * (size_t)h;
            ck_assert(p[r.off_bx + j] == (forget ? 1.0f : 0.0f));
        }
        /* wx [in x G h] with in < G h: orthonormal rows; wh [h x G h] likewise */
        size_t offs[2] = {r.off_wx, r.off_wh};
        int32_t rows[2] = {in, h};
        for (int m = 0; m < 2; m++)
            for (int32_t a = 0; a < rows[m]; a++)
                for (int32_t c = 0; c < rows[m]; c++) {
                    double d = 0;
                    for (size_t j = 0; j < gw; j++)
                        d += (double)p[offs[m] + (size_t)a * gw + j] *
                             p[offs[m] + (size_t)c * gw + j];
                    ck_assert_msg(fabs(d - (a == c)) < 1e-5, "w%s rows %d, %d: %g",
                                  m ? "h" : "x", (int)a, (int)c, d);
                }
        free(p);
        free(work);
    }
}
END_TEST

int main(void)
{
    find_tables();
    if (ntables < 1 || strcmp(tables[0]->name, "scalar") != 0) {
        fprintf(stderr, "the scalar kernel table is not the first runnable one\n");
        return EXIT_FAILURE;
    }
    printf("kernel tables:");
    for (int i = 0; i < ntables; i++)
        printf(" %s", tables[i]->name);
    printf("\n");
    fflush(stdout);
    Suite *s = suite_create("rnn");
    TCase *tc = tcase_create("rnn");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, sequence_layout);
    tcase_add_test(tc, init_params);
    tcase_add_test(tc, step_matches_sequence);
    tcase_add_test(tc, reset_row_ignores_state);
    tcase_add_test(tc, gru_gradient_across_resets);
    tcase_add_test(tc, lstm_gradient_across_resets);
    tcase_add_test(tc, gru_gradient_truncated);
    tcase_add_test(tc, lstm_gradient_truncated);
    tcase_add_test(tc, gradient_single_row_and_step);
    tcase_add_test(tc, gradient_wide);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
