/* The raycasting world: a grid map of wall cells, an agent with a position and a
 * heading, and sprites (goals, pickups) that may move. Everything a step reads is in
 * ray_world, so a world is copied, saved and restored as plain data; the renderer
 * (render.h) only reads it. Units: one map cell is 1 x 1, angles are radians, and
 * x grows east, y grows south (the map's row index), as the renderer draws it. */
#ifndef FRL_ENV_RAY_WORLD_H
#define FRL_ENV_RAY_WORLD_H

#include <stdint.h>

#include "core/rng.h"

enum {
    RAY_MAX_MAP = 31,    /* cells a side: a 15 x 15 maze with its walls */
    RAY_MAX_SPRITES = 12,
    RAY_EMPTY = 0,       /* a cell value: 0 is floor, 1..RAY_WALL_KINDS a wall texture */
    RAY_WALL_KINDS = 4,
    RAY_DOOR = RAY_WALL_KINDS + 1, /* a wall that `use` opens */
};

/* The discrete actions, Doom-like: combined move-and-turn actions let a policy steer
 * while it walks, as ViZDoom's scenarios do. */
enum ray_action {
    RAY_FORWARD, RAY_BACKWARD, RAY_TURN_LEFT, RAY_TURN_RIGHT, RAY_FORWARD_LEFT,
    RAY_FORWARD_RIGHT, RAY_STRAFE_LEFT, RAY_STRAFE_RIGHT, RAY_USE, RAY_ACTIONS
};

/* What a sprite shows (its texture, render.h). */
enum ray_sprite_kind { RAY_SPRITE_GOAL, RAY_SPRITE_GOOD, RAY_SPRITE_BAD, RAY_SPRITE_KINDS };

typedef struct ray_sprite {
    float x, y;   /* centre on the floor */
    float vx, vy; /* cells a frame (moving pickups) */
    int32_t kind; /* ray_sprite_kind */
    int32_t alive;
} ray_sprite;

typedef struct ray_world {
    int32_t w, h; /* map size in cells */
    float x, y, angle;
    int32_t num_sprites;
    ray_sprite sprites[RAY_MAX_SPRITES];
    uint8_t cells[RAY_MAX_MAP * RAY_MAX_MAP]; /* row-major, h rows of w */
} ray_world;

static inline uint8_t ray_cell(const ray_world *wd, int32_t cx, int32_t cy)
{
    if (cx < 0 || cy < 0 || cx >= wd->w || cy >= wd->h)
        return 1; /* outside the map is wall, so a ray or a move never leaves it */
    return wd->cells[cy * wd->w + cx];
}

/* One frame of the agent's motion for action a: turning, then moving with the agent's
 * radius kept off the walls (each axis separately, so it slides along a wall). `use`
 * opens a door cell straight ahead within reach and returns 1 then. */
int ray_world_act(ray_world *wd, int32_t action);

/* Moving sprites advance one frame, bouncing off walls. */
void ray_world_move_sprites(ray_world *wd);

/* Whether a disc of the agent's radius at (x, y) fits between the walls. */
int ray_world_free(const ray_world *wd, float x, float y);

/* A uniform free cell's centre at least min_dist from (ax, ay): 64 draws, then (a sparse
 * map) a uniform choice among all such cells except the agent's own, else among the
 * farthest free cells; every choice from r, so it is deterministic. A negative (ax, ay)
 * means no agent. */
void ray_world_random_spot(const ray_world *wd, frl_rng *r, float ax, float ay,
                           float min_dist, float *x, float *y);

/* Heading from the agent to (x, y) minus its own, wrapped to [-pi, pi). */
float ray_world_bearing(const ray_world *wd, float x, float y);

#endif
