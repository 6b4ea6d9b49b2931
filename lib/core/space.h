/* Internal view of frl_space. */
#ifndef FRL_CORE_SPACE_H
#define FRL_CORE_SPACE_H

#include "core/alloc.h"

enum {
    FRL_SPACE_MAX_RANK = 8,
    FRL_IMAGE_MAX_CHANNELS = 64,
    FRL_IMAGE_MAX_BYTES = 1 << 24
};

struct frl_space {
    frl_allocator alloc;
    frl_space_kind kind;
    int64_t n;       /* discrete: n; box: element count; image: bytes (h * w * c) */
    int32_t rank;
    int64_t shape[FRL_SPACE_MAX_RANK]; /* image: height, width, channels */
    float *low;      /* box: n values, one allocation with high (NULL otherwise) */
    float *high;
    struct frl_space *parts[2]; /* mixed: its image and its box (owned), else NULL */
};

/* Floats per row of an array of the space's observations inside the library (the vec
 * env, ring, replay and the policy's input): 1 for discrete (its index), n for a box,
 * n / 4 for an image, whose bytes travel as 4-byte words that only the encoder reads;
 * a mixed row is its image's words, then its vector's floats. */
int64_t frl_space_row_floats(const frl_space *s);

/* The image an observation holds: the space itself, a mixed space's image part, or
 * NULL (no pixels). */
static inline const frl_space *frl_space_image_of(const frl_space *s)
{
    return s->kind == FRL_SPACE_IMAGE ? s : s->kind == FRL_SPACE_MIXED ? s->parts[0] : NULL;
}

/* Rows carry pixels (an image or a mixed space): only an encoder reads them. */
static inline int frl_space_is_image(const frl_space *s)
{
    return frl_space_image_of(s) != NULL;
}

/* A mixed row's vector part: its first float (after the image's words) and its count;
 * 0 and 0 for every other kind. */
static inline int64_t frl_space_vector_at(const frl_space *s)
{
    return s->kind == FRL_SPACE_MIXED ? s->parts[0]->n / 4 : 0;
}

static inline int64_t frl_space_vector_floats(const frl_space *s)
{
    return s->kind == FRL_SPACE_MIXED ? s->parts[1]->n : 0;
}

/* "discrete(3)", "box[2x3]", "image[84x84x4]" or "mixed(image[40x40x3], box[2])" into
 * buf (FRL_SPACE_DESCRIBE bytes hold any). */
enum { FRL_SPACE_DESCRIBE = 160 };
void frl_space_describe(const frl_space *s, char *buf, size_t size);

/* Copy src with alloc; on failure sets the thread's last error and returns NULL. */
frl_space *frl_space_clone(const frl_allocator *alloc, const frl_space *src);

/* 1 when a and b have the same kind, shape and bounds. */
int frl_space_equal(const frl_space *a, const frl_space *b);

/* FRL_OK when have can stand where want is required: the same kind, the same shape
 * (so the same width) and, for discrete spaces, the same n. Bounds may differ: they
 * change which values are valid, not how arrays are laid out. Otherwise FRL_ERR_SIZE
 * with "<who>: <what> differ: <want> and <have> (...)", both spaces described, written
 * to err (FRL_ERRMSG_SIZE bytes, may be NULL) and the thread's message; so `what`
 * names the two in that order, e.g. "the observation spaces of the policy and the vec
 * env". FRL_ERR_NULL if either is NULL. */
frl_status frl_space_check_same(const frl_space *want, const frl_space *have, const char *who,
                                const char *what, char *err);

#endif
