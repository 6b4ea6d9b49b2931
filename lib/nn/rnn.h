/* Recurrent cores: one GRU or LSTM layer (PyTorch's gate order and parameters), stepped
 * one row batch at a time for acting, or run over a [T x B] sequence and back through
 * time for learning. The matrix products are the kernel table's linear kernels; the
 * gates are its gru_* and lstm_* kernels.
 *
 * State: a row of frl_rnn_state_w floats, h (GRU), or h then c (LSTM). A reset flag of
 * a row zeroes its state before that step: the episode starting there sees none of the
 * one before, and no gradient flows back across it.
 *
 * Like an MLP, a core owns no memory: its parameters sit at param_base in the policy's
 * flat vector: wx [in x G h] and wh [h x G h] (transposed, as the linear kernels take
 * them), then bx and bh [G h], with G = 3 (GRU: r, z, n) or 4 (LSTM: i, f, g, o). */
#ifndef FRL_NN_RNN_H
#define FRL_NN_RNN_H

#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"
#include "nn/kernels.h"

typedef enum frl_rnn_kind {
    FRL_RNN_NONE = 0,
    FRL_RNN_GRU,
    FRL_RNN_LSTM
} frl_rnn_kind;

typedef struct frl_rnn {
    frl_rnn_kind kind;
    int32_t in, h;
    int32_t gates;                       /* G: 3 or 4 */
    size_t off_wx, off_wh, off_bx, off_bh;
    size_t param_base, num_params;
} frl_rnn;

void frl_rnn_init(frl_rnn *r, frl_rnn_kind kind, int32_t in, int32_t h, size_t param_base);

/* Floats of state per row: h (GRU) or 2 h (LSTM). */
static inline int32_t frl_rnn_state_w(const frl_rnn *r)
{
    return r->kind == FRL_RNN_LSTM ? 2 * r->h : r->h;
}

/* Orthogonal wx and wh (each as one matrix, gain 1), zero biases but the gate that
 * keeps the state: the GRU's update gate z starts at keep_bias, the LSTM's forget gate
 * at 1 + keep_bias (1: Jozefowicz et al., 2015, so early gradients are not cut by a
 * half-closed gate). A positive keep_bias starts with a longer memory, which a reward
 * many steps after its cause needs (Tallec and Ollivier's chrono initialisation, as one
 * number). work: frl_rnn_init_work(r) doubles. */
size_t frl_rnn_init_work(const frl_rnn *r);
void frl_rnn_init_params(const frl_rnn *r, float *params, float keep_bias, frl_rng *rng,
                         double *work);

/* ---- acting: one step ---- */

/* Floats of work for a step of rows rows. */
size_t frl_rnn_step_floats(const frl_rnn *r, int32_t rows);

/* One step of rows rows: x [rows x in]; state [rows x state_w] is read and replaced (a
 * row with reset[i] != 0 starts from zeros; reset may be NULL); out [rows x h] receives
 * h. work: frl_rnn_step_floats floats, 64-byte aligned. */
void frl_rnn_step(const frl_rnn *r, const frl_kernels *k, const float *params, int32_t rows,
                  const float *x, float *state, const uint8_t *reset, float *out, float *work);

/* ---- learning: a [T x B] sequence ---- */

/* What a forward pass over a sequence keeps for its backward pass, row t * B + b for
 * step t of column b. */
typedef struct frl_rnn_seq {
    int32_t T, B;
    float *gx;        /* [T B x G h]: x wx + bx of every step (one product for all);
                         an LSTM's step adds gh into it, so after the forward pass it
                         holds that core's pre-activation sums */
    float *hp, *cp;   /* [T B x h]: the state each step started from (resets applied);
                         cp: LSTM only (else NULL) */
    float *c;         /* [T B x h]: LSTM's cell after each step (else NULL) */
    float *gates;     /* [T B x (G + 1) h]: the gate kernels' saved values */
    float *out;       /* [T B x h]: h after each step, the core's output */
    float *gh;        /* [B x G h]: the recurrent product of the current step */
    /* backward only (else NULL) */
    float *dgx, *dgh; /* [T B x G h]: the pre-activation gradients (an LSTM's are one
                         array: dgh == dgx) */
    float *dh, *dc;   /* [B x h]: dL/dh and dL/dc flowing back into the step */
    float *dhp, *dcp; /* [B x h]: their values for the step before */
} frl_rnn_seq;

/* Floats of a sequence's arrays (training adds the backward ones); each array is
 * rounded up to 16 floats, so in a 64-byte aligned workspace all are aligned. */
size_t frl_rnn_seq_floats(const frl_rnn *r, int32_t T, int32_t B, int training);
void frl_rnn_seq_layout(const frl_rnn *r, int32_t T, int32_t B, int training, float *ws,
                        frl_rnn_seq *s);

/* Forward over x [T B x in] from state0 [B x state_w]; starts [T x B] (may be NULL)
 * flags the steps before which a column's state is zeroed. The outputs are s->out. */
void frl_rnn_seq_forward(const frl_rnn *r, const frl_kernels *k, const float *params,
                         const float *x, const float *state0, const uint8_t *starts,
                         frl_rnn_seq *s);

/* The state after the sequence's last step, [B x state_w]. */
void frl_rnn_seq_final_state(const frl_rnn *r, const frl_rnn_seq *s, float *state);

/* Backward through time given dout = dL/dout [T B x h] (not changed). Gradients flow
 * back across at most bptt steps: from step t into step t - 1 only when t % bptt != 0
 * (bptt >= T: the whole sequence), and never across a start. Parameter gradients are
 * written into grads (accumulate == 0) or added (1); dx [T B x in], if not NULL,
 * receives dL/dx. The forward pass's arrays in s must be intact. */
void frl_rnn_seq_backward(const frl_rnn *r, const frl_kernels *k, const float *params,
                          float *grads, int accumulate, const float *x, const uint8_t *starts,
                          int32_t bptt, const float *dout, float *dx, frl_rnn_seq *s);

#endif
