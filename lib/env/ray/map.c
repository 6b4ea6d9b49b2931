/* Text maps (map.h): read the rows, then check the edge and that the floor is one
 * region, so a task never places its goal where the agent cannot walk. */
#include <stdio.h>
#include <string.h>

#include "env/ray/map.h"
#include "env/ray/maze.h"

/* The cell a character stands for, or -1. */
static int cell_of(char c)
{
    if (c == '.' || c == ' ')
        return RAY_EMPTY;
    if (c == '#')
        return 1;
    if (c >= '1' && c <= '0' + RAY_WALL_KINDS)
        return c - '0';
    return c == 'D' ? RAY_DOOR : -1;
}

static frl_status too_big(char *why, size_t size)
{
    snprintf(why, size, "the map has more than %d rows or columns (%d to %d a side)",
             RAY_MAX_MAP, RAY_MAP_MIN, RAY_MAX_MAP);
    return FRL_ERR_SIZE;
}

/* Rows into out->cells packed w apart; a final newline is optional, and lines may end
 * in CRLF (a map file written on Windows). */
static frl_status read_rows(ray_world *out, const char *text, char *why, size_t size)
{
    int32_t w = -1, h = 0, x = 0;
    for (const char *p = text; *p || x > 0; p++) {
        if (p[0] == '\r' && p[1] == '\n')
            continue;
        if (*p == '\n' || *p == '\0') {
            if (w >= 0 && x != w) {
                snprintf(why, size, "row %d has %d cells, row 1 has %d (rows must be equal)",
                         (int)h + 1, (int)x, (int)w);
                return FRL_ERR_PARSE;
            }
            w = x;
            x = 0;
            h++;
            if (*p == '\0')
                break;
            continue;
        }
        int v = cell_of(*p);
        if (v < 0) {
            /* A byte that does not print (a tab, a lone CR, UTF-8) by its code. */
            unsigned char c = (unsigned char)*p;
            char shown[16];
            snprintf(shown, sizeof shown, c >= 0x20 && c < 0x7f ? "'%c'" : "byte 0x%02x", c);
            snprintf(why, size, "row %d, column %d: %s is no cell ('.' floor, '1'-'4' or "
                     "'#' wall, 'D' door)", (int)h + 1, (int)x + 1, shown);
            return FRL_ERR_PARSE;
        }
        if (x >= RAY_MAX_MAP || h >= RAY_MAX_MAP)
            return too_big(why, size);
        out->cells[h * RAY_MAX_MAP + x++] = (uint8_t)v;
    }
    if (w < RAY_MAP_MIN || h < RAY_MAP_MIN) {
        snprintf(why, size, "the map is %d x %d cells; it must be %d to %d a side",
                 (int)(w < 0 ? 0 : w), (int)h, RAY_MAP_MIN, RAY_MAX_MAP);
        return FRL_ERR_SIZE;
    }
    out->w = w;
    out->h = h;
    for (int32_t y = 1; y < h; y++) /* rows were read RAY_MAX_MAP apart: pack them */
        memmove(out->cells + y * w, out->cells + y * RAY_MAX_MAP, (size_t)w);
    return FRL_OK;
}

static frl_status check_edge(const ray_world *m, char *why, size_t size)
{
    for (int32_t y = 0; y < m->h; y++)
        for (int32_t x = 0; x < m->w; x++) {
            int edge = x == 0 || y == 0 || x == m->w - 1 || y == m->h - 1;
            if (edge && m->cells[y * m->w + x] == RAY_EMPTY) {
                snprintf(why, size, "row %d, column %d: the edge must be wall or door, not "
                         "floor", (int)y + 1, (int)x + 1);
                return FRL_ERR_INVALID_ARGUMENT;
            }
        }
    return FRL_OK;
}

/* Every floor cell reachable from the first, doors opened for the walk. */
static frl_status check_connected(const ray_world *m, int32_t min_free, char *why, size_t size)
{
    ray_world open = *m;
    int32_t first = -1, free_cells = 0;
    for (int32_t i = 0; i < m->w * m->h; i++) {
        if (open.cells[i] == RAY_DOOR)
            open.cells[i] = RAY_EMPTY;
        if (m->cells[i] == RAY_EMPTY && first < 0)
            first = i;
        free_cells += m->cells[i] == RAY_EMPTY;
    }
    if (free_cells < min_free) {
        snprintf(why, size, "%d floor cells; the task needs at least %d", (int)free_cells,
                 (int)min_free);
        return FRL_ERR_INVALID_ARGUMENT;
    }
    int16_t dist[RAY_MAX_MAP * RAY_MAX_MAP];
    ray_maze_distances(&open, first % m->w, first / m->w, dist);
    for (int32_t i = 0; i < m->w * m->h; i++)
        if (m->cells[i] == RAY_EMPTY && dist[i] < 0) {
            snprintf(why, size, "row %d, column %d: floor that cannot be reached from row %d, "
                     "column %d (the floor must be one region)", (int)(i / m->w) + 1,
                     (int)(i % m->w) + 1, (int)(first / m->w) + 1, (int)(first % m->w) + 1);
            return FRL_ERR_INVALID_ARGUMENT;
        }
    return FRL_OK;
}

frl_status ray_map_parse(ray_world *out, const char *text, int32_t min_free, char *why,
                         size_t size)
{
    memset(out, 0, sizeof *out);
    frl_status st = read_rows(out, text, why, size);
    if (st == FRL_OK)
        st = check_edge(out, why, size);
    return st == FRL_OK ? check_connected(out, min_free, why, size) : st;
}
