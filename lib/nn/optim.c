/* Adam (Kingma and Ba, 2015) in the form torch.optim.Adam computes, and norm clipping. */
#include <math.h>

#include "nn/optim.h"

double frl_grad_norm(const frl_kernels *k, const float *g, size_t n)
{
    double ss = k->sum_squares((int64_t)n, g);
    /* The SIMD tables sum squares in float within a block, which overflows for elements
     * near 1.8e19; the double sum does not, so clipping still scales such a gradient
     * (as the scalar table and torch do) instead of zeroing it. */
    if (!isfinite(ss))
        ss = frl_kernels_all()[0]->sum_squares((int64_t)n, g); /* [0]: scalar */
    return sqrt(ss);
}

float frl_clip_scale(double norm, double max_norm)
{
    return max_norm > 0 && norm > max_norm ? (float)(max_norm / (norm + 1e-6)) : 1.0f;
}

int frl_adam_moments_valid(const float *m, const float *v, size_t n)
{
    int ok = 1;
    for (size_t i = 0; i < n; i++)
        ok &= isfinite(m[i]) && isfinite(v[i]) && v[i] >= 0;
    return ok;
}

void frl_adam_begin(frl_adam *a)
{
    a->t++;
}

void frl_adam_update(const frl_adam *a, const frl_kernels *k, float *p, const float *g,
                     size_t lo, size_t hi, double lr, float gscale)
{
    double bc1 = 1.0 - pow(a->beta1, (double)a->t);
    double bc2 = 1.0 - pow(a->beta2, (double)a->t);
    const frl_adam_coef c = {
        .gscale = gscale,
        .b1 = (float)a->beta1,
        .b2 = (float)a->beta2,
        .step = (float)(lr / bc1),
        .rbc2 = (float)(1.0 / sqrt(bc2)),
        .eps = (float)a->eps,
    };
    k->adam((int64_t)(hi - lo), p + lo, g + lo, a->m + lo, a->v + lo, &c);
}

double frl_lr_at(double lr, int32_t anneal, int64_t update_index, int64_t num_updates)
{
    double frac = anneal && num_updates > 0 ? 1.0 - (double)update_index / (double)num_updates
                                            : 1.0;
    return lr * (frac > 0 ? frac : 0);
}
