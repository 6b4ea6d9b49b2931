/* Adam and global gradient-norm clipping over a flat parameter vector. */
#ifndef FRL_NN_OPTIM_H
#define FRL_NN_OPTIM_H

#include <stddef.h>
#include <stdint.h>

typedef struct frl_adam {
    float *m, *v;     /* first and second moments, one per parameter */
    int64_t t;        /* steps taken */
    double beta1, beta2, eps;
} frl_adam;

/* The global L2 norm of g[0..n) (accumulated in double, in index order). */
double frl_grad_norm(const float *g, size_t n);

/* Scale g so that its norm is at most max_norm (max_norm <= 0: no clipping). Returns
 * the norm before clipping. */
double frl_clip_grad_norm(float *g, size_t n, double max_norm);

/* One Adam step on p[lo..hi) (so threads can split the vector): bias-corrected as in
 * Kingma and Ba; the step count must be advanced once per update by the caller
 * (frl_adam_begin). */
void frl_adam_begin(frl_adam *a);
void frl_adam_update(const frl_adam *a, float *p, const float *g, size_t lo, size_t hi,
                     double lr);

#endif
