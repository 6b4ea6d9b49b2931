/* Recurrent policies (policy.core gru or lstm): the passes of a policy whose towers are
 * an encoder (the hidden layers; none when policy.hidden is empty) and a core, with
 * one-layer actor and critic heads on the cores' outputs. A convolutional encoder
 * (policy.encoder nature or simple) runs once before the towers, its features their
 * input; its gradient is the towers' input gradients summed. One tower feeds both heads
 * (policy.shared=true), or the actor and the critic have one each.
 *
 * A row's state is the towers' core states side by side (the actor's, then the
 * critic's): p->state_w floats. The memoryless passes are in policy.h. */
#ifndef FRL_RL_POLICY_RNN_H
#define FRL_RL_POLICY_RNN_H

#include "nn/rnn.h"
#include "rl/policy.h"

/* Lay out the towers and heads from the settings; returns the parameters before the
 * log-stds (policy.c's layout calls it when policy.core is set). */
size_t frl_policy_rnn_layout(frl_policy *p);

/* The widest layer of any tower or head (the backward buffers' width). */
int32_t frl_policy_rnn_widest(const frl_policy *p);

/* Initialise the towers' and heads' parameters (as init_params does for an MLP). */
void frl_policy_rnn_init_params(const frl_policy *p, frl_rng *r, double *work);
size_t frl_policy_rnn_init_work(const frl_policy *p);

/* ---- acting: one step ---- */

size_t frl_policy_rnn_step_floats(const frl_policy *p, int32_t rows);

/* Rows rows of obs one step on: state [rows x state_w] is read and replaced in place
 * (reset[i] != 0, reset may be NULL, zeroes row i's first). *out [rows x out_w] and,
 * with FRL_HEAD_CRITIC in heads, *value [rows] point into ws. Every tower's core runs
 * whatever heads asks, since each state must move on. norm: the normaliser to apply. */
void frl_policy_rnn_step(const frl_policy *p, const float *params, const frl_obsnorm *norm,
                         int32_t rows, const float *obs, float *state, const uint8_t *reset,
                         float *ws, unsigned heads, float **out, float **value);

/* ---- learning: [T x B] sequences ---- */

typedef struct frl_rpass {
    int32_t T, B;
    const frl_obsnorm *norm;
    float *xn;
    float *cnn_acts, *cnn_work;      /* a conv encoder's activations and patches */
    const float *in;                 /* what the encoders read */
    float *enc_acts[2];
    const float *enc_out[2];         /* what the cores read */
    frl_rnn_seq seq[2];
    float *state0;                   /* [B x widest core state]: one tower's at a time */
    float *actor_acts, *critic_acts;
    float *out, *value;              /* [T B x out_w], [T B] */
    /* training */
    float *d_out, *d_value;          /* set by the loss; overwritten by backward */
    float *dy, *scratch;             /* [T B x widest] */
    float *dcore[2];                 /* [T B x h]: dL/d(core output) */
    float *d_in, *d_in2, *cnn_grad;  /* a conv encoder's: dL/d(features) of each tower,
                                        and the stack's gradient scratch */
} frl_rpass;

size_t frl_policy_rnn_seq_floats(const frl_policy *p, int32_t T, int32_t B, int training);
void frl_policy_rnn_seq_layout(const frl_policy *p, int32_t T, int32_t B, int training,
                               float *ws, frl_rpass *f);

/* Forward over obs [T B x obs_w] (row t * B + b) from state0 [B x state_w]; starts
 * [T x B] (may be NULL) zeroes a column's state before a step. */
void frl_policy_rnn_seq_forward(const frl_policy *p, const float *params, const float *obs,
                                const float *state0, const uint8_t *starts, frl_rpass *f,
                                unsigned heads);

/* The state after the last step, [B x state_w]. */
void frl_policy_rnn_seq_final_state(const frl_policy *p, const frl_rpass *f, float *state);

/* The gradient given f->d_out and f->d_value, written into grads (every network's
 * parameters, not the log-std), truncated every bptt steps (see nn/rnn.h). */
void frl_policy_rnn_seq_backward(const frl_policy *p, const float *params, float *grads,
                                 const uint8_t *starts, int32_t bptt, frl_rpass *f);

#endif
