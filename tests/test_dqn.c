/* train.algo=dqn (lib/algo/dqn.c) and the Q-policies it learns (policy.head=q,
 * dueling_q; lib/rl/policy.c).
 *
 * The probe: a two-step episode with known values. At x0 action a pays r0[a] and moves
 * to x1; at x1 action a pays r1[a] and ends the episode. With gamma 0.5,
 * Q(x1, a) = r1[a] and Q(x0, a) = r0[a] + 0.5 max r1: the first two only through the
 * target network's bootstrap, and a learner that bootstrapped through the termination
 * would overshoot Q(x1, .). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rl/policy.h"
#include "trainer/trainer.h"
#include "test_util.h"
#include "trainer_checks.h"

static const float r0[2] = {0.0f, 1.0f}, r1[2] = {1.0f, 3.0f};

typedef struct probe {
    int pos;
    int nan_at;     /* > 0: the nan_at-th step's reward is NaN */
    int steps;
    float scale;    /* != 0: rewards times this */
} probe;

static int probe_reset(void *user, uint64_t seed, float *obs)
{
    (void)seed;
    ((probe *)user)->pos = 0;
    obs[0] = 1.0f;
    obs[1] = 0.0f;
    return 0;
}

static int probe_step(void *user, const void *action, float *obs, float *reward,
                      uint8_t *terminated, uint8_t *truncated)
{
    probe *p = user;
    int32_t a = *(const int32_t *)action;
    *reward = p->pos == 0 ? r0[a] : r1[a];
    if (++p->steps == p->nan_at)
        *reward = NAN;
    if (p->scale != 0)
        *reward *= p->scale;
    *terminated = (uint8_t)(p->pos == 1);
    *truncated = 0;
    p->pos = 1;
    obs[0] = 0.0f;
    obs[1] = 1.0f;
    return 0;
}

enum { PROBE_ENVS = 4 };

static frl_vec_env *probe_envs(frl_runtime *rt, probe *envs, int n)
{
    int64_t w = 2;
    frl_space *os, *as;
    ck_assert_int_eq(frl_space_create_box(&os, NULL, 1, &w, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 2), FRL_OK);
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = probe_reset;
    cb.step = probe_step;
    void *users[PROBE_ENVS];
    for (int i = 0; i < n; i++)
        users[i] = &envs[i];
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, n, os, as, NULL), FRL_OK);
    frl_space_destroy(os);
    frl_space_destroy(as);
    return v;
}

static const char probe_settings[] =
    "train.algo=dqn train.gamma=0.5 train.train_freq=8 train.learning_starts=64 "
    "train.buffer_size=2048 train.batch_size=32 train.gradient_steps=4 "
    "train.target_update_interval=32 train.lr=3e-3 train.exploration_fraction=0.2 "
    "policy.hidden=16";

static frl_trainer *probe_trainer(frl_runtime *rt, probe *envs, frl_vec_env **v,
                                  const char *extra)
{
    memset(envs, 0, sizeof(probe) * PROBE_ENVS);
    *v = probe_envs(rt, envs, PROBE_ENVS);
    char text[1024];
    snprintf(text, sizeof text, "%s %s", probe_settings, extra ? extra : "");
    frl_config *cfg = frl_test_settings(text);
    frl_trainer *t;
    ck_assert_msg(frl_trainer_create_vec(&t, rt, *v, cfg) == FRL_OK, "%s", frl_last_error());
    frl_config_destroy(cfg);
    return t;
}

/* Q of the probe's four (state, action) pairs: rows x0 then x1. */
static void probe_q(frl_policy *p, float q[4])
{
    float x[4] = {1, 0, 0, 1};
    float *ws = malloc(sizeof(float) * frl_policy_pass_floats(p, 2, 0));
    frl_pass f;
    frl_policy_pass_layout(p, 2, 0, ws, &f);
    frl_policy_forward(p, p->params, 2, x, &f);
    memcpy(q, f.out, sizeof(float) * 4);
    free(ws);
}

static void check_probe_values(const char *extra)
{
    frl_runtime *rt = frl_test_runtime(1);
    probe envs[PROBE_ENVS];
    frl_vec_env *v;
    frl_trainer *t = probe_trainer(rt, envs, &v, extra);
    ck_assert_msg(frl_trainer_train(t, 12000) == FRL_OK, "%s", frl_trainer_last_error(t));
    float q[4];
    probe_q(frl_trainer_policy(t), q);
    double best1 = r1[0] > r1[1] ? r1[0] : r1[1];
    const double want[4] = {r0[0] + 0.5 * best1, r0[1] + 0.5 * best1, r1[0], r1[1]};
    for (int i = 0; i < 4; i++)
        ck_assert_msg(fabs(q[i] - want[i]) < 0.1, "%s: Q[%d] = %.4f, want %.4f", extra, i, q[i],
                      want[i]);
    const frl_metrics *m = frl_trainer_metrics(t);
    ck_assert_double_lt(m->value_loss, 1e-2);
    ck_assert_double_eq_tol(m->epsilon, 0.05, 1e-12);
    ck_assert_double_gt(m->replay_fill, 0.5);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}

START_TEST(probe_values)
{
    static const char *const variants[] = {
        "", "policy.head=dueling_q", "train.double_q=true", "train.loss=mse train.tau=0.5",
        "train.prioritized=true",
    };
    check_probe_values(variants[_i]);
}
END_TEST

/* ---- settings and spaces DQN refuses ---- */

START_TEST(refuses_bad_settings)
{
    frl_runtime *rt = frl_test_runtime(1);
    expect_refused(rt, "Pendulum-v1", "train.algo=dqn", FRL_ERR_UNSUPPORTED,
                   "needs a discrete action space");
    /* The way on for a box is another algorithm, not only another head (which
     * train.algo=dqn then refuses). */
    expect_refused(rt, "Pendulum-v1", "train.algo=dqn", FRL_ERR_UNSUPPORTED,
                   "train.algo=ppo");
    expect_refused(rt, "CartPole-v1", "train.algo=dqn policy.head=actor_critic",
                   FRL_ERR_INVALID_ARGUMENT, "policy.head=q or dueling_q");
    expect_refused(rt, "CartPole-v1", "train.algo=ppo policy.head=q", FRL_ERR_INVALID_ARGUMENT,
                   "use train.algo=dqn");
    expect_refused(rt, "CartPole-v1", "train.algo=dqn train.num_envs=4 sampler.mode=async", FRL_ERR_UNSUPPORTED,
                   "sampler.mode=sync");
    expect_refused(rt, "CartPole-v1", "train.algo=dqn policy.head=q policy.core=gru",
                   FRL_ERR_UNSUPPORTED, "recurrent Q-networks");
    expect_refused(rt, "CartPole-v1", "train.algo=dqn policy.head=dueling_q policy.hidden=",
                   FRL_ERR_INVALID_ARGUMENT, "at least one hidden layer");
    /* 2^50 transitions of CartPole: the error gives the bytes it would take. */
    expect_refused(rt, "CartPole-v1", "train.algo=dqn train.buffer_size=1125899906842624",
                   FRL_ERR_SIZE, "bytes");
    frl_runtime_destroy(rt);
}
END_TEST

/* A NaN reward from a host env stops training with FRL_ERR_NONFINITE naming it. */
START_TEST(nan_reward_is_an_error)
{
    frl_runtime *rt = frl_test_runtime(1);
    probe envs[PROBE_ENVS];
    frl_vec_env *v;
    frl_trainer *t = probe_trainer(rt, envs, &v, NULL);
    envs[2].nan_at = 300;
    frl_status st = frl_trainer_train(t, 4000);
    ck_assert_int_eq(st, FRL_ERR_NONFINITE);
    ck_assert_msg(strstr(frl_trainer_last_error(t), "reward"), "%s", frl_trainer_last_error(t));
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* Rewards finite as floats whose two-step return is not (1e38 + 0.99 * 3e38): the TD
 * errors and so the priorities become infinite. The run ends as diverged, naming the TD
 * error, not with the replay's "priority ... is inf". */
START_TEST(infinite_td_error_is_divergence)
{
    frl_runtime *rt = frl_test_runtime(1);
    probe envs[PROBE_ENVS];
    frl_vec_env *v;
    frl_trainer *t = probe_trainer(rt, envs, &v,
                                   "train.prioritized=true train.n_step=2 train.gamma=0.99");
    for (int i = 0; i < PROBE_ENVS; i++)
        envs[i].scale = 1e38f;
    frl_status st = frl_trainer_train(t, 4000);
    ck_assert_int_eq(st, FRL_ERR_NONFINITE);
    ck_assert_msg(strstr(frl_trainer_last_error(t), "training diverged: a TD error"), "%s",
                  frl_trainer_last_error(t));
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- epsilon ---- */

typedef struct eps_log {
    int n;
    int64_t steps[512];
    double eps[512];
} eps_log;

static int record_eps(void *user, const frl_metrics *m)
{
    eps_log *l = user;
    if (l->n < 512) {
        l->steps[l->n] = m->env_steps;
        l->eps[l->n++] = m->epsilon;
    }
    return 0;
}

/* 1 before learning starts, then SB3's line from exploration_initial_eps to _final_eps
 * over exploration_fraction of the budget, then flat. A rollout acts with the epsilon of
 * the steps before it. */
START_TEST(epsilon_schedule)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_trainer *t;
    ck_assert_int_eq(create_builtin(rt, "CartPole-v1",
                                    "train.algo=dqn train.train_freq=100 train.learning_starts=1000 "
                                    "train.exploration_fraction=0.5 train.exploration_initial_eps=0.8 "
                                    "train.exploration_final_eps=0.1", &t), FRL_OK);
    eps_log log = {0};
    frl_trainer_set_callback(t, record_eps, &log);
    ck_assert_int_eq(frl_trainer_train(t, 10000), FRL_OK);
    ck_assert_int_eq(log.n, 100);
    for (int i = 0; i < log.n; i++) {
        int64_t before = log.steps[i] - 100;
        double p = (double)before / 10000.0;
        double want = before < 1000 ? 1.0 : p >= 0.5 ? 0.1 : 0.8 + (0.1 - 0.8) * p / 0.5;
        ck_assert_msg(fabs(log.eps[i] - want) < 1e-12, "rollout at %lld: epsilon %.6f, want %.6f",
                      (long long)before, log.eps[i], want);
    }
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
}
END_TEST

/* What SB3 and CleanRL users read these settings as: gradient_steps=-1 learns one
 * minibatch per env step collected (train_freq x num_envs), loss=mse is CleanRL's
 * mse_loss (e^2: with one transition a minibatch the loss is the TD error squared), and
 * replay_fill reaches 1 once the replay is full (autoreset rows included). */
typedef struct sb3_log {
    int n;
    double epochs[64], loss[64], td[64], fill;
} sb3_log;

static int record_sb3(void *user, const frl_metrics *m)
{
    sb3_log *l = user;
    if (l->n < 64) {
        l->epochs[l->n] = m->epochs_done;
        l->loss[l->n] = m->value_loss;
        l->td[l->n++] = m->td_error;
    }
    l->fill = m->replay_fill;
    return 0;
}

START_TEST(settings_read_as_sb3_and_cleanrl)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_trainer *t;
    ck_assert_int_eq(create_builtin(rt, "CartPole-v1",
                                    "train.algo=dqn train.num_envs=4 train.train_freq=8 "
                                    "train.gradient_steps=-1 train.learning_starts=64 "
                                    "train.batch_size=4 train.buffer_size=256 train.log_every=0",
                                    &t), FRL_OK);
    sb3_log log = {0};
    frl_trainer_set_callback(t, record_sb3, &log);
    ck_assert_int_eq(frl_trainer_train(t, 32 * 40), FRL_OK);
    ck_assert_int_eq(log.n, 40);
    ck_assert_double_eq(log.epochs[log.n - 1], 32); /* 8 steps x 4 envs, not 8 */
    ck_assert_double_eq(log.fill, 1.0);
    frl_trainer_destroy(t);
    ck_assert_int_eq(create_builtin(rt, "CartPole-v1",
                                    "train.algo=dqn train.loss=mse train.batch_size=1 "
                                    "train.gradient_steps=1 train.learning_starts=16 "
                                    "train.log_every=0", &t), FRL_OK);
    log.n = 0;
    frl_trainer_set_callback(t, record_sb3, &log);
    ck_assert_int_eq(frl_trainer_train(t, 400), FRL_OK);
    int checked = 0;
    for (int i = 0; i < log.n; i++)
        if (log.epochs[i] > 0) {
            ck_assert_msg(fabs(log.loss[i] - log.td[i] * log.td[i]) <= 1e-6 * log.loss[i] + 1e-12,
                          "mse loss %.9g, TD error %.9g", log.loss[i], log.td[i]);
            checked += log.td[i] > 0;
        }
    ck_assert_int_gt(checked, 5);
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
}
END_TEST

/* A replay holding only autoreset rows has nothing to learn from, which is no error:
 * here a replay of one 1 x 1 block, overwritten every step, holds only the reset row
 * after each episode's end (as a run resumed without its replay, rollouts of one step,
 * does after a save that followed an episode's end). Such rollouts learn nothing, the
 * others one minibatch. */
START_TEST(replay_of_reset_rows_learns_nothing)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_trainer *t;
    ck_assert_int_eq(create_builtin(rt, "CartPole-v1",
                                    "train.algo=dqn train.buffer_size=1 train.train_freq=1 "
                                    "train.learning_starts=0 train.batch_size=4 "
                                    "train.log_every=0", &t), FRL_OK);
    sb3_log log = {0};
    frl_trainer_set_callback(t, record_sb3, &log);
    ck_assert_msg(frl_trainer_train(t, 60) == FRL_OK, "%s", frl_trainer_last_error(t));
    ck_assert_int_ge(frl_trainer_metrics(t)->episodes, 1);
    int idle = 0;
    for (int i = 0; i < log.n; i++)
        idle += log.epochs[i] == 0;
    ck_assert_int_eq(idle, (int)frl_trainer_metrics(t)->episodes);
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- the Q-policy through the policy API ---- */

/* Greedy acting takes the argmax, epsilon 1 acts uniformly, values are max Q; a saved
 * and loaded Q-policy keeps its head. */
START_TEST(q_policy_acts)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_trainer *t;
    ck_assert_int_eq(create_builtin(rt, "CartPole-v1", "train.algo=dqn policy.head=dueling_q", &t),
                     FRL_OK);
    frl_policy *p = frl_trainer_policy(t);
    enum { N = 2000 };
    static float obs[N * 4], values[N];
    static int32_t act[N];
    for (int i = 0; i < N * 4; i++)
        obs[i] = (float)((i * 37 % 101) - 50) / 50.0f;
    frl_act_args a;
    frl_act_args_init(&a);
    frl_test_act_widths(&a, p);
    a.batch = N;
    a.observations = obs;
    a.actions = act;
    a.values = values;
    a.deterministic = 1;
    ck_assert_int_eq(frl_policy_act(p, &a), FRL_OK);
    float *ws = malloc(sizeof(float) * frl_policy_pass_floats(p, N, 0));
    frl_pass f;
    frl_policy_pass_layout(p, N, 0, ws, &f);
    frl_policy_forward(p, p->params, N, obs, &f);
    for (int i = 0; i < N; i++) {
        const float *q = f.out + 2 * i;
        ck_assert_int_eq(act[i], q[1] > q[0] ? 1 : 0);
        ck_assert_float_eq(values[i], q[1] > q[0] ? q[1] : q[0]);
    }
    free(ws);
    atomic_store(&p->epsilon, 1.0);
    a.deterministic = 0;
    a.values = NULL;
    ck_assert_int_eq(frl_policy_act(p, &a), FRL_OK);
    int ones = 0;
    for (int i = 0; i < N; i++)
        ones += act[i];
    ck_assert_msg(ones > N / 2 - 150 && ones < N / 2 + 150, "%d of %d ones at epsilon 1", ones, N);
    char path[] = "/tmp/frl_dqn_policy_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(frl_policy_save(p, path), FRL_OK);
    frl_policy *back;
    ck_assert_msg(frl_policy_load(&back, rt, path) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(back->head, FRL_POLICY_HEAD_DUELING_Q);
    ck_assert_int_eq(back->num_params, p->num_params);
    ck_assert_mem_eq(back->params, p->params, sizeof(float) * p->num_params);
    frl_policy_destroy(back);
    unlink(path);
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
}
END_TEST

/* The dueling head's backward pass against central differences of
 * L = sum c_ij Q_ij (double the float steps' noise allowed). */
START_TEST(dueling_gradient)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_trainer *t;
    ck_assert_int_eq(create_builtin(rt, "Acrobot-v1",
                                    "train.algo=dqn policy.head=dueling_q policy.hidden=8,8 "
                                    "policy.activation=tanh", &t), FRL_OK);
    frl_policy *p = frl_trainer_policy(t);
    enum { R = 5 };
    int32_t n = p->out_w, w = p->obs_w;
    float obs[R * 6], c[R * 3];
    for (int i = 0; i < R * w; i++)
        obs[i] = (float)sin(0.7 * i);
    for (int i = 0; i < R * n; i++)
        c[i] = (float)cos(1.3 * i);
    float *ws = malloc(sizeof(float) * frl_policy_pass_floats(p, R, 1));
    float *g = malloc(sizeof(float) * p->num_params);
    frl_pass f;
    frl_policy_pass_layout(p, R, 1, ws, &f);
    frl_policy_forward(p, p->params, R, obs, &f);
    memcpy(f.d_out, c, sizeof c);
    frl_policy_backward(p, p->params, g, R, &f);
    float *fw = malloc(sizeof(float) * frl_policy_pass_floats(p, R, 0));
    for (size_t k = 0; k < p->num_params; k += 7) {
        double L[2];
        float keep = p->params[k];
        for (int s = 0; s < 2; s++) {
            p->params[k] = keep + (s ? 1e-2f : -1e-2f);
            frl_pass e;
            frl_policy_pass_layout(p, R, 0, fw, &e);
            frl_policy_forward(p, p->params, R, obs, &e);
            L[s] = 0;
            for (int i = 0; i < R * n; i++)
                L[s] += (double)c[i] * e.out[i];
        }
        p->params[k] = keep;
        double fd = (L[1] - L[0]) / 2e-2;
        ck_assert_msg(fabs(fd - g[k]) < 2e-3 + 2e-2 * fabs(fd), "param %zu: backward %.6f, "
                      "differences %.6f", k, g[k], fd);
    }
    free(fw);
    free(g);
    free(ws);
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
}
END_TEST

/* DQN starts from PyTorch's nn.Linear init (policy.init=uniform): every weight and
 * bias of a layer in +-1/sqrt(fan_in), spread as a uniform's (mean 0, variance b^2/3). */
START_TEST(uniform_init)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_trainer *t;
    ck_assert_int_eq(create_builtin(rt, "CartPole-v1", "train.algo=dqn policy.hidden=256,64", &t),
                     FRL_OK);
    const frl_policy *p = frl_trainer_policy(t);
    const frl_mlp *m = &p->actor;
    ck_assert_int_eq(m->layers, 3);
    for (int32_t l = 0; l < m->layers; l++) {
        size_t in = (size_t)m->width[l], out = (size_t)m->width[l + 1], n = in * out + out;
        double b = 1.0 / sqrt((double)in), sum = 0, sq = 0;
        for (size_t j = 0; j < in * out; j++) {
            double w = p->params[m->off_w[l] + j];
            ck_assert_double_le(fabs(w), b);
            sum += w;
            sq += w * w;
        }
        for (size_t j = 0; j < out; j++) {
            double w = p->params[m->off_b[l] + j];
            ck_assert_double_le(fabs(w), b);
            sum += w;
            sq += w * w;
        }
        double var = b * b / 3;
        ck_assert_msg(fabs(sum / n) < 4 * sqrt(var / n), "layer %d mean %g", (int)l, sum / n);
        ck_assert_msg(fabs(sq / n - var) < 0.2 * var, "layer %d variance %g, want %g", (int)l,
                      sq / n, var);
    }
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
}
END_TEST

/* The public view of the replay: the info, and the newest block's records against the
 * ring slot it was copied from (still holding that rollout between train calls). */
START_TEST(replay_public_view)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_trainer *t, *ppo;
    ck_assert_int_eq(create_builtin(rt, "CartPole-v1",
                                    "train.algo=dqn train.num_envs=3 train.train_freq=16 "
                                    "train.buffer_size=480", &t), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 16 * 3 * 13), FRL_OK);
    frl_replay *r = frl_trainer_replay(t);
    ck_assert_ptr_nonnull(r);
    frl_replay_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = 8;
    ck_assert_int_eq(frl_replay_get_info(r, &info), FRL_ERR_SIZE);
    info.struct_size = sizeof info;
    ck_assert_int_eq(frl_replay_get_info(r, &info), FRL_OK);
    ck_assert_int_eq(info.capacity, 480);
    ck_assert_int_eq(info.blocks, 10);
    ck_assert_int_eq(info.filled, 10);
    ck_assert_int_eq(info.next, 3);  /* 13 rollouts into 10 blocks */
    ck_assert_int_eq(info.steps, 16);
    ck_assert_int_eq(info.envs, 3);
    ck_assert_int_eq(info.observation_width, 4);
    ck_assert_int_eq(info.record_bytes, 32);
    void *rows, *sum;
    size_t bytes, sum_bytes;
    ck_assert_int_eq(frl_replay_array(r, FRL_REPLAY_ROWS, &rows, &bytes), FRL_OK);
    ck_assert_uint_eq(bytes, (size_t)10 * 3 * 17 * 32);
    ck_assert_int_eq(frl_replay_array(r, FRL_REPLAY_SUM_TREE, &sum, &sum_bytes), FRL_OK);
    ck_assert_uint_eq(sum_bytes, 0);
    ck_assert_int_eq(frl_replay_array(r, (frl_replay_array_id)9, &rows, &bytes),
                     FRL_ERR_UNKNOWN_NAME);
    frl_ring *ring = frl_trainer_ring(t);
    void *obs, *act, *rew, *reset;
    size_t nb;
    ck_assert_int_eq(frl_ring_array(ring, 0, FRL_RING_OBSERVATIONS, &obs, &nb), FRL_OK);
    ck_assert_int_eq(frl_ring_array(ring, 0, FRL_RING_ACTIONS, &act, &nb), FRL_OK);
    ck_assert_int_eq(frl_ring_array(ring, 0, FRL_RING_REWARDS, &rew, &nb), FRL_OK);
    ck_assert_int_eq(frl_ring_array(ring, 0, FRL_RING_RESET_STEPS, &reset, &nb), FRL_OK);
    int64_t live = 0;
    for (int b = 0; b < 3; b++)
        for (int s = 0; s < 16; s++) {
            const unsigned char *rec = (const unsigned char *)rows +
                                       (size_t)((2 * 3 + b) * 17 + s) * info.record_bytes;
            size_t i = (size_t)s * 3 + (size_t)b;
            ck_assert_mem_eq(rec, (const float *)obs + 4 * i, 16);
            ck_assert_mem_eq(rec + info.offset_action, (const int32_t *)act + i, 4);
            ck_assert_mem_eq(rec + info.offset_reward, (const float *)rew + i, 4);
            ck_assert_int_eq(rec[info.offset_flags + 2], ((const uint8_t *)reset)[i]);
        }
    for (int64_t k = 0; k < info.blocks * 3 * 17; k++) {
        const unsigned char *rec = (const unsigned char *)rows + (size_t)k * info.record_bytes;
        live += (k % 17) != 16 && !rec[info.offset_flags + 2];
    }
    ck_assert_int_eq(info.transitions, live);
    ck_assert_int_eq(create_builtin(rt, "CartPole-v1", "train.algo=ppo", &ppo), FRL_OK);
    ck_assert_ptr_null(frl_trainer_replay(ppo));
    ck_assert_ptr_null(frl_trainer_replay(NULL));
    frl_trainer_destroy(ppo);
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- the learner's shards ---- */

/* The minibatch's shards run on the pool and are summed in shard order: one thread and
 * two learn the same bits. 96 rows are two shards of 48, and 128x128 networks put
 * the parameter passes on the pool too. */
START_TEST(threads_learn_the_same_bits)
{
    static const char settings[] =
        "train.algo=dqn train.train_freq=16 train.num_envs=2 train.learning_starts=300 "
        "train.buffer_size=3000 train.batch_size=96 train.gradient_steps=4 "
        "train.target_update_interval=200 train.double_q=true train.prioritized=true "
        "policy.hidden=128,128";
    frl_trainer *t[2];
    frl_runtime *rt[2];
    for (int i = 0; i < 2; i++) {
        rt[i] = frl_test_runtime(i + 1);
        ck_assert_int_eq(create_builtin(rt[i], "CartPole-v1", settings, &t[i]), FRL_OK);
        ck_assert_msg(frl_trainer_train(t[i], 3000) == FRL_OK, "%s",
                      frl_trainer_last_error(t[i]));
    }
    const frl_policy *a = frl_trainer_policy(t[0]), *b = frl_trainer_policy(t[1]);
    ck_assert_uint_ge(a->num_params, 16384);
    ck_assert_double_gt(frl_trainer_metrics(t[0])->value_loss, 0);
    ck_assert_mem_eq(a->params, b->params, sizeof(float) * a->num_params);
    ck_assert_double_eq(frl_trainer_metrics(t[0])->value_loss,
                        frl_trainer_metrics(t[1])->value_loss);
    for (int i = 0; i < 2; i++) {
        frl_trainer_destroy(t[i]);
        frl_runtime_destroy(rt[i]);
    }
}
END_TEST

/* ---- checkpoints with the replay ---- */

static const char resume_settings[] =
    "train.algo=dqn train.train_freq=16 train.num_envs=2 train.learning_starts=500 "
    "train.buffer_size=3000 train.batch_size=32 train.gradient_steps=2 "
    "train.target_update_interval=300 train.tau=0.9 train.prioritized=true "
    "train.n_step=3 train.double_q=true";

static frl_trainer *trained_straight(frl_runtime *rt, int64_t steps)
{
    frl_trainer *t;
    ck_assert_int_eq(create_builtin(rt, "CartPole-v1", resume_settings, &t), FRL_OK);
    ck_assert_msg(frl_trainer_train(t, steps) == FRL_OK, "%s", frl_trainer_last_error(t));
    return t;
}

/* Stopped at `at` of `steps` (as Ctrl-C does), saved, loaded, continued. */
static frl_trainer *trained_resumed(frl_runtime *rt, int64_t steps, int64_t at, const char *path,
                                    const char *extra)
{
    char text[1024];
    snprintf(text, sizeof text, "%s %s", resume_settings, extra);
    frl_trainer *t;
    ck_assert_int_eq(create_builtin(rt, "CartPole-v1", text, &t), FRL_OK);
    stopper s = {t, at};
    frl_trainer_set_callback(t, stop_at, &s);
    ck_assert_int_eq(frl_trainer_train(t, steps), FRL_ERR_INTERRUPTED);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);
    ck_assert_msg(frl_trainer_load(&t, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_msg(frl_trainer_train(t, steps) == FRL_OK, "%s", frl_trainer_last_error(t));
    return t;
}

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

START_TEST(resume_is_identical)
{
    frl_runtime *rt = frl_test_runtime(2);
    char path[] = "/tmp/frl_dqn_ckpt_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    frl_trainer *a = trained_straight(rt, 4000);
    frl_trainer *b = trained_resumed(rt, 4000, 2200, path, "");
    long with_replay = file_size(path);
    const frl_policy *pa = frl_trainer_policy(a), *pb = frl_trainer_policy(b);
    ck_assert_mem_eq(pa->params, pb->params, sizeof(float) * pa->num_params);
    ck_assert_mem_eq(a->learner.nets.net[1].params, b->learner.nets.net[1].params,
                     sizeof(float) * pa->num_params);
    ck_assert_int_eq(a->store.replay->size, b->store.replay->size);
    ck_assert_double_eq(frl_replay_priority_total(a->store.replay),
                        frl_replay_priority_total(b->store.replay));
    ck_assert_int_eq(frl_trainer_metrics(a)->episodes, frl_trainer_metrics(b)->episodes);
    frl_trainer_destroy(b);
    /* Without the replay: a smaller file, and the continued run refills an empty one. */
    b = trained_resumed(rt, 4000, 2200, path, "train.save_replay=false");
    ck_assert_msg(file_size(path) < with_replay, "%ld bytes without the replay, %ld with",
                  file_size(path), with_replay);
    ck_assert_int_lt(b->store.replay->size, a->store.replay->size);
    frl_trainer_destroy(b);
    frl_trainer_destroy(a);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* The update and env_steps columns of dir's metrics.csv, one "update,steps;" a row. */
static void metrics_steps(const char *dir, char *out, size_t size)
{
    char path[128], line[4096];
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    out[0] = '\0';
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f)); /* the header */
    while (fgets(line, sizeof line, f)) {
        char *second = strchr(line, ',');
        char *third = second ? strchr(second + 1, ',') : NULL;
        ck_assert_ptr_nonnull(third);
        size_t at = strlen(out);
        snprintf(out + at, size - at, "%.*s;", (int)(third - line), line);
    }
    fclose(f);
}

/* train.log_every (DQN's 1000) counted from 0 again after a resume: a row at the first
 * update after it, and the later rows at other steps than the uninterrupted run's. */
START_TEST(resumed_metrics_rows_fall_where_they_would)
{
    frl_runtime *rt = frl_test_runtime(1);
    const char *settings = "train.algo=dqn train.buffer_size=3000 train.learning_starts=200 "
                           "train.num_envs=2 train.train_freq=3";
    char d1[] = "/tmp/frl_dqn_rows_a_XXXXXX", d2[] = "/tmp/frl_dqn_rows_b_XXXXXX";
    char path[64], unused[72];
    ck_assert_ptr_nonnull(mkdtemp(d1));
    ck_assert_ptr_nonnull(mkdtemp(d2));
    forged_paths("frl_dqn_rows", path, unused);
    frl_trainer *t;
    ck_assert_int_eq(create_builtin(rt, "CartPole-v1", settings, &t), FRL_OK);
    ck_assert_int_eq(frl_trainer_set_output(t, d1), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 8000), FRL_OK);
    frl_trainer_destroy(t);
    ck_assert_int_eq(create_builtin(rt, "CartPole-v1", settings, &t), FRL_OK);
    ck_assert_int_eq(frl_trainer_set_output(t, d2), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 2500), FRL_OK); /* between two rows */
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);
    ck_assert_msg(frl_trainer_load(&t, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(frl_trainer_set_output(t, d2), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 8000), FRL_OK);
    frl_trainer_destroy(t);
    char whole[2048], resumed[2048];
    metrics_steps(d1, whole, sizeof whole);
    metrics_steps(d2, resumed, sizeof resumed);
    ck_assert_str_eq(resumed, whole);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s %s", d1, d2, path);
    ck_assert_int_eq(system(cmd), 0);
    frl_runtime_destroy(rt);
}
END_TEST

/* A run continued with settings that make another replay than the saved one (another
 * train.buffer_size or rollout length, or priorities the file lacks) is refused as
 * such, naming the setting and train.save_replay=false, with which it continues. */
START_TEST(resume_with_another_replay_shape)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], unused[72];
    forged_paths("frl_dqn_shape", path, unused);
    frl_trainer *t;
    ck_assert_int_eq(create_builtin(rt, "CartPole-v1", "train.algo=dqn train.buffer_size=1000 "
                                    "train.learning_starts=100", &t), FRL_OK);
    ck_assert_msg(frl_trainer_train(t, 400) == FRL_OK, "%s", frl_trainer_last_error(t));
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);
    static const char *const change[][2] = {
        {"train.buffer_size=2000", "train.buffer_size"},
        {"train.train_freq=8", "rollout length"},
        {"train.prioritized=true", "train.prioritized"},
    };
    for (int i = 0; i < 3; i++) {
        frl_config *cfg = frl_test_settings(change[i][0]);
        frl_trainer *back = (frl_trainer *)1;
        ck_assert_int_eq(frl_trainer_load(&back, rt, path, cfg), FRL_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_null(back);
        ck_assert_msg(strstr(frl_last_error(), change[i][1]) &&
                          strstr(frl_last_error(), "train.save_replay=false"),
                      "%s: %s", change[i][0], frl_last_error());
        frl_config_destroy(cfg);
    }
    frl_config *cfg = frl_test_settings("train.buffer_size=2000 train.save_replay=false");
    ck_assert_msg(frl_trainer_load(&t, rt, path, cfg) == FRL_OK, "%s", frl_last_error());
    ck_assert_msg(frl_trainer_train(t, 800) == FRL_OK, "%s", frl_trainer_last_error(t));
    frl_config_destroy(cfg);
    /* saved without its replay, resumed with train.save_replay=true: it refills, and
     * the next save holds it (it was refused: no section "replay.cursor") */
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);
    cfg = frl_test_settings("train.save_replay=true");
    ck_assert_msg(frl_trainer_load(&t, rt, path, cfg) == FRL_OK, "%s", frl_last_error());
    ck_assert_msg(frl_trainer_train(t, 1200) == FRL_OK, "%s", frl_trainer_last_error(t));
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_config_destroy(cfg);
    frl_trainer_destroy(t);
    ck_assert_msg(frl_trainer_load(&t, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    frl_replay_info info = {.struct_size = sizeof info};
    ck_assert_int_eq(frl_replay_get_info(frl_trainer_replay(t), &info), FRL_OK);
    ck_assert_int_gt(info.filled, 0); /* the replay came back from the file */
    frl_trainer_destroy(t);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* A run resumed with another train.per_alpha: the replay's leaves, saved as p^0.6,
 * are made again as p^0.9 of the same priorities, also from a file from before
 * replay.alpha (by its saved settings); before, the p^0.6 leaves stayed and were drawn
 * beside new p^0.9 ones. A file saved under alpha 0 is refused. */
START_TEST(resume_with_another_alpha)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], bad[72], out[72];
    forged_paths("frl_dqn_alpha", path, bad);
    snprintf(out, sizeof out, "%s.out", path);
    frl_trainer *t = trained_straight(rt, 1500);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);
    check_alpha_remade(rt, path, "replay.priorities", "replay.alpha", 0.6, 0.9, out, bad);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* train.anneal_lr=true lowers the learning rate linearly over the train call's updates,
 * as for PPO (DQN and R2D2 read train.lr alone, ignoring the key the run was given). */
static void check_anneals(const char *env, const char *settings)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg = frl_test_settings(settings);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, env, cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 2000), FRL_OK);
    const frl_metrics *m = frl_trainer_metrics(t);
    int64_t per = m->env_steps / m->update, n = (2000 + per - 1) / per;
    double want = 1e-3 * (1.0 - (double)(m->update - 1) / (double)n);
    ck_assert_msg(fabs(m->learning_rate - want) < 1e-9 && want < 1e-3, "%s: %g, want %g",
                  settings, m->learning_rate, want);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}

START_TEST(anneal_lr_is_read)
{
    check_anneals("CartPole-v1", "train.algo=dqn train.lr=1e-3 train.anneal_lr=true "
                                 "train.learning_starts=100");
    check_anneals("CartPoleNoVel-v1", "train.algo=r2d2 train.lr=1e-3 train.anneal_lr=true");
}
END_TEST

/* The policy in a checkpoint acts with the schedule's epsilon, loaded as a policy
 * (fastrl eval) or as a run (from dqn.epsilon, as before): not policy.epsilon. */
START_TEST(checkpoint_keeps_the_schedules_epsilon)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], bad[72];
    forged_paths("frl_dqn_eps", path, bad);
    frl_trainer *t;
    ck_assert_int_eq(create_builtin(rt, "CartPole-v1", "train.algo=dqn train.num_envs=2 "
                                    "train.learning_starts=64 train.buffer_size=1000 "
                                    "train.exploration_final_eps=0.3", &t), FRL_OK);
    ck_assert_msg(frl_trainer_train(t, 400) == FRL_OK, "%s", frl_trainer_last_error(t));
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    double want = atomic_load(&t->policy->epsilon), got;
    ck_assert_double_eq(want, 0.3);
    frl_policy *p;
    ck_assert_msg(frl_policy_load(&p, rt, path) == FRL_OK, "%s", frl_last_error());
    got = atomic_load(&p->epsilon);
    ck_assert_double_eq(got, want);
    frl_policy_destroy(p);
    frl_trainer *back;
    ck_assert_msg(frl_trainer_load(&back, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    got = atomic_load(&back->policy->epsilon);
    ck_assert_double_eq(got, want);
    frl_trainer_destroy(back);
    frl_trainer_destroy(t);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* A checkpoint with a replay, cut short or with a byte flipped inside the replay's
 * sections, loads as FRL_ERR_FORMAT, and the file is left as it was. */
START_TEST(damaged_replay_file)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[] = "/tmp/frl_dqn_bad_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    frl_trainer *t = trained_straight(rt, 1500);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);
    long n = file_size(path);
    FILE *f = fopen(path, "rb");
    char *bytes = malloc((size_t)n);
    ck_assert_int_eq(fread(bytes, 1, (size_t)n, f), n);
    fclose(f);
    for (int damage = 0; damage < 2; damage++) {
        f = fopen(path, "wb");
        if (damage == 0) {
            fwrite(bytes, 1, (size_t)n * 2 / 3, f);
        } else {
            bytes[n / 2] ^= 0x5a;
            fwrite(bytes, 1, (size_t)n, f);
        }
        fclose(f);
        frl_trainer *back = (frl_trainer *)1;
        ck_assert_int_eq(frl_trainer_load(&back, rt, path, NULL), FRL_ERR_FORMAT);
        ck_assert_ptr_null(back);
    }
    free(bytes);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* The first transition of replay.rows with `damage` (rewrite()'s 0 to 3) done to it. */
typedef struct record_damage {
    const frl_replay *r;
    int damage;
} record_damage;

static void damage_record(void *data, uint64_t count, void *user)
{
    const record_damage *d = user;
    unsigned char *x = data;
    while (x[d->r->off_flags + 2]) /* the first transition */
        x += d->r->rec_bytes;
    ck_assert(x < (unsigned char *)data + count);
    int32_t a = d->damage == 0 ? 2 : -1; /* CartPole has actions 0 and 1 */
    float nan = NAN;
    if (d->damage < 2)
        memcpy(x + d->r->off_action, &a, 4);
    else
        memcpy(x + (d->damage == 2 ? d->r->off_reward : 0), &nan, 4);
}

static void huge_update_count(void *data, uint64_t count, void *user)
{
    (void)count, (void)user;
    ((int64_t *)data)[1] = (int64_t)1 << 61;
}

static void nan_reward_scale(void *data, uint64_t count, void *user)
{
    (void)count, (void)user;
    ((double *)data)[3] = NAN;
}

static void never_reset(void *data, uint64_t count, void *user)
{
    (void)count, (void)user;
    ((int64_t *)data)[3] = 0;
}

static void nan_recent_return(void *data, uint64_t count, void *user)
{
    (void)user;
    ((float *)data)[count - 1] = NAN;
}

static void negative_recent_length(void *data, uint64_t count, void *user)
{
    (void)count, (void)user;
    ((int32_t *)data)[0] = -3;
}

/* dqn.adam is m then v: the last second moment made negative. */
static void negative_second_moment(void *data, uint64_t count, void *user)
{
    (void)user;
    ((float *)data)[count - 1] = -1.0f;
}

/* path's checkpoint written again with one value changed by `damage` (checksums right,
 * contents not): in the first transition of replay.rows 0 an action past the last, 1 a
 * negative action, 2 a NaN reward, 3 a NaN observation; 4 trainer.counters' update
 * count at 2^61; 5 a NaN reward scale in trainer.reward_norm; 6 env.totals saying the
 * envs were never reset, though the counters say the run had started; 7 a negative
 * second moment in dqn.adam; 8 a NaN in the episode window's returns, 9 a negative
 * length in its lengths. */
static void rewrite(const char *src, const char *dst, const frl_replay *r, int damage)
{
    record_damage d = {r, damage};
    if (damage < 4)
        rewrite_section(src, dst, "replay.rows", damage_record, &d);
    else if (damage == 4)
        rewrite_section(src, dst, "trainer.counters", huge_update_count, NULL);
    else if (damage == 5)
        rewrite_section(src, dst, "trainer.reward_norm", nan_reward_scale, NULL);
    else if (damage == 6)
        rewrite_section(src, dst, "env.totals", never_reset, NULL);
    else if (damage == 7)
        rewrite_section(src, dst, "dqn.adam", negative_second_moment, NULL);
    else if (damage == 8)
        rewrite_section(src, dst, "trainer.recent_return", nan_recent_return, NULL);
    else
        rewrite_section(src, dst, "trainer.recent_length", negative_recent_length, NULL);
}

/* A checkpoint whose replay holds an action outside the space or a non-finite reward or
 * observation, or whose counters or reward normaliser no run could have, or whose envs
 * were never reset in a run that had started (the first step failed with
 * FRL_ERR_STATE), or whose Adam state no optimiser could reach, or whose episode window
 * no run could have filled (it feeds train.target_return's check), with every checksum
 * right, loads as FRL_ERR_FORMAT saying what. (The DQN learner indexes its Q
 * outputs by the stored actions, and multiplies the update count by T * B: before the
 * checks, forged files made it write out of bounds and overflow; found by
 * tests/fuzz/libfuzzer.sh.) */
START_TEST(forged_checkpoint_contents)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], bad[72];
    forged_paths("frl_dqn_rec", path, bad);
    frl_trainer *t = trained_straight(rt, 1500);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    static const char *const what[] = {"an action outside the action space",
                                       "an action outside the action space",
                                       "a reward that is not finite",
                                       "an observation that is not finite",
                                       "trainer.counters are out of range",
                                       "trainer.reward_norm is not",
                                       "envs were never reset",
                                       "dqn.adam holds a value out of range",
                                       "trainer.recent_return holds a non-finite value",
                                       "trainer.recent_length holds a negative length"};
    for (int damage = 0; damage < 10; damage++) {
        rewrite(path, bad, t->store.replay, damage);
        frl_trainer *back = (frl_trainer *)1;
        ck_assert_int_eq(frl_trainer_load(&back, rt, bad, NULL), FRL_ERR_FORMAT);
        ck_assert_ptr_null(back);
        ck_assert_msg(strstr(frl_last_error(), what[damage]), "%s", frl_last_error());
    }
    /* The file as saved still loads. */
    frl_trainer *back = NULL;
    ck_assert_msg(frl_trainer_load(&back, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    frl_trainer_destroy(back);
    frl_trainer_destroy(t);
    unlink(path);
    unlink(bad);
    frl_runtime_destroy(rt);
}
END_TEST

/* A PPO run on CartPole (4 envs x 16 steps, `extra` settings) saved, its `section`
 * forged by `edit`: the load is FRL_ERR_FORMAT naming the section, the file as saved
 * still loads. */
static void check_ppo_forged(const char *tag, const char *extra, const char *section,
                             section_edit edit)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], bad[72], settings[128];
    forged_paths(tag, path, bad);
    snprintf(settings, sizeof settings, "train.num_envs=4 train.rollout=16 %s", extra);
    frl_trainer *t;
    ck_assert_int_eq(create_builtin(rt, "CartPole-v1", settings, &t), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 128), FRL_OK);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);
    rewrite_section(path, bad, section, edit, NULL);
    frl_trainer *back = (frl_trainer *)1;
    ck_assert_int_eq(frl_trainer_load(&back, rt, bad, NULL), FRL_ERR_FORMAT);
    ck_assert_ptr_null(back);
    ck_assert_msg(strstr(frl_last_error(), section), "%s", frl_last_error());
    ck_assert_msg(frl_trainer_load(&back, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    frl_trainer_destroy(back);
    unlink(path);
    unlink(bad);
    frl_runtime_destroy(rt);
}

static void nan_first_moment(void *data, uint64_t count, void *user)
{
    (void)count, (void)user;
    ((float *)data)[0] = NAN;
}

/* The same for PPO's optimiser state (trainer.adam), here beside the DQN cases for
 * their rewriting helper: a NaN moment is refused at load, instead of turning the
 * parameters to NaN at the first update. */
START_TEST(forged_ppo_adam_refused)
{
    check_ppo_forged("frl_ppo_adam", "", "trainer.adam", nan_first_moment);
}
END_TEST

/* A load_vec refused over a forged env.totals (the counters say the run had started, the
 * totals that its envs were never reset) leaves the caller's vec env as it was: the
 * check used to run after the saved arrays and has_reset were written into it, so the
 * refused load left a vec env that no longer stepped (FRL_ERR_STATE). */
START_TEST(refused_load_vec_leaves_the_vec_env)
{
    frl_runtime *rt = frl_test_runtime(1);
    char path[64], bad[72];
    forged_paths("frl_ppo_reset", path, bad);
    frl_trainer *t;
    ck_assert_int_eq(create_builtin(rt, "CartPole-v1", "train.num_envs=4 train.rollout=16", &t),
                     FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 128), FRL_OK);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer_destroy(t);
    rewrite_section(path, bad, "env.totals", never_reset, NULL);
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "CartPole-v1", 4, NULL), FRL_OK);
    ck_assert_int_eq(frl_vec_env_reset(v, 7), FRL_OK);
    frl_trainer *back = (frl_trainer *)1;
    ck_assert_int_eq(frl_trainer_load_vec(&back, rt, bad, v, NULL), FRL_ERR_FORMAT);
    ck_assert_ptr_null(back);
    ck_assert_msg(strstr(frl_last_error(), "never reset"), "%s", frl_last_error());
    ck_assert_msg(frl_vec_env_step(v) == FRL_OK, "%s", frl_last_error());
    frl_vec_env_destroy(v);
    unlink(path);
    unlink(bad);
    frl_runtime_destroy(rt);
}
END_TEST

static void nan_disc_return(void *data, uint64_t count, void *user)
{
    (void)user;
    ((double *)data)[count - 1] = NAN;
}

/* A forged trainer.disc_return (reward normalisation's discounted return of each env)
 * holding NaN is refused at load: it used to load, the first step made the
 * normaliser's mean, variance and scale NaN for good, and the run then failed as
 * "training diverged ... lower train.lr", blaming the settings for the file. */
START_TEST(forged_disc_return_refused)
{
    check_ppo_forged("frl_ppo_disc", "train.reward_norm=true", "trainer.disc_return",
                     nan_disc_return);
}
END_TEST

static void nan_first_double(void *data, uint64_t count, void *user)
{
    (void)count, (void)user;
    ((double *)data)[0] = NAN;
}

/* A forged env.ep_return (each env's return so far) holding NaN is refused at load:
 * it used to load, the episode's NaN return went into the episode window, and the next
 * checkpoint, which saves that window, could not be loaded. */
START_TEST(forged_episode_return_refused)
{
    check_ppo_forged("frl_ppo_epret", "", "env.ep_return", nan_first_double);
}
END_TEST

static void huge_reset_flag(void *data, uint64_t count, void *user)
{
    (void)count, (void)user;
    ((int64_t *)data)[3] = (int64_t)1 << 40;
}

static void negative_step_count(void *data, uint64_t count, void *user)
{
    (void)count, (void)user;
    ((int64_t *)data)[1] = -1;
}

/* A forged env.totals is refused at load: a reset flag of 2^40 was read as the int 0,
 * so the run loaded and its first step failed ("call frl_vec_env_reset first"), and a
 * negative count loaded as it was. */
START_TEST(forged_env_totals_refused)
{
    check_ppo_forged("frl_ppo_tot3", "", "env.totals", huge_reset_flag);
    check_ppo_forged("frl_ppo_tot1", "", "env.totals", negative_step_count);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("dqn");
    TCase *tc = tcase_create("dqn");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, probe_values, 0, 5);
    tcase_add_test(tc, refuses_bad_settings);
    tcase_add_test(tc, nan_reward_is_an_error);
    tcase_add_test(tc, infinite_td_error_is_divergence);
    tcase_add_test(tc, epsilon_schedule);
    tcase_add_test(tc, settings_read_as_sb3_and_cleanrl);
    tcase_add_test(tc, replay_of_reset_rows_learns_nothing);
    tcase_add_test(tc, q_policy_acts);
    tcase_add_test(tc, dueling_gradient);
    tcase_add_test(tc, uniform_init);
    tcase_add_test(tc, replay_public_view);
    tcase_add_test(tc, threads_learn_the_same_bits);
    tcase_add_test(tc, resume_is_identical);
    tcase_add_test(tc, resume_with_another_replay_shape);
    tcase_add_test(tc, resumed_metrics_rows_fall_where_they_would);
    tcase_add_test(tc, resume_with_another_alpha);
    tcase_add_test(tc, checkpoint_keeps_the_schedules_epsilon);
    tcase_add_test(tc, damaged_replay_file);
    tcase_add_test(tc, forged_checkpoint_contents);
    tcase_add_test(tc, forged_ppo_adam_refused);
    tcase_add_test(tc, refused_load_vec_leaves_the_vec_env);
    tcase_add_test(tc, forged_disc_return_refused);
    tcase_add_test(tc, anneal_lr_is_read);
    tcase_add_test(tc, forged_episode_return_refused);
    tcase_add_test(tc, forged_env_totals_refused);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
