/* Neuroevolution: batched per-member acting (bit-identical to each member acting
 * alone), the evaluation engine's routing of rows to members and its episode cap, ES
 * and GA through ask/tell (antithetic pairs, improvement, genomes rebuilt bit for bit,
 * save and load, bad input leaving the optimiser unchanged), and train.algo=es|ga on
 * the trainer (learning CartPole, resuming exactly). */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fastrl.h"
#include "rl/policy.h"
#include "rl/population.h"
#include "test_util.h"
#include "trainer_checks.h"

/* ---- populations ---- */

static frl_policy *make_policy(frl_runtime *rt, const char *env, const char *settings)
{
    frl_env *e;
    ck_assert_int_eq(frl_env_create(&e, rt, env, NULL), FRL_OK);
    frl_config *cfg = frl_test_settings(settings);
    frl_policy *p;
    ck_assert_int_eq(frl_policy_create(&p, rt, cfg, frl_env_observation_space(e),
                                       frl_env_action_space(e)), FRL_OK);
    frl_config_destroy(cfg);
    frl_env_destroy(e);
    return p;
}

/* Members made different: each parameter moved by a member-dependent amount. */
static void perturb(frl_population *pop, uint32_t salt)
{
    float *w = frl_population_parameters(pop);
    int64_t n = frl_population_member_size(pop);
    for (int32_t m = 0; m < frl_population_members(pop); m++)
        for (int64_t j = 0; j < n; j++) {
            uint32_t h = (uint32_t)(m * 2654435761u) ^ (uint32_t)(j * 40503u) ^ salt;
            w[m * n + j] += 0.3f * ((float)(h % 1000) / 1000.0f - 0.5f);
        }
}

/* A member copied into another policy acts as it did in the population, its normaliser
 * included: the copy once took the parameters alone (a fresh policy's statistics, or
 * none with policy.obs_norm=false, acted as another network with FRL_OK). A policy
 * with another policy.obs_norm or obs_clip is refused, naming the key. */
START_TEST(copy_carries_the_normaliser)
{
    frl_runtime *rt = frl_test_runtime(1);
    const char *settings = "policy.hidden=16 policy.obs_norm=true";
    frl_policy *p = make_policy(rt, "Pendulum-v1", settings);
    frl_population *pop;
    ck_assert_int_eq(frl_population_create(&pop, p, 3), FRL_OK);
    perturb(pop, 5);
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "Pendulum-v1", 4, NULL), FRL_OK);
    frl_population_eval_args a;
    frl_population_eval_args_init(&a);
    a.update_obs_norm = 1;
    a.max_episode_steps = 50;
    ck_assert_int_eq(frl_population_evaluate(pop, v, &a, NULL), FRL_OK);
    float obs[3] = {0.3f, -0.9f, 4.0f}, got, want;
    int32_t member = 1;
    frl_population_act_args pa;
    frl_population_act_args_init(&pa);
    pa.batch = 1;
    pa.observations = obs;
    pa.members = &member;
    pa.actions = &got;
    pa.deterministic = 1;
    pa.observation_width = 3;
    pa.action_width = 1;
    ck_assert_int_eq(frl_population_act(pop, &pa), FRL_OK);
    frl_policy *q = make_policy(rt, "Pendulum-v1", settings);
    ck_assert_int_eq(frl_population_copy_to_policy(pop, member, q), FRL_OK);
    frl_act_args b;
    frl_act_args_init(&b);
    b.batch = 1;
    b.observations = obs;
    b.actions = &want;
    b.deterministic = 1;
    frl_test_act_widths(&b, q);
    ck_assert_int_eq(frl_policy_act(q, &b), FRL_OK);
    ck_assert_msg(got == want, "the population acts %.9g, the copy %.9g", (double)got,
                  (double)want);
    frl_policy_destroy(q);
    const char *other[] = {"policy.hidden=16 policy.obs_norm=false",
                           "policy.hidden=16 policy.obs_norm=true policy.obs_clip=5"};
    const char *key[] = {"policy.obs_norm", "policy.obs_clip"};
    for (int k = 0; k < 2; k++) {
        q = make_policy(rt, "Pendulum-v1", other[k]);
        ck_assert_int_eq(frl_population_copy_to_policy(pop, member, q),
                         FRL_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(frl_last_error(), key[k]), "%s", frl_last_error());
        frl_policy_destroy(q);
    }
    frl_vec_env_destroy(v);
    frl_population_destroy(pop);
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
}
END_TEST

/* Row i of a batched call against a policy holding member members[i], same streams. */
static void check_matches_members(const char *env, int32_t batch, int deterministic)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_policy *p = make_policy(rt, env, "policy.hidden=64,64");
    frl_policy *q = make_policy(rt, env, "policy.hidden=64,64");
    frl_population *pop;
    const int32_t P = 7;
    ck_assert_int_eq(frl_population_create(&pop, p, P), FRL_OK);
    perturb(pop, 17);
    int64_t ow = frl_space_width(frl_policy_observation_space(p));
    int64_t aw = frl_space_width(frl_policy_action_space(p));
    int discrete = frl_space_get_kind(frl_policy_action_space(p)) == FRL_SPACE_DISCRETE;
    size_t ab = discrete ? sizeof(int32_t) : sizeof(float) * (size_t)aw;
    float *obs = malloc(sizeof(float) * (size_t)batch * (size_t)ow);
    int32_t *mem = malloc(sizeof(int32_t) * (size_t)batch);
    unsigned char *got = malloc(ab * (size_t)batch), *want = malloc(ab * (size_t)batch);
    for (int32_t i = 0; i < batch; i++) {
        mem[i] = (int32_t)((i * 7919u + 13u) % (uint32_t)P);
        for (int64_t k = 0; k < ow; k++)
            obs[i * ow + k] = (float)sin(0.37 * i + k);
    }
    frl_population_act_args a;
    frl_population_act_args_init(&a);
    a.batch = batch;
    a.observations = obs;
    a.members = mem;
    a.actions = got;
    a.deterministic = deterministic;
    a.stream_offset = 5;
    a.counter = 11;
    a.observation_width = ow;
    a.action_width = aw;
    ck_assert_int_eq(frl_population_act(pop, &a), FRL_OK);
    for (int32_t m = 0; m < P; m++) {
        ck_assert_int_eq(frl_population_copy_to_policy(pop, m, q), FRL_OK);
        frl_act_args b;
        frl_act_args_init(&b);
        b.batch = batch;
        b.observations = obs;
        b.actions = want;
        b.deterministic = deterministic;
        b.stream_offset = 5;
        b.counter = 11;
        frl_test_act_widths(&b, q);
        ck_assert_int_eq(frl_policy_act(q, &b), FRL_OK);
        for (int32_t i = 0; i < batch; i++)
            if (mem[i] == m)
                ck_assert_msg(memcmp(got + ab * (size_t)i, want + ab * (size_t)i, ab) == 0,
                              "%s row %d (member %d) differs", env, (int)i, (int)m);
    }
    free(obs);
    free(mem);
    free(got);
    free(want);
    frl_population_destroy(pop);
    frl_policy_destroy(p);
    frl_policy_destroy(q);
    frl_runtime_destroy(rt);
}

START_TEST(act_matches_each_member)
{
    check_matches_members("CartPole-v1", 300, 0);
    check_matches_members("CartPole-v1", 5000, 1); /* two blocks of the sort */
    check_matches_members("Pendulum-v1", 300, 0);  /* the shared log-std */
}
END_TEST

START_TEST(act_bad_input)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_policy *p = make_policy(rt, "CartPole-v1", "policy.hidden=8");
    frl_population *pop;
    ck_assert_int_eq(frl_population_create(&pop, p, 0), FRL_ERR_RANGE);
    ck_assert_ptr_null(pop);
    ck_assert_int_eq(frl_population_create(&pop, NULL, 4), FRL_ERR_NULL);
    ck_assert_int_eq(frl_population_create(&pop, p, 4), FRL_OK);
    float obs[8] = {0};
    int32_t mem[2] = {1, 4}, act[2] = {-7, -7};
    frl_population_act_args a;
    frl_population_act_args_init(&a);
    a.batch = 2;
    a.observations = obs;
    a.members = mem;
    a.actions = act;
    a.observation_width = 4;
    a.action_width = 1;
    ck_assert_int_eq(frl_population_act(pop, &a), FRL_ERR_RANGE);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "row 1 names member 4"));
    ck_assert_int_eq(act[0], -7); /* nothing written */
    mem[1] = 3;
    obs[5] = NAN;
    ck_assert_int_eq(frl_population_act(pop, &a), FRL_ERR_NONFINITE);
    ck_assert_int_eq(act[0], -7);
    obs[5] = 0;
    /* The host's parameter block holds a NaN in member 3's row: its rows' outputs are
     * not finite, and the call says so, naming the member. */
    float *w = frl_population_parameters(pop);
    float kept = w[3 * frl_population_member_size(pop)];
    w[3 * frl_population_member_size(pop)] = NAN;
    ck_assert_int_eq(frl_population_act(pop, &a), FRL_ERR_NONFINITE);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "member 3's network"));
    w[3 * frl_population_member_size(pop)] = kept;
    ck_assert_int_eq(frl_population_act(pop, &a), FRL_OK);
    a.observation_width = 3;
    ck_assert_int_eq(frl_population_act(pop, &a), FRL_ERR_SIZE);
    a.observation_width = 4;
    a.struct_size = 8;
    ck_assert_int_eq(frl_population_act(pop, &a), FRL_ERR_VERSION);
    frl_population_act_args_init(&a);
    ck_assert_int_eq(frl_population_act(pop, &a), FRL_ERR_NULL);
    ck_assert_int_eq(frl_population_copy_to_policy(pop, 4, p), FRL_ERR_RANGE);
    frl_policy *other = make_policy(rt, "CartPole-v1", "policy.hidden=16");
    ck_assert_int_eq(frl_population_copy_to_policy(pop, 0, other), FRL_ERR_SIZE);
    frl_policy_destroy(other);
    /* as many parameters, another network: refused, the key named, the policy kept */
    other = make_policy(rt, "CartPole-v1", "policy.hidden=8 policy.activation=relu");
    uint64_t version = frl_policy_version(other);
    ck_assert_int_eq(frl_population_copy_to_policy(pop, 0, other), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "policy.activation"));
    ck_assert_uint_eq(frl_policy_version(other), version);
    frl_policy *gru = make_policy(rt, "CartPole-v1", "policy.core=gru policy.hidden=8");
    frl_population *bad;
    ck_assert_int_eq(frl_population_create(&bad, gru, 4), FRL_ERR_UNSUPPORTED);
    frl_policy_destroy(gru);
    /* a dueling Q's V head lies past a member's row (the actor's end): refused, named */
    frl_policy *duel = make_policy(rt, "CartPole-v1", "policy.head=dueling_q policy.hidden=8");
    ck_assert_int_eq(frl_population_create(&bad, duel, 4), FRL_ERR_UNSUPPORTED);
    ck_assert_ptr_null(bad);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "dueling_q"));
    frl_policy_destroy(duel);
    frl_policy *q = make_policy(rt, "CartPole-v1", "policy.head=q policy.hidden=8");
    ck_assert_int_eq(frl_population_create(&bad, q, 4), FRL_OK); /* a plain Q-head is its actor */
    frl_population_destroy(bad);
    frl_policy_destroy(q);
    frl_policy_destroy(other);
    frl_population_destroy(pop);
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- populations and optimisers that do not fit in memory ---- */

START_TEST(too_large_for_memory)
{
    size_t cap = (size_t)64 << 20; /* as a machine without the memory would */
    frl_allocator al = frl_test_capped_allocator(&cap);
    frl_runtime *rt;
    ck_assert_int_eq(frl_runtime_create(&rt, NULL, &al, NULL), FRL_OK);
    frl_policy *p = make_policy(rt, "CartPole-v1", "policy.hidden=64,64");
    frl_population *pop;
    ck_assert_int_eq(frl_population_create(&pop, p, 100000), FRL_ERR_NOMEM);
    ck_assert_ptr_null(pop);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "100000 members"));
    /* The same members fit in pieces: the library is still usable. */
    ck_assert_int_eq(frl_population_create(&pop, p, 100), FRL_OK);
    frl_population_destroy(pop);
    frl_config *cfg = frl_test_settings("train.algo=ga ga.population=100000");
    float init[4610] = {0};
    frl_evo *e;
    ck_assert_int_eq(frl_evo_create(&e, rt, cfg, 4610, init), FRL_ERR_NOMEM);
    ck_assert_ptr_null(e);
    frl_config_destroy(cfg);
    cfg = frl_test_settings("train.algo=es es.noise_floats=100000000");
    ck_assert_int_eq(frl_evo_create(&e, rt, cfg, 4610, init), FRL_ERR_NOMEM);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "noise table"));
    frl_config_destroy(cfg);
    size_t bytes;
    cfg = frl_test_settings("train.algo=ga ga.population=100000");
    ck_assert_int_eq(frl_evo_memory_size(cfg, 4610, &bytes), FRL_OK);
    ck_assert_uint_gt(bytes, (size_t)100000 * 4610 * 4);
    frl_config_destroy(cfg);
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- the evaluation engine on a host env: reward = the action, 5 steps an episode ---- */

typedef struct counter_env {
    int32_t t;
} counter_env;

static int ce_reset(void *user, uint64_t seed, float *obs)
{
    (void)seed;
    ((counter_env *)user)->t = 0;
    obs[0] = 0;
    return 0;
}

static int ce_step(void *user, const void *action, float *obs, float *reward, uint8_t *term,
                   uint8_t *trunc)
{
    counter_env *c = user;
    c->t++;
    obs[0] = (float)c->t / 5.0f;
    *reward = (float)*(const int32_t *)action;
    *term = c->t == 5;
    *trunc = 0;
    return 0;
}

typedef int (*host_step_fn)(void *user, const void *action, float *obs, float *reward,
                            uint8_t *term, uint8_t *trunc);

/* n host envs of a box [0, 1] observation and two actions, stepped by step. */
static frl_vec_env *host_vec(frl_runtime *rt, int32_t n, counter_env *envs, host_step_fn step)
{
    frl_space *os, *as;
    int64_t shape[1] = {1};
    float lo[1] = {0}, hi[1] = {1};
    ck_assert_int_eq(frl_space_create_box(&os, NULL, 1, shape, lo, hi), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 2), FRL_OK);
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = ce_reset;
    cb.step = step;
    void *users[16];
    for (int32_t i = 0; i < n; i++)
        users[i] = &envs[i];
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, n, os, as, NULL), FRL_OK);
    frl_space_destroy(os);
    frl_space_destroy(as);
    return v;
}

/* Member m picks action 1 when m is odd: its output bias says so. */
static void set_choices(frl_population *pop, const frl_policy *p)
{
    const frl_mlp *a = &p->actor;
    size_t b = a->off_b[a->layers - 1];
    float *w = frl_population_parameters(pop);
    for (int32_t m = 0; m < frl_population_members(pop); m++) {
        w[(size_t)m * (size_t)frl_population_member_size(pop) + b] = m % 2 ? -50.0f : 50.0f;
        w[(size_t)m * (size_t)frl_population_member_size(pop) + b + 1] = m % 2 ? 50.0f : -50.0f;
    }
}

START_TEST(evaluate_routes_members)
{
    frl_runtime *rt = frl_test_runtime(2);
    counter_env envs[3];
    frl_vec_env *v = host_vec(rt, 3, envs, ce_step);
    frl_policy *p;
    frl_config *cfg = frl_test_settings("policy.hidden=8");
    ck_assert_int_eq(frl_policy_create(&p, rt, cfg, frl_vec_env_observation_space(v),
                                       frl_vec_env_action_space(v)), FRL_OK);
    frl_config_destroy(cfg);
    frl_population *pop;
    ck_assert_int_eq(frl_population_create(&pop, p, 6), FRL_OK);
    set_choices(pop, p);
    double ret[6], len[6];
    int64_t steps[6], total = 0;
    frl_population_eval_args a;
    frl_population_eval_args_init(&a);
    a.episodes = 4;
    a.returns = ret;
    a.lengths = len;
    a.steps = steps;
    ck_assert_int_eq(frl_population_evaluate(pop, v, &a, &total), FRL_OK);
    for (int32_t m = 0; m < 6; m++) {
        ck_assert_double_eq(ret[m], m % 2 ? 5.0 : 0.0);
        ck_assert_double_eq(len[m], 5.0);
        ck_assert_int_eq(steps[m], 20);
    }
    ck_assert_int_eq(total, 6 * 4 * 5);
    /* The cap: episodes cut after 3 steps; the envs run them out before the next. */
    a.max_episode_steps = 3;
    ck_assert_int_eq(frl_population_evaluate(pop, v, &a, &total), FRL_OK);
    for (int32_t m = 0; m < 6; m++) {
        ck_assert_double_eq(ret[m], m % 2 ? 3.0 : 0.0);
        ck_assert_int_eq(steps[m], 12);
    }
    /* Two groups, pipelined: the same per-member results; envs with nothing left to run
     * are not stepped (the vec envs count every step they take). */
    counter_env more[2];
    frl_vec_env *w = host_vec(rt, 2, more, ce_step);
    frl_vec_env *both[2] = {v, w};
    a.max_episode_steps = 0;
    int64_t before = frl_vec_env_total_steps(v) + frl_vec_env_total_steps(w);
    ck_assert_int_eq(frl_population_evaluate_groups(pop, both, 2, &a, &total), FRL_OK);
    for (int32_t m = 0; m < 6; m++)
        ck_assert_double_eq(ret[m], m % 2 ? 5.0 : 0.0);
    ck_assert_int_eq(total, 6 * 4 * 5);
    int64_t taken = frl_vec_env_total_steps(v) + frl_vec_env_total_steps(w) - before;
    /* 24 episodes of 5 steps, a reset step before each episode but the first 5, and the
     * envs still running when the last episode ends: fewer than 5 envs x 30 steps */
    ck_assert_int_ge(taken, 120 + 24 - 5);
    ck_assert_int_lt(taken, 120 + 24 + 5 * 5);
    both[1] = v;
    ck_assert_int_eq(frl_population_evaluate_groups(pop, both, 2, &a, &total),
                     FRL_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(frl_population_evaluate_groups(pop, both, 3, &a, &total), FRL_ERR_RANGE);
    /* messages name the call made and its parameter (both once said
     * "frl_population_evaluate: venv") */
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "frl_population_evaluate_groups: count 3"));
    ck_assert_int_eq(frl_population_evaluate_groups(pop, NULL, 1, &a, &total), FRL_ERR_NULL);
    ck_assert_str_eq(frl_last_error(), "frl_population_evaluate_groups: venvs is NULL");
    ck_assert_int_eq(frl_population_evaluate(pop, NULL, &a, &total), FRL_ERR_NULL);
    ck_assert_str_eq(frl_last_error(), "frl_population_evaluate: venv is NULL");
    frl_vec_env_destroy(w);
    /* Bad arguments. */
    a.episodes = 0;
    ck_assert_int_eq(frl_population_evaluate(pop, v, &a, &total), FRL_ERR_RANGE);
    a.episodes = 1;
    a.update_obs_norm = 1;
    ck_assert_int_eq(frl_population_evaluate(pop, v, &a, &total), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(frl_population_evaluate(pop, NULL, &a, &total), FRL_ERR_NULL);
    frl_vec_env *cp;
    ck_assert_int_eq(frl_vec_env_create(&cp, rt, "CartPole-v1", 2, NULL), FRL_OK);
    a.update_obs_norm = 0;
    ck_assert_int_eq(frl_population_evaluate(pop, cp, &a, &total), FRL_ERR_SIZE);
    frl_vec_env_destroy(cp);
    frl_population_destroy(pop);
    frl_policy_destroy(p);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* Reward 2^(t-1) x the action at step t of 20: a return spells out its episode's
 * actions. */
static int binary_step(void *user, const void *action, float *obs, float *reward,
                       uint8_t *term, uint8_t *trunc)
{
    counter_env *c = user;
    c->t++;
    obs[0] = 0.5f;
    *reward = (float)*(const int32_t *)action * (float)(1 << (c->t - 1));
    *term = c->t == 20;
    *trunc = 0;
    return 0;
}

/* Two groups of one host env each, and a population of two equal members of an
 * 8-unit policy on their spaces. */
typedef struct two_groups {
    frl_runtime *rt;
    counter_env envs[2];
    frl_vec_env *v[2];
    frl_policy *p;
    frl_population *pop;
} two_groups;

static void two_groups_make(two_groups *g, host_step_fn step)
{
    g->rt = frl_test_runtime(2);
    for (int k = 0; k < 2; k++)
        g->v[k] = host_vec(g->rt, 1, &g->envs[k], step);
    frl_config *cfg = frl_test_settings("policy.hidden=8");
    ck_assert_int_eq(frl_policy_create(&g->p, g->rt, cfg, frl_vec_env_observation_space(g->v[0]),
                                       frl_vec_env_action_space(g->v[0])), FRL_OK);
    frl_config_destroy(cfg);
    ck_assert_int_eq(frl_population_create(&g->pop, g->p, 2), FRL_OK);
}

static void two_groups_free(two_groups *g)
{
    frl_population_destroy(g->pop);
    frl_policy_destroy(g->p);
    frl_vec_env_destroy(g->v[0]);
    frl_vec_env_destroy(g->v[1]);
    frl_runtime_destroy(g->rt);
}

/* Sampled evaluation over two groups: the first env of each draws from its own stream,
 * so two equal members running side by side do not act alike step for step. */
START_TEST(evaluate_groups_sample_apart)
{
    two_groups g;
    two_groups_make(&g, binary_step);
    double ret[2];
    frl_population_eval_args a;
    frl_population_eval_args_init(&a);
    a.deterministic = 0;
    a.returns = ret;
    ck_assert_msg(frl_population_evaluate_groups(g.pop, g.v, 2, &a, NULL) == FRL_OK, "%s",
                  frl_last_error());
    /* member 0 ran in group 0's env, member 1 in group 1's */
    ck_assert_msg(ret[0] != ret[1], "both groups sampled the actions %.0f", ret[0]);
    two_groups_free(&g);
}
END_TEST

/* Two groups, pipelined: a failure of the group acting on the pool's other thread is
 * reported with its own message, not the calling thread's last one. Repeated, since
 * which thread takes which half varies. */
START_TEST(evaluate_groups_report_their_failure)
{
    two_groups g;
    two_groups_make(&g, ce_step);
    /* member 1, group 1's first job, acts with a NaN weight */
    frl_population_parameters(g.pop)[frl_population_member_size(g.pop)] = NAN;
    frl_population_eval_args a;
    frl_population_eval_args_init(&a);
    for (int i = 0; i < 50; i++) {
        ck_assert_int_eq(frl_population_evaluate_groups(g.pop, g.v, 2, &a, NULL),
                         FRL_ERR_NONFINITE);
        ck_assert_msg(strstr(frl_last_error(), "member 1's network"), "%s", frl_last_error());
        ck_assert_msg(strstr(frl_population_last_error(g.pop), "member 1's network"), "%s",
                      frl_population_last_error(g.pop));
    }
    two_groups_free(&g);
}
END_TEST

/* ---- ask/tell ---- */

enum { N = 20 };

static void quadratic(const float *x, int32_t P, int64_t n, double *f)
{
    for (int32_t i = 0; i < P; i++) {
        double s = 0;
        for (int64_t j = 0; j < n; j++)
            s -= (x[i * n + j] - 3.0) * (x[i * n + j] - 3.0);
        f[i] = s;
    }
}

static frl_evo *make_evo(frl_runtime *rt, const char *settings)
{
    frl_config *cfg = frl_test_settings(settings);
    float init[N] = {0};
    frl_evo *e;
    ck_assert_int_eq(frl_evo_create(&e, rt, cfg, N, init), FRL_OK);
    frl_config_destroy(cfg);
    return e;
}

static const char es_settings[] =
    "train.algo=es es.population=32 es.sigma=0.1 es.lr=0.1 es.noise_floats=100000 "
    "es.weight_decay=0";
static const char ga_settings[] =
    "train.algo=ga ga.population=64 ga.truncation=10 ga.elites=2 ga.sigma=0.1 ga.init_sigma=1";

/* Generations of the quadratic; returns the distance of the kept point from the optimum. */
static double optimise(frl_evo *e, int generations)
{
    int32_t P = frl_evo_population(e);
    float *x = malloc(sizeof(float) * (size_t)P * N), best[N];
    double *f = malloc(sizeof(double) * (size_t)P);
    for (int g = 0; g < generations; g++) {
        ck_assert_int_eq(frl_evo_ask(e, x, (int64_t)P * N), FRL_OK);
        quadratic(x, P, N, f);
        ck_assert_int_eq(frl_evo_tell(e, f, P), FRL_OK);
    }
    ck_assert_int_eq(frl_evo_best(e, best, N, NULL), FRL_OK);
    double d = 0;
    for (int j = 0; j < N; j++)
        d += (best[j] - 3.0) * (best[j] - 3.0);
    free(x);
    free(f);
    return sqrt(d);
}

START_TEST(es_ask_tell)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_evo *e = make_evo(rt, es_settings);
    float x[32 * N], y[32 * N];
    double f[32];
    ck_assert_int_eq(frl_evo_tell(e, f, 32), FRL_ERR_STATE);
    ck_assert_int_eq(frl_evo_ask(e, x, 32 * N), FRL_OK);
    ck_assert_int_eq(frl_evo_ask(e, y, 32 * N), FRL_OK);
    ck_assert_int_eq(memcmp(x, y, sizeof x), 0);
    for (int j = 0; j < N; j++) /* antithetic: theta + d and theta - d around theta = 0 */
        ck_assert_float_eq(x[j], -x[N + j]);
    ck_assert_int_eq(frl_evo_ask(e, x, 31 * N), FRL_ERR_SIZE);
    quadratic(x, 32, N, f);
    f[3] = NAN;
    ck_assert_int_eq(frl_evo_tell(e, f, 32), FRL_ERR_NONFINITE);
    ck_assert_int_eq(frl_evo_generation(e), 0);
    ck_assert_int_eq(frl_evo_tell(e, f, 31), FRL_ERR_SIZE);
    uint64_t seeds[4];
    int32_t len = 7;
    ck_assert_int_eq(frl_evo_genome(e, 0, seeds, 4, &len), FRL_ERR_UNSUPPORTED);
    ck_assert_int_eq(len, 7); /* left as it was (it was zeroed) */
    double start = sqrt(9.0 * N);
    double d = optimise(e, 300);
    ck_assert_msg(d < 0.1 * start, "ES ended %g from the optimum (started %g)", d, start);
    ck_assert_int_eq(frl_evo_generation(e), 300);
    frl_evo_destroy(e);
    frl_config *cfg = frl_test_settings("train.algo=es es.population=3");
    float init[N] = {0};
    ck_assert_int_eq(frl_evo_create(&e, rt, cfg, N, init), FRL_ERR_RANGE);
    frl_config_destroy(cfg);
    cfg = frl_test_settings("train.algo=ppo");
    ck_assert_int_eq(frl_evo_create(&e, rt, cfg, N, init), FRL_ERR_INVALID_ARGUMENT);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* Tied fitnesses carry no information: members that tie share their centred rank, so
 * a flat generation (every episode hit the time limit, or none scored) does not move
 * the centre, and a pair whose two members tie adds nothing to the estimate. */
START_TEST(es_ties_move_nothing)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_evo *e = make_evo(rt, es_settings);
    float x[32 * N], before[N], after[N];
    double f[32];
    ck_assert_int_eq(frl_evo_best(e, before, N, NULL), FRL_OK);
    for (int g = 0; g < 3; g++) {
        ck_assert_int_eq(frl_evo_ask(e, x, 32 * N), FRL_OK);
        for (int i = 0; i < 32; i++)
            f[i] = 500.0;
        ck_assert_int_eq(frl_evo_tell(e, f, 32), FRL_OK);
    }
    ck_assert_int_eq(frl_evo_best(e, after, N, NULL), FRL_OK);
    for (int j = 0; j < N; j++)
        ck_assert_msg(after[j] == before[j], "a flat generation moved theta[%d] to %g", j,
                      (double)after[j]);
    frl_evo_destroy(e);
    frl_runtime_destroy(rt);
}
END_TEST

/* Finite fitnesses near DBL_MAX: ES's mean fitness stays finite (it summed to inf), and
 * a GA tell that would carry an elite's sum beyond a double is refused whole (the sum
 * became inf, ranked above everything and made every later save fail). */
static void tell_all(frl_evo *e, double value, frl_status want)
{
    int32_t P = frl_evo_population(e);
    float *x = malloc(sizeof(float) * (size_t)P * N);
    double *f = malloc(sizeof(double) * (size_t)P);
    for (int32_t i = 0; i < P; i++)
        f[i] = value;
    ck_assert_int_eq(frl_evo_ask(e, x, (int64_t)P * N), FRL_OK);
    ck_assert_int_eq(frl_evo_tell(e, f, P), want);
    free(x);
    free(f);
}

START_TEST(huge_fitnesses)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/frl_evo_huge_%d.frl", (int)getpid());
    frl_runtime *rt = frl_test_runtime(1);
    frl_evo *e = make_evo(rt, es_settings);
    float best[N];
    double fit;
    tell_all(e, 1.5e308, FRL_OK);
    ck_assert_int_eq(frl_evo_best(e, best, N, &fit), FRL_OK);
    ck_assert_msg(fabs(fit / 1.5e308 - 1) < 1e-12, "ES's mean fitness %g", fit);
    /* a failed call leaves *fitness as it was (it wrote NaN) */
    ck_assert_int_eq(frl_evo_best(e, best, N - 1, &fit), FRL_ERR_SIZE);
    ck_assert_msg(fabs(fit / 1.5e308 - 1) < 1e-12, "after a failed best: %g", fit);
    ck_assert_int_eq(frl_evo_save(e, path), FRL_OK);
    frl_evo_destroy(e);
    e = make_evo(rt, ga_settings);
    tell_all(e, 1.5e308, FRL_OK);
    tell_all(e, 1.5e308, FRL_ERR_RANGE);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "beyond a double's range"));
    ck_assert_int_eq(frl_evo_generation(e), 1);
    tell_all(e, -1e308, FRL_OK);
    ck_assert_int_eq(frl_evo_best(e, best, N, &fit), FRL_OK);
    ck_assert(isfinite(fit));
    ck_assert_int_eq(frl_evo_save(e, path), FRL_OK);
    remove(path);
    frl_evo_destroy(e);
    frl_runtime_destroy(rt);
}
END_TEST

/* A centre of 1e30s (a diverged run, or a host's initial vector) with weight decay: the
 * update's second moment leaves float's range. The tell is FRL_ERR_NONFINITE with the
 * optimiser unchanged; it had returned FRL_OK with v = inf (and theta NaN later), and
 * every save then failed. */
START_TEST(es_diverging_update_refused)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/frl_evo_div_%d.frl", (int)getpid());
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg = frl_test_settings("train.algo=es es.population=8 es.sigma=0.1 es.lr=0.1 "
                                        "es.noise_floats=4096 es.weight_decay=0.01");
    float init[N], before[N], after[N], x[8 * N];
    double f[8];
    for (int j = 0; j < N; j++)
        init[j] = 1e30f;
    frl_evo *e = NULL;
    ck_assert_int_eq(frl_evo_create(&e, rt, cfg, N, init), FRL_OK);
    ck_assert_int_eq(frl_evo_best(e, before, N, NULL), FRL_OK);
    ck_assert_int_eq(frl_evo_ask(e, x, 8 * N), FRL_OK);
    for (int i = 0; i < 8; i++)
        f[i] = i;
    ck_assert_int_eq(frl_evo_tell(e, f, 8), FRL_ERR_NONFINITE);
    ck_assert_msg(strstr(frl_last_error(), "diverged"), "%s", frl_last_error());
    ck_assert_int_eq(frl_evo_generation(e), 0);
    ck_assert_int_eq(frl_evo_best(e, after, N, NULL), FRL_OK);
    ck_assert_int_eq(memcmp(before, after, sizeof before), 0);
    ck_assert_int_eq(frl_evo_save(e, path), FRL_OK);
    remove(path);
    frl_evo_destroy(e);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(ga_genomes_rebuild)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_evo *e = make_evo(rt, ga_settings);
    double start = sqrt(9.0 * N);
    double d = optimise(e, 150);
    ck_assert_msg(d < 0.5 * start, "GA ended %g from the optimum (started %g)", d, start);
    float x[64 * N], r[N];
    ck_assert_int_eq(frl_evo_ask(e, x, 64 * N), FRL_OK);
    for (int32_t m = 0; m < 64; m++) {
        int32_t len;
        ck_assert_int_eq(frl_evo_genome(e, m, NULL, 0, &len), FRL_OK);
        ck_assert_int_ge(len, 2);
        uint64_t *s = malloc(sizeof(uint64_t) * (size_t)len);
        ck_assert_int_eq(frl_evo_genome(e, m, s, len - 1, &len), FRL_ERR_SIZE);
        ck_assert_int_eq(frl_evo_genome(e, m, s, len, &len), FRL_OK);
        ck_assert_int_eq(frl_evo_rebuild(e, s, len, r, N), FRL_OK);
        ck_assert_msg(memcmp(r, x + m * N, sizeof r) == 0, "member %d rebuilt differs", (int)m);
        free(s);
    }
    ck_assert_int_eq(frl_evo_genome(e, 64, NULL, 0, NULL), FRL_ERR_NULL);
    int32_t len;
    ck_assert_int_eq(frl_evo_genome(e, 64, NULL, 0, &len), FRL_ERR_RANGE);
    frl_evo_destroy(e);
    frl_runtime_destroy(rt);
}
END_TEST

static void check_save_load(const char *settings, const char *path)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_evo *e = make_evo(rt, settings), *f = make_evo(rt, settings);
    int32_t P = frl_evo_population(e);
    optimise(e, 5);
    ck_assert_int_eq(frl_evo_save(e, path), FRL_OK);
    float *x = malloc(sizeof(float) * (size_t)P * N), *y = malloc(sizeof(float) * (size_t)P * N);
    optimise(e, 3);
    ck_assert_int_eq(frl_evo_ask(e, x, (int64_t)P * N), FRL_OK);
    ck_assert_int_eq(frl_evo_load(f, path), FRL_OK);
    ck_assert_int_eq(frl_evo_generation(f), 5);
    optimise(f, 3);
    ck_assert_int_eq(frl_evo_ask(f, y, (int64_t)P * N), FRL_OK);
    ck_assert_int_eq(memcmp(x, y, sizeof(float) * (size_t)P * N), 0);
    /* A corrupted file: refused, f unchanged. */
    FILE *fp = fopen(path, "r+b");
    ck_assert_ptr_nonnull(fp);
    fseek(fp, 100, SEEK_SET);
    int byte = fgetc(fp);
    fseek(fp, 100, SEEK_SET);
    fputc(0x5a ^ byte, fp);
    fclose(fp);
    ck_assert_int_eq(frl_evo_load(f, path), FRL_ERR_FORMAT);
    ck_assert_int_eq(frl_evo_generation(f), 8);
    ck_assert_int_eq(frl_evo_ask(f, x, (int64_t)P * N), FRL_OK);
    ck_assert_int_eq(memcmp(x, y, sizeof(float) * (size_t)P * N), 0);
    /* Another optimiser's file. */
    ck_assert_int_eq(frl_evo_save(f, path), FRL_OK);
    frl_evo *other = make_evo(rt, strstr(settings, "=es") ? ga_settings : es_settings);
    ck_assert_int_eq(frl_evo_load(other, path), FRL_ERR_SIZE);
    frl_evo_destroy(other);
    /* The same algorithm with fewer parameters: a size, not a corrupt file. */
    frl_config *cfg = frl_test_settings(settings);
    float init[N - 1] = {0};
    ck_assert_int_eq(frl_evo_create(&other, rt, cfg, N - 1, init), FRL_OK);
    frl_config_destroy(cfg);
    ck_assert_int_eq(frl_evo_load(other, path), FRL_ERR_SIZE);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "parameters"));
    frl_evo_destroy(other);
    remove(path);
    free(x);
    free(y);
    frl_evo_destroy(e);
    frl_evo_destroy(f);
    frl_runtime_destroy(rt);
}

START_TEST(save_load)
{
    check_save_load(es_settings, "test_evo_es.frl");
    check_save_load(ga_settings, "test_evo_ga.frl");
}
END_TEST

static int stop_at_two(void *user, const float *params, int32_t members, int64_t n,
                       double *fitness)
{
    int *calls = user;
    quadratic(params, members, n, fitness);
    return ++*calls == 2 ? 9 : 0;
}

START_TEST(run_callback)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_evo *e = make_evo(rt, es_settings);
    int calls = 0;
    ck_assert_int_eq(frl_evo_run(e, stop_at_two, &calls, 10), FRL_ERR_CALLBACK);
    ck_assert_int_eq(frl_evo_generation(e), 1);
    ck_assert_int_eq(frl_evo_run(e, NULL, NULL, 1), FRL_ERR_NULL);
    frl_evo_destroy(e);
    frl_runtime_destroy(rt);
}
END_TEST

/* A fitness callback that calls back into its own optimiser: every call that would move
 * the generation is refused, and the loop runs as if it had not been tried. */
typedef struct nested_evo {
    frl_evo *e;
    float *params;
    int refused;
} nested_evo;

static int call_back_in(void *user, const float *params, int32_t members, int64_t n,
                        double *fitness)
{
    nested_evo *x = user;
    double f[64];
    x->refused += frl_evo_ask(x->e, x->params, members * n) == FRL_ERR_STATE;
    quadratic(params, members, n, f);
    x->refused += frl_evo_tell(x->e, f, members) == FRL_ERR_STATE;
    x->refused += frl_evo_run(x->e, call_back_in, x, 1) == FRL_ERR_STATE;
    x->refused += frl_evo_load(x->e, "no_such_file.frl") == FRL_ERR_STATE;
    quadratic(params, members, n, fitness);
    return 0;
}

static int only_fitness(void *user, const float *params, int32_t members, int64_t n,
                        double *fitness)
{
    (void)user;
    quadratic(params, members, n, fitness);
    return 0;
}

START_TEST(run_refuses_nested_calls)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_evo *e = make_evo(rt, es_settings), *plain = make_evo(rt, es_settings);
    ck_assert_int_le(frl_evo_population(e), 64);
    nested_evo x = {e, malloc(sizeof(float) * (size_t)(frl_evo_population(e) *
                                                       frl_evo_num_parameters(e))), 0};
    ck_assert_int_eq(frl_evo_run(e, call_back_in, &x, 3), FRL_OK);
    ck_assert_int_eq(x.refused, 12);
    ck_assert_ptr_nonnull(strstr(frl_evo_last_error(e), "fitness callback"));
    ck_assert_int_eq(frl_evo_run(plain, only_fitness, NULL, 3), FRL_OK);
    ck_assert_int_eq(frl_evo_generation(e), frl_evo_generation(plain));
    float *a = malloc(sizeof(float) * (size_t)frl_evo_num_parameters(e));
    float *b = malloc(sizeof(float) * (size_t)frl_evo_num_parameters(e));
    ck_assert_int_eq(frl_evo_best(e, a, frl_evo_num_parameters(e), NULL), FRL_OK);
    ck_assert_int_eq(frl_evo_best(plain, b, frl_evo_num_parameters(e), NULL), FRL_OK);
    ck_assert_mem_eq(a, b, sizeof(float) * (size_t)frl_evo_num_parameters(e));
    free(a);
    free(b);
    free(x.params);
    frl_evo_destroy(e);
    frl_evo_destroy(plain);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- the trainer ---- */

static frl_trainer *evo_trainer(frl_runtime *rt, const char *settings)
{
    frl_config *cfg = frl_test_settings(settings);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    frl_config_destroy(cfg);
    return t;
}

static void check_learns(const char *settings, int64_t budget)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_trainer *t = evo_trainer(rt, settings);
    if (FRL_TEST_SHORT) {
        printf("test_evo: %s: a short run (a sanitizer or a second build; the learning "
               "target is the whole build's)\n", settings);
        budget = 30000;
    }
    ck_assert_int_eq(frl_trainer_train(t, budget), FRL_OK);
    const frl_metrics *m = frl_trainer_metrics(t);
    ck_assert(isfinite(m->population_mean) && isfinite(m->kept_fitness));
    if (!FRL_TEST_SHORT) {
        frl_vec_env *v;
        ck_assert_int_eq(frl_vec_env_create(&v, rt, "CartPole-v1", 8, NULL), FRL_OK);
        frl_eval_args a;
        frl_eval_args_init(&a);
        a.episodes = 16;
        double mean;
        ck_assert_int_eq(frl_policy_evaluate(frl_trainer_policy(t), v, &a, &mean), FRL_OK);
        ck_assert_msg(mean >= 475, "%s: the kept policy's mean return is %g", settings, mean);
        frl_vec_env_destroy(v);
    }
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
}

START_TEST(es_learns_cartpole)
{
    check_learns("train.algo=es train.target_return=480", 6000000);
}
END_TEST

START_TEST(ga_learns_cartpole)
{
    check_learns("train.algo=ga ga.sigma=0.05 train.target_return=400", 12000000);
}
END_TEST

static void check_resume(const char *settings, const char *path)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_trainer *a = evo_trainer(rt, settings);
    /* Several generations either side of the save (a short build's fewer: the same
     * paths; early generations of 16 members take a few hundred steps) */
    const int64_t half = FRL_TEST_SHORT ? 4000 : 20000;
    ck_assert_int_eq(frl_trainer_train(a, half), FRL_OK);
    ck_assert_int_eq(frl_trainer_save(a, path), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(a, 2 * half), FRL_OK);
    ck_assert_int_gt(frl_trainer_metrics(a)->update, 2);
    /* loaded on a runtime of another seed: the run goes on with the file's, as PPO's
     * does (the optimiser refused the file, its seed being the runtime's) */
    frl_config *rc = frl_test_settings("runtime.threads=2 runtime.seed=77");
    frl_runtime *rt77 = NULL;
    ck_assert_int_eq(frl_runtime_create(&rt77, rc, NULL, NULL), FRL_OK);
    frl_config_destroy(rc);
    frl_trainer *b;
    ck_assert_msg(frl_trainer_load(&b, rt77, path, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(frl_trainer_train(b, 2 * half), FRL_OK);
    frl_policy *pa = frl_trainer_policy(a), *pb = frl_trainer_policy(b);
    ck_assert_int_eq(frl_trainer_metrics(a)->env_steps, frl_trainer_metrics(b)->env_steps);
    ck_assert_int_eq(memcmp(pa->params, pb->params, sizeof(float) * pa->num_params), 0);
    if (pa->obs_norm) {
        ck_assert(pa->norm.count == pb->norm.count && pa->norm.count > 0);
        size_t w = (size_t)pa->norm.width;
        ck_assert_int_eq(memcmp(pa->norm.mean, pb->norm.mean, sizeof(double) * w), 0);
        ck_assert_int_eq(memcmp(pa->norm.m2, pb->norm.m2, sizeof(double) * w), 0);
        ck_assert_int_eq(memcmp(pa->norm.use_mean, pb->norm.use_mean, sizeof(float) * w), 0);
    }
    remove(path);
    frl_trainer_destroy(a);
    frl_trainer_destroy(b);
    frl_runtime_destroy(rt);
    frl_runtime_destroy(rt77);
}

/* ES and GA trainers allocate nothing in train, as the other trainers do (api.md): each
 * generation's evaluation runs in a block the sampler reserves at create (it took a
 * block per generation, so with the allocator failing, train failed). */
static void check_train_allocates_nothing(const char *settings)
{
    size_t cap = SIZE_MAX;
    frl_allocator al = frl_test_capped_allocator(&cap);
    frl_config *rc = frl_test_settings("runtime.threads=2");
    frl_runtime *rt = NULL;
    ck_assert_int_eq(frl_runtime_create(&rt, rc, &al, NULL), FRL_OK);
    frl_config_destroy(rc);
    frl_trainer *t = evo_trainer(rt, settings);
    cap = 0; /* every allocation fails from here */
    ck_assert_msg(frl_trainer_train(t, 20000) == FRL_OK, "%s: %s", settings,
                  frl_trainer_last_error(t));
    ck_assert_int_ge(frl_trainer_metrics(t)->update, 2);
    cap = SIZE_MAX;
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
}

START_TEST(train_allocates_nothing)
{
    check_train_allocates_nothing("train.algo=es es.population=16 train.num_envs=8");
    check_train_allocates_nothing("train.algo=ga ga.population=16 ga.truncation=4 "
                                  "ga.elites=2 train.num_envs=8");
    check_train_allocates_nothing("train.algo=es es.population=16 train.num_envs=8 "
                                  "sampler.groups=2");
}
END_TEST

/* The bytes of the event file a trainer wrote into dir (malloc'd, *n of them). */
static char *event_file(const char *dir, size_t *n)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    char path[512] = "";
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, "events.out.tfevents.", 20))
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    closedir(d);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "no event file in %s", dir);
    char *buf = malloc(1 << 20);
    *n = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

/* The ES and GA metrics reached frl_metrics only: a CLI run's TensorBoard showed none
 * of them. A PPO run's file has no such charts (NaN rows are skipped). */
START_TEST(population_charts_in_tensorboard)
{
    const char *runs[] = {"train.algo=es es.population=16 train.num_envs=8",
                          "train.num_envs=8 train.rollout=32"};
    for (int i = 0; i < 2; i++) {
        frl_runtime *rt = frl_test_runtime(1);
        frl_trainer *t = evo_trainer(rt, runs[i]);
        char dir[] = "/tmp/frl_test_evo_tb_XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        ck_assert_int_eq(frl_trainer_set_output(t, dir), FRL_OK);
        ck_assert_int_eq(frl_trainer_train(t, 4000), FRL_OK);
        frl_trainer_destroy(t);
        size_t n;
        char *buf = event_file(dir, &n);
        for (int k = 0; k < 3; k++) {
            const char *tag = (const char *[]){"charts/population_mean",
                                               "charts/population_best",
                                               "charts/kept_fitness"}[k];
            ck_assert_msg((memmem(buf, n, tag, strlen(tag)) != NULL) == (i == 0), "%s: %s",
                          runs[i], tag);
        }
        free(buf);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        ck_assert_int_eq(system(cmd), 0);
        frl_runtime_destroy(rt);
    }
}
END_TEST

START_TEST(trainer_resumes_exactly)
{
    check_resume("train.algo=es es.population=16 train.num_envs=8", "test_evo_tr_es.frl");
    check_resume("train.algo=es es.population=16 train.num_envs=8 policy.obs_norm=true",
                 "test_evo_tr_es_norm.frl");
    check_resume("train.algo=ga ga.population=16 ga.truncation=4 ga.elites=2 train.num_envs=8",
                 "test_evo_tr_ga.frl");
}
END_TEST

/* A run that reached train.target_return, saved and loaded, returns FRL_OK at once: the
 * kept fitness comes back with the learner's state (it was read from the metrics, which
 * start empty after a load, so the run trained another generation). */
static void check_target_kept(const char *settings, const char *path)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_trainer *a = evo_trainer(rt, settings);
    ck_assert_int_eq(frl_trainer_train(a, 1000000), FRL_OK);
    int64_t steps = frl_trainer_metrics(a)->env_steps;
    ck_assert_int_lt(steps, 1000000); /* stopped by the target */
    ck_assert_int_eq(frl_trainer_save(a, path), FRL_OK);
    frl_trainer *b;
    ck_assert_msg(frl_trainer_load(&b, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(frl_trainer_train(b, 1000000), FRL_OK);
    ck_assert_int_eq(frl_trainer_metrics(b)->env_steps, steps);
    remove(path);
    frl_trainer_destroy(a);
    frl_trainer_destroy(b);
    frl_runtime_destroy(rt);
}

START_TEST(target_reached_survives_a_load)
{
    /* Every CartPole episode returns at least 8: the first generation reaches 5. */
    check_target_kept("train.algo=es es.population=16 train.num_envs=8 "
                      "train.target_return=5", "test_evo_target_es.frl");
    check_target_kept("train.algo=ga ga.population=16 ga.truncation=4 ga.elites=2 "
                      "train.num_envs=8 train.target_return=5", "test_evo_target_ga.frl");
}
END_TEST

static void negative_second_moment(void *data, uint64_t count, void *user)
{
    (void)count, (void)user;
    ((float *)data)[0] = -1.0f;
}

static void huge_generation(void *data, uint64_t count, void *user)
{
    (void)count, (void)user;
    ((int64_t *)data)[3] = INT64_MAX; /* evo.meta: algo, P, n, generation, seed */
}

/* ES's Adam state in a checkpoint (es.v here) with every checksum right but a negative
 * second moment is FRL_ERR_FORMAT at load, not NaN parameters a generation later; so is
 * a generation count no run reaches (the next tell's count would overflow). */
START_TEST(forged_es_state_refused)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], bad[72];
    forged_paths("frl_es_state", path, bad);
    frl_trainer *a = evo_trainer(rt, "train.algo=es es.population=8 train.num_envs=8");
    ck_assert_int_eq(frl_trainer_train(a, 4000), FRL_OK);
    ck_assert_int_eq(frl_trainer_save(a, path), FRL_OK);
    frl_trainer_destroy(a);
    rewrite_section(path, bad, "es.v", negative_second_moment, NULL);
    frl_trainer *b = (frl_trainer *)1;
    ck_assert_int_eq(frl_trainer_load(&b, rt, bad, NULL), FRL_ERR_FORMAT);
    ck_assert_ptr_null(b);
    ck_assert_msg(strstr(frl_last_error(), "es.v"), "%s", frl_last_error());
    rewrite_section(path, bad, "evo.meta", huge_generation, NULL);
    ck_assert_int_eq(frl_trainer_load(&b, rt, bad, NULL), FRL_ERR_FORMAT);
    ck_assert_msg(strstr(frl_last_error(), "generation"), "%s", frl_last_error());
    ck_assert_msg(frl_trainer_load(&b, rt, path, NULL) == FRL_OK, "%s",
                  frl_last_error());
    frl_trainer_destroy(b);
    remove(path);
    remove(bad);
    frl_runtime_destroy(rt);
}
END_TEST

/* An image policy's members act on any bytes, as the policy does: white frames (0xFF
 * bytes, a NaN read as floats) are pixels, not a non-finite observation. */
START_TEST(act_on_images)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_policy *p = make_policy(rt, "PixelGrid-v0", "policy.encoder=simple");
    frl_population *pop;
    ck_assert_int_eq(frl_population_create(&pop, p, 3), FRL_OK);
    int64_t ow = frl_space_width(frl_policy_observation_space(p));
    enum { ROWS = 6 };
    unsigned char *obs = malloc((size_t)(ROWS * ow));
    memset(obs, 0xff, (size_t)(ROWS * ow));
    int32_t members[ROWS] = {0, 1, 2, 0, 1, 2}, acts[ROWS], want[ROWS];
    frl_population_act_args a;
    frl_population_act_args_init(&a);
    a.batch = ROWS;
    a.observations = (const float *)(void *)obs;
    a.members = members;
    a.actions = acts;
    a.observation_width = ow;
    a.action_width = 1;
    a.deterministic = 1;
    ck_assert_msg(frl_population_act(pop, &a) == FRL_OK, "%s", frl_last_error());
    frl_act_args pa;
    frl_act_args_init(&pa);
    pa.batch = ROWS;
    pa.observations = (const float *)(void *)obs;
    pa.actions = want;
    pa.observation_width = ow;
    pa.action_width = 1;
    pa.deterministic = 1;
    ck_assert_msg(frl_policy_act(p, &pa) == FRL_OK, "%s", frl_last_error());
    for (int i = 0; i < ROWS; i++) /* every member starts as the policy's weights */
        ck_assert_int_eq(acts[i], want[i]);
    free(obs);
    frl_population_destroy(pop);
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
}
END_TEST

/* A host env whose episodes never end. */
static int endless_step(void *user, const void *action, float *obs, float *reward,
                        uint8_t *term, uint8_t *trunc)
{
    counter_env *c = user;
    (void)action;
    c->t++;
    obs[0] = (float)(c->t % 7) / 7.0f;
    *reward = 1.0f;
    *term = *trunc = 0;
    return 0;
}

/* Episodes that never end: FRL_ERR_RANGE after args->max_steps (not a hang), and the
 * normaliser's statistics as they were; a successful evaluation's statistics act. */
START_TEST(evaluate_gives_up)
{
    frl_runtime *rt = frl_test_runtime(2);
    counter_env envs[4];
    frl_vec_env *v = host_vec(rt, 4, envs, endless_step);
    frl_config *cfg = frl_test_settings("policy.hidden=8 policy.obs_norm=true");
    frl_policy *p;
    ck_assert_int_eq(frl_policy_create(&p, rt, cfg, frl_vec_env_observation_space(v),
                                       frl_vec_env_action_space(v)), FRL_OK);
    frl_population *pop;
    ck_assert_int_eq(frl_population_create(&pop, p, 4), FRL_OK);
    frl_population_eval_args a;
    frl_population_eval_args_init(&a);
    ck_assert_int_eq(a.max_steps, 10000000);
    a.max_steps = 5000;
    a.update_obs_norm = 1;
    double count = p->norm.count, mean = p->norm.mean[0];
    float use = p->norm.use_mean[0];
    int64_t steps = -1;
    ck_assert_int_eq(frl_population_evaluate(pop, v, &a, &steps), FRL_ERR_RANGE);
    ck_assert_msg(strstr(frl_last_error(), "max_steps"), "%s", frl_last_error());
    ck_assert_int_eq(steps, 0);
    ck_assert(p->norm.count == count && p->norm.mean[0] == mean && p->norm.use_mean[0] == use);
    a.max_steps = -1;
    ck_assert_int_eq(frl_population_evaluate(pop, v, &a, NULL), FRL_ERR_RANGE);
    /* Cut episodes finish: the statistics of their observations act from now on. */
    a.max_steps = 0;
    a.max_episode_steps = 20;
    ck_assert_msg(frl_population_evaluate(pop, v, &a, &steps) == FRL_OK, "%s",
                  frl_last_error());
    ck_assert_int_eq(steps, 4 * 20);
    ck_assert(p->norm.count > count && p->norm.use_mean[0] != use);
    ck_assert(p->norm.use_mean[0] == (float)p->norm.mean[0]);
    /* A caller built against the table before max_steps: what lies past its struct_size
     * is not read (5 steps would fail), and the default applies. */
    a.struct_size = offsetof(frl_population_eval_args, max_steps);
    a.max_steps = 5;
    ck_assert_msg(frl_population_evaluate(pop, v, &a, &steps) == FRL_OK, "%s",
                  frl_last_error());
    ck_assert_int_eq(steps, 4 * 20);
    frl_population_destroy(pop);
    frl_policy_destroy(p);
    frl_config_destroy(cfg);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

static void *stop_later(void *arg)
{
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    frl_trainer_request_stop(arg);
    return NULL;
}

/* A stop request reaches a generation that never ends (the trainer checks between
 * updates, and a generation is one update). */
START_TEST(stop_inside_a_generation)
{
    frl_runtime *rt = frl_test_runtime(2);
    counter_env envs[4];
    frl_vec_env *v = host_vec(rt, 4, envs, endless_step);
    frl_config *cfg = frl_test_settings("train.algo=es es.population=4 policy.hidden=8");
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create_vec(&t, rt, v, cfg), FRL_OK);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, stop_later, t), 0);
    ck_assert_int_eq(frl_trainer_train(t, 1000), FRL_ERR_INTERRUPTED);
    ck_assert_msg(strstr(frl_trainer_last_error(t), "generation 0"), "%s",
                  frl_trainer_last_error(t));
    pthread_join(th, NULL);
    ck_assert_int_eq(frl_trainer_metrics(t)->env_steps, 0);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* A file loads only where its genomes and noise offsets mean what they did: another
 * es.noise_floats, ga.sigma or ga.init_sigma is refused naming the key; a step size or a
 * selection setting may change (it acts from the next generation). */
static void check_loads(const char *path, const char *settings, frl_status want,
                        const char *key)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_evo *e = make_evo(rt, settings);
    ck_assert_int_eq(frl_evo_load(e, path), want);
    if (key)
        ck_assert_msg(strstr(frl_evo_last_error(e), key), "%s", frl_evo_last_error(e));
    ck_assert_int_eq(frl_evo_generation(e), want == FRL_OK ? 2 : 0);
    frl_evo_destroy(e);
    frl_runtime_destroy(rt);
}

/* Evaluation steps one vec env or two pipelined: sampler.groups=3 was taken as 2. */
START_TEST(three_groups_refused)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_config *cfg = frl_test_settings("train.algo=es es.population=16 sampler.groups=3");
    frl_trainer *t = (frl_trainer *)1;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(frl_last_error(), "one env group or two") &&
                  strstr(frl_last_error(), "not 3"), "%s", frl_last_error());
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(load_needs_the_same_meaning)
{
    char es_path[] = "/tmp/test_evo_meaning_es.frl", ga_path[] = "/tmp/test_evo_meaning_ga.frl";
    frl_runtime *rt = frl_test_runtime(1);
    frl_evo *e = make_evo(rt, es_settings), *g = make_evo(rt, ga_settings);
    optimise(e, 2);
    optimise(g, 2);
    ck_assert_int_eq(frl_evo_save(e, es_path), FRL_OK);
    ck_assert_int_eq(frl_evo_save(g, ga_path), FRL_OK);
    frl_evo_destroy(e);
    frl_evo_destroy(g);
    frl_runtime_destroy(rt);
    char s[256];
    snprintf(s, sizeof s, "%s es.noise_floats=50000", es_settings);
    check_loads(es_path, s, FRL_ERR_INVALID_ARGUMENT, "es.noise_floats");
    snprintf(s, sizeof s, "%s es.lr=0.5 es.sigma=0.2", es_settings);
    check_loads(es_path, s, FRL_OK, NULL);
    snprintf(s, sizeof s, "%s ga.sigma=0.2", ga_settings);
    check_loads(ga_path, s, FRL_ERR_INVALID_ARGUMENT, "ga.sigma");
    snprintf(s, sizeof s, "%s ga.init_sigma=0.5", ga_settings);
    check_loads(ga_path, s, FRL_ERR_INVALID_ARGUMENT, "ga.init_sigma");
    snprintf(s, sizeof s, "%s ga.elites=1 ga.truncation=12", ga_settings);
    check_loads(ga_path, s, FRL_OK, NULL);
    remove(es_path);
    remove(ga_path);
}
END_TEST

static void first_to_nan(void *data, uint64_t count, void *user)
{
    (void)count, (void)user;
    ((float *)data)[0] = NAN;
}

static void first_count(void *data, uint64_t count, void *user)
{
    (void)count;
    ((int32_t *)data)[0] = *(const int32_t *)user;
}

/* evo.fitness[0], the last generation's mean (ES's kept fitness, which train.target_return
 * compares), beyond any mean of finite fitnesses. */
static void first_double_to_inf(void *data, uint64_t count, void *user)
{
    (void)count, (void)user;
    ((double *)data)[0] = INFINITY;
}

/* evo.meta[3], the generations told. */
static void negative_generation(void *data, uint64_t count, void *user)
{
    (void)count, (void)user;
    ((int64_t *)data)[3] = -1;
}

/* Sections with their checksums right but values no optimiser holds: FRL_ERR_FORMAT,
 * the optimiser unchanged. */
static void check_forged(const char *path, const char *section, section_edit edit,
                         void *user)
{
    char bad[] = "/tmp/test_evo_forged_XXXXXX";
    int fd = mkstemp(bad);
    ck_assert_int_ge(fd, 0);
    close(fd);
    rewrite_section(path, bad, section, edit, user);
    frl_runtime *rt = frl_test_runtime(1);
    frl_evo *e = make_evo(rt, ga_settings);
    ck_assert_int_eq(frl_evo_load(e, bad), FRL_ERR_FORMAT);
    ck_assert_int_eq(frl_evo_generation(e), 0);
    frl_evo_destroy(e);
    frl_runtime_destroy(rt);
    remove(bad);
}

START_TEST(forged_ga_state_refused)
{
    char path[] = "/tmp/test_evo_forge_ga.frl";
    frl_runtime *rt = frl_test_runtime(1);
    frl_evo *g = make_evo(rt, ga_settings);
    optimise(g, 2);
    ck_assert_int_eq(frl_evo_save(g, path), FRL_OK);
    frl_evo_destroy(g);
    frl_runtime_destroy(rt);
    int32_t negative = -1, largest = INT32_MAX;
    check_forged(path, "evo.theta", first_to_nan, NULL);
    check_forged(path, "ga.kept", first_to_nan, NULL);
    check_forged(path, "ga.fitness_count", first_count, &negative);
    check_forged(path, "ga.fitness_count", first_count, &largest);
    check_forged(path, "evo.fitness", first_double_to_inf, NULL);
    check_forged(path, "evo.meta", negative_generation, NULL);
    remove(path);
}
END_TEST

/* frl_evo_memory_size refuses what create refuses, and covers what create allocates. */
typedef struct tally {
    size_t live;
} tally;

/* Each block is preceded by a header that keeps its size and the header's own size. */
static void *tally_alloc(void *user, size_t size, size_t alignment)
{
    size_t pad = alignment > 64 ? alignment : 64;
    char *p = NULL;
    if (posix_memalign((void **)&p, pad, size + pad))
        return NULL;
    size_t head[2] = {size, pad};
    memcpy(p + pad - sizeof head, head, sizeof head);
    ((tally *)user)->live += size;
    return p + pad;
}

static void tally_free(void *user, void *p)
{
    size_t head[2];
    memcpy(head, (char *)p - sizeof head, sizeof head);
    ((tally *)user)->live -= head[0];
    free((char *)p - head[1]);
}

START_TEST(memory_size_as_create)
{
    static const char *refused[] = {"train.algo=ga ga.population=4 ga.truncation=5",
                                    "train.algo=ga ga.elites=8 ga.truncation=6",
                                    "train.algo=es es.population=7"};
    size_t bytes = 1;
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        frl_config *cfg = frl_test_settings(refused[i]);
        ck_assert_int_eq(frl_evo_memory_size(cfg, 100, &bytes), FRL_ERR_RANGE);
        ck_assert_uint_eq(bytes, 1); /* a failed call leaves its output as it was */
        frl_config_destroy(cfg);
    }
    frl_config *cfg = frl_test_settings(ga_settings);
    ck_assert_int_eq(frl_evo_memory_size(cfg, (int64_t)1 << 62, &bytes), FRL_ERR_RANGE);
    frl_config_destroy(cfg);
    static const char *sizes[] = {ga_settings, es_settings};
    for (size_t i = 0; i < 2; i++) {
        tally t = {0};
        frl_allocator al;
        frl_allocator_init(&al);
        al.alloc = tally_alloc;
        al.free = tally_free;
        al.user = &t;
        frl_runtime *rt;
        ck_assert_int_eq(frl_runtime_create(&rt, NULL, &al, NULL), FRL_OK);
        size_t before = t.live;
        cfg = frl_test_settings(sizes[i]);
        ck_assert_int_eq(frl_evo_memory_size(cfg, N, &bytes), FRL_OK);
        float init[N] = {0};
        frl_evo *e;
        ck_assert_int_eq(frl_evo_create(&e, rt, cfg, N, init), FRL_OK);
        size_t took = t.live - before;
        ck_assert_msg(bytes == took, "%s: memory_size %zu, create took %zu", sizes[i], bytes,
                      took);
        frl_evo_destroy(e);
        frl_config_destroy(cfg);
        frl_runtime_destroy(rt);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("evo");
    TCase *c = tcase_create("evo");
    tcase_set_timeout(c, 300);
    tcase_add_test(c, act_matches_each_member);
    tcase_add_test(c, act_bad_input);
    tcase_add_test(c, copy_carries_the_normaliser);
    tcase_add_test(c, too_large_for_memory);
    tcase_add_test(c, evaluate_routes_members);
    tcase_add_test(c, evaluate_groups_sample_apart);
    tcase_add_test(c, evaluate_groups_report_their_failure);
    tcase_add_test(c, es_ask_tell);
    tcase_add_test(c, es_ties_move_nothing);
    tcase_add_test(c, huge_fitnesses);
    tcase_add_test(c, es_diverging_update_refused);
    tcase_add_test(c, ga_genomes_rebuild);
    tcase_add_test(c, save_load);
    tcase_add_test(c, run_callback);
    tcase_add_test(c, run_refuses_nested_calls);
    tcase_add_test(c, es_learns_cartpole);
    tcase_add_test(c, ga_learns_cartpole);
    tcase_add_test(c, trainer_resumes_exactly);
    tcase_add_test(c, three_groups_refused);
    tcase_add_test(c, population_charts_in_tensorboard);
    tcase_add_test(c, train_allocates_nothing);
    tcase_add_test(c, target_reached_survives_a_load);
    tcase_add_test(c, forged_es_state_refused);
    tcase_add_test(c, act_on_images);
    tcase_add_test(c, evaluate_gives_up);
    tcase_add_test(c, stop_inside_a_generation);
    tcase_add_test(c, load_needs_the_same_meaning);
    tcase_add_test(c, forged_ga_state_refused);
    tcase_add_test(c, memory_size_as_create);
    suite_add_tcase(s, c);
    return s;
}

int main(void)
{
    return frl_test_run(suite());
}
