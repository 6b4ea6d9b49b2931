/* Discrete observation spaces end to end: a host env writes one float per env holding
 * the state's index; the vec env checks it names a state, the policy turns it into a
 * one-hot row, and the trainer learns a task whose right action depends on the index.
 * Also: the errors for bad observations, save/load, and the settings refused.
 *
 * argv[1], when given: the CUDA plugin's host build, for the device refusal. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

/* ---- the lock corridor: LEN states, ACTIONS actions; at state s only KEY(s) moves on ----
 *
 * The right action changes with the index, so a policy that ignores the observation
 * (or reads it as anything but a state index) cannot do better than 1 in ACTIONS per
 * state. The right action gives reward 1 and the next state (the last one ends the
 * episode); a wrong one ends it with 0. Episodes start at a state drawn from the seed,
 * so every state is visited from the first rollout. Optimal: every state's KEY. */
enum { LEN = 8, ACTIONS = 4, NENVS = 8 };
#define KEY(s) ((3 * (s) + 1) % ACTIONS)

typedef struct corridor {
    int32_t state;
    int32_t steps;    /* steps since the vec env was made */
    int32_t bad_at;   /* >= 0: the step (0 = the first reset) that writes bad_value */
    float bad_value;
} corridor;

static int corridor_reset(void *user, uint64_t seed, float *obs)
{
    corridor *c = user;
    c->state = (int32_t)(seed % LEN);
    obs[0] = c->bad_at == c->steps++ ? c->bad_value : (float)c->state;
    return 0;
}

static int corridor_step(void *user, const void *action, float *obs, float *reward,
                         uint8_t *terminated, uint8_t *truncated)
{
    corridor *c = user;
    int32_t a = *(const int32_t *)action;
    int right = a == KEY(c->state);
    *reward = right ? 1.0f : 0.0f;
    *terminated = (uint8_t)(!right || c->state == LEN - 1);
    *truncated = 0;
    c->state = *terminated ? 0 : c->state + 1;
    obs[0] = c->bad_at == c->steps++ ? c->bad_value : (float)c->state;
    return 0;
}

typedef struct world {
    frl_runtime *rt;
    frl_space *os, *as;
    corridor envs[NENVS];
    frl_vec_env *v;
} world;

static void world_make(world *w, int threads, int bad_env, int bad_at, float bad_value)
{
    memset(w, 0, sizeof *w);
    w->rt = frl_test_runtime(threads);
    ck_assert_int_eq(frl_space_create_discrete(&w->os, NULL, LEN), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&w->as, NULL, ACTIONS), FRL_OK);
    void *users[NENVS];
    for (int i = 0; i < NENVS; i++) {
        w->envs[i].bad_at = i == bad_env ? bad_at : -1;
        w->envs[i].bad_value = bad_value;
        users[i] = &w->envs[i];
    }
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = corridor_reset;
    cb.step = corridor_step;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&w->v, w->rt, &cb, users, NENVS, w->os,
                                                  w->as, NULL), FRL_OK);
}

static void world_free(world *w)
{
    frl_vec_env_destroy(w->v);
    frl_space_destroy(w->os);
    frl_space_destroy(w->as);
    frl_runtime_destroy(w->rt);
}

/* Deterministic actions of p for every state; returns how many are the key. */
static int correct_states(frl_policy *p, int32_t actions[LEN])
{
    float obs[LEN];
    for (int s = 0; s < LEN; s++)
        obs[s] = (float)s;
    frl_act_args a;
    frl_act_args_init(&a);
    frl_test_act_widths(&a, p);
    a.batch = LEN;
    a.observations = obs;
    a.actions = actions;
    a.deterministic = 1;
    ck_assert_int_eq(frl_policy_act(p, &a), FRL_OK);
    int right = 0;
    for (int s = 0; s < LEN; s++)
        right += actions[s] == KEY(s);
    return right;
}

static const char *const TRAIN_SETTINGS =
    "train.rollout=32 train.minibatches=4 train.epochs=4 train.lr=0.003 train.gamma=0.9 "
    "policy.hidden=32";

/* ---- learning ---- */

/* Whether the greedy policy is right in every state and the last 100 episodes'
 * return is near optimal: from a uniform start (LEN + 1) / 2 = 4.5 (a random policy
 * gets about 1/3); those episodes include some sampled mistakes. */
static int learned(frl_trainer *t, int32_t *acts)
{
    return correct_states(frl_trainer_policy(t), acts) == LEN &&
           frl_trainer_metrics(t)->mean_return > 3.5;
}

/* Train in increments of `step` env steps until learned, at most `budget`. */
static void learns_with(const char *extra, int64_t step, int64_t budget)
{
    world w;
    world_make(&w, 2, -1, -1, 0.0f);
    char text[512];
    snprintf(text, sizeof text, "%s %s", TRAIN_SETTINGS, extra);
    frl_config *cfg = frl_test_settings(text);
    frl_trainer *t = NULL;
    frl_status st = frl_trainer_create_vec(&t, w.rt, w.v, cfg);
    ck_assert_msg(st == FRL_OK, "%s", frl_last_error());
    frl_policy *p = frl_trainer_policy(t);
    ck_assert_int_eq(frl_space_get_kind(frl_policy_observation_space(p)), FRL_SPACE_DISCRETE);
    int32_t acts[LEN];
    /* Untrained, the policy is near uniform: its argmax is right by chance only. */
    ck_assert_int_lt(correct_states(p, acts), LEN);
    int64_t steps = 0;
    while (steps < budget && !learned(t, acts)) {
        steps += step;
        st = frl_trainer_train(t, steps);
        ck_assert_msg(st == FRL_OK, "%s", frl_trainer_last_error(t));
    }
    int right = correct_states(p, acts);
    ck_assert_msg(right == LEN, "%s: %d of %d states right after %lld steps (actions %d %d %d "
                  "%d %d %d %d %d)", extra, right, LEN, (long long)steps, acts[0], acts[1],
                  acts[2], acts[3], acts[4], acts[5], acts[6], acts[7]);
    double ret = frl_trainer_metrics(t)->mean_return;
    ck_assert_msg(ret > 3.5, "%s: mean return %g after %lld steps", extra, ret,
                  (long long)steps);
    printf("%s: learned in %lld steps\n", extra[0] ? extra : "sync PPO", (long long)steps);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    world_free(&w);
}

START_TEST(trainer_learns_the_state_dependent_policy)
{
    learns_with("", 20000, 60000);
}
END_TEST

/* The asynchronous sampler and IMPALA's loss read the ring through the same forward pass.
 * Async runs are not repeatable (the policy lag follows the scheduler): under ASan on a
 * loaded machine, runs have ended 7 of 8 right at 60K and at 90K steps, so the run goes
 * on in steps of 30K until learned, up to 240K. */
START_TEST(async_impala_learns_too)
{
    learns_with("sampler.mode=async train.algo=impala policy.shared=true", 30000, 240000);
}
END_TEST

/* ---- observations that name no state ---- */

/* Env 5 writes `bad` at step `at` (0: the first reset); the call that made it write must
 * fail with FRL_ERR_RANGE naming env 5, the value and the space. */
static void check_bad(float bad, const char *shown, int at)
{
    world w;
    world_make(&w, 2, 5, at, bad);
    frl_status st = frl_vec_env_reset(w.v, 7);
    for (int s = 0; s < at && st == FRL_OK; s++) {
        int32_t *a = frl_vec_env_actions(w.v);
        for (int i = 0; i < NENVS; i++)
            a[i] = 0;
        st = frl_vec_env_step(w.v);
    }
    const char *msg = frl_vec_env_last_error(w.v);
    ck_assert_msg(st == FRL_ERR_RANGE, "value %s at step %d: status %d (%s)", shown, at,
                  (int)st, msg);
    ck_assert_msg(strstr(msg, "env 5 ") && strstr(msg, shown) && strstr(msg, "discrete(8)") &&
                      strstr(msg, at ? "callback returned" : "reset callback returned"),
                  "%s", msg);
    ck_assert_str_eq(frl_last_error(), msg);
    world_free(&w);
}

START_TEST(bad_observations_are_refused)
{
    check_bad(8.0f, "observation 8,", 0);      /* one past the last state */
    check_bad(-1.0f, "observation -1,", 2);
    check_bad(2.5f, "observation 2.5,", 1);     /* not an integer */
    check_bad(1e-30f, "observation 1e-30,", 0);
    check_bad(NAN, "observation NaN,", 3);
    check_bad(INFINITY, "observation inf,", 0);
    check_bad(-INFINITY, "observation -inf,", 1);
    /* -0 is index 0, and the largest state is fine. */
    world w;
    world_make(&w, 1, 2, 0, -0.0f);
    ck_assert_int_eq(frl_vec_env_reset(w.v, 1), FRL_OK);
    ck_assert_float_eq(frl_vec_env_observations(w.v)[2], 0.0f);
    world_free(&w);
}
END_TEST

/* A batch world that writes observation `value` for agent 3 on reset. */
static int batch_reset_bad(void *user, int32_t n, const uint64_t *seeds, float *obs)
{
    (void)seeds;
    for (int32_t i = 0; i < n; i++)
        obs[i] = i == 3 ? *(const float *)user : (float)i;
    return 0;
}

static int batch_step_unused(void *user, int32_t n, const void *actions, const uint8_t *mask,
                             const uint64_t *seeds, float *obs, float *rewards,
                             uint8_t *terminated, uint8_t *truncated)
{
    (void)user, (void)n, (void)actions, (void)mask, (void)seeds, (void)obs, (void)rewards;
    (void)terminated, (void)truncated;
    return 0;
}

START_TEST(batch_and_single_envs_check_too)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_space *os, *as;
    ck_assert_int_eq(frl_space_create_discrete(&os, NULL, LEN), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, ACTIONS), FRL_OK);
    frl_batch_env_callbacks bcb;
    frl_batch_env_callbacks_init(&bcb);
    bcb.reset = batch_reset_bad;
    bcb.step = batch_step_unused;
    float value = NAN;
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create_batch(&v, rt, &bcb, &value, 4, os, as, NULL), FRL_OK);
    ck_assert_int_eq(frl_vec_env_reset(v, 0), FRL_ERR_RANGE);
    const char *msg = frl_vec_env_last_error(v);
    ck_assert_msg(strstr(msg, "env 3 ") && strstr(msg, "NaN") && strstr(msg, "batch reset"),
                  "%s", msg);
    value = 3.0f;
    ck_assert_int_eq(frl_vec_env_reset(v, 0), FRL_OK);
    ck_assert_float_eq(frl_vec_env_observations(v)[3], 3.0f);
    frl_vec_env_destroy(v);

    /* A single env is a vec env of one: the same check. */
    corridor c = {0, 0, 0, 9.0f};
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = corridor_reset;
    cb.step = corridor_step;
    frl_env *e;
    ck_assert_int_eq(frl_env_create_callbacks(&e, rt, &cb, &c, os, as, NULL), FRL_OK);
    float obs = -5.0f;
    ck_assert_int_eq(frl_env_reset(e, 0, &obs), FRL_ERR_RANGE);
    ck_assert_ptr_nonnull(strstr(frl_env_last_error(e), "observation 9,"));
    ck_assert_int_eq(frl_env_reset(e, 3, &obs), FRL_OK); /* bad_at was the first reset */
    ck_assert(obs >= 0.0f && obs < (float)LEN && obs == floorf(obs));
    frl_env_destroy(e);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- the policy ---- */

typedef struct pol {
    frl_runtime *rt;
    frl_space *os, *as;
    frl_policy *p;
} pol;

static void pol_make(pol *f, const char *settings)
{
    f->rt = frl_test_runtime(1);
    ck_assert_int_eq(frl_space_create_discrete(&f->os, NULL, LEN), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&f->as, NULL, ACTIONS), FRL_OK);
    frl_config *cfg = frl_test_settings(settings);
    ck_assert_int_eq(frl_policy_create(&f->p, f->rt, cfg, f->os, f->as), FRL_OK);
    frl_config_destroy(cfg);
}

static void pol_free(pol *f)
{
    frl_policy_destroy(f->p);
    frl_space_destroy(f->os);
    frl_space_destroy(f->as);
    frl_runtime_destroy(f->rt);
}

START_TEST(act_checks_indices_and_widths)
{
    pol f;
    pol_make(&f, "policy.hidden=16");
    /* The first layer is the one-hot's: LEN inputs, as a box of LEN values would have. */
    int64_t actor = (LEN * 16 + 16) + (16 * ACTIONS + ACTIONS);
    int64_t critic = (LEN * 16 + 16) + (16 + 1);
    ck_assert_int_eq(frl_policy_num_parameters(f.p), actor + critic);
    float obs[4] = {0, 7, 3, 1};
    int32_t acts[4] = {-9, -9, -9, -9};
    frl_act_args a;
    frl_act_args_init(&a);
    a.batch = 4;
    a.observations = obs;
    a.actions = acts;
    a.observation_width = 1;
    a.action_width = 1;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_OK);
    for (int i = 0; i < 4; i++)
        ck_assert(acts[i] >= 0 && acts[i] < ACTIONS);
    /* The one-hot width is the network's business: the rows hold one value. */
    a.observation_width = LEN;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_ERR_SIZE);
    a.observation_width = 1;
    static const float bad[] = {8.0f, -1.0f, 0.5f, NAN, INFINITY};
    static const char *const shown[] = {"is 8,", "is -1,", "is 0.5,", "is NaN,", "is inf,"};
    for (int k = 0; k < 5; k++) {
        obs[2] = bad[k];
        for (int i = 0; i < 4; i++)
            acts[i] = -9;
        ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_ERR_RANGE);
        const char *msg = frl_policy_last_error(f.p);
        ck_assert_msg(strstr(msg, "row 2 ") && strstr(msg, shown[k]) &&
                          strstr(msg, "discrete(8)"), "%s", msg);
        for (int i = 0; i < 4; i++)
            ck_assert_int_eq(acts[i], -9); /* nothing written */
    }
    pol_free(&f);
}
END_TEST

/* Any batch and any workspace: one row's action depends on that row alone. */
START_TEST(actions_do_not_depend_on_chunks)
{
    pol f;
    pol_make(&f, "policy.hidden=16,16 policy.shared=true");
    enum { B = 600 };
    static float obs[B];
    static int32_t a1[B], a2[B];
    static float lp1[B], lp2[B], v1[B], v2[B];
    for (int i = 0; i < B; i++)
        obs[i] = (float)((i * 5) % LEN);
    frl_act_args a;
    frl_act_args_init(&a);
    frl_test_act_widths(&a, f.p);
    a.batch = B;
    a.observations = obs;
    a.actions = a1;
    a.log_probs = lp1;
    a.values = v1;
    a.counter = 11;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_OK);
    size_t ws_bytes = frl_policy_workspace_size(f.p, 7);
    void *ws = aligned_alloc(64, (ws_bytes + 63) / 64 * 64);
    a.workspace = ws;
    a.workspace_size = ws_bytes;
    a.actions = a2;
    a.log_probs = lp2;
    a.values = v2;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_OK);
    ck_assert_mem_eq(a1, a2, sizeof a1);
    ck_assert_mem_eq(lp1, lp2, sizeof lp1);
    ck_assert_mem_eq(v1, v2, sizeof v1);
    /* Row i holds state 5i mod LEN, the state of row i mod LEN: one state, one value. */
    for (int i = LEN; i < B; i++)
        ck_assert_float_eq(v1[i], v1[i % LEN]);
    free(ws);
    pol_free(&f);
}
END_TEST

START_TEST(obs_norm_is_refused)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_space *os, *as;
    ck_assert_int_eq(frl_space_create_discrete(&os, NULL, LEN), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, ACTIONS), FRL_OK);
    frl_config *cfg = frl_test_settings("policy.obs_norm=true");
    frl_policy *p = (frl_policy *)1;
    ck_assert_int_eq(frl_policy_create(&p, rt, cfg, os, as), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(frl_last_error(), "policy.obs_norm") &&
                      strstr(frl_last_error(), "discrete(8)"), "%s", frl_last_error());
    frl_config_destroy(cfg);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);

    /* The trainer builds its policy the same way, and says the same. */
    world w;
    world_make(&w, 1, -1, -1, 0.0f);
    cfg = frl_test_settings("policy.obs_norm=true");
    frl_trainer *t = (frl_trainer *)1;
    ck_assert_int_eq(frl_trainer_create_vec(&t, w.rt, w.v, cfg), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "policy.obs_norm"));
    frl_config_destroy(cfg);
    world_free(&w);
}
END_TEST

/* n <= 2^24: indices travel as float32, exact up to 2^24. */
START_TEST(too_many_states_are_refused)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_space *big, *ok, *as;
    ck_assert_int_eq(frl_space_create_discrete(&big, NULL, (1 << 24) + 1), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&ok, NULL, 1 << 24), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, ACTIONS), FRL_OK);
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = corridor_reset;
    cb.step = corridor_step;
    corridor c = {0, 0, -1, 0};
    void *users[1] = {&c};
    frl_vec_env *v = (frl_vec_env *)1;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, 1, big, as, NULL),
                     FRL_ERR_RANGE);
    ck_assert_ptr_null(v);
    ck_assert_msg(strstr(frl_last_error(), "2^24") && strstr(frl_last_error(), "16777217"),
                  "%s", frl_last_error());
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, 1, ok, as, NULL), FRL_OK);
    /* The largest index is exact, one more is a state that does not exist. */
    c.bad_at = 0;
    c.bad_value = (float)((1 << 24) - 1);
    ck_assert_int_eq(frl_vec_env_reset(v, 0), FRL_OK);
    c.bad_at = 1;
    c.bad_value = (float)(1 << 24);
    ck_assert_int_eq(frl_vec_env_reset(v, 0), FRL_ERR_RANGE);
    frl_vec_env_destroy(v);
    frl_policy *p = (frl_policy *)1;
    ck_assert_int_eq(frl_policy_create(&p, rt, NULL, big, as), FRL_ERR_RANGE);
    ck_assert_ptr_null(p);
    size_t bytes = 0;
    ck_assert_int_eq(frl_ring_memory_size(1, 4, 4, big, as, &bytes), FRL_ERR_RANGE);
    frl_space_destroy(big);
    frl_space_destroy(ok);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
}
END_TEST

/* An allocator that refuses any one request over CAP bytes, and keeps the largest. */
enum { CAP = 256 << 20 };

static void *capped_alloc(void *user, size_t size, size_t align)
{
    size_t *largest = user;
    *largest = size > *largest ? size : *largest;
    void *p = NULL;
    if (size > CAP || posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size))
        return NULL;
    return p;
}

static void capped_free(void *user, void *p)
{
    (void)user;
    free(p);
}

/* A one-hot row of 20,000 states into 64 units is 1.3M weights a layer: the orthogonal
 * init's work is that many doubles (10 MB), not the widest layer squared (3.2 GB, which
 * failed such a policy with "out of memory for initialisation", and encoders' features
 * of 256 x 256 images with it), for MLP, shared-trunk and recurrent policies. */
START_TEST(wide_inputs_initialise_in_little_memory)
{
    static const char *const settings[] = {"", "policy.shared=true", "policy.core=gru",
                                           "policy.core=lstm policy.shared=false"};
    size_t largest = 0;
    frl_allocator a;
    frl_allocator_init(&a);
    a.alloc = capped_alloc;
    a.free = capped_free;
    a.user = &largest;
    frl_runtime *rt = NULL;
    frl_config *one = frl_test_settings("runtime.threads=1"); /* largest: one thread */
    ck_assert_int_eq(frl_runtime_create(&rt, one, &a, NULL), FRL_OK);
    frl_config_destroy(one);
    frl_space *os, *as;
    ck_assert_int_eq(frl_space_create_discrete(&os, NULL, 20000), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, ACTIONS), FRL_OK);
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        frl_config *cfg = frl_test_settings(settings[i]);
        frl_policy *p = NULL;
        ck_assert_msg(frl_policy_create(&p, rt, cfg, os, as) == FRL_OK, "%s: %s", settings[i],
                      frl_last_error());
        ck_assert_int_gt(frl_policy_num_parameters(p), 20000 * 64);
        frl_policy_destroy(p);
        frl_config_destroy(cfg);
    }
    ck_assert_uint_le(largest, (size_t)CAP);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
}
END_TEST

/* The ring stores one float per discrete observation, as for a box of one value. */
START_TEST(ring_holds_one_float_per_observation)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_space *os, *one, *as;
    int64_t w1 = 1;
    ck_assert_int_eq(frl_space_create_discrete(&os, NULL, 1000), FRL_OK);
    ck_assert_int_eq(frl_space_create_box(&one, NULL, 1, &w1, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, ACTIONS), FRL_OK);
    size_t b_disc = 0, b_box = 0;
    ck_assert_int_eq(frl_ring_memory_size(2, 16, 8, os, as, &b_disc), FRL_OK);
    ck_assert_int_eq(frl_ring_memory_size(2, 16, 8, one, as, &b_box), FRL_OK);
    ck_assert_uint_eq(b_disc, b_box);
    frl_ring *r;
    ck_assert_int_eq(frl_ring_create(&r, rt, 2, 16, 8, os, as), FRL_OK);
    void *data;
    size_t bytes;
    ck_assert_int_eq(frl_ring_array(r, 1, FRL_RING_OBSERVATIONS, &data, &bytes), FRL_OK);
    ck_assert_uint_eq(bytes, 16 * 8 * sizeof(float));
    ck_assert_int_eq(frl_ring_array(r, 1, FRL_RING_BOOTSTRAP_OBS, &data, &bytes), FRL_OK);
    ck_assert_uint_eq(bytes, 8 * sizeof(float));
    frl_ring_destroy(r);
    frl_space_destroy(os);
    frl_space_destroy(one);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- save and load ---- */

static void act_all_states(frl_policy *p, int32_t *acts, float *lp, float *val, int det)
{
    enum { B = 4 * LEN };
    float obs[B];
    for (int i = 0; i < B; i++)
        obs[i] = (float)(i % LEN);
    frl_act_args a;
    frl_act_args_init(&a);
    frl_test_act_widths(&a, p);
    a.batch = B;
    a.observations = obs;
    a.actions = acts;
    a.log_probs = lp;
    a.values = val;
    a.deterministic = det;
    a.counter = 5;
    ck_assert_int_eq(frl_policy_act(p, &a), FRL_OK);
}

START_TEST(save_load_round_trip)
{
    world w;
    world_make(&w, 2, -1, -1, 0.0f);
    frl_config *cfg = frl_test_settings(TRAIN_SETTINGS);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create_vec(&t, w.rt, w.v, cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 2048), FRL_OK); /* weights away from their init */
    frl_policy *p = frl_trainer_policy(t);
    char path[] = "/tmp/frl_discrete_obs_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(frl_policy_save(p, path), FRL_OK);
    frl_policy *q;
    ck_assert_int_eq(frl_policy_load(&q, w.rt, path), FRL_OK);
    remove(path);
    const frl_space *qs = frl_policy_observation_space(q);
    ck_assert_int_eq(frl_space_get_kind(qs), FRL_SPACE_DISCRETE);
    ck_assert_int_eq(frl_space_n(qs), LEN);
    ck_assert_int_eq(frl_space_width(qs), 1);
    ck_assert_int_eq(frl_policy_num_parameters(q), frl_policy_num_parameters(p));
    ck_assert_uint_eq(frl_policy_version(q), frl_policy_version(p));
    for (int det = 0; det < 2; det++) {
        int32_t a1[4 * LEN], a2[4 * LEN];
        float l1[4 * LEN], l2[4 * LEN], v1[4 * LEN], v2[4 * LEN];
        act_all_states(p, a1, l1, v1, det);
        act_all_states(q, a2, l2, v2, det);
        ck_assert_mem_eq(a1, a2, sizeof a1);
        ck_assert_mem_eq(l1, l2, sizeof l1);
        ck_assert_mem_eq(v1, v2, sizeof v1);
    }
    frl_policy_destroy(q);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    world_free(&w);
}
END_TEST

/* ---- runtime.device=cuda ---- */

static const char *host_plugin;

START_TEST(device_runtime_refuses_clearly)
{
    if (!host_plugin)
        return;
    setenv("FRL_CUDA_PLUGIN", host_plugin, 1);
    frl_config *cfg = frl_test_settings("runtime.device=cuda runtime.threads=1");
    frl_runtime *rt;
    ck_assert_msg(frl_runtime_create(&rt, cfg, NULL, NULL) == FRL_OK, "%s", frl_last_error());
    frl_config_destroy(cfg);
    frl_space *os, *box, *as;
    int64_t w1 = 3;
    ck_assert_int_eq(frl_space_create_discrete(&os, NULL, LEN), FRL_OK);
    ck_assert_int_eq(frl_space_create_box(&box, NULL, 1, &w1, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, ACTIONS), FRL_OK);
    frl_policy *p = (frl_policy *)1;
    ck_assert_int_eq(frl_policy_create(&p, rt, NULL, os, as), FRL_ERR_UNSUPPORTED);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(frl_last_error(), "discrete(8) observation") &&
                      strstr(frl_last_error(), "CPU"), "%s", frl_last_error());
    /* The device itself works: a box observation is taken. */
    ck_assert_int_eq(frl_policy_create(&p, rt, NULL, box, as), FRL_OK);
    frl_policy_destroy(p);
    /* A good file of such a policy loads with the same status, not FRL_ERR_FORMAT (a
     * host would take the file for a corrupt one). */
    char path[64];
    snprintf(path, sizeof path, "/tmp/frl_discrete_cuda_%d.frl", (int)getpid());
    frl_runtime *cpu = frl_test_runtime(1);
    ck_assert_int_eq(frl_policy_create(&p, cpu, NULL, os, as), FRL_OK);
    ck_assert_int_eq(frl_policy_save(p, path), FRL_OK);
    frl_policy_destroy(p);
    frl_runtime_destroy(cpu);
    ck_assert_int_eq(frl_policy_load(&p, rt, path), FRL_ERR_UNSUPPORTED);
    ck_assert_ptr_null(p);
    remove(path);
    frl_space_destroy(os);
    frl_space_destroy(box);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
}
END_TEST

int main(int argc, char **argv)
{
    host_plugin = argc > 1 ? argv[1] : NULL;
    Suite *s = suite_create("discrete_obs");
    TCase *tc = tcase_create("discrete_obs");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, trainer_learns_the_state_dependent_policy);
    tcase_add_test(tc, async_impala_learns_too);
    tcase_add_test(tc, bad_observations_are_refused);
    tcase_add_test(tc, batch_and_single_envs_check_too);
    tcase_add_test(tc, act_checks_indices_and_widths);
    tcase_add_test(tc, actions_do_not_depend_on_chunks);
    tcase_add_test(tc, obs_norm_is_refused);
    tcase_add_test(tc, too_many_states_are_refused);
    tcase_add_test(tc, wide_inputs_initialise_in_little_memory);
    tcase_add_test(tc, ring_holds_one_float_per_observation);
    tcase_add_test(tc, save_load_round_trip);
    tcase_add_test(tc, device_runtime_refuses_clearly);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
