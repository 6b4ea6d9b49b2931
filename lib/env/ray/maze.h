/* Perfect mazes (one path between any two cells) drawn by the recursive backtracker,
 * and shortest-path distances over a world's floor cells. A maze of m x m cells is a
 * map of (2m + 1) x (2m + 1): cells at odd coordinates, walls between them. */
#ifndef FRL_ENV_RAY_MAZE_H
#define FRL_ENV_RAY_MAZE_H

#include "env/ray/world.h"

enum { RAY_MAZE_MIN = 2, RAY_MAZE_MAX = (RAY_MAX_MAP - 1) / 2 };

/* wd's map becomes an m x m maze from r (RAY_MAZE_MIN <= m <= RAY_MAZE_MAX); every
 * wall cell gets a random wall kind, so walls are landmarks. */
void ray_maze_generate(ray_world *wd, int32_t m, frl_rng *r);

/* dist[w * h]: steps over floor cells from (gx, gy), -1 where unreachable. */
void ray_maze_distances(const ray_world *wd, int32_t gx, int32_t gy, int16_t *dist);

#endif
