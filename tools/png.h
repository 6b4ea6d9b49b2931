/* A PNG writer with no dependency: 8-bit grayscale or RGB, rows unfiltered, the zlib
 * stream made of stored (uncompressed) deflate blocks. Files are larger than a
 * compressing writer's, which is fine for the frames `fastrl render` writes. */
#ifndef FRL_TOOLS_PNG_H
#define FRL_TOOLS_PNG_H

#include <stdint.h>

/* 0, or -1 with errno set when the file cannot be written; channels is 1 or 3. A plain
 * file (or none) at path is replaced whole or not at all: the file is written beside it
 * and renamed over it. */
int png_write(const char *path, const uint8_t *pixels, int32_t width, int32_t height,
              int32_t channels);

#endif
