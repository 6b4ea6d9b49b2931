/* Log-probabilities, entropies, samples and their gradients for the policy heads. */
#include <math.h>

#include "rl/heads.h"

static double log_sum_exp(const float *z, int32_t n)
{
    double mx = z[0];
    for (int32_t i = 1; i < n; i++)
        mx = z[i] > mx ? z[i] : mx;
    double s = 0;
    for (int32_t i = 0; i < n; i++)
        s += exp((double)z[i] - mx);
    return mx + log(s);
}

int32_t frl_cat_sample(const float *logits, int32_t n, double u)
{
    double logp;
    return frl_cat_sample_logp(logits, n, u, &logp);
}

int32_t frl_cat_sample_logp(const float *logits, int32_t n, double u, double *logp)
{
    double lse = log_sum_exp(logits, n), c = 0;
    int32_t a = n - 1;
    for (int32_t i = 0; i < n - 1; i++) {
        c += exp((double)logits[i] - lse);
        if (u < c) {
            a = i;
            break;
        }
    }
    *logp = (double)logits[a] - lse;
    return a;
}

int32_t frl_cat_argmax(const float *logits, int32_t n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        best = logits[i] > logits[best] ? i : best;
    return best;
}

double frl_cat_logp(const float *logits, int32_t n, int32_t a)
{
    return (double)logits[a] - log_sum_exp(logits, n);
}

double frl_cat_entropy(const float *logits, int32_t n)
{
    double lse = log_sum_exp(logits, n), h = 0;
    for (int32_t i = 0; i < n; i++) {
        double lp = (double)logits[i] - lse;
        h -= exp(lp) * lp;
    }
    return h;
}

void frl_cat_backward(const float *logits, int32_t n, int32_t a, double c_logp, double c_ent,
                      float *dlogits)
{
    double lse = log_sum_exp(logits, n), h = frl_cat_entropy(logits, n);
    for (int32_t i = 0; i < n; i++) {
        double lp = (double)logits[i] - lse, p = exp(lp);
        /* d logp(a)/dz_i = [i == a] - p_i;  dH/dz_i = -p_i (log p_i + H). */
        double g = c_logp * ((i == a) - p) - c_ent * p * (lp + h);
        dlogits[i] = (float)g;
    }
}

double frl_cat_eval(const float *logits, int32_t n, int32_t a, double *p, double *logp,
                    double *entropy)
{
    double mx = logits[0], s = 0, h = 0;
    for (int32_t i = 1; i < n; i++)
        mx = logits[i] > mx ? logits[i] : mx;
    for (int32_t i = 0; i < n; i++) {
        p[i] = exp((double)logits[i] - mx);
        s += p[i];
    }
    double lse = mx + log(s), inv = 1.0 / s;
    for (int32_t i = 0; i < n; i++) {
        p[i] *= inv;
        h -= p[i] * ((double)logits[i] - lse);
    }
    *logp = (double)logits[a] - lse;
    *entropy = h;
    return lse;
}

void frl_cat_backward_from(const float *logits, const double *p, double lse, double entropy,
                           int32_t n, int32_t a, double c_logp, double c_ent, float *dlogits)
{
    for (int32_t i = 0; i < n; i++) {
        double lp = (double)logits[i] - lse;
        dlogits[i] = (float)(c_logp * ((i == a) - p[i]) - c_ent * p[i] * (lp + entropy));
    }
}

static const double half_log_2pi = 0.91893853320467274178;

/* One dimension's log-density, given inv = exp(-log_std). */
static double gauss_term(float mean, float log_std, double inv, float a)
{
    double z = ((double)a - mean) * inv;
    return -0.5 * z * z - (double)log_std - half_log_2pi;
}

double frl_gauss_logp(const float *mean, const float *log_std, const float *a, int32_t n)
{
    double s = 0;
    for (int32_t i = 0; i < n; i++)
        s += gauss_term(mean[i], log_std[i], exp(-(double)log_std[i]), a[i]);
    return s;
}

void frl_gauss_inv_std(const float *log_std, int32_t n, double *inv_std)
{
    for (int32_t i = 0; i < n; i++)
        inv_std[i] = exp(-(double)log_std[i]);
}

double frl_gauss_logp_inv(const float *mean, const float *log_std, const double *inv_std,
                          const float *a, int32_t n)
{
    double s = 0;
    for (int32_t i = 0; i < n; i++)
        s += gauss_term(mean[i], log_std[i], inv_std[i], a[i]);
    return s;
}

double frl_gauss_entropy(const float *log_std, int32_t n)
{
    double s = 0;
    for (int32_t i = 0; i < n; i++)
        s += 0.5 + half_log_2pi + (double)log_std[i];
    return s;
}

void frl_gauss_backward_inv(const float *mean, const double *inv_std, const float *a,
                            int32_t n, double c_logp, double c_ent, float *dmean,
                            double *dlog_std)
{
    for (int32_t i = 0; i < n; i++) {
        double inv = inv_std[i];
        double z = ((double)a[i] - mean[i]) * inv;
        dmean[i] = (float)(c_logp * z * inv);
        dlog_std[i] += c_logp * (z * z - 1.0) + c_ent;
    }
}
