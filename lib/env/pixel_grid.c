/* PixelGrid-v0: a grid world that can be solved only from its pixels.
 *
 * A 5 x 5 grid drawn as a 40 x 40 RGB image (8 x 8 pixels a cell, black floor): the
 * agent a red cell, the goal a green one, both placed at random each episode. Actions
 * move the agent up, down, left or right (into a wall: stay). Reaching the goal gives
 * reward 1 and ends the episode; 20 steps end it truncated (the farthest goal is 8
 * moves away). The positions are in no vector anywhere, so a policy must find both
 * cells in the image: a test of the whole pixel path (image spaces, the convolutional
 * encoder, PPO) small enough for the test suite. A uniform random policy reaches the
 * goal in about a third of its episodes; a solved one in all of them. Both encoders fit
 * 40 x 40 (each leaves 1 x 1 x channels; the smallest square they fit is 36 x 36).
 *
 * PixelGoal-v0: the same world with a mixed observation space: the image shows the
 * agent alone, and the goal's cell is a vector of two floats after it (x / 4, y / 4).
 * Neither part suffices, so a policy must join the encoder's features with the vector:
 * the test of mixed observations (doc/pixels.md). */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/rng.h"
#include "env/pixel_grid.h"
#include "env/vec_env.h"

enum { PG_CELLS = 5, PG_CELL_PX = 8, PG_SIZE = PG_CELLS * PG_CELL_PX, PG_CH = 3,
       PG_LIMIT = 20, PG_ACTIONS = 4, PG_STATE = 4 };

static const char *const pg_names[] = {"PixelGrid-v0", "PixelGoal-v0", NULL};

typedef struct pg_env {
    int32_t ax, ay, gx, gy;
    int32_t goal_in_vector; /* PixelGoal-v0 */
    char why[96];           /* why set_state refused a state, for the vec env's message */
} pg_env;

/* The sims of one vec env, freed with the vec env (its release hook). */
typedef struct pg_block {
    frl_allocator alloc;
    pg_env envs[];
} pg_block;

static void paint_cell(uint8_t *img, int32_t cx, int32_t cy, const uint8_t rgb[PG_CH])
{
    for (int32_t y = cy * PG_CELL_PX; y < (cy + 1) * PG_CELL_PX; y++)
        for (int32_t x = cx * PG_CELL_PX; x < (cx + 1) * PG_CELL_PX; x++)
            memcpy(img + ((size_t)y * PG_SIZE + (size_t)x) * PG_CH, rgb, PG_CH);
}

/* The observation: the image, and for PixelGoal-v0 the goal's vector after it. */
static void render(const pg_env *e, uint8_t *img)
{
    static const uint8_t red[PG_CH] = {255, 0, 0}, green[PG_CH] = {0, 255, 0};
    memset(img, 0, (size_t)PG_SIZE * PG_SIZE * PG_CH);
    if (e->goal_in_vector) {
        float goal[2] = {(float)e->gx / (PG_CELLS - 1), (float)e->gy / (PG_CELLS - 1)};
        memcpy(img + (size_t)PG_SIZE * PG_SIZE * PG_CH, goal, sizeof goal);
    } else {
        paint_cell(img, e->gx, e->gy, green);
    }
    paint_cell(img, e->ax, e->ay, red);
}

static int32_t draw_cell(frl_rng *r)
{
    int32_t c = (int32_t)(frl_rng_uniform(r) * PG_CELLS);
    return c < PG_CELLS ? c : PG_CELLS - 1;
}

/* The agent and the goal on different cells, from seed. */
static void place(pg_env *e, uint64_t seed)
{
    frl_rng r = frl_rng_stream(seed, 0);
    e->ax = draw_cell(&r);
    e->ay = draw_cell(&r);
    do {
        e->gx = draw_cell(&r);
        e->gy = draw_cell(&r);
    } while (e->gx == e->ax && e->gy == e->ay);
}

static int pg_reset(void *user, uint64_t seed, float *obs)
{
    pg_env *e = user;
    place(e, seed);
    render(e, (uint8_t *)obs);
    return 0;
}

static int32_t clamp_cell(int32_t c)
{
    return c < 0 ? 0 : (c >= PG_CELLS ? PG_CELLS - 1 : c);
}

static int pg_step(void *user, const void *action, float *obs, float *reward,
                   uint8_t *terminated, uint8_t *truncated)
{
    static const int32_t dx[PG_ACTIONS] = {0, 0, -1, 1}, dy[PG_ACTIONS] = {-1, 1, 0, 0};
    pg_env *e = user;
    int32_t a = *(const int32_t *)action; /* the vec env validated it */
    e->ax = clamp_cell(e->ax + dx[a]);
    e->ay = clamp_cell(e->ay + dy[a]);
    int reached = e->ax == e->gx && e->ay == e->gy;
    *reward = reached ? 1.0f : 0.0f;
    *terminated = (uint8_t)reached;
    *truncated = 0;
    render(e, (uint8_t *)obs);
    return 0;
}

/* The simulator state: the agent's and the goal's cells (x, y). */
static int pg_get_state(void *user, double *state)
{
    const pg_env *e = user;
    state[0] = e->ax;
    state[1] = e->ay;
    state[2] = e->gx;
    state[3] = e->gy;
    return 0;
}

/* Cells only, and the agent off the goal: on it the episode is over (a set_state
 * starts an episode there, which would pay the goal again at every step). A refusal's
 * reason goes to e->why, where the vec env's message finds it (pg_fault). */
static int pg_set_state(void *user, const double *state)
{
    pg_env *e = user;
    const char *name = pg_names[e->goal_in_vector != 0];
    for (int i = 0; i < PG_STATE; i++)
        if (!(state[i] >= 0 && state[i] < PG_CELLS && state[i] == (int32_t)state[i])) {
            snprintf(e->why, sizeof e->why, "%s state: state[%d] = %g is not a cell (a whole "
                     "number in [0, %d))", name, i, state[i], PG_CELLS);
            return -1;
        }
    if (state[0] == state[2] && state[1] == state[3]) {
        snprintf(e->why, sizeof e->why, "%s state: the agent is on the goal (an ended "
                 "episode's state)", name);
        return -1;
    }
    e->why[0] = '\0';
    e->ax = (int32_t)state[0];
    e->ay = (int32_t)state[1];
    e->gx = (int32_t)state[2];
    e->gy = (int32_t)state[3];
    return 0;
}

static int pg_observe(void *user, float *obs)
{
    render(user, (uint8_t *)obs);
    return 0;
}

static const char *pg_fault(void *user)
{
    return ((const pg_env *)user)->why;
}

static void release_block(void *owner)
{
    pg_block *b = owner;
    frl_allocator a = b->alloc;
    frl_free(&a, b);
}

const char *frl_pixel_env_name_at(int32_t index)
{
    return index >= 0 && index < 2 ? pg_names[index] : NULL;
}

int frl_pixel_env_is(const char *name)
{
    for (int32_t i = 0; pg_names[i]; i++)
        if (strcmp(name, pg_names[i]) == 0)
            return 1;
    return 0;
}

/* PixelGrid-v0's image; PixelGoal-v0's image and the goal's box [0, 1]^2. */
static frl_status pg_spaces(frl_runtime *rt, int mixed, frl_space **obs, frl_space **act)
{
    static const int64_t two = 2;
    static const float lo[2] = {0, 0}, hi[2] = {1, 1};
    frl_space *im = NULL, *goal = NULL;
    frl_status st = frl_space_create_image(&im, &rt->alloc, PG_SIZE, PG_SIZE, PG_CH);
    if (st == FRL_OK && !mixed) {
        *obs = im;
        im = NULL;
    } else if (st == FRL_OK) {
        st = frl_space_create_box(&goal, &rt->alloc, 1, &two, lo, hi);
        if (st == FRL_OK)
            st = frl_space_create_mixed(obs, &rt->alloc, im, goal);
    }
    frl_space_destroy(im);
    frl_space_destroy(goal);
    return st != FRL_OK ? st : frl_space_create_discrete(act, &rt->alloc, PG_ACTIONS);
}

static frl_status pg_vec(frl_vec_env **out, frl_runtime *rt, pg_block *b, void **users,
                         int32_t n, int mixed, const struct frl_config *cfg, const char *who)
{
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = pg_reset;
    cb.step = pg_step;
    cb.state_size = PG_STATE;
    cb.get_state = pg_get_state;
    cb.set_state = pg_set_state;
    for (int32_t i = 0; i < n; i++) {
        b->envs[i].goal_in_vector = mixed;
        /* a valid state before the first reset: zeros put the agent on the goal, a state
         * get_state gave and set_state refused */
        place(&b->envs[i], 0);
        users[i] = &b->envs[i];
    }
    frl_space *obs = NULL, *act = NULL;
    frl_status st = pg_spaces(rt, mixed, &obs, &act);
    if (st == FRL_OK)
        st = frl_vec_env_create_hosted(out, rt, &cb, users, n, obs, act, cfg, PG_LIMIT, who);
    frl_space_destroy(obs);
    frl_space_destroy(act);
    return st;
}

frl_status frl_pixel_vec_env_create(frl_vec_env **out, frl_runtime *rt, const char *name,
                                    int32_t num_envs, const struct frl_config *cfg,
                                    const char *who)
{
    int mixed = strcmp(name, pg_names[1]) == 0;
    pg_block *b = frl_alloc(&rt->alloc, sizeof *b + sizeof(pg_env) * (size_t)num_envs, 64);
    void **users = frl_alloc(&rt->alloc, sizeof(void *) * (size_t)num_envs, 16);
    frl_status st = b && users ? pg_vec(out, rt, b, users, num_envs, mixed, cfg, who)
                               : frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory for %d "
                                          "%s envs", who, (int)num_envs, name);
    frl_free(&rt->alloc, users);
    if (st != FRL_OK) {
        frl_free(&rt->alloc, b);
        return st;
    }
    b->alloc = rt->alloc;
    (*out)->task = pg_names[mixed];
    (*out)->observe = pg_observe;
    (*out)->fault = pg_fault; /* fault_code stays 0: a step never fails */
    (*out)->release = release_block;
    (*out)->owner = b;
    return FRL_OK;
}
