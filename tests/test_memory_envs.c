/* The environments for memory (issue 18): CartPoleNoVel-v1 and MemoryProbe-v0.
 * No Gymnasium reference exists for either, so they are tested here.
 *
 * NoVel must be CartPole-v1 with the velocities dropped, bit for bit, so the two
 * are stepped side by side from the same seed with the same actions. */
#include <check.h>

#include "test_util.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fastrl.h"

static frl_env *make_env(frl_runtime *rt, const char *name, const frl_config *cfg)
{
    frl_env *e = NULL;
    ck_assert_int_eq(frl_env_create(&e, rt, name, cfg), FRL_OK);
    return e;
}

/* A fixed pseudo-random action sequence, so episodes end in varied ways. */
static int32_t action_at(int k)
{
    return (int32_t)(((uint32_t)k * 2654435761u >> 13) & 1u);
}

static void check_novel_episode(frl_env *full, frl_env *novel, uint64_t seed)
{
    float of[4], on[2], rf, rn;
    uint8_t tf, tn, uf, un;
    ck_assert_int_eq(frl_env_reset(full, seed, of), FRL_OK);
    ck_assert_int_eq(frl_env_reset(novel, seed, on), FRL_OK);
    for (int k = 0;; k++) {
        ck_assert_mem_eq(&on[0], &of[0], sizeof(float));
        ck_assert_mem_eq(&on[1], &of[2], sizeof(float));
        int32_t a = action_at(k + (int)seed);
        ck_assert_int_eq(frl_env_step(full, &a, of, &rf, &tf, &uf), FRL_OK);
        ck_assert_int_eq(frl_env_step(novel, &a, on, &rn, &tn, &un), FRL_OK);
        ck_assert_mem_eq(&rn, &rf, sizeof(float));
        ck_assert_int_eq(tn, tf);
        ck_assert_int_eq(un, uf);
        if (tf || uf) {
            ck_assert_mem_eq(&on[0], &of[0], sizeof(float));
            ck_assert_mem_eq(&on[1], &of[2], sizeof(float));
            return;
        }
    }
}

/* Same seed and actions: the same trajectory minus x_dot and theta_dot, including
 * episodes cut by the time limit (max_episode_steps 30 forces some truncations). */
START_TEST(test_novel_matches_cartpole)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg = NULL;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    for (int limit = -1; limit <= 30; limit += 31) {
        ck_assert_int_eq(frl_config_set_int(cfg, "env.max_episode_steps", limit), FRL_OK);
        frl_env *full = make_env(rt, "CartPole-v1", cfg);
        frl_env *novel = make_env(rt, "CartPoleNoVel-v1", cfg);
        for (uint64_t seed = 0; seed < 50; seed++)
            check_novel_episode(full, novel, seed);
        frl_env_destroy(full);
        frl_env_destroy(novel);
    }
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* Spaces: box(2) with CartPole's bounds for x and theta; discrete(2); limit 500;
 * the state is CartPole's full state (5 values with elapsed steps). */
START_TEST(test_novel_spaces)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_env *full = make_env(rt, "CartPole-v1", NULL);
    frl_env *novel = make_env(rt, "CartPoleNoVel-v1", NULL);
    const frl_space *sf = frl_env_observation_space(full);
    const frl_space *sn = frl_env_observation_space(novel);
    ck_assert_int_eq(frl_space_width(sn), 2);
    ck_assert_int_eq(frl_space_width(frl_env_action_space(novel)), 1);
    ck_assert_int_eq(frl_env_state_size(novel), 5);
    const float *lf = frl_space_low(sf), *hf = frl_space_high(sf);
    const float *ln = frl_space_low(sn), *hn = frl_space_high(sn);
    ck_assert(ln[0] == lf[0] && hn[0] == hf[0] && ln[1] == lf[2] && hn[1] == hf[2]);
    frl_env_destroy(full);
    frl_env_destroy(novel);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- MemoryProbe-v0 ------------------------------------------------------- */

static frl_config *probe_config(int64_t cues, int64_t delay)
{
    frl_config *cfg = NULL;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "env.memory_cues", cues), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "env.memory_delay", delay), FRL_OK);
    return cfg;
}

/* The cue shown by a first observation: exactly one of [0, K) is 1, the flag is 0. */
static int32_t cue_of(const float *obs, int32_t cues)
{
    int32_t cue = -1;
    for (int32_t k = 0; k < cues; k++) {
        ck_assert(obs[k] == 0.0f || obs[k] == 1.0f);
        if (obs[k] == 1.0f) {
            ck_assert_int_eq(cue, -1);
            cue = k;
        }
    }
    ck_assert_int_ge(cue, 0);
    ck_assert(obs[cues] == 0.0f);
    return cue;
}

static void expect_blank(const float *obs, int32_t cues, float flag)
{
    for (int32_t k = 0; k < cues; k++)
        ck_assert(obs[k] == 0.0f);
    ck_assert(obs[cues] == flag);
}

/* One episode answering `answer`; checks the timeline, returns the reward. */
static float probe_episode(frl_env *e, uint64_t seed, int32_t cues, int32_t delay,
                           int32_t answer, int32_t *cue)
{
    float obs[65], r;
    uint8_t term, trunc;
    ck_assert_int_eq(frl_env_reset(e, seed, obs), FRL_OK);
    *cue = cue_of(obs, cues);
    for (int32_t t = 1; t <= delay + 1; t++) {
        int32_t a = (t * 7) % cues; /* ignored before the answer step */
        ck_assert_int_eq(frl_env_step(e, &a, obs, &r, &term, &trunc), FRL_OK);
        ck_assert(r == 0.0f);
        ck_assert(!term && !trunc);
        expect_blank(obs, cues, t == delay + 1 ? 1.0f : 0.0f);
    }
    ck_assert_int_eq(frl_env_step(e, &answer, obs, &r, &term, &trunc), FRL_OK);
    ck_assert(term && !trunc);
    ck_assert(r == (answer == *cue ? 1.0f : 0.0f));
    return r;
}

/* Episodes are D + 2 steps: the cue, D blanks, the flagged answer step; reward 1
 * for the right answer only. K and D as set, D = 0 included. */
START_TEST(test_probe_timeline)
{
    static const int32_t cases[][2] = {{4, 20}, {4, 0}, {2, 1}, {7, 5}, {64, 3}};
    frl_runtime *rt = frl_test_runtime(1);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int32_t cues = cases[c][0], delay = cases[c][1];
        frl_config *cfg = probe_config(cues, delay);
        frl_env *e = make_env(rt, "MemoryProbe-v0", cfg);
        ck_assert_int_eq(frl_space_n(frl_env_observation_space(e)), cues + 1);
        ck_assert_int_eq(frl_space_n(frl_env_action_space(e)), cues);
        for (uint64_t seed = 0; seed < 20; seed++) {
            int32_t cue, cue2;
            for (int32_t a = 0; a < cues; a++) {
                probe_episode(e, seed, cues, delay, a, &cue);
                if (a > 0)
                    ck_assert_int_eq(cue, cue2); /* a seeded reset is deterministic */
                cue2 = cue;
            }
        }
        frl_env_destroy(e);
        frl_config_destroy(cfg);
    }
    frl_runtime_destroy(rt);
}
END_TEST

/* The defaults: K = 4, D = 20, no time limit but the episode's own end. */
START_TEST(test_probe_defaults)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_env *e = make_env(rt, "MemoryProbe-v0", NULL);
    ck_assert_int_eq(frl_space_n(frl_env_observation_space(e)), 5);
    ck_assert_int_eq(frl_space_n(frl_env_action_space(e)), 4);
    int32_t cue;
    probe_episode(e, 3, 4, 20, 0, &cue);
    frl_env_destroy(e);
    frl_runtime_destroy(rt);
}
END_TEST

/* Each of K cues within 4 sigma of N/K over N = 4000 seeded resets. */
START_TEST(test_probe_cue_distribution)
{
    enum { N = 4000, K = 4 };
    frl_runtime *rt = frl_test_runtime(1);
    frl_env *e = make_env(rt, "MemoryProbe-v0", NULL);
    int counts[K] = {0};
    float obs[K + 1];
    for (uint64_t seed = 0; seed < N; seed++) {
        ck_assert_int_eq(frl_env_reset(e, seed, obs), FRL_OK);
        counts[cue_of(obs, K)]++;
    }
    double mean = (double)N / K, sigma = sqrt(N * (1.0 / K) * (1.0 - 1.0 / K));
    for (int k = 0; k < K; k++)
        ck_assert_msg(fabs(counts[k] - mean) <= 4 * sigma, "cue %d: %d of %d", k, counts[k], N);
    frl_env_destroy(e);
    frl_runtime_destroy(rt);
}
END_TEST

/* Out-of-range settings are refused when set, naming the key and its range. */
START_TEST(test_probe_settings_refused)
{
    static const struct {
        const char *key;
        int64_t value;
    } bad[] = {{"env.memory_cues", 1}, {"env.memory_cues", 65}, {"env.memory_delay", -1},
               {"env.memory_delay", 10001}};
    frl_config *cfg = NULL;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(frl_config_set_int(cfg, bad[i].key, bad[i].value), FRL_ERR_RANGE);
        ck_assert_ptr_nonnull(strstr(frl_config_last_error(cfg), bad[i].key));
        ck_assert_ptr_nonnull(strstr(frl_config_last_error(cfg), "outside"));
    }
    ck_assert_int_eq(frl_config_set(cfg, "env.memory_cues", "64"), FRL_OK);
    ck_assert_int_eq(frl_config_set(cfg, "env.memory_delay", "10000"), FRL_OK);
    frl_config_destroy(cfg);
}
END_TEST

/* Steps from t to the episode's end, recording observations and rewards. */
static int run_to_end(frl_env *e, int32_t cues, float *trace)
{
    int n = 0;
    uint8_t term = 0, trunc = 0;
    for (int32_t a = 0; !term && !trunc; a = (a + 1) % cues) {
        ck_assert_int_eq(frl_env_step(e, &a, trace, trace + cues + 1, &term, &trunc), FRL_OK);
        trace += cues + 2;
        n++;
    }
    return n;
}

/* A state saved mid-episode continues identically when restored, and a state
 * impossible for this K and D is refused. */
START_TEST(test_probe_state)
{
    enum { K = 3, D = 6, W = K + 2, MAX = D + 2 };
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg = probe_config(K, D);
    frl_env *e = make_env(rt, "MemoryProbe-v0", cfg);
    ck_assert_int_eq(frl_env_state_size(e), 3);
    float obs[K + 1], restored[K + 1], first[MAX * W], second[MAX * W];
    float r;
    uint8_t term, trunc;
    for (uint64_t seed = 0; seed < 12; seed++) {
        ck_assert_int_eq(frl_env_reset(e, seed, obs), FRL_OK);
        for (int32_t s = 0; s < (int32_t)(seed % (D + 1)); s++) {
            int32_t a = 0;
            ck_assert_int_eq(frl_env_step(e, &a, obs, &r, &term, &trunc), FRL_OK);
        }
        double state[3];
        ck_assert_int_eq(frl_env_get_state(e, state, 3), FRL_OK);
        int n1 = run_to_end(e, K, first);
        ck_assert_int_eq(frl_env_set_state(e, state, 3, restored), FRL_OK);
        ck_assert_mem_eq(restored, obs, sizeof obs);
        int n2 = run_to_end(e, K, second);
        ck_assert_int_eq(n1, n2);
        ck_assert_mem_eq(first, second, sizeof(float) * (size_t)(n1 * W));
    }
    const double bad[][3] = {{K, 0, 0}, {-1, 0, 0}, {0.5, 0, 0}, {0, D + 3, 0}, {0, -1, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_int_ne(frl_env_set_state(e, bad[i], 3, NULL), FRL_OK);
    frl_env_destroy(e);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* The ended episode's state (t = D + 2, where the answer step leaves it) is refused by
 * set_state, which lets the env be stepped without a reset: a step from it was never
 * the answer, so the episode never ended (t ran on past D + 2, a state get_state then
 * gave and set_state refused). The env keeps its own state. */
START_TEST(test_probe_ended_state_refused)
{
    enum { K = 3, D = 2 };
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg = probe_config(K, D);
    frl_env *e = make_env(rt, "MemoryProbe-v0", cfg);
    float obs[K + 1];
    ck_assert_int_eq(frl_env_reset(e, 5, obs), FRL_OK);
    double before[3], after[3];
    ck_assert_int_eq(frl_env_get_state(e, before, 3), FRL_OK);
    const double ended[3] = {0, D + 2, 0};
    ck_assert_int_eq(frl_env_set_state(e, ended, 3, NULL), FRL_ERR_RANGE);
    /* the message says which states set_state takes */
    const char *msg = frl_env_last_error(e);
    ck_assert_msg(strstr(msg, "t in [0, env.memory_delay + 1]"), "%s", msg);
    ck_assert_int_eq(frl_env_get_state(e, after, 3), FRL_OK);
    ck_assert_mem_eq(before, after, sizeof before);
    const double answering[3] = {0, D + 1, 0}; /* the last state an episode goes on from */
    ck_assert_int_eq(frl_env_set_state(e, answering, 3, NULL), FRL_OK);
    int32_t a = 0;
    float r;
    uint8_t term, trunc;
    ck_assert_int_eq(frl_env_step(e, &a, obs, &r, &term, &trunc), FRL_OK);
    ck_assert(term && r == 1.0f);
    frl_env_destroy(e);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* Through the vec env with more envs than one chunk: every episode is D + 2 steps
 * and returns 1 exactly when the answer is the cue (here the answer is always 0). */
START_TEST(test_probe_vec)
{
    enum { N = 200, K = 5, D = 2 };
    frl_runtime *rt = frl_test_runtime(2);
    frl_config *cfg = probe_config(K, D);
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "MemoryProbe-v0", N, cfg), FRL_OK);
    ck_assert_int_eq(frl_space_n(frl_vec_env_observation_space(v)), K + 1);
    ck_assert_int_eq(frl_vec_env_reset(v, 11), FRL_OK);
    int32_t cue[N];
    for (int i = 0; i < N; i++)
        cue[i] = cue_of(frl_vec_env_observations(v) + i * (K + 1), K);
    memset(frl_vec_env_actions(v), 0, sizeof(int32_t) * N);
    for (int t = 0; t < D + 2; t++)
        ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
    for (int i = 0; i < N; i++) {
        ck_assert(frl_vec_env_terminated(v)[i]);
        ck_assert_int_eq(frl_vec_env_episode_lengths(v)[i], D + 2);
        ck_assert(frl_vec_env_rewards(v)[i] == (cue[i] == 0 ? 1.0f : 0.0f));
    }
    ck_assert_int_eq(frl_vec_env_total_episodes(v), N);
    frl_vec_env_destroy(v);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

static Suite *memory_envs_suite(void)
{
    Suite *s = suite_create("memory_envs");
    TCase *tc = tcase_create("novel");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_novel_matches_cartpole);
    tcase_add_test(tc, test_novel_spaces);
    suite_add_tcase(s, tc);
    TCase *probe = tcase_create("probe");
    tcase_set_timeout(probe, 60);
    tcase_add_test(probe, test_probe_timeline);
    tcase_add_test(probe, test_probe_defaults);
    tcase_add_test(probe, test_probe_cue_distribution);
    tcase_add_test(probe, test_probe_settings_refused);
    tcase_add_test(probe, test_probe_state);
    tcase_add_test(probe, test_probe_ended_state_refused);
    tcase_add_test(probe, test_probe_vec);
    suite_add_tcase(s, probe);
    return s;
}

int main(void)
{
    return frl_test_run(memory_envs_suite());
}
