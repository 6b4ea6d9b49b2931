/* A growable byte buffer over the runtime's allocator, for files built in memory and
 * then written in one go (exports: an ONNX model, generated C source).
 *
 * Appending never fails loudly: a failed allocation sets `failed`, later appends do
 * nothing, and the writer checks once at the end (as stdio's error flag works), so the
 * code that builds a file reads straight through. */
#ifndef FRL_IO_BYTES_H
#define FRL_IO_BYTES_H

#include <stddef.h>

#include "core/error.h"
#include "fastrl.h"

typedef struct frl_bytes {
    const frl_allocator *alloc;
    unsigned char *data;
    size_t len, cap;
    int failed; /* an allocation failed: the contents are incomplete */
} frl_bytes;

void frl_bytes_init(frl_bytes *b, const frl_allocator *alloc);
void frl_bytes_free(frl_bytes *b);
/* Room for n more bytes; 0 on success. */
int frl_bytes_reserve(frl_bytes *b, size_t n);
void frl_bytes_put(frl_bytes *b, const void *data, size_t n);
/* printf-style text, without its terminating zero. */
void frl_bytes_printf(frl_bytes *b, const char *fmt, ...) FRL_PRINTF(2, 3);

#endif
