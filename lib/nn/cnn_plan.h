/* A conv stack's shape (frl_cnn, laid out by frl_cnn_init in cnn.h) and the sizes and
 * offsets of its workspace, apart from the passes: the CUDA plugin, which does not link
 * libfastrl, compiles cnn_plan.c too and lays out the device's encoder exactly as the
 * CPU's. */
#ifndef FRL_NN_CNN_PLAN_H
#define FRL_NN_CNN_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "nn/conv.h"

enum { FRL_CNN_MAX_LAYERS = 4 };

typedef struct frl_cnn {
    int32_t layers;
    frl_conv2d conv[FRL_CNN_MAX_LAYERS];
    int32_t in_h, in_w, in_c; /* in_c: frames * the frames' channels */
    int32_t frames;         /* frames a row stacks (1: none) */
    int32_t out_w;          /* features per image: the last layer's h * w * c */
    int32_t widest;         /* the largest layer output per image */
    int32_t block;          /* images per patch matrix */
    size_t param_base, num_params;
} frl_cnn;

/* Values of one image as the first layer takes it (frames * channels a pixel), and the
 * largest patch matrix of one image among the layers. */
size_t frl_cnn_in_floats(const frl_cnn *n);
size_t frl_cnn_patch_floats(const frl_cnn *n);

/* Workspace of a pass over rows images, in floats: the stored activations (the scaled
 * input and every layer's output), the patch matrix of one block and, when training,
 * two [rows x widest] buffers of input gradients. */
size_t frl_cnn_acts_floats(const frl_cnn *n, int32_t rows);
/* Where layer l's output starts in the stored activations of rows images (l == -1:
 * the scaled input; the layers' outputs follow it, each [rows x out_size]). */
size_t frl_cnn_acts_offset(const frl_cnn *n, int32_t rows, int32_t l);
size_t frl_cnn_work_floats(const frl_cnn *n, int32_t rows);
size_t frl_cnn_grad_floats(const frl_cnn *n, int32_t rows);

#endif
