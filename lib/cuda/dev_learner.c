/* The device learner: see dev_learner.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/c_numeric.h"
#include "cuda/dev_learner.h"

enum { SUMS = FRL_DM_STATS + 1 }; /* per minibatch: the stats' sums and the valid count */

/* The device buffers, by address and size, so they are allocated and released in one
 * place. */
typedef struct buffer {
    void **at;
    size_t bytes;
} buffer;

/* Frames the obs buffer holds with a stack of k: the rollout's N, the bootstrap step's
 * B, state0's B (k - 1), and one of zeros. */
static size_t stack_frames(const frl_dev_learner *l)
{
    return (size_t)l->N + (size_t)l->s.B * (size_t)l->frames + 1;
}

static int32_t buffers(frl_dev_learner *l, buffer *b)
{
    const frl_net_desc *n = &l->net->desc;
    size_t N = (size_t)l->N, M = (size_t)l->s.M, B = (size_t)l->s.B, f = sizeof(float);
    size_t ow = (size_t)n->obs_w, w = (size_t)n->out_w, np = (size_t)n->num_params;
    size_t mb = (size_t)l->minibatches, kf = (size_t)l->frames, i4 = sizeof(int32_t);
    int stacked = l->frames > 1;
    int32_t k = 0;
#define BUF(field, size) b[k++] = (buffer){(void **)&l->field, (size)}
    BUF(obs, stacked ? f * stack_frames(l) * l->fw : f * N * ow);
    BUF(fidx, stacked ? i4 * (N + B) * kf : i4);
    BUF(mb_fidx, stacked ? i4 * M * kf : i4);
    BUF(actions, l->act_bytes * N);
    BUF(log_probs, f * N);
    BUF(rewards, f * N);
    BUF(values, f * N);
    BUF(log_ratio, f * N);
    BUF(adv, f * N);
    BUF(ret, f * N);
    BUF(boot_obs, stacked ? f : f * B * ow); /* a stack's are in obs */
    BUF(vboot, f * B);
    BUF(term, N);
    BUF(trunc, N);
    BUF(reset, N);
    BUF(valid, N);
    BUF(perm, sizeof(int32_t) * N);
    BUF(mb_obs, f * M * ow);
    BUF(mb_act, l->act_bytes * M);
    BUF(mb_lp, f * M);
    BUF(mb_lr, f * M);
    BUF(mb_adv, f * M);
    BUF(mb_ret, f * M);
    BUF(mb_v, f * M);
    BUF(mb_valid, M);
    BUF(ws, f * frl_dev_pass_floats(n, l->s.M, 1));
    BUF(d_log_std, f * M * w);
    BUF(stats, f * M * FRL_DM_STATS);
    BUF(moments, f * 4);
    BUF(grads, f * np);
    BUF(adam_m, f * np);
    BUF(adam_v, f * np);
    BUF(epoch_sums, f * mb * SUMS);
    BUF(sumsq, sizeof(double) * mb);
    BUF(adam_c, sizeof(frl_dev_adam) * mb);
#undef BUF
    return k;
}

enum { MAX_BUFFERS = 40 };

void frl_dev_learner_destroy(frl_dev_learner *l)
{
    if (!l)
        return;
    buffer b[MAX_BUFFERS];
    int32_t k = buffers(l, b);
    l->net->ops->graph_destroy(l->net->d, l->graph);
    for (int32_t i = 0; i < k; i++)
        l->net->ops->release(l->net->d, *b[i].at);
    free(l->h_sums);
    free(l->h_sumsq);
    free(l->h_adam);
    free(l->h_fidx);
    free(l);
}

/* The rows T x B are computed in int64 here, before l->N holds them in int32. */
static int check_desc(const frl_dm_learn_desc *s, char *err, size_t err_size)
{
    if (s->T < 1 || s->B < 1 || s->M < 1 || (int64_t)s->T * s->B > INT32_MAX ||
        (int64_t)s->T * s->B % s->M != 0) {
        snprintf(err, err_size, "device learner: a rollout of %d x %d rows does not split into "
                 "minibatches of %d", (int)s->T, (int)s->B, (int)s->M);
        return 1;
    }
    return 0;
}

int frl_dev_learner_create(frl_dev_learner **out, frl_dev_net *net,
                           const frl_dm_learn_desc *s, char *err, size_t err_size)
{
    frl_dev_learner *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, err_size, "device learner: out of host memory");
        return 1;
    }
    if (check_desc(s, err, err_size)) {
        free(l);
        return 1;
    }
    l->net = net;
    l->s = *s;
    l->N = s->T * s->B;
    l->minibatches = l->N / s->M;
    l->frames = net->desc.cnn.layers && net->desc.cnn.frames > 1 ? net->desc.cnn.frames : 1;
    l->fw = (size_t)net->desc.obs_w / (size_t)l->frames;
    l->act_bytes = net->desc.discrete ? sizeof(int32_t) : sizeof(float) * (size_t)net->desc.out_w;
    buffer b[MAX_BUFFERS];
    int32_t k = buffers(l, b);
    size_t total = 0;
    for (int32_t i = 0; i < k; i++) {
        total += b[i].bytes;
        if (!(*b[i].at = net->ops->alloc(net->d, b[i].bytes))) {
            frl_snprintf_c(err, err_size, "device learner: out of device memory (%zu bytes "
                           "more, %.1f MiB so far)", b[i].bytes, (double)total / 1048576.0);
            frl_dev_learner_destroy(l);
            return 1;
        }
    }
    l->h_sums = malloc(sizeof(float) * (size_t)l->minibatches * SUMS);
    l->h_sumsq = malloc(sizeof(double) * (size_t)l->minibatches);
    l->h_adam = malloc(sizeof(frl_dev_adam) * (size_t)l->minibatches);
    if (l->frames > 1)
        l->h_fidx = malloc(sizeof(int32_t) * ((size_t)l->N + (size_t)s->B) * (size_t)l->frames);
    const char *g = getenv("FRL_CUDA_GRAPHS");
    l->graphs_off = g && g[0] == '0';
    if (!l->h_sums || !l->h_sumsq || !l->h_adam || (l->frames > 1 && !l->h_fidx)) {
        snprintf(err, err_size, "device learner: out of host memory");
        frl_dev_learner_destroy(l);
        return 1;
    }
    /* Adam's moments start at zero. */
    net->ops->zero(net->d, l->adam_m, sizeof(float) * net->desc.num_params);
    net->ops->zero(net->d, l->adam_v, sizeof(float) * net->desc.num_params);
    /* A failure makes nothing: the caller keeps no learner over a model it may free. */
    if (net->ops->sync(net->d, err, err_size)) {
        frl_dev_learner_destroy(l);
        return 1;
    }
    *out = l;
    return 0;
}

/* The frame of step `step` of env b in the obs buffer (stack_frames' order): step T is
 * the bootstrap step, steps below 0 are state0's. */
static int32_t frame_index(const frl_dev_learner *l, int32_t step, int32_t b)
{
    int32_t T = l->s.T, B = l->s.B, k = l->frames;
    if (step == T)
        return l->N + b;
    if (step >= 0)
        return step * B + b;
    return l->N + B + b * (k - 1) + (k - 1 + step);
}

/* Row (step t, env b)'s k frames, oldest first, as rl/frame_stack.c stacks them: the
 * frames of steps t - k + 1 .. t, the zero frame for the steps before the episode of
 * step t began (step u begins one when step u - 1 autoreset). */
static void stack_indices(const frl_dev_learner *l, const uint8_t *reset, int32_t t, int32_t b,
                          int32_t *out)
{
    int32_t k = l->frames, B = l->s.B, zero = (int32_t)stack_frames(l) - 1, ended = 0;
    for (int32_t j = 0; j < k; j++) { /* j: frames back from the newest */
        int32_t u = t - j + 1;
        if (j > 0)
            ended |= u >= 1 && reset[(size_t)(u - 1) * (size_t)B + (size_t)b];
        out[k - 1 - j] = ended ? zero : frame_index(l, t - j, b);
    }
}

/* The frames, a zero frame and every row's stack of indices (rollout rows, then the
 * bootstrap rows). */
static void upload_stacks(frl_dev_learner *l, const frl_cuda_rollout *r)
{
    const frl_dev_ops *o = l->net->ops;
    frl_dev *d = l->net->d;
    size_t N = (size_t)l->N, B = (size_t)l->s.B, k = (size_t)l->frames, fb = sizeof(float) * l->fw;
    o->put(d, l->obs, r->obs, fb * N);
    o->put(d, (char *)l->obs + fb * N, r->bootstrap_obs, fb * B);
    o->put(d, (char *)l->obs + fb * (N + B), r->state0, fb * B * (k - 1));
    o->zero(d, (char *)l->obs + fb * (stack_frames(l) - 1), fb);
    for (size_t i = 0; i < N + B; i++) {
        int32_t t = i < N ? (int32_t)(i / B) : l->s.T, b = (int32_t)(i < N ? i % B : i - N);
        stack_indices(l, r->reset, t, b, l->h_fidx + i * k);
    }
    o->put(d, l->fidx, l->h_fidx, sizeof(int32_t) * (N + B) * k);
}

static void upload(frl_dev_learner *l, const frl_cuda_rollout *r)
{
    const frl_dev_ops *o = l->net->ops;
    frl_dev *d = l->net->d;
    size_t N = (size_t)l->N, f = sizeof(float), ow = (size_t)l->net->desc.obs_w;
    if (l->frames > 1)
        upload_stacks(l, r);
    else
        o->put(d, l->obs, r->obs, f * N * ow);
    o->put(d, l->actions, r->actions, l->act_bytes * N);
    o->put(d, l->log_probs, r->log_probs, f * N);
    o->put(d, l->rewards, r->rewards, f * N);
    o->put(d, l->term, r->terminated, N);
    o->put(d, l->trunc, r->truncated, N);
    o->put(d, l->reset, r->reset, N);
    if (l->frames == 1)
        o->put(d, l->boot_obs, r->bootstrap_obs, f * (size_t)l->s.B * ow);
}

/* Stacked rows [row0, row0 + rows) (fidx's order) gathered into dst [rows x obs_w]. */
static void gather_stacks(frl_dev_learner *l, const int32_t *fidx, int32_t rows, float *dst)
{
    l->net->ops->gather(l->net->d, rows * l->frames, sizeof(float) * l->fw, fidx, l->obs, dst);
}

/* The Gaussian head's log-stds, or NULL for a discrete head, which has none: its
 * offset is then the end of the parameters, not a pointer the ops may be given. */
static const float *log_std_of(const frl_dev_net *net)
{
    return net->desc.discrete ? NULL : net->params + net->desc.log_std_off;
}

/* Values of rows [0, rows) of obs into v, M rows at a time; with ratio, also the
 * log-ratios of the rollout's actions (V-trace). With a frame stack obs is NULL and the
 * rows are stacks row0.. (fidx's order), each chunk gathered into the minibatch's rows
 * first. */
static void values_of(frl_dev_learner *l, const float *obs, int32_t row0, int32_t rows,
                      float *v, float *ratio)
{
    const frl_dev_net *net = l->net;
    const frl_net_desc *n = &net->desc;
    for (int32_t first = 0; first < rows; first += l->s.M) {
        int32_t k = rows - first < l->s.M ? rows - first : l->s.M;
        frl_dev_pass f;
        frl_dev_pass_layout(n, k, 0, l->ws, &f);
        const float *x = obs ? obs + (size_t)first * (size_t)n->obs_w : l->mb_obs;
        if (!obs)
            gather_stacks(l, l->fidx + (size_t)(row0 + first) * (size_t)l->frames, k, l->mb_obs);
        frl_dev_net_forward(net, k, x, &f,
                            FRL_DEV_TILED | FRL_DEV_CRITIC | (ratio ? FRL_DEV_ACTOR : 0u));
        net->ops->copy(net->d, v + first, f.value, sizeof(float) * (size_t)k);
        if (ratio)
            net->ops->log_ratio(net->d, k, n->out_w, n->discrete, f.out,
                                (const char *)l->actions + (size_t)first * l->act_bytes,
                                log_std_of(net), l->log_probs + first,
                                ratio + first);
    }
}

int frl_dev_learner_begin(frl_dev_learner *l, const frl_cuda_rollout *r, char *err,
                          size_t err_size)
{
    upload(l, r);
    int vtrace = l->s.adv.vtrace != 0;
    int stacked = l->frames > 1;
    values_of(l, stacked ? NULL : l->obs, 0, l->N, l->values,
              vtrace || l->s.loss.decoupled ? l->log_ratio : NULL);
    values_of(l, stacked ? NULL : l->boot_obs, l->N, l->s.B, l->vboot, NULL);
    l->net->ops->advantages(l->net->d, l->s.T, l->s.B, l->rewards, l->values,
                            vtrace ? l->log_ratio : NULL, l->term, l->trunc, l->reset, l->vboot,
                            &l->s.adv, l->adv, l->ret, l->valid);
    return l->net->ops->sync(l->net->d, err, err_size);
}

/* The minibatch's narrow arrays, gathered by one gather_fields (wider rows by gather). */
typedef struct field_list {
    frl_dev_field f[FRL_DEV_GATHER_MAX];
    int32_t n;
} field_list;

static void add_field(frl_dev_learner *l, field_list *fl, const int32_t *idx, const void *src,
                      void *dst, size_t row_bytes)
{
    if (row_bytes <= FRL_DEV_GATHER_ROW && fl->n < FRL_DEV_GATHER_MAX && !l->net->unfused)
        fl->f[fl->n++] = (frl_dev_field){src, dst, row_bytes};
    else
        l->net->ops->gather(l->net->d, l->s.M, row_bytes, idx, src, dst);
}

static void gather_minibatch(frl_dev_learner *l, const int32_t *idx)
{
    const frl_dev_ops *o = l->net->ops;
    frl_dev *d = l->net->d;
    int32_t M = l->s.M;
    size_t f = sizeof(float);
    field_list fl = {.n = 0};
    if (l->frames > 1) { /* the rows' frame indices, then their frames */
        o->gather(d, M, sizeof(int32_t) * (size_t)l->frames, idx, l->fidx, l->mb_fidx);
        gather_stacks(l, l->mb_fidx, M, l->mb_obs);
    } else {
        add_field(l, &fl, idx, l->obs, l->mb_obs, f * (size_t)l->net->desc.obs_w);
    }
    add_field(l, &fl, idx, l->actions, l->mb_act, l->act_bytes);
    add_field(l, &fl, idx, l->log_probs, l->mb_lp, f);
    if (l->s.loss.decoupled)
        add_field(l, &fl, idx, l->log_ratio, l->mb_lr, f);
    add_field(l, &fl, idx, l->adv, l->mb_adv, f);
    add_field(l, &fl, idx, l->ret, l->mb_ret, f);
    add_field(l, &fl, idx, l->values, l->mb_v, f);
    add_field(l, &fl, idx, l->valid, l->mb_valid, 1);
    o->gather_fields(d, M, idx, fl.n, fl.f);
}

/* Adam's constants for step t (frl_adam_update's). */
static frl_dev_adam adam_coef(const frl_dev_learner *l, double lr, int64_t t)
{
    double bc1 = 1.0 - pow(0.9, (double)t), bc2 = 1.0 - pow(0.999, (double)t);
    return (frl_dev_adam){.b1 = 0.9f, .b2 = 0.999f, .step = (float)(lr / bc1),
                          .rbc2 = (float)(1.0 / sqrt(bc2)), .eps = (float)l->s.adam_eps,
                          .max_norm = l->s.max_grad_norm};
}

/* Minibatch m: its gradient, statistics and Adam step, all enqueued; the step's
 * constants are l->adam_c[m] on the device. */
static void minibatch(frl_dev_learner *l, int32_t m)
{
    const frl_dev_net *net = l->net;
    const frl_net_desc *n = &net->desc;
    const frl_dev_ops *o = net->ops;
    frl_dev *d = net->d;
    int32_t M = l->s.M;
    gather_minibatch(l, l->perm + (size_t)m * (size_t)M);
    o->moments(d, M, l->mb_adv, l->mb_valid, l->s.norm_adv, l->moments);
    frl_dev_pass f;
    frl_dev_pass_layout(n, M, 1, l->ws, &f);
    frl_dev_net_forward(net, M, l->mb_obs, &f, FRL_DEV_TILED | FRL_DEV_ACTOR | FRL_DEV_CRITIC);
    o->loss_rows(d, M, n->out_w, n->discrete, &l->s.loss, f.out, f.value, l->mb_act, l->mb_lp,
                 l->mb_lr, l->mb_adv, l->mb_ret, l->mb_v, l->mb_valid, log_std_of(net), l->moments, f.d_out,
                 f.d_value, n->discrete ? NULL : l->d_log_std, l->stats);
    frl_dev_net_backward(net, l->grads, M, &f);
    if (!n->discrete)
        o->col_sums(d, M, n->out_w, l->d_log_std, l->grads + n->log_std_off);
    float *sums = l->epoch_sums + (size_t)m * SUMS;
    o->col_sums(d, M, FRL_DM_STATS, l->stats, sums);
    o->copy(d, sums + FRL_DM_STATS, l->moments + 3, sizeof(float));
    o->sum_squares(d, (int64_t)n->num_params, l->grads, l->sumsq + m);
    o->adam(d, (int64_t)n->num_params, net->params, l->grads, l->adam_m, l->adam_v,
            l->adam_c + m, l->sumsq + m);
}

static void enqueue_minibatches(void *p)
{
    frl_dev_learner *l = p;
    for (int32_t m = 0; m < l->minibatches; m++)
        minibatch(l, m);
}

/* The epoch's minibatches as one graph launch, when they can be: 1 if launched, 0 when
 * the caller enqueues them. The first epoch always runs op by op, so every buffer the
 * ops grow (the reductions' scratch) has its size before a capture, which cannot
 * allocate. A failed capture runs nothing and turns graphs off for this learner. */
static int launch_epoch_graph(frl_dev_learner *l)
{
    const frl_dev_ops *o = l->net->ops;
    frl_dev *d = l->net->d;
    if (l->graph && l->graph_clip != l->net->norm_clip) {
        o->graph_destroy(d, l->graph);
        l->graph = NULL;
    }
    if (!l->graph && !l->graphs_off && l->epochs > 0) {
        char why[256];
        l->graph = o->graph_capture(d, enqueue_minibatches, l, why, sizeof why);
        l->graphs_off = l->graph == NULL;
        l->graph_clip = l->net->norm_clip;
    }
    if (!l->graph)
        return 0;
    o->graph_launch(d, l->graph);
    return 1;
}

static void epoch_stats(const frl_dev_learner *l, frl_cuda_epoch_stats *out)
{
    double s[SUMS] = {0};
    for (int32_t m = 0; m < l->minibatches; m++)
        for (int32_t k = 0; k < SUMS; k++)
            s[k] += l->h_sums[(size_t)m * SUMS + (size_t)k];
    *out = (frl_cuda_epoch_stats){s[0], s[1], s[2], s[3], s[4], s[5],
                                  sqrt(l->h_sumsq[l->minibatches - 1])};
}

int frl_dev_learner_epoch(frl_dev_learner *l, const int32_t *perm, double lr, int64_t adam_t,
                          frl_cuda_epoch_stats *out, char *err, size_t err_size)
{
    const frl_dev_ops *o = l->net->ops;
    frl_dev *d = l->net->d;
    o->put(d, l->perm, perm, sizeof(int32_t) * (size_t)l->N);
    for (int32_t m = 0; m < l->minibatches; m++)
        l->h_adam[m] = adam_coef(l, lr, adam_t + m);
    o->put(d, l->adam_c, l->h_adam, sizeof(frl_dev_adam) * (size_t)l->minibatches);
    if (!launch_epoch_graph(l))
        enqueue_minibatches(l);
    l->epochs++;
    o->get(d, l->h_sums, l->epoch_sums, sizeof(float) * (size_t)l->minibatches * SUMS);
    o->get(d, l->h_sumsq, l->sumsq, sizeof(double) * (size_t)l->minibatches);
    if (o->sync(d, err, err_size))
        return 1;
    epoch_stats(l, out);
    return 0;
}

int frl_dev_learner_end(frl_dev_learner *l, float *params, float *ret, float *values,
                        uint8_t *valid, char *err, size_t err_size)
{
    const frl_dev_ops *o = l->net->ops;
    frl_dev *d = l->net->d;
    size_t N = (size_t)l->N;
    if (params)
        o->get(d, params, l->net->params, sizeof(float) * l->net->desc.num_params);
    if (ret)
        o->get(d, ret, l->ret, sizeof(float) * N);
    if (values)
        o->get(d, values, l->values, sizeof(float) * N);
    if (valid)
        o->get(d, valid, l->valid, N);
    return o->sync(d, err, err_size);
}

int frl_dev_learner_adam(frl_dev_learner *l, float *m, float *v, int upload, char *err,
                         size_t err_size)
{
    const frl_dev_ops *o = l->net->ops;
    size_t bytes = sizeof(float) * l->net->desc.num_params;
    if (upload) {
        o->put(l->net->d, l->adam_m, m, bytes);
        o->put(l->net->d, l->adam_v, v, bytes);
    } else {
        o->get(l->net->d, m, l->adam_m, bytes);
        o->get(l->net->d, v, l->adam_v, bytes);
    }
    return o->sync(l->net->d, err, err_size);
}
