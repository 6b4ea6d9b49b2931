/* Orthogonal initialisation by modified Gram-Schmidt on a Gaussian matrix, in double. */
#include <math.h>

#include "nn/init.h"

/* Orthonormalise the rows of q[rows x cols] (rows <= cols) in place. Gram-Schmidt on a
 * Gaussian matrix gives the same distribution as QR with signs fixed to diag(R) > 0,
 * the Haar measure torch's orthogonal_ draws from. */
static void orthonormalise_rows(double *q, int32_t rows, int32_t cols)
{
    for (int32_t i = 0; i < rows; i++) {
        double *qi = q + (size_t)i * (size_t)cols;
        for (int32_t j = 0; j < i; j++) {
            const double *qj = q + (size_t)j * (size_t)cols;
            double d = 0;
            for (int32_t c = 0; c < cols; c++)
                d += qi[c] * qj[c];
            for (int32_t c = 0; c < cols; c++)
                qi[c] -= d * qj[c];
        }
        double norm = 0;
        for (int32_t c = 0; c < cols; c++)
            norm += qi[c] * qi[c];
        norm = sqrt(norm);
        for (int32_t c = 0; c < cols; c++)
            qi[c] = norm > 0 ? qi[c] / norm : 0.0;
    }
}

void frl_init_orthogonal(float *wt, int32_t in, int32_t out, double gain, frl_rng *r,
                         double *work)
{
    /* W is [out x in]; make its min(out, in) vectors of length max(out, in) orthonormal. */
    int32_t few = out < in ? out : in, many = out < in ? in : out;
    for (int64_t i = 0; i < (int64_t)few * many; i++)
        work[i] = frl_rng_normal(r);
    orthonormalise_rows(work, few, many);
    for (int32_t o = 0; o < out; o++)
        for (int32_t i = 0; i < in; i++) {
            /* W[o][i] is work[o][i] when out <= in (rows orthonormal), else work[i][o]. */
            double w = out <= in ? work[(size_t)o * (size_t)in + (size_t)i]
                                 : work[(size_t)i * (size_t)out + (size_t)o];
            wt[(size_t)i * (size_t)out + (size_t)o] = (float)(gain * w);
        }
}

void frl_mlp_init_uniform(const frl_mlp *m, float *params, frl_rng *r)
{
    for (int32_t l = 0; l < m->layers; l++) {
        size_t in = (size_t)m->width[l], out = (size_t)m->width[l + 1];
        double bound = 1.0 / sqrt((double)in);
        for (size_t j = 0; j < in * out; j++)
            params[m->off_w[l] + j] = (float)frl_rng_uniform_range(r, -bound, bound);
        for (size_t j = 0; j < out; j++)
            params[m->off_b[l] + j] = (float)frl_rng_uniform_range(r, -bound, bound);
    }
}

size_t frl_mlp_init_work(const frl_mlp *m)
{
    size_t most = 1;
    for (int32_t l = 0; l < m->layers; l++) {
        size_t w = (size_t)m->width[l] * (size_t)m->width[l + 1];
        most = w > most ? w : most;
    }
    return most;
}

void frl_mlp_init_params(const frl_mlp *m, float *params, double hidden_gain, double out_gain,
                         frl_rng *r, double *work)
{
    for (int32_t l = 0; l < m->layers; l++) {
        int last = l + 1 == m->layers && !m->activate_last;
        frl_init_orthogonal(params + m->off_w[l], m->width[l], m->width[l + 1],
                            last ? out_gain : hidden_gain, r, work);
    }
}
