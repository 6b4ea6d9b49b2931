/* R2D2 (Kapturowski et al., 2019): a recurrent Q-network learned from prioritised
 * replay of overlapping sequences, each started from the recurrent state acting had at
 * its first step and warmed up over a burn-in prefix; n-step double-Q targets on the
 * rescaled value h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps x; Ape-X's per-actor epsilons.
 * SEED RL's layout: the actors are the sampler's env groups, which hold no weights and
 * act through the trainer's central batched inference (the async sampler's ACT task,
 * the recurrent state of each env kept in the sampler's bookkeeping); this learner runs
 * on the trainer's thread.
 *
 * Storage. The rollout is T = seq_length - seq_overlap steps per env, so a ring slot is
 * one period of every env; the trainer's replay keeps slots as blocks with each env's
 * state at the block's first step (frl_replay_shape.state_w). A sequence is n =
 * seq_length / T consecutive blocks of one env, named by its last block k and env b
 * (q = k*B + b): adjacent sequences share n - 1 blocks, so overlap costs no memory.
 * Its priority lives in a sum tree over the k*B + b (rl/sum_tree.h); a sequence one of
 * whose blocks has been overwritten has priority 0.
 *
 * An update: B_s sequences drawn by priority^alpha with weights (N P(i))^-beta over the
 * batch's largest; the target network runs each whole sequence from the stored state;
 * the online network runs the burn-in (no gradient), then the rest with a training
 * pass; targets and the loss on the steps after burn-in that are transitions (an
 * autoreset row is not); Adam; new priorities; the target copied every target_period
 * updates. */
#include <float.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "algo/learner.h"
#include "algo/r2d2.h"
#include "nn/optim.h"
#include "rl/heads.h"
#include "rl/policy_rnn.h"
#include "rl/sum_tree.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const double RESCALE_EPS = 1e-3; /* the paper's and SEED's */

typedef struct r2d2_settings {
    int32_t batch, length, overlap, burn_in, n_step, stored_state, value_rescale, anneal_lr;
    int64_t learning_starts, target_period;
    double lr, gamma, adam_eps, max_grad_norm, alpha, beta, eta, replay_ratio;
    double apex_eps, apex_alpha;
} r2d2_settings;

typedef struct r2d2 {
    r2d2_settings s;
    frl_policy *p;
    frl_replay *replay;
    frl_ring *ring;
    int32_t T, B, nb;       /* period, envs, blocks per sequence */
    double lr;              /* this rollout's (train.anneal_lr) */
    int32_t L, R, K;        /* sequence length, rows with the bootstrap one, burn-in */
    int32_t save_priorities;
    frl_sum_tree tree;      /* p^alpha of sequence k*B + b */
    double max_priority;    /* largest priority seen: new sequences get it */
    double credit;          /* updates owed, carried between learn calls */
    int64_t updates;        /* learner updates so far */
    float *target, *grads;
    frl_adam adam;
    frl_replay_span span;   /* the minibatch, time-major [R x batch] */
    int64_t *index;         /* [batch] sequences drawn */
    double *weight;         /* [batch] importance weights */
    float *prio;            /* [batch] the drawn sequences' new priorities */
    float *state_k;         /* [batch x state_w]: the online state after burn-in */
    float *ws_target, *ws_burn, *ws_train;
    float *y;               /* [L x batch] targets (NaN: no loss at that step) */
    uint8_t *starts;        /* [R x batch] where the passes zero the state (frl_r2d2_starts) */
    double *env_eps;        /* [B] the actors' epsilons, row by env */
    double counters[3];     /* updates, credit, max priority: as saved */
} r2d2;

static void read_settings(const frl_config *c, r2d2_settings *s)
{
    s->batch = (int32_t)frl_cfg_int(c, FRL_KEY_TRAIN_BATCH_SIZE);
    s->length = (int32_t)frl_cfg_int(c, FRL_KEY_TRAIN_SEQ_LENGTH);
    s->overlap = (int32_t)frl_cfg_int(c, FRL_KEY_TRAIN_SEQ_OVERLAP);
    s->burn_in = (int32_t)frl_cfg_int(c, FRL_KEY_TRAIN_BURN_IN);
    s->n_step = (int32_t)frl_cfg_int(c, FRL_KEY_TRAIN_N_STEP);
    s->stored_state = frl_cfg_bool(c, FRL_KEY_TRAIN_STORED_STATE);
    s->value_rescale = frl_cfg_bool(c, FRL_KEY_TRAIN_VALUE_RESCALE);
    s->learning_starts = frl_cfg_int(c, FRL_KEY_TRAIN_LEARNING_STARTS);
    s->target_period = frl_cfg_int(c, FRL_KEY_TRAIN_TARGET_PERIOD);
    s->lr = frl_cfg_float(c, FRL_KEY_TRAIN_LR);
    s->anneal_lr = frl_cfg_bool(c, FRL_KEY_TRAIN_ANNEAL_LR);
    s->gamma = frl_cfg_float(c, FRL_KEY_TRAIN_GAMMA);
    s->adam_eps = frl_cfg_float(c, FRL_KEY_TRAIN_ADAM_EPS);
    s->max_grad_norm = frl_cfg_float(c, FRL_KEY_TRAIN_MAX_GRAD_NORM);
    s->alpha = frl_cfg_float(c, FRL_KEY_TRAIN_PER_ALPHA);
    s->beta = frl_cfg_float(c, FRL_KEY_TRAIN_PER_BETA);
    s->eta = frl_cfg_float(c, FRL_KEY_TRAIN_PRIORITY_ETA);
    s->replay_ratio = frl_cfg_float(c, FRL_KEY_TRAIN_REPLAY_RATIO);
    s->apex_eps = frl_cfg_float(c, FRL_KEY_TRAIN_APEX_EPSILON);
    s->apex_alpha = frl_cfg_float(c, FRL_KEY_TRAIN_APEX_ALPHA);
}

/* T: one period of the sequences (a bad overlap is reported by create; T stays >= 1). */
static int64_t r2d2_rollout(const frl_config *cfg)
{
    int64_t t = frl_cfg_int(cfg, FRL_KEY_TRAIN_SEQ_LENGTH) -
                frl_cfg_int(cfg, FRL_KEY_TRAIN_SEQ_OVERLAP);
    return t >= 1 ? t : 1;
}

static void r2d2_storage(const frl_config *cfg, frl_storage_need *need)
{
    need->kind = FRL_STORAGE_REPLAY;
    need->capacity = frl_cfg_int(cfg, FRL_KEY_TRAIN_BUFFER_SIZE);
    need->keep_state = 1;
}

/* ---- what R2D2 cannot learn with ---- */

/* An overlap whose period divides the length, for the message: the longest period
 * below the length (length / its smallest factor; half for an even length). */
static int32_t overlap_that_divides(int32_t length)
{
    int32_t f = 2;
    while (f < length && length % f != 0)
        f++;
    return length - length / f;
}

static frl_status check_sequences(const r2d2_settings *s, char *err)
{
    if (s->overlap >= s->length)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                        "train.algo=r2d2: train.seq_overlap=%d must be below train.seq_length=%d",
                        (int)s->overlap, (int)s->length);
    int32_t period = s->length - s->overlap;
    if (s->length % period != 0)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                        "train.algo=r2d2: sequences start every seq_length - seq_overlap = %d "
                        "steps, which must divide train.seq_length=%d (try seq_overlap=%d)",
                        (int)period, (int)s->length, (int)overlap_that_divides(s->length));
    if (s->burn_in >= s->length)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                        "train.algo=r2d2: train.burn_in=%d leaves no step of a sequence of "
                        "train.seq_length=%d to learn from (burn-in must be below the length)",
                        (int)s->burn_in, (int)s->length);
    return FRL_OK;
}

/* Counts an int32 holds: the minibatch's rows (the sequence passes count rows in one)
 * and the updates one rollout owes (the carried fraction included). */
static frl_status check_counts(const r2d2_settings *s, int64_t B, char *err)
{
    int64_t rows = ((int64_t)s->length + 1) * s->batch;
    if (rows > INT32_MAX)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                        "train.algo=r2d2: train.batch_size=%d sequences of train.seq_length=%d "
                        "(+ 1) steps make %lld rows in a minibatch, above 2^31 - 1",
                        (int)s->batch, (int)s->length, (long long)rows);
    int64_t T = s->length - s->overlap;
    double per = s->replay_ratio * (double)T * (double)B /
                 ((double)s->batch * (double)(s->length - s->burn_in));
    if (per + 1.0 > INT32_MAX)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                        "train.algo=r2d2: train.replay_ratio=%g asks for %.3g updates a rollout "
                        "(ratio x %lld steps x %lld envs / (train.batch_size=%d x %d steps "
                        "after burn-in)), above 2^31 - 1: lower it", s->replay_ratio, per,
                        (long long)T, (long long)B, (int)s->batch,
                        (int)(s->length - s->burn_in));
    return FRL_OK;
}

static frl_status check_context(const frl_learner_ctx *c, const r2d2_settings *s, char *err)
{
    const frl_policy *p = c->policy;
    if (!p->discrete)
        return frl_fail(err, FRL_ERR_UNSUPPORTED,
                        "train.algo=r2d2 needs a discrete action space, and the actions are a "
                        "box of %d values (use ppo or impala with policy.core)", (int)p->out_w);
    if (p->head == FRL_POLICY_HEAD_ACTOR_CRITIC)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                        "train.algo=r2d2 learns a Q-network, and policy.head=actor_critic is "
                        "set (use policy.head=q or dueling_q)");
    if (!p->towers)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                        "train.algo=r2d2 learns a recurrent Q-network: set policy.core=lstm or "
                        "gru (policy.frame_stack is not a core)");
    frl_status st = check_sequences(s, err);
    if (st != FRL_OK)
        return st;
    const frl_replay *r = c->store->replay;
    if (!r)
        return frl_fail(err, FRL_ERR_INTERNAL, "train.algo=r2d2: the trainer gave no replay");
    st = check_counts(s, r->shape.envs, err);
    if (st != FRL_OK)
        return st;
    int32_t nb = s->length / (s->length - s->overlap);
    if (r->blocks < 2 * (int64_t)nb)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                        "train.algo=r2d2: train.buffer_size holds %lld rollouts of %d x %d "
                        "steps; sequences of %d of them need at least %d (raise buffer_size "
                        "to %lld)", (long long)r->blocks, (int)r->shape.steps,
                        (int)r->shape.envs, (int)nb, (int)(2 * nb),
                        (long long)(2 * nb) * r->block_rows);
    return FRL_OK;
}

/* ---- create ---- */

/* Ape-X: actor i of N acts with eps^(1 + alpha i / (N - 1)); one actor takes the middle
 * of a two-actor range, eps^(1 + alpha / 2) (0.4^4.5 = 0.016 by default). */
static double actor_epsilon(const r2d2_settings *s, int32_t i, int32_t n)
{
    double x = n > 1 ? (double)i / (double)(n - 1) : 0.5;
    return pow(s->apex_eps, 1.0 + s->apex_alpha * x);
}

static void set_actor_epsilons(r2d2 *d, const frl_learner_ctx *c)
{
    for (int32_t g = 0; g < c->groups; g++) {
        int32_t end = g + 1 < c->groups ? c->group_first[g + 1] : d->B;
        for (int32_t e = c->group_first[g]; e < end; e++)
            d->env_eps[e] = actor_epsilon(&d->s, g, c->groups);
    }
    d->p->env_epsilon = d->env_eps;
    d->p->env_epsilon_n = d->B;
}

static size_t f4(size_t n)
{
    return sizeof(float) * n;
}

static frl_status alloc_batch(r2d2 *d, const frl_allocator *al)
{
    size_t cols = (size_t)d->s.batch, R = (size_t)d->R, L = (size_t)d->L;
    size_t W = (size_t)d->p->obs_w, S = (size_t)d->p->state_w;
    d->span.cols = d->s.batch;
    d->span.obs = frl_alloc(al, f4(R * cols * W), 64);
    d->span.action = frl_alloc(al, sizeof(int32_t) * L * cols, 64);
    d->span.reward = frl_alloc(al, f4(L * cols), 64);
    d->span.terminated = frl_alloc(al, 3 * R * cols, 64);
    d->span.state0 = frl_alloc(al, f4(cols * S), 64);
    d->state_k = frl_alloc(al, f4(cols * S), 64);
    d->index = frl_alloc(al, sizeof(int64_t) * cols, 64);
    d->weight = frl_alloc(al, sizeof(double) * cols, 64);
    d->prio = frl_alloc(al, f4(cols), 64);
    d->y = frl_alloc(al, f4(L * cols), 64);
    d->starts = frl_alloc(al, R * cols, 64);
    if (!d->span.obs || !d->span.action || !d->span.reward || !d->span.terminated ||
        !d->span.state0 || !d->state_k || !d->index || !d->weight || !d->prio || !d->y ||
        !d->starts)
        return FRL_ERR_NOMEM;
    d->span.truncated = d->span.terminated + R * cols;
    d->span.reset = d->span.truncated + R * cols;
    return FRL_OK;
}

static frl_status alloc_learner(r2d2 *d, const frl_allocator *al)
{
    size_t np = d->p->num_params;
    int32_t cols = d->s.batch;
    d->target = frl_alloc(al, f4(np), 64);
    d->grads = frl_alloc(al, f4(np), 64);
    d->adam.m = frl_alloc(al, f4(2 * np), 64);
    d->ws_target = frl_alloc(al, f4(frl_policy_rnn_seq_floats(d->p, d->R, cols, 0)), 64);
    d->ws_burn = d->K ? frl_alloc(al, f4(frl_policy_rnn_seq_floats(d->p, d->K, cols, 0)), 64)
                      : NULL;
    d->ws_train = frl_alloc(al, f4(frl_policy_rnn_seq_floats(d->p, d->R - d->K, cols, 1)), 64);
    d->env_eps = frl_alloc(al, sizeof(double) * (size_t)d->B, 64);
    if (!d->target || !d->grads || !d->adam.m || !d->ws_target || (d->K && !d->ws_burn) ||
        !d->ws_train || !d->env_eps || alloc_batch(d, al) != FRL_OK ||
        frl_sum_tree_init(&d->tree, al, d->replay->blocks * (int64_t)d->B) != 0)
        return FRL_ERR_NOMEM;
    d->adam.v = d->adam.m + np;
    memset(d->adam.m, 0, f4(2 * np));
    memcpy(d->target, d->p->params, f4(np));
    return FRL_OK;
}

static frl_status r2d2_create(frl_learner *l, const frl_learner_ctx *c, char *err)
{
    r2d2_settings s;
    read_settings(c->cfg, &s);
    frl_status st = check_context(c, &s, err);
    if (st != FRL_OK)
        return st;
    r2d2 *d = frl_alloc(&c->rt->alloc, sizeof *d, 64);
    if (!d)
        return frl_fail(err, FRL_ERR_NOMEM, "train.algo=r2d2: out of memory");
    memset(d, 0, sizeof *d);
    l->impl = d;
    d->s = s;
    d->p = c->policy;
    d->replay = c->store->replay;
    d->ring = c->store->ring;
    d->T = d->replay->shape.steps;
    d->B = d->replay->shape.envs;
    d->nb = s.length / d->T;
    d->L = s.length;
    d->R = s.length + 1;
    d->K = s.burn_in;
    d->max_priority = 1.0;
    d->save_priorities = frl_cfg_bool(c->cfg, FRL_KEY_TRAIN_SAVE_REPLAY);
    d->adam.beta1 = 0.9;
    d->adam.beta2 = 0.999;
    d->adam.eps = s.adam_eps;
    if (alloc_learner(d, &c->rt->alloc) != FRL_OK)
        return frl_fail(err, FRL_ERR_NOMEM, "train.algo=r2d2: out of memory for %zu parameters "
                        "and a minibatch of %d sequences of %d steps", d->p->num_params,
                        (int)s.batch, (int)d->R);
    set_actor_epsilons(d, c);
    int32_t q = frl_learner_add_net(l, "policy", FRL_NET_Q, -1, d->p->params,
                                    (int64_t)d->p->num_params);
    frl_learner_add_net(l, "q_target", FRL_NET_TARGET, q, d->target, (int64_t)d->p->num_params);
    return FRL_OK;
}

static void r2d2_destroy(frl_learner *l)
{
    r2d2 *d = l->impl;
    if (!d)
        return;
    const frl_allocator *al = &l->rt->alloc;
    if (d->p && d->p->env_epsilon == d->env_eps) {
        d->p->env_epsilon = NULL;
        d->p->env_epsilon_n = 0;
    }
    void *owned[] = {d->target, d->grads, d->adam.m, d->ws_target, d->ws_burn, d->ws_train,
                     d->env_eps, d->span.obs, d->span.action, d->span.reward,
                     d->span.terminated, d->span.state0, d->state_k, d->index, d->weight,
                     d->prio, d->y, d->starts};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
        frl_free(al, owned[i]);
    if (d->tree.node)
        frl_sum_tree_free(&d->tree, al);
    frl_free(al, d);
    l->impl = NULL;
}

/* ---- the replay's sequences ---- */

/* After block k was written: its B sequences become drawable (once n blocks exist) with
 * the largest priority seen, and those that ended in the next n - 1 blocks, which now
 * straddle the newest and the oldest block, are dropped. */
static void index_sequences(r2d2 *d, int64_t k)
{
    int64_t blocks = d->replay->blocks, B = d->B;
    double fresh = d->replay->filled >= d->nb ? pow(d->max_priority, d->s.alpha) : 0.0;
    for (int64_t b = 0; b < B; b++)
        frl_sum_tree_set(&d->tree, k * B + b, fresh);
    for (int32_t i = 1; i < d->nb; i++)
        for (int64_t b = 0; b < B; b++)
            frl_sum_tree_set(&d->tree, ((k + i) % blocks) * B + b, 0.0);
}

/* Sequences that can be drawn: every end block with n - 1 blocks before it. */
static int64_t drawable(const r2d2 *d)
{
    int64_t f = d->replay->filled;
    return f >= d->nb ? (f - d->nb + 1) * d->B : 0;
}

/* Stratified draws, one per equal segment of the total; weights over the batch's
 * largest. */
static void draw_sequences(r2d2 *d, frl_rng *rng)
{
    int32_t n = d->s.batch;
    double total = frl_sum_tree_total(&d->tree), seg = total / n, wmax = 0;
    double N = (double)drawable(d);
    for (int32_t i = 0; i < n; i++) {
        int64_t q = frl_sum_tree_find(&d->tree, seg * ((double)i + frl_rng_uniform(rng)));
        double prob = frl_sum_tree_get(&d->tree, q) / total;
        d->index[i] = q;
        d->weight[i] = pow(N * prob, -d->s.beta);
        wmax = d->weight[i] > wmax ? d->weight[i] : wmax;
    }
    for (int32_t i = 0; i < n; i++) {
        d->weight[i] /= wmax;
        frl_replay_gather_span(d->replay, d->index[i] / d->B, (int32_t)(d->index[i] % d->B),
                               d->nb, i, &d->span);
    }
    if (!d->s.stored_state)
        memset(d->span.state0, 0, f4((size_t)n * (size_t)d->p->state_w));
}

/* ---- targets ---- */

double frl_r2d2_rescale(double x)
{
    return (x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0) * (sqrt(fabs(x) + 1.0) - 1.0) + RESCALE_EPS * x;
}

/* h^-1 in closed form (Pohlen et al., 2018, proposition A.2). */
double frl_r2d2_unrescale(double x)
{
    double e = RESCALE_EPS;
    double s = sqrt(1.0 + 4.0 * e * (fabs(x) + 1.0 + e));
    double m = (s - 1.0) / (2.0 * e);
    return (x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0) * (m * m - 1.0);
}

/* The n-step target of column c at step t (t >= burn-in): rewards until an episode's
 * end, the n-th step or the sequence's end, then the target network's value of the
 * online network's greedy action there (double Q), both on the rescaled scale when
 * value_rescale is on. qo: the online training pass's Q [rows from K], qt: the
 * target's [R rows]. */
static float nstep_target(const r2d2 *d, int32_t c, int32_t t, const float *qo, const float *qt)
{
    size_t cols = (size_t)d->s.batch, A = (size_t)d->p->out_w;
    double g = 0, disc = 1;
    int32_t boot = -1;
    for (int32_t k = 0; k < d->s.n_step; k++) {
        size_t j = (size_t)(t + k) * cols + (size_t)c;
        g += disc * d->span.reward[j];
        disc *= d->s.gamma;
        if (d->span.terminated[j])
            break;
        if (d->span.truncated[j] || t + k + 1 == d->L || k + 1 == d->s.n_step) {
            boot = t + k + 1;
            break;
        }
    }
    if (boot < 0)
        return (float)(d->s.value_rescale ? frl_r2d2_rescale(g) : g);
    size_t row = (size_t)boot * cols + (size_t)c;
    int32_t a = frl_cat_argmax(qo + (row - (size_t)d->K * cols) * A, (int32_t)A);
    double v = qt[row * A + (size_t)a];
    if (d->s.value_rescale)
        return (float)frl_r2d2_rescale(g + disc * frl_r2d2_unrescale(v));
    return (float)(g + disc * v);
}

/* ---- one update ---- */

typedef struct upd_stats {
    double loss, q, td, grad_norm, spread;
    int64_t count;
} upd_stats;

/* The online state after the burn-in rows into d->state_k (stored or zero state when
 * there is no burn-in). */
static void burn_in(r2d2 *d)
{
    size_t bytes = f4((size_t)d->s.batch * (size_t)d->p->state_w);
    if (!d->K) {
        memcpy(d->state_k, d->span.state0, bytes);
        return;
    }
    frl_rpass f;
    frl_policy_rnn_seq_layout(d->p, d->K, d->s.batch, 0, d->ws_burn, &f);
    frl_policy_rnn_seq_forward(d->p, d->p->params, d->span.obs, d->span.state0, d->starts, &f,
                               FRL_HEAD_ACTOR);
    frl_policy_rnn_seq_final_state(d->p, &f, d->state_k);
}

void frl_r2d2_starts(const uint8_t *reset, int32_t rows, int32_t cols, uint8_t *starts)
{
    memset(starts, 0, (size_t)cols);
    memcpy(starts + cols, reset, (size_t)(rows - 1) * (size_t)cols);
}

/* Targets of every trained step (0 at autoreset rows, which train nothing). Whether
 * all are finite: a NaN or infinite one is a diverged run, not a row to skip. */
static int targets(r2d2 *d, const float *qo, const float *qt)
{
    size_t cols = (size_t)d->s.batch;
    int finite = 1;
    for (int32_t t = d->K; t < d->L; t++)
        for (int32_t c = 0; c < d->s.batch; c++) {
            size_t j = (size_t)t * cols + (size_t)c;
            d->y[j] = d->span.reset[j] ? 0.0f : nstep_target(d, c, t, qo, qt);
            finite &= isfinite(d->y[j]) != 0;
        }
    return finite;
}

/* The loss's gradient into f->d_out (zero but at each step's action), the new
 * priorities into prio, and the update's figures. */
static void loss_grad(r2d2 *d, frl_rpass *f, float *prio, upd_stats *st)
{
    size_t cols = (size_t)d->s.batch, A = (size_t)d->p->out_w;
    size_t rows = (size_t)(d->R - d->K) * cols;
    memset(f->d_out, 0, f4(rows * A));
    memset(f->d_value, 0, f4(rows));
    int64_t count = 0;
    for (size_t j = (size_t)d->K * cols; j < (size_t)d->L * cols; j++)
        count += !d->span.reset[j];
    double inv = count ? 1.0 / (double)count : 0.0, pmin = INFINITY, pmax = 0;
    for (int32_t c = 0; c < d->s.batch; c++) {
        double emax = 0, esum = 0;
        int32_t n = 0;
        for (int32_t t = d->K; t < d->L; t++) {
            size_t j = (size_t)t * cols + (size_t)c, o = j - (size_t)d->K * cols;
            if (d->span.reset[j])
                continue;
            size_t at = o * A + (size_t)d->span.action[j];
            double e = (double)f->out[at] - d->y[j], ae = fabs(e);
            st->loss += 0.5 * d->weight[c] * e * e * inv;
            f->d_out[at] = (float)(d->weight[c] * e * inv);
            /* Q on the returns' scale (the metric's, as DQN's), not the learned h(Q) */
            st->q += (d->s.value_rescale ? frl_r2d2_unrescale(f->out[at]) : f->out[at]) * inv;
            st->td += ae * inv;
            emax = ae > emax ? ae : emax;
            esum += ae;
            n++;
        }
        double pr = d->s.eta * emax + (1.0 - d->s.eta) * (n ? esum / n : 0.0) + 1e-6;
        prio[c] = (float)pr;
        pmin = pr < pmin ? pr : pmin;
        pmax = pr > pmax ? pr : pmax;
    }
    st->count = count;
    st->spread = pmax / pmin;
}

static void set_priorities(r2d2 *d, const float *prio)
{
    for (int32_t c = 0; c < d->s.batch; c++) {
        d->max_priority = prio[c] > d->max_priority ? prio[c] : d->max_priority;
        /* a sequence drawn twice keeps its last */
        frl_sum_tree_set(&d->tree, d->index[c], pow(prio[c], d->s.alpha));
    }
}

/* Whether every new priority is finite: an infinite or NaN TD error (Q itself
 * diverged) would poison the sum tree. */
static int priorities_finite(const r2d2 *d, const float *prio)
{
    int finite = 1;
    for (int32_t c = 0; c < d->s.batch; c++)
        finite &= isfinite(prio[c]) != 0;
    return finite;
}

/* One update; a non-finite target or TD error fails it before the weights, the Adam
 * state or the priorities change (the trainer then reports the run diverged). */
static frl_status update(r2d2 *d, frl_rng *rng, upd_stats *st, frl_learn_stats *out, char *err)
{
    double t0 = now_s();
    draw_sequences(d, rng);
    double t1 = now_s();
    size_t cols = (size_t)d->s.batch, W = (size_t)d->p->obs_w;
    frl_rpass ft, fo;
    frl_policy_rnn_seq_layout(d->p, d->R, d->s.batch, 0, d->ws_target, &ft);
    frl_r2d2_starts(d->span.reset, d->R, d->s.batch, d->starts);
    frl_policy_rnn_seq_forward(d->p, d->target, d->span.obs, d->span.state0, d->starts, &ft,
                               FRL_HEAD_ACTOR);
    burn_in(d);
    const uint8_t *starts = d->starts + (size_t)d->K * cols;
    frl_policy_rnn_seq_layout(d->p, d->R - d->K, d->s.batch, 1, d->ws_train, &fo);
    frl_policy_rnn_seq_forward(d->p, d->p->params, d->span.obs + (size_t)d->K * cols * W,
                               d->state_k, starts, &fo, FRL_HEAD_ACTOR);
    if (!targets(d, fo.out, ft.out))
        return frl_fail(err, FRL_ERR_NONFINITE, "training diverged: a target became "
                        "non-finite (rewards too large for floats, or lower train.lr or set "
                        "train.max_grad_norm); the weights and priorities are unchanged");
    loss_grad(d, &fo, d->prio, st);
    if (!priorities_finite(d, d->prio))
        return frl_fail(err, FRL_ERR_NONFINITE, "training diverged: a TD error became "
                        "non-finite (lower train.lr or set train.max_grad_norm); the weights "
                        "and priorities are unchanged");
    /* the whole trained part: bptt >= its length */
    frl_policy_rnn_seq_backward(d->p, d->p->params, d->grads, starts, d->R - d->K, &fo);
    double t2 = now_s();
    size_t np = d->p->num_params;
    st->grad_norm = frl_grad_norm(d->p->k, d->grads, np);
    frl_adam_begin(&d->adam);
    frl_adam_update(&d->adam, d->p->k, d->p->params, d->grads, 0, np, d->lr,
                    frl_clip_scale(st->grad_norm, d->s.max_grad_norm));
    d->p->version++;
    set_priorities(d, d->prio);
    if (++d->updates % d->s.target_period == 0)
        memcpy(d->target, d->p->params, f4(np));
    double t3 = now_s();
    out->time_replay += t1 - t0;
    out->time_backward += t2 - t1;
    out->time_optimizer += t3 - t2;
    return FRL_OK;
}

/* ---- the learn call ---- */

/* Updates this rollout pays for: replay_ratio trained steps per env step added, each
 * update training batch x (length - burn-in) steps; the fraction carries over. */
static int32_t updates_due(r2d2 *d, int64_t env_steps)
{
    if (env_steps < d->s.learning_starts || drawable(d) < 1)
        return 0;
    double per = (double)d->s.batch * (double)(d->L - d->K);
    d->credit += d->s.replay_ratio * (double)d->T * (double)d->B / per;
    int32_t n = (int32_t)floor(d->credit);
    d->credit -= n;
    return n;
}

static void report(const r2d2 *d, const upd_stats *sum, int32_t n, frl_learn_stats *out)
{
    double inv = n > 0 ? 1.0 / n : 0.0;
    out->value_loss = sum->loss * inv;
    out->q_mean = sum->q * inv;
    out->td_error = sum->td * inv;
    out->grad_norm = sum->grad_norm * inv;
    out->priority_spread = sum->spread * inv;
    out->learning_rate = d->lr;
    out->epochs_done = n;
    out->replay_fill = (double)d->replay->filled / (double)d->replay->blocks;
    double e = 0;
    for (int32_t b = 0; b < d->B; b++)
        e += d->env_eps[b];
    out->epsilon = e / d->B;
}

static frl_status r2d2_learn(frl_learner *l, const frl_batch *b, frl_learn_stats *out, char *err)
{
    r2d2 *d = l->impl;
    double t0 = now_s();
    frl_status st = frl_replay_add_slot(d->replay, d->ring, b->slot, err);
    if (st != FRL_OK)
        return st;
    index_sequences(d, (d->replay->next + d->replay->blocks - 1) % d->replay->blocks);
    out->time_replay = now_s() - t0;
    int32_t n = updates_due(d, (b->update_index + 1) * (int64_t)d->T * d->B);
    d->lr = frl_lr_at(d->s.lr, d->s.anneal_lr, b->update_index, b->num_updates);
    /* A stream per rollout: a resumed run draws what the uninterrupted one did. */
    frl_rng rng = frl_rng_stream(b->seed ^ 0x7232643273657173ULL, (uint64_t)b->update_index);
    upd_stats sum = {0};
    for (int32_t i = 0; i < n; i++) {
        upd_stats one = {0};
        st = update(d, &rng, &one, out, err);
        if (st != FRL_OK)
            return st;
        sum.loss += one.loss;
        sum.q += one.q;
        sum.td += one.td;
        sum.grad_norm += one.grad_norm;
        sum.spread += one.spread;
    }
    report(d, &sum, n, out);
    return FRL_OK;
}

/* ---- checkpoints ---- */

static void r2d2_save(const frl_learner *l, frl_section *s, int32_t *n, int64_t *steps)
{
    r2d2 *d = l->impl;
    size_t np = d->p->num_params;
    *steps = d->adam.t;
    frl_section_add_finite(s, n, "r2d2.target", FRL_DTYPE_F32, np, d->target);
    frl_section_add_finite(s, n, "r2d2.adam", FRL_DTYPE_F32, 2 * np, d->adam.m);
    d->counters[0] = (double)d->updates;
    d->counters[1] = d->credit;
    d->counters[2] = d->max_priority;
    frl_section_add(s, n, "r2d2.counters", FRL_DTYPE_F64, 3, d->counters);
    /* the priorities go with the replay's contents (train.save_replay), with the
     * exponent they were raised to, so a run resumed under another remakes them */
    if (d->save_priorities) {
        frl_section_add(s, n, "r2d2.priorities", FRL_DTYPE_F64, (uint64_t)d->tree.n,
                        d->tree.node + d->tree.cap);
        frl_section_add(s, n, "r2d2.alpha", FRL_DTYPE_F64, 1, &d->s.alpha);
    }
}

static int all_finite_f32(const float *v, int64_t n)
{
    int ok = 1;
    for (int64_t i = 0; i < n; i++)
        ok &= isfinite(v[i]) != 0;
    return ok;
}

/* Sequence i's saved p^from as p^alpha (this run's), by the power an update takes; -1
 * where no float priority gives it. */
static double priority_again(const r2d2 *d, double v, double from)
{
    if (from == d->s.alpha || !(v > 0))
        return v;
    float p = frl_priority_of_leaf(v, from);
    return p > 0 && p <= FLT_MAX ? pow(p, d->s.alpha) : -1.0;
}

/* Whether the sequence ending at block k lies in written blocks of the (loaded)
 * replay without crossing its write position. */
static int sequence_whole(const r2d2 *d, int64_t k)
{
    int64_t blocks = d->replay->blocks;
    if (d->replay->filled < blocks)
        return k >= d->nb - 1 && k < d->replay->filled;
    return (k - d->replay->next + blocks) % blocks >= d->nb - 1;
}

static frl_status load_priorities(r2d2 *d, const frl_container *c, const frl_learner *l,
                                  double max_priority, char *err)
{
    /* The replay was loaded only when the file holds it and this run keeps it (the
     * trainer's restore): otherwise it refills, its sequences indexed as they come. */
    if (!d->save_priorities || !l->saved_replay) {
        frl_sum_tree_clear(&d->tree);
        return FRL_OK;
    }
    double fallback = l->saved_alpha;
    double from;
    const frl_section *pr = frl_container_find(c, "r2d2.priorities", FRL_DTYPE_F64, d->tree.n,
                                               err);
    if (!pr)
        return FRL_ERR_FORMAT;
    frl_status st = frl_saved_alpha(c, "r2d2.alpha", fallback, d->s.alpha, &from, err);
    if (st != FRL_OK)
        return st;
    /* p^alpha <= max(p, 1) of a float p: a larger leaf is no run's, and two of them
     * would sum to infinity (NaN weights for every draw) */
    const double *v = pr->data;
    for (int64_t i = 0; i < d->tree.n; i++) {
        double again = v[i] >= 0 && v[i] <= FLT_MAX ? priority_again(d, v[i], from) : -1.0;
        if (!(again >= 0 && again <= FLT_MAX))
            return frl_fail(err, FRL_ERR_FORMAT, "r2d2.priorities: sequence %lld has "
                            "priority^alpha %g (must be in [0, %g])", (long long)i, v[i],
                            (double)FLT_MAX);
    }
    /* The sequences whole in this run's length: a run continued with another
     * train.seq_length of the same period has other ones than the file (longer ones
     * would reach across the write position or into unwritten blocks); for the run's
     * own length this keeps every leaf. */
    double fresh = pow(max_priority, d->s.alpha);
    frl_sum_tree_clear(&d->tree);
    for (int64_t i = 0; i < d->tree.n; i++) {
        double leaf = v[i] > 0 ? priority_again(d, v[i], from) : fresh;
        frl_sum_tree_set(&d->tree, i, sequence_whole(d, i / d->B) ? leaf : 0.0);
    }
    return FRL_OK;
}

static frl_status r2d2_load(frl_learner *l, const frl_container *c, int64_t steps, char *err)
{
    r2d2 *d = l->impl;
    int64_t np = (int64_t)d->p->num_params;
    const frl_section *t = frl_container_find(c, "r2d2.target", FRL_DTYPE_F32, np, err);
    const frl_section *a = t ? frl_container_find(c, "r2d2.adam", FRL_DTYPE_F32, 2 * np, err)
                             : NULL;
    const frl_section *k = a ? frl_container_find(c, "r2d2.counters", FRL_DTYPE_F64, 3, err)
                             : NULL;
    if (!k)
        return FRL_ERR_FORMAT;
    const double *cv = k->data;
    /* The update count becomes an int64: no run makes 2^53 updates. */
    const float *mv = a->data;
    if (!all_finite_f32(t->data, np) || !frl_adam_moments_valid(mv, mv + np, (size_t)np) ||
        !(cv[0] >= 0 && cv[0] <= 9007199254740992.0) ||
        !(cv[1] >= 0 && cv[1] < 1) || !(cv[2] >= 1 && cv[2] <= FLT_MAX)) /* it starts at 1 */
        return frl_fail(err, FRL_ERR_FORMAT, "r2d2.target, r2d2.adam or r2d2.counters holds a "
                        "value out of range");
    frl_status st = load_priorities(d, c, l, cv[2], err);
    if (st != FRL_OK)
        return st;
    memcpy(d->target, t->data, f4((size_t)np));
    memcpy(d->adam.m, a->data, f4(2 * (size_t)np));
    d->adam.t = steps;
    d->updates = (int64_t)cv[0];
    d->credit = cv[1];
    d->max_priority = cv[2];
    return FRL_OK;
}

/* SEED RL's R2D2 settings where they apply (Adam lr 1e-4 and epsilon 1e-3, discount
 * 0.997, 5-step targets, priority exponent 0.9 and importance exponent 0.6, batch 64,
 * gradient norm 40 as in R2D2's reference implementations), a dueling LSTM, over the
 * environment's PPO-tuned settings; doc/r2d2.md. */
const frl_learner_ops frl_algo_r2d2 = {
    .name = "r2d2",
    .settings = "policy.head=dueling_q policy.core=lstm policy.core_size=64 policy.hidden=64 "
                "policy.activation=relu policy.shared=true policy.obs_norm=false "
                "train.num_envs=8 train.lr=1e-4 train.adam_eps=1e-3 train.gamma=0.997 "
                "train.n_step=5 train.batch_size=64 train.per_alpha=0.9 train.per_beta=0.6 "
                "train.max_grad_norm=40 train.buffer_size=1000000 train.learning_starts=5000 "
                "train.anneal_lr=false train.reward_norm=false train.log_every=1000",
    .rollout = r2d2_rollout,
    .storage = r2d2_storage,
    .create = r2d2_create,
    .destroy = r2d2_destroy,
    .learn = r2d2_learn,
    .save = r2d2_save,
    .load = r2d2_load,
};
