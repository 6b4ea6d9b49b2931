/* An off-policy learner behind the learner interface (lib/algo/learner.h), shipped in
 * no library: DQN's core (Mnih et al., 2015) with a uniform replay, one Q-network and
 * its target copy. It proves that the interface carries what Q-learning needs: the
 * trainer allocates the replay the table asks for, the learner lists two nets (the
 * target naming its source), and the trainer's sampler and loop drive it unchanged.
 *
 * The probe: a two-step episode with known values. At x0 action a pays r0[a] and moves
 * to x1; at x1 action a pays r1[a] and ends the episode. With gamma 0.5,
 * Q(x1, a) = r1[a] and Q(x0, a) = r0[a] + 0.5 max r1, so Q must converge to those four
 * numbers, the first two only through the target network's bootstrap. The samplers
 * act with the trainer's untrained policy (near uniform): Q-learning is off-policy. */
#include <math.h>
#include <string.h>

#include "nn/mlp.h"
#include "trainer/trainer.h"
#include "test_util.h"

enum { HIDDEN = 16, BATCH = 32, GRAD_STEPS = 4, TARGET_EVERY = 8 };

static const float r0[2] = {0.0f, 1.0f}, r1[2] = {1.0f, 3.0f};
static const double gamma_ = 0.5;

/* ---- the probe env (per-env callbacks) ---- */

typedef struct probe {
    int pos;
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
    *terminated = (uint8_t)(p->pos == 1);
    *truncated = 0;
    p->pos = 1;
    obs[0] = 0.0f;
    obs[1] = 1.0f;
    return 0;
}

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
    void *users[8];
    for (int i = 0; i < n; i++)
        users[i] = &envs[i];
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, n, os, as, NULL), FRL_OK);
    frl_space_destroy(os);
    frl_space_destroy(as);
    return v;
}

/* ---- the learner ---- */

typedef struct dqn {
    frl_mlp q;
    const frl_kernels *k;
    frl_replay *replay;
    frl_ring *ring;
    float *params;          /* [2][num_params]: the Q-network, then its target copy */
    float *grads, *acts, *acts2, *dy, *scratch, *x, *x2;
    int64_t learn_calls;
    uint64_t rng;           /* the initial weights */
    frl_rng draws;          /* the minibatches */
} dqn;

static uint64_t next_u64(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 11;
}

static void dqn_storage(const frl_config *cfg, frl_storage_need *need)
{
    (void)cfg;
    need->kind = FRL_STORAGE_REPLAY;
    need->capacity = 4096;
}

static frl_status dqn_alloc(dqn *d, const frl_allocator *al)
{
    size_t np = d->q.num_params, aw = (size_t)d->q.act_width, mw = (size_t)d->q.max_width;
    d->params = frl_alloc(al, sizeof(float) * 3 * np, 64);
    d->acts = frl_alloc(al, sizeof(float) * BATCH * (2 * aw + 2 * mw + 4), 64);
    if (!d->params || !d->acts)
        return FRL_ERR_NOMEM;
    d->grads = d->params + 2 * np;
    d->acts2 = d->acts + BATCH * aw;
    d->dy = d->acts2 + BATCH * aw;
    d->scratch = d->dy + BATCH * mw;
    d->x = d->scratch + BATCH * mw;
    d->x2 = d->x + 2 * BATCH;
    return FRL_OK;
}

static frl_status dqn_create(frl_learner *l, const frl_learner_ctx *c, char *err)
{
    dqn *d = frl_alloc(&c->rt->alloc, sizeof *d, 64);
    if (!d)
        return frl_fail(err, FRL_ERR_NOMEM, "dqn: out of memory");
    memset(d, 0, sizeof *d);
    l->impl = d;
    int32_t hidden = HIDDEN;
    frl_mlp_init(&d->q, c->policy->in_w, &hidden, 1, c->policy->out_w, FRL_NN_TANH, 0);
    d->k = c->policy->k;
    d->replay = c->store->replay;
    d->ring = c->store->ring;
    d->rng = 12345;
    d->draws = frl_rng_stream(12345, 0);
    if (!d->replay || dqn_alloc(d, &c->rt->alloc) != FRL_OK)
        return frl_fail(err, FRL_ERR_NOMEM, "dqn: no replay or out of memory");
    size_t np = d->q.num_params;
    for (size_t i = 0; i < np; i++)
        d->params[i] = (float)((double)(next_u64(&d->rng) % 2001) / 1000.0 - 1.0) * 0.5f;
    memcpy(d->params + np, d->params, sizeof(float) * np);
    int32_t q = frl_learner_add_net(l, "q", FRL_NET_Q, -1, d->params, (int64_t)np);
    frl_learner_add_net(l, "q_target", FRL_NET_TARGET, q, d->params + np, (int64_t)np);
    return FRL_OK;
}

static void dqn_destroy(frl_learner *l)
{
    dqn *d = l->impl;
    if (!d)
        return;
    frl_free(&l->rt->alloc, d->params);
    frl_free(&l->rt->alloc, d->acts);
    frl_free(&l->rt->alloc, d);
    l->impl = NULL;
}

/* A uniform 1-step minibatch of the replay into d->x / d->x2 and the TD targets y. */
static void sample(dqn *d, int32_t *act, float *y)
{
    float rew[BATCH], disc[BATCH], w[BATCH];
    uint8_t term[BATCH];
    int64_t index[BATCH];
    frl_replay_batch mb = {BATCH, d->x, act, rew, d->x2, disc, term, w, index};
    frl_replay_draw draw = {.rows = BATCH, .n_step = 1, .gamma = gamma_};
    char err[FRL_ERRMSG_SIZE];
    frl_status st = frl_replay_sample(d->replay, &d->draws, &draw, &mb, err);
    ck_assert_msg(st == FRL_OK, "%s", err);
    const float *q2 = frl_mlp_forward(&d->q, d->k, d->params + d->q.num_params, BATCH, d->x2,
                                      d->acts2);
    for (int i = 0; i < BATCH; i++) {
        float best = q2[2 * i] > q2[2 * i + 1] ? q2[2 * i] : q2[2 * i + 1];
        y[i] = rew[i] + disc[i] * best;
    }
}

/* One SGD step on 0.5 (Q(x, a) - y)^2; returns the mean loss. */
static double grad_step(dqn *d)
{
    int32_t act[BATCH];
    float y[BATCH];
    sample(d, act, y);
    const float *q = frl_mlp_forward(&d->q, d->k, d->params, BATCH, d->x, d->acts);
    size_t mw = (size_t)d->q.max_width;
    double loss = 0;
    memset(d->dy, 0, sizeof(float) * BATCH * mw);
    for (int i = 0; i < BATCH; i++) {
        int32_t a = act[i];
        float e = q[2 * i + a] - y[i];
        loss += 0.5 * e * e;
        d->dy[2 * i + a] = e / BATCH;
    }
    frl_mlp_backward(&d->q, d->k, d->params, NULL, d->grads, 0, BATCH, d->x, d->acts, d->dy,
                     d->scratch, NULL);
    for (size_t i = 0; i < d->q.num_params; i++)
        d->params[i] -= 0.1f * d->grads[i];
    return loss / BATCH;
}

/* The slot's transitions into the replay, GRAD_STEPS minibatches, and the target
 * network copied every TARGET_EVERY calls. */
static frl_status dqn_learn(frl_learner *l, const frl_batch *b, frl_learn_stats *out, char *err)
{
    dqn *d = l->impl;
    frl_status st = frl_replay_add_slot(d->replay, d->ring, b->slot, err);
    if (st != FRL_OK)
        return st;
    double loss = 0;
    for (int i = 0; i < GRAD_STEPS; i++)
        loss += grad_step(d);
    if (++d->learn_calls % TARGET_EVERY == 0)
        memcpy(d->params + d->q.num_params, d->params, sizeof(float) * d->q.num_params);
    out->value_loss = loss / GRAD_STEPS;
    return FRL_OK;
}

static void dqn_save(const frl_learner *l, frl_section *s, int32_t *n, int64_t *steps)
{
    (void)s;
    (void)n;
    *steps = ((const dqn *)l->impl)->learn_calls;
}

static frl_status dqn_load(frl_learner *l, const frl_container *c, int64_t steps, char *err)
{
    (void)c;
    (void)err;
    ((dqn *)l->impl)->learn_calls = steps;
    return FRL_OK;
}

static const frl_learner_ops dqn_ops = {
    .name = "dqn (test)",
    .storage = dqn_storage,
    .create = dqn_create,
    .destroy = dqn_destroy,
    .learn = dqn_learn,
    .save = dqn_save,
    .load = dqn_load,
};

/* ---- the tests ---- */

static frl_trainer *probe_trainer(frl_runtime *rt, probe *envs, frl_vec_env **v)
{
    *v = probe_envs(rt, envs, 4);
    frl_config *cfg = frl_test_settings("train.rollout=8 train.gamma=0.5");
    frl_trainer *t;
    ck_assert_msg(frl_trainer_create_with_learner(&t, rt, *v, cfg, &dqn_ops) == FRL_OK, "%s",
                  frl_last_error());
    frl_config_destroy(cfg);
    return t;
}

/* The trainer allocated what the table declared, and holds the two nets it listed. */
START_TEST(storage_and_nets)
{
    frl_runtime *rt = frl_test_runtime(1);
    probe envs[4];
    frl_vec_env *v;
    frl_trainer *t = probe_trainer(rt, envs, &v);
    ck_assert_int_eq(t->store.kind, FRL_STORAGE_REPLAY);
    ck_assert_ptr_nonnull(t->store.replay);
    /* 4096 rows: 128 blocks of the 8 x 4 rollout. */
    ck_assert_int_eq(t->store.replay->capacity, 4096);
    ck_assert_int_eq(t->store.replay->blocks, 128);
    ck_assert_int_eq(t->learner.nets.count, 2);
    ck_assert_int_eq(t->learner.nets.net[0].role, FRL_NET_Q);
    ck_assert_int_eq(t->learner.nets.net[1].role, FRL_NET_TARGET);
    ck_assert_int_eq(t->learner.nets.net[1].source, 0);
    ck_assert_str_eq(t->learner.nets.net[1].name, "q_target");
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* Q of the probe's four (state, action) pairs after training, against the truth. */
START_TEST(q_learns_probe_values)
{
    frl_runtime *rt = frl_test_runtime(1);
    probe envs[4];
    frl_vec_env *v;
    frl_trainer *t = probe_trainer(rt, envs, &v);
    ck_assert_msg(frl_trainer_train(t, 24000) == FRL_OK, "%s", frl_trainer_last_error(t));
    /* Full: a transition per row but the reset rows, 1 in 3. */
    const frl_replay *r = t->store.replay;
    ck_assert_int_eq(r->filled, r->blocks);
    ck_assert_int_ge(r->size, 4096 * 2 / 3 - 64);
    ck_assert_int_le(r->size, 4096 * 2 / 3 + 64);
    dqn *d = t->learner.impl;
    float x[4] = {1, 0, 0, 1};
    const float *q = frl_mlp_forward(&d->q, d->k, d->params, 2, x, d->acts);
    double best1 = r1[0] > r1[1] ? r1[0] : r1[1];
    const double want[4] = {r0[0] + gamma_ * best1, r0[1] + gamma_ * best1, r1[0], r1[1]};
    for (int i = 0; i < 4; i++)
        ck_assert_msg(fabs(q[i] - want[i]) < 0.05, "Q[%d] = %.4f, want %.4f", i, q[i], want[i]);
    ck_assert_double_lt(frl_trainer_metrics(t)->value_loss, 1e-3);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("offpolicy");
    TCase *tc = tcase_create("dqn");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, storage_and_nets);
    tcase_add_test(tc, q_learns_probe_values);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
