/* Recurrent policies: layout, a step for acting, and the sequence passes for learning. */
#include <string.h>

#include "core/alloc.h"
#include "nn/init.h"
#include "rl/policy_rnn.h"

enum { FLOAT_ALIGN = 16 }; /* floats in 64 bytes */

static size_t take(size_t *cursor, size_t n)
{
    size_t at = *cursor;
    *cursor += frl_align_up(n, FLOAT_ALIGN);
    return at;
}

static frl_rnn_kind kind_of(const frl_config *cfg)
{
    static const frl_rnn_kind kinds[FRL_POLICY_CORE_COUNT] = {
        [FRL_POLICY_CORE_NONE] = FRL_RNN_NONE,
        [FRL_POLICY_CORE_GRU] = FRL_RNN_GRU,
        [FRL_POLICY_CORE_LSTM] = FRL_RNN_LSTM,
    };
    return kinds[frl_cfg_choice(cfg, FRL_KEY_POLICY_CORE)];
}

size_t frl_policy_rnn_layout(frl_policy *p)
{
    frl_int_list hl = frl_cfg_list(p->cfg, FRL_KEY_POLICY_HIDDEN);
    frl_nn_act act = frl_policy_activation(p->cfg);
    int32_t h = (int32_t)frl_cfg_int(p->cfg, FRL_KEY_POLICY_CORE_SIZE);
    size_t at = p->cnn.num_params; /* a conv encoder's parameters come first */
    /* Q-heads read one tower: dueling's two heads share it as they share a trunk. */
    if (p->head != FRL_POLICY_HEAD_ACTOR_CRITIC)
        p->shared = 1;
    p->towers = p->shared ? 1 : 2;
    p->state_w = 0;
    for (int32_t i = 0; i < p->towers; i++) {
        int32_t core_in = p->in_w;
        memset(&p->enc[i], 0, sizeof p->enc[i]);
        if (hl.n > 0) {
            frl_mlp_init(&p->enc[i], p->in_w, hl.v, hl.n, 0, act, at);
            at += p->enc[i].num_params;
            core_in = frl_mlp_out(&p->enc[i]);
        }
        frl_rnn_init(&p->core[i], kind_of(p->cfg), core_in, h, at);
        at += p->core[i].num_params;
        p->state_w += frl_rnn_state_w(&p->core[i]);
    }
    frl_mlp_init(&p->actor, h, NULL, 0, p->out_w, act, at);
    /* policy.head=q: the actor's outputs are the Q-values and the critic is empty. */
    frl_mlp_init(&p->critic, h, NULL, 0, p->head == FRL_POLICY_HEAD_Q ? 0 : 1, act,
                 p->actor.param_base + p->actor.num_params);
    return p->critic.param_base + p->critic.num_params;
}

int32_t frl_policy_rnn_widest(const frl_policy *p)
{
    int32_t w = p->actor.max_width > p->critic.max_width ? p->actor.max_width
                                                         : p->critic.max_width;
    for (int32_t i = 0; i < p->towers; i++) {
        if (p->enc[i].layers && p->enc[i].max_width > w)
            w = p->enc[i].max_width;
        if (p->core[i].in > w)
            w = p->core[i].in;
    }
    return w;
}

/* The largest layer's (nn/init.h: the widest layer squared was gigabytes for a wide
 * input, a one-hot row of many states). */
size_t frl_policy_rnn_init_work(const frl_policy *p)
{
    size_t n = frl_mlp_init_work(&p->actor), c = frl_mlp_init_work(&p->critic);
    n = c > n ? c : n;
    for (int32_t i = 0; i < p->towers; i++) {
        size_t e = p->enc[i].layers ? frl_mlp_init_work(&p->enc[i]) : 0;
        c = frl_rnn_init_work(&p->core[i]);
        n = e > n ? e : n;
        n = c > n ? c : n;
    }
    return n;
}

/* The encoders and heads as an MLP policy's (orthogonal, sqrt 2 hidden, 0.01 for the
 * policy's output, 1 for the value's); the cores per nn/rnn.h. */
void frl_policy_rnn_init_params(const frl_policy *p, frl_rng *r, double *work)
{
    double g = 1.4142135623730951;
    for (int32_t i = 0; i < p->towers; i++) {
        if (p->enc[i].layers)
            frl_mlp_init_params(&p->enc[i], p->params, g, g, r, work);
        frl_rnn_init_params(&p->core[i], p->params,
                            (float)frl_cfg_float(p->cfg, FRL_KEY_POLICY_CORE_KEEP_BIAS), r, work);
    }
    /* Q-values start at the scale of the returns, not near zero like logits. */
    frl_mlp_init_params(&p->actor, p->params, g,
                        p->head == FRL_POLICY_HEAD_ACTOR_CRITIC ? 0.01 : 1.0, r, work);
    if (p->critic.layers)
        frl_mlp_init_params(&p->critic, p->params, g, 1.0, r, work);
}

/* The heads a pass must run for those asked: a dueling Q needs V for every Q, and
 * policy.head=q has no critic. */
static unsigned heads_run(const frl_policy *p, unsigned heads)
{
    if (p->head == FRL_POLICY_HEAD_DUELING_Q && (heads & FRL_HEAD_ACTOR))
        return heads | FRL_HEAD_CRITIC;
    if (p->head == FRL_POLICY_HEAD_Q)
        return heads & FRL_HEAD_ACTOR;
    return heads;
}

/* The tower whose core feeds head `critic` (0: the actor's). */
static int32_t tower_of(const frl_policy *p, int critic)
{
    return critic && p->towers == 2 ? 1 : 0;
}

/* Offset of tower i's state in a row. */
static size_t state_off(const frl_policy *p, int32_t i)
{
    return i == 0 ? 0 : (size_t)frl_rnn_state_w(&p->core[0]);
}

static int32_t widest_state(const frl_policy *p)
{
    int32_t w = frl_rnn_state_w(&p->core[0]);
    return p->towers == 2 && frl_rnn_state_w(&p->core[1]) > w ? frl_rnn_state_w(&p->core[1]) : w;
}

/* ---- one step ---- */

typedef struct step_plan {
    size_t xn, cnn_acts, cnn_work, enc_acts[2], core_out[2], work, tstate, actor_acts;
    size_t critic_acts, floats;
} step_plan;

static void plan_step(const frl_policy *p, int32_t rows, step_plan *s)
{
    size_t r = (size_t)rows, at = 0, work = 0;
    memset(s, 0, sizeof *s);
    s->xn = take(&at, r * (size_t)p->in_w);
    if (p->cnn.layers) {
        s->cnn_acts = take(&at, frl_cnn_acts_floats(&p->cnn, rows));
        s->cnn_work = take(&at, frl_cnn_work_floats(&p->cnn, rows));
    }
    for (int32_t i = 0; i < p->towers; i++) {
        s->enc_acts[i] = take(&at, r * (size_t)p->enc[i].act_width);
        s->core_out[i] = take(&at, r * (size_t)p->core[i].h);
        size_t w = frl_rnn_step_floats(&p->core[i], rows);
        work = w > work ? w : work;
    }
    s->work = take(&at, work);
    s->tstate = take(&at, r * (size_t)widest_state(p));
    s->actor_acts = take(&at, r * (size_t)p->actor.act_width);
    s->critic_acts = take(&at, r * (size_t)p->critic.act_width);
    s->floats = at;
}

size_t frl_policy_rnn_step_floats(const frl_policy *p, int32_t rows)
{
    step_plan s;
    plan_step(p, rows, &s);
    return s.floats;
}

/* What the towers read: a conv encoder's features of the image rows, else the
 * normalised (or one-hot) observations of frl_policy_input. */
static const float *towers_input(const frl_policy *p, const float *params,
                                 const frl_obsnorm *norm, int32_t rows, const float *obs,
                                 float *xn, float *cnn_acts, float *cnn_work)
{
    if (!p->cnn.layers)
        return frl_policy_input(p, norm, rows, obs, xn);
    return frl_policy_encode(p, params, norm, rows, obs, (size_t)p->obs_w, cnn_acts, cnn_work,
                             xn);
}

/* Copy tower i's part of each row of state into ts [rows x its width] (back: 1, the
 * other way). */
static void tower_state(const frl_policy *p, int32_t i, int32_t rows, float *state, float *ts,
                        int back)
{
    size_t w = (size_t)frl_rnn_state_w(&p->core[i]), off = state_off(p, i);
    size_t sw = (size_t)p->state_w;
    for (int32_t r = 0; r < rows; r++) {
        float *row = state + (size_t)r * sw + off, *t = ts + (size_t)r * w;
        if (back)
            memcpy(row, t, sizeof(float) * w);
        else
            memcpy(t, row, sizeof(float) * w);
    }
}

void frl_policy_rnn_step(const frl_policy *p, const float *params, const frl_obsnorm *norm,
                         int32_t rows, const float *obs, float *state, const uint8_t *reset,
                         float *ws, unsigned heads, float **out, float **value)
{
    step_plan s;
    plan_step(p, rows, &s);
    const float *in = towers_input(p, params, norm, rows, obs, ws + s.xn, ws + s.cnn_acts,
                                   ws + s.cnn_work);
    for (int32_t i = 0; i < p->towers; i++) {
        const float *x = in;
        if (p->enc[i].layers)
            x = frl_mlp_forward(&p->enc[i], p->k, params, rows, in, ws + s.enc_acts[i]);
        tower_state(p, i, rows, state, ws + s.tstate, 0);
        frl_rnn_step(&p->core[i], p->k, params, rows, x, ws + s.tstate, reset,
                     ws + s.core_out[i], ws + s.work);
        tower_state(p, i, rows, state, ws + s.tstate, 1);
    }
    float *o = NULL, *v = NULL;
    unsigned run = heads_run(p, value ? heads : heads & FRL_HEAD_ACTOR);
    if (run & FRL_HEAD_ACTOR)
        o = frl_mlp_forward(&p->actor, p->k, params, rows, ws + s.core_out[tower_of(p, 0)],
                            ws + s.actor_acts);
    if (run & FRL_HEAD_CRITIC)
        v = frl_mlp_forward(&p->critic, p->k, params, rows, ws + s.core_out[tower_of(p, 1)],
                            ws + s.critic_acts);
    if (p->head == FRL_POLICY_HEAD_DUELING_Q && o)
        frl_policy_dueling_combine(p, rows, o, v);
    *out = o;
    if (value)
        *value = (heads & FRL_HEAD_CRITIC) ? v : NULL;
}

/* ---- sequences ---- */

typedef struct seq_plan {
    size_t xn, cnn_acts, cnn_work, enc_acts[2], seq[2], state0, actor_acts, critic_acts;
    size_t d_out, d_value, dy, scratch, dcore[2], d_in, d_in2, cnn_grad, floats;
} seq_plan;

static void plan_seq(const frl_policy *p, int32_t T, int32_t B, int training, seq_plan *s)
{
    size_t r = (size_t)T * (size_t)B, at = 0;
    memset(s, 0, sizeof *s);
    s->xn = take(&at, r * (size_t)p->in_w);
    if (p->cnn.layers) {
        s->cnn_acts = take(&at, frl_cnn_acts_floats(&p->cnn, T * B));
        s->cnn_work = take(&at, frl_cnn_work_floats(&p->cnn, T * B));
    }
    for (int32_t i = 0; i < p->towers; i++) {
        s->enc_acts[i] = take(&at, r * (size_t)p->enc[i].act_width);
        s->seq[i] = take(&at, frl_rnn_seq_floats(&p->core[i], T, B, training));
    }
    s->state0 = take(&at, (size_t)B * (size_t)widest_state(p));
    s->actor_acts = take(&at, r * (size_t)p->actor.act_width);
    s->critic_acts = take(&at, r * (size_t)p->critic.act_width);
    if (training) {
        s->d_out = take(&at, r * (size_t)p->out_w);
        s->d_value = take(&at, r);
        s->dy = take(&at, r * (size_t)frl_policy_rnn_widest(p));
        s->scratch = take(&at, r * (size_t)frl_policy_rnn_widest(p));
        for (int32_t i = 0; i < p->towers; i++)
            s->dcore[i] = take(&at, r * (size_t)p->core[i].h);
        if (p->cnn.layers) { /* the features' gradient, one per tower, and the stack's */
            s->d_in = take(&at, r * (size_t)p->in_w);
            s->d_in2 = take(&at, r * (size_t)p->in_w);
            s->cnn_grad = take(&at, frl_cnn_grad_floats(&p->cnn, T * B));
        }
    }
    s->floats = at;
}

size_t frl_policy_rnn_seq_floats(const frl_policy *p, int32_t T, int32_t B, int training)
{
    seq_plan s;
    plan_seq(p, T, B, training, &s);
    return s.floats;
}

void frl_policy_rnn_seq_layout(const frl_policy *p, int32_t T, int32_t B, int training,
                               float *ws, frl_rpass *f)
{
    seq_plan s;
    plan_seq(p, T, B, training, &s);
    memset(f, 0, sizeof *f);
    f->T = T;
    f->B = B;
    f->norm = &p->norm;
    f->xn = ws + s.xn;
    f->cnn_acts = p->cnn.layers ? ws + s.cnn_acts : NULL;
    f->cnn_work = p->cnn.layers ? ws + s.cnn_work : NULL;
    for (int32_t i = 0; i < p->towers; i++) {
        f->enc_acts[i] = ws + s.enc_acts[i];
        frl_rnn_seq_layout(&p->core[i], T, B, training, ws + s.seq[i], &f->seq[i]);
    }
    f->state0 = ws + s.state0;
    f->actor_acts = ws + s.actor_acts;
    f->critic_acts = ws + s.critic_acts;
    if (!training)
        return;
    f->d_out = ws + s.d_out;
    f->d_value = ws + s.d_value;
    f->dy = ws + s.dy;
    f->scratch = ws + s.scratch;
    for (int32_t i = 0; i < p->towers; i++)
        f->dcore[i] = ws + s.dcore[i];
    if (p->cnn.layers) {
        f->d_in = ws + s.d_in;
        f->d_in2 = ws + s.d_in2;
        f->cnn_grad = ws + s.cnn_grad;
    }
}

void frl_policy_rnn_seq_forward(const frl_policy *p, const float *params, const float *obs,
                                const float *state0, const uint8_t *starts, frl_rpass *f,
                                unsigned heads)
{
    int32_t rows = f->T * f->B;
    f->in = towers_input(p, params, f->norm, rows, obs, f->xn, f->cnn_acts, f->cnn_work);
    for (int32_t i = 0; i < p->towers; i++) {
        f->enc_out[i] = f->in;
        if (p->enc[i].layers)
            f->enc_out[i] = frl_mlp_forward(&p->enc[i], p->k, params, rows, f->in, f->enc_acts[i]);
        tower_state(p, i, f->B, (float *)state0, f->state0, 0);
        frl_rnn_seq_forward(&p->core[i], p->k, params, f->enc_out[i], f->state0, starts,
                            &f->seq[i]);
    }
    f->out = f->value = NULL;
    unsigned run = heads_run(p, heads);
    if (run & FRL_HEAD_ACTOR)
        f->out = frl_mlp_forward(&p->actor, p->k, params, rows, f->seq[tower_of(p, 0)].out,
                                 f->actor_acts);
    if (run & FRL_HEAD_CRITIC)
        f->value = frl_mlp_forward(&p->critic, p->k, params, rows, f->seq[tower_of(p, 1)].out,
                                   f->critic_acts);
    if (p->head == FRL_POLICY_HEAD_DUELING_Q && f->out)
        frl_policy_dueling_combine(p, rows, f->out, f->value);
}

void frl_policy_rnn_seq_final_state(const frl_policy *p, const frl_rpass *f, float *state)
{
    for (int32_t i = 0; i < p->towers; i++) {
        frl_rnn_seq_final_state(&p->core[i], &f->seq[i], f->state0);
        tower_state(p, i, f->B, state, f->state0, 1);
    }
}

/* The heads' input gradients into dcore: with one tower, the critic's is added to the
 * actor's. Q-heads take dL/dQ in d_out (dueling: split into dL/dA and dL/dV first). */
static void heads_backward(const frl_policy *p, const float *params, float *grads, frl_rpass *f)
{
    int32_t rows = f->T * f->B;
    size_t n = (size_t)rows * (size_t)p->core[0].h;
    if (p->head == FRL_POLICY_HEAD_DUELING_Q)
        frl_policy_dueling_split(p, rows, f->d_out, f->d_value);
    memcpy(f->dy, f->d_out, sizeof(float) * (size_t)rows * (size_t)p->out_w);
    frl_mlp_backward(&p->actor, p->k, params, NULL, grads, 0, rows, f->seq[0].out,
                     f->actor_acts, f->dy, NULL, f->dcore[0]);
    if (!p->critic.layers)
        return;
    memcpy(f->dy, f->d_value, sizeof(float) * (size_t)rows);
    int32_t c = tower_of(p, 1);
    float *dc = c == 1 ? f->dcore[1] : f->scratch;
    frl_mlp_backward(&p->critic, p->k, params, NULL, grads, 0, rows, f->seq[c].out,
                     f->critic_acts, f->dy, NULL, dc);
    if (c == 0)
        for (size_t i = 0; i < n; i++)
            f->dcore[0][i] += f->scratch[i];
}

void frl_policy_rnn_seq_backward(const frl_policy *p, const float *params, float *grads,
                                 const uint8_t *starts, int32_t bptt, frl_rpass *f)
{
    int32_t rows = f->T * f->B;
    int cnn = p->cnn.layers > 0;
    heads_backward(p, params, grads, f);
    for (int32_t i = 0; i < p->towers; i++) {
        int enc = p->enc[i].layers > 0;
        /* A conv encoder wants dL/d(features): each tower's lands in its own buffer. */
        float *dx = cnn ? (i == 0 ? f->d_in : f->d_in2) : NULL;
        /* dL/d(encoder output) lands in dy, where the encoder's backward wants it. */
        frl_rnn_seq_backward(&p->core[i], p->k, params, grads, 0, f->enc_out[i], starts, bptt,
                             f->dcore[i], enc ? f->dy : dx, &f->seq[i]);
        if (enc)
            frl_mlp_backward(&p->enc[i], p->k, params, NULL, grads, 0, rows, f->in,
                             f->enc_acts[i], f->dy, f->scratch, dx);
    }
    if (!cnn)
        return;
    if (p->towers == 2) {
        size_t n = (size_t)rows * (size_t)p->in_w;
        for (size_t j = 0; j < n; j++)
            f->d_in[j] += f->d_in2[j];
    }
    frl_policy_feature_grad(p, rows, f->d_in);
    frl_cnn_backward(&p->cnn, p->k, params, grads, 0, rows, f->cnn_acts, f->d_in, f->cnn_grad,
                     f->cnn_work);
}
