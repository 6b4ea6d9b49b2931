/* Multi-layer perceptrons over the kernel table: forward with stored activations,
 * and backward into a gradient vector laid out like the parameters.
 *
 * An MLP does not own memory: its parameters live at param_base in a flat float
 * vector shared by every network of a policy, so Adam, clipping, saving and the
 * gradient reduction all work on one contiguous array. */
#ifndef FRL_NN_MLP_H
#define FRL_NN_MLP_H

#include <stddef.h>
#include <stdint.h>

#include "nn/kernels.h"

enum { FRL_MLP_MAX_LAYERS = 9 };

typedef struct frl_mlp {
    int32_t layers;                      /* linear layers */
    int32_t width[FRL_MLP_MAX_LAYERS + 1]; /* width[0] = input, width[layers] = output */
    frl_nn_act act;                      /* of hidden layers */
    int32_t activate_last;               /* 1: the last layer is activated too (a trunk) */
    size_t off_w[FRL_MLP_MAX_LAYERS];    /* offsets of wt[in x out] in the parameters */
    size_t off_b[FRL_MLP_MAX_LAYERS];
    size_t param_base, num_params;
    int32_t max_width;                   /* widest layer, input included */
    int32_t act_width;                   /* floats per row of stored activations */
} frl_mlp;

/* Lay out an MLP in -> hidden[0..nh) -> out (out == 0: no output layer, the last hidden
 * layer is the output and is activated). Parameters start at param_base. */
void frl_mlp_init(frl_mlp *m, int32_t in, const int32_t *hidden, int32_t nh, int32_t out,
                  frl_nn_act act, size_t param_base);

static inline int32_t frl_mlp_out(const frl_mlp *m)
{
    return m->width[m->layers];
}

/* acts: rows * act_width floats. Returns the output, [rows x out], inside acts. */
float *frl_mlp_forward(const frl_mlp *m, const frl_kernels *k, const float *params,
                       int32_t rows, const float *x, float *acts);

/* Accumulate (accumulate == 0: write) parameter gradients into grads given dL/d(output)
 * in dy. dy and scratch
 * are [rows x max_width] buffers, both overwritten. If dx is not NULL, dL/dx
 * [rows x in] is written there. acts must hold the forward pass of x.
 * w_out_in, if not NULL, holds the weights untransposed (frl_mlp_weights_out_in): the
 * input gradients dy . W are then plain forward products, which the kernels compute
 * with the same chains as linear_bwd_input (the same bits) without packing wt^T on
 * every call. */
void frl_mlp_backward(const frl_mlp *m, const frl_kernels *k, const float *params,
                      const float *w_out_in, float *grads, int accumulate, int32_t rows,
                      const float *x, const float *acts, float *dy, float *scratch, float *dx);

/* Each layer's weights as W[out x in] at the same offsets as in params (biases are not
 * written). Done once per minibatch, it replaces a transposition per shard. */
void frl_mlp_weights_out_in(const frl_mlp *m, const frl_kernels *k, const float *params,
                            float *w_out_in);

#endif
