/* Host frames: a render target's pixels into an image observation (frame.h). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "env/frame.h"

/* Rows of `row` bytes that do not overlap, h of them within one addressable buffer (the
 * copy steps h - 1 strides from pixels). Compared without negating the stride:
 * -INT64_MIN is undefined. */
static frl_status check_stride(const frl_frame *f, int64_t row, int64_t h, char *why,
                               size_t size)
{
    int64_t most = PTRDIFF_MAX / h;
    if (f->row_stride < -most || f->row_stride > most) {
        snprintf(why, size, "frame.row_stride is %lld bytes, more than a buffer of %lld rows "
                 "can span", (long long)f->row_stride, (long long)h);
        return FRL_ERR_SIZE;
    }
    if (f->row_stride > -row && f->row_stride < row) {
        snprintf(why, size,
                 "frame.row_stride is %lld bytes, less than a row of %d pixels x %d bytes "
                 "= %lld (rows would overlap)",
                 (long long)f->row_stride, (int)f->width, (int)f->channels, (long long)row);
        return FRL_ERR_SIZE;
    }
    return FRL_OK;
}

/* What is wrong with frame as a picture of image, or FRL_OK. */
static frl_status check_frame(const frl_space *image, const frl_frame *f, char *why,
                              size_t size)
{
    int64_t h = image->shape[0], w = image->shape[1], c = image->shape[2];
    if (!f->pixels) {
        snprintf(why, size, "frame.pixels is NULL");
        return FRL_ERR_NULL;
    }
    if (f->height != h || f->width != w || f->channels < c) {
        snprintf(why, size,
                 "the frame is %d x %d with %d bytes a pixel, the observation space "
                 "image[%lldx%lldx%lld] needs %lld x %lld with at least %lld",
                 (int)f->height, (int)f->width, (int)f->channels, (long long)h, (long long)w,
                 (long long)c, (long long)h, (long long)w, (long long)c);
        return FRL_ERR_SIZE;
    }
    return check_stride(f, w * (int64_t)f->channels, h, why, size);
}

/* One row: whole pixels when the frame holds just the channels wanted, else the first
 * c bytes of each (RGBA to RGB). */
static void copy_row(const uint8_t *src, int32_t width, int32_t src_c, int32_t c,
                     uint8_t *dst)
{
    if (src_c == c) {
        memcpy(dst, src, (size_t)width * (size_t)c);
        return;
    }
    for (int32_t x = 0; x < width; x++, src += src_c, dst += c)
        for (int32_t k = 0; k < c; k++)
            dst[k] = src[k];
}

frl_status frl_frame_copy(const frl_space *image, const frl_frame *f, uint8_t *obs,
                          char *why, size_t size)
{
    frl_status st = check_frame(image, f, why, size);
    if (st != FRL_OK)
        return st;
    int32_t h = (int32_t)image->shape[0], w = (int32_t)image->shape[1];
    int32_t c = (int32_t)image->shape[2];
    size_t out_row = (size_t)w * (size_t)c;
    for (int32_t y = 0; y < h; y++)
        copy_row(f->pixels + (ptrdiff_t)y * (ptrdiff_t)f->row_stride, w, f->channels, c,
                 obs + (size_t)y * out_row);
    return FRL_OK;
}
