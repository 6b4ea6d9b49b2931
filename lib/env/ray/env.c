/* The raycasting tasks as vec envs (env.h). A step repeats the action for frame_skip
 * frames, renders the last two and keeps their per-pixel maximum (the Atari and ViZDoom
 * convention, so a sprite that flickers between frames is not lost); the frames before
 * are stepped but never drawn, so frame skip 4 costs two renders a step. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/config.h"
#include "env/ray/env.h"
#include "env/ray/map.h"
#include "env/ray/maze.h"
#include "env/ray/render.h"
#include "env/ray/tasks.h"
#include "env/vec_env.h"

enum { STATE_HEAD = 9, SPRITE_VALUES = 6, DEFAULT_SKIP = 4 };

typedef struct ray_block ray_block;

typedef struct ray_env {
    ray_sim sim;
    const ray_block *block;
    float *depth;  /* the renderer's per-column scratch */
    uint8_t *pool; /* the second-to-last frame of a step, for the max */
    char why[200]; /* why the last set_state was refused, else "" */
} ray_env;

struct ray_block {
    frl_allocator alloc;
    const ray_task *task;
    int32_t frame_skip, map_w, map_h;
    const ray_world *layout; /* &host_map, or NULL: the task's own maps */
    ray_world host_map;
    ray_world base; /* the map every reset builds, for a task with a fixed map */
    ray_view view;
    ray_textures tex;
    ray_env envs[];
};

static size_t frame_bytes(const ray_view *v)
{
    return (size_t)v->width * (size_t)v->height * (size_t)v->channels;
}

static void draw(const ray_env *e, uint8_t *out)
{
    ray_render(&e->sim.world, &e->block->tex, &e->block->view, e->depth, out);
}

static int ray_reset(void *user, uint64_t seed, float *obs)
{
    ray_env *e = user;
    e->sim.rng = frl_rng_stream(seed, 0);
    e->block->task->reset(&e->sim);
    draw(e, (uint8_t *)obs);
    return 0;
}

static void max_into(uint8_t *out, const uint8_t *other, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = out[i] > other[i] ? out[i] : other[i];
}

static int ray_step(void *user, const void *action, float *obs, float *reward,
                    uint8_t *terminated, uint8_t *truncated)
{
    ray_env *e = user;
    const ray_block *b = e->block;
    int32_t a = *(const int32_t *)action; /* the vec env validated it */
    int32_t k = b->frame_skip, f = 0;
    int done = 0;
    float r = 0.0f;
    while (f < k && !done) {
        ray_world_act(&e->sim.world, a);
        r += b->task->frame(&e->sim, &done);
        if (++f == k - 1 && !done)
            draw(e, e->pool);
    }
    draw(e, (uint8_t *)obs);
    if (k >= 2 && f == k) /* an episode that ended early shows its last frame only */
        max_into((uint8_t *)obs, e->pool, frame_bytes(&b->view));
    *reward = r;
    *terminated = (uint8_t)done;
    *truncated = 0;
    return 0;
}

static int ray_observe(void *user, float *obs)
{
    draw(user, (uint8_t *)obs);
    return 0;
}

/* ---- state: the world, the stream and the progress distance as float64 values ---- */

static int32_t state_size(int32_t w, int32_t h)
{
    return STATE_HEAD + RAY_MAX_SPRITES * SPRITE_VALUES + w * h;
}

static void put_u64(double *s, uint64_t v)
{
    s[0] = (double)(v >> 32);
    s[1] = (double)(v & 0xffffffffu);
}

static int ray_get_state(void *user, double *s)
{
    const ray_env *e = user;
    const ray_world *wd = &e->sim.world;
    s[0] = wd->x;
    s[1] = wd->y;
    s[2] = wd->angle;
    put_u64(s + 3, e->sim.rng.key);
    put_u64(s + 5, e->sim.rng.counter);
    s[7] = e->sim.prev_dist;
    s[8] = wd->num_sprites;
    double *sp = s + STATE_HEAD;
    for (int32_t i = 0; i < RAY_MAX_SPRITES; i++, sp += SPRITE_VALUES) {
        const ray_sprite *p = &wd->sprites[i];
        double v[SPRITE_VALUES] = {p->x, p->y, p->vx, p->vy, p->kind, p->alive};
        memcpy(sp, v, sizeof v);
    }
    for (int32_t i = 0; i < wd->w * wd->h; i++)
        sp[i] = wd->cells[i];
    return 0;
}

static int whole_in(double v, double lo, double hi)
{
    return v >= lo && v <= hi && v == floor(v);
}

/* v in [0, n) also as the float the world keeps: 30.99999999 passes as a double but is
 * 31.0f, and the maze oracle would index its distances past the map. */
static int inside(double v, int32_t n)
{
    return v >= 0 && v < n && (float)v < (float)n; /* false for NaN */
}

/* The agent, the stream, the progress distance and the sprite count. The distance is
 * RayRoom's to its goal (0 in the others), so never above the map's diagonal: a larger
 * double would become an infinite float and the next step's reward NaN. */
static int head_refused(const ray_env *e, const double *s, char *why, size_t size)
{
    const ray_block *b = e->block;
    double diag = hypot(b->map_w, b->map_h);
    if (!inside(s[0], b->map_w) || !inside(s[1], b->map_h))
        return snprintf(why, size, "the agent at (%.10g, %.10g) is off the %d x %d map", s[0], s[1],
                        (int)b->map_w, (int)b->map_h);
    if (!(fabs(s[2]) <= 4.0))
        return snprintf(why, size, "the heading %g is outside [-4, 4]", s[2]);
    for (int i = 3; i < 7; i++)
        if (!whole_in(s[i], 0, 4294967295.0))
            return snprintf(why, size, "state[%d] %g is no 32-bit half of the stream", i, s[i]);
    if (!(s[7] >= 0 && s[7] <= diag))
        return snprintf(why, size, "the progress distance %g is outside [0, %g], the map's "
                        "diagonal", s[7], diag);
    if (s[8] != b->task->sprites)
        return snprintf(why, size, "%g sprites; %s has %d", s[8], b->task->name,
                        (int)b->task->sprites);
    return 0;
}

/* The task's own sprites are alive and keep their kinds (RayCollect scores any sprite
 * that is not yellow as red, dead ones too); the unused slots are never read. Sprites
 * move at most 0.04 cells a frame: 0.5 leaves room and keeps them out of the walls. */
static int sprites_refused(const ray_env *e, const double *sp, char *why, size_t size)
{
    const ray_task *t = e->block->task;
    for (int32_t i = 0; i < RAY_MAX_SPRITES; i++, sp += SPRITE_VALUES) {
        int live = i < t->sprites;
        if (!inside(sp[0], e->block->map_w) || !inside(sp[1], e->block->map_h))
            return snprintf(why, size, "sprite %d at (%.10g, %.10g) is off the map", (int)i, sp[0],
                            sp[1]);
        if (!(fabs(sp[2]) <= 0.5 && fabs(sp[3]) <= 0.5))
            return snprintf(why, size, "sprite %d moves (%g, %g) cells a frame; at most 0.5",
                            (int)i, sp[2], sp[3]);
        if (live ? sp[4] != t->kinds[i] || sp[5] != 1
                 : !whole_in(sp[4], 0, RAY_SPRITE_KINDS - 1) || !whole_in(sp[5], 0, 1))
            return snprintf(why, size, "sprite %d has kind %g, alive %g; %s's is %d, alive 1",
                            (int)i, sp[4], sp[5], t->name, live ? (int)t->kinds[i] : 0);
    }
    return 0;
}

/* A fixed map's cells are the map every reset builds, with doors the agent opened now
 * floor: a state from another map (a run saved on a host's map, restored on another or
 * on the task's own room) is refused here. RayMaze's mazes are new every episode. */
static int cells_refused(const ray_env *e, const double *c, char *why, size_t size)
{
    const ray_block *b = e->block;
    for (int32_t i = 0; i < b->map_w * b->map_h; i++) {
        if (!whole_in(c[i], 0, RAY_DOOR))
            return snprintf(why, size, "cell %d is %g, no cell value (0 to %d)", (int)i, c[i],
                            RAY_DOOR);
        uint8_t want = b->base.cells[i];
        if (b->task->map_free && c[i] != want && !(want == RAY_DOOR && c[i] == RAY_EMPTY))
            return snprintf(why, size, "row %d, column %d holds %g where this env's map has "
                            "%d: the state is from another map (a run on a host's map "
                            "continues only on that map)", (int)(i / b->map_w) + 1,
                            (int)(i % b->map_w) + 1, c[i], (int)want);
    }
    return 0;
}

/* Everything a set_state takes is checked first, so a bad vector changes nothing; the
 * reason goes to e->why, where the vec env's message finds it (ray_fault). The checks
 * above return 0, or snprintf's count of their reason (never 0). */
static int state_refused(ray_env *e, const double *s)
{
    char *why = e->why;
    size_t size = sizeof e->why;
    int n = snprintf(why, size, "%s state: ", e->block->task->name);
    why += n;
    size -= (size_t)n;
    const double *sp = s + STATE_HEAD;
    if (head_refused(e, s, why, size) || sprites_refused(e, sp, why, size) ||
        cells_refused(e, sp + RAY_MAX_SPRITES * SPRITE_VALUES, why, size))
        return 1;
    e->why[0] = '\0';
    return 0;
}

static const char *ray_fault(void *user)
{
    return ((const ray_env *)user)->why;
}

static uint64_t get_u64(const double *s)
{
    return ((uint64_t)s[0] << 32) | (uint64_t)s[1];
}

static int ray_set_state(void *user, const double *s)
{
    ray_env *e = user;
    int32_t w = e->block->map_w, h = e->block->map_h;
    if (state_refused(e, s))
        return -1; /* the vec env reports the callback's failure, with e->why */
    ray_world *wd = &e->sim.world;
    wd->w = w;
    wd->h = h;
    wd->x = (float)s[0];
    wd->y = (float)s[1];
    wd->angle = (float)s[2];
    e->sim.rng.key = get_u64(s + 3);
    e->sim.rng.counter = get_u64(s + 5);
    e->sim.prev_dist = (float)s[7];
    wd->num_sprites = (int32_t)s[8];
    const double *sp = s + STATE_HEAD;
    for (int32_t i = 0; i < RAY_MAX_SPRITES; i++, sp += SPRITE_VALUES) {
        ray_sprite p = {(float)sp[0], (float)sp[1], (float)sp[2], (float)sp[3], (int32_t)sp[4],
                        (int32_t)sp[5]};
        wd->sprites[i] = p;
    }
    for (int32_t i = 0; i < w * h; i++)
        wd->cells[i] = (uint8_t)sp[i];
    return 0;
}

/* ---- creation ---- */

const char *frl_ray_env_name_at(int32_t index)
{
    const ray_task *t = ray_task_at(index);
    return t ? t->name : NULL;
}

int frl_ray_env_is(const char *name)
{
    return ray_task_find(name) != NULL;
}

static void release_block(void *owner)
{
    ray_block *b = owner;
    frl_allocator a = b->alloc;
    frl_free(&a, b);
}

/* Per-env scratch sits after the envs, each piece on its own cache lines. */
static size_t scratch_bytes(const ray_view *v)
{
    size_t depth = ((size_t)v->width * sizeof(float) + 63) & ~(size_t)63;
    return depth + ((frame_bytes(v) + 63) & ~(size_t)63);
}

static frl_status settings(ray_view *v, int32_t *skip, int32_t *maze, const frl_config *cfg,
                           const char *name, const char *who)
{
    int32_t w = (int32_t)frl_cfg_int(cfg, FRL_KEY_ENV_WIDTH);
    int32_t h = (int32_t)frl_cfg_int(cfg, FRL_KEY_ENV_HEIGHT);
    int32_t ch = frl_cfg_bool(cfg, FRL_KEY_ENV_GRAYSCALE) ? 1 : 3;
    if (ray_view_init(v, w, h, ch) != 0)
        return frl_fail(NULL, FRL_ERR_SIZE, "%s: %s cannot render %d x %d pixels (width and "
                        "height from %d to %d)", who, name, (int)w, (int)h, RAY_MIN_SIDE,
                        RAY_MAX_SIDE);
    if ((size_t)w * (size_t)h * (size_t)ch % 4 != 0)
        return frl_fail(NULL, FRL_ERR_SIZE, "%s: %s at %d x %d x %d is %lld bytes a frame, not "
                        "a multiple of 4 (doc/pixels.md); make the width a multiple of 4",
                        who, name, (int)w, (int)h, (int)ch, (long long)w * h * ch);
    *skip = (int32_t)frl_cfg_int(cfg, FRL_KEY_ENV_FRAME_SKIP);
    *skip = *skip ? *skip : DEFAULT_SKIP;
    *maze = (int32_t)frl_cfg_int(cfg, FRL_KEY_ENV_MAZE_SIZE);
    return FRL_OK;
}

static ray_block *make_block(frl_runtime *rt, const ray_task *task, const ray_view *v,
                             int32_t skip, int32_t maze, const ray_world *map, int32_t n)
{
    size_t head = (sizeof(ray_block) + sizeof(ray_env) * (size_t)n + 63) & ~(size_t)63;
    size_t per = scratch_bytes(v);
    ray_block *b = frl_alloc(&rt->alloc, head + per * (size_t)n, 64);
    if (!b)
        return NULL;
    memset(b, 0, sizeof *b + sizeof(ray_env) * (size_t)n);
    b->alloc = rt->alloc;
    b->task = task;
    b->frame_skip = skip;
    b->map_w = b->map_h = task->map_side(maze);
    if (map) {
        b->host_map = *map;
        b->layout = &b->host_map;
        b->map_w = map->w;
        b->map_h = map->h;
    }
    if (task->map_free) {
        ray_sim s = {.maze_size = maze, .layout = b->layout};
        ray_task_map(task, &s, &b->base);
    }
    b->view = *v;
    ray_textures_make(&b->tex);
    size_t depth = ((size_t)v->width * sizeof(float) + 63) & ~(size_t)63;
    for (int32_t i = 0; i < n; i++) {
        uint8_t *s = (uint8_t *)b + head + per * (size_t)i;
        b->envs[i].block = b;
        b->envs[i].depth = (float *)(void *)s;
        b->envs[i].pool = s + depth;
        b->envs[i].sim.maze_size = maze;
        b->envs[i].sim.layout = b->layout;
        task->reset(&b->envs[i].sim); /* a valid world before the first reset */
    }
    return b;
}

static frl_status wrap(frl_vec_env **out, frl_runtime *rt, ray_block *b, void **users,
                       int32_t n, const frl_config *cfg, const char *who)
{
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = ray_reset;
    cb.step = ray_step;
    cb.state_size = state_size(b->map_w, b->map_h);
    cb.get_state = ray_get_state;
    cb.set_state = ray_set_state;
    for (int32_t i = 0; i < n; i++)
        users[i] = &b->envs[i];
    frl_space *obs = NULL, *act = NULL;
    frl_status st = frl_space_create_image(&obs, &rt->alloc, b->view.height, b->view.width,
                                           b->view.channels);
    if (st == FRL_OK)
        st = frl_space_create_discrete(&act, &rt->alloc, RAY_ACTIONS);
    if (st == FRL_OK)
        st = frl_vec_env_create_hosted(out, rt, &cb, users, n, obs, act, cfg, b->task->limit, who);
    frl_space_destroy(obs);
    frl_space_destroy(act);
    return st;
}

static frl_status create_with(frl_vec_env **out, frl_runtime *rt, const ray_task *task,
                              const ray_world *map, int32_t num_envs, const frl_config *cfg,
                              const char *who)
{
    ray_view v;
    int32_t skip = DEFAULT_SKIP, maze = RAY_MAZE_MIN;
    frl_status st = settings(&v, &skip, &maze, cfg, task->name, who);
    if (st != FRL_OK)
        return st;
    ray_block *b = make_block(rt, task, &v, skip, maze, map, num_envs);
    void **users = frl_alloc(&rt->alloc, sizeof(void *) * (size_t)num_envs, 16);
    st = b && users ? wrap(out, rt, b, users, num_envs, cfg, who)
                    : frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory for %d %s envs", who,
                               (int)num_envs, task->name);
    frl_free(&rt->alloc, users);
    if (st != FRL_OK) {
        frl_free(&rt->alloc, b);
        return st;
    }
    (*out)->task = map ? NULL : task->name; /* a host's map is no built-in: vec_env.h */
    (*out)->settings_of = task->name;
    (*out)->observe = ray_observe;
    (*out)->fault = ray_fault; /* fault_code stays 0: a step never fails */
    (*out)->release = release_block;
    (*out)->owner = b;
    return FRL_OK;
}

frl_status frl_ray_vec_env_create(frl_vec_env **out, frl_runtime *rt, const char *name,
                                  int32_t num_envs, const frl_config *cfg, const char *who)
{
    return create_with(out, rt, ray_task_find(name), NULL, num_envs, cfg, who);
}

/* The task a host's map may replace the room of, or why not. */
static frl_status map_task(const ray_task **t, const char *task, const char *who)
{
    *t = ray_task_find(task);
    if (!*t)
        return frl_fail(NULL, FRL_ERR_UNKNOWN_NAME, "%s: '%s' is no ray env (RayRoom-v0, "
                        "RayCollect-v0 take a map)", who, task);
    if ((*t)->map_free == 0)
        return frl_fail(NULL, FRL_ERR_UNSUPPORTED, "%s: %s makes a new map every episode and "
                        "takes none (RayRoom-v0 and RayCollect-v0 do)", who, task);
    return FRL_OK;
}

FRL_API frl_status frl_vec_env_create_ray_map(frl_vec_env **out, frl_runtime *rt,
                                              const char *task, const char *map,
                                              int32_t num_envs, const frl_config *cfg)
{
    static const char who[] = "frl_vec_env_create_ray_map";
    frl_status st = frl_vec_env_check_args(out, rt, num_envs, who);
    if (st != FRL_OK)
        return st;
    if (!task || !map)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: %s is NULL", who, task ? "map" : "task");
    const ray_task *t;
    if ((st = map_task(&t, task, who)) != FRL_OK)
        return st;
    ray_world parsed;
    char why[FRL_ERRMSG_SIZE - 96];
    if ((st = ray_map_parse(&parsed, map, t->map_free, why, sizeof why)) != FRL_OK)
        return frl_fail(NULL, st, "%s: the map cannot be built: %s", who, why);
    return create_with(out, rt, t, &parsed, num_envs, cfg, who);
}

frl_status frl_ray_oracle_actions(const frl_vec_env *v, int32_t *actions)
{
    if (!v || !actions || v->release != release_block)
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "frl_ray_oracle_actions: not a ray env");
    const ray_block *b = v->owner;
    for (int32_t i = 0; i < v->n; i++)
        actions[i] = b->task->oracle(&b->envs[i].sim);
    return FRL_OK;
}
