/* Forward and backward passes of a policy's networks through the device ops. */
#include "cuda/dev_net.h"

size_t frl_dev_pass_floats(const frl_net_desc *n, int32_t rows, int training)
{
    frl_net_shape s = frl_net_desc_shape(n);
    frl_pass_plan w;
    frl_net_pass_plan(&s, rows, training, &w);
    return w.floats;
}

void frl_dev_pass_layout(const frl_net_desc *n, int32_t rows, int training, float *ws,
                         frl_dev_pass *f)
{
    frl_net_shape s = frl_net_desc_shape(n);
    frl_pass_plan w;
    frl_net_pass_plan(&s, rows, training, &w);
    *f = (frl_dev_pass){0};
    f->xn = ws + w.xn;
    f->trunk_acts = n->shared ? ws + w.trunk_acts : NULL;
    f->actor_acts = ws + w.actor_acts;
    f->critic_acts = ws + w.critic_acts;
    if (!training)
        return;
    f->dy = ws + w.dy;
    f->scratch = ws + w.scratch;
    f->d_out = ws + w.d_out;
    f->d_value = ws + w.d_value;
    f->dh = n->shared ? ws + w.dh : NULL;
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

static float *mlp_forward(const frl_dev_net *net, const frl_mlp *m, int32_t rows,
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

void frl_dev_net_forward(const frl_dev_net *net, int32_t rows, const float *obs,
                         frl_dev_pass *f, unsigned heads)
{
    const frl_net_desc *n = &net->desc;
    f->in = obs;
    if (n->obs_norm) {
        net->ops->normalize(net->d, rows, n->obs_w, obs, net->norm_mean, net->norm_inv_std,
                            net->norm_clip, f->xn);
        f->in = f->xn;
    }
    const float *x = f->in;
    if (n->shared)
        x = mlp_forward(net, &n->trunk, rows, x, f->trunk_acts);
    f->out = heads & FRL_DEV_ACTOR ? mlp_forward(net, &n->actor, rows, x, f->actor_acts) : NULL;
    f->value = heads & FRL_DEV_CRITIC ? mlp_forward(net, &n->critic, rows, x, f->critic_acts)
                                      : NULL;
}

/* Backward through one MLP, writing its gradients; dy [rows x widest] holds dL/d(output)
 * and is overwritten, as is scratch; dx (may be NULL) gets dL/dx. */
static void mlp_backward(const frl_dev_net *net, const frl_mlp *m, float *grads, int32_t rows,
                         const float *x, float *acts, float *dy, float *scratch, float *dx)
{
    const frl_dev_ops *o = net->ops;
    float *cur = dy, *next = scratch;
    for (int32_t l = m->layers - 1; l >= 0; l--) {
        int32_t n = m->width[l + 1], kin = m->width[l], a = layer_act(m, l);
        if (a != 0)
            o->act_bwd(net->d, (int64_t)rows * n, layer_output(m, acts, rows, l), cur, cur, a);
        const float *in = l == 0 ? x : layer_output(m, acts, rows, l - 1);
        o->linear_bwd_weight(net->d, rows, n, kin, in, cur, grads + m->off_w[l],
                             grads + m->off_b[l], 0);
        float *to = l > 0 ? next : dx;
        if (to)
            o->linear_bwd_input(net->d, rows, n, kin, cur, net->params + m->off_w[l], to);
        if (l > 0) {
            next = cur;
            cur = to;
        }
    }
}

void frl_dev_net_backward(const frl_dev_net *net, float *grads, int32_t rows, frl_dev_pass *f)
{
    const frl_net_desc *n = &net->desc;
    const frl_dev_ops *o = net->ops;
    size_t fb = sizeof(float);
    if (!n->shared) {
        o->copy(net->d, f->dy, f->d_out, fb * (size_t)rows * (size_t)n->out_w);
        mlp_backward(net, &n->actor, grads, rows, f->in, f->actor_acts, f->dy, f->scratch, NULL);
        o->copy(net->d, f->dy, f->d_value, fb * (size_t)rows);
        mlp_backward(net, &n->critic, grads, rows, f->in, f->critic_acts, f->dy, f->scratch,
                     NULL);
        return;
    }
    /* The heads' input gradients meet in the trunk's output: dh + scratch. */
    int32_t tw = frl_mlp_out(&n->trunk);
    const float *h = f->trunk_acts + (size_t)rows * (size_t)(n->trunk.act_width - tw);
    o->copy(net->d, f->dy, f->d_out, fb * (size_t)rows * (size_t)n->out_w);
    mlp_backward(net, &n->actor, grads, rows, h, f->actor_acts, f->dy, NULL, f->dh);
    o->copy(net->d, f->dy, f->d_value, fb * (size_t)rows);
    mlp_backward(net, &n->critic, grads, rows, h, f->critic_acts, f->dy, NULL, f->scratch);
    o->copy(net->d, f->dy, f->dh, fb * (size_t)rows * (size_t)tw);
    o->axpy(net->d, (int64_t)rows * tw, 1.0f, f->scratch, f->dy);
    mlp_backward(net, &n->trunk, grads, rows, f->in, f->trunk_acts, f->dy, f->scratch, NULL);
}
