/* The sizes and offsets of a conv stack's workspace (cnn_plan.h). */
#include "nn/cnn_plan.h"

size_t frl_cnn_in_floats(const frl_cnn *n)
{
    return (size_t)n->in_h * (size_t)n->in_w * (size_t)n->in_c;
}

size_t frl_cnn_patch_floats(const frl_cnn *n)
{
    size_t most = 0;
    for (int32_t l = 0; l < n->layers; l++) {
        size_t f = frl_conv2d_work_floats(&n->conv[l], 1);
        most = f > most ? f : most;
    }
    return most;
}

size_t frl_cnn_acts_offset(const frl_cnn *n, int32_t rows, int32_t l)
{
    size_t off = 0;
    if (l >= 0)
        off += (size_t)rows * frl_cnn_in_floats(n);
    for (int32_t i = 0; i < l; i++)
        off += (size_t)rows * frl_conv2d_out_size(&n->conv[i]);
    return off;
}

size_t frl_cnn_acts_floats(const frl_cnn *n, int32_t rows)
{
    return frl_cnn_acts_offset(n, rows, n->layers);
}

size_t frl_cnn_work_floats(const frl_cnn *n, int32_t rows)
{
    int32_t b = rows < n->block ? rows : n->block;
    return (size_t)b * frl_cnn_patch_floats(n);
}

size_t frl_cnn_grad_floats(const frl_cnn *n, int32_t rows)
{
    return 2 * (size_t)rows * (size_t)n->widest;
}
