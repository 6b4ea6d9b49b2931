#include <string.h>

#include "core/error.h"
#include "core/table.h"

frl_status frl_copy_table(void *dst, size_t dst_size, const void *src, size_t min_size,
                          const char *who, const char *what, const char *init_fn)
{
    if (!src)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: %s table is NULL", who, what);
    size_t src_size;
    memcpy(&src_size, src, sizeof src_size);
    if (src_size < min_size)
        return frl_fail(NULL, FRL_ERR_VERSION,
                        "%s: %s struct_size %zu is too small (fill the table with %s first)",
                        who, what, src_size, init_fn);
    /* A table shorter than ours is an older header's: its sizeof, a multiple of 8 (its
     * pointers' and 64-bit fields' alignment), or the minimum, which ends at a field's
     * end by construction. Any other size would copy part of a field, half a function
     * pointer that is later called. */
    if (src_size < dst_size && src_size != min_size && src_size % 8 != 0)
        return frl_fail(NULL, FRL_ERR_VERSION,
                        "%s: %s struct_size %zu ends inside a field (set it to the table's "
                        "sizeof, as %s does)", who, what, src_size, init_fn);
    memcpy(dst, src, src_size < dst_size ? src_size : dst_size);
    memcpy(dst, &dst_size, sizeof dst_size);
    return FRL_OK;
}
