/* The first-person renderer: Wolfenstein-style raycasting over world.h's grid, one ray
 * per pixel column (a DDA walk through the cells), textured walls, textured floor and
 * ceiling drawn in the same column below and above each wall, and sprites drawn far to
 * near against the columns' depths. Distance fog darkens what is far, so depth shows in
 * grayscale too. Output is row-major [height x width x channels], channels 1
 * (luminance, ITU-R 601 weights) or 3 (RGB). */
#ifndef FRL_ENV_RAY_RENDER_H
#define FRL_ENV_RAY_RENDER_H

#include <stdint.h>

#include "env/ray/world.h"

enum {
    RAY_TEX_SIZE = 32, /* texels a side, a power of two so coordinates wrap by a mask */
    RAY_TEX_DOOR = RAY_WALL_KINDS, /* texture indices: walls 0..3, then these */
    RAY_TEX_FLOOR,
    RAY_TEX_CEILING,
    RAY_TEX_SPRITE0, /* + ray_sprite_kind */
    RAY_TEXTURES = RAY_TEX_SPRITE0 + RAY_SPRITE_KINDS,
    RAY_MIN_SIDE = 16, /* the smallest width and height the renderer draws */
    RAY_MAX_SIDE = 512,
};

/* Every texture, column-major (a wall column reads consecutive bytes), in RGB and in
 * luminance, plus the sprites' opacity. Made once per vec env, read-only after. */
typedef struct ray_textures {
    uint8_t rgb[RAY_TEXTURES][RAY_TEX_SIZE * RAY_TEX_SIZE * 3];
    uint8_t gray[RAY_TEXTURES][RAY_TEX_SIZE * RAY_TEX_SIZE];
    uint8_t opaque[RAY_SPRITE_KINDS][RAY_TEX_SIZE * RAY_TEX_SIZE];
} ray_textures;

/* A resolution and what depends on it only: the floor's distance per screen row and
 * its fog, computed once. */
typedef struct ray_view {
    int32_t width, height, channels;
    float proj; /* pixels per unit at distance 1: width / 2 for the 90-degree view */
    float row_dist[RAY_MAX_SIDE];
    uint16_t row_shade[RAY_MAX_SIDE];
} ray_view;

void ray_textures_make(ray_textures *t);

/* 0, or -1 when width or height is outside [RAY_MIN_SIDE, RAY_MAX_SIDE] or channels
 * is not 1 or 3. */
int ray_view_init(ray_view *v, int32_t width, int32_t height, int32_t channels);

/* Draw wd as the agent sees it into out; depth is scratch of width floats. */
void ray_render(const ray_world *wd, const ray_textures *t, const ray_view *v, float *depth,
                uint8_t *out);

#endif
