/* Running observation statistics and their frozen float copy. */
#include <math.h>

#include "rl/obsnorm.h"

void frl_obsnorm_reset(frl_obsnorm *n)
{
    n->count = 0;
    for (int32_t i = 0; i < n->width; i++) {
        n->mean[i] = 0;
        n->m2[i] = 0;
        n->use_mean[i] = 0;
        n->use_inv_std[i] = 1;
    }
}

void frl_obsnorm_update(frl_obsnorm *n, const float *x, int64_t rows)
{
    if (rows <= 0)
        return;
    const float *c = x + n->at;
    for (int32_t i = 0; i < n->width; i++) {
        double s = 0, ss = 0;
        for (int64_t r = 0; r < rows; r++)
            s += c[r * n->stride + i];
        double bm = s / (double)rows;
        for (int64_t r = 0; r < rows; r++) {
            double d = c[r * n->stride + i] - bm;
            ss += d * d;
        }
        double tot = n->count + (double)rows, delta = bm - n->mean[i];
        n->mean[i] += delta * (double)rows / tot;
        n->m2[i] += ss + delta * delta * n->count * (double)rows / tot;
    }
    n->count += (double)rows;
}

void frl_obsnorm_merge(frl_obsnorm *n, double rows, const double *mean, const double *m2)
{
    if (rows <= 0)
        return;
    double tot = n->count + rows;
    for (int32_t i = 0; i < n->width; i++) {
        double delta = mean[i] - n->mean[i];
        n->mean[i] += delta * rows / tot;
        n->m2[i] += m2[i] + delta * delta * n->count * rows / tot;
    }
    n->count = tot;
}

/* 1/std as the frozen copy holds it; below one observation the variance is taken as 1. */
static float frozen_inv_std(double count, double m2)
{
    double var = count > 1 ? m2 / count : 1.0;
    return (float)(1.0 / sqrt(var + 1e-8));
}

void frl_obsnorm_freeze(frl_obsnorm *n)
{
    for (int32_t i = 0; i < n->width; i++) {
        n->use_mean[i] = (float)n->mean[i];
        n->use_inv_std[i] = frozen_inv_std(n->count, n->m2[i]);
    }
}

int32_t frl_obsnorm_unfreezable(double count, const double *mean, const double *m2,
                                int32_t width)
{
    for (int32_t i = 0; i < width; i++) {
        /* A float mean of inf, or a 1/std of 0 or inf, makes apply give NaN. Doubles
         * from FLT_MAX up to half a float step above it still round to FLT_MAX. */
        float inv = frozen_inv_std(count, m2[i]);
        if (!(fabs(mean[i]) < 0x1.ffffffp127) || !isfinite(inv) || !(inv > 0))
            return i;
    }
    return -1;
}

void frl_obsnorm_apply(const frl_obsnorm *n, const float *x, int32_t rows, float *out,
                       int32_t out_stride)
{
    float c = n->clip;
    const float *in = x + n->at;
    for (int64_t r = 0; r < rows; r++)
        for (int32_t i = 0; i < n->width; i++) {
            float v = (in[r * n->stride + i] - n->use_mean[i]) * n->use_inv_std[i];
            out[r * out_stride + i] = v > c ? c : (v < -c ? -c : v);
        }
}
