/* frl_vec_env: autoreset semantics, episode statistics, time limits, the single-env
 * wrapper, and byte-identical results whatever the thread count. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fastrl.h"
#include "test_util.h"

/* A deterministic action for (step, env), valid for every built-in. */
static uint32_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (uint32_t)x;
}

static void write_actions(frl_vec_env *v, int64_t step)
{
    const frl_space *a = frl_vec_env_action_space(v);
    int32_t n = frl_vec_env_num_envs(v);
    int64_t w = frl_space_width(a);
    void *buf = frl_vec_env_actions(v);
    for (int64_t i = 0; i < n * w; i++) {
        uint32_t r = mix((uint64_t)step * 1000003u + (uint64_t)i);
        if (frl_space_get_kind(a) == FRL_SPACE_DISCRETE)
            ((int32_t *)buf)[i] = (int32_t)(r % (uint32_t)frl_space_n(a));
        else /* [-3, 3]: outside the bounds too, to exercise clipping */
            ((float *)buf)[i] = (float)r / 4294967296.0f * 6.0f - 3.0f;
    }
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* Hash of every output array after every step of a run. */
static uint64_t run_hash(const char *env, int threads, int32_t n, int steps)
{
    frl_runtime *rt = frl_test_runtime(threads);
    frl_vec_env *v;
    frl_config *cfg;
    /* A 100-step limit, so every env also truncates and autoresets inside the run. */
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "env.max_episode_steps", 100), FRL_OK);
    /* the ray envs at 32 x 24: a ninth of their default pixels (the others ignore it) */
    ck_assert_int_eq(frl_config_parse(cfg, "env.width=32 env.height=24"), FRL_OK);
    ck_assert_int_eq(frl_vec_env_create(&v, rt, env, n, cfg), FRL_OK);
    frl_config_destroy(cfg);
    ck_assert_int_eq(frl_vec_env_reset(v, 2024), FRL_OK);
    /* bytes per observation row: 4 a value; an image's or a mixed space's width is bytes */
    const frl_space *os = frl_vec_env_observation_space(v);
    frl_space_kind k = frl_space_get_kind(os);
    int64_t w = frl_space_width(os) * (k == FRL_SPACE_IMAGE || k == FRL_SPACE_MIXED ? 1 : 4);
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int s = 0; s < steps; s++) {
        write_actions(v, s);
        ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
        h = fnv(h, frl_vec_env_observations(v), (size_t)(n * w));
        h = fnv(h, frl_vec_env_rewards(v), sizeof(float) * (size_t)n);
        h = fnv(h, frl_vec_env_terminated(v), (size_t)n);
        h = fnv(h, frl_vec_env_truncated(v), (size_t)n);
        h = fnv(h, frl_vec_env_reset_steps(v), (size_t)n);
    }
    ck_assert_int_ge(frl_vec_env_total_episodes(v), 2 * (int64_t)n);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
    return h;
}

/* 1000 envs x 250 steps = 250K steps per env type, with episodes ending by
 * termination and by the time limit and autoresetting inside the run. */
START_TEST(identical_for_any_thread_count)
{
    const char *env = frl_env_name_at(_i);
    /* A pixel env draws 4,800 bytes an env and step: 100 envs keep it as quick as the
     * others (every chunk split still differs between the thread counts); a ray env
     * renders two 84 x 84 frames a step, so 16 (test_raycast hashes them longer). */
    int32_t n = strncmp(env, "Pixel", 5) == 0 ? 100 : strncmp(env, "Ray", 3) == 0 ? 16 : 1000;
    /* TSan (50 times slower) a quarter: the thread counts still split the envs unevenly
     * into chunks, which is what could race. */
    if (FRL_TEST_TSAN)
        n /= 4;
    uint64_t ref = run_hash(env, 1, n, 250);
    static const int threads[] = {2, 3, 7};
    for (int t = 0; t < 3; t++)
        ck_assert_msg(run_hash(env, threads[t], n, 250) == ref,
                      "%s: results differ with %d threads", env, threads[t]);
}
END_TEST

/* Autoreset: the step after an episode ends returns the reset observation with
 * reward 0 and no flags, and marks reset_steps; episode stats are reported on the
 * ending step. CartPole gives reward 1 per step, so return == length. */
START_TEST(autoreset_and_episode_stats)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_vec_env *v;
    const int32_t n = 64;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "CartPole-v1", n, NULL), FRL_OK);
    ck_assert_str_eq(frl_vec_env_name(v), "CartPole-v1");
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    for (int32_t i = 0; i < n; i++)
        ck_assert_int_eq(frl_vec_env_reset_steps(v)[i], 1);
    uint8_t was_done[64] = {0};
    int32_t length[64] = {0};
    int64_t episodes = 0;
    for (int s = 0; s < 400; s++) {
        write_actions(v, s);
        ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
        for (int32_t i = 0; i < n; i++) {
            uint8_t done = frl_vec_env_terminated(v)[i] | frl_vec_env_truncated(v)[i];
            ck_assert_int_eq(frl_vec_env_reset_steps(v)[i], was_done[i]);
            if (was_done[i]) {
                ck_assert(frl_vec_env_rewards(v)[i] == 0.0f);
                ck_assert_int_eq(done, 0);
                length[i] = 0;
            } else {
                ck_assert(frl_vec_env_rewards(v)[i] == 1.0f);
                length[i]++;
            }
            if (done) {
                ck_assert_int_eq(frl_vec_env_episode_lengths(v)[i], length[i]);
                ck_assert(frl_vec_env_episode_returns(v)[i] == (float)length[i]);
                episodes++;
            }
            was_done[i] = done;
        }
    }
    ck_assert_int_gt(episodes, 64);
    ck_assert_int_eq(frl_vec_env_total_episodes(v), episodes);
    ck_assert_int_eq(frl_vec_env_total_steps(v), 400 * n);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* The autoreset observation is the one a fresh reset of the same stream gives: env 0
 * of a vec env reset with seed s starts like a single env reset with seed s. */
START_TEST(reset_streams_match_single_env)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_vec_env *v;
    frl_env *e;
    float obs[4];
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "CartPole-v1", 3, NULL), FRL_OK);
    ck_assert_int_eq(frl_env_create(&e, rt, "CartPole-v1", NULL), FRL_OK);
    ck_assert_int_eq(frl_vec_env_reset(v, 77), FRL_OK);
    ck_assert_int_eq(frl_env_reset(e, 77, obs), FRL_OK);
    ck_assert_mem_eq(obs, frl_vec_env_observations(v), sizeof obs);
    /* Different envs and different seeds start differently. */
    ck_assert(memcmp(frl_vec_env_observations(v), frl_vec_env_observations(v) + 4, 16) != 0);
    ck_assert_int_eq(frl_env_reset(e, 78, obs), FRL_OK);
    ck_assert(memcmp(obs, frl_vec_env_observations(v), sizeof obs) != 0);
    frl_env_destroy(e);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(time_limit_from_config)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg;
    frl_env *e;
    float obs[3], reward;
    uint8_t term, trunc;
    float action = 0.0f;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "env.max_episode_steps", 10), FRL_OK);
    ck_assert_int_eq(frl_env_create(&e, rt, "Pendulum-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_env_reset(e, 3, obs), FRL_OK);
    for (int s = 1; s <= 10; s++) {
        ck_assert_int_eq(frl_env_step(e, &action, obs, &reward, &term, &trunc), FRL_OK);
        ck_assert_int_eq(term, 0);
        ck_assert_int_eq(trunc, s == 10);
        ck_assert(reward <= 0.0f);
    }
    ck_assert_int_eq(frl_env_step(e, &action, obs, &reward, &term, &trunc), FRL_ERR_STATE);
    frl_env_destroy(e);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* get_state / set_state round-trip, and two envs set to the same state step alike. */
START_TEST(state_round_trip)
{
    frl_runtime *rt = frl_test_runtime(1);
    for (int32_t k = 0; frl_env_name_at(k); k++) {
        frl_env *a, *b;
        ck_assert_int_eq(frl_env_create(&a, rt, frl_env_name_at(k), NULL), FRL_OK);
        ck_assert_int_eq(frl_env_create(&b, rt, frl_env_name_at(k), NULL), FRL_OK);
        int32_t n = frl_env_state_size(a);
        ck_assert_int_ge(n, 2);
        static float oa[2048], ob[2048]; /* the widest: the ray envs' 84 x 84 bytes */
        float ra, rb;
        uint8_t ta, tb, ua, ub;
        static double sa[512], sb[512];  /* the longest: RayCollect-v0's 278 values */
        ck_assert_int_le(n, 512);
        ck_assert_int_eq(frl_env_reset(a, 5, oa), FRL_OK);
        ck_assert_int_eq(frl_env_reset(b, 6, ob), FRL_OK);
        ck_assert_int_eq(frl_env_get_state(a, sa, n), FRL_OK);
        ck_assert_int_eq(frl_env_set_state(b, sa, n, ob), FRL_OK);
        ck_assert_int_eq(frl_env_get_state(b, sb, n), FRL_OK);
        ck_assert_mem_eq(sa, sb, sizeof(double) * (size_t)n);
        const frl_space *os = frl_env_observation_space(a);
        frl_space_kind kind = frl_space_get_kind(os);
        size_t bytes = (size_t)frl_space_width(os) *
                       (kind == FRL_SPACE_IMAGE || kind == FRL_SPACE_MIXED ? 1 : 4);
        ck_assert_uint_le(bytes, sizeof oa);
        ck_assert_mem_eq(oa, ob, bytes);
        int32_t ia = 1;
        float fa = 0.5f;
        const void *act = frl_space_get_kind(frl_env_action_space(a)) == FRL_SPACE_DISCRETE
                              ? (const void *)&ia : (const void *)&fa;
        ck_assert_int_eq(frl_env_step(a, act, oa, &ra, &ta, &ua), FRL_OK);
        ck_assert_int_eq(frl_env_step(b, act, ob, &rb, &tb, &ub), FRL_OK);
        ck_assert(ra == rb && ta == tb && ua == ub);
        ck_assert_int_eq(frl_env_get_state(a, sa, n), FRL_OK);
        ck_assert_int_eq(frl_env_get_state(b, sb, n), FRL_OK);
        ck_assert_mem_eq(sa, sb, sizeof(double) * (size_t)n);
        ck_assert(sa[n - 1] == 1.0); /* elapsed steps, last */
        frl_env_destroy(a);
        frl_env_destroy(b);
    }
    frl_runtime_destroy(rt);
}
END_TEST

/* An elapsed count of 2^31 - 1, the largest set_state takes (or one that long episodes
 * without a time limit reach), saturates at the next step instead of wrapping
 * negative: the time limit still truncates, and the count stays 2^31 - 1. */
START_TEST(elapsed_count_saturates)
{
    frl_runtime *rt = frl_test_runtime(1);
    for (int limited = 0; limited < 2; limited++) {
        frl_config *cfg = frl_test_settings(limited ? "env.max_episode_steps=500"
                                                    : "env.max_episode_steps=0");
        frl_env *e;
        ck_assert_int_eq(frl_env_create(&e, rt, "CartPole-v1", cfg), FRL_OK);
        float obs[4], r;
        uint8_t term, trunc;
        double st[5];
        ck_assert_int_eq(frl_env_reset(e, 3, obs), FRL_OK);
        ck_assert_int_eq(frl_env_get_state(e, st, 5), FRL_OK);
        st[4] = 2147483647.0;
        ck_assert_int_eq(frl_env_set_state(e, st, 5, obs), FRL_OK);
        int32_t action = 0;
        ck_assert_int_eq(frl_env_step(e, &action, obs, &r, &term, &trunc), FRL_OK);
        ck_assert_int_eq(term, 0);
        ck_assert_int_eq(trunc, limited); /* past the limit: truncated */
        ck_assert_int_eq(frl_env_get_state(e, st, 5), FRL_OK);
        ck_assert_msg(st[4] == 2147483647.0, "elapsed %g after the step", st[4]);
        frl_env_destroy(e);
        frl_config_destroy(cfg);
    }
    frl_runtime_destroy(rt);
}
END_TEST

/* MountainCarContinuous-v0's penalty is on the unclipped action: a finite action over
 * 5.8e19 gave a reward of -inf (beyond float's range), which no env may give. */
START_TEST(huge_finite_action_finite_reward)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_env *e;
    ck_assert_int_eq(frl_env_create(&e, rt, "MountainCarContinuous-v0", NULL), FRL_OK);
    float obs[2], r;
    uint8_t term, trunc;
    ck_assert_int_eq(frl_env_reset(e, 3, obs), FRL_OK);
    float a = 6e19f;
    ck_assert_int_eq(frl_env_step(e, &a, obs, &r, &term, &trunc), FRL_OK);
    ck_assert_msg(isfinite(r) && r == -FLT_MAX, "reward %g", (double)r);
    frl_env_destroy(e);
    frl_runtime_destroy(rt);
}
END_TEST

static int builtin_count(void)
{
    int n = 0;
    while (frl_env_name_at(n))
        n++;
    return n;
}

int main(void)
{
    Suite *s = suite_create("vec_env");
    TCase *tc = tcase_create("vec_env");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, identical_for_any_thread_count, 0, builtin_count());
    tcase_add_test(tc, autoreset_and_episode_stats);
    tcase_add_test(tc, reset_streams_match_single_env);
    tcase_add_test(tc, time_limit_from_config);
    tcase_add_test(tc, state_round_trip);
    tcase_add_test(tc, elapsed_count_saturates);
    tcase_add_test(tc, huge_finite_action_finite_reward);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
