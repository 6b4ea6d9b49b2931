/* Host frames (frl_frame): taking an image observation out of the buffer a host env
 * rendered into, with its own row stride and bytes per pixel. */
#ifndef FRL_ENV_FRAME_H
#define FRL_ENV_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "core/space.h"

/* Copy the image space's [h x w x c] bytes out of frame into obs: the first c bytes of
 * each pixel, row by row along the frame's stride. FRL_OK, or a status with what is
 * wrong with the frame written to why (size bytes) and obs untouched. */
frl_status frl_frame_copy(const frl_space *image, const frl_frame *frame, uint8_t *obs,
                          char *why, size_t size);

#endif
