/* GRU and LSTM cores: layout, initialisation, a step, and a sequence forward and back. */
#include <stdint.h>
#include <string.h>

#include "nn/init.h"
#include "nn/rnn.h"

static size_t up16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

void frl_rnn_init(frl_rnn *r, frl_rnn_kind kind, int32_t in, int32_t h, size_t param_base)
{
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->in = in;
    r->h = h;
    r->gates = kind == FRL_RNN_LSTM ? 4 : 3;
    size_t gh = (size_t)r->gates * (size_t)h;
    r->param_base = param_base;
    r->off_wx = param_base;
    r->off_wh = r->off_wx + (size_t)in * gh;
    r->off_bx = r->off_wh + (size_t)h * gh;
    r->off_bh = r->off_bx + gh;
    r->num_params = r->off_bh + gh - param_base;
}

size_t frl_rnn_init_work(const frl_rnn *r)
{
    size_t gh = (size_t)r->gates * (size_t)r->h;
    size_t a = (size_t)r->in * gh, b = (size_t)r->h * gh;
    return (a > b ? a : b) + 1;
}

void frl_rnn_init_params(const frl_rnn *r, float *params, float keep_bias, frl_rng *rng,
                         double *work)
{
    int32_t gh = r->gates * r->h;
    frl_init_orthogonal(params + r->off_wx, r->in, gh, 1.0, rng, work);
    frl_init_orthogonal(params + r->off_wh, r->h, gh, 1.0, rng, work);
    memset(params + r->off_bx, 0, sizeof(float) * 2 * (size_t)gh);
    /* The keep gate is the second block in both layouts (GRU r, z, n; LSTM i, f, g, o). */
    float keep = r->kind == FRL_RNN_LSTM ? 1.0f + keep_bias : keep_bias;
    for (int32_t j = 0; j < r->h; j++)
        params[r->off_bx + (size_t)r->h + (size_t)j] = keep;
}

/* ---- one step ---- */

/* gx, gh [rows x G h], gates [rows x (G + 1) h], hp and cp [rows x h]. */
size_t frl_rnn_step_floats(const frl_rnn *r, int32_t rows)
{
    size_t n = (size_t)rows, h = (size_t)r->h, g = (size_t)r->gates;
    return 2 * up16(n * g * h) + up16(n * (g + 1) * h) + 2 * up16(n * h);
}

/* The previous h (and c) of each row into hp (and cp), contiguous for the products,
 * zero for a row that resets. */
static void split_state(const frl_rnn *r, int32_t rows, const float *state,
                        const uint8_t *reset, float *hp, float *cp)
{
    size_t h = (size_t)r->h, sw = (size_t)frl_rnn_state_w(r);
    for (int32_t i = 0; i < rows; i++) {
        const float *s = state + (size_t)i * sw;
        int zero = reset && reset[i];
        float *dh = hp + (size_t)i * h;
        if (zero)
            memset(dh, 0, sizeof(float) * h);
        else
            memcpy(dh, s, sizeof(float) * h);
        if (!cp)
            continue;
        float *dc = cp + (size_t)i * h;
        if (zero)
            memset(dc, 0, sizeof(float) * h);
        else
            memcpy(dc, s + h, sizeof(float) * h);
    }
}

/* The LSTM's pre-activations: gx += gh (the two products' sum, bias included). */
static void add_into(float *gx, const float *gh, size_t n)
{
    for (size_t i = 0; i < n; i++)
        gx[i] += gh[i];
}

/* One step over rows rows whose previous state is hp (and cp): out gets h, c (LSTM)
 * gets the cell; gx holds x wx + bx on entry and is overwritten (LSTM). */
static void step_core(const frl_rnn *r, const frl_kernels *k, const float *params, int32_t rows,
                      float *gx, float *gh, const float *hp, const float *cp, float *out,
                      float *c, float *gates)
{
    int32_t gw = r->gates * r->h;
    k->linear_fwd(rows, gw, r->h, hp, params + r->off_wh, params + r->off_bh, gh, FRL_NN_LINEAR);
    if (r->kind == FRL_RNN_GRU) {
        k->gru_fwd(rows, r->h, gx, gh, hp, out, gates);
        return;
    }
    add_into(gx, gh, (size_t)rows * (size_t)gw);
    k->lstm_fwd(rows, r->h, gx, cp, out, c, gates);
}

void frl_rnn_step(const frl_rnn *r, const frl_kernels *k, const float *params, int32_t rows,
                  const float *x, float *state, const uint8_t *reset, float *out, float *work)
{
    size_t n = (size_t)rows, h = (size_t)r->h, g = (size_t)r->gates;
    float *gx = work, *gh = gx + up16(n * g * h), *gates = gh + up16(n * g * h);
    float *hp = gates + up16(n * (g + 1) * h), *cp = hp + up16(n * h);
    int lstm = r->kind == FRL_RNN_LSTM;
    split_state(r, rows, state, reset, hp, lstm ? cp : NULL);
    k->linear_fwd(rows, (int32_t)(g * h), r->in, x, params + r->off_wx, params + r->off_bx, gx,
                  FRL_NN_LINEAR);
    /* The LSTM's new cell goes to cp in place (the kernel reads each cp before writing
     * it), and from there back into the state with h. */
    step_core(r, k, params, rows, gx, gh, hp, cp, out, cp, gates);
    size_t sw = (size_t)frl_rnn_state_w(r);
    for (int32_t i = 0; i < rows; i++) {
        memcpy(state + (size_t)i * sw, out + (size_t)i * h, sizeof(float) * h);
        if (lstm)
            memcpy(state + (size_t)i * sw + h, cp + (size_t)i * h, sizeof(float) * h);
    }
}

/* ---- a sequence ---- */

/* Offsets (in floats) of a sequence's arrays; SIZE_MAX marks one that is absent. */
enum { SEQ_GX, SEQ_HP, SEQ_CP, SEQ_C, SEQ_GATES, SEQ_OUT, SEQ_GH, SEQ_DGX, SEQ_DGH, SEQ_DH,
       SEQ_DC, SEQ_DHP, SEQ_DCP, SEQ_COUNT };

static size_t seq_plan(const frl_rnn *r, int32_t T, int32_t B, int training,
                       size_t off[SEQ_COUNT])
{
    size_t n = (size_t)T * (size_t)B, b = (size_t)B, h = (size_t)r->h, g = (size_t)r->gates;
    int lstm = r->kind == FRL_RNN_LSTM;
    size_t len[SEQ_COUNT] = {
        [SEQ_GX] = n * g * h, [SEQ_HP] = n * h, [SEQ_CP] = lstm ? n * h : 0,
        [SEQ_C] = lstm ? n * h : 0, [SEQ_GATES] = n * (g + 1) * h, [SEQ_OUT] = n * h,
        [SEQ_GH] = b * g * h,
        [SEQ_DGX] = training ? n * g * h : 0, [SEQ_DGH] = training && !lstm ? n * g * h : 0,
        [SEQ_DH] = training ? b * h : 0, [SEQ_DC] = training && lstm ? b * h : 0,
        [SEQ_DHP] = training ? b * h : 0, [SEQ_DCP] = training && lstm ? b * h : 0,
    };
    size_t at = 0;
    for (int i = 0; i < SEQ_COUNT; i++) {
        off[i] = len[i] ? at : SIZE_MAX;
        at += up16(len[i]);
    }
    return at;
}

size_t frl_rnn_seq_floats(const frl_rnn *r, int32_t T, int32_t B, int training)
{
    size_t off[SEQ_COUNT];
    return seq_plan(r, T, B, training, off);
}

static float *at_off(float *ws, size_t off)
{
    return off == SIZE_MAX ? NULL : ws + off;
}

void frl_rnn_seq_layout(const frl_rnn *r, int32_t T, int32_t B, int training, float *ws,
                        frl_rnn_seq *s)
{
    size_t off[SEQ_COUNT];
    seq_plan(r, T, B, training, off);
    s->T = T;
    s->B = B;
    s->gx = at_off(ws, off[SEQ_GX]);
    s->hp = at_off(ws, off[SEQ_HP]);
    s->cp = at_off(ws, off[SEQ_CP]);
    s->c = at_off(ws, off[SEQ_C]);
    s->gates = at_off(ws, off[SEQ_GATES]);
    s->out = at_off(ws, off[SEQ_OUT]);
    s->gh = at_off(ws, off[SEQ_GH]);
    s->dgx = at_off(ws, off[SEQ_DGX]);
    s->dgh = r->kind == FRL_RNN_LSTM ? s->dgx : at_off(ws, off[SEQ_DGH]);
    s->dh = at_off(ws, off[SEQ_DH]);
    s->dc = at_off(ws, off[SEQ_DC]);
    s->dhp = at_off(ws, off[SEQ_DHP]);
    s->dcp = at_off(ws, off[SEQ_DCP]);
}

/* The state step t starts from: step t - 1's output (state0 at t = 0), zeroed for a
 * column that starts an episode there. */
static void prev_state(const frl_rnn *r, const frl_rnn_seq *s, int32_t t, const float *state0,
                       const uint8_t *starts)
{
    size_t B = (size_t)s->B, h = (size_t)r->h, row0 = (size_t)t * B;
    const uint8_t *st = starts ? starts + row0 : NULL;
    float *hp = s->hp + row0 * h, *cp = s->cp ? s->cp + row0 * h : NULL;
    if (t == 0) {
        split_state(r, s->B, state0, st, hp, cp);
        return;
    }
    const float *ho = s->out + (row0 - B) * h, *co = s->c ? s->c + (row0 - B) * h : NULL;
    for (size_t b = 0; b < B; b++) {
        int zero = st && st[b];
        if (zero)
            memset(hp + b * h, 0, sizeof(float) * h);
        else
            memcpy(hp + b * h, ho + b * h, sizeof(float) * h);
        if (!cp)
            continue;
        if (zero)
            memset(cp + b * h, 0, sizeof(float) * h);
        else
            memcpy(cp + b * h, co + b * h, sizeof(float) * h);
    }
}

void frl_rnn_seq_forward(const frl_rnn *r, const frl_kernels *k, const float *params,
                         const float *x, const float *state0, const uint8_t *starts,
                         frl_rnn_seq *s)
{
    size_t B = (size_t)s->B, h = (size_t)r->h, gw = (size_t)r->gates * h;
    /* The input products of every step at once: the determinism contract makes them the
     * same bits as step by step. */
    k->linear_fwd(s->T * s->B, (int32_t)gw, r->in, x, params + r->off_wx, params + r->off_bx,
                  s->gx, FRL_NN_LINEAR);
    for (int32_t t = 0; t < s->T; t++) {
        size_t row0 = (size_t)t * B;
        prev_state(r, s, t, state0, starts);
        step_core(r, k, params, s->B, s->gx + row0 * gw, s->gh, s->hp + row0 * h,
                  s->cp ? s->cp + row0 * h : NULL, s->out + row0 * h,
                  s->c ? s->c + row0 * h : NULL,
                  s->gates + row0 * (size_t)(r->gates + 1) * h);
    }
}

void frl_rnn_seq_final_state(const frl_rnn *r, const frl_rnn_seq *s, float *state)
{
    size_t B = (size_t)s->B, h = (size_t)r->h, sw = (size_t)frl_rnn_state_w(r);
    size_t last = (size_t)(s->T - 1) * B;
    for (size_t b = 0; b < B; b++) {
        memcpy(state + b * sw, s->out + (last + b) * h, sizeof(float) * h);
        if (s->c)
            memcpy(state + b * sw + h, s->c + (last + b) * h, sizeof(float) * h);
    }
}

/* The gradient step t passes to step t - 1 (s->dhp, s->dcp) becomes the carry into
 * t - 1 (s->dh, s->dc): dropped at a truncation point, and per column at a start (the
 * state there was zeroed, so nothing before it affected the loss through it). */
static void carry_back(const frl_rnn *r, frl_rnn_seq *s, int32_t t, const uint8_t *starts,
                       int32_t bptt)
{
    size_t B = (size_t)s->B, h = (size_t)r->h;
    if (t % bptt == 0) {
        memset(s->dh, 0, sizeof(float) * B * h);
        if (s->dc)
            memset(s->dc, 0, sizeof(float) * B * h);
        return;
    }
    const uint8_t *st = starts ? starts + (size_t)t * B : NULL;
    for (size_t b = 0; b < B; b++) {
        int zero = st && st[b];
        for (size_t j = 0; j < h; j++)
            s->dh[b * h + j] = zero ? 0.0f : s->dhp[b * h + j];
        for (size_t j = 0; s->dc && j < h; j++)
            s->dc[b * h + j] = zero ? 0.0f : s->dcp[b * h + j];
    }
}

/* Step t backward: the carry plus the step's own output gradient, through the gates,
 * into the pre-activation gradients of row block t and the gradient for step t - 1. */
static void step_back(const frl_rnn *r, const frl_kernels *k, const float *params,
                      const float *dout, int32_t t, frl_rnn_seq *s)
{
    size_t B = (size_t)s->B, h = (size_t)r->h, gw = (size_t)r->gates * h;
    size_t row0 = (size_t)t * B;
    const float *dy = dout + row0 * h;
    for (size_t i = 0; i < B * h; i++)
        s->dh[i] += dy[i];
    const float *gates = s->gates + row0 * (size_t)(r->gates + 1) * h;
    float *dgx = s->dgx + row0 * gw, *dgh = s->dgh + row0 * gw;
    if (r->kind == FRL_RNN_GRU) {
        /* dhp takes the direct part (dh z); the part through wh is added to it. */
        k->gru_bwd(s->B, r->h, gates, s->hp + row0 * h, s->dh, dgx, dgh, s->dhp);
        k->linear_bwd_input(s->B, (int32_t)gw, r->h, dgh, params + r->off_wh, s->dh);
        for (size_t i = 0; i < B * h; i++)
            s->dhp[i] += s->dh[i];
        return;
    }
    k->lstm_bwd(s->B, r->h, gates, s->cp + row0 * h, s->dh, s->dc, dgx, s->dcp);
    k->linear_bwd_input(s->B, (int32_t)gw, r->h, dgx, params + r->off_wh, s->dhp);
}

void frl_rnn_seq_backward(const frl_rnn *r, const frl_kernels *k, const float *params,
                          float *grads, int accumulate, const float *x, const uint8_t *starts,
                          int32_t bptt, const float *dout, float *dx, frl_rnn_seq *s)
{
    size_t B = (size_t)s->B, h = (size_t)r->h;
    int32_t gw = r->gates * r->h, n = s->T * s->B;
    if (bptt < 1)
        bptt = 1;
    memset(s->dh, 0, sizeof(float) * B * h);
    if (s->dc)
        memset(s->dc, 0, sizeof(float) * B * h);
    for (int32_t t = s->T - 1; t >= 0; t--) {
        step_back(r, k, params, dout, t, s);
        if (t > 0)
            carry_back(r, s, t, starts, bptt);
    }
    /* The weight gradients of all steps at once, rows in order (the contract's fixed
     * summation order, so a split of the columns changes nothing per column). */
    k->linear_bwd_weight(n, gw, r->in, x, s->dgx, grads + r->off_wx, grads + r->off_bx,
                         accumulate);
    k->linear_bwd_weight(n, gw, r->h, s->hp, s->dgh, grads + r->off_wh, grads + r->off_bh,
                         accumulate);
    if (dx)
        k->linear_bwd_input(n, gw, r->in, s->dgx, params + r->off_wx, dx);
}
