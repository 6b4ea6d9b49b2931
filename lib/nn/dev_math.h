/* The per-element and per-row arithmetic of the device ops (lib/cuda/dev_ops.h), written
 * once for both of their implementations: the CUDA kernels (ops_cuda.cu) call these
 * functions from device code, the host implementation (tests/cuda/ops_host.c) from plain
 * loops, and the CPU learner (lib/rl/ppo.c, vtrace.c) calls the advantage columns too. So
 * the host tests, which compare the host ops with the CPU learner's own functions
 * (lib/rl/heads.c, vtrace.c, ppo.c), check the very arithmetic the GPU runs, and a GPU
 * test then only has to check the launches and the cuBLAS products. It lives in nn, below
 * both the learner (rl) and the plugin (cuda), so neither climbs to reach it.
 *
 * C99 and CUDA C++. Heads and losses run in double, as on the CPU. */
#ifndef FRL_NN_DEV_MATH_H
#define FRL_NN_DEV_MATH_H

#include <float.h>
#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define FRL_HD __host__ __device__ static inline
#else
#define FRL_HD static inline
#endif

/* Activations, numbered as frl_nn_act: 0 linear, 1 tanh, 2 relu, 3 elu. */
FRL_HD float frl_dm_act(float v, int32_t act)
{
    if (act == 1)
        return tanhf(v);
    if (act == 2)
        return v < 0.0f ? 0.0f : v;
    if (act == 3)
        return v > 0.0f ? v : expm1f(v);
    return v;
}

/* d act / d pre-activation, from the activation's output y. */
FRL_HD float frl_dm_act_grad(float y, int32_t act)
{
    if (act == 1)
        return 1.0f - y * y;
    if (act == 2)
        return y > 0.0f ? 1.0f : 0.0f;
    if (act == 3)
        return y > 0.0f ? 1.0f : y + 1.0f;
    return 1.0f;
}

FRL_HD float frl_dm_normalize(float x, float mean, float inv_std, float clip)
{
    float v = (x - mean) * inv_std;
    return v > clip ? clip : (v < -clip ? -clip : v);
}

/* ---- recurrent cells (lib/nn/rnn.h's gates and order, PyTorch's) ---- */

/* The CPU kernels' sigmoid: no cancellation on either side, and e^-|x| kept above
 * subnormals (lib/nn/kernels_scalar.c says why). */
FRL_HD float frl_dm_sigmoid(float x)
{
    const float ax = fabsf(x), e = expf(-(ax > 87.0f ? 87.0f : ax));
    return x < 0.0f ? e / (1.0f + e) : 1.0f / (1.0f + e);
}

/* Unit j of a GRU row: gx = x.Wx + bx and gh = hp.Wh + bh, [3h] each (blocks r, z, n);
 * returns the new h. */
FRL_HD float frl_dm_gru_unit(int32_t h, int32_t j, const float *gx, const float *gh, float hp)
{
    const float r = frl_dm_sigmoid(gx[j] + gh[j]);
    const float z = frl_dm_sigmoid(gx[h + j] + gh[h + j]);
    const float n = tanhf(gx[2 * h + j] + r * gh[2 * h + j]);
    return (1.0f - z) * n + z * hp;
}

/* Unit j of an LSTM row: the gates' sums gx + gh, [4h] each (blocks i, f, g, o), and
 * the cell before cp; the new cell into *c, returns the new h. */
FRL_HD float frl_dm_lstm_unit(int32_t h, int32_t j, const float *gx, const float *gh, float cp,
                              float *c)
{
    const float ig = frl_dm_sigmoid(gx[j] + gh[j]), fg = frl_dm_sigmoid(gx[h + j] + gh[h + j]);
    const float gg = tanhf(gx[2 * h + j] + gh[2 * h + j]);
    const float og = frl_dm_sigmoid(gx[3 * h + j] + gh[3 * h + j]);
    *c = fg * cp + ig * gg;
    return og * tanhf(*c);
}

/* ---- advantages over one env's column of a [T x B] slot ---- */

typedef struct frl_dm_adv_params {
    double gamma, lambda, rho_bar, c_bar;
    int32_t vtrace;
    int32_t decoupled; /* V-trace's adv without its rho_t: decoupled PPO weighs it later */
} frl_dm_adv_params;

FRL_HD double frl_dm_truncated_ratio(double log_ratio, double bar)
{
    return log_ratio >= log(bar) ? bar : exp(log_ratio);
}

/* GAE(lambda): a reset row (next-step autoreset) is masked and carries the value of the
 * final observation before it, which a truncation bootstraps from. */
FRL_HD void frl_dm_gae_column(int32_t T, int64_t B, int64_t b, const float *reward,
                              const float *value, const uint8_t *term, const uint8_t *trunc,
                              const uint8_t *reset, float bootstrap, const frl_dm_adv_params *p,
                              float *adv, float *ret, uint8_t *valid)
{
    double g = p->gamma, gl = p->gamma * p->lambda, next_v = bootstrap, next_adv = 0;
    for (int32_t t = T - 1; t >= 0; t--) {
        int64_t i = (int64_t)t * B + b;
        valid[i] = !reset[i];
        if (reset[i]) {
            adv[i] = ret[i] = 0;
            next_v = value[i];
            next_adv = 0;
            continue;
        }
        double delta = reward[i] + g * next_v * (1 - term[i]) - value[i];
        double a = delta + gl * (1 - (term[i] | trunc[i])) * next_adv;
        adv[i] = (float)a;
        ret[i] = (float)(a + value[i]);
        next_adv = a;
        next_v = value[i];
    }
}

/* V-trace (Espeholt et al., 2018): ret gets the value targets v_t, adv the policy
 * gradient's rho_t (r_t + gamma v_{t+1} - V(x_t)); see lib/algo/vtrace.h. */
FRL_HD void frl_dm_vtrace_column(int32_t T, int64_t B, int64_t b, const float *reward,
                                 const float *value, const float *log_ratio, const uint8_t *term,
                                 const uint8_t *trunc, const uint8_t *reset, float bootstrap,
                                 const frl_dm_adv_params *p, float *adv, float *ret,
                                 uint8_t *valid)
{
    double next_v = bootstrap, next_target = bootstrap, next_acc = 0;
    for (int32_t t = T - 1; t >= 0; t--) {
        int64_t i = (int64_t)t * B + b;
        valid[i] = !reset[i];
        if (reset[i]) {
            ret[i] = adv[i] = 0;
            next_v = next_target = value[i];
            next_acc = 0;
            continue;
        }
        double rho = frl_dm_truncated_ratio(log_ratio[i], p->rho_bar);
        double c = p->lambda * frl_dm_truncated_ratio(log_ratio[i], p->c_bar);
        double cont = (term[i] | trunc[i]) ? 0.0 : 1.0;
        double boot_v = term[i] ? 0.0 : next_v, boot_target = term[i] ? 0.0 : next_target;
        double v = value[i];
        double acc = rho * (reward[i] + p->gamma * boot_v - v) + p->gamma * c * cont * next_acc;
        ret[i] = (float)(v + acc);
        adv[i] = (float)((p->decoupled ? 1.0 : rho) * (reward[i] + p->gamma * boot_target - v));
        next_v = v;
        next_target = v + acc;
        next_acc = acc;
    }
}

/* ---- heads ---- */

FRL_HD double frl_dm_log_sum_exp(const float *z, int32_t n)
{
    double mx = z[0], s = 0;
    for (int32_t i = 1; i < n; i++)
        mx = z[i] > mx ? z[i] : mx;
    for (int32_t i = 0; i < n; i++)
        s += exp((double)z[i] - mx);
    return mx + log(s);
}

static const double frl_dm_half_log_2pi = 0.91893853320467274178;

/* log pi(a) of one row: a categorical over n logits (action index *a_int) or a diagonal
 * Gaussian with means z and log-stds log_std (action a_box[n]). */
FRL_HD double frl_dm_logp(const float *z, int32_t n, int32_t discrete, const int32_t *a_int,
                          const float *a_box, const float *log_std)
{
    if (discrete)
        return (double)z[*a_int] - frl_dm_log_sum_exp(z, n);
    double s = 0;
    for (int32_t i = 0; i < n; i++) {
        double u = ((double)a_box[i] - z[i]) * exp(-(double)log_std[i]);
        s += -0.5 * u * u - (double)log_std[i] - frl_dm_half_log_2pi;
    }
    return s;
}

/* ---- the learner's loss, one row ---- */

/* Decoupled PPO (Hilton et al., 2021) for rollouts a lagging policy mu acted: the clip
 * is centred on the learner's policy at the update's start (log pi_0 = log mu + the
 * values pass's log-ratio), and the normalised advantage is weighted by
 * min(rho_bar, pi_0 / mu), the importance weight of the surrogate, after the
 * normalisation, so that weighting cannot shift the minibatch's mean towards the
 * actions pi_0 already prefers. */
FRL_HD void frl_dm_decouple(float log_ratio, double rho_bar, float mu_lp, float norm_adv,
                            float *old_lp, float *adv)
{
    *old_lp = mu_lp + log_ratio;
    *adv = (float)(frl_dm_truncated_ratio(log_ratio, rho_bar) * norm_adv);
}

/* The loss settings and the minibatch's constants. */
typedef struct frl_dm_loss {
    double clip, ent_coef, vf_coef;
    int32_t clip_value, impala;
    int32_t decoupled; /* frl_dm_decouple each row, with weights truncated at rho_bar */
    double rho_bar;
} frl_dm_loss;

/* A learner's shape and settings, as the device learner takes them (the plugin's
 * learner_create, lib/core/plugin_api.h). */
typedef struct frl_dm_learn_desc {
    int32_t T, B, M;          /* steps and envs of a rollout, rows per minibatch */
    int32_t norm_adv;
    frl_dm_adv_params adv;    /* vtrace != 0: V-trace (log-ratios by the learner's actor) */
    frl_dm_loss loss;
    double max_grad_norm, adam_eps;
} frl_dm_learn_desc;

/* Statistics per row, summed by the learner: policy loss, value loss, entropy,
 * approximate KL, clipped (0/1). */
enum { FRL_DM_STATS = 5 };

/* dL/dv of one row, and its value loss (CleanRL's clipped or plain squared error). */
FRL_HD double frl_dm_value_grad(const frl_dm_loss *s, double v, double old_v, double ret,
                                double *loss)
{
    double l1 = (v - ret) * (v - ret);
    if (!s->clip_value) {
        *loss = 0.5 * l1;
        return v - ret;
    }
    double c = s->clip, d = v - old_v;
    double vc = old_v + (d < -c ? -c : (d > c ? c : d));
    double l2 = (vc - ret) * (vc - ret);
    *loss = 0.5 * (l1 > l2 ? l1 : l2);
    if (l1 >= l2)
        return v - ret;
    return (d > -c && d < c) ? vc - ret : 0.0;
}

/* The policy loss of a row into *pg; returns its derivative by log pi(a). PPO:
 * max(-A ratio, -A clip(ratio)); IMPALA: -A log pi. */
FRL_HD double frl_dm_policy_grad(const frl_dm_loss *s, double lp, double ratio, double adv,
                                 double *pg)
{
    if (s->impala) {
        *pg = -adv * lp;
        return -adv;
    }
    double c = s->clip, rc = ratio < 1 - c ? 1 - c : (ratio > 1 + c ? 1 + c : ratio);
    double pg1 = -adv * ratio, pg2 = -adv * rc;
    *pg = pg1 > pg2 ? pg1 : pg2;
    return pg1 >= pg2 ? -adv * ratio : 0.0;
}

/* The row's inputs. adv is already normalised; scale = 1 / (valid rows of the
 * minibatch), applied to every gradient (the loss is a mean). */
typedef struct frl_dm_row {
    const float *z;         /* [n] logits or means */
    float value, old_v, old_lp, adv, ret;
    const int32_t *a_int;   /* discrete */
    const float *a_box;     /* box: [n] */
    const float *log_std;   /* box: [n] */
} frl_dm_row;

/* Gradients of one valid row: d_z[n] (logits or means), *d_value, d_log_std[n] (box:
 * this row's share, written, not added), and stats[FRL_DM_STATS]. */
FRL_HD void frl_dm_row_grad(const frl_dm_loss *s, const frl_dm_row *r, int32_t n,
                            int32_t discrete, double scale, float *d_z, float *d_value,
                            float *d_log_std, float *stats)
{
    double lp, ent = 0, lse = 0;
    if (discrete) {
        lse = frl_dm_log_sum_exp(r->z, n);
        for (int32_t i = 0; i < n; i++) {
            double l = (double)r->z[i] - lse;
            ent -= exp(l) * l;
        }
        lp = (double)r->z[*r->a_int] - lse;
    } else {
        lp = frl_dm_logp(r->z, n, 0, 0, r->a_box, r->log_std);
        for (int32_t i = 0; i < n; i++)
            ent += 0.5 + frl_dm_half_log_2pi + (double)r->log_std[i];
    }
    double logratio = lp - r->old_lp, ratio = exp(logratio), pg;
    double c_lp = frl_dm_policy_grad(s, lp, ratio, r->adv, &pg) * scale;
    double c_ent = -s->ent_coef * scale;
    if (discrete) {
        for (int32_t i = 0; i < n; i++) {
            double l = (double)r->z[i] - lse, p = exp(l);
            /* d logp(a)/dz_i = [i == a] - p_i;  dH/dz_i = -p_i (log p_i + H). */
            d_z[i] = (float)(c_lp * ((i == *r->a_int) - p) - c_ent * p * (l + ent));
        }
    } else {
        for (int32_t i = 0; i < n; i++) {
            double inv = exp(-(double)r->log_std[i]);
            double u = ((double)r->a_box[i] - r->z[i]) * inv;
            d_z[i] = (float)(c_lp * u * inv);
            d_log_std[i] = (float)(c_lp * (u * u - 1.0) + c_ent);
        }
    }
    double vloss, dv = frl_dm_value_grad(s, r->value, r->old_v, r->ret, &vloss);
    *d_value = (float)(s->vf_coef * dv * scale);
    stats[0] = (float)pg;
    stats[1] = (float)vloss;
    stats[2] = (float)ent;
    /* The stats compare log pi rounded as the rollout stored it (lib/algo/ppo.c's
     * stat_ratio): the rounding alone is no change of policy. */
    double s_lr = (double)(float)lp - r->old_lp, s_ratio = exp(s_lr);
    stats[3] = (float)((s_ratio - 1) - s_lr);
    stats[4] = fabs(s_ratio - 1) > s->clip ? 1.0f : 0.0f;
}

/* ---- Adam ---- */

/* One parameter: the same operations, in the same order, as the CPU tables' adam (see
 * lib/nn/kernels.h), with the clipping factor gscale. */
FRL_HD void frl_dm_adam(float *p, float g, float *m, float *v, float gscale, float b1, float b2,
                        float step, float rbc2, float eps)
{
    float gs = g * gscale;
    float mm = b1 * *m + (1.0f - b1) * gs;
    float vv = b2 * *v + (1.0f - b2) * gs * gs;
    mm = fabsf(mm) < FLT_MIN ? 0.0f : mm; /* moments below FLT_MIN are stored as +0 */
    vv = fabsf(vv) < FLT_MIN ? 0.0f : vv;
    vv = vv > FLT_MAX ? FLT_MAX : vv; /* an overflowed v would freeze p; NaN stays */
    *m = mm;
    *v = vv;
    *p -= step * mm / (sqrtf(vv) * rbc2 + eps);
}

#endif
