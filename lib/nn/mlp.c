/* MLP forward and backward passes over the kernel table. */
#include <string.h>

#include "nn/mlp.h"

void frl_mlp_init(frl_mlp *m, int32_t in, const int32_t *hidden, int32_t nh, int32_t out,
                  frl_nn_act act, size_t param_base)
{
    memset(m, 0, sizeof *m);
    m->width[0] = in;
    for (int32_t i = 0; i < nh; i++)
        m->width[i + 1] = hidden[i];
    m->layers = nh + (out > 0);
    if (out > 0)
        m->width[m->layers] = out;
    m->act = act;
    m->activate_last = out == 0;
    m->param_base = param_base;
    size_t off = param_base;
    m->max_width = in;
    for (int32_t l = 0; l < m->layers; l++) {
        m->off_w[l] = off;
        off += (size_t)m->width[l] * (size_t)m->width[l + 1];
        m->off_b[l] = off;
        off += (size_t)m->width[l + 1];
        m->act_width += m->width[l + 1];
        if (m->width[l + 1] > m->max_width)
            m->max_width = m->width[l + 1];
    }
    m->num_params = off - param_base;
}

static frl_nn_act layer_act(const frl_mlp *m, int32_t l)
{
    return (l + 1 < m->layers || m->activate_last) ? m->act : FRL_NN_LINEAR;
}

float *frl_mlp_forward(const frl_mlp *m, const frl_kernels *k, const float *params,
                       int32_t rows, const float *x, float *acts)
{
    const float *in = x;
    float *y = acts;
    for (int32_t l = 0; l < m->layers; l++) {
        y = l == 0 ? acts : y + (size_t)rows * (size_t)m->width[l];
        k->linear_fwd(rows, m->width[l + 1], m->width[l], in, params + m->off_w[l],
                      params + m->off_b[l], y, layer_act(m, l));
        in = y;
    }
    return y;
}

/* Where layer l's output starts in acts. */
static const float *layer_output(const frl_mlp *m, const float *acts, int32_t rows, int32_t l)
{
    size_t off = 0;
    for (int32_t i = 0; i < l; i++)
        off += (size_t)rows * (size_t)m->width[i + 1];
    return acts + off;
}

void frl_mlp_weights_out_in(const frl_mlp *m, const frl_kernels *k, const float *params,
                            float *w_out_in)
{
    for (int32_t l = 0; l < m->layers; l++)
        k->transpose(m->width[l], m->width[l + 1], params + m->off_w[l], w_out_in + m->off_w[l]);
}

/* dx[rows x kin] = dy[rows x n] . W, from wt[kin x n] or from W[n x kin] itself. */
static void input_grad(const frl_mlp *m, const frl_kernels *k, const float *params,
                       const float *w_out_in, int32_t l, int32_t rows, const float *dy,
                       float *dx)
{
    const int32_t n = m->width[l + 1], kin = m->width[l];
    if (w_out_in)
        k->linear_fwd(rows, kin, n, dy, w_out_in + m->off_w[l], NULL, dx, FRL_NN_LINEAR);
    else
        k->linear_bwd_input(rows, n, kin, dy, params + m->off_w[l], dx);
}

void frl_mlp_backward(const frl_mlp *m, const frl_kernels *k, const float *params,
                      const float *w_out_in, float *grads, int accumulate, int32_t rows,
                      const float *x, const float *acts, float *dy, float *scratch, float *dx)
{
    float *cur = dy, *next = scratch;
    for (int32_t l = m->layers - 1; l >= 0; l--) {
        int32_t n = m->width[l + 1], kin = m->width[l];
        frl_nn_act a = layer_act(m, l);
        if (a != FRL_NN_LINEAR)
            k->act_bwd((int64_t)rows * n, layer_output(m, acts, rows, l), cur, cur, a);
        const float *in = l == 0 ? x : layer_output(m, acts, rows, l - 1);
        k->linear_bwd_weight(rows, n, kin, in, cur, grads + m->off_w[l], grads + m->off_b[l],
                             accumulate);
        if (l > 0) {
            input_grad(m, k, params, w_out_in, l, rows, cur, next);
            float *t = cur;
            cur = next;
            next = t;
        } else if (dx) {
            input_grad(m, k, params, w_out_in, l, rows, cur, dx);
        }
    }
}
