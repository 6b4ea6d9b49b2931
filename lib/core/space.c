/* frl_space: discrete(n), float32 box, uint8 image and mixed (image plus box) spaces. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/space.h"

static frl_status space_new(const frl_allocator *alloc, const char *who, frl_space **out)
{
    frl_allocator a;
    frl_status st = frl_allocator_copy(&a, alloc, who);
    if (st != FRL_OK)
        return st;
    frl_space *s = frl_alloc(&a, sizeof *s, 16);
    if (!s)
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory", who);
    s->alloc = a;
    *out = s;
    return FRL_OK;
}

FRL_API frl_status frl_space_create_discrete(frl_space **out, const frl_allocator *alloc,
                                             int64_t n)
{
    if (!out)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_space_create_discrete: out is NULL");
    *out = NULL;
    if (n < 1 || n > INT32_MAX)
        return frl_fail(NULL, FRL_ERR_RANGE,
                        "frl_space_create_discrete: n = %lld is outside [1, 2147483647]",
                        (long long)n);
    frl_space *s = NULL;
    frl_status st = space_new(alloc, "frl_space_create_discrete", &s);
    if (st != FRL_OK)
        return st;
    s->kind = FRL_SPACE_DISCRETE;
    s->n = n;
    *out = s;
    return FRL_OK;
}

static frl_status check_shape(int32_t rank, const int64_t *shape, int64_t *count)
{
    if (!shape)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_space_create_box: shape is NULL");
    if (rank < 1 || rank > FRL_SPACE_MAX_RANK)
        return frl_fail(NULL, FRL_ERR_RANGE, "frl_space_create_box: rank %d is outside [1, %d]",
                        (int)rank, FRL_SPACE_MAX_RANK);
    /* The vec env, policy and ring hold a row's width in an int32: 2^31 would wrap. */
    int64_t n = 1;
    for (int32_t i = 0; i < rank; i++) {
        if (shape[i] < 1 || shape[i] > INT32_MAX / n)
            return frl_fail(NULL, FRL_ERR_RANGE,
                            "frl_space_create_box: shape[%d] = %lld is not in [1, (2^31 - 1) / "
                            "product of the others]",
                            (int)i, (long long)shape[i]);
        n *= shape[i];
    }
    *count = n;
    return FRL_OK;
}

static frl_status check_bounds(int64_t n, const float *low, const float *high)
{
    if (!low && !high) /* unbounded: nothing to read (n may be up to 2^31 - 1) */
        return FRL_OK;
    for (int64_t i = 0; i < n; i++) {
        float lo = low ? low[i] : -INFINITY, hi = high ? high[i] : INFINITY;
        /* low = +inf or high = -inf leaves no value in the box; policy files refuse such
         * bounds, so a space that had them would save a file that never loads. */
        if (isnan(lo) || isnan(hi) || lo > hi || lo == INFINITY || hi == -INFINITY)
            return frl_fail(NULL, FRL_ERR_RANGE,
                            "frl_space_create_box: element %lld has low %g, high %g (need low "
                            "<= high, no NaN, low < +inf, high > -inf)",
                            (long long)i, (double)lo, (double)hi);
    }
    return FRL_OK;
}

static void fill_bounds(frl_space *s, const float *low, const float *high)
{
    for (int64_t i = 0; i < s->n; i++) {
        s->low[i] = low ? low[i] : -INFINITY;
        s->high[i] = high ? high[i] : INFINITY;
    }
}

FRL_API frl_status frl_space_create_box(frl_space **out, const frl_allocator *alloc,
                                        int32_t rank, const int64_t *shape, const float *low,
                                        const float *high)
{
    if (!out)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_space_create_box: out is NULL");
    *out = NULL;
    int64_t n = 0;
    frl_status st = check_shape(rank, shape, &n);
    if (st == FRL_OK)
        st = check_bounds(n, low, high);
    if (st != FRL_OK)
        return st;
    frl_space *s = NULL;
    st = space_new(alloc, "frl_space_create_box", &s);
    if (st != FRL_OK)
        return st;
    s->low = frl_alloc(&s->alloc, 2 * (size_t)n * sizeof(float), 64);
    if (!s->low) {
        frl_space_destroy(s);
        return frl_fail(NULL, FRL_ERR_NOMEM, "frl_space_create_box: out of memory for %lld bounds",
                        (long long)n);
    }
    s->high = s->low + n;
    s->kind = FRL_SPACE_BOX;
    s->n = n;
    s->rank = rank;
    memcpy(s->shape, shape, sizeof(int64_t) * (size_t)rank);
    fill_bounds(s, low, high);
    *out = s;
    return FRL_OK;
}

/* The sizes an image may have: rows of whole floats in the library's arrays (which move
 * observations as 4-byte words), channels for an encoder's first layer. */
static frl_status check_image(int32_t height, int32_t width, int32_t channels)
{
    static const char who[] = "frl_space_create_image";
    if (height < 1 || width < 1 || channels < 1 || channels > FRL_IMAGE_MAX_CHANNELS)
        return frl_fail(NULL, FRL_ERR_RANGE,
                        "%s: %d x %d x %d: height and width must be >= 1 and channels in "
                        "[1, %d]", who, (int)height, (int)width, (int)channels,
                        FRL_IMAGE_MAX_CHANNELS);
    /* height x width fits in int64 (each side below 2^31), x 64 channels might not:
     * past 2^24 pixels the image is too large whatever its channels */
    int64_t pixels = (int64_t)height * width;
    if (pixels > FRL_IMAGE_MAX_BYTES || pixels * channels > FRL_IMAGE_MAX_BYTES)
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: %d x %d x %d is over 2^24 bytes", who,
                        (int)height, (int)width, (int)channels);
    int64_t bytes = pixels * channels;
    if (bytes % 4 != 0)
        return frl_fail(NULL, FRL_ERR_SIZE,
                        "%s: %d x %d x %d is %lld bytes, not a multiple of 4 (rows of "
                        "observations are whole 4-byte words; pad the width, e.g. to %d)",
                        who, (int)height, (int)width, (int)channels, (long long)bytes,
                        (int)((width + 3) / 4 * 4));
    return FRL_OK;
}

FRL_API frl_status frl_space_create_image(frl_space **out, const frl_allocator *alloc,
                                          int32_t height, int32_t width, int32_t channels)
{
    if (!out)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_space_create_image: out is NULL");
    *out = NULL;
    frl_status st = check_image(height, width, channels);
    frl_space *s = NULL;
    if (st == FRL_OK)
        st = space_new(alloc, "frl_space_create_image", &s);
    if (st != FRL_OK)
        return st;
    s->kind = FRL_SPACE_IMAGE;
    s->n = (int64_t)height * width * channels;
    s->rank = 3;
    s->shape[0] = height;
    s->shape[1] = width;
    s->shape[2] = channels;
    *out = s;
    return FRL_OK;
}

/* A mixed space's parts are copies it owns; the checks name which argument is wrong. */
static frl_status check_parts(const frl_space *image, const frl_space *vector)
{
    static const char who[] = "frl_space_create_mixed";
    if (!image || !vector)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: the %s space is NULL", who,
                        image ? "vector" : "image");
    if (image->kind != FRL_SPACE_IMAGE)
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "%s: the first part must be an image "
                        "space (frl_space_create_image)", who);
    if (vector->kind != FRL_SPACE_BOX)
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "%s: the second part must be a box "
                        "space (frl_space_create_box) of float32 values", who);
    /* A row's bytes, like a box's floats, must fit the int32 widths of the vec env,
     * policy and ring (both parts can be valid alone and too large together). */
    if (vector->n > (INT32_MAX - image->n) / 4)
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: a row of %lld image bytes and %lld floats "
                        "is over 2^31 - 1 bytes", who, (long long)image->n,
                        (long long)vector->n);
    return FRL_OK;
}

FRL_API frl_status frl_space_create_mixed(frl_space **out, const frl_allocator *alloc,
                                          const frl_space *image, const frl_space *vector)
{
    if (!out)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_space_create_mixed: out is NULL");
    *out = NULL;
    frl_status st = check_parts(image, vector);
    frl_space *s = NULL;
    if (st == FRL_OK)
        st = space_new(alloc, "frl_space_create_mixed", &s);
    if (st != FRL_OK)
        return st;
    s->kind = FRL_SPACE_MIXED;
    s->parts[0] = frl_space_clone(&s->alloc, image);
    s->parts[1] = s->parts[0] ? frl_space_clone(&s->alloc, vector) : NULL;
    if (!s->parts[1]) {
        frl_space_destroy(s);
        return frl_fail(NULL, FRL_ERR_NOMEM, "frl_space_create_mixed: out of memory");
    }
    s->n = image->n + 4 * vector->n;
    *out = s;
    return FRL_OK;
}

FRL_API const frl_space *frl_space_part(const frl_space *s, int32_t index)
{
    return s && s->kind == FRL_SPACE_MIXED && index >= 0 && index < 2 ? s->parts[index] : NULL;
}

int64_t frl_space_row_floats(const frl_space *s)
{
    switch (s->kind) {
    case FRL_SPACE_DISCRETE:
        return 1;
    case FRL_SPACE_IMAGE:
        return s->n / 4;
    case FRL_SPACE_MIXED:
        return s->n / 4; /* the image's words and one a float */
    default:
        return s->n;
    }
}

frl_space *frl_space_clone(const frl_allocator *alloc, const frl_space *src)
{
    frl_space *s = NULL;
    if (src->kind == FRL_SPACE_DISCRETE)
        frl_space_create_discrete(&s, alloc, src->n);
    else if (src->kind == FRL_SPACE_IMAGE)
        frl_space_create_image(&s, alloc, (int32_t)src->shape[0], (int32_t)src->shape[1],
                               (int32_t)src->shape[2]);
    else if (src->kind == FRL_SPACE_MIXED)
        frl_space_create_mixed(&s, alloc, src->parts[0], src->parts[1]);
    else
        frl_space_create_box(&s, alloc, src->rank, src->shape, src->low, src->high);
    return s;
}

FRL_API void frl_space_destroy(frl_space *s)
{
    if (!s)
        return;
    frl_allocator a = s->alloc;
    frl_space_destroy(s->parts[0]);
    frl_space_destroy(s->parts[1]);
    frl_free(&a, s->low);
    frl_free(&a, s);
}

FRL_API frl_space_kind frl_space_get_kind(const frl_space *s)
{
    return s ? s->kind : (frl_space_kind)0;
}

FRL_API int64_t frl_space_n(const frl_space *s)
{
    return s ? s->n : 0;
}

FRL_API int32_t frl_space_rank(const frl_space *s)
{
    return s ? s->rank : 0;
}

FRL_API const int64_t *frl_space_shape(const frl_space *s)
{
    return s && s->rank > 0 ? s->shape : NULL;
}

FRL_API const float *frl_space_low(const frl_space *s)
{
    return s ? s->low : NULL;
}

FRL_API const float *frl_space_high(const frl_space *s)
{
    return s ? s->high : NULL;
}

FRL_API int64_t frl_space_width(const frl_space *s)
{
    return !s ? 0 : (s->kind == FRL_SPACE_DISCRETE ? 1 : s->n);
}

/* Kind, n and shape (a mixed space's parts' too): what decides how an array of the
 * space is laid out. */
static int same_layout(const frl_space *a, const frl_space *b)
{
    if (a->kind != b->kind || a->n != b->n || a->rank != b->rank)
        return 0;
    for (int32_t i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i])
            return 0;
    if (a->kind == FRL_SPACE_MIXED)
        return same_layout(a->parts[0], b->parts[0]) && same_layout(a->parts[1], b->parts[1]);
    return 1;
}

int frl_space_equal(const frl_space *a, const frl_space *b)
{
    if (!same_layout(a, b))
        return 0;
    if (a->kind == FRL_SPACE_MIXED)
        return frl_space_equal(a->parts[1], b->parts[1]);
    if (a->kind != FRL_SPACE_BOX)
        return 1;
    return memcmp(a->low, b->low, sizeof(float) * (size_t)a->n) == 0 &&
           memcmp(a->high, b->high, sizeof(float) * (size_t)a->n) == 0;
}

/* "discrete(3)", "box[2x3]", "image[84x84x4]" or "mixed(image[..], box[..])": enough
 * to tell two spaces apart in a message. */
void frl_space_describe(const frl_space *s, char *buf, size_t size)
{
    if (s->kind == FRL_SPACE_DISCRETE) {
        snprintf(buf, size, "discrete(%lld)", (long long)s->n);
        return;
    }
    if (s->kind == FRL_SPACE_MIXED) {
        char im[32], vec[FRL_SPACE_DESCRIBE];
        frl_space_describe(s->parts[0], im, sizeof im);
        frl_space_describe(s->parts[1], vec, sizeof vec);
        snprintf(buf, size, "mixed(%s, %s)", im, vec);
        return;
    }
    size_t used = (size_t)snprintf(buf, size, s->kind == FRL_SPACE_IMAGE ? "image[" : "box[");
    for (int32_t i = 0; i < s->rank && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? "x" : "",
                                 (long long)s->shape[i]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

frl_status frl_space_check_same(const frl_space *want, const frl_space *have, const char *who,
                                const char *what, char *err)
{
    if (!want || !have)
        return frl_fail(err, FRL_ERR_NULL, "%s: %s: a space is NULL", who, what);
    if (same_layout(want, have))
        return FRL_OK;
    char w[FRL_SPACE_DESCRIBE], h[FRL_SPACE_DESCRIBE];
    frl_space_describe(want, w, sizeof w);
    frl_space_describe(have, h, sizeof h);
    return frl_fail(err, FRL_ERR_SIZE,
                    "%s: %s differ: %s and %s (they must match in kind, shape and "
                    "discrete n)", who, what, w, h);
}
