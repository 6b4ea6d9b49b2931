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

void frl_obsnorm_freeze(frl_obsnorm *n)
{
    for (int32_t i = 0; i < n->width; i++) {
        double var = n->count > 1 ? n->m2[i] / n->count : 1.0;
        n->use_mean[i] = (float)n->mean[i];
        n->use_inv_std[i] = (float)(1.0 / sqrt(var + 1e-8));
    }
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
