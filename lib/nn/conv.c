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

/* The taps kj in [*lo, *hi) of a kernel row that fall inside the image, for an output
 * column whose first tap is at image column iw0. */
static void inside(const frl_conv2d *c, int32_t iw0, int32_t *lo, int32_t *hi)
{
    *lo = iw0 < 0 ? -iw0 : 0;
    *hi = c->in_w - iw0 < c->kw ? c->in_w - iw0 : c->kw;
    if (*hi < *lo)
        *hi = *lo;
}

/* Runs up to this many floats are copied by a loop the compiler vectorises: a first
 * layer's (24 to 32 floats: 3 or 4 channels) cost about as much as memcpy's call;
 * longer ones (128 to 192 floats) go faster through memcpy (bench_conv, AVX-512 table,
 * batch 32: the first layers' forward went from 58-63% to 76-82% of the GEMM floor;
 * the loop for every run cost the 32- and 64-channel layers 8-10%). */
enum { SHORT_RUN = 64 };

/* A patch entirely inside the image: kh runs of kw * in_c floats, no zeros. */
static void gather_inside(const frl_conv2d *c, const float *src, float *row)
{
    size_t run = (size_t)c->kw * (size_t)c->in_c, pitch = (size_t)c->in_w * (size_t)c->in_c;
    for (int32_t ki = 0; ki < c->kh; ki++, row += run, src += pitch) {
        if (run > SHORT_RUN) {
            memcpy(row, src, sizeof(float) * run);
            continue;
        }
        for (size_t i = 0; i < run; i++)
            row[i] = src[i];
    }
}

/* The patch of output position (oh, ow) of one image. A kernel row's taps are
 * consecutive pixels, so each row of the patch is one run of the image row (kw * in_c
 * floats, one memcpy), with zeros where it overhangs the border. */
static void gather_patch(const frl_conv2d *c, const float *img, int32_t oh, int32_t ow,
                         float *row)
{
    size_t ch = (size_t)c->in_c, run = (size_t)c->kw * ch;
    int32_t iw0 = ow * c->stride - c->pad, ih0 = oh * c->stride - c->pad, lo, hi;
    inside(c, iw0, &lo, &hi);
    if (lo == 0 && hi == c->kw && ih0 >= 0 && ih0 + c->kh <= c->in_h) {
        gather_inside(c, img + ((size_t)ih0 * (size_t)c->in_w + (size_t)iw0) * ch, row);
        return;
    }
    for (int32_t ki = 0; ki < c->kh; ki++, row += run) {
        int32_t ih = oh * c->stride - c->pad + ki;
        if (ih < 0 || ih >= c->in_h) {
            memset(row, 0, sizeof(float) * run);
            continue;
        }
        memset(row, 0, sizeof(float) * (size_t)lo * ch);
        memcpy(row + (size_t)lo * ch,
               img + ((size_t)ih * (size_t)c->in_w + (size_t)(iw0 + lo)) * ch,
               sizeof(float) * (size_t)(hi - lo) * ch);
        memset(row + (size_t)hi * ch, 0, sizeof(float) * (size_t)(c->kw - hi) * ch);
    }
}

/* dx += each patch gradient, at the positions it was gathered from, in the order of
 * im2col (so the sums do not depend on anything but the shapes). */
static void scatter_patch(const frl_conv2d *c, const float *dpatch, int32_t oh, int32_t ow,
                          float *dimg)
{
    size_t ch = (size_t)c->in_c, run = (size_t)c->kw * ch;
    int32_t iw0 = ow * c->stride - c->pad, lo, hi;
    inside(c, iw0, &lo, &hi);
    size_t n = (size_t)(hi - lo) * ch;
    for (int32_t ki = 0; ki < c->kh; ki++, dpatch += run) {
        int32_t ih = oh * c->stride - c->pad + ki;
        if (ih < 0 || ih >= c->in_h)
            continue;
        float *d = dimg + ((size_t)ih * (size_t)c->in_w + (size_t)(iw0 + lo)) * ch;
        const float *s = dpatch + (size_t)lo * ch;
        for (size_t i = 0; i < n; i++)
            d[i] += s[i];
    }
}

/* The shape the tables' direct kernels take (an unpadded layer). */
static frl_conv_dims dims_of(const frl_conv2d *c)
{
    return (frl_conv_dims){c->in_h, c->in_w, c->in_c, c->out_h, c->out_w,
                           c->out_c, c->kh, c->kw, c->stride};
}

static int32_t positions(const frl_conv2d *c, int32_t batch)
{
    return batch * c->out_h * c->out_w;
}

/* The patches of output positions [first, first + n) of the batch (position r: image
 * r / (out_h out_w), row-major within it). */
static void im2col_range(const frl_conv2d *c, const float *x, int32_t first, int32_t n,
                         float *patches)
{
    size_t in = frl_conv2d_in_size(c), p = (size_t)c->patch;
    int32_t per = c->out_h * c->out_w;
    for (int32_t r = first; r < first + n; r++, patches += p) {
        int32_t b = r / per, q = r % per;
        gather_patch(c, x + (size_t)b * in, q / c->out_w, q % c->out_w, patches);
    }
}

/* Positions a pass gathers and multiplies at a time: about 128 KiB of patches,
 * which stay in the L2 cache for the product (a whole batch's patches, megabytes for a
 * first layer, went out to memory and back); a multiple of 16 rows. */
static int32_t forward_chunk(const frl_conv2d *c)
{
    int32_t rows = (int32_t)((128 * 1024 / sizeof(float)) / (size_t)c->patch) / 16 * 16;
    return rows > 16 ? rows : 16;
}

/* Chunk by chunk: the linear kernels compute each row alone, so the bits are those of
 * one product over all positions. An unpadded layer skips the patch matrix: the table's
 * conv_fwd reads each patch where it lies in the image, with linear_fwd's chains (the
 * same bits; tests/nn/test_kernels.c checks every table). */
void frl_conv2d_forward(const frl_conv2d *c, const frl_kernels *k, const float *params,
                        int32_t batch, const float *x, float *y, float *work)
{
    const frl_conv_dims d = dims_of(c);
    if (c->pad == 0 && k->conv_fwd(&d, batch, x, params + c->off_w, params + c->off_b, y, c->act))
        return;
    int32_t rows = positions(c, batch), chunk = forward_chunk(c);
    for (int32_t r0 = 0; r0 < rows; r0 += chunk) {
        int32_t n = rows - r0 < chunk ? rows - r0 : chunk;
        im2col_range(c, x, r0, n, work);
        k->linear_fwd(n, c->out_c, c->patch, work, params + c->off_w, params + c->off_b,
                      y + (size_t)r0 * (size_t)c->out_c, c->act);
    }
}

/* The backward's chunks are 4 times the forward's (about 512 KiB of patches): its
 * weight-gradient product gains from long chunks more than from cache (bench_conv,
 * batch 32: with the forward's chunks the 32- and 64-channel layers lost 10-15%; with
 * these they run as unchunked, and the first layers gain 15-25%). */
static int32_t backward_chunk(const frl_conv2d *c)
{
    return 4 * forward_chunk(c);
}

/* dx += the patch gradients of positions [first, first + n), in position order. */
static void col2im_range(const frl_conv2d *c, const float *dpatches, int32_t first, int32_t n,
                         float *dx)
{
    size_t in = frl_conv2d_in_size(c), p = (size_t)c->patch;
    int32_t per = c->out_h * c->out_w;
    for (int32_t r = first; r < first + n; r++, dpatches += p) {
        int32_t b = r / per, q = r % per;
        scatter_patch(c, dpatches, q / c->out_w, q % c->out_w, dx + (size_t)b * in);
    }
}

/* An unpadded layer's input gradient in one pass through the table's conv_bwd_input
 * (the same bits as the chunks' linear_bwd_input and col2im), with wt's blocks
 * transposed into work, which holds them when there are at least out_c positions (a
 * patch matrix of those is as large). 1 when done, dx written. */
static int input_grad_direct(const frl_conv2d *c, const frl_kernels *k, int32_t batch,
                             const float *params, const float *dy, float *dx, float *work)
{
    if (c->pad != 0 || positions(c, batch) < c->out_c)
        return 0;
    const size_t block = (size_t)c->in_c * (size_t)c->out_c;
    for (int32_t kp = 0; kp < c->kh * c->kw; kp++)
        k->transpose(c->in_c, c->out_c, params + c->off_w + kp * block, work + kp * block);
    const frl_conv_dims d = dims_of(c);
    return k->conv_bwd_input(&d, batch, dy, work, dx);
}

/* Chunk by chunk, as the forward: every weight and bias gradient element is one chain
 * of additions over the positions in order, continued across chunks (the kernels
 * accumulate onto the stored value), and dx takes the patch gradients in position
 * order, so the bits are those of one pass over all positions (test_conv checks). */
void frl_conv2d_backward(const frl_conv2d *c, const frl_kernels *k, const float *params,
                         float *grads, int accumulate, int32_t batch, const float *x,
                         const float *y, float *dy, float *dx, float *work)
{
    int32_t rows = positions(c, batch), chunk = backward_chunk(c);
    if (c->act != FRL_NN_LINEAR)
        k->act_bwd((int64_t)rows * c->out_c, y, dy, dy, c->act);
    if (dx)
        memset(dx, 0, sizeof(float) * frl_conv2d_in_size(c) * (size_t)batch);
    /* An unpadded layer's weight gradient reads the patches in place (the same bits),
     * so the chunks below need no patch matrix, only room for the patch gradients. */
    const frl_conv_dims d = dims_of(c);
    int direct = c->pad == 0 && k->conv_bwd_weight(&d, batch, x, dy, grads + c->off_w,
                                                   grads + c->off_b, accumulate);
    /* No positions: the loop below makes no call, but the gradients must still be
     * written (+0) unless accumulating, as the kernel does for m = 0. */
    if (!direct && rows == 0)
        k->linear_bwd_weight(0, c->out_c, c->patch, work, dy, grads + c->off_w,
                             grads + c->off_b, accumulate);
    int direct_dx = dx && input_grad_direct(c, k, batch, params, dy, dx, work);
    for (int32_t r0 = 0; r0 < rows; r0 += chunk) {
        int32_t n = rows - r0 < chunk ? rows - r0 : chunk;
        const float *dyc = dy + (size_t)r0 * (size_t)c->out_c;
        if (!direct) {
            im2col_range(c, x, r0, n, work);
            k->linear_bwd_weight(n, c->out_c, c->patch, work, dyc, grads + c->off_w,
                                 grads + c->off_b, accumulate || r0 > 0);
        }
        if (!dx || direct_dx)
            continue;
        /* The chunk's patches are spent: their room takes the patch gradients. */
        k->linear_bwd_input(n, c->out_c, c->patch, dyc, params + c->off_w, work);
        col2im_range(c, work, r0, n, dx);
    }
}
