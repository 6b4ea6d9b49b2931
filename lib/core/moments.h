/* Merging summary statistics of batches (count, mean, sum of squared deviations) with
 * Chan et al.'s pairwise update: the distributed mode merges per-group statistics in a
 * fixed group order with it, so the result does not depend on which rank held which
 * group. */
#ifndef FRL_CORE_MOMENTS_H
#define FRL_CORE_MOMENTS_H

#include <string.h>

/* acc (count, mean, m2) += b's; an empty b changes nothing, an empty acc becomes b. */
static inline void frl_merge_moments(double *acc, const double *b)
{
    double na = acc[0], nb = b[0], n = na + nb;
    if (nb == 0)
        return;
    if (na == 0) {
        memcpy(acc, b, 3 * sizeof(double));
        return;
    }
    double d = b[1] - acc[1];
    acc[1] += d * nb / n;
    acc[2] += b[2] + d * d * na * nb / n;
    acc[0] = n;
}

#endif
