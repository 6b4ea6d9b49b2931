/* The raycasting envs (lib/env/ray): determinism across seeds and thread counts, state
 * get/set continuing exactly, frame skip and its max-pooling, each task's oracle well
 * above random, and bad settings and states refused. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "core/rng.h"
#include "env/ray/env.h"
#include "env/ray/world.h"
#include "env/vec_env.h"
#include "trainer/trainer_state.h"
#include "test_util.h"

static const char *const tasks[] = {"RayRoom-v0", "RayMaze-v0", "RayCollect-v0"};

static frl_vec_env *make(frl_runtime *rt, const char *task, int32_t n, const char *set)
{
    frl_config *cfg = frl_test_settings(set);
    frl_vec_env *v = NULL;
    ck_assert_msg(frl_vec_env_create(&v, rt, task, n, cfg) == FRL_OK, "%s", frl_last_error());
    frl_config_destroy(cfg);
    return v;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* A hash of every frame, reward and flag of `steps` random steps from seed. */
static uint64_t run_hash(int threads, const char *task, uint64_t seed, int steps)
{
    frl_runtime *rt = frl_test_runtime(threads);
    frl_vec_env *v = make(rt, task, 12, "env.width=32 env.height=24");
    size_t frame = 32 * 24, n = 12;
    frl_rng r = frl_rng_stream(seed, 99);
    uint64_t h = 1469598103934665603ULL;
    ck_assert_int_eq(frl_vec_env_reset(v, seed), FRL_OK);
    for (int k = 0; k < steps; k++) {
        int32_t *a = frl_vec_env_actions(v);
        for (size_t i = 0; i < n; i++)
            a[i] = (int32_t)(frl_rng_next(&r) % RAY_ACTIONS);
        ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
        h = hash_bytes(h, frl_vec_env_frames(v), frame * n);
        h = hash_bytes(h, frl_vec_env_rewards(v), 4 * n);
        h = hash_bytes(h, frl_vec_env_terminated(v), n);
        h = hash_bytes(h, frl_vec_env_truncated(v), n);
    }
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
    return h;
}

START_TEST(deterministic)
{
    /* 600 steps take every task through several episodes; a short build checks 100 */
    int steps = FRL_TEST_SHORT ? 100 : 600;
    for (int t = 0; t < 3; t++) {
        uint64_t one = run_hash(1, tasks[t], 5, steps);
        ck_assert_msg(one == run_hash(3, tasks[t], 5, steps), "%s: thread count changed results",
                      tasks[t]);
        ck_assert_msg(one != run_hash(1, tasks[t], 6, steps), "%s: the seed changed nothing",
                      tasks[t]);
    }
}
END_TEST

/* Mean return of the first episode of each of n envs under the oracle or uniform
 * actions: one episode an env, so short (successful) episodes are not over-counted. */
static double mean_return(frl_runtime *rt, const char *task, int oracle, int n)
{
    frl_vec_env *v = make(rt, task, n, "env.width=32 env.height=24");
    frl_rng r = frl_rng_stream(3, 0);
    double ret[64] = {0}, sum = 0;
    uint8_t ended[64] = {0};
    int done = 0;
    ck_assert_int_le(n, 64);
    ck_assert_int_eq(frl_vec_env_reset(v, 11), FRL_OK);
    while (done < n) {
        int32_t *a = frl_vec_env_actions(v);
        if (oracle)
            ck_assert_int_eq(frl_ray_oracle_actions(v, a), FRL_OK);
        else
            for (int i = 0; i < n; i++)
                a[i] = (int32_t)(frl_rng_next(&r) % RAY_ACTIONS);
        ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
        for (int i = 0; i < n; i++) {
            if (ended[i])
                continue;
            ret[i] += frl_vec_env_rewards(v)[i];
            if (frl_vec_env_terminated(v)[i] || frl_vec_env_truncated(v)[i]) {
                sum += ret[i];
                ended[i] = 1;
                done++;
            }
        }
    }
    frl_vec_env_destroy(v);
    return sum / n;
}

/* The oracles solve their tasks (bench/bench_raycast measures them on 1,000 episodes at
 * 84 x 84: RayRoom 1.50, RayMaze 1.00, RayCollect 24.9; random 0.23, 0.39 and 0.81). */
START_TEST(oracle_beats_random)
{
    static const double oracle_min[] = {1.4, 0.97, 18.0}, random_max[] = {0.5, 0.6, 3.0};
    int episodes = FRL_TEST_SHORT ? 32 : 64; /* envs, one episode each */
    frl_runtime *rt = frl_test_runtime(2);
    for (int t = 0; t < 3; t++) {
        double o = mean_return(rt, tasks[t], 1, episodes);
        double r = mean_return(rt, tasks[t], 0, episodes);
        ck_assert_msg(o >= oracle_min[t], "%s: oracle %.3f", tasks[t], o);
        ck_assert_msg(r <= random_max[t], "%s: random %.3f", tasks[t], r);
    }
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "CartPole-v1", 4, NULL), FRL_OK);
    int32_t a[4];
    ck_assert_int_eq(frl_ray_oracle_actions(v, a), FRL_ERR_INVALID_ARGUMENT);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* Get the state part way, set it in a fresh env: the same actions then give the same
 * rewards, flags and (from the next step on) frames. */
START_TEST(state_continues)
{
    frl_runtime *rt = frl_test_runtime(1);
    for (int t = 0; t < 3; t++) {
        frl_env *a, *b;
        frl_config *cfg = frl_test_settings("env.width=40 env.height=30");
        ck_assert_int_eq(frl_env_create(&a, rt, tasks[t], cfg), FRL_OK);
        ck_assert_int_eq(frl_env_create(&b, rt, tasks[t], cfg), FRL_OK);
        frl_config_destroy(cfg);
        int32_t n = frl_env_state_size(a);
        ck_assert_int_gt(n, 9);
        double *s = malloc(sizeof(double) * (size_t)n);
        uint8_t fa[40 * 30], fb[40 * 30], te = 0, tr = 0, te2, tr2;
        float ra, rb;
        ck_assert_int_eq(frl_env_reset(a, 4, (float *)fa), FRL_OK);
        ck_assert_int_eq(frl_env_reset(b, 9, (float *)fb), FRL_OK);
        frl_rng r = frl_rng_stream(1, 2);
        for (int k = 0; k < 7; k++) {
            int32_t act = (int32_t)(frl_rng_next(&r) % RAY_ACTIONS);
            ck_assert_int_eq(frl_env_step(a, &act, (float *)fa, &ra, &te, &tr), FRL_OK);
        }
        ck_assert_int_eq(frl_env_get_state(a, s, n), FRL_OK);
        ck_assert_int_eq(frl_env_set_state(b, s, n, NULL), FRL_OK);
        for (int k = 0; k < 40 && !te && !tr; k++) {
            int32_t act = (int32_t)(frl_rng_next(&r) % RAY_ACTIONS);
            ck_assert_int_eq(frl_env_step(a, &act, (float *)fa, &ra, &te, &tr), FRL_OK);
            ck_assert_int_eq(frl_env_step(b, &act, (float *)fb, &rb, &te2, &tr2), FRL_OK);
            ck_assert_msg(ra == rb && te == te2 && tr == tr2, "%s step %d", tasks[t], k);
            ck_assert_msg(memcmp(fa, fb, sizeof fa) == 0, "%s: frames differ at %d", tasks[t], k);
        }
        free(s);
        frl_env_destroy(a);
        frl_env_destroy(b);
    }
    frl_runtime_destroy(rt);
}
END_TEST

/* A bad state is refused whole: the env keeps its own and steps on as before. */
START_TEST(bad_state_refused)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_env *e;
    ck_assert_int_eq(frl_env_create(&e, rt, "RayMaze-v0", NULL), FRL_OK);
    int32_t n = frl_env_state_size(e);
    double *s = malloc(sizeof(double) * (size_t)n), *keep = malloc(sizeof(double) * (size_t)n);
    double *now = malloc(sizeof(double) * (size_t)n);
    static uint8_t obs[84 * 84];
    ck_assert_int_eq(frl_env_reset(e, 1, (float *)obs), FRL_OK);
    ck_assert_int_eq(frl_env_get_state(e, keep, n), FRL_OK);
    /* the agent off the map, a NaN, a cell value no wall has, a sprite kind past the last */
    const int32_t at[] = {0, 1, n - 2, 9 + 4};
    const double bad[] = {-1.0, 0.0 / 0.0, 99.0, 7.0};
    const frl_status why[] = {FRL_ERR_CALLBACK, FRL_ERR_NONFINITE, FRL_ERR_CALLBACK,
                              FRL_ERR_CALLBACK}; /* the vec env checks finiteness first */
    for (int k = 0; k < 4; k++) {
        memcpy(s, keep, sizeof(double) * (size_t)n);
        s[at[k]] = bad[k];
        ck_assert_int_eq(frl_env_set_state(e, s, n, NULL), why[k]);
        ck_assert_int_eq(frl_env_get_state(e, now, n), FRL_OK);
        ck_assert_msg(memcmp(now, keep, sizeof(double) * (size_t)n) == 0, "case %d", k);
    }
    ck_assert_int_eq(frl_env_set_state(e, keep, n - 1, NULL), FRL_ERR_SIZE);
    free(s);
    free(keep);
    free(now);
    frl_env_destroy(e);
    frl_runtime_destroy(rt);
}
END_TEST

/* A step at frame skip 2 shows the per-pixel maximum of the two frames that frame skip 1
 * gives from the same state with the same action (RayCollect: the pickups move). */
START_TEST(frame_skip_max_pools)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *c1 = frl_test_settings("env.frame_skip=1 env.width=48 env.height=36");
    frl_config *c2 = frl_test_settings("env.frame_skip=2 env.width=48 env.height=36");
    frl_env *one, *two;
    ck_assert_int_eq(frl_env_create(&one, rt, "RayCollect-v0", c1), FRL_OK);
    ck_assert_int_eq(frl_env_create(&two, rt, "RayCollect-v0", c2), FRL_OK);
    int32_t n = frl_env_state_size(one);
    double *s = malloc(sizeof(double) * (size_t)n);
    enum { F = 48 * 36 };
    uint8_t f1[F], f2[F], g[F], te, tr;
    float r1, r2, rg;
    int differ = 0;
    ck_assert_int_eq(frl_env_reset(two, 3, (float *)g), FRL_OK);
    ck_assert_int_eq(frl_env_reset(one, 3, (float *)f1), FRL_OK);
    for (int k = 0; k < 20; k++) {
        int32_t act = k % 3 == 0 ? RAY_TURN_LEFT : RAY_FORWARD;
        ck_assert_int_eq(frl_env_get_state(two, s, n), FRL_OK);
        ck_assert_int_eq(frl_env_set_state(one, s, n, NULL), FRL_OK);
        ck_assert_int_eq(frl_env_step(one, &act, (float *)f1, &r1, &te, &tr), FRL_OK);
        ck_assert_int_eq(frl_env_step(one, &act, (float *)f2, &r2, &te, &tr), FRL_OK);
        ck_assert_int_eq(frl_env_step(two, &act, (float *)g, &rg, &te, &tr), FRL_OK);
        ck_assert(rg == r1 + r2);
        for (int i = 0; i < F; i++) {
            ck_assert_int_eq(g[i], f1[i] > f2[i] ? f1[i] : f2[i]);
            differ += f1[i] != f2[i];
        }
    }
    ck_assert_int_gt(differ, 0); /* the two frames were not the same, so the max did work */
    free(s);
    frl_env_destroy(one);
    frl_env_destroy(two);
    frl_config_destroy(c1);
    frl_config_destroy(c2);
    frl_runtime_destroy(rt);
}
END_TEST

/* Observation shapes follow the settings; bad ones are refused with a reason. */
START_TEST(settings_and_bad_input)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_vec_env *v = make(rt, "RayRoom-v0", 2, "env.width=128 env.height=72 env.grayscale=false");
    const int64_t *sh = frl_space_shape(frl_vec_env_observation_space(v));
    ck_assert(sh[0] == 72 && sh[1] == 128 && sh[2] == 3);
    ck_assert_int_eq(frl_space_n(frl_vec_env_action_space(v)), RAY_ACTIONS);
    frl_vec_env_destroy(v);
    frl_config *maze = frl_test_settings("env.maze_size=9");
    frl_env *e;
    ck_assert_int_eq(frl_env_create(&e, rt, "RayMaze-v0", maze), FRL_OK);
    ck_assert_int_eq(frl_env_state_size(e), 9 + 12 * 6 + 19 * 19 + 1); /* a 19 x 19 map */
    frl_env_destroy(e);
    frl_config_destroy(maze);

    frl_config *cfg;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_set(cfg, "env.width", "8"), FRL_ERR_RANGE); /* too small */
    ck_assert_int_eq(frl_config_set(cfg, "env.maze_size", "16"), FRL_ERR_RANGE);
    ck_assert_int_eq(frl_config_parse(cfg, "env.width=17 env.height=17"), FRL_OK);
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "RayRoom-v0", 2, cfg), FRL_ERR_SIZE);
    ck_assert_msg(strstr(frl_last_error(), "multiple of 4") != NULL, "%s", frl_last_error());
    frl_config_destroy(cfg);
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "RayHall-v0", 2, NULL), FRL_ERR_UNKNOWN_NAME);
    ck_assert_msg(strstr(frl_last_error(), "RayCollect-v0") != NULL, "%s", frl_last_error());
    int found = 0;
    for (int32_t i = 0; frl_env_name_at(i); i++)
        for (int t = 0; t < 3; t++)
            found += strcmp(frl_env_name_at(i), tasks[t]) == 0;
    ck_assert_int_eq(found, 3);
    frl_runtime_destroy(rt);
}
END_TEST

/* `use` opens a door cell ahead within reach, and nothing else. */
START_TEST(use_opens_doors)
{
    ray_world wd;
    memset(&wd, 0, sizeof wd);
    wd.w = wd.h = 5;
    for (int i = 0; i < 25; i++)
        wd.cells[i] = (i % 5 == 0 || i % 5 == 4 || i < 5 || i >= 20) ? 1 : RAY_EMPTY;
    wd.cells[2 * 5 + 3] = RAY_DOOR;
    wd.x = 1.5f;
    wd.y = 2.5f;
    wd.angle = 0; /* facing east, the door's face 1.5 cells ahead: out of reach (1.2) */
    ck_assert_int_eq(ray_world_act(&wd, RAY_USE), 0);
    for (int k = 0; k < 40; k++)
        ray_world_act(&wd, RAY_FORWARD);
    ck_assert(wd.x > 2.7f && wd.x < 2.81f); /* stopped by the closed door */
    ck_assert_int_eq(ray_world_act(&wd, RAY_USE), 1);
    ck_assert_int_eq(wd.cells[2 * 5 + 3], RAY_EMPTY);
    for (int k = 0; k < 40; k++)
        ray_world_act(&wd, RAY_FORWARD);
    ck_assert(wd.x > 3.7f && wd.x < 3.81f); /* through the door, stopped by the wall */
    ck_assert_int_eq(ray_world_act(&wd, RAY_USE), 0); /* a plain wall stays */
    ck_assert_int_eq(wd.cells[2 * 5 + 4], 1);
}
END_TEST

/* A host's map: built and stepped (its size in the state), and every map that cannot be
 * built refused with a reason naming the place. */
START_TEST(host_maps)
{
    static const char room[] = "11111\n"
                               "4...2\n"
                               "4.#.2\n"
                               "4...D\n"
                               "33333\n";
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg = frl_test_settings("env.width=32 env.height=24");
    frl_vec_env *v = NULL;
    ck_assert_msg(frl_vec_env_create_ray_map(&v, rt, "RayRoom-v0", room, 4, cfg) == FRL_OK,
                  "%s", frl_last_error());
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    for (int k = 0; k < 50; k++) {
        int32_t *a = frl_vec_env_actions(v);
        ck_assert_int_eq(frl_ray_oracle_actions(v, a), FRL_OK);
        ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
    }
    ck_assert_int_gt(frl_vec_env_total_episodes(v), 4); /* the oracle reaches its goals */
    frl_vec_env_destroy(v);
    ck_assert_int_eq(frl_vec_env_create_ray_map(&v, rt, "RayCollect-v0",
                     "#######\n#.....#\n#.....#\n#.....#\n#.....#\n#######", 2, cfg), FRL_OK);
    frl_vec_env_destroy(v);
    /* A map file with Windows line ends. */
    ck_assert_int_eq(frl_vec_env_create_ray_map(&v, rt, "RayRoom-v0",
                     "11111\r\n4...2\r\n4.#.2\r\n4...D\r\n33333\r\n", 2, cfg), FRL_OK);
    frl_vec_env_destroy(v);

    static const struct { const char *task, *map, *words; frl_status st; } bad[] = {
        {"RayRoom-v0", "111\n1.1\n11", "row 3 has 2 cells", FRL_ERR_PARSE},
        {"RayRoom-v0", "1111\n1.x1\n1111", "row 2, column 3: 'x'", FRL_ERR_PARSE},
        {"RayRoom-v0", "1111\n1.\t1\n1111", "row 2, column 3: byte 0x09", FRL_ERR_PARSE},
        {"RayRoom-v0", "11\n11", "must be 3 to 31", FRL_ERR_SIZE},
        {"RayRoom-v0", "", "0 x 0", FRL_ERR_SIZE},
        {"RayRoom-v0", "1111\n...1\n1..1\n1111", "row 2, column 1: the edge", FRL_ERR_INVALID_ARGUMENT},
        {"RayRoom-v0", "11111\n1.1.1\n11111", "row 2, column 4: floor that cannot be reached",
         FRL_ERR_INVALID_ARGUMENT},
        {"RayRoom-v0", "111\n1.1\n111", "1 floor cells; the task needs at least 2",
         FRL_ERR_INVALID_ARGUMENT},
        {"RayMaze-v0", "111\n1.1\n111", "makes a new map every episode", FRL_ERR_UNSUPPORTED},
        {"RayHall-v0", "111\n1.1\n111", "no ray env", FRL_ERR_UNKNOWN_NAME},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = NULL;
        ck_assert_int_eq(frl_vec_env_create_ray_map(&v, rt, bad[i].task, bad[i].map, 2, cfg),
                         bad[i].st);
        ck_assert_ptr_null(v);
        ck_assert_msg(strstr(frl_last_error(), bad[i].words) != NULL, "case %d: %s", (int)i,
                      frl_last_error());
    }
    char big[40 * 33];
    size_t n = 0;
    for (int y = 0; y < 32; y++) { /* 32 rows: one too many */
        for (int x = 0; x < 5; x++)
            big[n++] = (y == 0 || y == 31 || x == 0 || x == 4) ? '1' : '.';
        big[n++] = '\n';
    }
    big[n] = '\0';
    ck_assert_int_eq(frl_vec_env_create_ray_map(&v, rt, "RayRoom-v0", big, 2, cfg), FRL_ERR_SIZE);
    /* random text, long rows and many rows among it: a status, never a crash (the ASan
     * build reads every byte the parser touches) */
    frl_rng r = frl_rng_stream(77, 0);
    static const char alphabet[] = "1111....\n\n#D2x ";
    for (int k = 0; k < (FRL_TEST_SHORT ? 300 : 3000); k++) {
        size_t len = (size_t)(frl_rng_next(&r) % 1200);
        for (size_t i = 0; i < len; i++)
            big[i % sizeof big] = alphabet[frl_rng_next(&r) % (sizeof alphabet - 1)];
        big[len < sizeof big ? len : sizeof big - 1] = '\0';
        v = NULL;
        frl_status st = frl_vec_env_create_ray_map(&v, rt, "RayRoom-v0", big, 1, cfg);
        ck_assert(st == FRL_OK || st == FRL_ERR_PARSE || st == FRL_ERR_SIZE ||
                  st == FRL_ERR_INVALID_ARGUMENT);
        ck_assert(st == FRL_OK ? v != NULL : v == NULL);
        frl_vec_env_destroy(v);
    }
    ck_assert_int_eq(frl_vec_env_create_ray_map(&v, rt, "RayRoom-v0", NULL, 2, cfg), FRL_ERR_NULL);
    ck_assert_int_eq(frl_vec_env_create_ray_map(NULL, rt, "RayRoom-v0", room, 2, cfg), FRL_ERR_NULL);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* Values the double state allows but the env could never hold: a distance that is
 * infinite as a float (the next step's reward was NaN), positions that round up to the
 * map's edge as floats (the maze oracle indexed past its array), RayCollect's balls
 * dead or of another kind, a cell of another map. Each is refused with its reason. */
START_TEST(impossible_states_refused)
{
    static const struct { int task; int32_t at; double value; const char *words; } bad[] = {
        {0, 7, 1e300, "progress distance"},
        {0, 7, -0.5, "progress distance"},
        {1, 0, 30.99999999, "agent at"},
        {1, 9 + 1, 30.99999999, "sprite 0 at"},
        {1, 8, 0, "0 sprites"},
        {2, 9 + 4, RAY_SPRITE_BAD, "sprite 0 has kind 2"},
        {2, 9 + 5, 0, "alive 0"},
        {2, 9 + 6 * 8 + 4, RAY_SPRITE_GOAL, "sprite 8 has kind 0"},
        {2, 9 + 2, 2.0, "sprite 0 moves"},
        {0, 9 + 6 * RAY_MAX_SPRITES + 11 * 3 + 5, 2, "row 4, column 6 holds 2"},
    };
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg = frl_test_settings("env.width=16 env.height=16 env.maze_size=15");
    static double s[2048], keep[2048];
    uint8_t obs[16 * 16];
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        frl_env *e;
        ck_assert_int_eq(frl_env_create(&e, rt, tasks[bad[k].task], cfg), FRL_OK);
        int32_t n = frl_env_state_size(e);
        ck_assert_int_le(n, 2048);
        ck_assert_int_eq(frl_env_reset(e, 5, (float *)obs), FRL_OK);
        ck_assert_int_eq(frl_env_get_state(e, keep, n), FRL_OK);
        memcpy(s, keep, sizeof(double) * (size_t)n);
        s[bad[k].at] = bad[k].value;
        ck_assert_int_eq(frl_env_set_state(e, s, n, NULL), FRL_ERR_CALLBACK);
        ck_assert_msg(strstr(frl_last_error(), bad[k].words) != NULL, "case %d: %s", (int)k,
                      frl_last_error());
        ck_assert_int_eq(frl_env_get_state(e, s, n), FRL_OK);
        ck_assert(memcmp(s, keep, sizeof(double) * (size_t)n) == 0); /* nothing changed */
        ck_assert_int_eq(frl_env_set_state(e, keep, n, NULL), FRL_OK);
        frl_env_destroy(e);
    }
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* A 31 x 31 map of wall around a w x h room at its top left (a sparse host map). */
static void sparse_map(char *map, int w, int h)
{
    for (int y = 0; y < 31; y++) {
        for (int x = 0; x < 31; x++)
            *map++ = x >= 1 && x <= w && y >= 1 && y <= h ? '.' : '#';
        *map++ = '\n';
    }
    *map = '\0';
}

/* The smallest distance from the agent to a live sprite of env i, and whether one is in
 * the agent's own cell. */
static double nearest_sprite(frl_vec_env *v, int32_t i, int *same_cell)
{
    double s[9 + RAY_MAX_SPRITES * 6 + 31 * 31 + 1], best = 1e9; /* and the elapsed count */
    ck_assert_int_le(v->state_dim + 1, (int)(sizeof s / sizeof s[0]));
    ck_assert_int_eq(frl_vec_env_get_state_at(v, i, s, v->state_dim + 1, v->err), FRL_OK);
    for (int k = 0; k < (int)s[8]; k++) {
        const double *p = s + 9 + 6 * k;
        double d = sqrt((p[0] - s[0]) * (p[0] - s[0]) + (p[1] - s[1]) * (p[1] - s[1]));
        best = d < best ? d : best;
        *same_cell |= floor(p[0]) == floor(s[0]) && floor(p[1]) == floor(s[1]);
    }
    return best;
}

/* On a map that is mostly wall the 64 random draws rarely find floor: the goal and the
 * pickups still spread over the room, never on the agent (they were put on the first
 * free cell, the agent's too, so 1 in 10 RayRoom episodes ended on their first step). */
START_TEST(sparse_maps_spread_sprites)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg = frl_test_settings("env.width=16 env.height=16");
    static char map[32 * 31 + 1];
    static const char *const task[] = {"RayRoom-v0", "RayCollect-v0"};
    for (int t = 0; t < 2; t++) {
        frl_vec_env *v = NULL;
        sparse_map(map, t == 0 ? 5 : 6, t == 0 ? 4 : 3);
        ck_assert_int_eq(frl_vec_env_create_ray_map(&v, rt, task[t], map, 16, cfg), FRL_OK);
        for (uint64_t seed = 1; seed <= 10; seed++) {
            ck_assert_int_eq(frl_vec_env_reset(v, seed), FRL_OK);
            for (int32_t i = 0; i < 16; i++) {
                int same = 0;
                double d = nearest_sprite(v, i, &same);
                /* RayRoom's goal is the farthest cell when none is 3 away (>= 2 here) */
                ck_assert_msg(!same && d >= (t == 0 ? 2.0 : 1.0), "%s seed %d env %d: %.2f",
                              task[t], (int)seed, (int)i, d);
            }
        }
        uint8_t first[16 * 16 * 16];
        ck_assert_int_eq(frl_vec_env_reset(v, 3), FRL_OK);
        memcpy(first, frl_vec_env_frames(v), sizeof first);
        ck_assert_int_eq(frl_vec_env_reset(v, 3), FRL_OK);
        ck_assert(memcmp(first, frl_vec_env_frames(v), sizeof first) == 0); /* deterministic */
        frl_vec_env_destroy(v);
    }
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* A ray map one interior wall apart: the same size, so the same state size. */
static void hall_map(char *map, int gap)
{
    static const char base[] = "11111111111\n4.........2\n4.3333333.2\n4.3.....3.2\n"
                               "4.3.....3.2\n4.3.....3.2\n4.3.....3.2\n4.3.....3.2\n"
                               "4.333.333.2\n4.........2\n33333333333\n";
    memcpy(map, base, sizeof base);
    map[8 * 12 + 5] = '3';
    map[8 * 12 + gap] = '.'; /* the room's door in the south wall */
}

/* A run on a host's map names no built-in (its checkpoint would have made RayRoom-v0's own
 * room again, and training went on there): frl_trainer_load refuses it and points to
 * frl_trainer_load_vec, which continues it on the same map and refuses another. */
START_TEST(map_run_resumes_only_on_its_map)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg = frl_test_settings("env.width=40 env.height=40 train.rollout=8 "
                                        "train.epochs=1 train.minibatches=1");
    char map[12 * 11 + 1], other[12 * 11 + 1], path[64];
    hall_map(map, 5);
    hall_map(other, 4);
    snprintf(path, sizeof path, "/tmp/frl_raycast_map_%d", (int)getpid());
    frl_vec_env *v, *same, *moved, *room;
    ck_assert_int_eq(frl_vec_env_create_ray_map(&v, rt, "RayRoom-v0", map, 2, cfg), FRL_OK);
    ck_assert_ptr_null(frl_vec_env_name(v));
    frl_trainer *t, *u = NULL;
    ck_assert_int_eq(frl_trainer_create_vec(&t, rt, v, cfg), FRL_OK);
    ck_assert(frl_cfg_float(t->cfg, FRL_KEY_TRAIN_LR) == 2.5e-3); /* RayRoom-v0's settings */
    ck_assert_int_eq(frl_trainer_train(t, 32), FRL_OK);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    ck_assert_int_eq(frl_trainer_load(&u, rt, path, NULL), FRL_ERR_UNKNOWN_NAME);
    ck_assert_msg(strstr(frl_last_error(), "frl_trainer_load_vec") != NULL, "%s",
                  frl_last_error());
    ck_assert_int_eq(frl_vec_env_create_ray_map(&moved, rt, "RayRoom-v0", other, 2, cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_load_vec(&u, rt, path, moved, NULL), FRL_ERR_CALLBACK);
    ck_assert_msg(strstr(frl_last_error(), "another map") != NULL, "%s", frl_last_error());
    ck_assert_int_eq(frl_vec_env_create(&room, rt, "RayRoom-v0", 2, cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_load_vec(&u, rt, path, room, NULL), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(frl_vec_env_create_ray_map(&same, rt, "RayRoom-v0", map, 2, cfg), FRL_OK);
    ck_assert_msg(frl_trainer_load_vec(&u, rt, path, same, NULL) == FRL_OK, "%s",
                  frl_last_error());
    ck_assert_int_eq(frl_trainer_train(u, 64), FRL_OK);
    remove(path);
    frl_trainer_destroy(u);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(same);
    frl_vec_env_destroy(room);
    frl_vec_env_destroy(moved);
    frl_vec_env_destroy(v);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* Whether a frame's bytes, read 4 at a time as floats, hold a NaN or an infinity. */
static int bytes_look_nonfinite(const uint8_t *frame, size_t n)
{
    for (size_t i = 0; i + 4 <= n; i += 4) {
        float f;
        memcpy(&f, frame + i, 4);
        if (!isfinite(f))
            return 1;
    }
    return 0;
}

/* Pixels are bytes, any value valid: a state whose frame has 4 bytes that read as a NaN
 * float (a bright pixel beside a dark one) is taken like any other, not refused as a
 * non-finite observation. */
START_TEST(set_state_any_pixels)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg = frl_test_settings("env.width=20 env.height=16 env.grayscale=false");
    frl_env *a, *b;
    ck_assert_int_eq(frl_env_create(&a, rt, "RayRoom-v0", cfg), FRL_OK);
    ck_assert_int_eq(frl_env_create(&b, rt, "RayRoom-v0", cfg), FRL_OK);
    frl_config_destroy(cfg);
    int32_t n = frl_env_state_size(a);
    double *s = malloc(sizeof(double) * (size_t)n);
    uint8_t fa[20 * 16 * 3], fb[20 * 16 * 3], te = 0, tr = 0;
    float ra;
    frl_rng r = frl_rng_stream(8, 1);
    ck_assert_int_eq(frl_env_reset(a, 2, (float *)fa), FRL_OK);
    ck_assert_int_eq(frl_env_reset(b, 3, (float *)fb), FRL_OK);
    int tried = 0;
    for (int k = 0; k < 400 && tried < 5; k++) {
        int32_t act = (int32_t)(frl_rng_next(&r) % RAY_ACTIONS);
        ck_assert_int_eq(frl_env_step(a, &act, (float *)fa, &ra, &te, &tr), FRL_OK);
        if (te || tr) {
            ck_assert_int_eq(frl_env_reset(a, (uint64_t)k, (float *)fa), FRL_OK);
            continue;
        }
        ck_assert_int_eq(frl_env_get_state(a, s, n), FRL_OK);
        ck_assert_int_eq(frl_env_set_state(b, s, n, (float *)fb), FRL_OK);
        if (!bytes_look_nonfinite(fb, sizeof fb))
            continue;
        tried++; /* a frame whose bytes read as NaN: taken as well */
    }
    ck_assert_int_eq(tried, 5);
    free(s);
    frl_env_destroy(a);
    frl_env_destroy(b);
    frl_runtime_destroy(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("raycast");
    TCase *tc = tcase_create("raycast");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, deterministic);
    tcase_add_test(tc, oracle_beats_random);
    tcase_add_test(tc, state_continues);
    tcase_add_test(tc, bad_state_refused);
    tcase_add_test(tc, frame_skip_max_pools);
    tcase_add_test(tc, settings_and_bad_input);
    tcase_add_test(tc, use_opens_doors);
    tcase_add_test(tc, host_maps);
    tcase_add_test(tc, sparse_maps_spread_sprites);
    tcase_add_test(tc, impossible_states_refused);
    tcase_add_test(tc, map_run_resumes_only_on_its_map);
    tcase_add_test(tc, set_state_any_pixels);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
