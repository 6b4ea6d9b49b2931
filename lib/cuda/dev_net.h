/* A policy's networks on a device: the forward pass for acting and learning and the
 * backward pass for the learner, over the device-ops table (lib/cuda/dev_ops.h). The
 * same workspace (lib/nn/net.h, the one layout for both) and the same order of operations
 * as the CPU's (lib/rl/policy.c, lib/nn/mlp.c), so the host build of the ops reproduces
 * the CPU policy. */
#ifndef FRL_CUDA_DEV_NET_H
#define FRL_CUDA_DEV_NET_H

#include "cuda/dev_ops.h"
#include "nn/net.h"

typedef struct frl_dev_net {
    const frl_dev_ops *ops;
    frl_dev *d;
    frl_net_desc desc;
    float *params;               /* device [num_params] */
    float *norm_mean, *norm_inv_std; /* device [obs_w] (obs_norm only) */
    float norm_clip;
    /* FRL_CUDA_FUSE=0: the learner's passes and gathers layer by layer and array by
     * array (act_bwd, cuBLAS products, gather), as before the tiled ops, wgrad and
     * gather_fields: for benchmarks that compare the two. */
    int unfused;
} frl_dev_net;

/* Device buffers of one pass over rows rows (like frl_pass). */
typedef struct frl_dev_pass {
    float *xn;                   /* normalised observations (obs_norm only) */
    const float *in;             /* what the networks read */
    float *trunk_acts, *actor_acts, *critic_acts;
    float *out, *value;          /* set by the forward pass */
    /* backward only */
    float *d_out, *d_value, *dy, *scratch, *dh;
    /* a pixel encoder (desc.cnn): the stored activations and one block's patch matrix;
     * training: the features' gradient from each network (d_in, d_in2) and the encoder's
     * two gradient buffers. NULL without one. */
    float *enc_acts, *enc_work, *d_in, *d_in2, *enc_grad;
    float *join;        /* a mixed row's features and vector [rows x in_w] (NULL without) */
    float *vec;         /* with obs_norm: its vector gathered and normalised [2 x rows x vec_w] */
    int tiled;          /* the forward ran both networks by the tiled ops: so does the backward */
} frl_dev_pass;

/* Heads of frl_dev_net_forward; FRL_DEV_TILED: the learner's passes, by the tiled ops
 * (dev_ops.h's mlp_*_tiled) where the networks fit them (frl_dev_tiled). */
enum { FRL_DEV_ACTOR = 1u, FRL_DEV_CRITIC = 2u, FRL_DEV_TILED = 4u };

/* src as the fused and tiled kernels read it, each layer's activation spelled out: 0 when
 * it has more than FRL_DEV_FUSED_MAX_LAYERS layers or a layer (input included) wider
 * than max_width. */
int frl_dev_plan_mlp(const frl_mlp *src, int32_t max_width, frl_dev_fused_mlp *dst);
/* 1 when the learner's passes over net run by the tiled ops (m[0] the actor, m[1] the
 * critic, filled): separate networks, each at most FRL_DEV_TILE_MAX_WIDTH wide, their
 * parameters side by side, and FRL_CUDA_FUSE not 0. */
int frl_dev_tiled(const frl_dev_net *net, frl_dev_fused_mlp m[2]);

/* Floats of a pass's workspace for rows rows (training: with the backward buffers), and
 * the pass's buffers inside ws (device memory): frl_net_pass_plan's. */
size_t frl_dev_pass_floats(const frl_net_desc *n, int32_t rows, int training);
void frl_dev_pass_layout(const frl_net_desc *n, int32_t rows, int training, float *ws,
                         frl_dev_pass *f);

/* What the networks read of rows device observations (into f->in, and returned): the
 * observations, normalised (obs_norm) into f->xn, or a pixel encoder's features (and a
 * mixed row's vector after them). */
const float *frl_dev_net_input(const frl_dev_net *net, int32_t rows, const float *obs,
                               frl_dev_pass *f);
/* One MLP over x [rows x m's input], each layer's output into acts (one after the other,
 * [rows x width[l + 1]] each); returns the last layer's. m has at least one layer. */
float *frl_dev_mlp_forward(const frl_dev_net *net, const frl_mlp *m, int32_t rows,
                           const float *x, float *acts);
/* Forward rows device observations through the heads named (a shared trunk always
 * runs). */
void frl_dev_net_forward(const frl_dev_net *net, int32_t rows, const float *obs,
                         frl_dev_pass *f, unsigned heads);
/* Every network's gradient written into grads (device [num_params]; the log-std's is
 * the caller's) from f->d_out [rows x out_w] and f->d_value [rows]. */
void frl_dev_net_backward(const frl_dev_net *net, float *grads, int32_t rows,
                          frl_dev_pass *f);

#endif
