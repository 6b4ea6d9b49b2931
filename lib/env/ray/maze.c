/* Mazes for RayMaze-v0 and the distances its oracle follows (maze.h). */
#include <string.h>

#include "env/ray/maze.h"

static void carve(ray_world *wd, int32_t cx, int32_t cy)
{
    wd->cells[(2 * cy + 1) * wd->w + 2 * cx + 1] = RAY_EMPTY;
}

/* The unvisited neighbours of maze cell (cx, cy), as direction indices. */
static int32_t open_dirs(const uint8_t *seen, int32_t m, int32_t cx, int32_t cy, int32_t *dirs)
{
    static const int32_t dx[4] = {1, -1, 0, 0}, dy[4] = {0, 0, 1, -1};
    int32_t n = 0;
    for (int32_t d = 0; d < 4; d++) {
        int32_t x = cx + dx[d], y = cy + dy[d];
        if (x >= 0 && y >= 0 && x < m && y < m && !seen[y * m + x])
            dirs[n++] = d;
    }
    return n;
}

void ray_maze_generate(ray_world *wd, int32_t m, frl_rng *r)
{
    static const int32_t dx[4] = {1, -1, 0, 0}, dy[4] = {0, 0, 1, -1};
    int32_t stack[RAY_MAZE_MAX * RAY_MAZE_MAX];
    uint8_t seen[RAY_MAZE_MAX * RAY_MAZE_MAX] = {0};
    wd->w = wd->h = 2 * m + 1;
    for (int32_t i = 0; i < wd->w * wd->h; i++) /* wall kinds vary, as landmarks */
        wd->cells[i] = (uint8_t)(1 + (int32_t)(frl_rng_uniform(r) * RAY_WALL_KINDS) % RAY_WALL_KINDS);
    int32_t top = 0, start = (int32_t)(frl_rng_uniform(r) * m * m) % (m * m);
    stack[top++] = start;
    seen[start] = 1;
    carve(wd, start % m, start / m);
    while (top > 0) { /* the recursive backtracker, with an explicit stack */
        int32_t c = stack[top - 1], cx = c % m, cy = c / m, dirs[4];
        int32_t n = open_dirs(seen, m, cx, cy, dirs);
        if (n == 0) {
            top--;
            continue;
        }
        int32_t d = dirs[(int32_t)(frl_rng_uniform(r) * n) % n];
        int32_t nx = cx + dx[d], ny = cy + dy[d];
        wd->cells[(2 * cy + 1 + dy[d]) * wd->w + 2 * cx + 1 + dx[d]] = RAY_EMPTY;
        carve(wd, nx, ny);
        seen[ny * m + nx] = 1;
        stack[top++] = ny * m + nx;
    }
}

void ray_maze_distances(const ray_world *wd, int32_t gx, int32_t gy, int16_t *dist)
{
    static const int32_t dx[4] = {1, -1, 0, 0}, dy[4] = {0, 0, 1, -1};
    int32_t queue[RAY_MAX_MAP * RAY_MAX_MAP], head = 0, tail = 0;
    for (int32_t i = 0; i < wd->w * wd->h; i++)
        dist[i] = -1;
    dist[gy * wd->w + gx] = 0;
    queue[tail++] = gy * wd->w + gx;
    while (head < tail) { /* breadth first over floor cells */
        int32_t c = queue[head++], x = c % wd->w, y = c / wd->w;
        for (int32_t d = 0; d < 4; d++) {
            int32_t nx = x + dx[d], ny = y + dy[d];
            if (ray_cell(wd, nx, ny) != RAY_EMPTY || dist[ny * wd->w + nx] >= 0)
                continue;
            dist[ny * wd->w + nx] = (int16_t)(dist[c] + 1);
            queue[tail++] = ny * wd->w + nx;
        }
    }
}
