/* The five probe environments for debugging RL (Andy Jones, "Debugging RL, Without the
 * Agonizing Pain", 2021), each trained by the library through batch callbacks over 5
 * seeds. Each isolates one part of the learner:
 *   1 constant reward:          the value learns a constant (V = 1);
 *   2 observation-dependent:    the value reads the observation (V(+1) = 1, V(-1) = 0);
 *   3 two-step discounting:     the value discounts (V(0) = gamma, V(1) = 1);
 *   4 action-dependent reward:  the policy learns (greedy action 0, V = 1);
 *   5 action and observation:   the policy reads the observation (greedy = obs > 0).
 * The bars: value error <= 0.05 and the greedy action right in every state, with GAE
 * and with V-trace advantages. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

typedef struct probe {
    int kind;
    float obs[64];
    int t[64];
} probe;

static float draw_sign(uint64_t seed)
{
    seed = (seed ^ (seed >> 31)) * 0x9e3779b97f4a7c15ULL;
    return (seed >> 40) & 1 ? 1.0f : -1.0f;
}

static void start(probe *p, int i, uint64_t seed)
{
    p->t[i] = 0;
    p->obs[i] = (p->kind == 2 || p->kind == 5) ? draw_sign(seed) : 0.0f;
}

static int probe_reset(void *user, int32_t n, const uint64_t *seeds, float *obs)
{
    probe *p = user;
    for (int32_t i = 0; i < n; i++) {
        start(p, i, seeds[i]);
        obs[i] = p->obs[i];
    }
    return 0;
}

static float reward_of(const probe *p, int i, int32_t a)
{
    switch (p->kind) {
    case 1: return 1.0f;
    case 2: return p->obs[i] > 0 ? 1.0f : 0.0f;
    case 3: return p->t[i] == 1 ? 1.0f : 0.0f;
    case 4: return a == 0 ? 1.0f : 0.0f;
    default: return a == (p->obs[i] > 0) ? 1.0f : 0.0f;
    }
}

static int probe_step(void *user, int32_t n, const void *actions, const uint8_t *reset_mask,
                      const uint64_t *seeds, float *obs, float *rewards, uint8_t *term,
                      uint8_t *trunc)
{
    probe *p = user;
    const int32_t *a = actions;
    for (int32_t i = 0; i < n; i++) {
        trunc[i] = 0;
        if (reset_mask[i]) {
            start(p, i, seeds[i]);
        } else {
            rewards[i] = reward_of(p, i, a[i]);
            p->t[i]++;
            term[i] = p->kind != 3 || p->t[i] == 2;
            p->obs[i] = p->kind == 3 ? (float)p->t[i] : p->obs[i];
        }
        obs[i] = p->obs[i];
    }
    return 0;
}

typedef struct expect {
    float obs;
    float value;
    int action; /* -1: any */
} expect;

static void check_policy(frl_policy *pol, const expect *e, int n, int kind, int seed)
{
    for (int k = 0; k < n; k++) {
        frl_act_args a;
        int32_t act;
        float value;
        frl_act_args_init(&a);
        frl_test_act_widths(&a, pol);
        a.batch = 1;
        a.observations = &e[k].obs;
        a.actions = &act;
        a.values = &value;
        a.deterministic = 1;
        ck_assert_int_eq(frl_policy_act(pol, &a), FRL_OK);
        printf("probe %d seed %d: obs %+.0f value %.4f (want %.4f) action %d\n", kind, seed,
               (double)e[k].obs, (double)value, (double)e[k].value, (int)act);
        ck_assert_msg(fabsf(value - e[k].value) <= 0.05f, "probe %d seed %d obs %g: value %g, want %g",
                      kind, seed, (double)e[k].obs, (double)value, (double)e[k].value);
        if (e[k].action >= 0)
            ck_assert_msg(act == e[k].action, "probe %d seed %d obs %g: action %d, want %d", kind,
                          seed, (double)e[k].obs, (int)act, e[k].action);
    }
}

static void train_probe(int kind, int seed, const expect *e, int n, const char *advantage)
{
    frl_config *cfg;
    frl_runtime *rt;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_parse(cfg, "runtime.threads=2 train.lr=1e-3 train.rollout=32 "
                                           "train.ent_coef=0 train.num_envs=8"), FRL_OK);
    ck_assert_int_eq(frl_config_set(cfg, "train.advantage", advantage), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "runtime.seed", seed), FRL_OK);
    ck_assert_int_eq(frl_runtime_create(&rt, cfg, NULL, NULL), FRL_OK);
    frl_space *os, *as;
    int64_t shape = 1;
    ck_assert_int_eq(frl_space_create_box(&os, NULL, 1, &shape, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 2), FRL_OK);
    probe p = {kind, {0}, {0}};
    frl_batch_env_callbacks cb;
    frl_batch_env_callbacks_init(&cb);
    cb.reset = probe_reset;
    cb.step = probe_step;
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create_batch(&v, rt, &cb, &p, 8, os, as, cfg), FRL_OK);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create_vec(&t, rt, v, cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 12000), FRL_OK);
    check_policy(frl_trainer_policy(t), e, n, kind, seed);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
    frl_config_destroy(cfg);
}

static const expect probe_expect[5][2] = {
    {{0, 1.0f, -1}},
    {{1, 1.0f, -1}, {-1, 0.0f, -1}},
    {{0, 0.99f, -1}, {1, 1.0f, -1}},
    {{0, 1.0f, 0}},
    {{1, 1.0f, 1}, {-1, 1.0f, 0}},
};
static const int probe_states[5] = {1, 2, 2, 1, 2};

/* Seeds per probe: five in the plain builds; one under a sanitizer, where the runs check
 * the code paths and the plain builds the learning (test_util.h). */
enum { PROBE_SEEDS = FRL_TEST_SHORT ? 1 : 5, PROBE_RUNS = 5 * PROBE_SEEDS };

/* Runs [0, PROBE_RUNS) with GAE, the next PROBE_RUNS with V-trace: the same bars. */
START_TEST(probe_solved)
{
    int kind = _i % PROBE_RUNS / PROBE_SEEDS + 1, seed = _i % PROBE_SEEDS + 1;
    train_probe(kind, seed, probe_expect[kind - 1], probe_states[kind - 1],
                _i < PROBE_RUNS ? "gae" : "vtrace");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("probes");
    TCase *tc = tcase_create("probes");
    tcase_set_timeout(tc, 600);
    if (FRL_TEST_SHORT)
        printf("short build (a sanitizer or a second build): one seed per probe and "
               "advantage (five in the whole build)\n");
    tcase_add_loop_test(tc, probe_solved, 0, 2 * PROBE_RUNS);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
