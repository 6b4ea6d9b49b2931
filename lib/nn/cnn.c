/* Convolution stacks over uint8 images (cnn.h). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nn/cnn.h"
#include "nn/init.h"

const frl_cnn_spec frl_cnn_nature = {"nature", 3, {8, 4, 3}, {4, 2, 1}, {32, 64, 64}};
const frl_cnn_spec frl_cnn_simple = {"simple", 3, {8, 4, 3}, {4, 2, 2}, {32, 64, 128}};

/* A block's patch matrix stays near 4 MiB (the Nature CNN's first layer: 10 images). */
enum { BLOCK_FLOATS = 1 << 20 };

static int add_layer(frl_cnn *n, const frl_cnn_spec *spec, int32_t l, int32_t out_c,
                     int32_t h, int32_t w, int32_t c, size_t base, char *why, size_t size)
{
    int32_t k = spec->kernel[l];
    if (frl_conv2d_init(&n->conv[l], h, w, c, out_c, k, k, spec->stride[l], 0, FRL_NN_RELU,
                        base) == 0)
        return 0;
    snprintf(why, size,
             "layer %d of the %s encoder (%d channels, %dx%d kernel, stride %d) does not fit "
             "its %dx%d input (what the layers before leave of the %dx%dx%d image)",
             (int)l + 1, spec->name, (int)out_c, (int)k, (int)k, (int)spec->stride[l], (int)h,
             (int)w, (int)n->in_h, (int)n->in_w, (int)n->in_c);
    return -1;
}

/* The layer's patch matrix and output of one image must each fit an int32: the block
 * size, the positions of a pass and the features a row are int32 (a 4096 x 4096 image
 * with 1024 channels after the first layer wrapped the block to 0 images, and a pass
 * then never ended). */
static int too_large(const frl_cnn *n, const frl_cnn_spec *spec, int32_t l, char *why,
                     size_t size)
{
    const frl_conv2d *cv = &n->conv[l];
    size_t patches = frl_conv2d_work_floats(cv, 1), out = frl_conv2d_out_size(cv);
    if (patches <= INT32_MAX && out <= INT32_MAX)
        return 0;
    snprintf(why, size,
             "layer %d of the %s encoder (%d channels) makes %zu floats of patches and %zu "
             "of output per %dx%dx%d image, more than 2^31 - 1 (use a smaller image or "
             "fewer channels, policy.conv_channels)",
             (int)l + 1, spec->name, (int)cv->out_c, patches, out, (int)n->in_h,
             (int)n->in_w, (int)n->in_c);
    return -1;
}

int frl_cnn_init(frl_cnn *n, const frl_cnn_spec *spec, const int32_t *channels,
                 int32_t num_channels, int32_t h, int32_t w, int32_t c, int32_t frames,
                 size_t param_base, char *why, size_t size)
{
    memset(n, 0, sizeof *n);
    n->frames = frames;
    c *= frames;
    if (num_channels != 0 && num_channels != spec->layers) {
        snprintf(why, size, "policy.conv_channels has %d values, the %s encoder has %d layers",
                 (int)num_channels, spec->name, (int)spec->layers);
        return -1;
    }
    n->layers = spec->layers;
    n->in_h = h;
    n->in_w = w;
    n->in_c = c;
    n->param_base = param_base;
    size_t base = param_base;
    for (int32_t l = 0; l < spec->layers; l++) {
        int32_t out_c = num_channels ? channels[l] : spec->channels[l];
        if (add_layer(n, spec, l, out_c, h, w, c, base, why, size) != 0)
            return -1;
        const frl_conv2d *cv = &n->conv[l];
        if (too_large(n, spec, l, why, size) != 0)
            return -1;
        base += cv->num_params;
        h = cv->out_h;
        w = cv->out_w;
        c = cv->out_c;
        int32_t out = (int32_t)frl_conv2d_out_size(cv);
        n->widest = out > n->widest ? out : n->widest;
    }
    n->out_w = h * w * c;
    n->num_params = base - param_base;
    int32_t per = (int32_t)frl_cnn_patch_floats(n);
    n->block = per >= BLOCK_FLOATS ? 1 : BLOCK_FLOATS / per;
    return 0;
}

/* Bytes to floats in [0, 1], the scaling every pixel encoder applies (x / 255). */
static void scale_row(const uint8_t *img, size_t n, float *x)
{
    const float s = 1.0f / 255.0f;
    for (size_t i = 0; i < n; i++)
        x[i] = (float)img[i] * s;
}

/* A row of k frames (oldest first) into k * c channels per pixel. */
static void scale_stack(const frl_cnn *n, const uint8_t *row, float *x)
{
    size_t pixels = (size_t)n->in_h * (size_t)n->in_w, k = (size_t)n->frames;
    size_t c = (size_t)n->in_c / k, frame = pixels * c;
    const float s = 1.0f / 255.0f;
    for (size_t j = 0; j < k; j++) {
        const uint8_t *f = row + j * frame;
        for (size_t p = 0; p < pixels; p++)
            for (size_t ch = 0; ch < c; ch++)
                x[p * k * c + j * c + ch] = (float)f[p * c + ch] * s;
    }
}

static void scale_images(const frl_cnn *n, int32_t rows, const uint8_t *images,
                         size_t row_bytes, float *x)
{
    size_t in = frl_cnn_in_floats(n);
    for (int32_t r = 0; r < rows; r++, x += in) {
        if (n->frames > 1)
            scale_stack(n, images + (size_t)r * row_bytes, x);
        else
            scale_row(images + (size_t)r * row_bytes, in, x);
    }
}

/* One layer over all rows, a block of images at a time. */
static void layer_forward(const frl_conv2d *cv, const frl_kernels *k, const float *params,
                          int32_t rows, int32_t block, const float *x, float *y, float *work)
{
    size_t in = frl_conv2d_in_size(cv), out = frl_conv2d_out_size(cv);
    for (int32_t r = 0; r < rows; r += block) {
        int32_t b = rows - r < block ? rows - r : block;
        frl_conv2d_forward(cv, k, params, b, x + (size_t)r * in, y + (size_t)r * out, work);
    }
}

const float *frl_cnn_forward(const frl_cnn *n, const frl_kernels *k, const float *params,
                             int32_t rows, const uint8_t *images, size_t row_bytes,
                             float *acts, float *work)
{
    scale_images(n, rows, images, row_bytes, acts);
    for (int32_t l = 0; l < n->layers; l++)
        layer_forward(&n->conv[l], k, params, rows, n->block,
                      acts + frl_cnn_acts_offset(n, rows, l - 1),
                      acts + frl_cnn_acts_offset(n, rows, l), work);
    return acts + frl_cnn_acts_offset(n, rows, n->layers - 1);
}

/* One layer's backward pass, block by block; the first block writes the gradient (unless
 * accumulating), the others add to it, in a fixed order. dx NULL: no input gradient. */
static void layer_backward(const frl_conv2d *cv, const frl_kernels *k, const float *params,
                           float *grads, int accumulate, int32_t rows, int32_t block,
                           const float *x, const float *y, float *dy, float *dx, float *work)
{
    size_t in = frl_conv2d_in_size(cv), out = frl_conv2d_out_size(cv);
    /* At least one call, so that 0 rows still write the gradients (+0) when not
     * accumulating. */
    int32_t r = 0;
    do {
        int32_t b = rows - r < block ? rows - r : block;
        frl_conv2d_backward(cv, k, params, grads, accumulate || r > 0, b, x + (size_t)r * in,
                            y + (size_t)r * out, dy + (size_t)r * out,
                            dx ? dx + (size_t)r * in : NULL, work);
        r += block;
    } while (r < rows);
}

void frl_cnn_backward(const frl_cnn *n, const frl_kernels *k, const float *params,
                      float *grads, int accumulate, int32_t rows, const float *acts,
                      float *dfeat, float *grad_ws, float *work)
{
    float *dy = dfeat, *next = grad_ws, *spare = grad_ws + (size_t)rows * (size_t)n->widest;
    for (int32_t l = n->layers - 1; l >= 0; l--) {
        float *dx = l > 0 ? next : NULL;
        layer_backward(&n->conv[l], k, params, grads, accumulate, rows, n->block,
                       acts + frl_cnn_acts_offset(n, rows, l - 1),
                       acts + frl_cnn_acts_offset(n, rows, l), dy, dx, work);
        /* dx becomes the next layer's dy; the buffer dy held is free again. */
        next = dy == dfeat ? spare : dy;
        dy = dx;
    }
}

size_t frl_cnn_init_work(const frl_cnn *n)
{
    size_t most = 0;
    for (int32_t l = 0; l < n->layers; l++) {
        size_t a = (size_t)n->conv[l].patch, b = (size_t)n->conv[l].out_c;
        most = a * b > most ? a * b : most;
    }
    return most;
}

void frl_cnn_init_params(const frl_cnn *n, float *params, double gain, frl_rng *r,
                         double *work)
{
    for (int32_t l = 0; l < n->layers; l++) {
        const frl_conv2d *cv = &n->conv[l];
        frl_init_orthogonal(params + cv->off_w, cv->patch, cv->out_c, gain, r, work);
        memset(params + cv->off_b, 0, sizeof(float) * (size_t)cv->out_c);
    }
}
