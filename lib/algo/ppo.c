/* PPO: advantages, the clipped surrogate loss and its gradient, and the optimiser step. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "core/rng.h"
#include "nn/dev_math.h"
#include "rl/frame_stack.h"
#include "rl/heads.h"
#include "rl/policy_rnn.h"
#include "algo/param_passes.h"
#include "algo/ppo.h"

/* Per-shard sums (the first five), then per-epoch extras. */
enum { STAT_PG, STAT_V, STAT_ENT, STAT_KL, STAT_CLIP, STAT_N, TIME_BWD, TIME_OPT, SUM_COUNT };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static frl_status rvalues(frl_ppo *l, char *err);

/* ---- setup ---- */

static size_t gather_floats(const frl_policy *p, int32_t rows)
{
    /* obs (whole frame stacks), actions (as floats or int32), old log-probs, advantages,
     * returns, old values, and the log-std gradients and inverse stds (box), in double */
    size_t r = (size_t)rows;
    return frl_align_up(r * (size_t)frl_policy_input_row_w(p), 16) +
           frl_align_up(r * (size_t)p->out_w, 16) + 4 * frl_align_up(r, 16) +
           2 * frl_align_up((size_t)p->out_w * 2, 16);
}

/* A recurrent task's workspace: a sequence pass over up to ws_cols columns (a shard's,
 * or the value pass's), the gathered rows, the columns' first states and start flags,
 * and a step's workspace for the bootstrap values. */
static size_t rshard_floats(const frl_ppo *l)
{
    const frl_policy *p = l->p;
    size_t wc = (size_t)l->ws_cols;
    return frl_policy_rnn_seq_floats(p, l->T, l->ws_cols, 1) + gather_floats(p, l->buf_rows) +
           frl_align_up(wc * (size_t)p->state_w, 16) +
           frl_align_up(((size_t)l->T * wc + 3) / 4, 16) +
           frl_policy_rnn_step_floats(p, l->ws_cols);
}

static frl_status alloc_buffers(frl_ppo *l, char *err)
{
    const frl_allocator *al = &l->rt->alloc;
    int32_t threads = frl_runtime_threads(l->rt);
    size_t n = (size_t)l->N, np = l->p->num_params;
    l->grad_stride = frl_align_up(np, 16);
    l->adv = frl_alloc(al, sizeof(float) * (3 * n + (size_t)l->B), 64);
    l->valid = frl_alloc(al, n, 64);
    l->perm = frl_alloc(al, sizeof(int32_t) * n, 64);
    /* the shards' gradients, the reduced one, and the untransposed weights */
    l->grads = frl_alloc(al, sizeof(float) * l->grad_stride * (size_t)(l->shards + 2), 64);
    l->adam.m = frl_alloc(al, sizeof(float) * 2 * l->grad_stride, 64);
    l->shard_stats = frl_alloc(al, sizeof(double) * FRL_PPO_STAT_COUNT * (size_t)l->shards, 64);
    l->ws = frl_alloc(al, sizeof(float *) * (size_t)threads, 64);
    if (l->s.decoupled)
        l->dec_w = frl_alloc(al, sizeof(double) * n, 64);
    if (!l->adv || !l->valid || !l->perm || !l->grads || !l->adam.m || !l->shard_stats ||
        !l->ws || (l->s.decoupled && !l->dec_w))
        return frl_fail(err, FRL_ERR_NOMEM, "PPO learner: out of memory for %d rows", (int)l->N);
    l->ret = l->adv + n;
    l->vboot = l->ret + n;
    l->log_ratio = l->vboot + l->B;
    l->g = l->grads + l->grad_stride * (size_t)l->shards;
    l->w_out_in = l->g + l->grad_stride;
    l->adam.v = l->adam.m + l->grad_stride;
    l->ws_floats = l->recurrent ? rshard_floats(l)
                                : frl_policy_pass_floats(l->p, l->shard_rows, 1) +
                                      gather_floats(l->p, l->shard_rows);
    if (l->recurrent) {
        l->starts = frl_alloc(al, n, 64);
        l->col_rows = frl_alloc(al, sizeof(int32_t) * (size_t)l->M, 64);
        if (!l->starts || !l->col_rows)
            return frl_fail(err, FRL_ERR_NOMEM, "PPO learner: out of memory for %d rows",
                            (int)l->N);
    }
    for (int32_t t = 0; t < threads; t++)
        if (!(l->ws[t] = frl_alloc(al, sizeof(float) * l->ws_floats, 64)))
            return frl_fail(err, FRL_ERR_NOMEM, "PPO learner: out of memory for workspaces");
    return FRL_OK;
}

/* Minibatches of whole columns, so each sequence runs from its rollout's first state.
 * A shard's recurrent products have one row per column, and a product of a few rows
 * costs about what one row does (the weights dominate): so shards of at least 4
 * columns (fewer only if the minibatch has fewer) and 64 rows, at most 8 shards. The
 * value pass, whose grouping changes no bit, takes 16 columns a task. Neither depends
 * on the thread count. */
static frl_status init_recurrent(frl_ppo *l, char *err)
{
    if (l->B % l->s.minibatches != 0)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                        "train.minibatches %d must divide train.num_envs %d for a recurrent "
                        "policy (policy.core): a minibatch is whole env sequences",
                        (int)l->s.minibatches, (int)l->B);
    int32_t mbc = l->B / l->s.minibatches, sc = (64 + l->T - 1) / l->T;
    sc = sc > 4 ? sc : 4;
    sc = sc > (mbc + 7) / 8 ? sc : (mbc + 7) / 8;
    sc = sc < mbc ? sc : mbc;
    l->shard_cols = sc;
    l->shard_rows = sc * l->T;
    l->shards = (mbc + sc - 1) / sc;
    l->value_cols = l->B < 16 ? l->B : 16;
    l->ws_cols = sc > l->value_cols ? sc : l->value_cols;
    l->buf_rows = l->ws_cols * l->T;
    l->bptt = l->s.bptt > 0 ? l->s.bptt : l->T;
    return FRL_OK;
}

/* dist.mode=ddppo: shards within env groups (algo/ppo_groups.c). */
static frl_status init_groups(frl_ppo *l, char *err)
{
    if (l->recurrent)
        return frl_fail(err, FRL_ERR_UNSUPPORTED, "dist.mode=ddppo: recurrent policies "
                        "(policy.core) do not train distributed yet");
    frl_ppo_groups *g = &l->groups;
    frl_status st = frl_ppo_groups_init(g, l->s.dist, l->s.group_envs, l->T, l->B, l->s.epochs,
                                        l->s.minibatches, l->s.norm_adv, l->s.reduce_slices, err);
    if (st != FRL_OK)
        return st;
    l->grouped = 1;
    l->shard_rows = g->shard_rows;
    l->shards = g->local_groups * g->group_shards;
    l->buf_rows = l->shard_rows;
    return FRL_OK;
}

frl_status frl_ppo_init(frl_ppo *l, frl_runtime *rt, frl_policy *p, frl_ring *ring,
                        const frl_ppo_settings *s, char *err)
{
    memset(l, 0, sizeof *l);
    l->p = p;
    l->rt = rt;
    l->ring = ring;
    l->s = *s;
    l->T = ring->steps;
    l->B = ring->envs;
    l->N = l->T * l->B;
    if (l->N % s->minibatches != 0)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                        "train.minibatches %d must divide train.rollout x train.num_envs = %d",
                        (int)s->minibatches, (int)l->N);
    l->M = l->N / s->minibatches;
    l->shard_rows = frl_ppo_shard_rows(l->M);
    l->shards = (l->M + l->shard_rows - 1) / l->shard_rows;
    l->buf_rows = l->shard_rows;
    l->recurrent = p->towers > 0;
    frl_status st = FRL_OK;
    if (s->dist)
        st = init_groups(l, err);
    else if (l->recurrent)
        st = init_recurrent(l, err);
    if (st != FRL_OK)
        return st;
    l->adam.beta1 = 0.9;
    l->adam.beta2 = 0.999;
    l->adam.eps = s->adam_eps;
    st = alloc_buffers(l, err);
    if (st == FRL_OK && l->grouped)
        st = frl_ppo_groups_alloc(&l->groups, &rt->alloc, l->grad_stride, p->num_params,
                                  FRL_PPO_STAT_COUNT, err);
    return st;
}

void frl_ppo_free(frl_ppo *l)
{
    const frl_allocator *al = &l->rt->alloc;
    for (int32_t t = 0; l->ws && t < frl_runtime_threads(l->rt); t++)
        frl_free(al, l->ws[t]);
    frl_free(al, l->ws);
    frl_free(al, l->adv);
    frl_free(al, l->dec_w);
    frl_free(al, l->valid);
    frl_free(al, l->perm);
    frl_free(al, l->grads);
    frl_free(al, l->adam.m);
    frl_free(al, l->shard_stats);
    frl_free(al, l->starts);
    frl_free(al, l->col_rows);
    if (l->grouped)
        frl_ppo_groups_free(&l->groups, al);
    memset(l, 0, sizeof *l);
}

/* ---- advantages ---- */

/* The steps the slot's rollout collected: T, or fewer when a preempted rollout
 * (dist.preempt) stopped early; the rows after them hold no transitions. */
static int32_t steps_in(const frl_ppo *l)
{
    return l->steps_used > 0 && l->steps_used < l->T ? l->steps_used : l->T;
}

/* log pi(a|x) - log mu(a|x) of the slot's row i, given the learner's head outputs. */
static float row_log_ratio(const frl_ppo *l, const float *out, int32_t i)
{
    const frl_policy *p = l->p;
    const unsigned char *act = frl_ring_at(l->ring, l->slot, FRL_RING_ACTIONS);
    const float *mu = frl_ring_at(l->ring, l->slot, FRL_RING_LOG_PROBS);
    size_t ab = p->discrete ? sizeof(int32_t) : sizeof(float) * (size_t)p->out_w;
    const void *a = act + (size_t)i * ab;
    double lp = p->discrete ? frl_cat_logp(out, p->out_w, *(const int32_t *)a)
                            : frl_gauss_logp(out, p->params + p->log_std_off, a, p->out_w);
    return (float)(lp - mu[i]);
}

/* Row i's log pi - log mu, and for decoupled PPO its truncated ratio, which every epoch's
 * gather would otherwise recompute (exp and log in double, per row and epoch). */
static void set_log_ratio(frl_ppo *l, const float *out, int32_t i)
{
    /* A preempted rollout's rows after its last step hold no transition: their actions
     * are whatever the slot held (never written, from an allocator that does not zero,
     * a discrete index out of range); nothing reads their ratio, so it is 1. */
    float lr = i < steps_in(l) * l->B ? row_log_ratio(l, out, i) : 0.0f;
    l->log_ratio[i] = lr;
    if (l->s.decoupled)
        l->dec_w[i] = frl_dm_truncated_ratio(lr, l->s.rho_bar);
}

/* Where the slot's frames are, for a frame-stacking policy's rows (rl/frame_stack.h). The
 * bootstrap frame follows the last step collected, so a cut rollout's stacks for it are
 * built on that step's frames and flags, not on the unwritten rows after it. */
static frl_frame_source frames_of(const frl_ppo *l, int32_t slot)
{
    frl_frame_source s = {l->p->stack, (size_t)l->p->obs_w, steps_in(l), l->B,
                          frl_ring_at(l->ring, slot, FRL_RING_OBSERVATIONS),
                          frl_ring_at(l->ring, slot, FRL_RING_BOOTSTRAP_OBS),
                          frl_ring_at(l->ring, slot, FRL_RING_RESET_STEPS), l->state0};
    return s;
}

/* The stacks of rows [first, first + rows) of step-major rows (row i: step i / B, env
 * i % B; step_base T: the bootstrap frames) into the gather area of `thread`'s workspace,
 * which a value pass does not otherwise use. */
static const float *stacks_of(const frl_ppo *l, int32_t first, int32_t rows, int32_t step_base,
                              int32_t thread)
{
    const frl_policy *p = l->p;
    float *out = l->ws[thread] + frl_policy_pass_floats(p, l->shard_rows, 1);
    frl_frame_source s = frames_of(l, l->slot);
    size_t w = (size_t)frl_policy_input_row_w(p);
    for (int32_t r = 0; r < rows; r++) {
        int32_t i = first + r;
        frl_frame_stack_row(&s, step_base + i / l->B, i % l->B, out + (size_t)r * w);
    }
    return out;
}

/* Values of rows [first, first + rows) of obs into v, with the workspace of `thread`;
 * with log_ratio set, also log pi(a|x) - log mu(a|x) of the slot's rows (V-trace,
 * decoupled PPO: set_log_ratio). A frame stack's rows are gathered first (step_base: the
 * step of row 0, T for the bootstrap frames). */
static void values_of(frl_ppo *l, const float *obs, int32_t first, int32_t rows, float *v,
                      int log_ratio, int32_t thread, int32_t step_base)
{
    const frl_policy *p = l->p;
    frl_pass f;
    frl_policy_pass_layout(p, rows, 0, l->ws[thread], &f);
    const float *in = p->stack > 1 ? stacks_of(l, first, rows, step_base, thread)
                                   : obs + (size_t)first * (size_t)p->obs_w;
    frl_policy_forward_heads(p, p->params, rows, in, &f,
                             FRL_HEAD_CRITIC | (log_ratio ? FRL_HEAD_ACTOR : 0u));
    memcpy(v + first, f.value, sizeof(float) * (size_t)rows);
    if (!log_ratio)
        return;
    for (int32_t r = 0; r < rows; r++)
        set_log_ratio(l, f.out + (size_t)r * (size_t)p->out_w, first + r);
}

/* V-trace and decoupled PPO need the learner's log pi(a|x) - log mu(a|x) of every row. */
static int wants_log_ratio(const frl_ppo *l)
{
    return l->s.vtrace || l->s.decoupled;
}

static int values_task(void *user, int32_t task, int32_t thread)
{
    frl_ppo *l = user;
    int32_t first = task * l->shard_rows;
    int32_t rows = l->N - first < l->shard_rows ? l->N - first : l->shard_rows;
    values_of(l, frl_ring_at(l->ring, l->slot, FRL_RING_OBSERVATIONS), first, rows,
              frl_ring_at(l->ring, l->slot, FRL_RING_VALUES), wants_log_ratio(l), thread, 0);
    return 0;
}

frl_status frl_ppo_values(frl_ppo *l, int32_t slot, char *err)
{
    int32_t failed, tasks = (l->N + l->shard_rows - 1) / l->shard_rows;
    l->slot = slot;
    if (l->recurrent)
        return rvalues(l, err);
    if (frl_pool_run(l->rt->pool, tasks, values_task, l, &failed) != 0)
        return frl_fail(err, FRL_ERR_INTERNAL, "PPO values: task %d failed", (int)failed);
    return FRL_OK;
}

void frl_ppo_bootstrap(frl_ppo *l, int32_t slot)
{
    if (l->recurrent)
        return; /* rvalues ran on into the bootstrap step, with the final states */
    const float *obs = frl_ring_at(l->ring, slot, FRL_RING_BOOTSTRAP_OBS);
    l->slot = slot;
    for (int32_t first = 0; first < l->B; first += l->shard_rows) {
        int32_t rows = l->B - first < l->shard_rows ? l->B - first : l->shard_rows;
        values_of(l, obs, first, rows, l->vboot, 0, 0, steps_in(l));
    }
}

/* With next-step autoreset, the row after an episode's last step holds the value of
 * the final observation, so truncation bootstraps from it; the row itself is an
 * autoreset step, not a transition, and is masked out. */
void frl_ppo_advantages(frl_ppo *l, int32_t slot)
{
    const float *v = frl_ring_at(l->ring, slot, FRL_RING_VALUES);
    const float *r = frl_ring_at(l->ring, slot, FRL_RING_REWARDS);
    const uint8_t *term = frl_ring_at(l->ring, slot, FRL_RING_TERMINATED);
    const uint8_t *trunc = frl_ring_at(l->ring, slot, FRL_RING_TRUNCATED);
    const uint8_t *reset = frl_ring_at(l->ring, slot, FRL_RING_RESET_STEPS);
    const frl_dm_adv_params p = {l->s.gamma,  l->s.lambda, l->s.rho_bar,
                                 l->s.c_bar,  l->s.vtrace, l->s.decoupled};
    /* The device learner's columns (lib/nn/dev_math.h): one arithmetic for both. A
     * preempted rollout (dist.preempt) ends early: its columns bootstrap from where it
     * stopped, and the rows after are no transitions. */
    int32_t T = steps_in(l);
    for (int32_t b = 0; b < l->B; b++) {
        if (l->s.vtrace)
            frl_dm_vtrace_column(T, l->B, b, r, v, l->log_ratio, term, trunc, reset,
                                 l->vboot[b], &p, l->adv, l->ret, l->valid);
        else
            frl_dm_gae_column(T, l->B, b, r, v, term, trunc, reset, l->vboot[b], &p, l->adv,
                              l->ret, l->valid);
    }
    size_t done = (size_t)T * (size_t)l->B;
    memset(l->valid + done, 0, (size_t)l->N - done);
}

/* ---- one shard: forward, loss gradient, backward ---- */

typedef struct shard_buf {
    float *obs, *act, *old_lp, *adv, *ret, *old_v;
    double *dlog_std, *inv_std;
} shard_buf;

/* The gathered rows of a shard from g on (gather_floats). */
static void shard_bufs(const frl_ppo *l, float *g, shard_buf *sb)
{
    size_t r = (size_t)l->buf_rows;
    sb->obs = g;
    g += frl_align_up(r * (size_t)frl_policy_input_row_w(l->p), 16);
    sb->act = g;
    g += frl_align_up(r * (size_t)l->p->out_w, 16);
    sb->old_lp = g;
    sb->adv = g + frl_align_up(r, 16);
    sb->ret = g + 2 * frl_align_up(r, 16);
    sb->old_v = g + 3 * frl_align_up(r, 16);
    sb->dlog_std = (double *)(void *)(g + 4 * frl_align_up(r, 16)); /* 64-byte aligned */
    sb->inv_std = sb->dlog_std + frl_align_up((size_t)l->p->out_w, 8);
}

static void shard_layout(const frl_ppo *l, float *ws, frl_pass *f, shard_buf *sb)
{
    frl_policy_pass_layout(l->p, l->shard_rows, 1, ws, f);
    shard_bufs(l, ws + frl_policy_pass_floats(l->p, l->shard_rows, 1), sb);
}

/* Rows ahead of the one gathered whose data is requested: a minibatch reads the slot in
 * random order, and in async mode the slot was written by another core. */
enum { GATHER_AHEAD = 16 };

static void gather_prefetch(const frl_ppo *l, const float *obs, const float *lp,
                            const float *v, size_t ow, size_t i)
{
    __builtin_prefetch(obs + i * ow);
    __builtin_prefetch(lp + i);
    __builtin_prefetch(v + i);
    __builtin_prefetch(l->adv + i);
    __builtin_prefetch(l->ret + i);
}

static void gather(const frl_ppo *l, const int32_t *idx, int32_t rows, shard_buf *sb)
{
    frl_ring *ring = l->ring;
    const float *obs = frl_ring_at(ring, l->slot, FRL_RING_OBSERVATIONS);
    const unsigned char *act = frl_ring_at(ring, l->slot, FRL_RING_ACTIONS);
    const float *lp = frl_ring_at(ring, l->slot, FRL_RING_LOG_PROBS);
    const float *v = frl_ring_at(ring, l->slot, FRL_RING_VALUES);
    size_t ow = (size_t)l->p->obs_w, iw = (size_t)frl_policy_input_row_w(l->p);
    size_t ab = l->p->discrete ? sizeof(int32_t) : sizeof(float) * (size_t)l->p->out_w;
    frl_frame_source fs = frames_of(l, l->slot);
    for (int32_t r = 0; r < rows; r++) {
        size_t i = (size_t)idx[r];
        if (r + GATHER_AHEAD < rows)
            gather_prefetch(l, obs, lp, v, ow, (size_t)idx[r + GATHER_AHEAD]);
        if (l->p->stack > 1) {
            frl_frame_stack_row(&fs, idx[r] / l->B, idx[r] % l->B, sb->obs + (size_t)r * iw);
        } else { /* a few floats a row: a loop, not a call */
            float *d = sb->obs + (size_t)r * ow;
            const float *src = obs + i * ow;
            for (size_t k = 0; k < ow; k++)
                d[k] = src[k];
        }
        memcpy((unsigned char *)sb->act + (size_t)r * ab, act + i * ab, ab);
        sb->old_lp[r] = lp[i];
        sb->adv[r] = (float)((l->adv[i] - l->adv_mean) * l->adv_inv_std);
        if (l->s.decoupled) { /* frl_dm_decouple's arithmetic, its ratio from the values pass */
            sb->old_lp[r] = lp[i] + l->log_ratio[i];
            sb->adv[r] = (float)(l->dec_w[i] * sb->adv[r]);
        }
        sb->ret[r] = l->ret[i];
        sb->old_v[r] = v[i];
    }
}

/* dL/dv for one row, and its value loss. */
static double value_grad(const frl_ppo *l, double v, double old_v, double ret, double *loss)
{
    double l1 = (v - ret) * (v - ret);
    if (!l->s.clip_value) {
        *loss = 0.5 * l1;
        return v - ret;
    }
    double c = l->s.clip, d = v - old_v;
    double vc = old_v + (d < -c ? -c : (d > c ? c : d));
    double l2 = (vc - ret) * (vc - ret);
    *loss = 0.5 * (l1 > l2 ? l1 : l2);
    if (l1 >= l2)
        return v - ret;
    return (d > -c && d < c) ? vc - ret : 0.0;
}

/* A row's policy loss into *pg, and its derivative by the log-probability lp.
 * PPO: max(-A ratio, -A clip(ratio)); IMPALA: -A lp, A being V-trace's rho-weighted
 * advantage, which already carries the importance weight. */
static double policy_loss(const frl_ppo *l, double lp, double ratio, double adv, double *pg)
{
    if (l->s.impala) {
        *pg = -adv * lp;
        return -adv;
    }
    double c = l->s.clip, rc = ratio < 1 - c ? 1 - c : (ratio > 1 + c ? 1 + c : ratio);
    double pg1 = -adv * ratio, pg2 = -adv * rc;
    *pg = pg1 > pg2 ? pg1 : pg2;
    return pg1 >= pg2 ? -adv * ratio : 0.0;
}

/* approx_kl and the clipped count of a row. They compare log pi rounded to float, as
 * the rollout stored its log-probability: in double, the stored value's rounding alone
 * made rho - 1 about 1e-8 where the policy had not changed, so with train.clip = 0 (A2C,
 * whose one pass has rho = 1) every row counted as clipped. The loss keeps the double. */
static void stat_ratio(double lp, float old_lp, double clip, double *st)
{
    double logratio = (double)(float)lp - old_lp, ratio = exp(logratio);
    st[STAT_KL] += (ratio - 1) - logratio;
    st[STAT_CLIP] += fabs(ratio - 1) > clip;
}

/* Loss terms and output gradients of row r; accumulates stats. */
static void row_grad(const frl_ppo *l, const frl_pass *f, const shard_buf *sb, int32_t r,
                     double *st)
{
    const frl_policy *p = l->p;
    int32_t w = p->out_w;
    const float *out = f->out + (size_t)r * (size_t)w;
    const float *log_std = p->params + p->log_std_off;
    double lp, ent, probs[FRL_CAT_FUSED_MAX], lse = 0;
    int fused = p->discrete && w <= FRL_CAT_FUSED_MAX;
    if (fused) {
        lse = frl_cat_eval(out, w, ((const int32_t *)sb->act)[r], probs, &lp, &ent);
    } else if (p->discrete) {
        int32_t a = ((const int32_t *)sb->act)[r];
        lp = frl_cat_logp(out, w, a);
        ent = frl_cat_entropy(out, w);
    } else {
        lp = frl_gauss_logp_inv(out, log_std, sb->inv_std, sb->act + (size_t)r * (size_t)w, w);
        ent = frl_gauss_entropy(log_std, w);
    }
    double logratio = lp - sb->old_lp[r], ratio = exp(logratio), pg;
    double d_lp = policy_loss(l, lp, ratio, sb->adv[r], &pg) * l->inv_valid;
    double d_ent = -l->s.ent_coef * l->inv_valid;
    if (fused)
        frl_cat_backward_from(out, probs, lse, ent, w, ((const int32_t *)sb->act)[r], d_lp, d_ent,
                              f->d_out + (size_t)r * (size_t)w);
    else if (p->discrete)
        frl_cat_backward(out, w, ((const int32_t *)sb->act)[r], d_lp, d_ent,
                         f->d_out + (size_t)r * (size_t)w);
    else
        frl_gauss_backward_inv(out, sb->inv_std, sb->act + (size_t)r * (size_t)w, w, d_lp, d_ent,
                           f->d_out + (size_t)r * (size_t)w, sb->dlog_std);
    double vloss;
    double dv = value_grad(l, f->value[r], sb->old_v[r], sb->ret[r], &vloss);
    f->d_value[r] = (float)(l->s.vf_coef * dv * l->inv_valid);
    st[STAT_PG] += pg;
    st[STAT_V] += vloss;
    st[STAT_ENT] += ent;
    stat_ratio(lp, sb->old_lp[r], l->s.clip, st);
}

/* The loss of a shard's rows (given the heads' outputs in f) into f->d_out, f->d_value
 * and sb->dlog_std, and its sums into the shard's stats. */
static void shard_loss(const frl_ppo *l, const frl_pass *f, shard_buf *sb, int32_t task,
                       int32_t first, int32_t rows)
{
    const frl_policy *p = l->p;
    double *st = l->shard_stats + (size_t)task * FRL_PPO_STAT_COUNT;
    memset(st, 0, sizeof(double) * FRL_PPO_STAT_COUNT);
    memset(sb->dlog_std, 0, sizeof(double) * (size_t)p->out_w);
    if (!p->discrete)
        frl_gauss_inv_std(p->params + p->log_std_off, p->out_w, sb->inv_std);
    for (int32_t r = 0; r < rows; r++) {
        if (!l->valid[l->mb[first + r]]) {
            memset(f->d_out + (size_t)r * (size_t)p->out_w, 0, sizeof(float) * (size_t)p->out_w);
            f->d_value[r] = 0;
            continue;
        }
        row_grad(l, f, sb, r, st);
    }
}

static int shard_task(void *user, int32_t task, int32_t thread)
{
    frl_ppo *l = user;
    const frl_policy *p = l->p;
    int32_t first = task * l->shard_rows;
    int32_t rows = l->mb_rows - first < l->shard_rows ? l->mb_rows - first : l->shard_rows;
    if (l->grouped)
        frl_ppo_groups_span(&l->groups, task, &first, &rows);
    frl_pass f;
    shard_buf sb;
    shard_layout(l, l->ws[thread], &f, &sb);
    f.w_out_in = l->w_out_in;
    gather(l, l->mb + first, rows, &sb);
    frl_policy_forward(p, p->params, rows, sb.obs, &f);
    shard_loss(l, &f, &sb, task, first, rows);
    float *grads = l->grads + (size_t)task * l->grad_stride;
    f.accumulate = 0; /* every network's gradient is written, not added: no zeroing */
    frl_policy_backward(p, p->params, grads, rows, &f);
    for (int32_t i = 0; !p->discrete && i < p->out_w; i++)
        grads[p->log_std_off + (size_t)i] = (float)sb.dlog_std[i];
    return 0;
}

/* ---- recurrent policies: whole env columns through time ---- */

typedef struct rshard {
    frl_rpass f;
    shard_buf sb;
    float *state0;     /* [cols x state_w] */
    uint8_t *starts;   /* [T x cols] */
    float *step_ws;    /* the bootstrap step's workspace */
} rshard;

/* A workspace of rshard_floats laid out for cols (<= ws_cols) columns of T (<= l->T) steps. */
static void rshard_layout(const frl_ppo *l, float *ws, int32_t T, int32_t cols, rshard *r)
{
    const frl_policy *p = l->p;
    size_t wc = (size_t)l->ws_cols;
    frl_policy_rnn_seq_layout(p, T, cols, 1, ws, &r->f);
    float *g = ws + frl_policy_rnn_seq_floats(p, l->T, l->ws_cols, 1);
    shard_bufs(l, g, &r->sb);
    g += gather_floats(p, l->buf_rows);
    r->state0 = g;
    g += frl_align_up(wc * (size_t)p->state_w, 16);
    r->starts = (uint8_t *)g;
    r->step_ws = g + frl_align_up(((size_t)l->T * wc + 3) / 4, 16);
}

/* The first states and start flags of n columns: cols[0..n), or c0.. when cols is NULL. */
static void column_inputs(const frl_ppo *l, const int32_t *cols, int32_t c0, int32_t n, rshard *r)
{
    size_t sw = (size_t)l->p->state_w;
    for (int32_t j = 0; j < n; j++) {
        size_t c = (size_t)(cols ? cols[j] : c0 + j);
        memcpy(r->state0 + (size_t)j * sw, l->state0 + c * sw, sizeof(float) * sw);
        for (int32_t t = 0; t < l->T; t++)
            r->starts[(size_t)t * (size_t)n + (size_t)j] = l->starts[(size_t)t * (size_t)l->B + c];
    }
}

void frl_ppo_set_state0(frl_ppo *l, const float *state0)
{
    l->state0 = state0;
}

/* A column's state restarts after each autoreset step: the observation that follows
 * is a new episode's first. */
static void compute_starts(frl_ppo *l)
{
    const uint8_t *reset = frl_ring_at(l->ring, l->slot, FRL_RING_RESET_STEPS);
    size_t B = (size_t)l->B;
    memset(l->starts, 0, B);
    memcpy(l->starts + B, reset, B * (size_t)(l->T - 1));
}

/* Values (and the log-ratios of V-trace or decoupled PPO) of columns [c0, c0 + n), then their
 * bootstrap values from the states the rollout ended in. A preempted rollout (dist.preempt)
 * ended after T < l->T steps: the pass stops there, so its bootstrap state never passes
 * through the unwritten rows after the cut, and those rows' values and ratios are zero. */
static void rvalues_cols(frl_ppo *l, int32_t c0, int32_t n, int32_t T, rshard *r)
{
    const frl_policy *p = l->p;
    const float *obs = frl_ring_at(l->ring, l->slot, FRL_RING_OBSERVATIONS);
    float *v = frl_ring_at(l->ring, l->slot, FRL_RING_VALUES);
    size_t ow = (size_t)p->obs_w, B = (size_t)l->B;
    for (int32_t t = 0; t < T; t++)
        memcpy(r->sb.obs + (size_t)t * (size_t)n * ow, obs + ((size_t)t * B + (size_t)c0) * ow,
               sizeof(float) * (size_t)n * ow);
    column_inputs(l, NULL, c0, n, r);
    frl_policy_rnn_seq_forward(p, p->params, r->sb.obs, r->state0, r->starts, &r->f,
                               FRL_HEAD_CRITIC | (wants_log_ratio(l) ? FRL_HEAD_ACTOR : 0u));
    for (int32_t t = 0; t < l->T; t++)
        for (int32_t j = 0; j < n; j++) {
            int32_t i = t * l->B + c0 + j, k = t * n + j;
            v[i] = t < T ? r->f.value[k] : 0.0f;
            if (wants_log_ratio(l))
                set_log_ratio(l, t < T ? r->f.out + (size_t)k * (size_t)p->out_w : NULL, i);
        }
    frl_policy_rnn_seq_final_state(p, &r->f, r->state0);
    const uint8_t *last = (const uint8_t *)frl_ring_at(l->ring, l->slot, FRL_RING_RESET_STEPS) +
                          (size_t)(T - 1) * B + (size_t)c0;
    const float *boot = (const float *)frl_ring_at(l->ring, l->slot, FRL_RING_BOOTSTRAP_OBS) +
                        (size_t)c0 * ow;
    float *out, *value;
    frl_policy_rnn_step(p, p->params, &p->norm, n, boot, r->state0, last, r->step_ws,
                        FRL_HEAD_CRITIC, &out, &value);
    memcpy(l->vboot + c0, value, sizeof(float) * (size_t)n);
}

static int rvalues_task(void *user, int32_t task, int32_t thread)
{
    frl_ppo *l = user;
    int32_t c0 = task * l->value_cols;
    int32_t n = l->B - c0 < l->value_cols ? l->B - c0 : l->value_cols;
    rshard r;
    rshard_layout(l, l->ws[thread], steps_in(l), n, &r);
    rvalues_cols(l, c0, n, steps_in(l), &r);
    return 0;
}

static frl_status rvalues(frl_ppo *l, char *err)
{
    int32_t failed, tasks = (l->B + l->value_cols - 1) / l->value_cols;
    compute_starts(l);
    if (frl_pool_run(l->rt->pool, tasks, rvalues_task, l, &failed) != 0)
        return frl_fail(err, FRL_ERR_INTERNAL, "PPO values: task %d failed", (int)failed);
    return FRL_OK;
}

/* A shard of whole columns: its rows are step-major (row t * n + j is step t of its
 * j-th column), so the gathered observations are the sequence pass's input as they are. */
static int rshard_task(void *user, int32_t task, int32_t thread)
{
    frl_ppo *l = user;
    const frl_policy *p = l->p;
    int32_t first = task * l->shard_rows;
    int32_t rows = l->mb_rows - first < l->shard_rows ? l->mb_rows - first : l->shard_rows;
    int32_t n = rows / l->T;
    rshard r;
    rshard_layout(l, l->ws[thread], l->T, n, &r);
    gather(l, l->mb + first, rows, &r.sb);
    column_inputs(l, l->mb + first, 0, n, &r); /* step 0's rows are the columns' indices */
    frl_policy_rnn_seq_forward(p, p->params, r.sb.obs, r.state0, r.starts, &r.f,
                               FRL_HEAD_ACTOR | FRL_HEAD_CRITIC);
    frl_pass f;
    memset(&f, 0, sizeof f);
    f.out = r.f.out;
    f.value = r.f.value;
    f.d_out = r.f.d_out;
    f.d_value = r.f.d_value;
    shard_loss(l, &f, &r.sb, task, first, rows);
    float *grads = l->grads + (size_t)task * l->grad_stride;
    frl_policy_rnn_seq_backward(p, p->params, grads, r.starts, l->bptt, &r.f);
    for (int32_t i = 0; !p->discrete && i < p->out_w; i++)
        grads[p->log_std_off + (size_t)i] = (float)r.sb.dlog_std[i];
    return 0;
}

/* Minibatch m's rows from the epoch's column order: shard by shard (shard_cols columns
 * each, fewer in the last), step-major within a shard. */
static void column_minibatch(frl_ppo *l, int32_t m)
{
    int32_t mbc = l->B / l->s.minibatches, sc = l->shard_cols;
    const int32_t *cols = l->perm + (size_t)m * (size_t)mbc;
    int32_t *out = l->col_rows;
    for (int32_t c0 = 0; c0 < mbc; c0 += sc) {
        int32_t n = mbc - c0 < sc ? mbc - c0 : sc;
        for (int32_t t = 0; t < l->T; t++)
            for (int32_t j = 0; j < n; j++)
                *out++ = t * l->B + cols[c0 + j];
    }
}

/* ---- minibatches, epochs and the optimiser ---- */

void frl_ppo_shuffle(int32_t *perm, int32_t n, uint64_t seed, int64_t update_index, int32_t epoch)
{
    frl_rng r = frl_rng_stream(seed, 0x7070000000000000ULL + (uint64_t)update_index * 4096u +
                                         (uint64_t)epoch);
    frl_rng_permutation(&r, perm, n);
}

/* Advantage normalisation over the valid rows of the minibatch. */
static int32_t minibatch_moments(frl_ppo *l)
{
    double s = 0, ss = 0;
    int32_t n = 0;
    for (int32_t r = 0; r < l->mb_rows; r++) {
        int32_t i = l->mb[r];
        if (!l->valid[i])
            continue;
        s += l->adv[i];
        n++;
    }
    double mean = n ? s / n : 0;
    for (int32_t r = 0; r < l->mb_rows; r++) {
        int32_t i = l->mb[r];
        if (l->valid[i])
            ss += (l->adv[i] - mean) * (l->adv[i] - mean);
    }
    /* torch's std() is the unbiased one; CleanRL divides by std + 1e-8. */
    double sd = n > 1 ? sqrt(ss / (n - 1)) : 0;
    l->adv_mean = l->s.norm_adv ? mean : 0;
    l->adv_inv_std = l->s.norm_adv ? 1.0 / (sd + 1e-8) : 1.0;
    l->inv_valid = n ? 1.0 / n : 0;
    return n;
}

/* dist.mode=ddppo: the minibatch's normalisation from all ranks (computed at the
 * update's start), its shards on the pool, then the groups' exchange and sum. */
static frl_status grouped_gradient(frl_ppo *l, double *sums, char *err)
{
    const double *mb = frl_ppo_groups_minibatch(&l->groups);
    l->adv_mean = mb[0];
    l->adv_inv_std = mb[1];
    l->inv_valid = mb[2];
    if (mb[3] == 0) { /* no valid row on any rank: every rank skips the exchange */
        memset(l->g, 0, sizeof(float) * l->p->num_params);
        return FRL_OK;
    }
    frl_policy_weights_out_in(l->p, l->p->params, l->w_out_in);
    int32_t failed;
    if (frl_pool_run(l->rt->pool, l->shards, shard_task, l, &failed) != 0)
        return frl_fail(err, FRL_ERR_INTERNAL, "PPO shard %d failed", (int)failed);
    double stats[FRL_PPO_STAT_COUNT];
    frl_status st = frl_ppo_groups_reduce(&l->groups, l->grads, l->shard_stats, l->g, stats, err);
    for (int k = 0; st == FRL_OK && sums && k < STAT_N; k++)
        sums[k] += stats[k];
    if (st == FRL_OK && sums)
        sums[STAT_N] += mb[3];
    return st;
}

frl_status frl_ppo_gradient(frl_ppo *l, const int32_t *rows_idx, int32_t rows, double *sums,
                            char *err)
{
    l->mb = rows_idx;
    l->mb_rows = rows;
    if (l->grouped)
        return grouped_gradient(l, sums, err);
    int32_t n = minibatch_moments(l);
    int32_t tasks = (rows + l->shard_rows - 1) / l->shard_rows, failed;
    if (n == 0) {
        memset(l->g, 0, sizeof(float) * l->p->num_params);
        return FRL_OK;
    }
    if (!l->recurrent)
        frl_policy_weights_out_in(l->p, l->p->params, l->w_out_in);
    if (frl_pool_run(l->rt->pool, tasks, l->recurrent ? rshard_task : shard_task, l, &failed) != 0)
        return frl_fail(err, FRL_ERR_INTERNAL, "PPO shard %d failed", (int)failed);
    frl_params_sum_shards(l->rt->pool, l->grads, l->grad_stride, tasks, l->g,
                          l->p->num_params);
    for (int32_t s = 0; sums && s < tasks; s++)
        for (int k = 0; k < STAT_N; k++)
            sums[k] += l->shard_stats[(size_t)s * FRL_PPO_STAT_COUNT + (size_t)k];
    if (sums)
        sums[STAT_N] += n;
    return FRL_OK;
}

/* One minibatch: gradient, clipping, Adam. Losses are reported for the last epoch. */
static frl_status run_minibatch(frl_ppo *l, const int32_t *mb, double lr, double *sums,
                                double *norm, char *err)
{
    double t0 = now_s();
    frl_status st = frl_ppo_gradient(l, mb, l->M, sums, err);
    if (st != FRL_OK)
        return st;
    double t1 = now_s();
    const frl_policy *p = l->p;
    *norm = frl_grad_norm(p->k, l->g, p->num_params);
    frl_params_adam(l->rt->pool, &l->adam, l->p->k, l->p->params, l->g, l->p->num_params, lr,
                    frl_clip_scale(*norm, l->s.max_grad_norm));
    sums[TIME_BWD] += t1 - t0;
    sums[TIME_OPT] += now_s() - t1;
    return FRL_OK;
}

double frl_ppo_explained_variance(const frl_ppo *l, int32_t slot)
{
    const float *v = frl_ring_at(l->ring, slot, FRL_RING_VALUES);
    double sy = 0, syy = 0, sd = 0, sdd = 0;
    int64_t n = 0;
    for (int32_t i = 0; i < l->N; i++) {
        if (!l->valid[i])
            continue;
        double y = l->ret[i], d = y - v[i];
        sy += y;
        syy += y * y;
        sd += d;
        sdd += d * d;
        n++;
    }
    if (n < 2)
        return NAN;
    double vy = syy / n - (sy / n) * (sy / n), vd = sdd / n - (sd / n) * (sd / n);
    return vy > 0 ? 1 - vd / vy : NAN;
}

frl_status frl_ppo_update(frl_ppo *l, int32_t slot, int64_t update_index, int64_t num_updates,
                          uint64_t seed, frl_ppo_stats *out, char *err)
{
    double lr = frl_lr_at(l->s.lr, l->s.anneal_lr, update_index, num_updates);
    double norm = 0;
    l->slot = slot;
    memset(out, 0, sizeof *out);
    l->groups.cur_update = update_index;
    if (l->grouped) {
        frl_status st = frl_ppo_groups_moments(&l->groups, l->perm, l->adv, l->valid, seed,
                                               update_index, err);
        if (st != FRL_OK)
            return st;
    }
    for (int32_t e = 0; e < l->s.epochs; e++) {
        double epoch[SUM_COUNT] = {0};
        l->groups.cur_epoch = e;
        if (l->grouped)
            frl_ppo_groups_shuffle(&l->groups, l->perm, seed, update_index, e);
        else
            frl_ppo_shuffle(l->perm, l->recurrent ? l->B : l->N, seed, update_index, e);
        for (int32_t m = 0; m < l->s.minibatches; m++) {
            l->groups.cur_mb = m;
            if (l->recurrent)
                column_minibatch(l, m);
            const int32_t *rows = l->recurrent ? l->col_rows : l->perm + (size_t)m * (size_t)l->M;
            frl_status st = run_minibatch(l, rows, lr, epoch, &norm, err);
            if (st != FRL_OK)
                return st;
        }
        out->epochs_done = e + 1;
        double cnt = epoch[STAT_N] > 0 ? epoch[STAT_N] : 1;
        out->policy_loss = epoch[STAT_PG] / cnt;
        out->value_loss = epoch[STAT_V] / cnt;
        out->entropy = epoch[STAT_ENT] / cnt;
        out->approx_kl = epoch[STAT_KL] / cnt;
        out->clip_fraction = epoch[STAT_CLIP] / cnt;
        out->time_backward += epoch[TIME_BWD];
        out->time_optimizer += epoch[TIME_OPT];
        if (l->s.use_target_kl && out->approx_kl > l->s.target_kl)
            break;
    }
    out->grad_norm = norm;
    out->learning_rate = lr;
    out->explained_variance = frl_ppo_explained_variance(l, slot);
    l->p->version++;
    return FRL_OK;
}

