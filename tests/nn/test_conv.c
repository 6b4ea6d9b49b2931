/* 2D convolutions (lib/nn/conv.h), checkasm-style: for every kernel table this CPU
 * runs, the forward pass, the weight, bias and input gradients against a direct float64
 * convolution within the worst-case bound of float32 summation, on shapes with padding,
 * strides, 1x1 and non-square kernels, channels that are not a SIMD width, and batches
 * of one and several; the gradients against float64 central differences of the
 * reference's loss; a batch's rows equal to one image at a time, bit for bit (the
 * determinism contract); and impossible shapes refused. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/cnn.h"
#include "nn/conv.h"
#include "test_util.h"

#define U (1.0 / 16777216.0)

static uint64_t rng_state = 1;

static double unit(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

static float *randoms(size_t n, double scale)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((unit() * 2 - 1) * scale);
    return p;
}

typedef struct shape {
    int32_t h, w, c, oc, kh, kw, stride, pad, batch;
    int32_t forward_only; /* too many parameters for the central differences' time */
} shape;

static const shape shapes[] = {
    {5, 5, 1, 1, 3, 3, 1, 0, 1, 0},    /* the smallest interesting one */
    {7, 6, 3, 5, 3, 3, 1, 1, 2, 0},    /* "same" padding, non-square input */
    {9, 9, 4, 8, 3, 3, 2, 1, 3, 0},    /* stride 2 with padding */
    {12, 10, 5, 7, 1, 1, 1, 0, 2, 0},  /* 1x1: a per-pixel linear layer */
    {20, 20, 4, 16, 8, 8, 4, 0, 2, 0}, /* Nature CNN's first layer, on a small frame */
    {9, 11, 16, 17, 4, 2, 3, 1, 2, 0}, /* non-square kernel, stride > kernel height */
    {6, 6, 33, 9, 2, 2, 2, 0, 1, 0},   /* channels past a SIMD width */
    {17, 17, 64, 3, 3, 3, 1, 1, 2, 1}, /* chunks of 48 rows forward, 192 backward */
};

/* ---- the float64 reference ---- */

/* One output before its activation, summed over its patch in double (bias first, then
 * the taps in order); *m gets sum |x w| + |b| for the bound. */
static double ref_output(const frl_conv2d *c, const float *p, const float *x, int32_t b,
                         int32_t oh, int32_t ow, int32_t o, double *m)
{
    double s = p[c->off_b + (size_t)o];
    *m = fabs(s);
    for (int32_t ki = 0; ki < c->kh; ki++)
        for (int32_t kj = 0; kj < c->kw; kj++) {
            int32_t ih = oh * c->stride - c->pad + ki, iw = ow * c->stride - c->pad + kj;
            if (ih < 0 || ih >= c->in_h || iw < 0 || iw >= c->in_w)
                continue;
            for (int32_t ch = 0; ch < c->in_c; ch++) {
                double xv = x[(((size_t)b * c->in_h + ih) * c->in_w + iw) * c->in_c + ch];
                double wv = p[c->off_w + ((size_t)(ki * c->kw + kj) * c->in_c + ch) *
                                             c->out_c + o];
                s += xv * wv;
                *m += fabs(xv * wv);
            }
        }
    return s;
}

/* y and its bound: for each output, ref_output; the bound is gamma_{patch + 1} *
 * (sum |x w| + |b|), plus the activation's rounding. */
static void ref_forward(const frl_conv2d *c, const float *p, int32_t batch, const float *x,
                        double *y, double *bound)
{
    double gamma = (c->patch + 1) * U / (1 - (c->patch + 1) * U);
    for (int32_t b = 0; b < batch; b++)
        for (int32_t oh = 0; oh < c->out_h; oh++)
            for (int32_t ow = 0; ow < c->out_w; ow++)
                for (int32_t o = 0; o < c->out_c; o++) {
                    double m, s = ref_output(c, p, x, b, oh, ow, o, &m);
                    size_t i = (((size_t)b * c->out_h + oh) * c->out_w + ow) * c->out_c + o;
                    double e = gamma * m;
                    if (c->act == FRL_NN_TANH) {
                        s = tanh(s);
                        e += 4 * U; /* tanh is 1-Lipschitz; tanhf's own error */
                    }
                    y[i] = s;
                    bound[i] = e + 1e-7;
                }
}

/* ---- checks ---- */

static frl_conv2d make(const shape *s, frl_nn_act act)
{
    frl_conv2d c;
    ck_assert_int_eq(frl_conv2d_init(&c, s->h, s->w, s->c, s->oc, s->kh, s->kw, s->stride,
                                     s->pad, act, 3),
                     0);
    return c;
}

static void check_forward(const frl_kernels *k, const shape *s, frl_nn_act act)
{
    frl_conv2d c = make(s, act);
    size_t n_in = frl_conv2d_in_size(&c) * (size_t)s->batch;
    size_t n_out = frl_conv2d_out_size(&c) * (size_t)s->batch;
    float *p = randoms(c.param_base + c.num_params, 0.5), *x = randoms(n_in, 2.0);
    float *y = randoms(n_out, 0), *work = randoms(frl_conv2d_work_floats(&c, s->batch), 0);
    double *ry = malloc(n_out * sizeof(double)), *rb = malloc(n_out * sizeof(double));
    frl_conv2d_forward(&c, k, p, s->batch, x, y, work);
    ref_forward(&c, p, s->batch, x, ry, rb);
    for (size_t i = 0; i < n_out; i++)
        if (!(fabs(y[i] - ry[i]) <= rb[i]))
            ck_abort_msg("%s %dx%dx%d k%dx%d s%d p%d: y[%zu] = %.9g, float64 %.9g, bound %.3g",
                         k->name, s->h, s->w, s->c, s->kh, s->kw, s->stride, s->pad, i,
                         (double)y[i], ry[i], rb[i]);
    /* One image at a time gives the same bits as the batch. */
    float *one = randoms(frl_conv2d_out_size(&c), 0);
    for (int32_t b = 0; b < s->batch; b++) {
        frl_conv2d_forward(&c, k, p, 1, x + (size_t)b * frl_conv2d_in_size(&c), one, work);
        ck_assert(memcmp(one, y + (size_t)b * frl_conv2d_out_size(&c),
                         frl_conv2d_out_size(&c) * sizeof(float)) == 0);
    }
    free(one);
    free(p), free(x), free(y), free(work), free(ry), free(rb);
}

/* A loss and the arrays it reads, for central differences. */
typedef struct fd_problem {
    const frl_conv2d *c;
    const float *p, *x, *r;
} fd_problem;

/* The part of the loss that one value reaches: images [b0, b1), output channel oc (all
 * for -1). The rest of the sum does not change with that value, so its central
 * difference is the whole loss's (without the rounding of the terms that cancel), at a
 * fraction of the cost. */
static double part_loss(const frl_conv2d *c, const float *p, const float *x, const float *r,
                        int32_t b0, int32_t b1, int32_t oc)
{
    double l = 0, m;
    for (int32_t b = b0; b < b1; b++)
        for (int32_t oh = 0; oh < c->out_h; oh++)
            for (int32_t ow = 0; ow < c->out_w; ow++)
                for (int32_t o = oc < 0 ? 0 : oc; o < (oc < 0 ? c->out_c : oc + 1); o++) {
                    double s = ref_output(c, p, x, b, oh, ow, o, &m);
                    if (c->act == FRL_NN_TANH)
                        s = tanh(s);
                    l += s * r[(((size_t)b * c->out_h + oh) * c->out_w + ow) * c->out_c + o];
                }
    return l;
}

/* grad, the float32 gradient at v[i] (v is f->p or f->x), against the central
 * difference of the float64 loss's part over images [b0, b1) and channel oc (part_loss);
 * v[i] is restored. Returns 1 (one value checked). */
static int check_fd(const fd_problem *f, float *v, size_t i, float grad, int32_t b0,
                    int32_t b1, int32_t oc, const char *table, const char *what)
{
    const double h = 1e-3;
    float keep = v[i], up_v = (float)(keep + h), down_v = (float)(keep - h);
    v[i] = up_v;
    double up = part_loss(f->c, f->p, f->x, f->r, b0, b1, oc);
    v[i] = down_v;
    double down = part_loss(f->c, f->p, f->x, f->r, b0, b1, oc);
    v[i] = keep;
    double fd = (up - down) / ((double)up_v - (double)down_v);
    ck_assert_msg(fabs(grad - fd) <= 2e-3 * (1 + fabs(fd)), "%s %s[%zu] = %.7g, fd %.7g", table,
                  what, i, (double)grad, fd);
    return 1;
}

/* The float32 gradients against central differences of the float64 loss sum(y r), at
 * every bias, and at sampled weights and inputs (all of them for small shapes). */
static void check_backward(const frl_kernels *k, const shape *s, frl_nn_act act)
{
    if (s->forward_only)
        return;
    frl_conv2d c = make(s, act);
    size_t n_in = frl_conv2d_in_size(&c) * (size_t)s->batch;
    size_t n_out = frl_conv2d_out_size(&c) * (size_t)s->batch, np = c.param_base + c.num_params;
    float *p = randoms(np, 0.5), *x = randoms(n_in, 2.0), *r = randoms(n_out, 1.0);
    float *y = randoms(n_out, 0), *dy = malloc(n_out * sizeof(float));
    float *work = randoms(frl_conv2d_work_floats(&c, s->batch), 0);
    float *g = randoms(np, 0), *dx = randoms(n_in, 0);
    frl_conv2d_forward(&c, k, p, s->batch, x, y, work);
    memcpy(dy, r, n_out * sizeof(float));
    frl_conv2d_backward(&c, k, p, g, 0, s->batch, x, y, dy, dx, work);
    fd_problem f = {&c, p, x, r};
    int checked = 0;
    size_t in = frl_conv2d_in_size(&c);
    for (size_t i = c.param_base; i < np; i++) /* a weight or a bias reaches one channel */
        if (!(i < c.off_b && np > 400 && unit() > 0.1))
            checked += check_fd(&f, p, i, g[i], 0, s->batch,
                                (int32_t)(i < c.off_b ? (i - c.off_w) % (size_t)c.out_c
                                                      : i - c.off_b),
                                k->name, "dparam");
    for (size_t i = 0; i < n_in; i++) /* an input, its own image */
        if (!(n_in > 400 && unit() > 0.1))
            checked += check_fd(&f, x, i, dx[i], (int32_t)(i / in), (int32_t)(i / in) + 1, -1,
                                k->name, "dx");
    ck_assert_int_gt(checked, 10);
    /* Accumulating adds to what is there: twice the gradient. */
    float *g0 = malloc(np * sizeof(float));
    memcpy(g0, g, np * sizeof(float));
    memcpy(dy, r, n_out * sizeof(float));
    frl_conv2d_backward(&c, k, p, g, 1, s->batch, x, y, dy, NULL, work);
    for (size_t i = c.param_base; i < np; i++)
        ck_assert_msg(fabs(g[i] - 2.0 * g0[i]) <= 1e-4 * (1 + fabs(g0[i])),
                      "%s: accumulated %.7g, once %.7g", k->name, (double)g[i], (double)g0[i]);
    free(g0);
    free(p), free(x), free(r), free(y), free(dy), free(work), free(g), free(dx);
}

/* The patch matrix of a whole batch, gathered tap by tap (the layout of conv.c's:
 * position-major, then kernel row, kernel column, channel; zeros outside the image). */
static void whole_im2col(const frl_conv2d *c, int32_t batch, const float *x, float *patches)
{
    size_t in = frl_conv2d_in_size(c);
    for (int32_t b = 0; b < batch; b++)
        for (int32_t oh = 0; oh < c->out_h; oh++)
            for (int32_t ow = 0; ow < c->out_w; ow++)
                for (int32_t ki = 0; ki < c->kh; ki++)
                    for (int32_t kj = 0; kj < c->kw; kj++)
                        for (int32_t ch = 0; ch < c->in_c; ch++) {
                            int32_t ih = oh * c->stride - c->pad + ki;
                            int32_t iw = ow * c->stride - c->pad + kj;
                            int inside = ih >= 0 && ih < c->in_h && iw >= 0 && iw < c->in_w;
                            *patches++ = inside ? x[(size_t)b * in +
                                                    ((size_t)ih * (size_t)c->in_w +
                                                     (size_t)iw) * (size_t)c->in_c + (size_t)ch]
                                                : 0.0f;
                        }
}

/* dx = the patch gradients added back position by position, in position order. */
static void whole_col2im(const frl_conv2d *c, int32_t batch, const float *dp, float *dx)
{
    size_t in = frl_conv2d_in_size(c);
    memset(dx, 0, sizeof(float) * in * (size_t)batch);
    for (int32_t b = 0; b < batch; b++)
        for (int32_t oh = 0; oh < c->out_h; oh++)
            for (int32_t ow = 0; ow < c->out_w; ow++)
                for (int32_t ki = 0; ki < c->kh; ki++)
                    for (int32_t kj = 0; kj < c->kw; kj++)
                        for (int32_t ch = 0; ch < c->in_c; ch++, dp++) {
                            int32_t ih = oh * c->stride - c->pad + ki;
                            int32_t iw = ow * c->stride - c->pad + kj;
                            if (ih >= 0 && ih < c->in_h && iw >= 0 && iw < c->in_w)
                                dx[(size_t)b * in + ((size_t)ih * (size_t)c->in_w +
                                                     (size_t)iw) * (size_t)c->in_c +
                                   (size_t)ch] += *dp;
                        }
}

/* The backward in chunks gives the bits of one pass over all positions with the same
 * kernels (every gradient element one chain over the positions in order). */
static void check_chunked_backward(const frl_kernels *k, const shape *s, frl_nn_act act)
{
    if (act != FRL_NN_LINEAR)
        return; /* the activation's backward is elementwise: nothing chunked */
    frl_conv2d c = make(s, act);
    int32_t rows = s->batch * c.out_h * c.out_w;
    size_t n_in = frl_conv2d_in_size(&c) * (size_t)s->batch;
    size_t n_out = frl_conv2d_out_size(&c) * (size_t)s->batch, np = c.param_base + c.num_params;
    float *p = randoms(np, 0.5), *x = randoms(n_in, 2.0), *dy = randoms(n_out, 1.0);
    float *work = randoms(frl_conv2d_work_floats(&c, s->batch), 0);
    float *patches = malloc(sizeof(float) * (size_t)rows * (size_t)c.patch);
    float *g = randoms(np, 0), *dx = randoms(n_in, 0), *g1 = randoms(np, 0);
    float *dx1 = randoms(n_in, 0), *y = randoms(n_out, 0);
    frl_conv2d_backward(&c, k, p, g, 0, s->batch, x, y, dy, dx, work);
    whole_im2col(&c, s->batch, x, patches);
    k->linear_bwd_weight(rows, c.out_c, c.patch, patches, dy, g1 + c.off_w, g1 + c.off_b, 0);
    k->linear_bwd_input(rows, c.out_c, c.patch, dy, p + c.off_w, patches);
    whole_col2im(&c, s->batch, patches, dx1);
    ck_assert_msg(memcmp(g + c.param_base, g1 + c.param_base, c.num_params * sizeof(float)) == 0,
                  "%s %dx%dx%d: chunked weight gradients differ from one pass", k->name, s->h,
                  s->w, s->c);
    ck_assert_msg(memcmp(dx, dx1, n_in * sizeof(float)) == 0,
                  "%s %dx%dx%d: chunked input gradients differ from one pass", k->name, s->h,
                  s->w, s->c);
    free(p), free(x), free(dy), free(work), free(patches), free(g), free(dx), free(g1),
        free(dx1), free(y);
}

/* check on every shape, linear and tanh, for every table this CPU runs. */
static void every_table(void (*check)(const frl_kernels *, const shape *, frl_nn_act))
{
    const frl_kernels *const *all = frl_kernels_all();
    for (int t = 0; all[t]; t++) {
        if (!frl_kernels_supported(all[t]))
            continue;
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            check(all[t], &shapes[i], FRL_NN_LINEAR);
            check(all[t], &shapes[i], FRL_NN_TANH);
        }
    }
}

START_TEST(forward_every_table)
{
    every_table(check_forward);
}
END_TEST

START_TEST(gradients_every_table)
{
    every_table(check_backward);
}
END_TEST

START_TEST(chunked_backward_every_table)
{
    every_table(check_chunked_backward);
}
END_TEST

START_TEST(impossible_shapes)
{
    frl_conv2d c;
    ck_assert_int_eq(frl_conv2d_init(&c, 4, 4, 1, 1, 5, 5, 1, 0, FRL_NN_LINEAR, 0), -1);
    ck_assert_int_eq(frl_conv2d_init(&c, 4, 4, 1, 1, 3, 3, 0, 0, FRL_NN_LINEAR, 0), -1);
    ck_assert_int_eq(frl_conv2d_init(&c, 4, 4, 1, 1, 3, 3, 1, 3, FRL_NN_LINEAR, 0), -1);
    ck_assert_int_eq(frl_conv2d_init(&c, 4, 4, 0, 1, 3, 3, 1, 0, FRL_NN_LINEAR, 0), -1);
    ck_assert_int_eq(frl_conv2d_init(&c, 4, 4, 1, 1, 3, 3, 1, -1, FRL_NN_LINEAR, 0), -1);
    ck_assert_int_eq(c.num_params, 0);
    ck_assert_int_eq(frl_conv2d_init(&c, 84, 84, 4, 32, 8, 8, 4, 0, FRL_NN_RELU, 10), 0);
    ck_assert_int_eq(c.out_h, 20);
    ck_assert_int_eq(c.out_w, 20);
    ck_assert_int_eq(c.num_params, (8 * 8 * 4 + 1) * 32);
    ck_assert_int_eq(c.off_b, 10 + 8 * 8 * 4 * 32);
}
END_TEST

/* An encoder whose patch matrix or output for one image passes 2^31 - 1 floats is
 * refused: the block of images per pass, an int32, wrapped to 0 for the second layer
 * of a 4096 x 4096 image with 1024 channels after the first, and a pass never ended. */
START_TEST(encoder_beyond_int32_refused)
{
    frl_cnn n;
    char why[512] = "";
    const int32_t wide[] = {1024, 1, 1}, fits[] = {32, 64, 64};
    ck_assert_int_eq(frl_cnn_init(&n, &frl_cnn_nature, wide, 3, 4096, 4096, 1, 1, 0, why,
                                  sizeof why), -1);
    ck_assert_msg(strstr(why, "layer 2 of the nature encoder") && strstr(why, "2^31"), "%s", why);
    ck_assert_int_eq(frl_cnn_init(&n, &frl_cnn_nature, fits, 3, 4096, 4096, 1, 1, 0, why,
                                  sizeof why), 0);
    ck_assert_int_ge(n.block, 1);
}
END_TEST

/* A backward pass over no images still writes the gradients when not accumulating
 * (conv.h: "write (accumulate == 0)"), as the linear kernels do for m = 0: a padded
 * layer, or an unpadded one a SIMD table leaves to im2col (outputs narrower than a
 * vector), left them as they were, and an encoder over 0 rows wrote none of its
 * layers'; a caller reducing shards' gradients would sum stale values. */
START_TEST(empty_batch_writes_zero_gradients)
{
    const frl_kernels *const *all = frl_kernels_all();
    for (int t = 0; all[t]; t++) {
        if (!frl_kernels_supported(all[t]))
            continue;
        for (size_t i = 0; i < 2; i++) { /* shapes[0]: unpadded, 1 channel; [1]: padded */
            frl_conv2d c = make(&shapes[i], FRL_NN_TANH);
            size_t np = c.param_base + c.num_params;
            float *p = randoms(np, 0.5), *g = malloc(np * sizeof(float)), one = 0;
            for (size_t j = 0; j < np; j++)
                g[j] = NAN;
            frl_conv2d_backward(&c, all[t], p, g, 0, 0, &one, &one, &one, &one, &one);
            for (size_t j = c.param_base; j < np; j++)
                ck_assert_msg(g[j] == 0.0f, "%s shape %zu: grads[%zu] = %g after 0 images",
                              all[t]->name, i, j, (double)g[j]);
            free(p), free(g);
        }
        frl_cnn n;
        char why[256] = "";
        ck_assert_int_eq(frl_cnn_init(&n, &frl_cnn_nature, NULL, 0, 36, 36, 1, 1, 0, why,
                                      sizeof why), 0);
        float *p = randoms(n.num_params, 0.5), *g = malloc(n.num_params * sizeof(float));
        float one = 0;
        for (size_t j = 0; j < n.num_params; j++)
            g[j] = NAN;
        frl_cnn_backward(&n, all[t], p, g, 0, 0, &one, &one, &one, &one);
        for (size_t j = 0; j < n.num_params; j++)
            ck_assert_msg(g[j] == 0.0f, "%s encoder: grads[%zu] = %g after 0 rows",
                          all[t]->name, j, (double)g[j]);
        free(p), free(g);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("conv");
    TCase *tc = tcase_create("conv");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, impossible_shapes);
    tcase_add_test(tc, encoder_beyond_int32_refused);
    tcase_add_test(tc, forward_every_table);
    tcase_add_test(tc, gradients_every_table);
    tcase_add_test(tc, chunked_backward_every_table);
    tcase_add_test(tc, empty_batch_writes_zero_gradients);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
