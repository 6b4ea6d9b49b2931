/* Growable byte buffer (bytes.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/c_numeric.h"
#include "io/bytes.h"

void frl_bytes_init(frl_bytes *b, const frl_allocator *alloc)
{
    memset(b, 0, sizeof *b);
    b->alloc = alloc;
}

void frl_bytes_free(frl_bytes *b)
{
    frl_free(b->alloc, b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int frl_bytes_reserve(frl_bytes *b, size_t n)
{
    if (b->failed)
        return -1;
    if (b->cap - b->len >= n)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < n) {
        if (cap > ((size_t)-1) / 2) {
            b->failed = 1;
            return -1;
        }
        cap *= 2;
    }
    /* The allocator hooks have no realloc: move to a new block. */
    unsigned char *d = frl_alloc(b->alloc, cap, 64);
    if (!d) {
        b->failed = 1;
        return -1;
    }
    if (b->len)
        memcpy(d, b->data, b->len);
    frl_free(b->alloc, b->data);
    b->data = d;
    b->cap = cap;
    return 0;
}

void frl_bytes_put(frl_bytes *b, const void *data, size_t n)
{
    if (n == 0 || frl_bytes_reserve(b, n) != 0)
        return;
    memcpy(b->data + b->len, data, n);
    b->len += n;
}

void frl_bytes_printf(frl_bytes *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = frl_vsnprintf_c(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        frl_bytes_put(b, small, (size_t)n);
        return;
    }
    /* Longer than the stack buffer: format again straight into the buffer. */
    if (frl_bytes_reserve(b, (size_t)n + 1) != 0)
        return;
    va_start(ap, fmt);
    frl_vsnprintf_c((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}
