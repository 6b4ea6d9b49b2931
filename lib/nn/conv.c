/* 2D convolutions as im2col plus the linear kernels (conv.h). */
#include <string.h>

#include "nn/conv.h"

int frl_conv2d_init(frl_conv2d *c, int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_c,
                    int32_t kh, int32_t kw, int32_t stride, int32_t pad, frl_nn_act act,
                    size_t param_base)
{
    memset(c, 0, sizeof *c);
    if (in_h < 1 || in_w < 1 || in_c < 1 || out_c < 1 || kh < 1 || kw < 1 || stride < 1 ||
        pad < 0 || pad >= kh || pad >= kw || kh > in_h + 2 * pad || kw > in_w + 2 * pad)
        return -1;
    c->in_h = in_h;
    c->in_w = in_w;
    c->in_c = in_c;
    c->out_c = out_c;
    c->kh = kh;
    c->kw = kw;
    c->stride = stride;
    c->pad = pad;
    c->act = act;
    c->out_h = (in_h + 2 * pad - kh) / stride + 1;
    c->out_w = (in_w + 2 * pad - kw) / stride + 1;
    c->patch = kh * kw * in_c;
    c->param_base = param_base;
    c->off_w = param_base;
    c->off_b = param_base + (size_t)c->patch * (size_t)out_c;
    c->num_params = ((size_t)c->patch + 1) * (size_t)out_c;
    return 0;
}

size_t frl_conv2d_work_floats(const frl_conv2d *c, int32_t batch)
{
    return (size_t)batch * (size_t)c->out_h * (size_t)c->out_w * (size_t)c->patch;
}

/* The patch of output position (oh, ow) of one image: kh rows of kw * in_c values,
 * each image row's run copied whole, zeros where the patch overhangs the border. */
static void gather_patch(const frl_conv2d *c, const float *img, int32_t oh, int32_t ow,
                         float *row)
{
    size_t run = (size_t)c->in_c;
    for (int32_t ki = 0; ki < c->kh; ki++) {
        int32_t ih = oh * c->stride - c->pad + ki;
        for (int32_t kj = 0; kj < c->kw; kj++, row += run) {
            int32_t iw = ow * c->stride - c->pad + kj;
            if (ih < 0 || ih >= c->in_h || iw < 0 || iw >= c->in_w)
                memset(row, 0, sizeof(float) * run);
            else
                memcpy(row, img + ((size_t)ih * (size_t)c->in_w + (size_t)iw) * run,
                       sizeof(float) * run);
        }
    }
}

static void im2col(const frl_conv2d *c, int32_t batch, const float *x, float *patches)
{
    size_t in = frl_conv2d_in_size(c), p = (size_t)c->patch;
    for (int32_t b = 0; b < batch; b++)
        for (int32_t oh = 0; oh < c->out_h; oh++)
            for (int32_t ow = 0; ow < c->out_w; ow++, patches += p)
                gather_patch(c, x + (size_t)b * in, oh, ow, patches);
}

/* dx += each patch gradient, at the positions it was gathered from, in the order of
 * im2col (so the sums do not depend on anything but the shapes). */
static void col2im(const frl_conv2d *c, int32_t batch, const float *dpatches, float *dx)
{
    size_t in = frl_conv2d_in_size(c), run = (size_t)c->in_c;
    memset(dx, 0, sizeof(float) * in * (size_t)batch);
    for (int32_t b = 0; b < batch; b++)
        for (int32_t oh = 0; oh < c->out_h; oh++)
            for (int32_t ow = 0; ow < c->out_w; ow++)
                for (int32_t ki = 0; ki < c->kh; ki++) {
                    int32_t ih = oh * c->stride - c->pad + ki;
                    for (int32_t kj = 0; kj < c->kw; kj++, dpatches += run) {
                        int32_t iw = ow * c->stride - c->pad + kj;
                        if (ih < 0 || ih >= c->in_h || iw < 0 || iw >= c->in_w)
                            continue;
                        float *d = dx + (size_t)b * in +
                                   ((size_t)ih * (size_t)c->in_w + (size_t)iw) * run;
                        for (size_t i = 0; i < run; i++)
                            d[i] += dpatches[i];
                    }
                }
}

static int32_t positions(const frl_conv2d *c, int32_t batch)
{
    return batch * c->out_h * c->out_w;
}

void frl_conv2d_forward(const frl_conv2d *c, const frl_kernels *k, const float *params,
                        int32_t batch, const float *x, float *y, float *work)
{
    im2col(c, batch, x, work);
    k->linear_fwd(positions(c, batch), c->out_c, c->patch, work, params + c->off_w,
                  params + c->off_b, y, c->act);
}

void frl_conv2d_backward(const frl_conv2d *c, const frl_kernels *k, const float *params,
                         float *grads, int accumulate, int32_t batch, const float *x,
                         const float *y, float *dy, float *dx, float *work)
{
    int32_t rows = positions(c, batch);
    if (c->act != FRL_NN_LINEAR)
        k->act_bwd((int64_t)rows * c->out_c, y, dy, dy, c->act);
    im2col(c, batch, x, work);
    k->linear_bwd_weight(rows, c->out_c, c->patch, work, dy, grads + c->off_w,
                         grads + c->off_b, accumulate);
    if (!dx)
        return;
    /* The patch matrix is spent: its room takes the patch gradients. */
    k->linear_bwd_input(rows, c->out_c, c->patch, dy, params + c->off_w, work);
    col2im(c, batch, work, dx);
}
