/* A sum tree over n leaves of non-negative mass (R2D2's sequence priorities): set a
 * leaf, read the total, find the leaf where a running sum crosses u. A binary tree in
 * one array of doubles, leaves at [cap, 2 cap), cap the power of two >= n; node i's
 * children are 2i and 2i + 1, the root is node 1. Sequences number in the thousands to
 * the hundred thousands and a minibatch draws tens, so the replay's wide trees (built
 * for millions of transitions and 256-row draws) would buy nothing here. */
#ifndef FRL_RL_SUM_TREE_H
#define FRL_RL_SUM_TREE_H

#include <stdint.h>

#include "core/alloc.h"
#include "io/container.h"

typedef struct frl_sum_tree {
    int64_t n, cap;
    double *node; /* [2 cap] */
} frl_sum_tree;

/* All leaves zero; returns 0, or -1 when the array cannot be had. */
int frl_sum_tree_init(frl_sum_tree *t, const frl_allocator *al, int64_t n);
void frl_sum_tree_free(frl_sum_tree *t, const frl_allocator *al);

void frl_sum_tree_set(frl_sum_tree *t, int64_t i, double mass);

static inline double frl_sum_tree_get(const frl_sum_tree *t, int64_t i)
{
    return t->node[t->cap + i];
}

static inline double frl_sum_tree_total(const frl_sum_tree *t)
{
    return t->node[1];
}

/* The leaf whose span of the running sum holds u in [0, total): never a leaf of zero
 * mass while the total is positive (u is clamped into the last non-empty leaf). */
int64_t frl_sum_tree_find(const frl_sum_tree *t, double u);

/* Every leaf zero. */
void frl_sum_tree_clear(frl_sum_tree *t);

/* The priority p a leaf p^alpha was made from (0 for a leaf of 0), so a checkpoint's
 * leaves can be made again under another exponent (train.per_alpha changed on resume):
 * the replay's and R2D2's. alpha must be > 0 (p^0 = 1 keeps nothing of p). Priorities
 * enter as floats, and the root, read to about 1e-16/alpha relative, is rounded back to
 * one: the very p wherever that error is below a float's half spacing (3e-8), that is
 * for every alpha above about 1e-8. */
float frl_priority_of_leaf(double leaf, double alpha);

/* The exponent the leaves of a checkpoint were made with: its F64 scalar `section`
 * ("replay.alpha", "r2d2.alpha"), or for a file from before that section `fallback` (the
 * saved settings' train.per_alpha; NaN: `now`, this run's). Leaves to be made again
 * under another exponent need one in [0, 1] (else FRL_ERR_FORMAT) and not 0, which keeps
 * no priority (FRL_ERR_INVALID_ARGUMENT, naming the way on). */
frl_status frl_saved_alpha(const frl_container *c, const char *section, double fallback,
                           double now, double *out, char *err);

#endif
