/* frl_policy: construction, the forward and backward passes, and acting. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/rng.h"
#include "env/vec_env.h"
#include "nn/init.h"
#include "nn/net.h"
#include "rl/heads.h"
#include "rl/policy.h"
#include "rl/policy_rnn.h"

/* ---- layout ---- */

frl_nn_act frl_policy_activation(const frl_config *cfg)
{
    static const frl_nn_act acts[FRL_POLICY_ACTIVATION_COUNT] = {
        [FRL_POLICY_ACTIVATION_TANH] = FRL_NN_TANH,
        [FRL_POLICY_ACTIVATION_RELU] = FRL_NN_RELU,
        [FRL_POLICY_ACTIVATION_ELU] = FRL_NN_ELU,
    };
    return acts[frl_cfg_choice(cfg, FRL_KEY_POLICY_ACTIVATION)];
}

/* Lay out the networks; returns the number of parameters. */
static size_t layout_networks(frl_policy *p)
{
    if (frl_cfg_choice(p->cfg, FRL_KEY_POLICY_CORE) != FRL_POLICY_CORE_NONE) {
        p->log_std_off = frl_policy_rnn_layout(p);
        return p->log_std_off + (p->discrete ? 0 : (size_t)p->out_w);
    }
    frl_int_list h = frl_cfg_list(p->cfg, FRL_KEY_POLICY_HIDDEN);
    frl_nn_act act = frl_policy_activation(p->cfg);
    size_t base = p->cnn.num_params; /* the encoder's parameters come first */
    if (p->head == FRL_POLICY_HEAD_Q) {
        /* One network: the actor's outputs are the Q-values; the critic has no layers. */
        p->shared = 0;
        frl_mlp_init(&p->actor, p->in_w, h.v, h.n, p->out_w, act, base);
        frl_mlp_init(&p->critic, p->in_w, NULL, 0, 0, act, base + p->actor.num_params);
        p->log_std_off = base + p->actor.num_params;
        return p->log_std_off;
    }
    if (p->head == FRL_POLICY_HEAD_DUELING_Q)
        p->shared = 1; /* the trunk and its two heads (check_head: hidden layers exist) */
    if (p->shared && h.n > 0) {
        frl_mlp_init(&p->trunk, p->in_w, h.v, h.n, 0, act, base);
        int32_t tw = frl_mlp_out(&p->trunk);
        frl_mlp_init(&p->actor, tw, NULL, 0, p->out_w, act, base + p->trunk.num_params);
        frl_mlp_init(&p->critic, tw, NULL, 0, 1, act,
                     p->actor.param_base + p->actor.num_params);
    } else {
        p->shared = 0;
        frl_mlp_init(&p->actor, p->in_w, h.v, h.n, p->out_w, act, base);
        frl_mlp_init(&p->critic, p->in_w, h.v, h.n, 1, act, base + p->actor.num_params);
    }
    p->log_std_off = p->critic.param_base + p->critic.num_params;
    return p->log_std_off + (p->discrete ? 0 : (size_t)p->out_w);
}

/* The networks' shape for their workspace (nn/net.h): they read in_w values a row. */
static frl_net_shape shape_of(const frl_policy *p)
{
    frl_net_shape s = {p->in_w, p->out_w, p->shared ? &p->trunk : NULL, &p->actor, &p->critic};
    return s;
}

/* The encoder's arrays, after the networks' (at `at` floats): where each starts. */
typedef struct enc_plan {
    size_t acts, work, d_in, d_in2, grad, stacked, floats;
} enc_plan;

static size_t take_floats(size_t *cursor, size_t n)
{
    size_t at = *cursor;
    *cursor += frl_align_up(n, FRL_CACHE_LINE / sizeof(float));
    return at;
}

static void plan_encoder(const frl_policy *p, int32_t rows, int training, size_t at,
                         enc_plan *e)
{
    memset(e, 0, sizeof *e);
    if (p->cnn.layers) {
        e->acts = take_floats(&at, frl_cnn_acts_floats(&p->cnn, rows));
        e->work = take_floats(&at, frl_cnn_work_floats(&p->cnn, rows));
        if (training) {
            e->d_in = take_floats(&at, (size_t)rows * (size_t)p->in_w);
            e->d_in2 = take_floats(&at, (size_t)rows * (size_t)p->in_w);
            e->grad = take_floats(&at, frl_cnn_grad_floats(&p->cnn, rows));
        } else if (p->stack > 1) {
            e->stacked = take_floats(&at, (size_t)rows * (size_t)frl_policy_input_row_w(p));
        }
    }
    e->floats = at;
}

size_t frl_policy_pass_floats(const frl_policy *p, int32_t rows, int training)
{
    /* A recurrent policy acts by steps; it learns through policy_rnn.h's sequences. */
    if (p->towers && !training)
        return frl_policy_rnn_step_floats(p, rows);
    frl_net_shape s = shape_of(p);
    frl_pass_plan w;
    frl_net_pass_plan(&s, rows, training, &w);
    enc_plan e;
    plan_encoder(p, rows, training, w.floats, &e);
    return e.floats;
}

static void layout_encoder(const frl_policy *p, int32_t rows, int training, size_t at,
                           float *ws, frl_pass *f)
{
    if (!p->cnn.layers)
        return;
    enc_plan e;
    plan_encoder(p, rows, training, at, &e);
    f->enc_acts = ws + e.acts;
    f->enc_work = ws + e.work;
    if (!training) {
        f->stacked = p->stack > 1 ? ws + e.stacked : NULL;
        return;
    }
    f->d_in = ws + e.d_in;
    f->d_in2 = ws + e.d_in2;
    f->enc_grad = ws + e.grad;
}

void frl_policy_pass_layout(const frl_policy *p, int32_t rows, int training, float *ws,
                            frl_pass *f)
{
    frl_net_shape s = shape_of(p);
    frl_pass_plan w;
    frl_net_pass_plan(&s, rows, training, &w);
    memset(f, 0, sizeof *f);
    layout_encoder(p, rows, training, w.floats, ws, f);
    f->norm = &p->norm;
    f->xn = ws + w.xn;
    f->trunk_acts = p->shared ? ws + w.trunk_acts : NULL;
    f->actor_acts = ws + w.actor_acts;
    f->critic_acts = ws + w.critic_acts;
    if (!training)
        return;
    f->dy = ws + w.dy;
    f->scratch = ws + w.scratch;
    f->d_out = ws + w.d_out;
    f->d_value = ws + w.d_value;
    f->dh = p->shared ? ws + w.dh : NULL;
}

/* ---- forward and backward ---- */

/* Discrete observations: row r becomes the one-hot row of its index, so the first
 * layer's product picks that row of its weights (an embedding lookup) and the forward
 * and backward passes stay the dense ones. An index outside [0, n), which act and the
 * vec env refuse before it can get here, leaves its row zero instead of writing
 * outside it. */
static void one_hot(const frl_policy *p, const float *obs, int32_t rows, float *x)
{
    size_t n = (size_t)p->obs_n;
    memset(x, 0, sizeof(float) * (size_t)rows * n);
    for (int32_t r = 0; r < rows; r++) {
        int32_t i = frl_discrete_obs_index(obs[r], p->obs_n);
        if (i >= 0)
            x[(size_t)r * n + (size_t)i] = 1.0f;
    }
}

const float *frl_policy_input(const frl_policy *p, const frl_obsnorm *norm, int32_t rows,
                              const float *obs, float *xn)
{
    if (p->obs_n) {
        one_hot(p, obs, rows, xn);
        return xn;
    }
    if (p->obs_norm) {
        frl_obsnorm_apply(norm, obs, rows, xn, p->in_w);
        return xn;
    }
    return obs;
}

/* Dueling: Q = V + A - mean(A), written over A (a linear layer's output, which its
 * backward pass does not read). */
void frl_policy_dueling_combine(const frl_policy *p, int32_t rows, float *a, const float *v)
{
    frl_net_dueling_combine(rows, p->out_w, a, v);
}

/* Q-policies: the one network, or the dueling trunk and both heads, whatever was asked. */
static void forward_q(const frl_policy *p, const float *params, int32_t rows, frl_pass *f)
{
    if (p->head == FRL_POLICY_HEAD_Q) {
        f->out = frl_mlp_forward(&p->actor, p->k, params, rows, f->in, f->actor_acts);
        return;
    }
    const float *x = frl_mlp_forward(&p->trunk, p->k, params, rows, f->in, f->trunk_acts);
    f->out = frl_mlp_forward(&p->actor, p->k, params, rows, x, f->actor_acts);
    f->value = frl_mlp_forward(&p->critic, p->k, params, rows, x, f->critic_acts);
    frl_policy_dueling_combine(p, rows, f->out, f->value);
}

const float *frl_policy_encode(const frl_policy *p, const float *params,
                               const frl_obsnorm *norm, int32_t rows, const float *obs,
                               size_t row_floats, float *acts, float *work, float *join)
{
    const float *feat = frl_cnn_forward(&p->cnn, p->k, params, rows, (const uint8_t *)obs,
                                        sizeof(float) * row_floats, acts, work);
    if (!p->vec_w)
        return feat;
    size_t fw = (size_t)p->cnn.out_w, vw = (size_t)p->vec_w, iw = (size_t)p->in_w;
    for (int32_t i = 0; i < rows; i++) {
        memcpy(join + (size_t)i * iw, feat + (size_t)i * fw, sizeof(float) * fw);
        memcpy(join + (size_t)i * iw + fw, obs + (size_t)i * row_floats + (size_t)p->vec_at,
               sizeof(float) * vw);
    }
    if (p->obs_norm) /* the vector part normalised over the copy just made */
        frl_obsnorm_apply(norm, obs, rows, join + fw, (int32_t)iw);
    return join;
}

void frl_policy_feature_grad(const frl_policy *p, int32_t rows, float *d_in)
{
    size_t fw = (size_t)p->cnn.out_w, iw = (size_t)p->in_w;
    /* Row i moves down to i * fw <= i * iw: rows are packed in order, none overwritten
     * before it is read. */
    for (int32_t i = 1; p->vec_w && i < rows; i++)
        memmove(d_in + (size_t)i * fw, d_in + (size_t)i * iw, sizeof(float) * fw);
}

/* What the networks read: the encoder's features of image rows (joined by a mixed row's
 * vector), else frl_policy_input's. */
static const float *network_input(const frl_policy *p, const float *params, int32_t rows,
                                  const float *obs, frl_pass *f)
{
    if (!p->cnn.layers)
        return frl_policy_input(p, f->norm, rows, obs, f->xn);
    return frl_policy_encode(p, params, f->norm, rows, obs, (size_t)frl_policy_input_row_w(p),
                             f->enc_acts, f->enc_work, f->xn);
}

void frl_policy_forward_heads(const frl_policy *p, const float *params, int32_t rows,
                              const float *obs, frl_pass *f, unsigned heads)
{
    f->in = network_input(p, params, rows, obs, f);
    if (p->head != FRL_POLICY_HEAD_ACTOR_CRITIC) {
        forward_q(p, params, rows, f);
        return;
    }
    const float *x = f->in;
    if (p->shared)
        x = frl_mlp_forward(&p->trunk, p->k, params, rows, x, f->trunk_acts);
    if (heads & FRL_HEAD_ACTOR)
        f->out = frl_mlp_forward(&p->actor, p->k, params, rows, x, f->actor_acts);
    if (heads & FRL_HEAD_CRITIC)
        f->value = frl_mlp_forward(&p->critic, p->k, params, rows, x, f->critic_acts);
}

void frl_policy_forward(const frl_policy *p, const float *params, int32_t rows,
                        const float *obs, frl_pass *f)
{
    frl_policy_forward_heads(p, params, rows, obs, f, FRL_HEAD_ACTOR | FRL_HEAD_CRITIC);
}

/* With an encoder, both networks' input gradients are summed into d_in (its gradient
 * is theirs together); without one nothing is computed below the first layers. */
static void backward_separate(const frl_policy *p, const float *params, float *grads,
                              int32_t rows, frl_pass *f)
{
    memcpy(f->dy, f->d_out, sizeof(float) * (size_t)rows * (size_t)p->out_w);
    frl_mlp_backward(&p->actor, p->k, params, f->w_out_in, grads, f->accumulate, rows, f->in,
                     f->actor_acts, f->dy, f->scratch, f->d_in);
    memcpy(f->dy, f->d_value, sizeof(float) * (size_t)rows);
    frl_mlp_backward(&p->critic, p->k, params, f->w_out_in, grads, f->accumulate, rows, f->in,
                     f->critic_acts, f->dy, f->scratch, f->d_in2);
    if (!f->d_in)
        return;
    size_t n = (size_t)rows * (size_t)p->in_w;
    for (size_t i = 0; i < n; i++)
        f->d_in[i] += f->d_in2[i];
}

/* Shared trunk: the heads' input gradients are summed into dh, then the trunk's pass. */
static void backward_shared(const frl_policy *p, const float *params, float *grads,
                            int32_t rows, frl_pass *f)
{
    int32_t tw = frl_mlp_out(&p->trunk);
    const float *h = f->trunk_acts + (size_t)rows * (size_t)(p->trunk.act_width - tw);
    memcpy(f->dy, f->d_out, sizeof(float) * (size_t)rows * (size_t)p->out_w);
    frl_mlp_backward(&p->actor, p->k, params, f->w_out_in, grads, f->accumulate, rows, h,
                     f->actor_acts, f->dy, NULL, f->dh);
    memcpy(f->dy, f->d_value, sizeof(float) * (size_t)rows);
    frl_mlp_backward(&p->critic, p->k, params, f->w_out_in, grads, f->accumulate, rows, h,
                     f->critic_acts, f->dy, NULL, f->scratch);
    size_t n = (size_t)rows * (size_t)tw;
    for (size_t i = 0; i < n; i++)
        f->dy[i] = f->dh[i] + f->scratch[i];
    frl_mlp_backward(&p->trunk, p->k, params, f->w_out_in, grads, f->accumulate, rows, f->in,
                     f->trunk_acts, f->dy, f->scratch, f->d_in);
}

void frl_policy_weights_out_in(const frl_policy *p, const float *params, float *w_out_in)
{
    if (p->shared)
        frl_mlp_weights_out_in(&p->trunk, p->k, params, w_out_in);
    frl_mlp_weights_out_in(&p->actor, p->k, params, w_out_in);
    frl_mlp_weights_out_in(&p->critic, p->k, params, w_out_in);
}

/* Dueling: dL/dQ in d_out becomes dL/dA (dQ_j minus the row's mean of dQ) in d_out
 * and dL/dV (the row's sum of dQ) in d_value. */
void frl_policy_dueling_split(const frl_policy *p, int32_t rows, float *d_out, float *d_value)
{
    int32_t n = p->out_w;
    for (int32_t r = 0; r < rows; r++) {
        float *d = d_out + (size_t)r * (size_t)n;
        double sum = 0;
        for (int32_t j = 0; j < n; j++)
            sum += d[j];
        float mean = (float)(sum / n);
        for (int32_t j = 0; j < n; j++)
            d[j] -= mean;
        d_value[r] = (float)sum;
    }
}

static void backward_networks(const frl_policy *p, const float *params, float *grads,
                              int32_t rows, frl_pass *f)
{
    if (p->head == FRL_POLICY_HEAD_Q) {
        memcpy(f->dy, f->d_out, sizeof(float) * (size_t)rows * (size_t)p->out_w);
        frl_mlp_backward(&p->actor, p->k, params, f->w_out_in, grads, f->accumulate, rows,
                         f->in, f->actor_acts, f->dy, f->scratch, f->d_in);
        return;
    }
    if (p->head == FRL_POLICY_HEAD_DUELING_Q)
        frl_policy_dueling_split(p, rows, f->d_out, f->d_value);
    if (p->shared)
        backward_shared(p, params, grads, rows, f);
    else
        backward_separate(p, params, grads, rows, f);
}

void frl_policy_backward(const frl_policy *p, const float *params, float *grads,
                         int32_t rows, frl_pass *f)
{
    backward_networks(p, params, grads, rows, f);
    if (!p->cnn.layers)
        return;
    frl_policy_feature_grad(p, rows, f->d_in);
    frl_cnn_backward(&p->cnn, p->k, params, grads, f->accumulate, rows, f->enc_acts, f->d_in,
                     f->enc_grad, f->enc_work);
}

/* ---- acting ---- */

/* The rows' stacks into stacked: the state's frames (zeros where reset), then the
 * observation; the state is not changed. */
void frl_policy_stack_build(const frl_policy *p, int32_t rows, const float *obs,
                            const float *state, const uint8_t *reset, float *stacked)
{
    size_t fw = (size_t)p->obs_w, sw = (size_t)p->state_w, bytes = sizeof(float);
    for (int32_t r = 0; r < rows; r++) {
        float *dst = stacked + (size_t)r * (sw + fw);
        if (reset && reset[r])
            memset(dst, 0, bytes * sw);
        else
            memcpy(dst, state + (size_t)r * sw, bytes * sw);
        memcpy(dst + sw, obs + (size_t)r * fw, bytes * fw);
    }
}

/* The rows' state one frame on: zeros where reset, then the oldest frame out and the
 * observation in. */
void frl_policy_stack_advance(const frl_policy *p, int32_t rows, const float *obs,
                              float *state, const uint8_t *reset)
{
    size_t fw = (size_t)p->obs_w, sw = (size_t)p->state_w, bytes = sizeof(float);
    for (int32_t r = 0; r < rows; r++) {
        float *s = state + (size_t)r * sw;
        if (reset && reset[r])
            memset(s, 0, bytes * sw);
        memmove(s, s + fw, bytes * (sw - fw));
        memcpy(s + sw - fw, obs + (size_t)r * fw, bytes * fw);
    }
}

void frl_policy_stack_rows(const frl_policy *p, int32_t rows, const float *obs, float *state,
                           const uint8_t *reset, float *stacked)
{
    frl_policy_stack_build(p, rows, obs, state, reset, stacked);
    frl_policy_stack_advance(p, rows, obs, state, reset);
}

/* A frame stack's step on the CPU: the rows' stacks, then the networks over them. */
static void stack_step(const frl_policy *p, const float *params, int32_t rows,
                       const float *obs, float *state, const uint8_t *reset, float *ws,
                       unsigned heads, float **out, float **value)
{
    frl_pass f;
    frl_policy_pass_layout(p, rows, 0, ws, &f);
    frl_policy_stack_rows(p, rows, obs, state, reset, f.stacked);
    frl_policy_forward_heads(p, params, rows, f.stacked, &f, heads);
    *out = f.out;
    if (value)
        *value = f.value;
}

void frl_policy_state_step(const frl_policy *p, const float *params, const frl_obsnorm *norm,
                           int32_t rows, const float *obs, float *state, const uint8_t *reset,
                           float *ws, unsigned heads, float **out, float **value)
{
    if (p->towers)
        frl_policy_rnn_step(p, params, norm, rows, obs, state, reset, ws, heads, out, value);
    else
        stack_step(p, params, rows, obs, state, reset, ws, heads, out, value);
}

/* Epsilon-greedy on Q-values. */
static void q_choose(const frl_policy *p, const float *q, double eps, frl_rng *r,
                     void *action_row)
{
    int32_t n = p->out_w, a = frl_cat_argmax(q, n);
    if (eps > 0 && frl_rng_uniform(r) < eps) {
        a = (int32_t)(frl_rng_uniform(r) * n);
        a = a < n ? a : n - 1;
    }
    *(int32_t *)action_row = a;
}

static double acting_epsilon(const frl_policy *p, int deterministic, uint64_t stream)
{
    if (deterministic)
        return 0.0;
    if (p->env_epsilon && stream < (uint64_t)p->env_epsilon_n)
        return p->env_epsilon[stream];
    return atomic_load_explicit(&((frl_policy *)p)->epsilon, memory_order_relaxed);
}

/* eps: a Q-policy's epsilon, read once by the caller (DQN's learner moves it). */
/* The random stream of env `stream`'s act number `counter`. */
static frl_rng head_rng(const frl_policy *p, uint64_t stream, uint64_t counter)
{
    return frl_rng_stream(p->seed + counter * 0x9e3779b97f4a7c15ULL, stream);
}

static void head_sample(const frl_policy *p, const float *params, const float *out,
                        int deterministic, double eps, uint64_t stream, uint64_t counter,
                        void *action_row)
{
    if (deterministic && p->head == FRL_POLICY_HEAD_ACTOR_CRITIC) { /* the mode: no draw */
        if (p->discrete)
            *(int32_t *)action_row = frl_cat_argmax(out, p->out_w);
        else
            memcpy(action_row, out, sizeof(float) * (size_t)p->out_w);
        return;
    }
    frl_rng r = head_rng(p, stream, counter);
    if (p->head != FRL_POLICY_HEAD_ACTOR_CRITIC) {
        q_choose(p, out, eps, &r, action_row);
        return;
    }
    if (p->discrete) {
        *(int32_t *)action_row = frl_cat_sample(out, p->out_w, frl_rng_uniform(&r));
        return;
    }
    float *a = action_row;
    const float *log_std = params + p->log_std_off;
    for (int32_t i = 0; i < p->out_w; i++)
        a[i] = out[i] + expf(log_std[i]) * (float)frl_rng_normal(&r);
}

void frl_policy_head_sample(const frl_policy *p, const float *params, const float *out,
                            int deterministic, uint64_t stream, uint64_t counter,
                            void *action_row)
{
    head_sample(p, params, out, deterministic, acting_epsilon(p, deterministic, stream), stream,
                counter, action_row);
}

double frl_policy_head_act(const frl_policy *p, const float *params, const float *out,
                           int deterministic,
                           uint64_t stream, uint64_t counter, void *action_row)
{
    if (p->head == FRL_POLICY_HEAD_ACTOR_CRITIC && p->discrete && !deterministic) {
        /* the samplers' common case, in one pass over the logits */
        frl_rng r = head_rng(p, stream, counter);
        double lp;
        *(int32_t *)action_row = frl_cat_sample_logp(out, p->out_w, frl_rng_uniform(&r), &lp);
        return lp;
    }
    double eps = acting_epsilon(p, deterministic, stream);
    head_sample(p, params, out, deterministic, eps, stream, counter, action_row);
    if (p->head != FRL_POLICY_HEAD_ACTOR_CRITIC) {
        /* the log-probability under epsilon-greedy */
        int32_t n = p->out_w, a = *(const int32_t *)action_row;
        return log((a == frl_cat_argmax(out, n) ? 1.0 - eps : 0.0) + eps / n);
    }
    if (p->discrete)
        return frl_cat_logp(out, p->out_w, *(const int32_t *)action_row);
    return frl_gauss_logp(out, params + p->log_std_off, action_row, p->out_w);
}

/* A Q-policy's value of a state: its largest Q. */
static float q_max(const float *q, int32_t n)
{
    float m = q[0];
    for (int32_t j = 1; j < n; j++)
        m = q[j] > m ? q[j] : m;
    return m;
}

static size_t action_row_bytes(const frl_policy *p)
{
    return p->discrete ? sizeof(int32_t) : sizeof(float) * (size_t)p->out_w;
}

/* The heads' outputs of rows [first, first + rows) into out and value: one step of a
 * recurrent policy on the caller's state rows, or the MLP's forward pass. */
static void chunk_outputs(frl_policy *p, const frl_act_args *a, int64_t first, int32_t rows,
                          float *ws, float **out, float **value)
{
    /* The critic runs only for a caller that wants values: acting alone is half the work. */
    unsigned heads = FRL_HEAD_ACTOR | (a->values ? FRL_HEAD_CRITIC : 0u);
    const float *obs = a->observations + first * p->obs_w;
    if (p->state_w) {
        frl_policy_state_step(p, p->params, &p->norm, rows, obs, a->state + first * p->state_w,
                              a->reset ? a->reset + first : NULL, ws, heads, out, value);
        return;
    }
    frl_pass f;
    frl_policy_pass_layout(p, rows, 0, ws, &f);
    frl_policy_forward_heads(p, p->params, rows, obs, &f, heads);
    *out = f.out;
    *value = f.value;
}

/* The caller asks for the heads' outputs (a field since 0.3). */
static int wants_outputs(const frl_act_args *a)
{
    return a->struct_size >= offsetof(frl_act_args, outputs) + sizeof a->outputs && a->outputs;
}

/* The network's outputs (and an actor-critic's values, where asked for) for rows
 * [first, first + rows) must be finite: an observation far outside what the policy was
 * trained on (finite, so not refused: 1e38s) can overflow a layer, and NaN logits or
 * means became an action, a NaN one for a box, with FRL_OK. */
static frl_status check_outputs(const frl_policy *p, const frl_act_args *a, int64_t first,
                                int32_t rows, const float *out, const float *value, char *err)
{
    int64_t bad = frl_find_nonfinite(out, (int64_t)rows * p->out_w);
    int64_t row = bad >= 0 ? bad / p->out_w : -1;
    if (row < 0 && value && a->values && p->head == FRL_POLICY_HEAD_ACTOR_CRITIC)
        row = frl_find_nonfinite(value, rows);
    if (row < 0)
        return FRL_OK;
    return frl_fail(err, FRL_ERR_NONFINITE, "frl_policy_act: the network's output for row "
                    "%lld is not finite (its observation is finite but far outside what the "
                    "policy was trained on?)", (long long)(first + row));
}

/* Act on rows [0, rows) of a chunk whose workspace is ws; the rows' outputs are
 * checked before any action is written. */
static frl_status act_chunk(frl_policy *p, const frl_act_args *a, int64_t first, int32_t rows,
                            float *ws)
{
    struct { float *out, *value; } f;
    chunk_outputs(p, a, first, rows, ws, &f.out, &f.value);
    frl_status st = check_outputs(p, a, first, rows, f.out, f.value, NULL);
    if (st != FRL_OK)
        return st;
    unsigned char *act = (unsigned char *)a->actions + (size_t)first * action_row_bytes(p);
    for (int32_t r = 0; r < rows; r++) {
        const float *o = f.out + (size_t)r * (size_t)p->out_w;
        uint64_t stream = a->stream_offset + (uint64_t)(first + r);
        unsigned char *row = act + (size_t)r * action_row_bytes(p);
        /* Without log-probs asked for, the draw alone (the same action: tested), which
         * spares a controller's call the log and exp of each row. */
        if (a->log_probs)
            a->log_probs[first + r] = (float)frl_policy_head_act(p, p->params, o,
                                                                 a->deterministic, stream,
                                                                 a->counter, row);
        else
            frl_policy_head_sample(p, p->params, o, a->deterministic, stream, a->counter, row);
        if (a->values)
            a->values[first + r] = p->head != FRL_POLICY_HEAD_ACTOR_CRITIC
                                       ? q_max(f.out + (size_t)r * (size_t)p->out_w, p->out_w)
                                       : f.value[r];
    }
    if (wants_outputs(a))
        memcpy(a->outputs + first * p->out_w, f.out,
               sizeof(float) * (size_t)rows * (size_t)p->out_w);
    return FRL_OK;
}

/* The most rows an acting workspace of `bytes` holds (0 if not one): a binary search,
 * since the size grows with rows but not exactly linearly (each array is rounded up). */
static int32_t rows_that_fit(const frl_policy *p, size_t bytes)
{
    size_t floats = bytes / sizeof(float);
    int32_t lo = 0, hi = 1 << 20; /* pass_floats(lo) fits; the answer is at most hi */
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (frl_policy_pass_floats(p, mid, 0) <= floats)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int32_t frl_policy_act_chunk_rows(const frl_policy *p)
{
    return rows_that_fit(p, p->ws_size);
}

static frl_status act_all(frl_policy *p, const frl_act_args *a, float *ws, int32_t chunk)
{
    frl_status st = FRL_OK;
    for (int64_t first = 0; st == FRL_OK && first < a->batch; first += chunk) {
        int64_t left = a->batch - first;
        st = act_chunk(p, a, first, (int32_t)(left < chunk ? left : chunk), ws);
    }
    return st;
}

/* The widths the caller states (0.3 and later) against the policy's spaces; a caller
 * built against 0.2 has no such fields and is not checked. */
static frl_status check_act_widths(frl_policy *p, const frl_act_args *a)
{
    if (a->struct_size < offsetof(frl_act_args, action_width) + sizeof a->action_width)
        return FRL_OK;
    int64_t want_obs = frl_space_width(p->obs_space), want_act = frl_space_width(p->act_space);
    if (a->observation_width != want_obs || a->action_width != want_act)
        return frl_fail(NULL, FRL_ERR_SIZE,
                        "frl_policy_act: the arrays are %lld observation and %lld action "
                        "values wide, the policy's spaces %lld and %lld (set "
                        "args->observation_width and args->action_width to the widths "
                        "of the env the arrays come from; a policy acts only on the "
                        "spaces it was made for)",
                        (long long)a->observation_width, (long long)a->action_width,
                        (long long)want_obs, (long long)want_act);
    return FRL_OK;
}

/* Box rows must be finite; a discrete row must hold an index of the space; an image's
 * bytes are all pixels, and only a mixed row's vector part must be finite. */
frl_status frl_policy_check_observations(const frl_policy *p, const float *obs, int64_t batch,
                                         const char *who, char *err)
{
    if (frl_space_is_image(p->obs_space)) {
        int64_t bad = frl_find_nonfinite_cols(obs, batch, p->obs_w, p->vec_at, p->vec_w);
        if (bad < 0)
            return FRL_OK;
        return frl_fail(err, FRL_ERR_NONFINITE, "%s: the vector part of row %lld's mixed "
                        "observation, element %lld, is not finite", who,
                        (long long)(bad / p->obs_w), (long long)(bad % p->obs_w - p->vec_at));
    }
    int64_t count = batch * p->obs_w;
    if (p->obs_n) {
        int64_t bad = frl_find_bad_index(obs, count, p->obs_n);
        if (bad < 0)
            return FRL_OK;
        char val[32];
        frl_describe_value(obs[bad], val, sizeof val);
        return frl_fail(err, FRL_ERR_RANGE, "%s: observation of row %lld is %s, not an index "
                        "of the policy's discrete(%d) observation space (an integer in [0, %d))",
                        who, (long long)bad, val, (int)p->obs_n, (int)p->obs_n);
    }
    int64_t bad = frl_find_nonfinite(obs, count);
    if (bad >= 0)
        return frl_fail(err, FRL_ERR_NONFINITE, "%s: observation of row %lld, element %lld is "
                        "not finite", who, (long long)(bad / p->obs_w),
                        (long long)(bad % p->obs_w));
    return FRL_OK;
}

/* A core's state rows that are not reset must be finite: act writes only finite ones
 * (and zeros for new agents), and a NaN there gave NaN values and log-probabilities,
 * and argmax or samples over NaN logits, with FRL_OK. A frame stack's state holds
 * bytes, any bit pattern, and is not checked. */
static frl_status check_core_state(frl_policy *p, const frl_act_args *a)
{
    for (int32_t i = 0; i < a->batch; i++) {
        if (a->reset && a->reset[i])
            continue;
        int64_t bad = frl_find_nonfinite(a->state + (size_t)i * (size_t)p->state_w, p->state_w);
        if (bad >= 0)
            return frl_fail(NULL, FRL_ERR_NONFINITE,
                            "frl_policy_act: args->state of row %d, element %lld is not "
                            "finite (a row holds what act wrote there, or zeros for a new "
                            "agent; reset[i] zeroes it)", (int)i, (long long)bad);
    }
    return FRL_OK;
}

/* The state arrays (callers built before 0.3 pass none, which suits a policy without a
 * core). */
static frl_status check_act_state(frl_policy *p, const frl_act_args *a)
{
    int has = a->struct_size >= offsetof(frl_act_args, reset) + sizeof a->reset;
    int64_t width = has ? a->state_width : 0;
    if (width != p->state_w)
        return frl_fail(NULL, FRL_ERR_SIZE,
                        "frl_policy_act: args->state_width is %lld, the policy's state is %d "
                        "floats a row (frl_policy_state_size)%s", (long long)width,
                        (int)p->state_w,
                        has ? "" : "; this caller was built before the state fields existed");
    if (p->state_w && !a->state)
        return frl_fail(NULL, FRL_ERR_NULL,
                        "frl_policy_act: args->state is NULL, and this policy keeps %s: pass "
                        "[batch x %d] floats of state, zeros for new agents", p->stack > 1
                        ? "each row's earlier frames (policy.frame_stack)"
                        : "a recurrent core's state (policy.core)", (int)p->state_w);
    return p->towers ? check_core_state(p, a) : FRL_OK;
}

/* The checks write this thread's buffer only; frl_policy_act copies the message to the
 * policy's under ws_lock (frl_policy_keep_failure). */
static frl_status check_act_args(frl_policy *p, const frl_act_args *a)
{
    if (!a)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_policy_act: args is NULL");
    if (a->struct_size < offsetof(frl_act_args, workspace_size) + sizeof(size_t))
        return frl_fail(NULL, FRL_ERR_VERSION,
                        "frl_policy_act: args->struct_size %zu is too small (use "
                        "frl_act_args_init)", a->struct_size);
    if (!a->observations || !a->actions)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_policy_act: args->%s is NULL",
                        a->observations ? "actions" : "observations");
    if (check_act_widths(p, a) != FRL_OK)
        return FRL_ERR_SIZE;
    if (a->batch < 1)
        return frl_fail(NULL, FRL_ERR_RANGE, "frl_policy_act: batch %d must be >= 1",
                        (int)a->batch);
    frl_status st = check_act_state(p, a);
    if (st == FRL_OK)
        st = frl_policy_check_observations(p, a->observations, a->batch, "frl_policy_act",
                                           NULL);
    if (st != FRL_OK)
        return st;
    if (a->workspace && ((uintptr_t)a->workspace % FRL_CACHE_LINE != 0 ||
                         rows_that_fit(p, a->workspace_size) == 0))
        return frl_fail(NULL, FRL_ERR_SIZE,
                        "frl_policy_act: workspace must be 64-byte aligned and hold at least "
                        "%zu bytes (frl_policy_workspace_size(policy, 1)); it has %zu",
                        frl_policy_pass_floats(p, 1, 0) * sizeof(float), a->workspace_size);
    return FRL_OK;
}

FRL_API int64_t frl_policy_state_size(const frl_policy *p)
{
    return p ? p->state_w : 0;
}

FRL_API int64_t frl_policy_output_size(const frl_policy *p)
{
    return p ? p->out_w : 0;
}

FRL_API size_t frl_policy_workspace_size(const frl_policy *p, int32_t rows_per_chunk)
{
    if (!p || rows_per_chunk < 1)
        return 0;
    return frl_policy_pass_floats(p, rows_per_chunk, 0) * sizeof(float);
}

/* On the device: the networks there, the heads' sampling here (the same streams as on
 * the CPU, so an action depends only on its row's outputs). */
/* Rows of one device forward of frame stacks: their stacks are built on the host. */
enum { DEVICE_STACK_ROWS = 256 };

/* The rows the device reads for [first, first + n): the observations, or with a frame
 * stack the rows' stacks (their state steps on only once the forward succeeded, so that
 * a failed call keeps the caller's frames: stack_on). */
static const float *device_rows(frl_policy *p, const frl_act_args *a, int64_t first, int64_t n)
{
    const float *obs = a->observations + first * p->obs_w;
    if (p->stack <= 1)
        return obs;
    frl_policy_stack_build(p, (int32_t)n, obs, a->state + first * p->state_w,
                a->reset ? a->reset + first : NULL, p->dev_stacked);
    return p->dev_stacked;
}

/* A frame stack's rows [first, first + n) one frame on, after their forward. */
static void stack_on(const frl_policy *p, const frl_act_args *a, int64_t first, int64_t n)
{
    if (p->stack > 1)
        frl_policy_stack_advance(p, (int32_t)n, a->observations + first * p->obs_w,
                                 a->state + first * p->state_w,
                                 a->reset ? a->reset + first : NULL);
}

/* Rows [first, first + n) through the device into p->dev_out (and p->dev_value when
 * the caller wants an actor-critic's values; a Q-head's are max Q, taken from the
 * outputs): a recurrent policy's step, or a forward. */
static frl_status device_outputs(frl_policy *p, const frl_act_args *a, int64_t first,
                                 int64_t n)
{
    float *value = a->values && p->head == FRL_POLICY_HEAD_ACTOR_CRITIC ? p->dev_value : NULL;
    if (p->towers)
        return frl_policy_device_step(p, n, a->observations + first * p->obs_w,
                                      a->state + first * p->state_w,
                                      a->reset ? a->reset + first : NULL, p->dev_out, value,
                                      p->err);
    return frl_policy_device_forward(p, n, device_rows(p, a, first, n), p->dev_out, value,
                                     p->err);
}

static frl_status act_device(frl_policy *p, const frl_act_args *a)
{
    frl_status st = FRL_OK;
    size_t ab = action_row_bytes(p);
    int32_t rows = p->stack > 1 ? DEVICE_STACK_ROWS : p->dev->rows; /* the outputs' room */
    rows = rows < p->dev->rows ? rows : p->dev->rows;
    for (int64_t first = 0; st == FRL_OK && first < a->batch; first += rows) {
        int64_t n = a->batch - first < rows ? a->batch - first : rows;
        st = device_outputs(p, a, first, n);
        if (st == FRL_OK)
            st = check_outputs(p, a, first, (int32_t)n, p->dev_out, p->dev_value, p->err);
        if (st == FRL_OK)
            stack_on(p, a, first, n);
        for (int64_t r = 0; st == FRL_OK && r < n; r++) {
            int64_t i = first + r;
            const float *o = p->dev_out + r * p->out_w;
            double lp = frl_policy_head_act(p, p->params, o, a->deterministic,
                                            a->stream_offset + (uint64_t)i, a->counter,
                                            (unsigned char *)a->actions + (size_t)i * ab);
            if (a->log_probs)
                a->log_probs[i] = (float)lp;
            if (a->values)
                a->values[i] = p->head != FRL_POLICY_HEAD_ACTOR_CRITIC ? q_max(o, p->out_w)
                                                                       : p->dev_value[r];
        }
        if (st == FRL_OK && wants_outputs(a))
            memcpy(a->outputs + first * p->out_w, p->dev_out,
                   sizeof(float) * (size_t)n * (size_t)p->out_w);
    }
    return st;
}

/* This thread's failure into the policy's message, under ws_lock: act may fail on
 * several threads at once (each with its own workspace), and so may a save beside
 * them; unguarded writes of the shared buffer were a data race whose text could come
 * out torn. The device path writes the buffer under the same lock. */
frl_status frl_policy_keep_failure(frl_policy *p, frl_status st)
{
    pthread_mutex_lock(&p->ws_lock);
    snprintf(p->err, sizeof p->err, "%s", frl_last_error());
    pthread_mutex_unlock(&p->ws_lock);
    return st;
}

FRL_API frl_status frl_policy_act(frl_policy *p, const frl_act_args *a)
{
    if (!p)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_policy_act: policy is NULL");
    frl_status st = check_act_args(p, a);
    if (st != FRL_OK)
        return frl_policy_keep_failure(p, st);
    if (p->dev) {
        /* One device model per policy: callers take turns, whatever workspace they bring. */
        pthread_mutex_lock(&p->ws_lock);
        st = act_device(p, a);
        pthread_mutex_unlock(&p->ws_lock);
        return st;
    }
    if (a->workspace) {
        st = act_all(p, a, a->workspace, rows_that_fit(p, a->workspace_size));
        return st == FRL_OK ? st : frl_policy_keep_failure(p, st);
    }
    pthread_mutex_lock(&p->ws_lock);
    st = act_all(p, a, p->ws, rows_that_fit(p, p->ws_size));
    if (st != FRL_OK)
        snprintf(p->err, sizeof p->err, "%s", frl_last_error()); /* the lock is held */
    pthread_mutex_unlock(&p->ws_lock);
    return st;
}

/* ---- the copy on the device (runtime.device=cuda) ---- */

/* Rows of one device forward: large enough that a batch of envs goes in one call, small
 * enough that the model's workspace stays a few MiB for typical networks. */
enum { DEVICE_ROWS = 16384 };

int32_t frl_policy_device_rows(const frl_policy *p)
{
    if (!p->cnn.layers)
        return DEVICE_ROWS;
    /* an image's stored activations are large: a forward's stay within 256M floats */
    size_t per = frl_cnn_acts_floats(&p->cnn, 1) + 1;
    size_t rows = ((size_t)1 << 28) / per;
    return rows < 1 ? 1 : rows < DEVICE_ROWS ? (int32_t)rows : DEVICE_ROWS;
}

static void describe_net(const frl_policy *p, int32_t rows, frl_net_desc *d)
{
    memset(d, 0, sizeof *d);
    d->obs_w = p->obs_w;
    d->out_w = p->out_w;
    d->discrete = p->discrete;
    d->shared = p->shared;
    d->obs_norm = p->obs_norm;
    d->trunk = p->trunk;
    d->actor = p->actor;
    d->critic = p->critic;
    d->log_std_off = p->log_std_off;
    d->num_params = p->num_params;
    d->max_rows = rows;
    d->cnn = p->cnn;
    d->vec_at = p->vec_at;
    d->vec_w = p->vec_w;
    if (p->cnn.layers)
        d->obs_w = frl_policy_input_row_w(p);
    d->head = p->head;
    d->towers = p->towers;
    for (int32_t i = 0; i < p->towers; i++) {
        d->enc[i] = p->enc[i];
        d->core[i] = p->core[i];
    }
    d->state_w = p->towers ? p->state_w : 0; /* a frame stack's state stays on the host */
}

frl_status frl_policy_device_model(const frl_policy *p, int32_t rows, frl_dev_model **m,
                                   const char *who)
{
    frl_net_desc d;
    describe_net(p, rows, &d);
    return frl_dev_model_create(m, &p->rt->device, &p->rt->alloc, &d, who);
}

/* Why the device cannot hold p's networks yet, into why; 0 when it can. */
static int device_refuses(const frl_policy *p, char *why, size_t size)
{
    /* The device networks read float rows of in_w values straight from the ring and the
     * sampler's buffers; a discrete space's rows are indices that the CPU expands into
     * one-hot rows (one_hot above), which the device path does not do yet. */
    if (p->obs_n)
        snprintf(why, size, "discrete(%d) observation spaces run on the CPU for now",
                 (int)p->obs_n);
    else
        return 0;
    return 1;
}

/* The policy's own model and the page-locked outputs of its forwards; nothing on the
 * CPU. Networks the device cannot hold (a space it does not take yet, or a model it has
 * no memory for) fail on runtime.device=cuda and stay on the CPU on auto, which means
 * the fastest place that works. */
static frl_status open_device(frl_policy *p, const char *who)
{
    if (p->rt->device.kind != FRL_DEVICE_CUDA)
        return FRL_OK;
    char why[256];
    if (device_refuses(p, why, sizeof why)) {
        if (p->rt->device.automatic) {
            frl_log(p->rt, FRL_LOG_INFO, "%s: runtime.device=auto: on the CPU, since %s", who,
                    why);
            return FRL_OK;
        }
        return frl_fail(NULL, FRL_ERR_UNSUPPORTED,
                        "%s: %s, and this runtime computes on %s: use a runtime with "
                        "runtime.device=cpu (or auto)", who, why, p->rt->device.name);
    }
    frl_status st = frl_policy_device_model(p, frl_policy_device_rows(p), &p->dev, who);
    if (st != FRL_OK && p->rt->device.automatic) {
        frl_log(p->rt, FRL_LOG_INFO, "runtime.device=auto: on the CPU, since %s",
                frl_last_error());
        return FRL_OK;
    }
    if (st != FRL_OK)
        return st;
    size_t floats = (size_t)DEVICE_ROWS * (size_t)(p->out_w + 1);
    p->dev_out = frl_device_host_alloc(&p->rt->device, &p->rt->alloc, sizeof(float) * floats,
                                       why, sizeof why);
    if (!p->dev_out)
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: the outputs of device inference: %s", who, why);
    p->dev_value = p->dev_out + (size_t)DEVICE_ROWS * (size_t)p->out_w;
    if (p->stack > 1) {
        size_t sf = (size_t)DEVICE_STACK_ROWS * (size_t)frl_policy_input_row_w(p);
        p->dev_stacked = frl_device_host_alloc(&p->rt->device, &p->rt->alloc,
                                               sizeof(float) * sf, why, sizeof why);
        if (!p->dev_stacked)
            return frl_fail(NULL, FRL_ERR_NOMEM, "%s: the frame stacks of device inference: "
                            "%s", who, why);
    }
    p->dev_version = ~(uint64_t)0; /* nothing uploaded yet */
    p->dev_norm_stale = 1;
    return FRL_OK;
}

static void close_device(frl_policy *p)
{
    if (p->dev_out)
        frl_device_host_free(&p->rt->device, &p->rt->alloc, p->dev_out);
    if (p->dev_stacked)
        frl_device_host_free(&p->rt->device, &p->rt->alloc, p->dev_stacked);
    frl_dev_model_destroy(p->dev);
    p->dev = NULL;
    p->dev_out = p->dev_value = p->dev_stacked = NULL;
}

void frl_policy_leave_device(frl_policy *p)
{
    close_device(p);
}

frl_status frl_policy_device_refresh(frl_policy *p, char *err)
{
    int params = p->dev_version != p->version, norm = p->obs_norm && p->dev_norm_stale;
    if (!p->dev || (!params && !norm))
        return FRL_OK;
    frl_status st = frl_dev_model_load(p->dev, params ? p->params : NULL,
                                       norm ? p->norm.use_mean : NULL,
                                       norm ? p->norm.use_inv_std : NULL, p->norm.clip, err);
    if (st != FRL_OK)
        return st;
    p->dev_version = p->version;
    p->dev_norm_stale = 0;
    return FRL_OK;
}

frl_status frl_policy_device_forward(frl_policy *p, int64_t rows, const float *obs, float *out,
                                     float *value, char *err)
{
    frl_status st = frl_policy_device_refresh(p, err);
    return st != FRL_OK ? st : frl_dev_model_forward(p->dev, rows, obs, out, value, err);
}

frl_status frl_policy_device_step(frl_policy *p, int64_t rows, const float *obs, float *state,
                                  const uint8_t *reset, float *out, float *value, char *err)
{
    frl_status st = frl_policy_device_refresh(p, err);
    return st != FRL_OK ? st
                        : frl_dev_model_step(p->dev, rows, obs, state, reset, out, value, err);
}

/* ---- creation ---- */

static frl_status check_spaces(char *err, const frl_space *obs, const frl_space *act,
                               const char *who)
{
    if (!obs || !act)
        return frl_fail(err, FRL_ERR_NULL, "%s: %s space is NULL", who,
                        obs ? "action" : "observation");
    frl_status st = frl_check_observation_space(obs, who, err);
    if (st != FRL_OK)
        return st;
    if (obs->n > (1 << 24) || act->n > (1 << 16))
        return frl_fail(err, FRL_ERR_RANGE,
                        "%s: observation width %lld or action width %lld is too large", who,
                        (long long)obs->n, (long long)act->n);
    if (act->kind == FRL_SPACE_DISCRETE && act->n < 2)
        return frl_fail(err, FRL_ERR_RANGE, "%s: a discrete action space needs n >= 2", who);
    return frl_check_action_space(act, who, err);
}

/* Rows of the policy's own act workspace: 256, fewer for a wide one-hot input, so its
 * [rows x n] buffer stays near 4 MiB (act takes any batch, in chunks). */
static int32_t own_ws_rows(const frl_policy *p)
{
    int32_t rows = p->obs_n ? (1 << 20) / p->obs_n : 256;
    if (p->cnn.layers) /* an image's activations are large: 4 MiB of them */
        rows = (int32_t)((1 << 20) / (frl_cnn_acts_floats(&p->cnn, 1) + 1));
    return rows < 1 ? 1 : (rows > 256 ? 256 : rows);
}

static frl_status alloc_arrays(frl_policy *p, const char *who)
{
    const frl_allocator *al = &p->rt->alloc;
    size_t w = (size_t)p->obs_w;
    p->params = frl_alloc(al, sizeof(float) * (p->num_params + 1), FRL_CACHE_LINE);
    p->norm.mean = frl_alloc(al, 2 * sizeof(double) * w, FRL_CACHE_LINE);
    p->norm.use_mean = frl_alloc(al, 2 * sizeof(float) * w, FRL_CACHE_LINE);
    p->ws_size = frl_policy_pass_floats(p, own_ws_rows(p), 0) * sizeof(float);
    p->ws = frl_alloc(al, p->ws_size, FRL_CACHE_LINE);
    if (!p->params || !p->norm.mean || !p->norm.use_mean || !p->ws)
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory for %zu parameters", who,
                        p->num_params);
    p->norm.m2 = p->norm.mean + w;
    p->norm.use_inv_std = p->norm.use_mean + w;
    /* The statistics' arrays hold obs_w values (the saved section's size); a mixed
     * space uses the first vec_w, for its vector part. */
    p->norm.width = p->vec_w ? p->vec_w : p->obs_w;
    p->norm.stride = p->obs_w;
    p->norm.at = p->vec_at;
    p->norm.clip = (float)frl_cfg_float(p->cfg, FRL_KEY_POLICY_OBS_CLIP);
    frl_obsnorm_reset(&p->norm);
    return FRL_OK;
}

/* Orthogonal init (Andrychowicz et al., 2021): sqrt(2) for hidden layers, 0.01 for
 * the policy's output and 1 for the value's, so the first policy is near uniform. */
static frl_status init_params(frl_policy *p, const char *who)
{
    size_t floats = p->towers ? frl_policy_rnn_init_work(p) : frl_mlp_init_work(&p->actor);
    size_t more[] = {frl_mlp_init_work(&p->critic), p->shared ? frl_mlp_init_work(&p->trunk) : 0,
                     frl_cnn_init_work(&p->cnn)};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
        floats = more[i] > floats ? more[i] : floats;
    double *work = frl_alloc(&p->rt->alloc, sizeof(double) * floats, 64);
    if (!work)
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory for initialisation", who);
    frl_rng r = frl_rng_stream(p->seed, 0x706f6c6963790000ULL);
    double g = sqrt(2.0);
    if (p->cnn.layers)
        frl_cnn_init_params(&p->cnn, p->params, g, &r, work);
    if (p->towers) {
        frl_policy_rnn_init_params(p, &r, work);
    } else if (frl_cfg_choice(p->cfg, FRL_KEY_POLICY_INIT) == FRL_POLICY_INIT_UNIFORM) {
        if (p->shared)
            frl_mlp_init_uniform(&p->trunk, p->params, &r);
        frl_mlp_init_uniform(&p->actor, p->params, &r);
        frl_mlp_init_uniform(&p->critic, p->params, &r);
    } else {
        if (p->shared)
            frl_mlp_init_params(&p->trunk, p->params, g, g, &r, work);
        /* Q-values start at the scale of the returns, not near zero like logits. */
        double out_gain = p->head == FRL_POLICY_HEAD_ACTOR_CRITIC ? 0.01 : 1.0;
        frl_mlp_init_params(&p->actor, p->params, g, out_gain, &r, work);
        frl_mlp_init_params(&p->critic, p->params, g, 1.0, &r, work);
    }
    float log_std = (float)frl_cfg_float(p->cfg, FRL_KEY_POLICY_INIT_LOG_STD);
    for (int32_t i = 0; !p->discrete && i < p->out_w; i++)
        p->params[p->log_std_off + (size_t)i] = log_std;
    frl_free(&p->rt->alloc, work);
    return FRL_OK;
}

/* Widths and settings from the spaces and the config. A discrete(n) observation is one
 * value (its index) in every array, and n values (the one-hot row) inside the networks. */
static void read_shape(frl_policy *p, const frl_space *obs, const frl_space *act)
{
    p->obs_w = (int32_t)frl_space_row_floats(obs);
    p->in_w = (int32_t)obs->n;
    p->obs_n = obs->kind == FRL_SPACE_DISCRETE ? (int32_t)obs->n : 0;
    p->vec_at = (int32_t)frl_space_vector_at(obs);
    p->vec_w = (int32_t)frl_space_vector_floats(obs);
    p->discrete = act->kind == FRL_SPACE_DISCRETE;
    p->out_w = (int32_t)act->n;
    p->shared = frl_cfg_bool(p->cfg, FRL_KEY_POLICY_SHARED);
    p->obs_norm = frl_cfg_bool(p->cfg, FRL_KEY_POLICY_OBS_NORM);
    p->head = frl_cfg_choice(p->cfg, FRL_KEY_POLICY_HEAD);
    atomic_store(&p->epsilon, frl_cfg_float(p->cfg, FRL_KEY_POLICY_EPSILON));
}

/* Q-values need a discrete action space; a dueling trunk needs layers (or a core). */
static frl_status check_head(const frl_policy *p, const char *who)
{
    if (p->head == FRL_POLICY_HEAD_ACTOR_CRITIC)
        return FRL_OK;
    const char *name = p->head == FRL_POLICY_HEAD_Q ? "q" : "dueling_q";
    if (!p->discrete)
        return frl_fail(NULL, FRL_ERR_UNSUPPORTED,
                        "%s: policy.head=%s needs a discrete action space, and the actions are "
                        "a box of %d values (a box learns with policy.head=actor_critic and "
                        "train.algo=ppo, impala or a2c; dqn and r2d2 need discrete actions)",
                        who, name, (int)p->out_w);
    /* With a core the heads read the core's output: the trunk a dueling head needs. */
    if (p->head == FRL_POLICY_HEAD_DUELING_Q &&
        frl_cfg_choice(p->cfg, FRL_KEY_POLICY_CORE) == FRL_POLICY_CORE_NONE &&
        frl_cfg_list(p->cfg, FRL_KEY_POLICY_HIDDEN).n == 0)
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT,
                        "%s: policy.head=dueling_q needs at least one hidden layer (policy."
                        "hidden) for the trunk its two heads share", who);
    return FRL_OK;
}

/* A one-hot row has no scale or offset to learn: normalising it would only turn the
 * index into arbitrary numbers, so the combination is refused rather than ignored. */
static frl_status check_obs_norm(const frl_policy *p, const char *who)
{
    if (p->obs_norm && p->obs_n)
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT,
                        "%s: policy.obs_norm=true with the discrete(%d) observation space: "
                        "the networks see a one-hot row, which has nothing to normalise "
                        "(set policy.obs_norm=false)", who, (int)p->obs_n);
    return FRL_OK;
}

/* policy.encoder against the observations: images need a convolutional encoder, which
 * needs images; its layers must fit the image. On success the networks read its
 * features. */
static frl_status encoder_for_space(const frl_policy *p, int enc, const char *who)
{
    int image = frl_space_is_image(p->obs_space);
    char space[FRL_SPACE_DESCRIBE];
    frl_space_describe(p->obs_space, space, sizeof space);
    if (image && enc == FRL_POLICY_ENCODER_MLP)
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT,
                        "%s: the observations (%s) hold an image of bytes and "
                        "policy.encoder=mlp reads floats: set policy.encoder=nature or simple "
                        "(a convolutional encoder over the pixels)", who, space);
    if (!image && enc != FRL_POLICY_ENCODER_MLP)
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT,
                        "%s: policy.encoder=%s reads images (frl_space_create_image), and the "
                        "observations are a %s of floats: use policy.encoder=mlp", who,
                        enc == FRL_POLICY_ENCODER_NATURE ? "nature" : "simple", space);
    return FRL_OK;
}

/* The convolutional stack over an image space, its features the networks' input. */
static frl_status layout_encoder_stack(frl_policy *p, int enc, const char *who)
{
    p->stack = (int32_t)frl_cfg_int(p->cfg, FRL_KEY_POLICY_FRAME_STACK);
    if (enc == FRL_POLICY_ENCODER_MLP && p->stack > 1)
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT,
                        "%s: policy.frame_stack=%d stacks image frames for a convolutional "
                        "encoder (policy.encoder=nature or simple); this policy has none",
                        who, (int)p->stack);
    if (enc == FRL_POLICY_ENCODER_MLP) {
        p->stack = 1;
        return FRL_OK;
    }
    if (frl_cfg_choice(p->cfg, FRL_KEY_POLICY_CORE) != FRL_POLICY_CORE_NONE && p->stack > 1)
        return frl_fail(NULL, FRL_ERR_UNSUPPORTED,
                        "%s: policy.frame_stack=%d with a recurrent core (policy.core): the "
                        "core is the policy's memory and its state the only one a row "
                        "carries; use one of them (policy.frame_stack=1)", who,
                        (int)p->stack);
    if (p->obs_norm && !p->vec_w)
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT,
                        "%s: policy.obs_norm=true with image observations: the encoder scales "
                        "pixels to [0, 1] itself (set policy.obs_norm=false; over a mixed "
                        "space it normalises the vector part)", who);
    if (p->vec_w && p->stack > 1)
        return frl_fail(NULL, FRL_ERR_UNSUPPORTED,
                        "%s: policy.frame_stack=%d with a mixed observation space: frame "
                        "stacks hold whole images only (stack the frames in the env, or use "
                        "a recurrent core, policy.core)", who, (int)p->stack);
    const frl_cnn_spec *spec = enc == FRL_POLICY_ENCODER_NATURE ? &frl_cnn_nature
                                                                : &frl_cnn_simple;
    frl_int_list ch = frl_cfg_list(p->cfg, FRL_KEY_POLICY_CONV_CHANNELS);
    const int64_t *shape = frl_space_image_of(p->obs_space)->shape;
    char why[FRL_ERRMSG_SIZE]; /* the whole message is cut to this size anyway */
    if (frl_cnn_init(&p->cnn, spec, ch.v, ch.n, (int32_t)shape[0], (int32_t)shape[1],
                     (int32_t)shape[2], p->stack, 0, why, sizeof why) != 0)
        return frl_fail(NULL, FRL_ERR_SIZE, "%s: %s", who, why);
    p->in_w = p->cnn.out_w + p->vec_w;
    p->state_w = (p->stack - 1) * p->obs_w; /* the earlier frames, carried when acting */
    return FRL_OK;
}

static frl_status setup(frl_policy *p, const frl_config *cfg, const frl_space *obs,
                        const frl_space *act, const char *who)
{
    /* The runtime's allocator, not the config's: the caller's config may go away. */
    frl_status st = frl_config_create(&p->cfg, &p->rt->alloc);
    if (st != FRL_OK)
        return st;
    frl_config_overlay(p->cfg, cfg);
    p->obs_space = frl_space_clone(&p->rt->alloc, obs);
    p->act_space = frl_space_clone(&p->rt->alloc, act);
    if (!p->obs_space || !p->act_space)
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory", who);
    frl_int_list h = frl_cfg_list(p->cfg, FRL_KEY_POLICY_HIDDEN);
    if (h.n > FRL_MLP_MAX_LAYERS - 1)
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: policy.hidden has %d layers, at most %d", who,
                        (int)h.n, FRL_MLP_MAX_LAYERS - 1);
    read_shape(p, obs, act);
    int enc = frl_cfg_choice(p->cfg, FRL_KEY_POLICY_ENCODER);
    if ((st = check_obs_norm(p, who)) != FRL_OK || (st = check_head(p, who)) != FRL_OK ||
        (st = encoder_for_space(p, enc, who)) != FRL_OK ||
        (st = layout_encoder_stack(p, enc, who)) != FRL_OK)
        return st;
    p->num_params = layout_networks(p);
    if (p->expect_params >= 0 && (int64_t)p->num_params != p->expect_params)
        return frl_fail(NULL, FRL_ERR_FORMAT,
                        "%s: the file holds %lld parameters, its settings need %zu", who,
                        (long long)p->expect_params, p->num_params);
    p->k = frl_kernels_get();
    if ((st = alloc_arrays(p, who)) != FRL_OK)
        return st;
    return init_params(p, who);
}

frl_status frl_policy_create_seeded(frl_policy **out, frl_runtime *rt, const frl_config *cfg,
                                    const frl_space *obs, const frl_space *act, uint64_t seed,
                                    const char *who)
{
    return frl_policy_create_checked(out, rt, cfg, obs, act, seed, -1, who);
}

/* Loading a file (expect_params >= 0): spaces and settings it holds that no policy can
 * have (policy.head=q over a box, an image action space) are the file's fault, so
 * FRL_ERR_FORMAT; what the runtime cannot give (memory, open_device's refusals) keeps
 * its own status. */
static frl_status refused_content(int64_t expect_params, frl_status st)
{
    if (expect_params < 0 || st == FRL_ERR_NOMEM || st == FRL_ERR_FORMAT)
        return st;
    return frl_fail_msg(NULL, FRL_ERR_FORMAT, frl_last_error());
}

frl_status frl_policy_create_checked(frl_policy **out, frl_runtime *rt, const frl_config *cfg,
                                     const frl_space *obs, const frl_space *act, uint64_t seed,
                                     int64_t expect_params, const char *who)
{
    if (!out)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: out is NULL", who);
    *out = NULL;
    if (!rt)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: runtime is NULL", who);
    frl_status st = check_spaces(NULL, obs, act, who);
    if (st != FRL_OK)
        return refused_content(expect_params, st);
    frl_policy *p = frl_alloc(&rt->alloc, sizeof *p, FRL_CACHE_LINE);
    if (!p)
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory", who);
    p->rt = rt;
    p->seed = seed;
    p->expect_params = expect_params;
    if (pthread_mutex_init(&p->ws_lock, NULL) != 0) {
        frl_free(&rt->alloc, p);
        return frl_fail(NULL, FRL_ERR_THREAD, "%s: cannot initialise a mutex", who);
    }
    if ((st = setup(p, cfg, obs, act, who)) != FRL_OK)
        st = refused_content(expect_params, st);
    else
        st = open_device(p, who);
    if (st != FRL_OK) {
        frl_policy_destroy(p);
        return st;
    }
    *out = p;
    return FRL_OK;
}

FRL_API frl_status frl_policy_create(frl_policy **out, frl_runtime *rt, const frl_config *cfg,
                                     const frl_space *observation_space,
                                     const frl_space *action_space)
{
    return frl_policy_create_seeded(out, rt, cfg, observation_space, action_space,
                                    rt ? rt->seed : 0, "frl_policy_create");
}

FRL_API void frl_policy_destroy(frl_policy *p)
{
    if (!p)
        return;
    const frl_allocator *al = &p->rt->alloc;
    close_device(p);
    frl_free(al, p->params);
    frl_free(al, p->norm.mean);
    frl_free(al, p->norm.use_mean);
    frl_free(al, p->ws);
    frl_space_destroy(p->obs_space);
    frl_space_destroy(p->act_space);
    frl_config_destroy(p->cfg);
    pthread_mutex_destroy(&p->ws_lock);
    frl_free(al, p);
}

FRL_API const frl_space *frl_policy_observation_space(const frl_policy *p)
{
    return p ? p->obs_space : NULL;
}

FRL_API const frl_space *frl_policy_action_space(const frl_policy *p)
{
    return p ? p->act_space : NULL;
}

FRL_API int64_t frl_policy_num_parameters(const frl_policy *p)
{
    return p ? (int64_t)p->num_params : 0;
}

FRL_API uint64_t frl_policy_version(const frl_policy *p)
{
    return p ? p->version : 0;
}

FRL_API const char *frl_policy_last_error(const frl_policy *p)
{
    return p ? p->err : "frl_policy_last_error: policy is NULL";
}
