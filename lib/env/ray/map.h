/* Maps a host writes as text, for the room-like ray tasks (frl_vec_env_create_ray_map).
 * One line a row, every row the same length: '.' or ' ' floor, '1' to '4' (or '#', the
 * same as '1') a wall of that kind, 'D' a door. The edge must be wall or door, and the
 * floor one connected region (doors count as passable). */
#ifndef FRL_ENV_RAY_MAP_H
#define FRL_ENV_RAY_MAP_H

#include <stddef.h>

#include "core/error.h"
#include "env/ray/world.h"

enum { RAY_MAP_MIN = 3 };

/* out's w, h and cells from text; FRL_OK, or FRL_ERR_PARSE / FRL_ERR_SIZE /
 * FRL_ERR_INVALID_ARGUMENT with why (size bytes) naming the row and column. At least
 * min_free floor cells are required (a task's goal and pickups need room). */
frl_status ray_map_parse(ray_world *out, const char *text, int32_t min_free, char *why,
                         size_t size);

#endif
