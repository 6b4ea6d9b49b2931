/* A stack of 2D convolutions over uint8 images: a policy's pixel encoder.
 *
 * The input is an image observation's bytes, [rows x h x w x c] (NHWC, what an image
 * space holds), scaled to [0, 1] into the first stored activation; with frame stacking
 * a row is k such frames one after another (oldest first), and the scaling interleaves
 * them into k * c channels per pixel (frame j's channels at j * c), the layout of a
 * stack of frames as channels. Each layer is an
 * frl_conv2d (im2col and the table's linear kernels, so the determinism contract of
 * nn/kernels.h holds through the stack) whose NHWC output is the next one's input. The
 * last output, read as [rows x out_w], is what the MLP trunk takes: the flattening is
 * the layout itself. Like an MLP the stack owns no memory: its parameters sit at
 * param_base in the policy's flat vector, its activations and scratch in the caller's
 * workspace. Patch matrices are built for blocks of images, not for all rows at once,
 * so a pass over a large minibatch needs a few MiB of scratch, not gigabytes. */
#ifndef FRL_NN_CNN_H
#define FRL_NN_CNN_H

#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"
#include "nn/cnn_plan.h"
#include "nn/conv.h"

/* Kernel sizes and strides of a stack, the channels being the user's choice. */
typedef struct frl_cnn_spec {
    const char *name;
    int32_t layers;
    int32_t kernel[FRL_CNN_MAX_LAYERS], stride[FRL_CNN_MAX_LAYERS];
    int32_t channels[FRL_CNN_MAX_LAYERS]; /* the defaults */
} frl_cnn_spec;

/* Nature DQN's (Mnih et al., 2015): 32 8x8/4, 64 4x4/2, 64 3x3/1. Sample Factory's
 * convnet_simple: 32 8x8/4, 64 4x4/2, 128 3x3/2. Both unpadded, ReLU after each. */
extern const frl_cnn_spec frl_cnn_nature, frl_cnn_simple;

/* Lay out spec's stack with the given channels (num_channels == 0: the spec's own) over
 * stacks of `frames` h x w x c images, parameters from param_base. 0, or -1 with why
 * (size bytes) saying which layer does not fit the image or which setting is wrong. */
int frl_cnn_init(frl_cnn *n, const frl_cnn_spec *spec, const int32_t *channels,
                 int32_t num_channels, int32_t h, int32_t w, int32_t c, int32_t frames,
                 size_t param_base, char *why, size_t size);

/* The features [rows x out_w] of rows images (bytes, row_bytes apart; each row `frames`
 * frames), inside acts. */
const float *frl_cnn_forward(const frl_cnn *n, const frl_kernels *k, const float *params,
                             int32_t rows, const uint8_t *images, size_t row_bytes,
                             float *acts, float *work);

/* Given acts of the forward pass and dfeat = dL/d(features) [rows x out_w] (overwritten),
 * write (accumulate == 0) or add the stack's parameter gradients into grads. grad_ws:
 * frl_cnn_grad_floats. The images themselves get no gradient. */
void frl_cnn_backward(const frl_cnn *n, const frl_kernels *k, const float *params,
                      float *grads, int accumulate, int32_t rows, const float *acts,
                      float *dfeat, float *grad_ws, float *work);

/* Orthogonal weights with gain (as the MLP layers; CleanRL's Atari networks use sqrt 2
 * for every conv layer), zero biases. work: frl_cnn_init_work doubles. */
size_t frl_cnn_init_work(const frl_cnn *n);
void frl_cnn_init_params(const frl_cnn *n, float *params, double gain, frl_rng *r,
                         double *work);

#endif
