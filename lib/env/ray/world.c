/* The raycasting world's motion (world.h). Speeds are per frame: with the default frame
 * skip of 4 an agent step walks 0.4 cells or turns 18 degrees, so a quarter turn takes
 * 5 steps and crossing a 9-cell room about 22, short enough for PPO's horizon. */
#include <math.h>

#include "env/ray/world.h"

#define RAY_PI 3.14159265358979f
static const float move_speed = 0.1f, back_speed = 0.06f, strafe_speed = 0.07f;
static const float turn_speed = 4.5f * RAY_PI / 180.0f;
static const float radius = 0.2f, reach = 1.2f;

int ray_world_free(const ray_world *wd, float x, float y)
{
    int32_t x0 = (int32_t)floorf(x - radius), x1 = (int32_t)floorf(x + radius);
    int32_t y0 = (int32_t)floorf(y - radius), y1 = (int32_t)floorf(y + radius);
    return ray_cell(wd, x0, y0) == RAY_EMPTY && ray_cell(wd, x1, y0) == RAY_EMPTY &&
           ray_cell(wd, x0, y1) == RAY_EMPTY && ray_cell(wd, x1, y1) == RAY_EMPTY;
}

static void move_by(ray_world *wd, float dx, float dy)
{
    if (ray_world_free(wd, wd->x + dx, wd->y))
        wd->x += dx;
    if (ray_world_free(wd, wd->x, wd->y + dy))
        wd->y += dy;
}

static float wrap_angle(float a)
{
    while (a >= RAY_PI)
        a -= 2.0f * RAY_PI;
    while (a < -RAY_PI)
        a += 2.0f * RAY_PI;
    return a;
}

/* The first cell straight ahead within reach, sampled every 0.05 cells; a door there
 * becomes floor. */
static int use_ahead(ray_world *wd)
{
    float c = cosf(wd->angle), s = sinf(wd->angle);
    for (float d = 0.05f; d <= reach; d += 0.05f) {
        int32_t cx = (int32_t)floorf(wd->x + c * d), cy = (int32_t)floorf(wd->y + s * d);
        uint8_t v = ray_cell(wd, cx, cy);
        if (v == RAY_EMPTY)
            continue;
        if (v != RAY_DOOR)
            return 0;
        wd->cells[cy * wd->w + cx] = RAY_EMPTY;
        return 1;
    }
    return 0;
}

int ray_world_act(ray_world *wd, int32_t action)
{
    static const float turn[RAY_ACTIONS] = {0, 0, -1, 1, -1, 1, 0, 0, 0};
    static const float fwd[RAY_ACTIONS] = {1, -1, 0, 0, 1, 1, 0, 0, 0};
    static const float side[RAY_ACTIONS] = {0, 0, 0, 0, 0, 0, -1, 1, 0};
    if (action == RAY_USE)
        return use_ahead(wd);
    wd->angle = wrap_angle(wd->angle + turn[action] * turn_speed);
    float c = cosf(wd->angle), s = sinf(wd->angle);
    float f = fwd[action] > 0 ? move_speed : back_speed;
    float along = fwd[action] * f, across = side[action] * strafe_speed;
    /* y grows south, so the agent's left (a negative turn) is (s, -c) */
    move_by(wd, c * along - s * across, s * along + c * across);
    return 0;
}

static int sprite_blocked(const ray_world *wd, float x, float y)
{
    return ray_cell(wd, (int32_t)floorf(x), (int32_t)floorf(y)) != RAY_EMPTY;
}

void ray_world_move_sprites(ray_world *wd)
{
    for (int32_t i = 0; i < wd->num_sprites; i++) {
        ray_sprite *p = &wd->sprites[i];
        if (!p->alive || (p->vx == 0 && p->vy == 0))
            continue;
        /* a sprite is a point for walls, kept 0.3 off them so it never pokes in */
        float ox = p->vx > 0 ? 0.3f : -0.3f, oy = p->vy > 0 ? 0.3f : -0.3f;
        if (sprite_blocked(wd, p->x + p->vx + ox, p->y))
            p->vx = -p->vx;
        else
            p->x += p->vx;
        if (sprite_blocked(wd, p->x, p->y + p->vy + oy))
            p->vy = -p->vy;
        else
            p->y += p->vy;
    }
}

/* How many free cells qualify, and in *picked the pick-th of them (row-major): when
 * want_far is 0 those other than the agent's own at least min_dist from (ax, ay), when
 * it is 1 those at distance far (the farthest of any free cell). */
static int32_t count_cells(const ray_world *wd, float ax, float ay, float min_dist,
                           int want_far, float far, int32_t pick, int32_t *picked)
{
    int32_t n = 0;
    int32_t agent = (int32_t)floorf(ay) * wd->w + (int32_t)floorf(ax);
    if (ax < 0 || ay < 0) /* place_agent's far-away point: there is no agent yet */
        agent = -1;
    for (int32_t i = 0; i < wd->w * wd->h; i++) {
        if (wd->cells[i] != RAY_EMPTY)
            continue;
        float d = hypotf((float)(i % wd->w) + 0.5f - ax, (float)(i / wd->w) + 0.5f - ay);
        int ok = want_far ? d == far : i != agent && d >= min_dist;
        if (ok && n++ == pick)
            *picked = i;
    }
    return n;
}

static float farthest(const ray_world *wd, float ax, float ay)
{
    float far = -1.0f;
    for (int32_t i = 0; i < wd->w * wd->h; i++)
        if (wd->cells[i] == RAY_EMPTY)
            far = fmaxf(far, hypotf((float)(i % wd->w) + 0.5f - ax,
                                    (float)(i / wd->w) + 0.5f - ay));
    return far;
}

/* When the draws fail (a sparse host map is mostly wall, or few cells are far enough):
 * a uniform choice among every free cell that qualifies, else among the farthest ones.
 * Taking the farthest draw or the first free cell instead put goals and pickups on the
 * agent. The maps' floor is never empty (map.c, maze.c), so some cell is found. */
static void exhaustive_spot(const ray_world *wd, frl_rng *r, float ax, float ay,
                            float min_dist, float *x, float *y)
{
    int32_t cell = -1;
    int want_far = 0;
    float far = 0.0f;
    int32_t n = count_cells(wd, ax, ay, min_dist, 0, 0.0f, -1, &cell); /* -1: count only */
    if (n == 0) {
        want_far = 1;
        far = farthest(wd, ax, ay);
        n = count_cells(wd, ax, ay, min_dist, 1, far, -1, &cell);
    }
    if (n == 0)
        return;
    int32_t k = (int32_t)(frl_rng_uniform(r) * n);
    count_cells(wd, ax, ay, min_dist, want_far, far, k < n ? k : n - 1, &cell);
    *x = (float)(cell % wd->w) + 0.5f;
    *y = (float)(cell / wd->w) + 0.5f;
}

void ray_world_random_spot(const ray_world *wd, frl_rng *r, float ax, float ay,
                           float min_dist, float *x, float *y)
{
    for (int tries = 0; tries < 64; tries++) {
        int32_t cx = (int32_t)(frl_rng_uniform(r) * wd->w);
        int32_t cy = (int32_t)(frl_rng_uniform(r) * wd->h);
        if (ray_cell(wd, cx, cy) != RAY_EMPTY)
            continue;
        float px = (float)cx + 0.5f, py = (float)cy + 0.5f;
        if (hypotf(px - ax, py - ay) >= min_dist) {
            *x = px;
            *y = py;
            return;
        }
    }
    exhaustive_spot(wd, r, ax, ay, min_dist, x, y);
}

float ray_world_bearing(const ray_world *wd, float x, float y)
{
    return wrap_angle(atan2f(y - wd->y, x - wd->x) - wd->angle);
}
