/* DQN (Mnih et al., 2015) as Stable-Baselines3 and CleanRL users know it, with the
 * usual extensions behind settings: double Q (van Hasselt et al., 2016), dueling heads
 * (the policy's, policy.head=dueling_q), n-step returns and prioritised replay (the
 * replay's, lib/rl/replay.h), hard or Polyak target updates, Huber or squared loss.
 *
 * The online Q-network is the trainer's policy (policy.head=q or dueling_q), so the
 * samplers act with it (epsilon-greedy, the policy's epsilon set here) and checkpoints,
 * evaluation, the CLI and the bindings see an ordinary policy. Each learn call is one
 * rollout of train.train_freq steps per env: SB3's order is kept, so the target network
 * first takes the updates due during those steps, then train.gradient_steps minibatches
 * are learned, then epsilon is set for the next rollout.
 *
 * A minibatch's rows are learned in shards on the runtime's pool (TD targets, forward,
 * loss and backward of each shard's rows), and the shards' gradients are summed in
 * shard order: the shard size depends on the batch size only, so the bits do not
 * depend on the thread count. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "algo/learner.h"
#include "algo/param_passes.h"
#include "nn/optim.h"
#include "rl/heads.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct dqn_settings {
    int32_t batch, gradient_steps, n_step, double_q, huber, prioritized, anneal_lr;
    int64_t learning_starts, target_interval;
    double lr, gamma, tau, max_grad_norm, adam_eps;
    double eps_initial, eps_final, eps_fraction, per_beta;
} dqn_settings;

/* Shards of SHARD_ROWS rows, doubled while a minibatch would have more than
 * MAX_SHARDS; a minibatch of SHARD_ROWS to 2 SHARD_ROWS - 1 rows in two halves, one
 * smaller whole. Each shard writes a whole weight gradient, so smaller shards cost one
 * thread more (`fastrl bench train` with the zoo's 256x256 networks: batches of 128 as
 * four shards of 32 took one thread 1.23x as long as two of 64); the zoo's CartPole
 * batch of 64 as two halves takes one thread 1.10x as long as whole, and two threads
 * 0.82x (bench/README.md). */
enum { SHARD_ROWS = 64, MAX_SHARDS = 16, SHARD_STATS = 3 };

typedef struct dqn {
    dqn_settings s;
    frl_policy *p;          /* the online network's parameters are p->params */
    frl_pool *pool;
    frl_replay *replay;
    frl_ring *ring;
    int32_t T, B;
    int32_t shard_rows, shards;
    double lr;              /* this rollout's (train.anneal_lr) */
    float *target;          /* [num_params] */
    float *grads;           /* [shards x num_params] the shards' (none for one shard) */
    float *g;               /* [num_params] their sum, after them */
    float *w_out_in;        /* [num_params] the weights untransposed, per minibatch */
    frl_adam adam;          /* m and v: [2 x num_params] in one allocation */
    float *ws;              /* [threads x ws_floats]: a training pass and two forward */
    size_t ws_floats;       /* passes (x' through the target and the online network) */
    size_t train_floats, fwd_floats; /* a pass's share of it, planned once */
    double *stats;          /* [shards x SHARD_STATS]: loss, Q and |TD error| sums */
    float *y;               /* [batch] TD targets */
    float *priority;        /* [batch] new priorities (prioritised) */
    const frl_replay_batch *mb; /* the minibatch the shards learn */
    double epsilon;         /* the acting epsilon, as the policy holds it */
} dqn;

static void read_settings(const frl_config *c, dqn_settings *s)
{
    s->batch = (int32_t)frl_cfg_int(c, FRL_KEY_TRAIN_BATCH_SIZE);
    s->gradient_steps = (int32_t)frl_cfg_int(c, FRL_KEY_TRAIN_GRADIENT_STEPS);
    s->n_step = (int32_t)frl_cfg_int(c, FRL_KEY_TRAIN_N_STEP);
    s->double_q = frl_cfg_bool(c, FRL_KEY_TRAIN_DOUBLE_Q);
    s->huber = frl_cfg_choice(c, FRL_KEY_TRAIN_LOSS) == FRL_TRAIN_LOSS_HUBER;
    s->prioritized = frl_cfg_bool(c, FRL_KEY_TRAIN_PRIORITIZED);
    s->learning_starts = frl_cfg_int(c, FRL_KEY_TRAIN_LEARNING_STARTS);
    s->target_interval = frl_cfg_int(c, FRL_KEY_TRAIN_TARGET_UPDATE_INTERVAL);
    s->lr = frl_cfg_float(c, FRL_KEY_TRAIN_LR);
    s->anneal_lr = frl_cfg_bool(c, FRL_KEY_TRAIN_ANNEAL_LR);
    s->gamma = frl_cfg_float(c, FRL_KEY_TRAIN_GAMMA);
    s->tau = frl_cfg_float(c, FRL_KEY_TRAIN_TAU);
    s->max_grad_norm = frl_cfg_float(c, FRL_KEY_TRAIN_MAX_GRAD_NORM);
    s->adam_eps = frl_cfg_float(c, FRL_KEY_TRAIN_ADAM_EPS);
    s->eps_initial = frl_cfg_float(c, FRL_KEY_TRAIN_EXPLORATION_INITIAL_EPS);
    s->eps_final = frl_cfg_float(c, FRL_KEY_TRAIN_EXPLORATION_FINAL_EPS);
    s->eps_fraction = frl_cfg_float(c, FRL_KEY_TRAIN_EXPLORATION_FRACTION);
    s->per_beta = frl_cfg_float(c, FRL_KEY_TRAIN_PER_BETA);
}

static int64_t dqn_rollout(const frl_config *cfg)
{
    return frl_cfg_int(cfg, FRL_KEY_TRAIN_TRAIN_FREQ);
}

static void dqn_storage(const frl_config *cfg, frl_storage_need *need)
{
    need->kind = FRL_STORAGE_REPLAY;
    need->capacity = frl_cfg_int(cfg, FRL_KEY_TRAIN_BUFFER_SIZE);
    need->prioritized = frl_cfg_bool(cfg, FRL_KEY_TRAIN_PRIORITIZED);
    need->alpha = frl_cfg_float(cfg, FRL_KEY_TRAIN_PER_ALPHA);
    need->batch_rows = (int32_t)frl_cfg_int(cfg, FRL_KEY_TRAIN_BATCH_SIZE);
    /* A frame stack's earlier frames at each block's start: the replay rebuilds stacks
     * from them and the stored frames, each kept once. */
    need->keep_state = frl_cfg_int(cfg, FRL_KEY_POLICY_FRAME_STACK) > 1;
}

/* What DQN cannot learn with, said before anything is allocated. */
static frl_status check_context(const frl_learner_ctx *c, char *err)
{
    const frl_policy *p = c->policy;
    if (!p->discrete)
        return frl_fail(err, FRL_ERR_UNSUPPORTED,
                        "train.algo=dqn needs a discrete action space, and the actions are a "
                        "box of %d values (use ppo, impala or a2c)", (int)p->out_w);
    if (p->head == FRL_POLICY_HEAD_ACTOR_CRITIC)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                        "train.algo=dqn learns a Q-network, and policy.head=actor_critic is "
                        "set (use policy.head=q or dueling_q)");
    if (p->towers)
        return frl_fail(err, FRL_ERR_UNSUPPORTED,
                        "train.algo=dqn learns a memoryless Q-network; recurrent Q-networks "
                        "(policy.core) learn with train.algo=r2d2");
    if (frl_cfg_choice(c->cfg, FRL_KEY_SAMPLER_MODE) != FRL_SAMPLER_MODE_SYNC)
        return frl_fail(err, FRL_ERR_UNSUPPORTED,
                        "train.algo=dqn trains with sampler.mode=sync for now");
    if (!c->store->replay)
        return frl_fail(err, FRL_ERR_INTERNAL, "train.algo=dqn: the trainer gave no replay");
    return FRL_OK;
}

static void plan_shards(dqn *d)
{
    int32_t rows = SHARD_ROWS;
    while ((d->s.batch + rows - 1) / rows > MAX_SHARDS)
        rows *= 2;
    if (d->s.batch < 2 * SHARD_ROWS)
        rows = d->s.batch < SHARD_ROWS ? d->s.batch : (d->s.batch + 1) / 2;
    d->shard_rows = rows;
    d->shards = (d->s.batch + d->shard_rows - 1) / d->shard_rows;
}

/* A thread's workspace: a training pass, then two forward passes, of shard_rows. */
static size_t pass_floats(const dqn *d, int training)
{
    size_t n = frl_policy_pass_floats(d->p, d->shard_rows, training);
    return (n + 15) / 16 * 16; /* each pass 64-byte aligned */
}

static frl_status alloc_arrays(dqn *d, const frl_allocator *al, char *err)
{
    size_t np = d->p->num_params, rows = (size_t)d->s.batch;
    size_t threads = (size_t)frl_pool_threads(d->pool);
    size_t bufs = d->shards > 1 ? (size_t)d->shards + 1 : 1; /* one shard writes g */
    d->train_floats = pass_floats(d, 1);
    d->fwd_floats = pass_floats(d, 0);
    d->ws_floats = d->train_floats + 2 * d->fwd_floats;
    d->target = frl_alloc(al, sizeof(float) * np, 64);
    d->grads = frl_alloc(al, sizeof(float) * np * bufs, 64);
    d->adam.m = frl_alloc(al, sizeof(float) * 2 * np, 64);
    d->w_out_in = frl_alloc(al, sizeof(float) * np, 64);
    d->ws = frl_alloc(al, sizeof(float) * d->ws_floats * threads, 64);
    d->stats = frl_alloc(al, sizeof(double) * SHARD_STATS * (size_t)d->shards, 64);
    d->y = frl_alloc(al, sizeof(float) * 2 * rows, 64);
    if (!d->target || !d->grads || !d->adam.m || !d->w_out_in || !d->ws || !d->stats || !d->y)
        return frl_fail(err, FRL_ERR_NOMEM, "train.algo=dqn: out of memory for %zu parameters "
                        "and a minibatch of %zu", np, rows);
    d->adam.v = d->adam.m + np;
    d->g = d->grads + np * (bufs - 1);
    d->priority = d->y + rows;
    memset(d->adam.m, 0, sizeof(float) * 2 * np);
    memcpy(d->target, d->p->params, sizeof(float) * np);
    return FRL_OK;
}

/* Epsilon for the rollout that starts after `steps` env steps of a budget of `total`:
 * 1 until learning starts (SB3 acts uniformly then), then the linear schedule. */
static double epsilon_at(const dqn_settings *s, int64_t steps, int64_t total)
{
    if (steps < s->learning_starts)
        return 1.0;
    double progress = total > 0 ? (double)steps / (double)total : 1.0;
    if (s->eps_fraction <= 0 || progress >= s->eps_fraction)
        return s->eps_final;
    return s->eps_initial + (s->eps_final - s->eps_initial) * progress / s->eps_fraction;
}

static void set_epsilon(dqn *d, double eps)
{
    d->epsilon = eps;
    atomic_store(&d->p->epsilon, eps);
}

static frl_status dqn_create(frl_learner *l, const frl_learner_ctx *c, char *err)
{
    frl_status st = check_context(c, err);
    if (st != FRL_OK)
        return st;
    dqn *d = frl_alloc(&c->rt->alloc, sizeof *d, 64);
    if (!d)
        return frl_fail(err, FRL_ERR_NOMEM, "train.algo=dqn: out of memory");
    memset(d, 0, sizeof *d);
    l->impl = d;
    read_settings(c->cfg, &d->s);
    d->p = c->policy;
    d->pool = c->rt->pool;
    d->replay = c->store->replay;
    d->ring = c->store->ring;
    d->T = d->replay->shape.steps;
    d->B = d->replay->shape.envs;
    d->adam.beta1 = 0.9;
    d->adam.beta2 = 0.999;
    d->adam.eps = d->s.adam_eps;
    plan_shards(d);
    if ((st = alloc_arrays(d, &c->rt->alloc, err)) != FRL_OK)
        return st;
    set_epsilon(d, epsilon_at(&d->s, 0, 1));
    int32_t q = frl_learner_add_net(l, "policy", FRL_NET_Q, -1, d->p->params,
                                    (int64_t)d->p->num_params);
    frl_learner_add_net(l, "q_target", FRL_NET_TARGET, q, d->target, (int64_t)d->p->num_params);
    return FRL_OK;
}

static void dqn_destroy(frl_learner *l)
{
    dqn *d = l->impl;
    if (!d)
        return;
    const frl_allocator *al = &l->rt->alloc;
    frl_free(al, d->target);
    frl_free(al, d->grads);
    frl_free(al, d->adam.m);
    frl_free(al, d->w_out_in);
    frl_free(al, d->ws);
    frl_free(al, d->stats);
    frl_free(al, d->y);
    frl_free(al, d);
    l->impl = NULL;
}

/* ---- one minibatch ---- */

typedef struct step_stats {
    double loss, q, td, grad_norm, age;
} step_stats;

/* The bootstrap value of rows [first, first + rows) of x' into d->y: r + discount *
 * Q_target(x', a*), a* the target's argmax, or the online network's with double Q. */
static void td_targets(dqn *d, int32_t first, int32_t rows, float *ws)
{
    const frl_policy *p = d->p;
    const frl_replay_batch *mb = d->mb;
    const float *x = mb->next_obs + (size_t)first * (size_t)frl_policy_input_row_w(p);
    int32_t n = p->out_w;
    frl_pass ft, fo;
    frl_policy_pass_layout(p, rows, 0, ws, &ft);
    frl_policy_forward(p, d->target, rows, x, &ft);
    const float *pick = ft.out;
    if (d->s.double_q) {
        frl_policy_pass_layout(p, rows, 0, ws + d->fwd_floats, &fo);
        frl_policy_forward(p, p->params, rows, x, &fo);
        pick = fo.out;
    }
    for (int32_t i = 0; i < rows; i++) {
        const float *qt = ft.out + (size_t)i * (size_t)n;
        int32_t a = frl_cat_argmax(pick + (size_t)i * (size_t)n, n);
        d->y[first + i] = mb->reward[first + i] + mb->discount[first + i] * qt[a];
    }
}

/* The loss's gradient for rows [first, first + rows) into f->d_out (zero but at each
 * row's action; the loss is the minibatch's mean), its sums into st. */
static void loss_grad(dqn *d, int32_t first, int32_t rows, frl_pass *f, double *st)
{
    const frl_replay_batch *mb = d->mb;
    int32_t n = d->p->out_w;
    const int32_t *act = (const int32_t *)mb->action + first;
    memset(f->d_out, 0, sizeof(float) * (size_t)rows * (size_t)n);
    double loss = 0, q = 0, td = 0;
    for (int32_t i = 0; i < rows; i++) {
        size_t at = (size_t)i * (size_t)n + (size_t)act[i];
        double e = (double)f->out[at] - d->y[first + i], ae = fabs(e);
        double w = mb->weight[first + i];
        /* SB3's smooth L1 (delta 1), or CleanRL's mse_loss: e^2, gradient 2e */
        double l = d->s.huber ? (ae > 1.0 ? ae - 0.5 : 0.5 * e * e) : e * e;
        double g = d->s.huber ? (ae > 1.0 ? (e > 0 ? 1.0 : -1.0) : e) : 2.0 * e;
        loss += w * l;
        f->d_out[at] = (float)(w * g / mb->rows);
        q += f->out[at];
        td += ae;
        d->priority[first + i] = (float)(ae + 1e-6);
    }
    st[0] = loss;
    st[1] = q;
    st[2] = td;
}

/* One shard: its TD targets, forward, loss and gradient (written into its own). */
static int shard_task(void *user, int32_t task, int32_t thread)
{
    dqn *d = user;
    const frl_policy *p = d->p;
    int32_t first = task * d->shard_rows;
    int32_t rows = d->mb->rows - first < d->shard_rows ? d->mb->rows - first : d->shard_rows;
    float *ws = d->ws + (size_t)thread * d->ws_floats;
    td_targets(d, first, rows, ws + d->train_floats);
    frl_pass f;
    frl_policy_pass_layout(p, rows, 1, ws, &f);
    f.w_out_in = d->w_out_in;
    const float *x = d->mb->obs + (size_t)first * (size_t)frl_policy_input_row_w(p);
    frl_policy_forward(p, p->params, rows, x, &f);
    loss_grad(d, first, rows, &f, d->stats + (size_t)task * SHARD_STATS);
    float *grads = d->shards == 1 ? d->g : d->grads + (size_t)task * p->num_params;
    frl_policy_backward(p, p->params, grads, rows, &f);
    return 0;
}

/* The minibatch's gradient into d->g and its loss, Q and TD terms into st. */
static frl_status gradient(dqn *d, step_stats *st, char *err)
{
    int32_t shards = (d->mb->rows + d->shard_rows - 1) / d->shard_rows, failed;
    /* The input gradients as forward products with these (linear_bwd_input's bits),
     * packed once for the shards instead of once in each. */
    frl_policy_weights_out_in(d->p, d->p->params, d->w_out_in);
    if (frl_pool_run(d->pool, shards, shard_task, d, &failed) != 0)
        return frl_fail(err, FRL_ERR_INTERNAL, "train.algo=dqn: shard %d failed", (int)failed);
    if (shards > 1)
        frl_params_sum_shards(d->pool, d->grads, d->p->num_params, shards, d->g,
                              d->p->num_params);
    double sum[SHARD_STATS] = {0};
    for (int32_t s = 0; s < shards; s++)
        for (int k = 0; k < SHARD_STATS; k++)
            sum[k] += d->stats[(size_t)s * SHARD_STATS + (size_t)k];
    st->loss = sum[0] / d->mb->rows;
    st->q = sum[1] / d->mb->rows;
    st->td = sum[2] / d->mb->rows;
    return FRL_OK;
}

/* Mean age of the minibatch's transitions: rows written to the replay since each. */
static double sample_age(const frl_replay *r, const int64_t *index, int32_t rows)
{
    int64_t head = r->next * r->block_rows; /* the row after the newest */
    double sum = 0;
    for (int32_t i = 0; i < rows; i++)
        sum += (double)((head - 1 - index[i] + 2 * r->capacity) % r->capacity);
    return sum / rows;
}

/* A non-finite TD error means the Q-network diverged: say so, as the trainer does for
 * a non-finite parameter, rather than the replay's "priority ... is nan". */
static frl_status update_priorities(dqn *d, const frl_replay_batch *mb, char *err)
{
    int finite = 1;
    for (int32_t i = 0; i < mb->rows; i++)
        finite &= isfinite(d->priority[i]) != 0;
    if (!finite)
        return frl_fail(err, FRL_ERR_NONFINITE, "training diverged: a TD error became "
                        "non-finite (rewards too large for floats, or lower train.lr or set "
                        "train.max_grad_norm); the replay's priorities are unchanged");
    return frl_replay_update(d->replay, mb->index, d->priority, mb->rows, err);
}

static frl_status grad_step(dqn *d, double beta, frl_rng *rng, step_stats *st,
                            frl_learn_stats *out, char *err)
{
    double t0 = now_s();
    frl_replay_batch *mb = &d->replay->batch;
    frl_replay_draw draw = {.rows = d->s.batch, .n_step = d->s.n_step, .gamma = d->s.gamma,
                            .prioritized = d->s.prioritized, .beta = beta};
    frl_status s = frl_replay_sample(d->replay, rng, &draw, mb, err);
    if (s != FRL_OK)
        return s;
    st->age = sample_age(d->replay, mb->index, mb->rows);
    double t1 = now_s();
    d->mb = mb;
    if ((s = gradient(d, st, err)) != FRL_OK)
        return s;
    double t2 = now_s();
    size_t np = d->p->num_params;
    st->grad_norm = frl_grad_norm(d->p->k, d->g, np);
    frl_params_adam(d->pool, &d->adam, d->p->k, d->p->params, d->g, np, d->lr,
                    frl_clip_scale(st->grad_norm, d->s.max_grad_norm));
    d->p->version++;
    if (d->s.prioritized)
        s = update_priorities(d, mb, err);
    double t3 = now_s();
    out->time_replay += t1 - t0 + (d->s.prioritized ? t3 - t2 : 0);
    out->time_backward += t2 - t1;
    out->time_optimizer += t3 - t2;
    return s;
}

/* ---- the learn call ---- */

/* The target updates SB3 makes during the rollout's T vec-env steps (one per
 * target_update_interval / B of them): with Polyak averaging, k updates with no learning
 * between them are target = q + (1 - tau)^k (target - q). */
static void update_target(dqn *d, int64_t rollout_index)
{
    int64_t every = d->s.target_interval / d->B > 1 ? d->s.target_interval / d->B : 1;
    int64_t before = rollout_index * d->T, after = before + d->T;
    int64_t k = after / every - before / every;
    if (k <= 0)
        return;
    size_t np = d->p->num_params;
    const float *q = d->p->params;
    if (d->s.tau >= 1.0) {
        memcpy(d->target, q, sizeof(float) * np);
        return;
    }
    float keep = (float)pow(1.0 - d->s.tau, (double)k);
    for (size_t i = 0; i < np; i++)
        d->target[i] = q[i] + keep * (d->target[i] - q[i]);
}

static int32_t steps_this_call(const dqn *d)
{
    /* -1: SB3's, one per env step the rollout collected (T steps of B envs) */
    return d->s.gradient_steps >= 0 ? d->s.gradient_steps : d->T * d->B;
}

static void report(const dqn *d, const step_stats *sum, int32_t steps, frl_learn_stats *out)
{
    double inv = steps > 0 ? 1.0 / steps : 0.0;
    out->value_loss = sum->loss * inv;
    out->q_mean = sum->q * inv;
    out->td_error = sum->td * inv;
    out->grad_norm = sum->grad_norm * inv;
    out->sample_age = sum->age * inv;
    out->learning_rate = d->lr;
    out->epochs_done = steps;
    /* The share of the replay's rows written (R2D2's too): 1 when full, where held
     * transitions stay short of the capacity by the autoreset rows among them. */
    out->replay_fill = (double)d->replay->filled / (double)d->replay->blocks;
}

static frl_status dqn_learn(frl_learner *l, const frl_batch *b, frl_learn_stats *out, char *err)
{
    dqn *d = l->impl;
    double t0 = now_s();
    frl_status st = frl_replay_add_slot(d->replay, d->ring, b->slot, err);
    out->time_replay = now_s() - t0;
    if (st != FRL_OK)
        return st;
    int64_t per = (int64_t)d->T * d->B, done = (b->update_index + 1) * per;
    int64_t total = b->num_updates * per;
    update_target(d, b->update_index);
    d->lr = frl_lr_at(d->s.lr, d->s.anneal_lr, b->update_index, b->num_updates);
    step_stats sum = {0};
    /* A replay can hold only autoreset rows (a resumed run without its replay whose
     * first rollouts of one step follow an episode's end; a replay of one T x B block):
     * nothing to learn from yet, which is not an error. */
    int32_t steps = done > d->s.learning_starts && d->replay->size > 0 ? steps_this_call(d) : 0;
    double progress = total > 0 ? fmin(1.0, (double)done / (double)total) : 1.0;
    double beta = d->s.per_beta + (1.0 - d->s.per_beta) * progress;
    /* A stream per rollout: a resumed run draws what the uninterrupted one did. */
    frl_rng rng = frl_rng_stream(b->seed ^ 0x64716e5f64726177ULL, (uint64_t)b->update_index);
    for (int32_t i = 0; i < steps && st == FRL_OK; i++) {
        step_stats one = {0};
        st = grad_step(d, beta, &rng, &one, out, err);
        sum.loss += one.loss;
        sum.q += one.q;
        sum.td += one.td;
        sum.grad_norm += one.grad_norm;
        sum.age += one.age;
    }
    report(d, &sum, steps, out);
    out->epsilon = d->epsilon; /* the rollout's */
    set_epsilon(d, epsilon_at(&d->s, done, total));
    return st;
}

/* ---- checkpoints ---- */

static void dqn_save(const frl_learner *l, frl_section *s, int32_t *n, int64_t *steps)
{
    const dqn *d = l->impl;
    size_t np = d->p->num_params;
    *steps = d->adam.t;
    frl_section_add_finite(s, n, "dqn.target", FRL_DTYPE_F32, np, d->target);
    frl_section_add_finite(s, n, "dqn.adam", FRL_DTYPE_F32, 2 * np, d->adam.m);
    frl_section_add(s, n, "dqn.epsilon", FRL_DTYPE_F64, 1, &d->epsilon);
}

static frl_status dqn_load(frl_learner *l, const frl_container *c, int64_t steps, char *err)
{
    dqn *d = l->impl;
    int64_t np = (int64_t)d->p->num_params;
    const frl_section *t = frl_container_find(c, "dqn.target", FRL_DTYPE_F32, np, err);
    const frl_section *a = t ? frl_container_find(c, "dqn.adam", FRL_DTYPE_F32, 2 * np, err) : NULL;
    const frl_section *e = a ? frl_container_find(c, "dqn.epsilon", FRL_DTYPE_F64, 1, err) : NULL;
    if (!e)
        return FRL_ERR_FORMAT;
    double eps = *(const double *)e->data;
    const float *tp = t->data;
    int finite = 1;
    for (int64_t i = 0; i < np; i++)
        finite &= isfinite(tp[i]) != 0;
    const float *mv = a->data;
    if (!(eps >= 0 && eps <= 1) || !finite || !frl_adam_moments_valid(mv, mv + np, (size_t)np))
        return frl_fail(err, FRL_ERR_FORMAT, "dqn.epsilon, dqn.target or dqn.adam holds a "
                        "value out of range");
    memcpy(d->target, t->data, sizeof(float) * (size_t)np);
    memcpy(d->adam.m, a->data, sizeof(float) * 2 * (size_t)np);
    d->adam.t = steps;
    set_epsilon(d, eps);
    return FRL_OK;
}

/* SB3's DQN defaults (its MlpPolicy: 64x64 ReLU; Adam with torch's epsilon; constant
 * learning rate; one env), over the environment's PPO-tuned settings. */
const frl_learner_ops frl_algo_dqn = {
    .name = "dqn",
    .settings = "policy.head=q policy.hidden=64,64 policy.activation=relu policy.init=uniform "
                "policy.shared=false "
                "policy.obs_norm=false train.num_envs=1 train.lr=1e-4 train.gamma=0.99 "
                "train.max_grad_norm=10 train.adam_eps=1e-8 train.anneal_lr=false "
                "train.reward_norm=false train.log_every=1000",
    .rollout = dqn_rollout,
    .storage = dqn_storage,
    .create = dqn_create,
    .destroy = dqn_destroy,
    .learn = dqn_learn,
    .save = dqn_save,
    .load = dqn_load,
};
