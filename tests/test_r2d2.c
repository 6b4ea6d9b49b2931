/* train.algo=r2d2 (lib/algo/r2d2.c), the recurrent Q-policies it learns
 * (lib/rl/policy_rnn.c with policy.head=q or dueling_q) and the sequences it replays
 * (frl_replay_gather_span): bad settings, the value rescaling, the recurrent Q-heads'
 * gradient and their acting against the sequence pass, the Ape-X epsilons, sequences
 * across blocks, resume, and a short learning run on the memory probe. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "algo/r2d2.h"
#include "rl/policy_rnn.h"
#include "rl/sum_tree.h"
#include "trainer/trainer.h"
#include "test_util.h"
#include "trainer_checks.h"

START_TEST(refuses_bad_settings)
{
    frl_runtime *rt = frl_test_runtime(1);
    /* A small replay: the default 1M steps would be allocated before each refusal. */
    static const char *const small = "train.algo=r2d2 train.buffer_size=4000";
    static const struct { const char *env, *extra; frl_status st; const char *words; } bad[] = {
        {"Pendulum-v1", "", FRL_ERR_UNSUPPORTED, "needs a discrete action space"},
        {"CartPole-v1", "policy.head=actor_critic", FRL_ERR_INVALID_ARGUMENT,
         "policy.head=q or dueling_q"},
        {"CartPole-v1", "policy.core=none", FRL_ERR_INVALID_ARGUMENT, "policy.core=lstm"},
        {"CartPole-v1", "train.burn_in=80", FRL_ERR_INVALID_ARGUMENT, "burn-in must be below"},
        {"CartPole-v1", "train.seq_overlap=80", FRL_ERR_INVALID_ARGUMENT,
         "must be below train.seq_length"},
        {"CartPole-v1", "train.seq_overlap=50", FRL_ERR_INVALID_ARGUMENT,
         "must divide train.seq_length=80 (try seq_overlap=40)"},
        /* the suggestion divides an odd length too (it was length / 2: 40, period 41) */
        {"CartPole-v1", "train.seq_length=81 train.seq_overlap=50 train.burn_in=10",
         FRL_ERR_INVALID_ARGUMENT, "(try seq_overlap=54)"},
        {"CartPole-v1", "train.seq_length=7 train.seq_overlap=2 train.burn_in=1",
         FRL_ERR_INVALID_ARGUMENT, "(try seq_overlap=6)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[160];
        snprintf(text, sizeof text, "%s %s", small, bad[i].extra);
        expect_refused(rt, bad[i].env, text, bad[i].st, bad[i].words);
    }
    expect_refused(rt, "CartPole-v1", "train.algo=r2d2 train.buffer_size=500",
                   FRL_ERR_INVALID_ARGUMENT, "raise buffer_size");
    /* 1e6 x 40 steps x 64 envs / (1 x 1) = 2.56e9 updates a rollout overflowed their
     * int32 count, and the run silently made none */
    expect_refused(rt, "CartPole-v1", "train.algo=r2d2 train.buffer_size=10240 "
                   "train.num_envs=64 train.batch_size=1 train.burn_in=79 "
                   "train.replay_ratio=1e6", FRL_ERR_INVALID_ARGUMENT, "updates a rollout");
    /* a minibatch of 2048 x (2^20 + 1) rows: its passes count rows in an int32 */
    expect_refused(rt, "CartPole-v1", "train.algo=r2d2 train.seq_length=1048576 "
                   "train.seq_overlap=0 train.burn_in=0 train.batch_size=2048 "
                   "train.num_envs=1 train.buffer_size=2097152 policy.core_size=2 "
                   "policy.hidden=2", FRL_ERR_INVALID_ARGUMENT, "rows in a minibatch");
    expect_refused(rt, "CartPole-v1", "train.algo=dqn policy.head=q policy.core=gru",
                   FRL_ERR_UNSUPPORTED, "train.algo=r2d2");
    frl_runtime_destroy(rt);
}
END_TEST

/* h and h^-1 undo each other over the scales returns take, h is odd and increasing,
 * and h(x) grows as sqrt(|x|) far out. */
START_TEST(value_rescale)
{
    for (double x = -1e5; x <= 1e5; x = x < 0 ? x / 1.7 + (x > -1e-3 ? 1e-3 : 0) : x * 1.7 + 1e-3) {
        double h = frl_r2d2_rescale(x), back = frl_r2d2_unrescale(h);
        ck_assert_msg(fabs(back - x) <= 1e-9 * fmax(1.0, fabs(x)), "h^-1(h(%g)) = %.12g", x,
                      back);
        ck_assert_double_eq_tol(frl_r2d2_rescale(-x), -h, 1e-12 * fmax(1.0, fabs(h)));
        ck_assert(frl_r2d2_rescale(x + 1e-3) > h);
    }
    ck_assert_double_eq(frl_r2d2_rescale(0.0), 0.0);
    /* h(99) = sqrt(100) - 1 + 0.099 */
    ck_assert_double_eq_tol(frl_r2d2_rescale(99.0), 9.099, 1e-12);
}
END_TEST

/* The priorities' tree: sums, the leaf each u falls in, never a leaf of zero mass
 * (also for u at or past the total, as rounding can give), and updates that replace. */
START_TEST(sum_tree_finds)
{
    frl_allocator al;
    frl_allocator_default(&al);
    frl_sum_tree t;
    ck_assert_int_eq(frl_sum_tree_init(&t, &al, 11), 0);
    ck_assert_int_eq(t.cap, 16);
    double mass[11] = {1, 0, 2, 0, 0, 3, 0.5, 0, 0, 0, 4};
    double total = 0;
    for (int i = 0; i < 11; i++) {
        frl_sum_tree_set(&t, i, mass[i]);
        total += mass[i];
    }
    ck_assert_double_eq(frl_sum_tree_total(&t), total);
    double edge = 0;
    for (int i = 0; i < 11; i++) {
        if (mass[i] == 0)
            continue;
        ck_assert_int_eq(frl_sum_tree_find(&t, edge), i);
        ck_assert_int_eq(frl_sum_tree_find(&t, edge + 0.999 * mass[i]), i);
        edge += mass[i];
    }
    ck_assert_int_eq(frl_sum_tree_find(&t, total), 10);
    ck_assert_int_eq(frl_sum_tree_find(&t, total * 1.5), 10);
    frl_sum_tree_set(&t, 10, 0.0);
    ck_assert_double_eq(frl_sum_tree_total(&t), total - 4);
    ck_assert_int_eq(frl_sum_tree_find(&t, total), 6);
    frl_sum_tree_free(&t, &al);
}
END_TEST

/* A policy of the trainer's settings on CartPole (4 observations, 2 actions). */
static frl_trainer *policy_trainer(frl_runtime *rt, const char *text)
{
    frl_trainer *t;
    ck_assert_msg(create_builtin(rt, "CartPole-v1", text, &t) == FRL_OK, "%s", frl_last_error());
    return t;
}

enum { GT = 4, GB = 3 };

/* L = sum c_ij Q_ij over a [GT x GB] sequence pass from state0, column 1 restarting at
 * step 2. */
static double seq_loss(const frl_policy *p, const float *obs, const float *state0,
                       const uint8_t *starts, const float *c, float *ws)
{
    frl_rpass f;
    frl_policy_rnn_seq_layout(p, GT, GB, 0, ws, &f);
    frl_policy_rnn_seq_forward(p, p->params, obs, state0, starts, &f, FRL_HEAD_ACTOR);
    double L = 0;
    for (int i = 0; i < GT * GB * p->out_w; i++)
        L += (double)c[i] * f.out[i];
    return L;
}

/* The recurrent Q-heads' backward pass (dueling split included) against central
 * differences, for both heads and both cores. */
START_TEST(recurrent_q_gradient)
{
    static const char *const variants[] = {
        "policy.head=dueling_q policy.core=lstm policy.core_size=6 policy.hidden=5",
        "policy.head=q policy.core=gru policy.core_size=6 policy.hidden=",
    };
    char text[256];
    snprintf(text, sizeof text, "train.algo=r2d2 policy.activation=tanh train.num_envs=2 "
             "train.seq_length=8 train.seq_overlap=4 train.burn_in=2 train.buffer_size=64 "
             "train.batch_size=4 %s", variants[_i]);
    frl_runtime *rt = frl_test_runtime(1);
    frl_trainer *t = policy_trainer(rt, text);
    frl_policy *p = frl_trainer_policy(t);
    ck_assert_int_eq(p->towers, 1);
    int32_t n = p->out_w, w = p->obs_w, sw = p->state_w;
    float obs[GT * GB * 4], c[GT * GB * 2], state0[GB * 32];
    uint8_t starts[GT * GB] = {0};
    starts[2 * GB + 1] = 1;
    for (int i = 0; i < GT * GB * w; i++)
        obs[i] = (float)sin(0.7 * i);
    for (int i = 0; i < GT * GB * n; i++)
        c[i] = (float)cos(1.3 * i);
    for (int i = 0; i < GB * sw; i++)
        state0[i] = (float)(0.3 * sin(2.1 * i));
    float *ws = malloc(sizeof(float) * frl_policy_rnn_seq_floats(p, GT, GB, 1));
    float *fw = malloc(sizeof(float) * frl_policy_rnn_seq_floats(p, GT, GB, 0));
    float *g = malloc(sizeof(float) * p->num_params);
    frl_rpass f;
    frl_policy_rnn_seq_layout(p, GT, GB, 1, ws, &f);
    frl_policy_rnn_seq_forward(p, p->params, obs, state0, starts, &f, FRL_HEAD_ACTOR);
    memcpy(f.d_out, c, sizeof c);
    memset(f.d_value, 0, sizeof(float) * GT * GB);
    frl_policy_rnn_seq_backward(p, p->params, g, starts, GT, &f);
    int checked = 0;
    for (size_t k = 0; k < p->num_params; k += 3, checked++) {
        float keep = p->params[k];
        p->params[k] = keep + 1e-2f;
        double up = seq_loss(p, obs, state0, starts, c, fw);
        p->params[k] = keep - 1e-2f;
        double down = seq_loss(p, obs, state0, starts, c, fw);
        p->params[k] = keep;
        double fd = (up - down) / 2e-2;
        ck_assert_msg(fabs(fd - g[k]) < 3e-3 + 3e-2 * fabs(fd), "%s: param %zu: backward %.6f, "
                      "differences %.6f", variants[_i], k, g[k], fd);
    }
    ck_assert_int_gt(checked, 50);
    free(g);
    free(fw);
    free(ws);
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
}
END_TEST

/* Acting one step at a time (frl_policy_act with state) gives the Q-values of the
 * sequence pass the learner runs, and the value frl_policy_act reports is max Q. */
START_TEST(acting_matches_sequence)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_trainer *t = policy_trainer(rt, "train.algo=r2d2 train.num_envs=2 train.seq_length=8 "
                                        "train.seq_overlap=4 train.burn_in=2 "
                                        "train.buffer_size=64");
    frl_policy *p = frl_trainer_policy(t);
    int32_t n = p->out_w, w = p->obs_w, sw = p->state_w;
    float obs[GT * GB * 4];
    uint8_t starts[GT * GB] = {0};
    starts[GB + 2] = 1;
    for (int i = 0; i < GT * GB * w; i++)
        obs[i] = (float)cos(0.37 * i);
    float *ws = malloc(sizeof(float) * frl_policy_rnn_seq_floats(p, GT, GB, 0));
    frl_rpass f;
    frl_policy_rnn_seq_layout(p, GT, GB, 0, ws, &f);
    float *state = calloc((size_t)(GB * sw), sizeof(float));
    frl_policy_rnn_seq_forward(p, p->params, obs, state, starts, &f, FRL_HEAD_ACTOR);
    for (int s = 0; s < GT; s++) {
        int32_t actions[GB];
        float values[GB], outputs[GB * 2];
        frl_act_args a;
        frl_act_args_init(&a);
        a.observations = obs + s * GB * w;
        a.batch = GB;
        a.actions = actions;
        a.values = values;
        a.outputs = outputs;
        a.observation_width = w;
        a.action_width = 1;
        a.state = state;
        a.state_width = sw;
        a.reset = starts + s * GB;
        a.deterministic = 1;
        ck_assert_msg(frl_policy_act(p, &a) == FRL_OK, "%s", frl_last_error());
        for (int b = 0; b < GB; b++) {
            const float *q = f.out + (size_t)(s * GB + b) * (size_t)n;
            for (int j = 0; j < n; j++)
                ck_assert_msg(fabs(outputs[b * n + j] - q[j]) < 1e-5, "step %d env %d Q[%d]: "
                              "acting %.7f, sequence %.7f", s, b, j, outputs[b * n + j], q[j]);
            ck_assert_int_eq(actions[b], q[1] > q[0]);
            ck_assert_float_eq_tol(values[b], fmaxf(q[0], q[1]), 1e-5);
        }
    }
    free(state);
    free(ws);
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
}
END_TEST

/* Ape-X: N actors (env groups) act with 0.4^(1 + 7 i / (N - 1)); one actor with
 * 0.4^4.5; every env of a group with its group's. */
START_TEST(actor_epsilons)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_trainer *t = policy_trainer(rt, "train.algo=r2d2 train.num_envs=6 sampler.mode=async "
                                        "sampler.groups=3 train.buffer_size=4000");
    const frl_policy *p = frl_trainer_policy(t);
    ck_assert_int_eq(p->env_epsilon_n, 6);
    for (int e = 0; e < 6; e++)
        ck_assert_double_eq_tol(p->env_epsilon[e], pow(0.4, 1.0 + 7.0 * (e / 2) / 2.0), 1e-15);
    frl_trainer_destroy(t);
    t = policy_trainer(rt, "train.algo=r2d2 train.num_envs=4 train.buffer_size=4000");
    p = frl_trainer_policy(t);
    for (int e = 0; e < 4; e++)
        ck_assert_double_eq_tol(p->env_epsilon[e], pow(0.4, 4.5), 1e-15);
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
}
END_TEST

/* A host env whose observation is (its index, its step count); its episodes end after
 * len steps (terminated, or truncated with `truncates`), or never with len 0. Every
 * step's reward is `reward`. */
typedef struct counter_env {
    int32_t id, t, len, truncates;
    float reward;
} counter_env;

static int counter_reset(void *user, uint64_t seed, float *obs)
{
    (void)seed;
    counter_env *e = user;
    e->t = 0;
    obs[0] = (float)e->id;
    obs[1] = 0.0f;
    return 0;
}

static int counter_step(void *user, const void *action, float *obs, float *reward,
                        uint8_t *terminated, uint8_t *truncated)
{
    (void)action;
    counter_env *e = user;
    e->t++;
    obs[0] = (float)e->id;
    obs[1] = (float)e->t;
    *reward = e->reward;
    int end = e->len && e->t == e->len;
    *terminated = end && !e->truncates;
    *truncated = end && e->truncates;
    return 0;
}

/* n counter envs on rt, observations of 2 floats, 2 actions; the spaces into os, as. */
static frl_vec_env *counter_venv(frl_runtime *rt, counter_env *envs, int n, frl_space **os,
                                 frl_space **as)
{
    int64_t w = 2;
    ck_assert_int_eq(frl_space_create_box(os, NULL, 1, &w, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(as, NULL, 2), FRL_OK);
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = counter_reset;
    cb.step = counter_step;
    void *users[8];
    ck_assert_int_le(n, 8);
    for (int i = 0; i < n; i++)
        users[i] = &envs[i];
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, n, *os, *as, NULL), FRL_OK);
    return v;
}

/* Envs that never end: a sequence gathered across blocks must read consecutive steps of
 * one env, the first block's stored state, and the bootstrap observation after the last
 * step. */

START_TEST(sequences_span_blocks)
{
    enum { N = 3, T = 5, NB = 3 };
    frl_runtime *rt = frl_test_runtime(1);
    frl_space *os, *as;
    counter_env envs[N] = {{0, 0, 0, 0, 0}, {1, 0, 0, 0, 0}, {2, 0, 0, 0, 0}};
    frl_vec_env *v = counter_venv(rt, envs, N, &os, &as);
    /* 8 blocks of 5 x 3 steps; sequences of 3 blocks (15 steps, overlap 10) */
    frl_config *cfg = frl_test_settings("train.algo=r2d2 train.seq_length=15 "
                                        "train.seq_overlap=10 train.burn_in=5 "
                                        "train.buffer_size=120 train.batch_size=2 "
                                        "train.learning_starts=1000000 policy.core_size=4 "
                                        "policy.hidden=4");
    frl_trainer *t;
    ck_assert_msg(frl_trainer_create_vec(&t, rt, v, cfg) == FRL_OK, "%s", frl_last_error());
    frl_config_destroy(cfg);
    ck_assert_int_eq(frl_trainer_train(t, 11 * T * N), FRL_OK); /* wraps the 8 blocks */
    const frl_replay *r = t->store.replay;
    ck_assert_int_eq(r->blocks, 8);
    int32_t sw = t->policy->state_w;
    enum { ROWS = NB * T + 1 };
    float obs[ROWS * 2 * 2], reward[NB * T * 2], state0[2 * 64];
    int32_t action[NB * T * 2];
    uint8_t flags[3 * ROWS * 2];
    frl_replay_span s = {2, obs, action, reward, flags, flags + ROWS * 2, flags + 2 * ROWS * 2,
                         state0};
    int64_t last = (r->next + r->blocks - 1) % r->blocks;
    for (int b = 0; b < N; b++) {
        frl_replay_gather_span(r, last, b, NB, 1, &s);
        float first = obs[(0 * 2 + 1) * 2 + 1];
        ck_assert_float_eq(first, (float)(11 * T - NB * T)); /* the sequence's first step */
        for (int i = 0; i < ROWS; i++) {
            ck_assert_float_eq(obs[(i * 2 + 1) * 2], (float)b);
            ck_assert_float_eq(obs[(i * 2 + 1) * 2 + 1], first + (float)i);
            ck_assert_int_eq(s.reset[i * 2 + 1], 0);
        }
        /* the stored state is the one the ring slot of the first block had */
        size_t first_block = (size_t)((last - NB + 1 + r->blocks) % r->blocks);
        const float *want = (const float *)r->array[FRL_REPLAY_STATES] +
                            (first_block * N + (size_t)b) * (size_t)sw;
        ck_assert_mem_eq(state0 + sw, want, sizeof(float) * (size_t)sw);
    }
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
}
END_TEST

/* Episodes of 4 steps (env 0 terminates them, env 1 truncates) in blocks of T = 4: with
 * its autoreset row an episode takes 5 rows, so blocks begin at every phase of it. The
 * learner's pass over a block, zeroing the state where frl_r2d2_starts says, must end in
 * the state acting stored for the next block: acting zeroed it before the row after an
 * autoreset row (the new episode's first observation), not before the autoreset row,
 * whose observation is the ended episode's last (the learner once did, so a truncated
 * episode's bootstrap Q and the next episode's first steps were learned from states
 * acting never had). */
START_TEST(learner_resets_where_acting_did)
{
    enum { N = 2, T = 4 };
    frl_runtime *rt = frl_test_runtime(1);
    frl_space *os, *as;
    counter_env envs[N] = {{0, 0, 4, 0, 0}, {1, 0, 4, 1, 0}}; /* terminates, truncates */
    frl_vec_env *v = counter_venv(rt, envs, N, &os, &as);
    frl_config *cfg = frl_test_settings("train.algo=r2d2 train.seq_length=8 train.seq_overlap=4 "
                                        "train.burn_in=0 train.buffer_size=64 "
                                        "train.batch_size=1 train.learning_starts=1000000 "
                                        "policy.core=gru policy.core_size=8 policy.hidden=8");
    frl_trainer *t;
    ck_assert_msg(frl_trainer_create_vec(&t, rt, v, cfg) == FRL_OK, "%s", frl_last_error());
    frl_config_destroy(cfg);
    ck_assert_int_eq(frl_trainer_train(t, 11 * T * N), FRL_OK); /* no update: acting's weights */
    const frl_replay *r = t->store.replay;
    frl_policy *p = t->policy;
    int32_t sw = p->state_w;
    enum { ROWS = 2 * T + 1 };
    float obs[ROWS * 2], reward[2 * T], state0[64], state[64];
    int32_t action[2 * T];
    uint8_t flags[3 * ROWS], starts[ROWS];
    frl_replay_span s = {1, obs, action, reward, flags, flags + ROWS, flags + 2 * ROWS, state0};
    float *ws = malloc(sizeof(float) * frl_policy_rnn_seq_floats(p, T, 1, 0));
    int carried = 0, zeroed = 0;
    for (int64_t back = 0; back + 1 < r->blocks; back++)
        for (int b = 0; b < N; b++) {
            int64_t last = (r->next + 2 * r->blocks - 1 - back) % r->blocks;
            frl_replay_gather_span(r, last, b, 2, 0, &s);
            frl_r2d2_starts(s.reset, ROWS, 1, starts);
            frl_rpass f;
            frl_policy_rnn_seq_layout(p, T, 1, 0, ws, &f);
            frl_policy_rnn_seq_forward(p, p->params, obs, state0, starts, &f, FRL_HEAD_ACTOR);
            frl_policy_rnn_seq_final_state(p, &f, state);
            if (starts[T])
                memset(state, 0, sizeof(float) * (size_t)sw);
            const float *stored = (const float *)r->array[FRL_REPLAY_STATES] +
                                  ((size_t)last * N + (size_t)b) * (size_t)sw;
            double norm = 0;
            for (int j = 0; j < sw; j++) {
                ck_assert_msg(fabsf(state[j] - stored[j]) < 1e-5, "block %lld env %d state[%d]: "
                              "learner %.7f, acting %.7f", (long long)last, b, j, state[j],
                              stored[j]);
                norm += fabsf(stored[j]);
            }
            carried += norm > 0;
            zeroed += norm == 0;
        }
    ck_assert_int_gt(carried, 0); /* blocks that begin mid-episode and at an episode's start */
    ck_assert_int_gt(zeroed, 0);
    free(ws);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
}
END_TEST

/* Rewards finite as floats whose two-step return is not (3e38 + 0.99 x 3e38): every
 * target is infinite. The run ends as diverged before the update touches the weights
 * or the priorities; the learner once took such targets for autoreset rows (it marked
 * those with NaN) or wrote infinite priorities into its sum tree. */
START_TEST(infinite_target_is_divergence)
{
    enum { N = 2 };
    frl_runtime *rt = frl_test_runtime(1);
    frl_space *os, *as;
    counter_env envs[N] = {{0, 0, 0, 0, 3e38f}, {1, 0, 0, 0, 3e38f}};
    frl_vec_env *v = counter_venv(rt, envs, N, &os, &as);
    frl_config *cfg = frl_test_settings("train.algo=r2d2 train.seq_length=8 train.seq_overlap=4 "
                                        "train.burn_in=2 train.buffer_size=256 train.n_step=2 "
                                        "train.batch_size=4 train.learning_starts=32 "
                                        "train.value_rescale=false policy.core=gru "
                                        "policy.core_size=8 policy.hidden=8");
    frl_trainer *t;
    ck_assert_msg(frl_trainer_create_vec(&t, rt, v, cfg) == FRL_OK, "%s", frl_last_error());
    frl_config_destroy(cfg);
    frl_policy *p = t->policy;
    float *before = malloc(sizeof(float) * p->num_params);
    memcpy(before, p->params, sizeof(float) * p->num_params);
    ck_assert_int_eq(frl_trainer_train(t, 400), FRL_ERR_NONFINITE);
    ck_assert_msg(strstr(frl_trainer_last_error(t), "training diverged: a target"), "%s",
                  frl_trainer_last_error(t));
    ck_assert_msg(memcmp(before, p->params, sizeof(float) * p->num_params) == 0,
                  "the diverged update changed the weights");
    free(before);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
}
END_TEST

/* The metrics' q_mean is the mean Q of the drawn actions on the scale of the returns,
 * as documented (and comparable with DQN's): the network learns h(Q) under
 * train.value_rescale, so the mean is of h^-1 of its outputs. A network whose output is
 * h(50) everywhere (weights 0, the Q-head's biases h(50); lr 0 keeps it) reports 50; it
 * reported h(50) = 6.2. */
/* The n-step targets, on a constant Q (both networks output 10, lr 0, no rescaling):
 * gamma 0.5, n = 3, rewards 1, sequences of 8 steps after a burn-in of 3. Episodes that
 * never end: rows 3..7 sum min(3, 8 - t) rewards and bootstrap 10 at the sequence's end
 * (targets 3, 3, 3, 4, 6; |TD| 6.2). Episodes of 3 steps make every block the same 4
 * rows (3 steps, the autoreset row): rows 3 and 7 train nothing; truncated, rows 4..6
 * bootstrap from row 7's final observation (3, 4, 6; 17/3); terminated, they do not
 * (1.75, 1.5, 1; 25.75/3). Each sequence's priority mixes its largest and mean |TD|. */
START_TEST(nstep_targets_at_boundaries)
{
    enum { N = 2 };
    frl_runtime *rt = frl_test_runtime(1);
    frl_space *os, *as;
    int len = _i ? 3 : 0, tr = _i == 1;
    double want[3] = {6.2, 17.0 / 3.0, 25.75 / 3.0};
    counter_env envs[N] = {{0, 0, len, tr, 1.0f}, {1, 0, len, tr, 1.0f}};
    frl_vec_env *v = counter_venv(rt, envs, N, &os, &as);
    frl_config *cfg = frl_test_settings("train.algo=r2d2 train.seq_length=8 train.seq_overlap=4 "
                                        "train.burn_in=3 train.buffer_size=256 train.n_step=3 "
                                        "train.gamma=0.5 train.batch_size=4 "
                                        "train.learning_starts=32 train.lr=0 train.replay_ratio=5 "
                                        "train.value_rescale=false policy.head=q policy.core=gru "
                                        "policy.core_size=8 policy.hidden=8");
    frl_trainer *t;
    ck_assert_msg(frl_trainer_create_vec(&t, rt, v, cfg) == FRL_OK, "%s", frl_last_error());
    frl_config_destroy(cfg);
    frl_policy *p = t->policy;
    float *nets[2] = {p->params, t->learner.nets.net[1].params};
    for (int i = 0; i < 2; i++) {
        memset(nets[i], 0, sizeof(float) * p->num_params);
        for (int32_t a = 0; a < p->out_w; a++)
            nets[i][p->actor.off_b[p->actor.layers - 1] + (size_t)a] = 10.0f;
    }
    ck_assert_int_eq(frl_trainer_train(t, 200), FRL_OK);
    const frl_metrics *m = frl_trainer_metrics(t);
    ck_assert_int_gt(m->epochs_done, 0);
    ck_assert_msg(fabs(m->td_error - want[_i]) < 1e-4, "td_error %g want %g", m->td_error,
                  want[_i]);
    /* every sequence's priority the same: eta max|TD| + (1 - eta) mean|TD| (+ 1e-6),
     * eta 0.9; the largest seen, as the learner saves it (r2d2.counters) */
    double maxes[3] = {7, 7, 9}, pr = 0.9 * maxes[_i] + 0.1 * want[_i] + 1e-6;
    frl_section sec[8];
    int32_t ns = 0;
    int64_t adam_steps;
    t->learner.ops->save(&t->learner, sec, &ns, &adam_steps);
    ck_assert_str_eq(sec[2].name, "r2d2.counters");
    const double *c = sec[2].data;
    ck_assert_msg(fabs(c[2] - pr) < 1e-5, "largest priority %.7g, want %.7g", c[2], pr);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(q_mean_on_return_scale)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_trainer *t;
    ck_assert_int_eq(create_builtin(rt, "CartPoleNoVel-v1",
                                    "train.algo=r2d2 train.num_envs=4 train.seq_length=16 "
                                    "train.seq_overlap=8 train.burn_in=4 train.buffer_size=4096 "
                                    "train.batch_size=8 train.learning_starts=200 train.lr=0 "
                                    "train.replay_ratio=4 policy.head=q policy.core_size=8 "
                                    "policy.hidden=8", &t),
                     FRL_OK);
    frl_policy *p = t->policy;
    memset(p->params, 0, sizeof(float) * p->num_params);
    for (int32_t a = 0; a < p->out_w; a++)
        p->params[p->actor.off_b[p->actor.layers - 1] + (size_t)a] =
            (float)frl_r2d2_rescale(50.0);
    ck_assert_msg(frl_trainer_train(t, 600) == FRL_OK, "%s", frl_trainer_last_error(t));
    const frl_metrics *m = frl_trainer_metrics(t);
    ck_assert_int_gt(m->epochs_done, 0);
    ck_assert_msg(fabs(m->q_mean - 50.0) < 1e-3, "q_mean %g", m->q_mean);
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- resume ---- */

static const char resume_settings[] =
    "train.algo=r2d2 train.num_envs=4 train.seq_length=16 train.seq_overlap=8 "
    "train.burn_in=4 train.buffer_size=4096 train.batch_size=8 train.learning_starts=200 "
    "train.replay_ratio=4 train.target_period=10 train.lr=1e-3 policy.core_size=16 "
    "policy.hidden=16";

static frl_trainer *trained_resumed(frl_runtime *rt, int64_t steps, int64_t at, const char *path,
                                    const char *extra)
{
    char text[1024];
    snprintf(text, sizeof text, "%s %s", resume_settings, extra);
    frl_trainer *t;
    ck_assert_int_eq(create_builtin(rt, "CartPoleNoVel-v1", text, &t), FRL_OK);
    stopper s = {t, at};
    frl_trainer_set_callback(t, stop_at, &s);
    ck_assert_int_eq(frl_trainer_train(t, steps), FRL_ERR_INTERRUPTED);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);
    ck_assert_msg(frl_trainer_load(&t, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_msg(frl_trainer_train(t, steps) == FRL_OK, "%s", frl_trainer_last_error(t));
    return t;
}

/* Stopped, saved, loaded and continued: the same weights, target network, replay and
 * priorities as the uninterrupted run, bit for bit; without the replay the run goes on
 * from an empty one. A DQN checkpoint resumed as R2D2 is refused, naming why. */
START_TEST(resume_is_identical)
{
    frl_runtime *rt = frl_test_runtime(2);
    char path[] = "/tmp/frl_r2d2_ckpt_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    frl_trainer *a;
    ck_assert_int_eq(create_builtin(rt, "CartPoleNoVel-v1", resume_settings, &a), FRL_OK);
    ck_assert_msg(frl_trainer_train(a, 2400) == FRL_OK, "%s", frl_trainer_last_error(a));
    ck_assert_double_gt(frl_trainer_metrics(a)->priority_spread, 1.0);
    frl_trainer *b = trained_resumed(rt, 2400, 1300, path, "");
    const frl_policy *pa = frl_trainer_policy(a), *pb = frl_trainer_policy(b);
    ck_assert_mem_eq(pa->params, pb->params, sizeof(float) * pa->num_params);
    ck_assert_mem_eq(a->learner.nets.net[1].params, b->learner.nets.net[1].params,
                     sizeof(float) * pa->num_params);
    ck_assert_int_eq(a->store.replay->filled, b->store.replay->filled);
    ck_assert_int_eq(frl_trainer_metrics(a)->episodes, frl_trainer_metrics(b)->episodes);
    frl_trainer_destroy(b);
    b = trained_resumed(rt, 2400, 1300, path, "train.save_replay=false");
    ck_assert_int_lt(b->store.replay->filled, a->store.replay->filled);
    frl_trainer_destroy(b);
    frl_trainer_destroy(a);
    /* a DQN run's file, continued with train.algo=r2d2 */
    ck_assert_int_eq(create_builtin(rt, "CartPole-v1", "train.algo=dqn train.learning_starts=100",
                                    &a), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(a, 300), FRL_OK);
    ck_assert_int_eq(frl_trainer_save(a, path), FRL_OK);
    frl_trainer_destroy(a);
    frl_config *over = frl_test_settings("train.algo=r2d2");
    b = (frl_trainer *)1;
    ck_assert_int_ne(frl_trainer_load(&b, rt, path, over), FRL_OK);
    ck_assert_ptr_null(b);
    ck_assert_msg(strstr(frl_last_error(), "r2d2"), "'%s' does not name r2d2", frl_last_error());
    frl_config_destroy(over);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* A run resumed with another train.per_alpha: the sequences' priorities, saved as
 * p^0.9, are made again as p^0.5 of the same priorities, also from a file from before
 * r2d2.alpha (by its saved settings); before, the p^0.9 ones stayed beside new p^0.5
 * ones. A file saved under alpha 0 is refused. */
START_TEST(resume_with_another_alpha)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], bad[72], out[72];
    forged_paths("frl_r2d2_alpha", path, bad);
    snprintf(out, sizeof out, "%s.out", path);
    frl_trainer *a;
    ck_assert_int_eq(create_builtin(rt, "CartPoleNoVel-v1", resume_settings, &a), FRL_OK);
    ck_assert_msg(frl_trainer_train(a, 600) == FRL_OK, "%s", frl_trainer_last_error(a));
    ck_assert_int_eq(frl_trainer_save(a, path), FRL_OK);
    frl_trainer_destroy(a);
    check_alpha_remade(rt, path, "r2d2.priorities", "r2d2.alpha", 0.9, 0.5, out, bad);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* Whether sequence k*B + b of n blocks lies in written blocks without crossing the
 * write position of a replay with `filled` of `blocks` blocks, next block `next`. */
static int sequence_whole(int64_t k, int64_t filled, int64_t next, int64_t blocks, int64_t n)
{
    if (filled < blocks)
        return k >= n - 1 && k < filled;
    return (k - next + blocks) % blocks >= n - 1;
}

/* A run continued with longer sequences of the same period (train.seq_length=24
 * train.seq_overlap=16 over 16 and 8: 3 blocks a sequence instead of 2) keeps its replay,
 * but a sequence the saved tree held as whole may now reach back across the write
 * position (the newest block before the oldest) or into unwritten blocks: the load
 * gives those priority 0, and sequences whole only now the largest priority seen. The
 * saved tree once came back as it was, and the run learned across the seam. */
START_TEST(resume_with_longer_sequences)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], bad[72], out[72];
    forged_paths("frl_r2d2_longer", path, bad);
    snprintf(out, sizeof out, "%s.out", path);
    char text[1024];
    snprintf(text, sizeof text, "%s train.buffer_size=512", resume_settings);
    static const int64_t steps[] = {320, 1600}; /* 10 of 16 blocks written; wrapped */
    for (int i = 0; i < 2; i++) {
        frl_trainer *a;
        ck_assert_int_eq(create_builtin(rt, "CartPoleNoVel-v1", text, &a), FRL_OK);
        ck_assert_msg(frl_trainer_train(a, steps[i]) == FRL_OK, "%s", frl_trainer_last_error(a));
        ck_assert_int_eq(frl_trainer_save(a, path), FRL_OK);
        frl_trainer_destroy(a);
        frl_config *over = frl_test_settings("train.seq_length=24 train.seq_overlap=16");
        ck_assert_msg(frl_trainer_load(&a, rt, path, over) == FRL_OK, "%s", frl_last_error());
        frl_config_destroy(over);
        ck_assert_int_eq(frl_trainer_save(a, out), FRL_OK);
        const frl_replay *r = a->store.replay;
        int64_t n, B = r->shape.envs, whole = 0;
        double *v = read_f64(out, "r2d2.priorities", &n);
        ck_assert_int_eq(n, r->blocks * B);
        for (int64_t q = 0; q < n; q++) {
            int w = sequence_whole(q / B, r->filled, r->next, r->blocks, 3);
            ck_assert_msg((v[q] > 0) == w, "after %lld steps, sequence %lld (block %lld; "
                          "%lld filled, next %lld) has priority^alpha %g", (long long)steps[i],
                          (long long)q, (long long)(q / B), (long long)r->filled,
                          (long long)r->next, v[q]);
            whole += w;
        }
        ck_assert_int_gt(whole, 0);
        free(v);
        ck_assert_msg(frl_trainer_train(a, steps[i] + 320) == FRL_OK, "%s",
                      frl_trainer_last_error(a));
        frl_trainer_destroy(a);
    }
    unlink(path);
    unlink(out);
    frl_runtime_destroy(rt);
}
END_TEST

/* A run continued with another train.buffer_size (or rollout length) over its saved
 * replay is refused as doc/api.md says, FRL_ERR_INVALID_ARGUMENT naming the sizes and
 * the way on, as DQN's is: R2D2's priorities, loaded before the replay, once said only
 * that r2d2.priorities had the wrong size (FRL_ERR_FORMAT), as if the file were bad. */
START_TEST(resume_with_another_buffer)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], bad[72];
    forged_paths("frl_r2d2_buffer", path, bad);
    frl_trainer *a;
    ck_assert_int_eq(create_builtin(rt, "CartPoleNoVel-v1", resume_settings, &a), FRL_OK);
    ck_assert_msg(frl_trainer_train(a, 600) == FRL_OK, "%s", frl_trainer_last_error(a));
    ck_assert_int_eq(frl_trainer_save(a, path), FRL_OK);
    frl_trainer_destroy(a);
    frl_config *over = frl_test_settings("train.buffer_size=8192");
    a = (frl_trainer *)1;
    ck_assert_int_eq(frl_trainer_load(&a, rt, path, over), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(a);
    ck_assert_msg(strstr(frl_last_error(), "train.save_replay=false"), "%s", frl_last_error());
    frl_config_destroy(over);
    over = frl_test_settings("train.buffer_size=8192 train.save_replay=false");
    ck_assert_msg(frl_trainer_load(&a, rt, path, over) == FRL_OK, "%s", frl_last_error());
    frl_trainer_destroy(a);
    frl_config_destroy(over);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* A run saved without its replay continues from an empty one whatever it is resumed
 * with (doc/dqn.md, train.save_replay), and saves it from then on if that is true: with
 * train.save_replay=true (the default) the load once asked the file for the
 * r2d2.priorities a replay-less save never writes, and refused it. */
START_TEST(resume_without_replay_then_keep_it)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], bad[72];
    forged_paths("frl_r2d2_norep", path, bad);
    char text[1024];
    snprintf(text, sizeof text, "%s train.save_replay=false", resume_settings);
    frl_trainer *a;
    ck_assert_int_eq(create_builtin(rt, "CartPoleNoVel-v1", text, &a), FRL_OK);
    ck_assert_msg(frl_trainer_train(a, 600) == FRL_OK, "%s", frl_trainer_last_error(a));
    ck_assert_int_eq(frl_trainer_save(a, path), FRL_OK);
    frl_trainer_destroy(a);
    frl_config *over = frl_test_settings("train.save_replay=true");
    ck_assert_msg(frl_trainer_load(&a, rt, path, over) == FRL_OK, "%s", frl_last_error());
    frl_config_destroy(over);
    ck_assert_int_eq(a->store.replay->filled, 0);
    ck_assert_msg(frl_trainer_train(a, 1200) == FRL_OK, "%s", frl_trainer_last_error(a));
    int64_t filled = a->store.replay->filled;
    ck_assert_int_gt(filled, 0);
    ck_assert_int_eq(frl_trainer_save(a, path), FRL_OK);
    frl_trainer_destroy(a);
    ck_assert_msg(frl_trainer_load(&a, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(a->store.replay->filled, filled);
    ck_assert_msg(frl_trainer_train(a, 1400) == FRL_OK, "%s", frl_trainer_last_error(a));
    frl_trainer_destroy(a);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

static void huge_r2d2_updates(void *data, uint64_t count, void *user)
{
    (void)count, (void)user;
    ((double *)data)[0] = 1e300;
}

/* The largest priority seen, finite but beyond any float priority. */
static void huge_r2d2_max_priority(void *data, uint64_t count, void *user)
{
    (void)count, (void)user;
    ((double *)data)[2] = 1e300;
}

/* A largest priority below 1, where every run starts it (the replay's loader refuses
 * the same in replay.max_priority): new sequences would be drawn almost never. */
static void tiny_r2d2_max_priority(void *data, uint64_t count, void *user)
{
    (void)count, (void)user;
    ((double *)data)[2] = 1e-30;
}

/* Every live sequence's leaf at 1e300: finite, but two of them sum to infinity. */
static void huge_r2d2_leaves(void *data, uint64_t count, void *user)
{
    (void)user;
    double *v = data;
    for (uint64_t i = 0; i < count; i++)
        v[i] = v[i] > 0 ? 1e300 : 0.0;
}

/* r2d2.counters' update count is a double in the file: one no run reaches (here 1e300,
 * which overflowed its conversion to int64; found by libFuzzer) is FRL_ERR_FORMAT. So
 * are a largest priority and leaves above any float priority's (priorities are floats):
 * they were taken, and the tree's total overflowed to infinity, every draw's weight
 * became NaN and the next update reported a divergence instead of the file. */
START_TEST(forged_counters_refused)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], bad[72];
    forged_paths("frl_r2d2_bad", path, bad);
    frl_trainer *a;
    ck_assert_int_eq(create_builtin(rt, "CartPoleNoVel-v1", resume_settings, &a), FRL_OK);
    ck_assert_msg(frl_trainer_train(a, 600) == FRL_OK, "%s", frl_trainer_last_error(a));
    ck_assert_int_eq(frl_trainer_save(a, path), FRL_OK);
    frl_trainer_destroy(a);
    static const struct { const char *section; section_edit edit; } forged[] = {
        {"r2d2.counters", huge_r2d2_updates},
        {"r2d2.counters", huge_r2d2_max_priority},
        {"r2d2.counters", tiny_r2d2_max_priority},
        {"r2d2.priorities", huge_r2d2_leaves},
    };
    frl_trainer *b;
    for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++) {
        rewrite_section(path, bad, forged[i].section, forged[i].edit, NULL);
        b = (frl_trainer *)1;
        ck_assert_int_eq(frl_trainer_load(&b, rt, bad, NULL), FRL_ERR_FORMAT);
        ck_assert_ptr_null(b);
        ck_assert_msg(strstr(frl_last_error(), forged[i].section), "%s", frl_last_error());
    }
    ck_assert_msg(frl_trainer_load(&b, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    frl_trainer_destroy(b);
    unlink(path);
    unlink(bad);
    frl_runtime_destroy(rt);
}
END_TEST

/* SEED's layout saved between train calls: two actors' envs, the weights, the target,
 * the replay and the priorities come back, and the run goes on in async mode. */
START_TEST(async_resume)
{
    frl_runtime *rt = frl_test_runtime(2);
    char path[] = "/tmp/frl_r2d2_async_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char text[1024];
    snprintf(text, sizeof text, "%s sampler.mode=async sampler.groups=2", resume_settings);
    frl_trainer *a, *b;
    ck_assert_int_eq(create_builtin(rt, "CartPoleNoVel-v1", text, &a), FRL_OK);
    ck_assert_msg(frl_trainer_train(a, 2400) == FRL_OK, "%s", frl_trainer_last_error(a));
    ck_assert_msg(frl_trainer_save(a, path) == FRL_OK, "%s", frl_last_error());
    ck_assert_msg(frl_trainer_load(&b, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(b->groups, 2);
    const frl_policy *pa = frl_trainer_policy(a), *pb = frl_trainer_policy(b);
    ck_assert_mem_eq(pa->params, pb->params, sizeof(float) * pa->num_params);
    ck_assert_mem_eq(a->learner.nets.net[1].params, b->learner.nets.net[1].params,
                     sizeof(float) * pa->num_params);
    ck_assert_int_eq(a->store.replay->filled, b->store.replay->filled);
    ck_assert_mem_eq(a->book.state, b->book.state,
                     sizeof(float) * (size_t)a->B * (size_t)pa->state_w);
    for (int g = 0; g < 2; g++)
        ck_assert_mem_eq(frl_vec_env_observations(a->venvs[g]),
                         frl_vec_env_observations(b->venvs[g]),
                         sizeof(float) * 2 * (size_t)a->venvs[g]->n);
    ck_assert_double_eq(pb->env_epsilon[0], 0.4);
    ck_assert_msg(frl_trainer_train(b, 4000) == FRL_OK, "%s", frl_trainer_last_error(b));
    ck_assert_int_gt(b->store.replay->filled, a->store.replay->filled);
    frl_trainer_destroy(b);
    frl_trainer_destroy(a);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* Learning: the memory probe with a short delay (D = 4, K = 2) is answered from the
 * stored state: sequences of 6 steps start anywhere in the 6-step episodes, so most see
 * the cue only through the state acting had. */
START_TEST(learns_memory_probe)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_trainer *t;
    ck_assert_int_eq(create_builtin(rt, "MemoryProbe-v0",
                                    "env.memory_delay=4 env.memory_cues=2 train.algo=r2d2 "
                                    "train.seq_length=6 train.seq_overlap=3 train.burn_in=2 "
                                    "train.batch_size=32 train.lr=2e-3 train.gamma=0.9 "
                                    "train.n_step=3 train.replay_ratio=8 train.target_period=50 "
                                    "train.learning_starts=1000 train.buffer_size=20000 "
                                    "policy.core_size=16 policy.hidden=16 train.num_envs=8",
                                    &t), FRL_OK);
    ck_assert_msg(frl_trainer_train(t, FRL_TEST_SHORT ? 3000 : 30000) == FRL_OK, "%s",
                  frl_trainer_last_error(t));
    frl_eval_args ea;
    frl_eval_args_init(&ea);
    ea.episodes = 200;
    double right = 0;
    /* on envs of its own: the trainer's are the trainer's alone */
    frl_config *ec = frl_test_settings("env.memory_delay=4 env.memory_cues=2");
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "MemoryProbe-v0", 8, ec), FRL_OK);
    ck_assert_int_eq(frl_policy_evaluate(frl_trainer_policy(t), v, &ea, &right), FRL_OK);
    frl_vec_env_destroy(v);
    frl_config_destroy(ec);
    if (FRL_TEST_SHORT) {
        /* 3 to 10 times slower: the calls run, the plain builds check the learning */
        printf("learns_memory_probe: short build (a sanitizer or a second build), 3K steps, "
               "learning not checked (greedy share %.3f)\n", right);
        ck_assert(right >= 0 && right <= 1);
    } else {
        ck_assert_msg(right >= 0.9, "greedy share right %.3f after training", right);
    }
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("r2d2");
    TCase *units = tcase_create("units"), *resume = tcase_create("resume"),
          *learning = tcase_create("learning");
    tcase_add_test(units, refuses_bad_settings);
    tcase_add_test(units, value_rescale);
    tcase_add_test(units, sum_tree_finds);
    tcase_add_loop_test(units, recurrent_q_gradient, 0, 2);
    tcase_add_test(units, acting_matches_sequence);
    tcase_add_test(units, learner_resets_where_acting_did);
    tcase_add_test(units, actor_epsilons);
    tcase_add_test(units, sequences_span_blocks);
    tcase_add_test(units, q_mean_on_return_scale);
    tcase_add_loop_test(units, nstep_targets_at_boundaries, 0, 3);
    tcase_add_test(units, infinite_target_is_divergence);
    tcase_add_test(resume, resume_is_identical);
    tcase_add_test(resume, forged_counters_refused);
    tcase_add_test(resume, resume_with_another_alpha);
    tcase_add_test(resume, resume_with_longer_sequences);
    tcase_add_test(resume, resume_with_another_buffer);
    tcase_add_test(resume, resume_without_replay_then_keep_it);
    tcase_add_test(resume, async_resume);
    tcase_add_test(learning, learns_memory_probe);
    TCase *all[] = {units, resume, learning};
    for (int i = 0; i < 3; i++) {
        tcase_set_timeout(all[i], 300);
        suite_add_tcase(s, all[i]);
    }
    return frl_test_run(s);
}
