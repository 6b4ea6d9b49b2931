/* Forward and backward passes of a policy's networks through the device ops. */
#include "cuda/dev_net.h"

/* Images a patch matrix of the device's encoder takes: the CPU's block (4 MiB of
 * patches) grown until the matrix holds 16M floats, so that a layer over a minibatch is
 * a few large products rather than many small launches. */
static int32_t enc_block(const frl_cnn *c, int32_t rows)
{
    int32_t per = (int32_t)frl_cnn_work_floats(c, 1);
    int32_t b = per >= (1 << 24) ? 1 : (1 << 24) / per;
    b = b < c->block ? c->block : b;
    return rows < b ? rows : b;
}

/* n floats from *at, aligned to 64 (cuBLAS reads aligned rows faster). */
static size_t take(size_t *at, size_t n)
{
    size_t start = (*at + 63) & ~(size_t)63;
    *at = start + n;
    return start;
}

/* The pass's workspace: frl_net_pass_plan's, then the encoder's. Fills f when ws is
 * not NULL; returns the floats. */
static size_t plan_pass(const frl_net_desc *n, int32_t rows, int training, float *ws,
                        frl_dev_pass *f)
{
    frl_net_shape s = frl_net_desc_shape(n);
    frl_pass_plan w;
    frl_net_pass_plan(&s, rows, training, &w);
    size_t at = w.floats;
    const frl_cnn *c = &n->cnn;
    size_t acts = 0, work = 0, d_in = 0, d_in2 = 0, grad = 0, join = 0, vec = 0;
    if (c->layers) {
        size_t in_w = (size_t)frl_net_desc_in_w(n), r = (size_t)rows;
        acts = take(&at, frl_cnn_acts_floats(c, rows));
        work = take(&at, (size_t)enc_block(c, rows) * frl_cnn_work_floats(c, 1));
        if (n->vec_w)
            join = take(&at, r * in_w);
        if (n->vec_w && n->obs_norm)
            vec = take(&at, 2 * r * (size_t)n->vec_w);
        if (training) {
            d_in = take(&at, r * in_w);
            d_in2 = take(&at, r * in_w);
            grad = take(&at, frl_cnn_grad_floats(c, rows));
        }
    }
    if (!ws)
        return at;
    *f = (frl_dev_pass){0};
    f->xn = ws + w.xn;
    f->trunk_acts = n->shared ? ws + w.trunk_acts : NULL;
    f->actor_acts = ws + w.actor_acts;
    f->critic_acts = ws + w.critic_acts;
    if (c->layers) {
        f->enc_acts = ws + acts;
        f->enc_work = ws + work;
        f->join = n->vec_w ? ws + join : NULL;
        f->vec = n->vec_w && n->obs_norm ? ws + vec : NULL;
    }
    if (!training)
        return at;
    f->dy = ws + w.dy;
    f->scratch = ws + w.scratch;
    f->d_out = ws + w.d_out;
    f->d_value = ws + w.d_value;
    f->dh = n->shared ? ws + w.dh : NULL;
    if (c->layers) {
        f->d_in = ws + d_in;
        f->d_in2 = ws + d_in2;
        f->enc_grad = ws + grad;
    }
    return at;
}

size_t frl_dev_pass_floats(const frl_net_desc *n, int32_t rows, int training)
{
    return plan_pass(n, rows, training, NULL, NULL);
}

void frl_dev_pass_layout(const frl_net_desc *n, int32_t rows, int training, float *ws,
                         frl_dev_pass *f)
{
    plan_pass(n, rows, training, ws, f);
}

/* ---- the encoder ---- */

/* The features of rows images (rows of obs_w floats holding their bytes): scaled, then
 * each layer a block of images at a time (im2col, one product with its bias and ReLU). */
static const float *enc_forward(const frl_dev_net *net, int32_t rows, const float *obs,
                                frl_dev_pass *f)
{
    const frl_dev_ops *o = net->ops;
    const frl_cnn *c = &net->desc.cnn;
    o->scale_images(net->d, c, rows, (const uint8_t *)obs,
                    sizeof(float) * (size_t)net->desc.obs_w, f->enc_acts);
    int32_t block = enc_block(c, rows);
    for (int32_t l = 0; l < c->layers; l++) {
        const frl_conv2d *cv = &c->conv[l];
        const float *x = f->enc_acts + frl_cnn_acts_offset(c, rows, l - 1);
        float *y = f->enc_acts + frl_cnn_acts_offset(c, rows, l);
        size_t in = frl_conv2d_in_size(cv), out = frl_conv2d_out_size(cv);
        for (int32_t r = 0; r < rows; r += block) {
            int32_t b = rows - r < block ? rows - r : block;
            o->im2col(net->d, cv, b, x + (size_t)r * in, f->enc_work);
            o->linear_fwd(net->d, b * cv->out_h * cv->out_w, cv->out_c, cv->patch, f->enc_work,
                          net->params + cv->off_w, net->params + cv->off_b, y + (size_t)r * out,
                          (int32_t)cv->act);
        }
    }
    return f->enc_acts + frl_cnn_acts_offset(c, rows, c->layers - 1);
}

/* One layer's gradients from dy (dL/d its output, overwritten), a block at a time:
 * the first block writes the weights' gradient, the others add; dx (NULL: none) gets
 * dL/d its input. */
static void enc_layer_backward(const frl_dev_net *net, const frl_conv2d *cv, float *grads,
                               int32_t rows, int32_t block, const float *x, const float *y,
                               float *dy, float *dx, float *work)
{
    const frl_dev_ops *o = net->ops;
    size_t in = frl_conv2d_in_size(cv), out = frl_conv2d_out_size(cv);
    if (cv->act != FRL_NN_LINEAR)
        o->act_bwd(net->d, (int64_t)rows * (int64_t)out, y, dy, dy, (int32_t)cv->act);
    for (int32_t r = 0; r < rows; r += block) {
        int32_t b = rows - r < block ? rows - r : block, m = b * cv->out_h * cv->out_w;
        float *dyb = dy + (size_t)r * out;
        o->im2col(net->d, cv, b, x + (size_t)r * in, work);
        o->linear_bwd_weight(net->d, m, cv->out_c, cv->patch, work, dyb, grads + cv->off_w,
                             grads + cv->off_b, r > 0);
        if (!dx)
            continue;
        o->linear_bwd_input(net->d, m, cv->out_c, cv->patch, dyb, net->params + cv->off_w,
                            work);
        o->col2im(net->d, cv, b, work, dx + (size_t)r * in);
    }
}

/* The encoder's gradients from dfeat (dL/d the features, overwritten). */
static void enc_backward(const frl_dev_net *net, float *grads, int32_t rows, frl_dev_pass *f,
                         float *dfeat)
{
    const frl_cnn *c = &net->desc.cnn;
    int32_t block = enc_block(c, rows);
    float *dy = dfeat, *next = f->enc_grad;
    float *spare = f->enc_grad + (size_t)rows * (size_t)c->widest;
    for (int32_t l = c->layers - 1; l >= 0; l--) {
        float *dx = l > 0 ? next : NULL;
        enc_layer_backward(net, &c->conv[l], grads, rows, block,
                           f->enc_acts + frl_cnn_acts_offset(c, rows, l - 1),
                           f->enc_acts + frl_cnn_acts_offset(c, rows, l), dy, dx, f->enc_work);
        next = dy == dfeat ? spare : dy;
        dy = dx;
    }
}

static int32_t layer_act(const frl_mlp *m, int32_t l)
{
    return (l + 1 < m->layers || m->activate_last) ? (int32_t)m->act : 0;
}

/* Layer l's output inside acts (the layers' outputs follow each other). */
static float *layer_output(const frl_mlp *m, float *acts, int32_t rows, int32_t l)
{
    size_t off = 0;
    for (int32_t i = 0; i < l; i++)
        off += (size_t)rows * (size_t)m->width[i + 1];
    return acts + off;
}

float *frl_dev_mlp_forward(const frl_dev_net *net, const frl_mlp *m, int32_t rows,
                           const float *x, float *acts)
{
    const float *in = x;
    float *y = acts;
    for (int32_t l = 0; l < m->layers; l++) {
        y = layer_output(m, acts, rows, l);
        net->ops->linear_fwd(net->d, rows, m->width[l + 1], m->width[l], in,
                             net->params + m->off_w[l], net->params + m->off_b[l], y,
                             layer_act(m, l));
        in = y;
    }
    return y;
}

int frl_dev_plan_mlp(const frl_mlp *src, int32_t max_width, frl_dev_fused_mlp *dst)
{
    if (src->layers > FRL_DEV_FUSED_MAX_LAYERS)
        return 0;
    *dst = (frl_dev_fused_mlp){.layers = src->layers};
    for (int32_t l = 0; l <= src->layers; l++) {
        if (src->width[l] > max_width)
            return 0;
        dst->width[l] = src->width[l];
    }
    for (int32_t l = 0; l < src->layers; l++) {
        dst->act[l] = layer_act(src, l);
        dst->off_w[l] = src->off_w[l];
        dst->off_b[l] = src->off_b[l];
    }
    return 1;
}

int frl_dev_tiled(const frl_dev_net *net, frl_dev_fused_mlp m[2])
{
    const frl_net_desc *n = &net->desc;
    return !net->unfused && !n->shared && n->actor.layers >= 1 && n->critic.layers >= 1 &&
           n->actor.param_base + n->actor.num_params == n->critic.param_base &&
           frl_dev_plan_mlp(&n->actor, FRL_DEV_TILE_MAX_WIDTH, &m[0]) &&
           frl_dev_plan_mlp(&n->critic, FRL_DEV_TILE_MAX_WIDTH, &m[1]);
}

/* The heads asked for, over x, by one tiled forward. */
static void tiled_forward(const frl_dev_net *net, int32_t rows, const float *x, frl_dev_pass *f,
                          unsigned heads, const frl_dev_fused_mlp m[2])
{
    const frl_net_desc *n = &net->desc;
    frl_dev_fused_mlp pick[2];
    float *acts[2];
    int32_t k = 0;
    if (heads & FRL_DEV_ACTOR) {
        pick[k] = m[0];
        acts[k++] = f->actor_acts;
    }
    if (heads & FRL_DEV_CRITIC) {
        pick[k] = m[1];
        acts[k++] = f->critic_acts;
    }
    net->ops->mlp_forward_tiled(net->d, rows, k, pick, net->params, x, acts);
    f->out = heads & FRL_DEV_ACTOR
                 ? layer_output(&n->actor, f->actor_acts, rows, n->actor.layers - 1) : NULL;
    f->value = heads & FRL_DEV_CRITIC
                   ? layer_output(&n->critic, f->critic_acts, rows, n->critic.layers - 1) : NULL;
    f->tiled = (heads & (FRL_DEV_ACTOR | FRL_DEV_CRITIC)) == (FRL_DEV_ACTOR | FRL_DEV_CRITIC);
}

/* A mixed row's join: the encoder's features, then the row's vector (as the CPU's
 * frl_policy_encode lays them out), normalised with obs_norm: gathered into rows of
 * its own first, which the normaliser takes. */
static const float *join_vector(const frl_dev_net *net, int32_t rows, const float *obs,
                                const float *feat, frl_dev_pass *f)
{
    const frl_net_desc *n = &net->desc;
    const frl_dev_ops *o = net->ops;
    size_t fb = sizeof(float), fw = (size_t)n->cnn.out_w, iw = (size_t)frl_net_desc_in_w(n);
    size_t vb = fb * (size_t)n->vec_w;
    o->copy2d(net->d, rows, fb * fw, f->join, fb * iw, feat, fb * fw);
    const float *v = obs + n->vec_at;
    size_t pitch = fb * (size_t)n->obs_w;
    if (n->obs_norm) {
        float *x = f->vec, *y = f->vec + (size_t)rows * (size_t)n->vec_w;
        o->copy2d(net->d, rows, vb, x, vb, v, pitch);
        o->normalize(net->d, rows, n->vec_w, x, net->norm_mean, net->norm_inv_std,
                     net->norm_clip, y);
        v = y;
        pitch = vb;
    }
    o->copy2d(net->d, rows, vb, f->join + fw, fb * iw, v, pitch);
    return f->join;
}

const float *frl_dev_net_input(const frl_dev_net *net, int32_t rows, const float *obs,
                               frl_dev_pass *f)
{
    const frl_net_desc *n = &net->desc;
    f->in = obs;
    if (n->cnn.layers) {
        f->in = enc_forward(net, rows, obs, f);
        if (n->vec_w)
            f->in = join_vector(net, rows, obs, f->in, f);
    } else if (n->obs_norm) {
        net->ops->normalize(net->d, rows, n->obs_w, obs, net->norm_mean, net->norm_inv_std,
                            net->norm_clip, f->xn);
        f->in = f->xn;
    }
    return f->in;
}

void frl_dev_net_forward(const frl_dev_net *net, int32_t rows, const float *obs,
                         frl_dev_pass *f, unsigned heads)
{
    const frl_net_desc *n = &net->desc;
    const float *x = frl_dev_net_input(net, rows, obs, f);
    frl_dev_fused_mlp m[2];
    if ((heads & FRL_DEV_TILED) && frl_dev_tiled(net, m)) {
        tiled_forward(net, rows, x, f, heads, m);
        return;
    }
    if (n->shared)
        x = frl_dev_mlp_forward(net, &n->trunk, rows, x, f->trunk_acts);
    f->out = heads & FRL_DEV_ACTOR
                 ? frl_dev_mlp_forward(net, &n->actor, rows, x, f->actor_acts) : NULL;
    f->value = heads & FRL_DEV_CRITIC
                   ? frl_dev_mlp_forward(net, &n->critic, rows, x, f->critic_acts) : NULL;
}

/* Layer l's delta (g times act'(y), into delta; g itself for a linear layer) and its
 * weight and bias gradients. */
static void layer_grads(const frl_dev_net *net, const frl_mlp *m, int32_t l, float *grads,
                        int32_t rows, const float *in, const float *y, const float *g,
                        float *delta)
{
    const frl_dev_ops *o = net->ops;
    int32_t n = m->width[l + 1], k = m->width[l], a = layer_act(m, l);
    float *dw = grads + m->off_w[l], *db = grads + m->off_b[l];
    if (!net->unfused) {
        o->wgrad(net->d, rows, n, k, in, g, y, a, delta, dw, db, 0);
        return;
    }
    if (a != 0) {
        o->act_bwd(net->d, (int64_t)rows * n, y, g, delta, a);
        g = delta;
    }
    o->linear_bwd_weight(net->d, rows, n, k, in, g, dw, db, 0);
}

/* Backward through one MLP from g = dL/d(its output) [rows x out] (read, not written),
 * writing its gradients and, when dx is not NULL, dL/dx into dx. wa and wb are work
 * buffers of [rows x widest] (wb may be NULL for one layer): each layer's delta goes to
 * the one g is not in, its input gradient (the next layer's g) to the one its delta is
 * not in. */
static void mlp_backward(const frl_dev_net *net, const frl_mlp *m, float *grads, int32_t rows,
                         const float *x, float *acts, const float *g, float *wa, float *wb,
                         float *dx)
{
    for (int32_t l = m->layers - 1; l >= 0; l--) {
        int32_t n = m->width[l + 1], k = m->width[l];
        const float *in = l == 0 ? x : layer_output(m, acts, rows, l - 1);
        float *delta = layer_act(m, l) ? (g == wa ? wb : wa) : NULL;
        layer_grads(net, m, l, grads, rows, in, layer_output(m, acts, rows, l), g, delta);
        const float *dl = delta ? delta : g;
        float *to = l > 0 ? (dl == wa ? wb : wa) : dx;
        if (to)
            net->ops->linear_bwd_input(net->d, rows, n, k, dl, net->params + m->off_w[l], to);
        g = to;
    }
}

/* The encoder's backward from the networks' input gradient d_in [rows x in_w]: over a
 * mixed space its feature columns first, packed into spare [rows x cnn.out_w] (the
 * vector, an observation, gets no gradient). */
static void encoder_backward(const frl_dev_net *net, float *grads, int32_t rows,
                             frl_dev_pass *f, float *d_in, float *spare)
{
    const frl_net_desc *n = &net->desc;
    if (n->vec_w) {
        size_t fb = sizeof(float), fw = (size_t)n->cnn.out_w;
        net->ops->copy2d(net->d, rows, fb * fw, spare, fb * fw, d_in,
                         fb * (size_t)frl_net_desc_in_w(n));
        d_in = spare;
    }
    enc_backward(net, grads, rows, f, d_in);
}

/* Separate networks, each from its own output's gradient (by the tiled op when the
 * forward was tiled); with an encoder, their input gradients summed are its features'. */
static void separate_backward(const frl_dev_net *net, float *grads, int32_t rows,
                              frl_dev_pass *f)
{
    const frl_net_desc *n = &net->desc;
    const frl_dev_ops *o = net->ops;
    frl_dev_fused_mlp m[2];
    if (f->tiled && frl_dev_tiled(net, m)) {
        float *acts[2] = {f->actor_acts, f->critic_acts}, *dx[2] = {f->d_in, f->d_in2};
        const float *g[2] = {f->d_out, f->d_value};
        o->mlp_backward_tiled(net->d, rows, 2, m, net->params, f->in, acts, g,
                              n->cnn.layers ? dx : NULL, grads);
    } else {
        mlp_backward(net, &n->actor, grads, rows, f->in, f->actor_acts, f->d_out, f->dy,
                     f->scratch, f->d_in);
        mlp_backward(net, &n->critic, grads, rows, f->in, f->critic_acts, f->d_value, f->dy,
                     f->scratch, f->d_in2);
    }
    if (n->cnn.layers) {
        o->axpy(net->d, (int64_t)rows * frl_net_desc_in_w(n), 1.0f, f->d_in2, f->d_in);
        encoder_backward(net, grads, rows, f, f->d_in, f->d_in2);
    }
}

void frl_dev_net_backward(const frl_dev_net *net, float *grads, int32_t rows, frl_dev_pass *f)
{
    const frl_net_desc *n = &net->desc;
    if (!n->shared) {
        separate_backward(net, grads, rows, f);
        return;
    }
    /* The heads' input gradients meet in the trunk's output: dh += scratch. */
    int32_t tw = frl_mlp_out(&n->trunk);
    const float *h = f->trunk_acts + (size_t)rows * (size_t)(n->trunk.act_width - tw);
    mlp_backward(net, &n->actor, grads, rows, h, f->actor_acts, f->d_out, f->dy, NULL, f->dh);
    mlp_backward(net, &n->critic, grads, rows, h, f->critic_acts, f->d_value, f->dy, NULL,
                 f->scratch);
    net->ops->axpy(net->d, (int64_t)rows * tw, 1.0f, f->scratch, f->dh);
    mlp_backward(net, &n->trunk, grads, rows, f->in, f->trunk_acts, f->dh, f->dy, f->scratch,
                 f->d_in);
    if (n->cnn.layers)
        encoder_backward(net, grads, rows, f, f->d_in, f->d_in2);
}
