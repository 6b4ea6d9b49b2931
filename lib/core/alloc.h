/* Allocation through the runtime's (or a config's) allocator hooks. */
#ifndef FRL_CORE_ALLOC_H
#define FRL_CORE_ALLOC_H

#include <stddef.h>

#include "fastrl.h"

enum { FRL_CACHE_LINE = 64 };

/* The C library's aligned allocation, with both functions set (0.2's initialiser
 * filled them in; 0.3's inline one leaves them NULL, which frl_allocator_copy reads as
 * this default). */
void frl_allocator_default(frl_allocator *a);
/* Copy a caller's table into *dst, or the defaults if src is NULL or has both functions
 * NULL. FRL_ERR_VERSION if its struct_size is too small to hold the functions,
 * FRL_ERR_NULL if exactly one is NULL; the message names `who`. */
frl_status frl_allocator_copy(frl_allocator *dst, const frl_allocator *src, const char *who);

/* Ask Linux for 2 MiB pages under the whole 2 MiB stretches of [p, p + bytes), now
 * (collapse) and for later faults: arrays read at random places (a replay's draws, a
 * convolution's patches over a batch of images) otherwise miss the TLB on nearly every
 * line. Advice only: where it is refused (another OS, THP off) nothing changes. */
void frl_advise_huge_pages(void *p, size_t bytes);
/* The default allocator gives blocks of at least this size 2 MiB alignment and this
 * advice (a host's allocator is left to do as it likes). */
enum { FRL_HUGE_BLOCK = 4 << 20 };

/* size bytes aligned to align, zero-filled; NULL on failure or size overflow. */
void *frl_alloc(const frl_allocator *a, size_t size, size_t align);
void frl_free(const frl_allocator *a, void *ptr);

/* Round size up to a multiple of align (a power of two). */
static inline size_t frl_align_up(size_t size, size_t align)
{
    return (size + align - 1) & ~(align - 1);
}

#endif
