#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#if defined(MADV_HUGEPAGE) && !defined(MADV_COLLAPSE)
#define MADV_COLLAPSE 25 /* Linux 6.1's value; older kernels refuse it (EINVAL) */
#endif
#endif

#include "core/alloc.h"
#include "core/error.h"
#include "core/table.h"

void frl_advise_huge_pages(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t e = ((uintptr_t)p + bytes) & ~(huge - 1);
    if (e <= a)
        return;
    (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
#if defined(MADV_COLLAPSE)
    (void)madvise((void *)a, e - a, MADV_COLLAPSE);
#endif
#else
    (void)p;
    (void)bytes;
#endif
}

/* Large blocks start on a 2 MiB boundary with the huge-page advice, so that their
 * pages are 2 MiB from the first touch (frl_alloc's zero fill): a convolution over a
 * batch of 256 Atari frames ran 5-19% faster so (bench/README.md). */
static void *default_alloc(void *user, size_t size, size_t alignment)
{
    (void)user;
    void *p = NULL;
    if (alignment < sizeof(void *))
        alignment = sizeof(void *);
    if (size >= FRL_HUGE_BLOCK && alignment < ((size_t)2 << 20))
        alignment = (size_t)2 << 20;
    if (posix_memalign(&p, alignment, size ? size : 1) != 0)
        return NULL;
    if (size >= FRL_HUGE_BLOCK)
        frl_advise_huge_pages(p, size);
    return p;
}

static void default_free(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

void frl_allocator_default(frl_allocator *a)
{
    frl_allocator_init(a);
    a->alloc = default_alloc;
    a->free = default_free;
}

frl_status frl_allocator_copy(frl_allocator *dst, const frl_allocator *src, const char *who)
{
    frl_allocator_default(dst);
    if (!src)
        return FRL_OK;
    frl_status st = frl_copy_table(dst, sizeof *dst, src, offsetof(frl_allocator, user), who,
                                   "allocator", "frl_allocator_init");
    if (st != FRL_OK)
        return st;
    if (!dst->alloc && !dst->free) { /* frl_allocator_init's table: the default */
        dst->alloc = default_alloc;
        dst->free = default_free;
    }
    if (!dst->alloc || !dst->free)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: allocator.%s is NULL", who,
                        dst->alloc ? "free" : "alloc");
    return FRL_OK;
}

void *frl_alloc(const frl_allocator *a, size_t size, size_t align)
{
    if (size > (size_t)1 << 48)
        return NULL;
    void *p = a->alloc(a->user, size, align);
    if (p)
        memset(p, 0, size);
    return p;
}

void frl_free(const frl_allocator *a, void *ptr)
{
    if (ptr)
        a->free(a->user, ptr);
}
