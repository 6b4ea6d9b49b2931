/* Procedural textures for the raycaster (render.h): drawn from formulas and a hash, so
 * the project ships no image files and every build has the same pixels. Each wall kind
 * has its own pattern and brightness, so a wall tells a policy which way it faces in
 * grayscale too; the pickups differ in luminance (yellow 200+, red under 90). */
#include <string.h>

#include "core/rng.h"
#include "env/ray/render.h"

enum { N = RAY_TEX_SIZE };

typedef struct rgb {
    int r, g, b;
} rgb;

static int noise(int tex, int x, int y, int amp)
{
    uint64_t h = frl_mix64(((uint64_t)tex << 32) ^ ((uint64_t)y << 16) ^ (uint64_t)x);
    return (int)(h % (uint64_t)(2 * amp + 1)) - amp;
}

static rgb scaled(rgb c, int add)
{
    rgb o = {c.r + add, c.g + add, c.b + add};
    return o;
}

/* Bricks 16 x 8 texels, alternate rows offset by half a brick, grey mortar. */
static rgb brick(int x, int y)
{
    int row = y / 8, bx = (x + (row & 1) * 8) % 16;
    if (y % 8 == 7 || bx == 15)
        return (rgb){110, 110, 100};
    return scaled((rgb){150, 50, 35}, noise(0, x, y, 12));
}

/* Large grey blocks with dark seams. */
static rgb stone(int x, int y)
{
    if (x % 16 == 0 || y % 16 == 0)
        return (rgb){40, 40, 45};
    return scaled((rgb){120, 120, 125}, noise(1, x, y, 18));
}

/* Vertical planks with grain, light. */
static rgb wood(int x, int y)
{
    if (x % 8 == 0)
        return (rgb){90, 60, 30};
    return scaled((rgb){190, 140, 80}, noise(2, x, y / 4, 10) + ((x * 7 + y) % 5 == 0 ? -15 : 0));
}

/* Blue tiles, dark. */
static rgb tiles(int x, int y)
{
    if (x % 8 == 0 || y % 8 == 0)
        return (rgb){20, 20, 40};
    return scaled((rgb){40, 60, 150}, noise(3, x, y, 8));
}

/* A door: a dark frame around cross-braced boards. */
static rgb door(int x, int y)
{
    if (x < 3 || x > N - 4 || y < 3)
        return (rgb){50, 50, 50};
    if (x == y || x == N - 1 - y)
        return (rgb){60, 35, 15};
    return scaled((rgb){130, 80, 35}, noise(4, x, y, 8));
}

/* Floor: 16-texel checks, two greens. */
static rgb floor_tex(int x, int y)
{
    int odd = ((x / 16) + (y / 16)) & 1;
    return scaled(odd ? (rgb){70, 90, 60} : (rgb){100, 120, 85}, noise(5, x, y, 6));
}

static rgb ceiling_tex(int x, int y)
{
    return scaled((rgb){60, 60, 75}, noise(6, x, y, 5));
}

/* Sprites are discs of radius r around (16, cy), or nothing (opacity 0). */
static int in_disc(int x, int y, int cy, int r)
{
    int dx = 2 * x + 1 - N, dy = 2 * y + 1 - 2 * cy;
    return dx * dx + dy * dy <= 4 * r * r;
}

/* The goal: a tall green pillar with a bright band, standing on the floor. */
static rgb goal(int x, int y, int *opaque)
{
    *opaque = x >= 10 && x < 22 && y >= 2;
    return y >= 8 && y < 12 ? (rgb){220, 255, 220} : (rgb){20, 200, 60};
}

/* A good pickup: a yellow ball resting on the floor, lit from above. */
static rgb good(int x, int y, int *opaque)
{
    *opaque = in_disc(x, y, 19, 12);
    return y < 14 ? (rgb){255, 250, 150} : (rgb){240, 210, 40};
}

/* A bad pickup: a dark red ball with spikes. */
static rgb bad(int x, int y, int *opaque)
{
    *opaque = in_disc(x, y, 19, 10) || (in_disc(x, y, 19, 13) && ((x + y) % 4 == 0));
    return (rgb){150, 15, 10};
}

static uint8_t clamp_byte(int v)
{
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

static void store(ray_textures *t, int tex, int x, int y, rgb c)
{
    uint8_t *p = &t->rgb[tex][(x * N + y) * 3];
    p[0] = clamp_byte(c.r);
    p[1] = clamp_byte(c.g);
    p[2] = clamp_byte(c.b);
    t->gray[tex][x * N + y] = (uint8_t)((299 * p[0] + 587 * p[1] + 114 * p[2] + 500) / 1000);
}

static rgb texel(int tex, int x, int y, int *opaque)
{
    typedef rgb (*plain)(int, int);
    typedef rgb (*sprite)(int, int, int *);
    static const plain plains[RAY_TEX_SPRITE0] = {brick, stone, wood, tiles, door,
                                                  floor_tex, ceiling_tex};
    static const sprite sprites[RAY_SPRITE_KINDS] = {goal, good, bad};
    *opaque = 1;
    return tex < RAY_TEX_SPRITE0 ? plains[tex](x, y) : sprites[tex - RAY_TEX_SPRITE0](x, y, opaque);
}

void ray_textures_make(ray_textures *t)
{
    memset(t, 0, sizeof *t);
    for (int tex = 0; tex < RAY_TEXTURES; tex++)
        for (int x = 0; x < N; x++)
            for (int y = 0; y < N; y++) {
                int opaque;
                store(t, tex, x, y, texel(tex, x, y, &opaque));
                if (tex >= RAY_TEX_SPRITE0)
                    t->opaque[tex - RAY_TEX_SPRITE0][x * N + y] = (uint8_t)opaque;
            }
}
