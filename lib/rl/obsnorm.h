/* Observation normalisation by running mean and variance.
 *
 * Statistics accumulate in double (Chan et al.'s parallel merge of a whole rollout
 * at a time, in row order, so the result does not depend on threads). Acting and
 * learning use a frozen float copy, refreshed only between updates, so the
 * observations a learner replays are normalised exactly as they were when acted on. */
#ifndef FRL_RL_OBSNORM_H
#define FRL_RL_OBSNORM_H

#include <stdint.h>

typedef struct frl_obsnorm {
    int32_t width;
    /* Where the values sit in the rows it reads: rows stride floats apart, its width
     * values from column at (a mixed observation's vector part); a box's rows are the
     * values themselves (stride == width, at == 0). */
    int32_t stride, at;
    float clip;
    double count;
    double *mean, *m2;       /* running statistics [width] */
    float *use_mean, *use_inv_std; /* frozen copy used by normalise [width] */
} frl_obsnorm;

/* Arrays must be set by the owner (4 * width values); this resets them. */
void frl_obsnorm_reset(frl_obsnorm *n);
/* Merge the values of rows observation rows (stride floats apart) into the running
 * statistics. */
void frl_obsnorm_update(frl_obsnorm *n, const float *x, int64_t rows);
/* Merge a batch given by its moments: rows observations of means mean[width] and sums
 * of squared deviations m2[width] (the arithmetic of frl_obsnorm_update). */
void frl_obsnorm_merge(frl_obsnorm *n, double rows, const double *mean, const double *m2);
/* Copy the running statistics into the frozen copy. */
void frl_obsnorm_freeze(frl_obsnorm *n);
/* The first of width values whose frozen copy would be unusable (a mean beyond float's
 * range, a 1/std that is 0 or not finite), or -1: statistics read from a file are
 * checked with it before they are frozen. Running statistics of finite float rows never
 * fail it. */
int32_t frl_obsnorm_unfreezable(double count, const double *mean, const double *m2,
                                int32_t width);
/* out = clip((x - mean) / std) for the values of rows observation rows, into rows of
 * out_stride floats (each row's width values first). */
void frl_obsnorm_apply(const frl_obsnorm *n, const float *x, int32_t rows, float *out,
                       int32_t out_stride);

#endif
