/* Device ops: memory, transfers and the arithmetic of the GPU policy and learner, on
 * one stream of one device. Two implementations behind one table:
 *   ops_cuda.cu  CUDA kernels and cuBLAS (the real plugin, libfastrl-cuda.so.0);
 *   tests/cuda/ops_host.c  plain loops over host memory through the CPU kernel table
 *                (a test double: the test build of the plugin, so the plugin's learner
 *                and the core's dispatch run and are checked on machines without a GPU).
 * The per-element arithmetic of both is lib/nn/dev_math.h.
 *
 * Conventions. Every pointer an op takes is device memory (host memory for ops_host),
 * except where a comment says host. Matrices are row-major and contiguous, as in
 * lib/nn/kernels.h: activations [rows x features], a layer's weights wt[in x out].
 * Ops are enqueued on the context's stream and run in order; they return nothing. The
 * first failure (a launch, cuBLAS, an allocation inside an op) is kept in the context
 * and reported by the next sync, which then clears it: a caller checks once per batch
 * of work, never per op. Internal, like lib/core/plugin_api.h: both sides build from this tree. */
#ifndef FRL_CUDA_DEV_OPS_H
#define FRL_CUDA_DEV_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "nn/cnn_plan.h"
#include "nn/dev_math.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct frl_dev frl_dev; /* one implementation's context: device, stream, handles */

/* A policy's networks as the fused forward reads them (frl_mlp's layout, with each
 * layer's activation spelled out): at most FRL_DEV_FUSED_MAX_WIDTH units a layer, input
 * included, so that a row's activations stay in the block's shared memory. */
enum { FRL_DEV_FUSED_MAX_LAYERS = 9, FRL_DEV_FUSED_MAX_WIDTH = 1024 };
/* mlp_forward_tiled / mlp_backward_tiled: the widest layer, input included. */
enum { FRL_DEV_TILE_MAX_WIDTH = 64 };
/* forward_runs: rows a run (a block) and the widest layer it takes. */
enum { FRL_DEV_RUN_ROWS = 16, FRL_DEV_RUN_MAX_WIDTH = 256 };

typedef struct frl_dev_fused_mlp {
    int32_t layers; /* 0: none (the trunk of a policy without one) */
    int32_t width[FRL_DEV_FUSED_MAX_LAYERS + 1];
    int32_t act[FRL_DEV_FUSED_MAX_LAYERS];
    uint64_t off_w[FRL_DEV_FUSED_MAX_LAYERS], off_b[FRL_DEV_FUSED_MAX_LAYERS];
} frl_dev_fused_mlp;

typedef struct frl_dev_fused {
    int32_t obs_w;
    frl_dev_fused_mlp trunk, actor, critic;
    const float *norm_mean, *norm_inv_std; /* device [obs_w]; NULL: no normalisation */
    float clip;
    /* A population's rows (device [rows], NULL: every row reads params): row r reads its
     * networks from params + members[r] * member_stride, its member's parameter row. */
    const int32_t *members;
    int64_t member_stride;
} frl_dev_fused;

/* One array of gather_fields. */
enum { FRL_DEV_GATHER_MAX = 8, FRL_DEV_GATHER_ROW = 64 };
typedef struct frl_dev_field {
    const void *src;
    void *dst;
    size_t row_bytes;
} frl_dev_field;

/* Adam's per-step constants (frl_adam_coef without the clipping factor, which the adam
 * op computes on the device from the gradient's sum of squares). */
typedef struct frl_dev_adam {
    float b1, b2, step, rbc2, eps;
    double max_norm; /* <= 0: no clipping */
} frl_dev_adam;

typedef struct frl_dev_ops {
    const char *name; /* "cuda" or "host" */

    /* ---- devices ---- */
    /* The number of devices (0 on success, *count >= 1), else a sentence in err. */
    int (*probe)(int32_t *count, char *err, size_t err_size);
    int (*describe)(int32_t index, char *name, size_t name_size, int32_t *cc_major,
                    int32_t *cc_minor, uint64_t *memory_bytes);
    /* A context on device `device` with its own stream; tf32 != 0 lets the products use
     * TensorFloat-32. 0 on success, else err says why. */
    int (*open)(frl_dev **out, int32_t device, int32_t tf32, char *err, size_t err_size);
    void (*close)(frl_dev *d);

    /* ---- memory and transfers ---- */
    /* Device memory (NULL when out of memory); release(NULL) does nothing. */
    void *(*alloc)(frl_dev *d, size_t bytes);
    void (*release)(frl_dev *d, void *p);
    /* Page-locked host memory, from which put and get run asynchronously. */
    void *(*alloc_pinned)(frl_dev *d, size_t bytes);
    void (*release_pinned)(frl_dev *d, void *p);
    /* put: host src to device dst; get: device src to host dst; copy: device to device;
     * zero: bytes of device memory to 0. All on the stream. */
    void (*put)(frl_dev *d, void *dst, const void *src, size_t bytes);
    void (*get)(frl_dev *d, void *dst, const void *src, size_t bytes);
    void (*copy)(frl_dev *d, void *dst, const void *src, size_t bytes);
    void (*zero)(frl_dev *d, void *dst, size_t bytes);
    /* Wait until the stream has run everything enqueued. 0 if all of it succeeded;
     * else the first failure's sentence in err, and the kept failure is cleared (after a
     * sticky CUDA error, an illegal address or a lost device, every later call fails
     * too, until the process ends). */
    int (*sync)(frl_dev *d, char *err, size_t err_size);

    /* ---- the networks (the CPU kernel table's operations, lib/nn/kernels.h) ---- */
    /* y[m x n] = act(x[m x k] . wt[k x n] + b[n]); b may be NULL. act: frl_nn_act. */
    void (*linear_fwd)(frl_dev *d, int32_t m, int32_t n, int32_t k, const float *x,
                       const float *wt, const float *b, float *y, int32_t act);
    /* dx[m x k] = dy[m x n] . wt[k x n]^T (overwrites dx). */
    void (*linear_bwd_input)(frl_dev *d, int32_t m, int32_t n, int32_t k, const float *dy,
                             const float *wt, float *dx);
    /* dwt[k x n] (+)= x[m x k]^T . dy[m x n]; db[n] (+)= column sums of dy (db may be
     * NULL); accumulate 0 writes, 1 adds. */
    void (*linear_bwd_weight)(frl_dev *d, int32_t m, int32_t n, int32_t k, const float *x,
                              const float *dy, float *dwt, float *db, int32_t accumulate);
    /* dx[i] = dy[i] * act'(y[i]) for n elements, y the activation's output; dx may be
     * dy. act != linear. */
    void (*act_bwd)(frl_dev *d, int64_t n, const float *y, const float *dy, float *dx,
                    int32_t act);
    /* Small MLPs over tiles of rows, for the learner: every width, input included, at
     * most FRL_DEV_TILE_MAX_WIDTH and at least 1. m, acts, g and dx are host arrays of
     * nets (1 or 2) entries, one network each, all over the same input x [rows x
     * m[i].width[0]]. Forward: each layer's output into acts[i] (the outputs one after
     * the other, [rows x width[l + 1]] each: dev_net.c's layout). Backward, from the
     * forward's acts and g[i] = dL/d(network i's output): every layer's weight and bias
     * gradient written into grads at the layers' offsets (the networks' parameters
     * must lie side by side), and dL/dx into dx[i] when dx (and dx[i]) is not NULL. Sums
     * in an order of their own (tiles of rows, then the tiles in order). */
    void (*mlp_forward_tiled)(frl_dev *d, int32_t rows, int32_t nets,
                              const frl_dev_fused_mlp *m, const float *params, const float *x,
                              float *const *acts);
    void (*mlp_backward_tiled)(frl_dev *d, int32_t rows, int32_t nets,
                               const frl_dev_fused_mlp *m, const float *params, const float *x,
                               float *const *acts, const float *const *g, float *const *dx,
                               float *grads);
    /* y[i] += alpha * x[i]. */
    void (*axpy)(frl_dev *d, int64_t n, float alpha, const float *x, float *y);
    /* A layer's gradients from the gradient g [m x n] of its output y = act(x . wt + b):
     * delta = g * act'(y) written to delta (act != linear; delta [m x n], not g), or
     * delta = g (act linear; delta is not written and may be NULL); then dwt[k x n]
     * (+)= x[m x k]^T . delta and db[n] (+)= delta's column sums (db may be NULL). What
     * act_bwd then linear_bwd_weight give, in one pass over the rows (a fixed order of
     * its own, so the same bits on every device). */
    void (*wgrad)(frl_dev *d, int32_t m, int32_t n, int32_t k, const float *x, const float *g,
                  const float *y, int32_t act, float *delta, float *dwt, float *db,
                  int32_t accumulate);

    /* ---- the learner ---- */
    /* y = clip((x - mean) / std) per column: mean[width], inv_std[width]. */
    void (*normalize)(frl_dev *d, int32_t rows, int32_t width, const float *x,
                      const float *mean, const float *inv_std, float clip, float *y);
    /* dst row r = src row idx[r], rows of row_bytes bytes (a multiple of 1; any size). */
    void (*gather)(frl_dev *d, int32_t rows, size_t row_bytes, const int32_t *idx,
                   const void *src, void *dst);
    /* gather for each of fields (at most FRL_DEV_GATHER_MAX) narrow arrays with the same
     * idx, in one pass: f (host memory) gives each one's src, dst and row_bytes (at most
     * FRL_DEV_GATHER_ROW bytes). */
    void (*gather_fields)(frl_dev *d, int32_t rows, const int32_t *idx, int32_t fields,
                          const frl_dev_field *f);
    /* GAE (log_ratio NULL, p->vtrace 0) or V-trace over a [T x B] slot, one column per
     * env: frl_dm_gae_column / frl_dm_vtrace_column. p is host memory. */
    void (*advantages)(frl_dev *d, int32_t T, int32_t B, const float *reward,
                       const float *value, const float *log_ratio, const uint8_t *term,
                       const uint8_t *trunc, const uint8_t *reset, const float *bootstrap,
                       const frl_dm_adv_params *p, float *adv, float *ret, uint8_t *valid);
    /* out[r] = log pi(a_r | z_r) - old_lp[r] for rows rows (frl_dm_logp): z [rows x n],
     * actions int32 [rows] (discrete) or float [rows x n]; log_std [n] (box; NULL when
     * discrete). */
    void (*log_ratio)(frl_dev *d, int32_t rows, int32_t n, int32_t discrete, const float *z,
                      const void *actions, const float *log_std, const float *old_lp,
                      float *out);
    /* The minibatch's advantage moments over rows whose valid byte is set, into
     * out[4] (device): mean, 1 / (unbiased std + 1e-8), 1 / count, count; norm_adv 0
     * gives mean 0 and 1 instead of the first two (count 0: 0, 1, 0, 0). */
    void (*moments)(frl_dev *d, int32_t rows, const float *adv, const uint8_t *valid,
                    int32_t norm_adv, float *out);
    /* Per row (frl_dm_row_grad), with adv normalised by moments[0..1] and scale
     * moments[2]: d_z [rows x n], d_value [rows], d_log_std [rows x n] (box; may be NULL
     * for discrete), stats [rows x FRL_DM_STATS]. A row whose valid byte is 0 gets
     * zeros everywhere. s is host memory; moments device. log_std [n] and d_log_std
     * are required for a box head (log_std is NULL for a discrete one). With
     * s->decoupled, each row goes through frl_dm_decouple with its log_ratio (else
     * log_ratio may be NULL). */
    void (*loss_rows)(frl_dev *d, int32_t rows, int32_t n, int32_t discrete,
                      const frl_dm_loss *s, const float *z, const float *value,
                      const void *actions, const float *old_lp, const float *log_ratio,
                      const float *adv,
                      const float *ret, const float *old_v, const uint8_t *valid,
                      const float *log_std, const float *moments, float *d_z,
                      float *d_value, float *d_log_std, float *stats);
    /* out[c] = sum over rows of x[r * cols + c] (summed in double), written. */
    void (*col_sums)(frl_dev *d, int32_t rows, int32_t cols, const float *x, float *out);
    /* *out = sum of x[i]^2 (double, device). */
    void (*sum_squares)(frl_dev *d, int64_t n, const float *x, double *out);
    /* Adam (frl_dm_adam) on n parameters, the gradient scaled by
     * max_norm / (sqrt(*sumsq) + 1e-6) when c->max_norm > 0 and the norm exceeds it
     * (frl_clip_scale). c and sumsq are device memory, read when the op runs, so that a
     * captured update (graph_capture) takes each replay's step constants. */
    void (*adam)(frl_dev *d, int64_t n, float *p, const float *g, float *m, float *v,
                 const frl_dev_adam *c, const double *sumsq);

    /* ---- ordering between streams (roles) ---- */
    /* An event (NULL when none can be made, the reason kept for the next sync). Any
     * context on the same device may record or wait on it. */
    void *(*event_create)(frl_dev *d);
    void (*event_destroy)(frl_dev *d, void *ev);
    /* record: ev completes once everything enqueued on d's stream so far has run.
     * wait: what d's stream runs from now on starts after ev's latest record as of this
     * call. Neither blocks the host. */
    void (*record)(frl_dev *d, void *ev);
    void (*wait)(frl_dev *d, void *ev);
    /* 0 if everything enqueued since the last sync was queued; else the first failure's
     * sentence in err, kept for the next sync too. Never waits for the stream, so a
     * failure while running shows at the next sync only. */
    int (*check)(frl_dev *d, char *err, size_t err_size);

    /* ---- acting at small batches ---- */
    /* The whole forward of rows rows in one kernel, a block per row (normalisation,
     * trunk, actor into out [rows x out_w], and the critic into value [rows] when value
     * is not NULL). obs, out and value may be device memory or page-locked host memory
     * from alloc_pinned (mapped: the kernel reads and writes it over the bus, with no
     * copy op). Widths as frl_dev_fused says. */
    void (*forward_fused)(frl_dev *d, int32_t rows, const frl_dev_fused *p,
                          const float *params, const float *obs, float *out, float *value);
    /* Blocks forward_fused runs a row on: a thread-block cluster of several on GPUs
     * that have them (compute capability 9.0 on), else 1 (slower than the products at
     * every batch size, measured on an H200 with FRL_CUDA_CLUSTERS=0). */
    int32_t (*fused_blocks)(frl_dev *d);
    /* 1 when [p, p + bytes) lies in one block of alloc_pinned (of any context), which
     * kernels may address directly; 0 otherwise. Any thread. */
    int (*mapped)(frl_dev *d, const void *p, size_t bytes);
    /* Rows in runs of at most FRL_DEV_RUN_ROWS rows that share their networks, a block a
     * run, so that each weight a block loads serves every row of its run. With start
     * NULL: one network (params), runs of FRL_DEV_RUN_ROWS consecutive rows, the last
     * one shorter (runs = ceil(rows / FRL_DEV_RUN_ROWS)); this is the forward of a batch
     * of a few dozen to many thousand rows. With start (device [runs + 1]) and member
     * (device [runs]): a population's rows sorted by member, run r being rows
     * [start[r], start[r + 1]) of obs and out with member member[r]'s networks at
     * params + member[r] * p->member_stride (p->members is not read; rows is not read
     * either). The trunk and the actor into out [rows x out_w], and the critic into
     * value [rows] when value is not NULL (its parameters must then lie within each
     * member's row). obs, out and value may be device memory or page-locked host memory
     * from alloc_pinned (read and written over the bus, as forward_fused does). Every
     * width at most FRL_DEV_RUN_MAX_WIDTH. */
    void (*forward_runs)(frl_dev *d, int32_t rows, int32_t runs, const frl_dev_fused *p,
                         const float *params, const int32_t *start, const int32_t *member,
                         const float *obs, float *out, float *value);

    /* ---- graphs ---- */
    /* What enqueue(arg) puts on d's stream, captured once as a graph instead of run (the
     * ops' arguments are fixed at capture: pointers and by-value constants alike); NULL
     * with the reason in err when it cannot be captured (an op that cannot be captured,
     * the host ops, which capture nothing), and then nothing ran and no failure is kept.
     * Every op inside must be capturable: no sync, no allocation, no copy from or to
     * pageable host memory, no event. */
    void *(*graph_capture)(frl_dev *d, void (*enqueue)(void *arg), void *arg, char *err,
                           size_t err_size);
    /* Run the captured work on d's stream, as if its ops were enqueued again. */
    void (*graph_launch)(frl_dev *d, void *graph);
    void (*graph_destroy)(frl_dev *d, void *graph);

    /* ---- a pixel encoder (lib/nn/cnn.h, conv.h: NHWC, patches (ki, kj, channel)) ---- */
    /* x [rows x n->in_h x n->in_w x n->in_c] = the images' bytes / 255, frl_cnn's
     * scaling: a row holds n->frames frames (oldest first), frame j's channels landing
     * at j * c of each pixel's. images: rows row_bytes apart. n is host memory. */
    void (*scale_images)(frl_dev *d, const frl_cnn *n, int32_t rows, const uint8_t *images,
                         size_t row_bytes, float *x);
    /* The patch matrix of batch images x [batch x in_size]: patches [batch * out_h *
     * out_w x patch], zeros where a patch overhangs the padded border. c is host memory. */
    void (*im2col)(frl_dev *d, const frl_conv2d *c, int32_t batch, const float *x,
                   float *patches);
    /* dx [batch x in_size] = each input value's patch gradients summed (written; the
     * order of the sum is fixed, not conv.c's). */
    void (*col2im)(frl_dev *d, const frl_conv2d *c, int32_t batch, const float *dpatches,
                   float *dx);

    /* ---- mixed observations ---- */
    /* rows of row_bytes (a multiple of 4) from src, rows src_pitch bytes apart, to dst,
     * dst_pitch apart (multiples of 4; the two regions do not overlap). */
    void (*copy2d)(frl_dev *d, int32_t rows, size_t row_bytes, void *dst, size_t dst_pitch,
                   const void *src, size_t src_pitch);

    /* ---- recurrent cores (lib/nn/rnn.h) ---- */
    /* One step of a GRU (kind 1) or LSTM (kind 2) cell for rows rows of h units, from
     * gx = x.Wx + bx and gh = hp.Wh + bh [rows x G h] (G = 3 or 4): the new h into hout
     * [rows x h]; an LSTM's new cell into cout from cp [rows x h] (both unused by a GRU:
     * hp [rows x h] is its previous h). frl_dm_gru_unit / frl_dm_lstm_unit. */
    void (*rnn_cell)(frl_dev *d, int32_t kind, int32_t rows, int32_t h, const float *gx,
                     const float *gh, const float *hp, const float *cp, float *hout,
                     float *cout);
} frl_dev_ops;

/* The CUDA implementation; the host one, a test double, is declared in
 * tests/cuda/ops_host.h. */
extern const frl_dev_ops frl_dev_ops_cuda;

#ifdef __cplusplus
}
#endif

#endif
