/* The reference table: plain C, no FMA (the library builds with -ffp-contract=off),
 * every sum in increasing index order. The SIMD tables are tested against it, empty
 * dimensions included: the loops below then run zero times, which is what kernels.h
 * asks (nothing written to an empty output, +0 for an empty sum), so no special case. */
#include <math.h>
#include <string.h>

#include "nn/kernels_impl.h"

static float act1(float v, frl_nn_act act)
{
    switch (act) {
    case FRL_NN_TANH:
        return tanhf(v);
    case FRL_NN_RELU:
        return v < 0.0f ? 0.0f : v; /* keeps NaN, like the SIMD max(0, v) */
    case FRL_NN_ELU:
        return v > 0.0f ? v : expm1f(v);
    case FRL_NN_LINEAR:
    default:
        return v;
    }
}

static void linear_fwd(int32_t m, int32_t n, int32_t k, const float *x, const float *wt,
                       const float *b, float *y, frl_nn_act act)
{
    /* Loop order i, p, j: each y element still sums over p in order, and the inner
     * loop runs along contiguous rows. */
    for (int32_t i = 0; i < m; i++) {
        float *yi = y + (int64_t)i * n;
        const float *xi = x + (int64_t)i * k;
        for (int32_t j = 0; j < n; j++)
            yi[j] = 0.0f;
        for (int32_t p = 0; p < k; p++) {
            const float xv = xi[p];
            const float *w = wt + (int64_t)p * n;
            for (int32_t j = 0; j < n; j++)
                yi[j] += xv * w[j];
        }
        for (int32_t j = 0; j < n; j++)
            yi[j] = act1(b ? yi[j] + b[j] : yi[j], act);
    }
}

static void linear_bwd_input(int32_t m, int32_t n, int32_t k, const float *dy,
                             const float *wt, float *dx)
{
    for (int32_t i = 0; i < m; i++) {
        const float *dyi = dy + (int64_t)i * n;
        for (int32_t p = 0; p < k; p++) {
            const float *w = wt + (int64_t)p * n;
            float acc = 0.0f;
            for (int32_t j = 0; j < n; j++)
                acc += dyi[j] * w[j];
            dx[(int64_t)i * k + p] = acc;
        }
    }
}

static void linear_bwd_weight(int32_t m, int32_t n, int32_t k, const float *x,
                              const float *dy, float *dwt, float *db, int accumulate)
{
    if (!accumulate) {
        memset(dwt, 0, sizeof(float) * (size_t)n * (size_t)k);
        if (db)
            memset(db, 0, sizeof(float) * (size_t)n);
    }
    /* Rows outermost: every dwt and db element accumulates rows 0..m-1 in order. */
    for (int32_t i = 0; i < m; i++) {
        const float *xi = x + (int64_t)i * k;
        const float *dyi = dy + (int64_t)i * n;
        for (int32_t p = 0; p < k; p++) {
            const float xv = xi[p];
            float *dw = dwt + (int64_t)p * n;
            for (int32_t j = 0; j < n; j++)
                dw[j] += xv * dyi[j];
        }
        if (db)
            for (int32_t j = 0; j < n; j++)
                db[j] += dyi[j];
    }
}

static void act_bwd(int64_t n, const float *y, const float *dy, float *dx, frl_nn_act act)
{
    for (int64_t i = 0; i < n; i++) {
        const float yv = y[i], g = dy[i];
        switch (act) {
        case FRL_NN_TANH:
            dx[i] = g * (1.0f - yv * yv);
            break;
        case FRL_NN_RELU:
            dx[i] = yv > 0.0f ? g : 0.0f;
            break;
        case FRL_NN_ELU:
            dx[i] = yv > 0.0f ? g : g * (yv + 1.0f);
            break;
        case FRL_NN_LINEAR:
        default:
            dx[i] = g;
            break;
        }
    }
}

static void transpose(int32_t rows, int32_t cols, const float *src, float *dst)
{
    for (int32_t c = 0; c < cols; c++)
        for (int32_t r = 0; r < rows; r++)
            dst[(int64_t)c * rows + r] = src[(int64_t)r * cols + c];
}

static double sum_squares(int64_t n, const float *x)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (double)x[i] * (double)x[i];
    return s;
}

static void adam(int64_t n, float *p, const float *g, float *m, float *v, const frl_adam_coef *c)
{
    for (int64_t i = 0; i < n; i++) {
        const float gs = g[i] * c->gscale;
        m[i] = c->b1 * m[i] + (1.0f - c->b1) * gs;
        v[i] = c->b2 * v[i] + (1.0f - c->b2) * gs * gs;
        p[i] -= c->step * m[i] / (sqrtf(v[i]) * c->rbc2 + c->eps);
    }
}

const frl_kernels frl_kernels_scalar = {
    .name = "scalar",
    .linear_fwd = linear_fwd,
    .linear_bwd_input = linear_bwd_input,
    .linear_bwd_weight = linear_bwd_weight,
    .act_bwd = act_bwd,
    .transpose = transpose,
    .sum_squares = sum_squares,
    .adam = adam,
};
