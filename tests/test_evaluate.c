/* frl_policy_evaluate: each env's fixed quota of episodes, returned env-major; results
 * that depend only on the seed; box actions clipped; spaces that differ refused by
 * name; the max_steps limit; bad arguments and struct_size; errors from the env and
 * from the allocator, with nothing stepped or leaked. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fastrl.h"
#include "test_util.h"

/* ---- a host env whose episode lengths differ by env and by episode ---- */

/* Env i's k-th episode (k from 0) lasts base + k steps, with reward 0.5 per step: a
 * return tells which env and which episode it came from. base 0: never ends. */
typedef struct ladder {
    int32_t base, episode, t;
    int fail_at_step; /* > 0: the step callback fails on that step of the env */
    int steps;
} ladder;

static int ladder_reset(void *user, uint64_t seed, float *obs)
{
    (void)seed;
    ladder *l = user;
    l->episode += l->t > 0 || l->steps > 0; /* the first reset starts episode 0 */
    l->t = 0;
    obs[0] = 0.0f;
    obs[1] = (float)l->episode;
    return 0;
}

static int ladder_step(void *user, const void *action, float *obs, float *reward,
                       uint8_t *terminated, uint8_t *truncated)
{
    (void)action;
    ladder *l = user;
    if (++l->steps == l->fail_at_step)
        return 7;
    l->t++;
    obs[0] = (float)l->t;
    obs[1] = (float)l->episode;
    *reward = 0.5f;
    *terminated = l->base > 0 && l->t == l->base + l->episode;
    *truncated = 0;
    return 0;
}

static void box_space(frl_space **s, int32_t rank, const int64_t *shape, float lo, float hi)
{
    int64_t n = 1;
    for (int32_t i = 0; i < rank; i++)
        n *= shape[i];
    float low[16], high[16];
    for (int64_t i = 0; i < n; i++) {
        low[i] = lo;
        high[i] = hi;
    }
    ck_assert_int_eq(frl_space_create_box(s, NULL, rank, shape, low, high), FRL_OK);
}

static frl_vec_env *make_ladders(frl_runtime *rt, ladder *l, int32_t n, int64_t actions)
{
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = ladder_reset;
    cb.step = ladder_step;
    void *users[16];
    for (int32_t i = 0; i < n; i++)
        users[i] = &l[i];
    frl_space *obs, *act;
    int64_t w = 2;
    box_space(&obs, 1, &w, -1e6f, 1e6f);
    ck_assert_int_eq(frl_space_create_discrete(&act, NULL, actions), FRL_OK);
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, n, obs, act, NULL),
                     FRL_OK);
    frl_space_destroy(obs);
    frl_space_destroy(act);
    return v;
}

/* A policy for the spaces of v. */
static frl_policy *policy_for(frl_runtime *rt, const frl_vec_env *v)
{
    frl_policy *p = NULL;
    ck_assert_int_eq(frl_policy_create(&p, rt, NULL, frl_vec_env_observation_space(v),
                                       frl_vec_env_action_space(v)),
                     FRL_OK);
    return p;
}

/* 7 episodes on 3 envs: quotas 3, 2, 2, whatever the lengths. Env 0's episodes are
 * the shortest, so counting the first 7 to end would take 4 or more of them. */
START_TEST(quota_per_env_env_major)
{
    frl_runtime *rt = frl_test_runtime(2);
    ladder l[3] = {{.base = 2}, {.base = 5}, {.base = 9}};
    frl_vec_env *v = make_ladders(rt, l, 3, 2);
    frl_policy *p = policy_for(rt, v);
    double ret[7];
    int32_t len[7];
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = 7;
    a.returns = ret;
    a.lengths = len;
    double mean = 0;
    ck_assert_int_eq(frl_policy_evaluate(p, v, &a, &mean), FRL_OK);
    const int32_t want[7] = {2, 3, 4, 5, 6, 9, 10};
    double sum = 0;
    for (int i = 0; i < 7; i++) {
        ck_assert_msg(len[i] == want[i], "episode %d: length %d, want %d", i, len[i], want[i]);
        ck_assert_double_eq(ret[i], 0.5 * want[i]);
        sum += ret[i];
    }
    ck_assert_double_eq_tol(mean, sum / 7, 1e-12);
    /* Env 0 ran more episodes than its quota (it was not stopped), none counted. */
    ck_assert_int_ge(l[0].episode, 3);
    frl_policy_destroy(p);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* Fewer episodes than envs: env i < episodes runs one, the others none. */
START_TEST(fewer_episodes_than_envs)
{
    frl_runtime *rt = frl_test_runtime(1);
    ladder l[4] = {{.base = 4}, {.base = 3}, {.base = 2}, {.base = 1}};
    frl_vec_env *v = make_ladders(rt, l, 4, 2);
    frl_policy *p = policy_for(rt, v);
    int32_t len[2];
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = 2;
    a.lengths = len;
    double mean;
    ck_assert_int_eq(frl_policy_evaluate(p, v, &a, &mean), FRL_OK);
    ck_assert_int_eq(len[0], 4);
    ck_assert_int_eq(len[1], 3);
    ck_assert_double_eq(mean, 0.5 * 3.5);
    frl_policy_destroy(p);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- built-ins: results depend on the seed only ---- */

typedef struct run {
    double ret[10], mean;
    int32_t len[10];
} run;

static run cartpole_run(int threads, int deterministic, uint64_t seed)
{
    frl_runtime *rt = frl_test_runtime(threads);
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "CartPole-v1", 4, NULL), FRL_OK);
    frl_policy *p = policy_for(rt, v); /* the runtime's seed (0): the same weights */
    run r;
    memset(&r, 0, sizeof r);
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = 10;
    a.deterministic = deterministic;
    a.seed = seed;
    a.returns = r.ret;
    a.lengths = r.len;
    ck_assert_int_eq(frl_policy_evaluate(p, v, &a, &r.mean), FRL_OK);
    frl_policy_destroy(p);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
    return r;
}

static int same_run(const run *a, const run *b)
{
    return memcmp(a->ret, b->ret, sizeof a->ret) == 0 &&
           memcmp(a->len, b->len, sizeof a->len) == 0 && a->mean == b->mean;
}

START_TEST(repeatable_and_thread_independent)
{
    for (int det = 0; det <= 1; det++) {
        run a = cartpole_run(1, det, 5), b = cartpole_run(3, det, 5), c = cartpole_run(1, det, 6);
        ck_assert_msg(same_run(&a, &b), "deterministic=%d: 1 and 3 threads differ", det);
        ck_assert_msg(!same_run(&a, &c), "deterministic=%d: seeds 5 and 6 agree", det);
        for (int i = 0; i < 10; i++) /* CartPole pays 1 per step */
            ck_assert_double_eq(a.ret[i], a.len[i]);
    }
    run greedy = cartpole_run(2, 1, 5), sampled = cartpole_run(2, 0, 5);
    ck_assert_msg(!same_run(&greedy, &sampled), "sampling changed nothing");
}
END_TEST

/* ---- a host env whose return is the count of actions 1: only the policy's noise
 * makes it vary (its resets ignore the seed) ---- */

static int coin_reset(void *user, uint64_t seed, float *obs)
{
    (void)seed;
    *(int32_t *)user = 0;
    obs[0] = obs[1] = 0.0f;
    return 0;
}

static int coin_step(void *user, const void *action, float *obs, float *reward,
                     uint8_t *terminated, uint8_t *truncated)
{
    int32_t *t = user;
    obs[0] = obs[1] = 0.0f;
    *reward = (float)*(const int32_t *)action;
    *terminated = ++*t == 64;
    *truncated = 0;
    return 0;
}

static void coin_returns(frl_policy *p, frl_vec_env *v, uint64_t seed, double *ret)
{
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = 8;
    a.deterministic = 0;
    a.seed = seed;
    a.returns = ret;
    ck_assert_int_eq(frl_policy_evaluate(p, v, &a, NULL), FRL_OK);
}

/* Sampled actions draw from streams of the seed: two seeds are two samples of the
 * policy's returns, not the same noise again (env i's stream is seed * N + i). */
START_TEST(sampled_actions_follow_the_seed)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = coin_reset;
    cb.step = coin_step;
    int32_t t[2];
    void *users[2] = {&t[0], &t[1]};
    frl_space *obs, *act;
    int64_t w = 2;
    box_space(&obs, 1, &w, -1, 1);
    ck_assert_int_eq(frl_space_create_discrete(&act, NULL, 2), FRL_OK);
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, 2, obs, act, NULL),
                     FRL_OK);
    frl_policy *p = policy_for(rt, v);
    double a[8], b[8], c[8];
    coin_returns(p, v, 1, a);
    coin_returns(p, v, 1, b);
    coin_returns(p, v, 2, c);
    ck_assert_int_eq(memcmp(a, b, sizeof a), 0);
    ck_assert_msg(memcmp(a, c, sizeof a) != 0, "seeds 1 and 2 sampled the same actions");
    frl_policy_destroy(p);
    frl_vec_env_destroy(v);
    frl_space_destroy(obs);
    frl_space_destroy(act);
    frl_runtime_destroy(rt);
}
END_TEST

/* The out arrays are optional; the mean is the same with or without them. */
START_TEST(returns_optional_mean_matches)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "Acrobot-v1", 3, NULL), FRL_OK);
    frl_policy *p = policy_for(rt, v);
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = 4;
    double with_arrays, without, ret[4];
    int32_t len[4];
    a.returns = ret;
    a.lengths = len;
    ck_assert_int_eq(frl_policy_evaluate(p, v, &a, &with_arrays), FRL_OK);
    a.returns = NULL;
    a.lengths = NULL;
    ck_assert_int_eq(frl_policy_evaluate(p, v, &a, &without), FRL_OK);
    ck_assert_double_eq(with_arrays, without);
    ck_assert_double_eq_tol(with_arrays, (ret[0] + ret[1] + ret[2] + ret[3]) / 4, 1e-9);
    ck_assert_int_eq(frl_policy_evaluate(p, v, &a, NULL), FRL_OK);
    frl_policy_destroy(p);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- box actions are clipped to the env's bounds ---- */

typedef struct recorder {
    float lo, hi; /* the bounds, to check every action against */
    int t, outside, at_bound, steps;
    /* Actions inside the bounds, and how many equal the one before: the observation
     * never changes, so only the sampling counter's advance makes samples differ. */
    int inside, repeats;
    float last_inside;
} recorder;

static int rec_reset(void *user, uint64_t seed, float *obs)
{
    (void)seed;
    ((recorder *)user)->t = 0;
    obs[0] = 1.0f;
    return 0;
}

static int rec_step(void *user, const void *action, float *obs, float *reward,
                    uint8_t *terminated, uint8_t *truncated)
{
    recorder *r = user;
    float x = *(const float *)action;
    r->outside += x < r->lo || x > r->hi;
    r->at_bound += x == r->lo || x == r->hi;
    if (x > r->lo && x < r->hi) {
        r->repeats += r->inside++ > 0 && x == r->last_inside;
        r->last_inside = x;
    }
    r->steps++;
    obs[0] = 1.0f;
    *reward = x;
    *terminated = ++r->t == 20;
    *truncated = 0;
    return 0;
}

START_TEST(box_actions_clipped)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = rec_reset;
    cb.step = rec_step;
    recorder r[2] = {{.lo = -0.25f, .hi = 0.5f}, {.lo = -0.25f, .hi = 0.5f}};
    void *users[2] = {&r[0], &r[1]};
    frl_space *obs, *act;
    int64_t one = 1;
    box_space(&obs, 1, &one, -2, 2);
    box_space(&act, 1, &one, -0.25f, 0.5f);
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, 2, obs, act, NULL),
                     FRL_OK);
    /* A policy made with wider bounds: the env's own bounds are the ones that hold. */
    frl_space *wide;
    box_space(&wide, 1, &one, -3, 3);
    frl_policy *p = NULL;
    ck_assert_int_eq(frl_policy_create(&p, rt, NULL, obs, wide), FRL_OK);
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = 10;
    a.deterministic = 0; /* samples of std 1: most fall outside [-0.25, 0.5] */
    double mean;
    ck_assert_int_eq(frl_policy_evaluate(p, v, &a, &mean), FRL_OK);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(r[i].outside, 0);
        ck_assert_int_gt(r[i].at_bound, r[i].steps / 4);
        ck_assert_int_gt(r[i].inside, 10);
        ck_assert_int_eq(r[i].repeats, 0);
    }
    ck_assert(mean >= -0.25 * 20 && mean <= 0.5 * 20);
    frl_policy_destroy(p);
    frl_vec_env_destroy(v);
    frl_space_destroy(obs);
    frl_space_destroy(act);
    frl_space_destroy(wide);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- spaces that differ ---- */

/* Evaluate p on v, expecting FRL_ERR_SIZE with every text of want in the message, and
 * nothing written or stepped. */
static void refused_size(frl_policy *p, frl_vec_env *v, const char *want1, const char *want2)
{
    double ret[2] = {-7, -7}, mean = 0;
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = 2;
    a.returns = ret;
    int64_t steps = frl_vec_env_total_steps(v);
    ck_assert_int_eq(frl_policy_evaluate(p, v, &a, &mean), FRL_ERR_SIZE);
    const char *msg = frl_last_error();
    ck_assert_msg(strstr(msg, "frl_policy_evaluate") && strstr(msg, want1) &&
                      strstr(msg, want2),
                  "message: %s", msg);
    ck_assert_str_eq(frl_policy_last_error(p), msg);
    ck_assert(isnan(mean));
    ck_assert(ret[0] == -7 && ret[1] == -7);
    ck_assert_int_eq(frl_vec_env_total_steps(v), steps);
}

static frl_vec_env *builtin(frl_runtime *rt, const char *name)
{
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, name, 2, NULL), FRL_OK);
    return v;
}

START_TEST(mismatched_spaces)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_vec_env *cartpole = builtin(rt, "CartPole-v1"), *acrobot = builtin(rt, "Acrobot-v1");
    frl_vec_env *mc = builtin(rt, "MountainCar-v0");
    frl_vec_env *mcc = builtin(rt, "MountainCarContinuous-v0");
    frl_policy *acrobot_p = policy_for(rt, acrobot), *mc_p = policy_for(rt, mc);
    frl_policy *mcc_p = policy_for(rt, mcc);
    refused_size(acrobot_p, cartpole, "observation spaces", "box[6] and box[4]");
    /* Same observation width and one action value each: only kind tells them apart. */
    refused_size(mc_p, mcc, "action spaces", "discrete(3) and box[1]");
    refused_size(mcc_p, mc, "action spaces", "box[1] and discrete(3)");
    /* Discrete n: 3 actions against 2, and the same widths. */
    ladder l[2] = {{.base = 3}, {.base = 3}};
    frl_vec_env *two = make_ladders(rt, l, 2, 2);
    refused_size(mc_p, two, "action spaces", "discrete(3) and discrete(2)");
    /* The right policy then works on the same env. */
    frl_policy *two_p = policy_for(rt, two);
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = 2;
    ck_assert_int_eq(frl_policy_evaluate(two_p, two, &a, NULL), FRL_OK);
    frl_policy_destroy(two_p);
    frl_policy_destroy(acrobot_p);
    frl_policy_destroy(mc_p);
    frl_policy_destroy(mcc_p);
    frl_vec_env_destroy(two);
    frl_vec_env_destroy(cartpole);
    frl_vec_env_destroy(acrobot);
    frl_vec_env_destroy(mc);
    frl_vec_env_destroy(mcc);
    frl_runtime_destroy(rt);
}
END_TEST

/* Box shapes: [2x3] and [6] have one width but are different spaces. */
START_TEST(mismatched_box_shape)
{
    frl_runtime *rt = frl_test_runtime(1);
    ladder l[1] = {{.base = 3}};
    frl_vec_env *v = make_ladders(rt, l, 1, 2);
    frl_space *obs6, *obs23, *act;
    int64_t six = 6, two_three[2] = {2, 3};
    box_space(&obs6, 1, &six, -1, 1);
    box_space(&obs23, 2, two_three, -1, 1);
    ck_assert_int_eq(frl_space_create_discrete(&act, NULL, 2), FRL_OK);
    frl_policy *p = NULL;
    ck_assert_int_eq(frl_policy_create(&p, rt, NULL, obs23, act), FRL_OK);
    refused_size(p, v, "observation spaces", "box[2x3] and box[2]");
    frl_policy_destroy(p);
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = ladder_reset;
    cb.step = ladder_step;
    void *users[1] = {&l[0]};
    frl_vec_env *v6 = NULL;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v6, rt, &cb, users, 1, obs6, act, NULL),
                     FRL_OK);
    ck_assert_int_eq(frl_policy_create(&p, rt, NULL, obs23, act), FRL_OK);
    refused_size(p, v6, "observation spaces", "box[2x3] and box[6]");
    frl_policy_destroy(p);
    frl_vec_env_destroy(v6);
    frl_vec_env_destroy(v);
    frl_space_destroy(obs6);
    frl_space_destroy(obs23);
    frl_space_destroy(act);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- max_steps ---- */

static frl_status eval_ladders(int32_t base, int32_t n, int32_t episodes, int64_t max_steps,
                               int64_t *steps_taken)
{
    frl_runtime *rt = frl_test_runtime(1);
    ladder l[4];
    memset(l, 0, sizeof l);
    for (int i = 0; i < n; i++)
        l[i].base = base;
    frl_vec_env *v = make_ladders(rt, l, n, 2);
    frl_policy *p = policy_for(rt, v);
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = episodes;
    a.max_steps = max_steps;
    double mean = 0;
    frl_status st = frl_policy_evaluate(p, v, &a, &mean);
    *steps_taken = frl_vec_env_total_steps(v);
    ck_assert(st == FRL_OK ? !isnan(mean) : isnan(mean) != 0);
    frl_policy_destroy(p);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
    return st;
}

START_TEST(max_steps_limit)
{
    int64_t steps;
    /* Endless episodes: refused after at most max_steps env steps, 4 per step. */
    ck_assert_int_eq(eval_ladders(0, 4, 4, 102, &steps), FRL_ERR_RANGE);
    ck_assert_int_eq(steps, 100);
    const char *msg = frl_last_error();
    ck_assert_msg(strstr(msg, "frl_policy_evaluate") && strstr(msg, "max_steps 102") &&
                      strstr(msg, "finished 0 of 4 episodes"),
                  "message: %s", msg);
    /* Episode 0 of 5 steps: exactly 5 steps is enough, 4 is not. Two episodes take 5,
     * one autoreset step, then 6. */
    ck_assert_int_eq(eval_ladders(5, 1, 1, 5, &steps), FRL_OK);
    ck_assert_int_eq(steps, 5);
    ck_assert_int_eq(eval_ladders(5, 1, 1, 4, &steps), FRL_ERR_RANGE);
    ck_assert_int_eq(eval_ladders(5, 1, 2, 12, &steps), FRL_OK);
    ck_assert_int_eq(eval_ladders(5, 1, 2, 11, &steps), FRL_ERR_RANGE);
    ck_assert_int_eq(steps, 11);
    ck_assert_msg(strstr(frl_last_error(), "finished 1 of 2 episodes"), "%s", frl_last_error());
    /* 0: no limit (the ladder ends; the point is that 0 is not "no steps"). */
    ck_assert_int_eq(eval_ladders(50, 2, 2, 0, &steps), FRL_OK);
}
END_TEST

/* ---- bad arguments ---- */

static void expect_error(frl_status got, frl_status want, const char *text)
{
    ck_assert_msg(got == want, "status %s, want %s (%s)", frl_status_name(got),
                  frl_status_name(want), frl_last_error());
    ck_assert_msg(strstr(frl_last_error(), "frl_policy_evaluate") &&
                      strstr(frl_last_error(), text),
                  "message lacks '%s': %s", text, frl_last_error());
}

START_TEST(bad_arguments)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_vec_env *v = builtin(rt, "CartPole-v1");
    frl_policy *p = policy_for(rt, v);
    frl_eval_args a;
    frl_eval_args_init(&a);
    double mean = 1;
    expect_error(frl_policy_evaluate(NULL, v, &a, &mean), FRL_ERR_NULL, "policy is NULL");
    ck_assert(isnan(mean));
    expect_error(frl_policy_evaluate(p, NULL, &a, &mean), FRL_ERR_NULL, "venv is NULL");
    ck_assert_str_eq(frl_policy_last_error(p), frl_last_error());
    expect_error(frl_policy_evaluate(p, v, NULL, &mean), FRL_ERR_NULL, "args");
    const struct {
        int32_t episodes, deterministic;
        int64_t max_steps;
        const char *text;
    } bad[] = {
        {0, 1, 100, "args->episodes is 0"},
        {-3, 1, 100, "args->episodes is -3"},
        {2, 2, 100, "args->deterministic is 2"},
        {2, -1, 100, "args->deterministic is -1"},
        {2, 1, -1, "args->max_steps is -1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        frl_eval_args b = a;
        b.episodes = bad[i].episodes;
        b.deterministic = bad[i].deterministic;
        b.max_steps = bad[i].max_steps;
        expect_error(frl_policy_evaluate(p, v, &b, &mean), FRL_ERR_RANGE, bad[i].text);
        ck_assert_str_eq(frl_policy_last_error(p), frl_last_error());
    }
    ck_assert_int_eq(frl_vec_env_total_steps(v), 0); /* no bad call stepped */
    frl_policy_destroy(p);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* The first version's table is the smallest accepted; a newer caller's longer table is
 * read only as far as this library knows it. */
START_TEST(struct_size_versions)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_vec_env *v = builtin(rt, "CartPole-v1");
    frl_policy *p = policy_for(rt, v);
    size_t v1 = offsetof(frl_eval_args, max_steps) + sizeof(int64_t);
    union {
        frl_eval_args a;
        unsigned char bytes[sizeof(frl_eval_args) + 64];
    } t;
    memset(t.bytes, 0xA5, sizeof t.bytes); /* fields a newer header would add */
    frl_eval_args_init(&t.a);
    t.a.episodes = 2;
    t.a.struct_size = sizeof t.bytes;
    double mean;
    ck_assert_int_eq(frl_policy_evaluate(p, v, &t.a, &mean), FRL_OK);
    double newer = mean;
    t.a.struct_size = v1;
    ck_assert_int_eq(frl_policy_evaluate(p, v, &t.a, &mean), FRL_OK);
    ck_assert_double_eq(mean, newer);
    t.a.struct_size = v1 - 1;
    expect_error(frl_policy_evaluate(p, v, &t.a, &mean), FRL_ERR_VERSION,
                 "frl_eval_args_init");
    t.a.struct_size = 0;
    expect_error(frl_policy_evaluate(p, v, &t.a, &mean), FRL_ERR_VERSION, "struct_size 0");
    ck_assert_str_eq(frl_policy_last_error(p), frl_last_error());
    frl_policy_destroy(p);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- failures on the way: the env's callback, the allocator ---- */

START_TEST(env_failure_reported)
{
    frl_runtime *rt = frl_test_runtime(2);
    ladder l[3] = {{.base = 4}, {.base = 4, .fail_at_step = 6}, {.base = 4}};
    frl_vec_env *v = make_ladders(rt, l, 3, 2);
    frl_policy *p = policy_for(rt, v);
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = 6;
    double mean = 0;
    expect_error(frl_policy_evaluate(p, v, &a, &mean), FRL_ERR_CALLBACK, "env 1");
    ck_assert_msg(strstr(frl_last_error(), "step callback returned 7"), "%s", frl_last_error());
    ck_assert(isnan(mean));
    for (int i = 0; i < 3; i++) /* the envs recover: the next call starts clean */
        l[i] = (ladder){.base = 4};
    ck_assert_int_eq(frl_policy_evaluate(p, v, &a, &mean), FRL_OK);
    ck_assert_double_eq(mean, 0.5 * 4.5);
    frl_policy_destroy(p);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* Episodes other envs finished in the step where one env's callback failed are kept
 * in the arrays (their results are valid after a per-env failure): they were lost. */
START_TEST(episodes_beside_a_failure_kept)
{
    frl_runtime *rt = frl_test_runtime(2);
    /* every env's first episode ends on its 4th step, where env 1 fails instead */
    ladder l[3] = {{.base = 4}, {.base = 4, .fail_at_step = 4}, {.base = 4}};
    frl_vec_env *v = make_ladders(rt, l, 3, 2);
    frl_policy *p = policy_for(rt, v);
    double returns[3] = {-7, -7, -7};
    int32_t lengths[3] = {-7, -7, -7};
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = 3;
    a.returns = returns;
    a.lengths = lengths;
    expect_error(frl_policy_evaluate(p, v, &a, NULL), FRL_ERR_CALLBACK, "env 1");
    ck_assert_msg(returns[0] == 2.0 && lengths[0] == 4 && returns[2] == 2.0 &&
                  lengths[2] == 4, "returns %g %g, lengths %d %d", returns[0], returns[2],
                  (int)lengths[0], (int)lengths[2]);
    ck_assert(returns[1] == -7 && lengths[1] == -7); /* the failed env's: none */
    frl_policy_destroy(p);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* Env 0 ends an episode every step; env 1's second observation is FLT_MAX, finite and in
 * its space, which a ReLU policy turns into NaN outputs. They became a NaN action that
 * the step refused before it ran, and the refused step's flags, the last step's, had env
 * 0's episode recorded a second time; act now refuses the outputs, and the step that
 * is not taken records nothing either. */
static int blowup_step(void *user, const void *action, float *obs, float *reward,
                       uint8_t *terminated, uint8_t *truncated)
{
    (void)action;
    ladder *l = user;
    l->steps++;
    for (int i = 0; i < 8; i++) /* eight: their sums in the first layer overflow */
        obs[i] = l->base == 1 ? 0.0f : FLT_MAX;
    *reward = 1.0f;
    *terminated = l->base == 1;
    *truncated = 0;
    return 0;
}

static int zero_reset(void *user, uint64_t seed, float *obs)
{
    (void)user, (void)seed;
    memset(obs, 0, 8 * sizeof *obs);
    return 0;
}

START_TEST(refused_step_records_nothing)
{
    frl_runtime *rt = frl_test_runtime(1);
    ladder l[2] = {{.base = 1}, {.base = 0}};
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = zero_reset;
    cb.step = blowup_step;
    void *users[2] = {&l[0], &l[1]};
    frl_space *obs, *act;
    int64_t w = 8, one = 1;
    box_space(&obs, 1, &w, -INFINITY, INFINITY);
    box_space(&act, 1, &one, -1, 1);
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, 2, obs, act, NULL),
                     FRL_OK);
    frl_config *cfg = frl_test_settings("policy.activation=relu policy.hidden=64");
    frl_policy *p = NULL;
    ck_assert_int_eq(frl_policy_create(&p, rt, cfg, obs, act), FRL_OK);
    double returns[4] = {-7, -7, -7, -7};
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = 4;
    a.returns = returns;
    a.deterministic = 1;
    frl_status st = frl_policy_evaluate(p, v, &a, NULL);
    ck_assert_msg(st == FRL_ERR_NONFINITE, "%d: %s", (int)st, frl_last_error());
    /* act refuses the non-finite outputs now, before the step would refuse the action */
    ck_assert_msg(strstr(frl_last_error(), "output for row 1 is not finite"), "%s",
                  frl_last_error());
    /* env 0 finished one episode (the first step) before the refused second */
    ck_assert_msg(returns[0] == 1.0 && returns[1] == -7, "returns %g %g", returns[0],
                  returns[1]);
    frl_policy_destroy(p);
    frl_config_destroy(cfg);
    frl_space_destroy(obs);
    frl_space_destroy(act);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

typedef struct gate {
    int closed; /* 1: every allocation fails */
    int live;   /* allocations not yet freed */
} gate;

static void *gate_alloc(void *user, size_t size, size_t align)
{
    gate *g = user;
    if (g->closed)
        return NULL;
    void *p = aligned_alloc(align, (size + align - 1) / align * align);
    g->live += p != NULL;
    return p;
}

static void gate_free(void *user, void *ptr)
{
    ((gate *)user)->live--;
    free(ptr);
}

START_TEST(allocation_failure)
{
    gate g = {0, 0};
    frl_allocator al;
    frl_allocator_init(&al);
    al.alloc = gate_alloc;
    al.free = gate_free;
    al.user = &g;
    frl_config *cfg = frl_test_settings("runtime.threads=1");
    frl_runtime *rt = NULL;
    ck_assert_int_eq(frl_runtime_create(&rt, cfg, &al, NULL), FRL_OK);
    frl_config_destroy(cfg);
    frl_vec_env *v = builtin(rt, "CartPole-v1");
    frl_policy *p = policy_for(rt, v);
    int live = g.live;
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = 3;
    double mean = 0;
    g.closed = 1;
    expect_error(frl_policy_evaluate(p, v, &a, &mean), FRL_ERR_NOMEM, "out of memory");
    g.closed = 0;
    ck_assert_int_eq(g.live, live);
    ck_assert_int_eq(frl_policy_evaluate(p, v, &a, &mean), FRL_OK);
    ck_assert_int_eq(g.live, live); /* the per-call block is freed */
    frl_policy_destroy(p);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
    ck_assert_int_eq(g.live, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("evaluate");
    TCase *tc = tcase_create("evaluate");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, quota_per_env_env_major);
    tcase_add_test(tc, fewer_episodes_than_envs);
    tcase_add_test(tc, repeatable_and_thread_independent);
    tcase_add_test(tc, sampled_actions_follow_the_seed);
    tcase_add_test(tc, returns_optional_mean_matches);
    tcase_add_test(tc, box_actions_clipped);
    tcase_add_test(tc, mismatched_spaces);
    tcase_add_test(tc, mismatched_box_shape);
    tcase_add_test(tc, max_steps_limit);
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, struct_size_versions);
    tcase_add_test(tc, env_failure_reported);
    tcase_add_test(tc, episodes_beside_a_failure_kept);
    tcase_add_test(tc, refused_step_records_nothing);
    tcase_add_test(tc, allocation_failure);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
