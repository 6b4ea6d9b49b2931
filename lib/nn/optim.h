/* Adam and global gradient-norm clipping over a flat parameter vector, through the
 * kernel table. */
#ifndef FRL_NN_OPTIM_H
#define FRL_NN_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "nn/kernels.h"

typedef struct frl_adam {
    float *m, *v;     /* first and second moments, one per parameter */
    int64_t t;        /* steps taken */
    double beta1, beta2, eps;
} frl_adam;

/* The global L2 norm of g[0..n). */
double frl_grad_norm(const frl_kernels *k, const float *g, size_t n);

/* The factor that brings a gradient of norm `norm` down to max_norm (as torch's
 * clip_grad_norm_ computes it), or 1 when it is within the bound or max_norm <= 0.
 * A norm of 0 or NaN gives 1, an infinite one 0 (as torch: an infinite element times 0
 * is NaN, so a non-finite gradient still reaches the parameters it touches, for the
 * trainer's divergence check, while the finite elements step by 0). */
float frl_clip_scale(double norm, double max_norm);

/* The learning rate of update update_index of num_updates: lr, or with anneal falling
 * linearly to 0 over them (train.anneal_lr, every learner that reads it). */
double frl_lr_at(double lr, int32_t anneal, int64_t update_index, int64_t num_updates);

/* One Adam step on p[lo..hi) (so threads can split the vector) with the gradient
 * g * gscale: bias-corrected as in Kingma and Ba; the step count must be advanced once
 * per update by the caller (frl_adam_begin). Scaling inside the step gives the bits
 * that clipping g in place first would. */
void frl_adam_begin(frl_adam *a);

/* 1 if m[0..n) and v[0..n) could be Adam's moments: all finite, second moments >= 0.
 * A loaded file's are checked with it, so a forged one is refused at load rather than
 * turning the parameters to NaN. */
int frl_adam_moments_valid(const float *m, const float *v, size_t n);
void frl_adam_update(const frl_adam *a, const frl_kernels *k, float *p, const float *g,
                     size_t lo, size_t hi, double lr, float gscale);

#endif
