/* custom_env: a host environment plugged into libfastrl through callbacks.
 *
 * The world ("reach the target") is written here, in the host program: a walker on
 * the integer cells 0..20 must reach a target cell. Actions are discrete: 0 = step
 * left, 1 = stay, 2 = step right. Reaching the target gives +1 and ends the episode;
 * every other step costs 0.05. The library adds a time limit of 100 steps.
 *
 * 64 copies of the world are stepped together by a vec env (frl_vec_env_create_callbacks)
 * on the default runtime, for 5000 steps, with a hand-written policy that mostly walks
 * toward the target. The program prints the mean episode return from the library's
 * episode statistics and exits non-zero if any call fails or the statistics are
 * implausible.
 *
 * Build: cc -std=c11 custom_env.c $(pkg-config --cflags --libs fastrl) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fastrl.h"

enum {
    NUM_ENVS = 64,
    NUM_STEPS = 5000,
    CELLS = 21,        /* cells 0..20 */
    MAX_STEPS = 100    /* episode time limit, applied by the library */
};

/* ---- the host's world --------------------------------------------------------------
 * One struct per environment. The library passes its pointer (the "user" pointer) to
 * every callback of that environment. Callbacks of different environments may run at
 * the same time on different runtime threads, but the callbacks of ONE environment are
 * never called concurrently, so per-env state needs no locking. */
typedef struct reach_world {
    int pos;
    int target;
    uint64_t rng;      /* the world's own randomness, re-seeded at every reset */
    int closed;        /* set by the close callback */
} reach_world;

/* splitmix64: a tiny, good-enough generator for the world. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void observe(const reach_world *w, float *obs)
{
    /* The observation space (below) is a box of 2 floats in [0, 1]. */
    obs[0] = (float)w->pos / (CELLS - 1);
    obs[1] = (float)w->target / (CELLS - 1);
}

/* reset: start an episode from `seed` and write the first observation. The library
 * picks the seed: env i draws its seeds from the stream (seed given to
 * frl_vec_env_reset, i), so runs are reproducible whatever the thread count.
 * Return 0 on success; anything else fails the library call with FRL_ERR_CALLBACK. */
static int reach_reset(void *user, uint64_t seed, float *obs)
{
    reach_world *w = user;
    w->rng = seed;
    w->pos = (int)(next_random(&w->rng) % CELLS);
    do
        w->target = (int)(next_random(&w->rng) % CELLS);
    while (w->target == w->pos);
    observe(w, obs);
    return 0;
}

/* step: apply the action, write the observation, the reward and the two flags.
 * `action` points at one int32_t because the action space is discrete. Actions have
 * been validated by the library (in [0, 3)) before any callback runs. Observations and
 * rewards must be finite, or the call fails with FRL_ERR_NONFINITE. */
static int reach_step(void *user, const void *action, float *obs, float *reward,
                      uint8_t *terminated, uint8_t *truncated)
{
    reach_world *w = user;
    int32_t a = *(const int32_t *)action;
    w->pos += a - 1;
    if (w->pos < 0)
        w->pos = 0;
    if (w->pos > CELLS - 1)
        w->pos = CELLS - 1;
    int reached = w->pos == w->target;
    observe(w, obs);
    *reward = reached ? 1.0f : -0.05f;
    *terminated = (uint8_t)reached; /* the task is over */
    *truncated = 0;                 /* the library's time limit sets this for us */
    return 0;
}

/* close: called once per env when the vec env is destroyed (not if creating it
 * failed: then the host still owns its user pointers). */
static void reach_close(void *user)
{
    ((reach_world *)user)->closed = 1;
}

/* ---- error handling: every frl_status call is checked ---------------------------- */

#define CHECK(call)                                                                        \
    do {                                                                                   \
        frl_status st_ = (call);                                                           \
        if (st_ != FRL_OK) {                                                               \
            fprintf(stderr, "custom_env: %s failed: %s: %s\n", #call,                     \
                    frl_status_name(st_), frl_last_error());                               \
            return EXIT_FAILURE;                                                           \
        }                                                                                  \
    } while (0)

int main(void)
{
    /* 1. A runtime: the thread pool, allocator and logger every other object uses.
     *    NULL config / allocator / logger = defaults (one thread per core). */
    frl_runtime *rt = NULL;
    CHECK(frl_runtime_create(&rt, NULL, NULL, NULL));

    /* 2. The spaces: observations are always a box of float32; actions here are
     *    discrete(3). The vec env copies them, so they can be destroyed right after. */
    const int64_t obs_shape[1] = {2};
    const float obs_low[2] = {0.0f, 0.0f}, obs_high[2] = {1.0f, 1.0f};
    frl_space *obs_space = NULL, *act_space = NULL;
    CHECK(frl_space_create_box(&obs_space, NULL, 1, obs_shape, obs_low, obs_high));
    CHECK(frl_space_create_discrete(&act_space, NULL, 3));

    /* 3. The callback table: always start from frl_env_callbacks_init, which sets
     *    struct_size (so older and newer libraries agree on the layout) and defaults. */
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = reach_reset;
    cb.step = reach_step;
    cb.close = reach_close;

    /* 4. Settings go through a config: here, the episode time limit. */
    frl_config *cfg = NULL;
    CHECK(frl_config_create(&cfg, NULL));
    CHECK(frl_config_set_int(cfg, "env.max_episode_steps", MAX_STEPS));

    /* 5. The vec env: env i gets users[i] (the array is copied, the worlds are not). */
    static reach_world worlds[NUM_ENVS];
    void *users[NUM_ENVS];
    for (int i = 0; i < NUM_ENVS; i++)
        users[i] = &worlds[i];
    frl_vec_env *venv = NULL;
    CHECK(frl_vec_env_create_callbacks(&venv, rt, &cb, users, NUM_ENVS, obs_space, act_space,
                                       cfg));
    frl_space_destroy(obs_space);
    frl_space_destroy(act_space);
    frl_config_destroy(cfg);

    /* 6. The arrays: fixed addresses for the life of the vec env, indexed by env. The
     *    host writes actions; the library writes everything else at each step. */
    int32_t *actions = frl_vec_env_actions(venv);
    const float *obs = frl_vec_env_observations(venv);
    const uint8_t *terminated = frl_vec_env_terminated(venv);
    const uint8_t *truncated = frl_vec_env_truncated(venv);
    const float *ep_returns = frl_vec_env_episode_returns(venv);
    const int32_t *ep_lengths = frl_vec_env_episode_lengths(venv);

    /* 7. Reset every env from one seed, then step. An env whose episode ended is
     *    reset automatically on the following step (its action is then ignored). */
    CHECK(frl_vec_env_reset(venv, 2024));
    uint64_t policy_rng = 7;
    double return_sum = 0.0, length_sum = 0.0;
    int64_t episodes = 0, reached = 0;
    for (int t = 0; t < NUM_STEPS; t++) {
        /* The policy: walk toward the target, with 10% random moves. */
        for (int i = 0; i < NUM_ENVS; i++) {
            float pos = obs[2 * i], target = obs[2 * i + 1];
            int32_t a = target > pos ? 2 : (target < pos ? 0 : 1);
            if (next_random(&policy_rng) % 10 == 0)
                a = (int32_t)(next_random(&policy_rng) % 3);
            actions[i] = a;
        }
        CHECK(frl_vec_env_step(venv));
        /* Episode statistics: where an episode just ended (terminated or truncated),
         * the library reports its return and length. */
        for (int i = 0; i < NUM_ENVS; i++) {
            if (terminated[i] | truncated[i]) {
                return_sum += ep_returns[i];
                length_sum += ep_lengths[i];
                episodes++;
                reached += terminated[i];
            }
        }
    }

    int64_t total_steps = frl_vec_env_total_steps(venv);
    int64_t total_episodes = frl_vec_env_total_episodes(venv);

    /* 8. Destroy in reverse order; destroying the vec env calls close on every world. */
    frl_vec_env_destroy(venv);
    frl_runtime_destroy(rt);

    double mean_return = episodes ? return_sum / (double)episodes : 0.0;
    double mean_length = episodes ? length_sum / (double)episodes : 0.0;
    printf("custom_env: %d envs x %d steps: %lld episodes (%lld reached the target), "
           "mean return %.3f, mean length %.1f\n",
           NUM_ENVS, NUM_STEPS, (long long)episodes, (long long)reached, mean_return,
           mean_length);

    /* Plausibility: the statistics must agree with what the loop saw, and a policy
     * that mostly walks toward a target at most 20 cells away reaches it quickly. */
    int ok = 1;
    for (int i = 0; i < NUM_ENVS; i++)
        ok &= worlds[i].closed == 1;
    if (!ok)
        fprintf(stderr, "custom_env: close was not called for every env\n");
    if (total_steps != (int64_t)NUM_ENVS * NUM_STEPS) {
        fprintf(stderr, "custom_env: total_steps %lld, expected %lld\n",
                (long long)total_steps, (long long)NUM_ENVS * NUM_STEPS);
        ok = 0;
    }
    if (episodes == 0 || total_episodes != episodes) {
        fprintf(stderr, "custom_env: %lld episodes seen, library counted %lld\n",
                (long long)episodes, (long long)total_episodes);
        ok = 0;
    }
    if (!(mean_return > 0.0 && mean_return <= 1.0) || mean_length < 1.0 ||
        mean_length > 40.0 || reached < episodes * 9 / 10) {
        fprintf(stderr, "custom_env: implausible statistics\n");
        ok = 0;
    }
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
