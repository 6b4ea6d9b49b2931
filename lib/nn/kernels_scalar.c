/* The reference table: plain C, no FMA (the library builds with -ffp-contract=off),
 * every sum in increasing index order. The SIMD tables are tested against it, empty
 * dimensions included: the loops below then run zero times, which is what kernels.h
 * asks (nothing written to an empty output, +0 for an empty sum), so no special case. */
#include <float.h>
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

/* linear_fwd's loops with the patch read in place: each output sums (ki, kj, channel) in
 * order, so the bits are linear_fwd's over im2col's rows. */
static int conv_fwd(const frl_conv_dims *d, int32_t images, const float *x, const float *wt,
                    const float *b, float *y, frl_nn_act act)
{
    const int64_t run = (int64_t)d->kw * d->in_c, pitch = (int64_t)d->in_w * d->in_c;
    const int64_t in_size = (int64_t)d->in_h * pitch, n = d->out_c;
    for (int64_t i = 0; i < (int64_t)images * d->out_h * d->out_w; i++, y += n) {
        const int64_t img = i / ((int64_t)d->out_h * d->out_w), q = i % (d->out_h * d->out_w);
        const float *patch = x + img * in_size + (q / d->out_w) * d->stride * pitch +
                             (q % d->out_w) * d->stride * d->in_c;
        for (int64_t j = 0; j < n; j++)
            y[j] = 0.0f;
        const float *w = wt;
        for (int32_t ki = 0; ki < d->kh; ki++, patch += pitch)
            for (int64_t p = 0; p < run; p++, w += n)
                for (int64_t j = 0; j < n; j++)
                    y[j] += patch[p] * w[j];
        for (int64_t j = 0; j < n; j++)
            y[j] = act1(b ? y[j] + b[j] : y[j], act);
    }
    return 1;
}

/* linear_bwd_weight's loops with each position's patch read in place. */
static int conv_bwd_weight(const frl_conv_dims *d, int32_t images, const float *x,
                           const float *dy, float *dwt, float *db, int accumulate)
{
    const int64_t run = (int64_t)d->kw * d->in_c, pitch = (int64_t)d->in_w * d->in_c;
    const int64_t in_size = (int64_t)d->in_h * pitch, n = d->out_c;
    if (!accumulate) {
        memset(dwt, 0, sizeof(float) * (size_t)(n * run * d->kh));
        if (db)
            memset(db, 0, sizeof(float) * (size_t)n);
    }
    for (int64_t i = 0; i < (int64_t)images * d->out_h * d->out_w; i++, dy += n) {
        const int64_t img = i / ((int64_t)d->out_h * d->out_w), q = i % (d->out_h * d->out_w);
        const float *patch = x + img * in_size + (q / d->out_w) * d->stride * pitch +
                             (q % d->out_w) * d->stride * d->in_c;
        float *dw = dwt;
        for (int32_t ki = 0; ki < d->kh; ki++, patch += pitch)
            for (int64_t p = 0; p < run; p++, dw += n)
                for (int64_t j = 0; j < n; j++)
                    dw[j] += patch[p] * dy[j];
        if (db)
            for (int64_t j = 0; j < n; j++)
                db[j] += dy[j];
    }
    return 1;
}

/* linear_bwd_input's chain for each patch gradient element, added where col2im adds
 * it; the kernel positions last to first keep each dx element's terms in position
 * order. */
static int conv_bwd_input(const frl_conv_dims *d, int32_t images, const float *dy,
                          const float *wtt, float *dx)
{
    const int64_t n = d->out_c, ch = d->in_c, pitch = (int64_t)d->in_w * ch;
    const int64_t in_size = (int64_t)d->in_h * pitch, per = (int64_t)d->out_h * d->out_w;
    for (int64_t img = 0; img < images; img++)
        for (int32_t ki = d->kh - 1; ki >= 0; ki--)
            for (int32_t kj = d->kw - 1; kj >= 0; kj--) {
                const float *w = wtt + ((int64_t)ki * d->kw + kj) * n * ch;
                for (int64_t q = 0; q < per; q++) {
                    const float *g = dy + (img * per + q) * n;
                    float *out = dx + img * in_size + ((q / d->out_w) * d->stride + ki) * pitch +
                                 ((q % d->out_w) * d->stride + kj) * ch;
                    for (int64_t c = 0; c < ch; c++) {
                        float acc = 0.0f;
                        for (int64_t j = 0; j < n; j++)
                            acc += g[j] * w[j * ch + c];
                        out[c] += acc;
                    }
                }
            }
    return 1;
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

static float flush_subnormal(float x)
{
    return fabsf(x) < FLT_MIN ? 0.0f : x;
}

/* Infinity as FLT_MAX (kernels.h: adam); NaN compares false and stays. */
static float clamp_max(float x)
{
    return x > FLT_MAX ? FLT_MAX : x;
}

static void adam(int64_t n, float *p, const float *g, float *m, float *v, const frl_adam_coef *c)
{
    for (int64_t i = 0; i < n; i++) {
        const float gs = g[i] * c->gscale;
        m[i] = flush_subnormal(c->b1 * m[i] + (1.0f - c->b1) * gs);
        v[i] = clamp_max(flush_subnormal(c->b2 * v[i] + (1.0f - c->b2) * gs * gs));
        p[i] -= c->step * m[i] / (sqrtf(v[i]) * c->rbc2 + c->eps);
    }
}

/* sig(x) from E = e^-|x|: 1 / (1 + E) for x >= 0 and E / (1 + E) below, so neither
 * side cancels (1 - sig(|x|) would, for x < 0). |x| is clamped at 87, where E is still
 * a normal float: sig(x) for x < -87 comes out as sig(-87), 1.6e-38, not a subnormal.
 * NaN stays NaN. The SIMD tables compute the same expression with their own exp. */
static float sigmoid1(float x)
{
    const float ax = fabsf(x), e = expf(-(ax > 87.0f ? 87.0f : ax));
    return x < 0.0f ? e / (1.0f + e) : 1.0f / (1.0f + e);
}

static void gru_fwd(int32_t rows, int32_t h, const float *gx, const float *gh, const float *hp,
                    float *hout, float *gates)
{
    for (int32_t i = 0; i < rows; i++) {
        const float *x = gx + (int64_t)i * 3 * h, *y = gh + (int64_t)i * 3 * h;
        float *g = gates + (int64_t)i * 4 * h;
        for (int32_t j = 0; j < h; j++) {
            const float r = sigmoid1(x[j] + y[j]);
            const float z = sigmoid1(x[h + j] + y[h + j]);
            const float ghn = y[2 * h + j];
            const float n = tanhf(x[2 * h + j] + r * ghn);
            const float prev = hp[(int64_t)i * h + j];
            g[j] = r;
            g[h + j] = z;
            g[2 * h + j] = n;
            g[3 * h + j] = ghn;
            hout[(int64_t)i * h + j] = (1.0f - z) * n + z * prev;
        }
    }
}

static void gru_bwd(int32_t rows, int32_t h, const float *gates, const float *hp,
                    const float *dh, float *dgx, float *dgh, float *dhp)
{
    for (int32_t i = 0; i < rows; i++) {
        const float *g = gates + (int64_t)i * 4 * h;
        float *ax = dgx + (int64_t)i * 3 * h, *ah = dgh + (int64_t)i * 3 * h;
        for (int32_t j = 0; j < h; j++) {
            const float r = g[j], z = g[h + j], n = g[2 * h + j], ghn = g[3 * h + j];
            const float d = dh[(int64_t)i * h + j], prev = hp[(int64_t)i * h + j];
            const float dan = d * (1.0f - z) * (1.0f - n * n);
            const float daz = d * (prev - n) * z * (1.0f - z);
            const float dar = dan * ghn * r * (1.0f - r);
            ax[j] = ah[j] = dar;
            ax[h + j] = ah[h + j] = daz;
            ax[2 * h + j] = dan;
            ah[2 * h + j] = dan * r;
            dhp[(int64_t)i * h + j] = d * z;
        }
    }
}

static void lstm_fwd(int32_t rows, int32_t h, const float *g, const float *cp, float *hout,
                     float *cout, float *gates)
{
    for (int32_t i = 0; i < rows; i++) {
        const float *a = g + (int64_t)i * 4 * h;
        float *s = gates + (int64_t)i * 5 * h;
        for (int32_t j = 0; j < h; j++) {
            const float ig = sigmoid1(a[j]), fg = sigmoid1(a[h + j]);
            const float gg = tanhf(a[2 * h + j]), og = sigmoid1(a[3 * h + j]);
            const float c = fg * cp[(int64_t)i * h + j] + ig * gg;
            const float tc = tanhf(c);
            s[j] = ig;
            s[h + j] = fg;
            s[2 * h + j] = gg;
            s[3 * h + j] = og;
            s[4 * h + j] = tc;
            cout[(int64_t)i * h + j] = c;
            hout[(int64_t)i * h + j] = og * tc;
        }
    }
}

static void lstm_bwd(int32_t rows, int32_t h, const float *gates, const float *cp,
                     const float *dh, const float *dc, float *dg, float *dcp)
{
    for (int32_t i = 0; i < rows; i++) {
        const float *s = gates + (int64_t)i * 5 * h;
        float *d = dg + (int64_t)i * 4 * h;
        for (int32_t j = 0; j < h; j++) {
            const float ig = s[j], fg = s[h + j], gg = s[2 * h + j], og = s[3 * h + j];
            const float tc = s[4 * h + j], dhv = dh[(int64_t)i * h + j];
            const float dct = dc[(int64_t)i * h + j] + dhv * og * (1.0f - tc * tc);
            d[j] = dct * gg * ig * (1.0f - ig);
            d[h + j] = dct * cp[(int64_t)i * h + j] * fg * (1.0f - fg);
            d[2 * h + j] = dct * ig * (1.0f - gg * gg);
            d[3 * h + j] = dhv * tc * og * (1.0f - og);
            dcp[(int64_t)i * h + j] = dct * fg;
        }
    }
}

const frl_kernels frl_kernels_scalar = {
    .name = "scalar",
    .linear_fwd = linear_fwd,
    .conv_fwd = conv_fwd,
    .conv_bwd_weight = conv_bwd_weight,
    .conv_bwd_input = conv_bwd_input,
    .linear_bwd_input = linear_bwd_input,
    .linear_bwd_weight = linear_bwd_weight,
    .act_bwd = act_bwd,
    .transpose = transpose,
    .sum_squares = sum_squares,
    .adam = adam,
    .gru_fwd = gru_fwd,
    .gru_bwd = gru_bwd,
    .lstm_fwd = lstm_fwd,
    .lstm_bwd = lstm_bwd,
};
