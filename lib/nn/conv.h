/* 2D convolutions over the kernel tables: the layers of a pixel policy's encoder
 * (nn/cnn.h).
 *
 * Layout: activations are NHWC, [batch x h x w x c] row-major, so one image row of
 * channels is contiguous and a batch of images is a [batch * h * w x c] matrix, the
 * layout the linear kernels take. Weights are wt[(kh * kw * in_c) x out_c], the patch
 * index running (ki, kj, channel) with the channel fastest, and a bias[out_c]; like an
 * MLP the layer owns no memory: both sit at param_base in a flat parameter vector.
 *
 * A convolution is im2col, then the table's linear kernels: each output position's
 * patch (kh x kw x in_c values, zeros where it overhangs the padded border) becomes one
 * row of a patch matrix [batch * out_h * out_w x kh * kw * in_c], and
 * y = act(patches . wt + b) is linear_fwd (an unpadded layer's forward pass and weight
 * gradient read the patches in place through the table's conv_fwd and conv_bwd_weight,
 * with the same bits), so the forward pass, the
 * weight gradient and the input gradient inherit the tables' determinism contract
 * (nn/kernels.h): the
 * result does not depend on the batch, its split or the thread count. col2im adds the
 * patch gradients back into dx in a fixed order (positions, then the patch's
 * elements), so the input gradient does not either. */
#ifndef FRL_NN_CONV_H
#define FRL_NN_CONV_H

#include <stddef.h>
#include <stdint.h>

#include "nn/kernels.h"

typedef struct frl_conv2d {
    int32_t in_h, in_w, in_c;
    int32_t out_c, kh, kw, stride, pad;
    int32_t out_h, out_w;   /* (in + 2 pad - k) / stride + 1 */
    int32_t patch;          /* kh * kw * in_c: the GEMM's inner dimension */
    frl_nn_act act;
    size_t off_w, off_b;    /* wt[patch x out_c] and b[out_c] in the parameter vector */
    size_t param_base, num_params;
} frl_conv2d;

/* Lay out a convolution whose parameters start at param_base. 0 on success, -1 when
 * the shape is impossible (a size < 1, stride < 1, pad < 0 or >= the kernel, or a kernel
 * larger than the padded input), with c left zeroed. */
int frl_conv2d_init(frl_conv2d *c, int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_c,
                    int32_t kh, int32_t kw, int32_t stride, int32_t pad, frl_nn_act act,
                    size_t param_base);

/* Values per image of the input and of the output. */
static inline size_t frl_conv2d_in_size(const frl_conv2d *c)
{
    return (size_t)c->in_h * (size_t)c->in_w * (size_t)c->in_c;
}

static inline size_t frl_conv2d_out_size(const frl_conv2d *c)
{
    return (size_t)c->out_h * (size_t)c->out_w * (size_t)c->out_c;
}

/* Floats of work a pass over batch images needs (the patch matrix). */
static inline size_t frl_conv2d_work_floats(const frl_conv2d *c, int32_t batch)
{
    return (size_t)batch * (size_t)c->out_h * (size_t)c->out_w * (size_t)c->patch;
}

/* y [batch x out_size] = act(conv(x [batch x in_size])). work: frl_conv2d_work_floats. */
void frl_conv2d_forward(const frl_conv2d *c, const frl_kernels *k, const float *params,
                        int32_t batch, const float *x, float *y, float *work);

/* Given y from the forward pass of x and dy = dL/dy (overwritten: the activation's
 * derivative is applied in place), write (accumulate == 0) or add (1) the weight and
 * bias gradients at the layer's offsets in grads, and, when dx is not NULL, write
 * dL/dx [batch x in_size]. */
void frl_conv2d_backward(const frl_conv2d *c, const frl_kernels *k, const float *params,
                         float *grads, int accumulate, int32_t batch, const float *x,
                         const float *y, float *dy, float *dx, float *work);

#endif
