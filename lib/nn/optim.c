/* Adam (Kingma and Ba, 2015) in the form torch.optim.Adam computes, and norm clipping. */
#include <math.h>

#include "nn/optim.h"

double frl_grad_norm(const float *g, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)g[i] * (double)g[i];
    return sqrt(s);
}

double frl_clip_grad_norm(float *g, size_t n, double max_norm)
{
    double norm = frl_grad_norm(g, n);
    if (max_norm > 0 && norm > max_norm) {
        float scale = (float)(max_norm / (norm + 1e-6));
        for (size_t i = 0; i < n; i++)
            g[i] *= scale;
    }
    return norm;
}

void frl_adam_begin(frl_adam *a)
{
    a->t++;
}

void frl_adam_update(const frl_adam *a, float *p, const float *g, size_t lo, size_t hi,
                     double lr)
{
    double bc1 = 1.0 - pow(a->beta1, (double)a->t);
    double bc2 = 1.0 - pow(a->beta2, (double)a->t);
    float step = (float)(lr / bc1), b1 = (float)a->beta1, b2 = (float)a->beta2;
    float rbc2 = (float)(1.0 / sqrt(bc2)), eps = (float)a->eps;
    for (size_t i = lo; i < hi; i++) {
        float m = b1 * a->m[i] + (1.0f - b1) * g[i];
        float v = b2 * a->v[i] + (1.0f - b2) * g[i] * g[i];
        a->m[i] = m;
        a->v[i] = v;
        p[i] -= step * m / (sqrtf(v) * rbc2 + eps);
    }
}
