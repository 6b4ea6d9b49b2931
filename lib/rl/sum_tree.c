#include <math.h>
#include <string.h>

#include "core/error.h"
#include "rl/sum_tree.h"

int frl_sum_tree_init(frl_sum_tree *t, const frl_allocator *al, int64_t n)
{
    t->n = n;
    t->cap = 1;
    while (t->cap < n)
        t->cap *= 2;
    t->node = frl_alloc(al, sizeof(double) * 2 * (size_t)t->cap, 64);
    if (!t->node)
        return -1;
    frl_sum_tree_clear(t);
    return 0;
}

void frl_sum_tree_free(frl_sum_tree *t, const frl_allocator *al)
{
    frl_free(al, t->node);
    t->node = NULL;
}

void frl_sum_tree_clear(frl_sum_tree *t)
{
    memset(t->node, 0, sizeof(double) * 2 * (size_t)t->cap);
}

/* The ancestors are recomputed from their children, not adjusted by a difference, so
 * rounding does not accumulate over millions of updates. */
void frl_sum_tree_set(frl_sum_tree *t, int64_t i, double mass)
{
    int64_t k = t->cap + i;
    t->node[k] = mass;
    for (k /= 2; k >= 1; k /= 2)
        t->node[k] = t->node[2 * k] + t->node[2 * k + 1];
}

int64_t frl_sum_tree_find(const frl_sum_tree *t, double u)
{
    int64_t k = 1;
    while (k < t->cap) {
        double left = t->node[2 * k];
        /* go right only where there is mass: rounding may leave u just past the total */
        if (u < left || t->node[2 * k + 1] <= 0.0) {
            k = 2 * k;
        } else {
            u -= left;
            k = 2 * k + 1;
        }
    }
    return k - t->cap;
}

float frl_priority_of_leaf(double leaf, double alpha)
{
    return leaf > 0 ? (float)pow(leaf, 1.0 / alpha) : 0.0f;
}

frl_status frl_saved_alpha(const frl_container *c, const char *section, double fallback,
                           double now, double *out, char *err)
{
    const frl_section *s = frl_container_optional(c, section, FRL_DTYPE_F64, 1);
    double a = s ? *(const double *)s->data : isnan(fallback) ? now : fallback;
    *out = a;
    if (a == now)
        return FRL_OK;
    if (!(a >= 0 && a <= 1))
        return frl_fail(err, FRL_ERR_FORMAT, "%s is %g (need [0, 1])", section, a);
    if (a == 0)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "%s: saved with train.per_alpha=0, "
                        "whose leaves keep no priority, and the settings ask for %g: keep "
                        "train.per_alpha=0 as saved, or set train.save_replay=false",
                        section, now);
    return FRL_OK;
}
