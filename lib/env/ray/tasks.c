/* The three raycasting tasks (tasks.h): a dense one, a sparse one in fresh mazes, and a
 * collection task with moving pickups, after ViZDoom's and DMLab's staples (reach a
 * goal, explore_goal_locations, health gathering). */
#include <math.h>
#include <string.h>

#include "env/ray/maze.h"
#include "env/ray/tasks.h"

#define RAY_TWO_PI 6.28318530718f

enum { ROOM_SIDE = 11, COLLECT_SIDE = 14, COLLECT_GOOD = 6, COLLECT_BAD = 3 };
static const float reach_goal = 0.5f, touch = 0.5f;
/* The sprites each task's reset makes, by index (set_state refuses others). */
static const int32_t goal_kinds[1] = {RAY_SPRITE_GOAL};
static const int32_t collect_kinds[COLLECT_GOOD + COLLECT_BAD] = {
    RAY_SPRITE_GOOD, RAY_SPRITE_GOOD, RAY_SPRITE_GOOD, RAY_SPRITE_GOOD, RAY_SPRITE_GOOD,
    RAY_SPRITE_GOOD, RAY_SPRITE_BAD, RAY_SPRITE_BAD, RAY_SPRITE_BAD};

/* A square room of side cells: each wall a different kind (north brick, east stone,
 * south wood, west tiles), so a policy can tell which way it faces. */
static void make_room(ray_world *wd, int32_t side)
{
    wd->w = wd->h = side;
    for (int32_t y = 0; y < side; y++)
        for (int32_t x = 0; x < side; x++) {
            uint8_t v = RAY_EMPTY;
            if (y == 0)
                v = 1;
            else if (x == side - 1)
                v = 2;
            else if (y == side - 1)
                v = 3;
            else if (x == 0)
                v = 4;
            wd->cells[y * side + x] = v;
        }
}

/* The host's map when there is one, else the task's own room. */
static void make_map(ray_sim *s, int32_t side)
{
    ray_world *wd = &s->world;
    if (!s->layout) {
        make_room(wd, side);
        return;
    }
    wd->w = s->layout->w;
    wd->h = s->layout->h;
    memcpy(wd->cells, s->layout->cells, (size_t)wd->w * (size_t)wd->h);
}

static void place_agent(ray_sim *s)
{
    ray_world *wd = &s->world;
    ray_world_random_spot(wd, &s->rng, -100.0f, -100.0f, 0.0f, &wd->x, &wd->y);
    wd->angle = (float)frl_rng_uniform(&s->rng) * RAY_TWO_PI - 0.5f * RAY_TWO_PI;
}

static void add_sprite(ray_world *wd, int32_t kind, float x, float y, float vx, float vy)
{
    ray_sprite p = {x, y, vx, vy, kind, 1};
    wd->sprites[wd->num_sprites++] = p;
}

static float dist_to(const ray_world *wd, const ray_sprite *p)
{
    return hypotf(p->x - wd->x, p->y - wd->y);
}

int32_t ray_steer(const ray_world *wd, float x, float y)
{
    float b = ray_world_bearing(wd, x, y);
    if (fabsf(b) > 0.35f) /* more than 20 degrees off: turn on the spot */
        return b < 0 ? RAY_TURN_LEFT : RAY_TURN_RIGHT;
    if (fabsf(b) > 0.06f)
        return b < 0 ? RAY_FORWARD_LEFT : RAY_FORWARD_RIGHT;
    return RAY_FORWARD;
}

/* ---- RayRoom-v0: reach the goal pillar in a fixed room (dense) ---- */

static int32_t room_side(int32_t maze_size)
{
    (void)maze_size;
    return ROOM_SIDE;
}

static void room_reset(ray_sim *s)
{
    ray_world *wd = &s->world;
    make_map(s, ROOM_SIDE);
    place_agent(s);
    float gx, gy;
    ray_world_random_spot(wd, &s->rng, wd->x, wd->y, 3.0f, &gx, &gy);
    wd->num_sprites = 0;
    add_sprite(wd, RAY_SPRITE_GOAL, gx, gy, 0, 0);
    s->prev_dist = dist_to(wd, &wd->sprites[0]);
}

/* 0.1 a cell of progress towards the goal (so a straight walk earns 0.1 x the start
 * distance), and 1 on reaching it, which ends the episode. */
static float room_frame(ray_sim *s, int *done)
{
    float d = dist_to(&s->world, &s->world.sprites[0]);
    float r = 0.1f * (s->prev_dist - d);
    s->prev_dist = d;
    if (d < reach_goal) {
        *done = 1;
        r += 1.0f;
    }
    return r;
}

static int32_t room_oracle(const ray_sim *s)
{
    return ray_steer(&s->world, s->world.sprites[0].x, s->world.sprites[0].y);
}

/* ---- RayMaze-v0: find the goal in a maze made afresh each episode (sparse) ---- */

static int32_t maze_side(int32_t maze_size)
{
    return 2 * maze_size + 1;
}

static void maze_reset(ray_sim *s)
{
    ray_world *wd = &s->world;
    ray_maze_generate(wd, s->maze_size, &s->rng);
    place_agent(s);
    float gx, gy;
    ray_world_random_spot(wd, &s->rng, wd->x, wd->y, (float)s->maze_size, &gx, &gy);
    wd->num_sprites = 0;
    add_sprite(wd, RAY_SPRITE_GOAL, gx, gy, 0, 0);
    s->prev_dist = 0;
}

/* 1 on reaching the goal, which ends the episode; nothing else. */
static float maze_frame(ray_sim *s, int *done)
{
    if (dist_to(&s->world, &s->world.sprites[0]) >= reach_goal)
        return 0.0f;
    *done = 1;
    return 1.0f;
}

/* Along the shortest path: towards the centre of the neighbouring cell nearer the goal.
 * Two adjacent cells make a convex 1 x 2 box, so the straight line from anywhere in this
 * cell to that centre never meets a wall. */
static int32_t maze_oracle(const ray_sim *s)
{
    static const int32_t dx[4] = {1, -1, 0, 0}, dy[4] = {0, 0, 1, -1};
    const ray_world *wd = &s->world;
    const ray_sprite *g = &wd->sprites[0];
    int16_t dist[RAY_MAX_MAP * RAY_MAX_MAP];
    ray_maze_distances(wd, (int32_t)g->x, (int32_t)g->y, dist);
    int32_t cx = (int32_t)wd->x, cy = (int32_t)wd->y, here = dist[cy * wd->w + cx];
    float tx = g->x, ty = g->y;
    for (int32_t d = 0; d < 4 && here > 0; d++) {
        int32_t nx = cx + dx[d], ny = cy + dy[d];
        if (ray_cell(wd, nx, ny) == RAY_EMPTY && dist[ny * wd->w + nx] == here - 1) {
            tx = (float)nx + 0.5f;
            ty = (float)ny + 0.5f;
            break;
        }
    }
    return ray_steer(wd, tx, ty);
}

/* ---- RayCollect-v0: gather yellow balls, avoid red ones, all of them moving ---- */

static int32_t collect_side(int32_t maze_size)
{
    (void)maze_size;
    return COLLECT_SIDE;
}

static void respawn(ray_sim *s, ray_sprite *p)
{
    ray_world *wd = &s->world;
    ray_world_random_spot(wd, &s->rng, wd->x, wd->y, 3.0f, &p->x, &p->y);
    float a = (float)frl_rng_uniform(&s->rng) * RAY_TWO_PI;
    float speed = 0.02f + 0.02f * (float)frl_rng_uniform(&s->rng);
    p->vx = speed * cosf(a);
    p->vy = speed * sinf(a);
}

static void collect_reset(ray_sim *s)
{
    ray_world *wd = &s->world;
    make_map(s, COLLECT_SIDE);
    place_agent(s);
    wd->num_sprites = 0;
    for (int32_t i = 0; i < COLLECT_GOOD + COLLECT_BAD; i++) {
        add_sprite(wd, collect_kinds[i], 0, 0, 0, 0);
        respawn(s, &wd->sprites[i]);
    }
    s->prev_dist = 0;
}

/* +1 for touching a yellow ball, -1 for a red one; a touched ball reappears at least 3
 * cells away. Episodes end only by the time limit. */
static float collect_frame(ray_sim *s, int *done)
{
    ray_world *wd = &s->world;
    float r = 0.0f;
    *done = 0;
    ray_world_move_sprites(wd);
    for (int32_t i = 0; i < wd->num_sprites; i++) {
        ray_sprite *p = &wd->sprites[i];
        if (dist_to(wd, p) >= touch)
            continue;
        r += p->kind == RAY_SPRITE_GOOD ? 1.0f : -1.0f;
        respawn(s, p);
    }
    return r;
}

/* The nearest yellow ball, whatever the red ones do. */
static int32_t collect_oracle(const ray_sim *s)
{
    const ray_world *wd = &s->world;
    const ray_sprite *best = NULL;
    for (int32_t i = 0; i < wd->num_sprites; i++) {
        const ray_sprite *p = &wd->sprites[i];
        if (p->kind == RAY_SPRITE_GOOD && (!best || dist_to(wd, p) < dist_to(wd, best)))
            best = p;
    }
    return best ? ray_steer(wd, best->x, best->y) : RAY_TURN_LEFT;
}

static const ray_task tasks[RAY_TASKS] = {
    {"RayRoom-v0", 200, 2, room_side, room_reset, room_frame, room_oracle, 1, goal_kinds},
    {"RayMaze-v0", 500, 0, maze_side, maze_reset, maze_frame, maze_oracle, 1, goal_kinds},
    {"RayCollect-v0", 300, 2 * (COLLECT_GOOD + COLLECT_BAD), collect_side, collect_reset,
     collect_frame, collect_oracle, COLLECT_GOOD + COLLECT_BAD, collect_kinds},
};

void ray_task_map(const ray_task *t, const ray_sim *s, ray_world *out)
{
    ray_sim scratch = {.layout = s->layout};
    make_map(&scratch, t->map_side(s->maze_size));
    *out = scratch.world;
}

const ray_task *ray_task_at(int32_t index)
{
    return index >= 0 && index < RAY_TASKS ? &tasks[index] : NULL;
}

const ray_task *ray_task_find(const char *name)
{
    for (int32_t i = 0; i < RAY_TASKS; i++)
        if (strcmp(tasks[i].name, name) == 0)
            return &tasks[i];
    return NULL;
}
