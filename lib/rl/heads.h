/* Action distributions: categorical over logits, and a diagonal Gaussian with a
 * state-independent log-std. Per row, in double inside (action counts are small). */
#ifndef FRL_RL_HEADS_H
#define FRL_RL_HEADS_H

#include <stdint.h>

/* ---- categorical over n logits ---- */
/* Inverse-CDF sample from softmax(logits) with a uniform u in [0, 1). */
int32_t frl_cat_sample(const float *logits, int32_t n, double u);
/* frl_cat_sample and frl_cat_logp of the sampled index in one pass over the logits
 * (their log-sum-exp computed once): the same bits as the two calls. */
int32_t frl_cat_sample_logp(const float *logits, int32_t n, double u, double *logp);
int32_t frl_cat_argmax(const float *logits, int32_t n);
double frl_cat_logp(const float *logits, int32_t n, int32_t a);
double frl_cat_entropy(const float *logits, int32_t n);
/* One pass for the learner: softmax probabilities into p[n], returns log-sum-exp, and
 * stores logp(a) and the entropy. Then frl_cat_backward_from reuses them. */
enum { FRL_CAT_FUSED_MAX = 64 };
double frl_cat_eval(const float *logits, int32_t n, int32_t a, double *p, double *logp,
                    double *entropy);
void frl_cat_backward_from(const float *logits, const double *p, double lse, double entropy,
                           int32_t n, int32_t a, double c_logp, double c_ent, float *dlogits);
/* dlogits = d(c_logp * logp(a) + c_ent * entropy) / dlogits. */
void frl_cat_backward(const float *logits, int32_t n, int32_t a, double c_logp, double c_ent,
                      float *dlogits);

/* ---- diagonal Gaussian over n dimensions ---- */
double frl_gauss_logp(const float *mean, const float *log_std, const float *a, int32_t n);
double frl_gauss_entropy(const float *log_std, int32_t n);
/* inv_std[i] = exp(-log_std[i]): the learner computes it once per shard, not per row. */
void frl_gauss_inv_std(const float *log_std, int32_t n, double *inv_std);
double frl_gauss_logp_inv(const float *mean, const float *log_std, const double *inv_std,
                          const float *a, int32_t n);
/* dmean = d(c_logp * logp(a)) / dmean; dlog_std += d(c_logp * logp + c_ent * H) / dlog_std. */
void frl_gauss_backward_inv(const float *mean, const double *inv_std, const float *a,
                            int32_t n, double c_logp, double c_ent, float *dmean,
                            double *dlog_std);

#endif
