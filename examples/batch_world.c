/* batch_world: a "game engine" that simulates all its agents in ONE world, plugged into
 * libfastrl through batch callbacks (frl_vec_env_create_batch).
 *
 * The world: 1000 agents and 64 pieces of food on a 2-D torus (the unit square with
 * wrap-around). Each step an agent moves by its action (0 = stay, 1 = up, 2 = down,
 * 3 = left, 4 = right) and burns energy; touching food eats it (+1 reward, energy
 * restored, the food reappears elsewhere). An agent whose energy runs out is
 * terminated; the library truncates episodes at 400 steps. Agents compete for the same
 * food, so one serial loop over all agents updates the world: this is the shape of a
 * game engine or a simulator that owns its agents, as opposed to N independent envs.
 *
 * With batch callbacks the library does not split the work: it calls the world once
 * per step, on the thread that calls frl_vec_env_step, with every agent's action. It
 * still validates actions, handles autoreset (through reset_mask and seeds), checks
 * observations and rewards are finite, applies the time limit and keeps statistics.
 *
 * Runs 2000 steps with a hand-written policy (walk toward the nearest food), prints
 * steps per second and episode statistics, and exits non-zero on any failure.
 *
 * Build: cc -std=c11 batch_world.c $(pkg-config --cflags --libs fastrl) -lm */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fastrl.h"

enum {
    NUM_AGENTS = 1000,
    NUM_FOOD = 64,
    NUM_STEPS = 2000,
    OBS_DIM = 3,      /* dx, dy to the nearest food, energy */
    NUM_ACTIONS = 5,
    MAX_STEPS = 400   /* episode time limit, applied by the library */
};

#define SPEED 0.01f
#define EAT_RADIUS 0.03f
#define ENERGY_COST 0.008f
#define ENERGY_FOOD 0.5f

/* ---- the host's world ------------------------------------------------------------- */

typedef struct agent {
    float x, y, energy;
} agent;

typedef struct world {
    agent agents[NUM_AGENTS];
    float food_x[NUM_FOOD], food_y[NUM_FOOD];
    uint64_t rng;          /* the world's randomness (food placement) */
    int64_t food_eaten;
    int closed;
} world;

static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float uniform(uint64_t *state)
{
    return (float)(next_random(state) >> 40) / (float)(1 << 24); /* [0, 1) */
}

/* The shortest signed offset from a to b on the unit torus, in [-0.5, 0.5]
 * (positions are in [0, 1), so the raw difference is in (-1, 1)). Branch-free, so the
 * loops over food vectorise. */
static float torus_delta(float a, float b)
{
    float d = b - a;
    d -= (float)(d > 0.5f);
    d += (float)(d < -0.5f);
    return d;
}

static float wrap(float v)
{
    return v - floorf(v);
}

static void place_food(world *w, int f)
{
    w->food_x[f] = uniform(&w->rng);
    w->food_y[f] = uniform(&w->rng);
}

/* Agent i starts a new life from its own seed: the library draws seeds[i] from the
 * stream (seed given to frl_vec_env_reset, i). */
static void reset_agent(world *w, int i, uint64_t seed)
{
    uint64_t s = seed;
    w->agents[i].x = uniform(&s);
    w->agents[i].y = uniform(&s);
    w->agents[i].energy = 1.0f;
}

static void observe_all(const world *w, float *obs)
{
    for (int i = 0; i < NUM_AGENTS; i++) {
        const agent *a = &w->agents[i];
        float best = 2.0f, bx = 0.0f, by = 0.0f;
        for (int f = 0; f < NUM_FOOD; f++) {
            float dx = torus_delta(a->x, w->food_x[f]), dy = torus_delta(a->y, w->food_y[f]);
            float d = dx * dx + dy * dy;
            if (d < best) {
                best = d;
                bx = dx;
                by = dy;
            }
        }
        obs[i * OBS_DIM + 0] = bx;
        obs[i * OBS_DIM + 1] = by;
        obs[i * OBS_DIM + 2] = a->energy;
    }
}

/* ---- the batch callbacks ----------------------------------------------------------
 * Both are called on the thread that calls frl_vec_env_reset / frl_vec_env_step, one
 * call for the whole world. Return 0 on success; anything else fails the library call
 * with FRL_ERR_CALLBACK. */

/* Reset every agent i from seeds[i] and write all observations. */
static int world_reset(void *user, int32_t num_envs, const uint64_t *seeds, float *obs)
{
    world *w = user;
    if (num_envs != NUM_AGENTS)
        return 1;
    for (int i = 0; i < num_envs; i++)
        reset_agent(w, i, seeds[i]);
    observe_all(w, obs);
    return 0;
}

/* One world step. For each agent:
 *  - reset_mask[i] == 1: its previous episode ended, so reset it from seeds[i]; its
 *    action was not validated and must be ignored, and its reward and flags are
 *    ignored by the library (we write 0 anyway).
 *  - reset_mask[i] == 0: apply actions[i] (an int32_t in [0, NUM_ACTIONS), already
 *    validated) and write its reward, terminated and truncated.
 * Observations are written for every agent, after all have moved. */
static int world_step(void *user, int32_t num_envs, const void *actions_in,
                      const uint8_t *reset_mask, const uint64_t *seeds, float *obs,
                      float *rewards, uint8_t *terminated, uint8_t *truncated)
{
    world *w = user;
    const int32_t *actions = actions_in;
    static const float move_x[NUM_ACTIONS] = {0, 0, 0, -SPEED, SPEED};
    static const float move_y[NUM_ACTIONS] = {0, SPEED, -SPEED, 0, 0};
    for (int i = 0; i < num_envs; i++) {
        rewards[i] = 0.0f;
        terminated[i] = 0;
        truncated[i] = 0; /* the time limit is the library's job */
        if (reset_mask[i]) {
            reset_agent(w, i, seeds[i]);
            continue;
        }
        agent *a = &w->agents[i];
        a->x = wrap(a->x + move_x[actions[i]]);
        a->y = wrap(a->y + move_y[actions[i]]);
        a->energy -= ENERGY_COST;
        rewards[i] = -0.001f;
        for (int f = 0; f < NUM_FOOD; f++) {
            float dx = torus_delta(a->x, w->food_x[f]), dy = torus_delta(a->y, w->food_y[f]);
            if (dx * dx + dy * dy < EAT_RADIUS * EAT_RADIUS) {
                rewards[i] += 1.0f;
                a->energy = fminf(1.0f, a->energy + ENERGY_FOOD);
                w->food_eaten++;
                place_food(w, f);
                break;
            }
        }
        terminated[i] = (uint8_t)(a->energy <= 0.0f);
    }
    observe_all(w, obs);
    return 0;
}

/* Called once when the vec env is destroyed (never if creating it failed). */
static void world_close(void *user)
{
    ((world *)user)->closed = 1;
}

/* ---- the embedding program -------------------------------------------------------- */

#define CHECK(call)                                                                        \
    do {                                                                                   \
        frl_status st_ = (call);                                                           \
        if (st_ != FRL_OK) {                                                               \
            fprintf(stderr, "batch_world: %s failed: %s: %s\n", #call,                    \
                    frl_status_name(st_), frl_last_error());                               \
            return EXIT_FAILURE;                                                           \
        }                                                                                  \
    } while (0)

static double now_seconds(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(void)
{
    /* The world is the host's own object; the library only holds a pointer to it. */
    world *w = calloc(1, sizeof *w);
    if (!w)
        return EXIT_FAILURE;
    w->rng = 12345;
    for (int f = 0; f < NUM_FOOD; f++)
        place_food(w, f);

    /* A runtime (defaults). Batch callbacks run on the calling thread, so its pool is
     * not used for stepping; every vec env still belongs to a runtime. */
    frl_runtime *rt = NULL;
    CHECK(frl_runtime_create(&rt, NULL, NULL, NULL));

    /* Spaces, copied by the vec env. Observations: a box of 3 floats. */
    const int64_t obs_shape[1] = {OBS_DIM};
    const float obs_low[OBS_DIM] = {-0.5f, -0.5f, -1.0f}, obs_high[OBS_DIM] = {0.5f, 0.5f, 1.0f};
    frl_space *obs_space = NULL, *act_space = NULL;
    CHECK(frl_space_create_box(&obs_space, NULL, 1, obs_shape, obs_low, obs_high));
    CHECK(frl_space_create_discrete(&act_space, NULL, NUM_ACTIONS));

    /* The batch callback table: frl_batch_env_callbacks_init first (struct_size). */
    frl_batch_env_callbacks cb;
    frl_batch_env_callbacks_init(&cb);
    cb.reset = world_reset;
    cb.step = world_step;
    cb.close = world_close;

    frl_config *cfg = NULL;
    CHECK(frl_config_create(&cfg, NULL));
    CHECK(frl_config_set_int(cfg, "env.max_episode_steps", MAX_STEPS));

    frl_vec_env *venv = NULL;
    CHECK(frl_vec_env_create_batch(&venv, rt, &cb, w, NUM_AGENTS, obs_space, act_space, cfg));
    frl_space_destroy(obs_space);
    frl_space_destroy(act_space);
    frl_config_destroy(cfg);

    int32_t *actions = frl_vec_env_actions(venv);
    const float *obs = frl_vec_env_observations(venv);
    const uint8_t *terminated = frl_vec_env_terminated(venv);
    const uint8_t *truncated = frl_vec_env_truncated(venv);
    const float *ep_returns = frl_vec_env_episode_returns(venv);

    CHECK(frl_vec_env_reset(venv, 99));
    double return_sum = 0.0;
    int64_t episodes = 0, starved = 0;
    double start = now_seconds();
    for (int t = 0; t < NUM_STEPS; t++) {
        /* Policy: step along the larger component of the offset to the nearest food. */
        for (int i = 0; i < NUM_AGENTS; i++) {
            float dx = obs[i * OBS_DIM], dy = obs[i * OBS_DIM + 1];
            if (fabsf(dx) > fabsf(dy))
                actions[i] = dx > 0 ? 4 : 3;
            else
                actions[i] = dy > 0 ? 1 : 2;
        }
        CHECK(frl_vec_env_step(venv));
        for (int i = 0; i < NUM_AGENTS; i++) {
            if (terminated[i] | truncated[i]) {
                return_sum += ep_returns[i];
                episodes++;
                starved += terminated[i];
            }
        }
    }
    double seconds = now_seconds() - start;
    int64_t total_steps = frl_vec_env_total_steps(venv);
    int64_t total_episodes = frl_vec_env_total_episodes(venv);
    frl_vec_env_destroy(venv); /* calls world_close */
    frl_runtime_destroy(rt);

    double mean_return = episodes ? return_sum / (double)episodes : 0.0;
    printf("batch_world: %d agents x %d steps in %.3f s: %.0f agent-steps/s "
           "(%.0f world steps/s); %lld episodes (%lld starved), mean return %.2f, "
           "%lld food eaten\n",
           NUM_AGENTS, NUM_STEPS, seconds, (double)total_steps / (seconds > 0 ? seconds : 1e-9),
           NUM_STEPS / (seconds > 0 ? seconds : 1e-9), (long long)episodes, (long long)starved,
           mean_return, (long long)w->food_eaten);

    int ok = w->closed == 1 && total_steps == (int64_t)NUM_AGENTS * NUM_STEPS &&
             episodes > 0 && total_episodes == episodes && w->food_eaten > 0 &&
             mean_return > 0.0;
    if (!ok)
        fprintf(stderr, "batch_world: implausible results (closed %d, total_steps %lld, "
                        "episodes %lld / %lld)\n",
                w->closed, (long long)total_steps, (long long)episodes,
                (long long)total_episodes);
    free(w);
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
