/* Copying a host's versioned table (allocator, logger, env callbacks): every such
 * table starts with size_t struct_size, so an older, shorter table is copied as far as
 * it goes and keeps the defaults for the fields appended since. */
#ifndef FRL_CORE_TABLE_H
#define FRL_CORE_TABLE_H

#include <stddef.h>

#include "fastrl.h"

/* dst (dst_size bytes) already holds the defaults. Copies min(struct_size of src,
 * dst_size) bytes and sets dst's struct_size to dst_size. FRL_ERR_NULL if src is NULL,
 * FRL_ERR_VERSION if it is shorter than min_size (the fields every version has); the
 * message names who, what the table is, and init_fn, the function that fills one. */
frl_status frl_copy_table(void *dst, size_t dst_size, const void *src, size_t min_size,
                          const char *who, const char *what, const char *init_fn);

#endif
