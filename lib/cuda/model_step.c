/* model_step (lib/core/plugin_api.h): a recurrent policy's acting step on the device,
 * for the central inference of R2D2 and recurrent PPO (SEED's layout: the envs' states
 * stay with the sampler on the host, and each batch brings its rows' states along).
 *
 * On the model's stream: the observations and the states up, the input (the normaliser
 * or the pixel encoder, as an MLP model's), then each tower: its encoder's layers, its
 * core's two products and one cell kernel, its state columns back into the state rows;
 * then the one-layer heads, and the outputs and states down, with one synchronise. Up
 * to FRL_CUDA_STAGE_ROWS rows that work is captured as a graph on a batch size's second
 * sighting and replayed after, through the page-locked staging buffers (the forward's
 * graph cache, model_forward.c), so a small batch pays one launch instead of a dozen
 * and more; larger batches, FRL_CUDA_FORWARD=launch and the host ops enqueue it op by
 * op. The same operations in the same order as the CPU's step
 * (lib/rl/policy_rnn.c), so the host build of the ops reproduces it within the products'
 * rounding. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/model.h"

/* n floats from *at, each array rounded up to 64 floats (256 bytes: cuBLAS's alignment). */
static size_t take(size_t *at, size_t n)
{
    size_t start = *at;
    *at = start + ((n + 63) & ~(size_t)63);
    return start;
}

/* Where a step's arrays start in the step workspace, for rows rows. */
typedef struct step_plan {
    size_t enc_acts[2], hout[2];   /* per tower: the encoder's layers, the core's new h */
    size_t gx, gh, hp, cp, cout;   /* one tower's at a time */
    size_t floats;
} step_plan;

static int32_t widest_core(const frl_net_desc *n)
{
    int32_t h = 0;
    for (int32_t i = 0; i < n->towers; i++)
        h = n->core[i].h > h ? n->core[i].h : h;
    return h;
}

static void plan_step(const frl_net_desc *n, int32_t rows, step_plan *s)
{
    size_t r = (size_t)rows, h = (size_t)widest_core(n), at = 0;
    *s = (step_plan){0};
    for (int32_t i = 0; i < n->towers; i++) {
        s->enc_acts[i] = take(&at, r * (size_t)n->enc[i].act_width);
        s->hout[i] = take(&at, r * (size_t)n->core[i].h);
    }
    s->gx = take(&at, r * 4 * h); /* G h, G <= 4 */
    s->gh = take(&at, r * 4 * h);
    s->hp = take(&at, r * h);
    s->cp = take(&at, r * h);
    s->cout = take(&at, r * h);
    s->floats = at;
}

int frl_cuda_step_alloc(frl_cuda_model *m, char *err, size_t err_size)
{
    const frl_net_desc *n = &m->net.desc;
    step_plan s;
    plan_step(n, n->max_rows, &s);
    const frl_dev_ops *o = m->net.ops;
    size_t bytes = sizeof(float) * (size_t)n->max_rows * (size_t)n->state_w;
    m->state = o->alloc(m->net.d, bytes);
    m->step_ws = o->alloc(m->net.d, sizeof(float) * s.floats);
    /* page-locked, the download runs at the bus's speed; without, a copy through the
     * driver's own staging, slower but the same result */
    m->state_host = o->alloc_pinned(m->net.d, bytes);
    m->state_host_pinned = m->state_host != NULL;
    if (!m->state_host) {
        char ignored[8];
        o->sync(m->net.d, ignored, sizeof ignored); /* drop the refusal kept for the next sync */
        m->state_host = malloc(bytes);
    }
    if (m->state && m->step_ws && m->state_host)
        return 0;
    snprintf(err, err_size, "out of %s memory for the recurrent state of %d rows",
             m->state_host ? "device" : "host", (int)n->max_rows);
    return 1;
}

void frl_cuda_step_release(frl_cuda_model *m)
{
    const frl_dev_ops *o = m->net.ops;
    o->release(m->net.d, m->state);
    o->release(m->net.d, m->step_ws);
    if (m->state_host_pinned)
        o->release_pinned(m->net.d, m->state_host);
    else
        free(m->state_host);
}

/* Tower i's core one step on x [rows x core.in]: its columns of the state rows (from
 * column `off`) in, the new h into hout, the new columns back. */
static void core_step(const frl_cuda_model *m, int32_t i, int32_t rows, const float *x,
                      size_t off, float *ws, const step_plan *s)
{
    const frl_dev_net *net = &m->net;
    const frl_dev_ops *o = net->ops;
    const frl_rnn *c = &net->desc.core[i];
    size_t fb = sizeof(float), hb = fb * (size_t)c->h, pitch = fb * (size_t)net->desc.state_w;
    int32_t gw = c->gates * c->h, lstm = c->kind == FRL_RNN_LSTM;
    float *st = m->state + off;
    o->copy2d(net->d, rows, hb, ws + s->hp, hb, st, pitch);
    if (lstm)
        o->copy2d(net->d, rows, hb, ws + s->cp, hb, st + c->h, pitch);
    o->linear_fwd(net->d, rows, gw, c->in, x, net->params + c->off_wx, net->params + c->off_bx,
                  ws + s->gx, 0);
    o->linear_fwd(net->d, rows, gw, c->h, ws + s->hp, net->params + c->off_wh,
                  net->params + c->off_bh, ws + s->gh, 0);
    o->rnn_cell(net->d, (int32_t)c->kind, rows, c->h, ws + s->gx, ws + s->gh, ws + s->hp,
                ws + s->cp, ws + s->hout[i], ws + s->cout);
    o->copy2d(net->d, rows, hb, st, pitch, ws + s->hout[i], hb);
    if (lstm)
        o->copy2d(net->d, rows, hb, st + c->h, pitch, ws + s->cout, hb);
}

/* The towers and the heads over the device observations m->obs and states m->state;
 * *out and *value (NULL when not asked, or a Q-head's) point at the heads' outputs. */
static void enqueue_step(frl_cuda_model *m, int32_t rows, int want_value, float **out,
                         float **value)
{
    const frl_net_desc *n = &m->net.desc;
    step_plan s;
    plan_step(n, rows, &s);
    frl_dev_pass f;
    frl_dev_pass_layout(n, rows, 0, m->ws, &f);
    const float *in = frl_dev_net_input(&m->net, rows, m->obs, &f);
    float *ws = m->step_ws;
    size_t off = 0;
    for (int32_t i = 0; i < n->towers; i++) {
        const float *x = in;
        if (n->enc[i].layers)
            x = frl_dev_mlp_forward(&m->net, &n->enc[i], rows, in, ws + s.enc_acts[i]);
        core_step(m, i, rows, x, off, ws, &s);
        off += (size_t)frl_rnn_state_w(&n->core[i]);
    }
    *out = frl_dev_mlp_forward(&m->net, &n->actor, rows, ws + s.hout[0], f.actor_acts);
    *value = NULL;
    if (want_value && n->critic.layers)
        *value = frl_dev_mlp_forward(&m->net, &n->critic, rows, ws + s.hout[n->towers - 1],
                                     f.critic_acts);
}

void frl_cuda_enqueue_step(frl_cuda_model *m, int32_t rows, const float *obs,
                           const float *state, float *out, float *value, float *state_out)
{
    const frl_net_desc *n = &m->net.desc;
    const frl_dev_ops *o = m->net.ops;
    size_t fb = sizeof(float), sb = fb * (size_t)rows * (size_t)n->state_w;
    o->put(m->net.d, m->obs, obs, fb * (size_t)rows * (size_t)n->obs_w);
    o->put(m->net.d, m->state, state, sb);
    float *d_out, *d_value;
    enqueue_step(m, rows, value != NULL, &d_out, &d_value);
    o->get(m->net.d, out, d_out, fb * (size_t)rows * (size_t)n->out_w);
    if (value)
        o->get(m->net.d, value, d_value, fb * (size_t)rows);
    o->get(m->net.d, state_out, m->state, sb);
}

int frl_cuda_model_step(frl_cuda_model *m, int32_t rows, const float *obs, float *state,
                        float *out, float *value, char *err, size_t err_size)
{
    const frl_net_desc *n = &m->net.desc;
    if (!n->towers) {
        snprintf(err, err_size, "model_step: the model has no recurrent core (model_forward "
                 "runs it)");
        return 1;
    }
    if (rows < 1 || rows > n->max_rows) {
        snprintf(err, err_size, "model_step: %d rows, the model takes 1 to %d", (int)rows,
                 (int)n->max_rows);
        return 1;
    }
    if (value && !n->critic.layers) {
        snprintf(err, err_size, "model_step: a Q-head has no values");
        return 1;
    }
    int captured = frl_cuda_step_graph(m, rows, obs, state, out, value, err, err_size);
    if (captured >= 0)
        return captured;
    /* op by op: the new states land in m->state_host, the caller's only after the sync */
    size_t sb = sizeof(float) * (size_t)rows * (size_t)n->state_w;
    frl_cuda_enqueue_step(m, rows, obs, state, out, value, m->state_host);
    if (m->net.ops->sync(m->net.d, err, err_size) != 0)
        return 1; /* the caller's state as it was */
    memcpy(state, m->state_host, sb);
    return 0;
}
