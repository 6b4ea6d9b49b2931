/* A policy's networks as the CPU (lib/rl/policy.c) and a device (lib/cuda/dev_net.c) both
 * run them: separate actor and critic MLPs over the input, or a shared trunk whose output
 * feeds one-layer heads. The workspace of one pass over them is laid out here, once, so
 * the host and the device cannot disagree on it. */
#ifndef FRL_NN_NET_H
#define FRL_NN_NET_H

#include <stddef.h>
#include <stdint.h>

#include "nn/cnn_plan.h"
#include "nn/mlp.h"
#include "nn/rnn.h"

/* The networks' shapes, as the workspace needs them. */
typedef struct frl_net_shape {
    int32_t in_w;                  /* values per input row the networks read */
    int32_t out_w;                 /* the actor's outputs per row */
    const frl_mlp *trunk;          /* NULL: separate actor and critic */
    const frl_mlp *actor, *critic;
} frl_net_shape;

/* Where each array of one pass over rows rows starts in its workspace, in floats. Each
 * array is rounded up to 64 bytes, so in a workspace aligned to 64 every array is too. */
typedef struct frl_pass_plan {
    size_t xn;                     /* [rows x in_w]: the input as the networks read it */
    size_t trunk_acts;             /* stored activations; trunk: shared only (else 0) */
    size_t actor_acts, critic_acts;
    /* training only (else 0) */
    size_t dy, scratch;            /* [rows x widest layer] each */
    size_t d_out, d_value;         /* [rows x out_w], [rows] */
    size_t dh;                     /* [rows x trunk output]: shared only (else 0) */
    size_t floats;                 /* the workspace's size */
} frl_pass_plan;

/* The plan of a pass over rows rows; training adds the backward arrays. */
void frl_net_pass_plan(const frl_net_shape *n, int32_t rows, int training, frl_pass_plan *plan);

/* The widest layer of any network, input included: the backward buffers' width. */
int32_t frl_net_widest(const frl_net_shape *n);

/* A policy's networks by value, for a device that holds a copy of them (the CUDA plugin's
 * model_create, lib/core/plugin_api.h): the parameters' layout is the CPU policy's. */
typedef struct frl_net_desc {
    int32_t obs_w, out_w, discrete, shared, obs_norm;
    frl_mlp trunk, actor, critic;
    uint64_t log_std_off, num_params;
    int32_t max_rows;              /* the largest batch model_forward is given */
    /* A pixel encoder before the networks (cnn.layers 0: none): then an observation row
     * is obs_w floats holding the image's bytes, and the networks read the encoder's
     * cnn.out_w features. */
    frl_cnn cnn;
    /* A mixed observation's vector part (vec_w > 0, with an encoder): the floats
     * [vec_at, vec_at + vec_w) of each row, joined to the encoder's features. */
    int32_t vec_at, vec_w;
    /* What the actor's outputs are (frl_policy_head numbering): 0 logits or means (an
     * actor-critic), 1 Q-values (the critic empty), 2 a dueling Q's advantages A, the
     * critic its V (Q = V + A - mean A is the caller's: frl_net_dueling_combine). */
    int32_t head;
    /* A recurrent policy (towers 1 or 2, lib/rl/policy_rnn.h): tower i an encoder enc[i]
     * (layers 0: none) and a core core[i] over the input, the actor and the critic
     * one-layer heads over the cores' outputs (tower 0's, and tower 1's for the critic
     * when there are two); such a model steps (the plugin's model_step) with state_w
     * floats of state a row, the towers' core states side by side. 0 towers: an MLP
     * policy (trunk, actor, critic as above). */
    int32_t towers;
    frl_mlp enc[2];
    frl_rnn core[2];
    int32_t state_w;
} frl_net_desc;

/* A dueling Q's outputs: a [rows x n] holds the advantages A and becomes
 * Q = V + A - mean(A), v [rows] the values V (the mean summed in double). */
void frl_net_dueling_combine(int32_t rows, int32_t n, float *a, const float *v);

/* Values per row the networks read: the observation, or the encoder's features (and a
 * mixed row's vector after them). */
static inline int32_t frl_net_desc_in_w(const frl_net_desc *d)
{
    return d->cnn.layers ? d->cnn.out_w + d->vec_w : d->obs_w;
}

/* The shape of d's networks: they read frl_net_desc_in_w values a row (a device takes
 * no discrete observations, so there is no one-hot row). */
static inline frl_net_shape frl_net_desc_shape(const frl_net_desc *d)
{
    frl_net_shape s = {frl_net_desc_in_w(d), d->out_w, d->shared ? &d->trunk : NULL, &d->actor,
                       &d->critic};
    return s;
}

#endif
