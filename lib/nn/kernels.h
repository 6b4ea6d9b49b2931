/* CPU compute kernels of the networks, chosen once at run time by CPU features.
 *
 * Layout: activations are row-major [rows x features], contiguous. A linear layer's
 * weights are stored transposed, wt[in x out] row-major, so a forward pass is a plain
 * row-major GEMM and the SIMD kernels vectorise over output features.
 *
 * Determinism contract (every implementation): the value computed for one output
 * element depends only on the inputs of that element, never on m, on the row's
 * position or on how rows are blocked. Reductions over k (forward, input gradient)
 * and over rows (weight gradient) run in increasing index order. So splitting a batch
 * into shards changes no result, and a run never depends on the thread count.
 *
 * Shapes: m, n and k are >= 0; any of them may be 0 (tests/nn cover each). An empty
 * output is not touched, and an empty sum is +0, where every chain starts: so k == 0
 * gives y = act(b) (act(0) without b), n == 0 in linear_bwd_input gives dx = +0, and
 * m == 0 leaves dwt and db as they are (accumulate) or sets them to +0 (=). */
#ifndef FRL_NN_KERNELS_H
#define FRL_NN_KERNELS_H

#include <stdint.h>

typedef enum frl_nn_act {
    FRL_NN_LINEAR = 0, /* identity */
    FRL_NN_TANH,
    FRL_NN_RELU,
    FRL_NN_ELU       /* alpha = 1 */
} frl_nn_act;

/* An unpadded 2D convolution's shape for conv_fwd (nn/conv.h holds the layer). */
typedef struct frl_conv_dims {
    int32_t in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t kh, kw, stride;
} frl_conv_dims;

/* The per-step constants of an Adam update (see frl_adam_update). */
typedef struct frl_adam_coef {
    float gscale;  /* gradient scale from norm clipping (1: none) */
    float b1, b2;  /* moment decays */
    float step;    /* lr / (1 - b1^t) */
    float rbc2;    /* 1 / sqrt(1 - b2^t) */
    float eps;
} frl_adam_coef;

typedef struct frl_kernels {
    const char *name; /* "scalar", "avx2", "avx512" */

    /* y[m x n] = act(x[m x k] . wt[k x n] + b[n]); b may be NULL (no bias). */
    void (*linear_fwd)(int32_t m, int32_t n, int32_t k, const float *x, const float *wt,
                       const float *b, float *y, frl_nn_act act);

    /* dx[m x k] = dy[m x n] . wt[k x n]^T  (overwrites dx). */
    void (*linear_bwd_input)(int32_t m, int32_t n, int32_t k, const float *dy,
                             const float *wt, float *dx);

    /* dwt[k x n] += x[m x k]^T . dy[m x n];  db[n] += column sums of dy (db may be NULL).
     * accumulate == 0: = instead of += (the same bits as += into zeroed arrays), which
     * spares a backward pass the zeroing of its gradient buffer. */
    void (*linear_bwd_weight)(int32_t m, int32_t n, int32_t k, const float *x,
                              const float *dy, float *dwt, float *db, int accumulate);

    /* dx[i] = dy[i] * act'(given y[i] = act(pre-activation)), in place allowed (dx == dy).
     * tanh: 1 - y^2; relu: y > 0; elu: y > 0 ? 1 : y + 1. act != FRL_NN_LINEAR. */
    void (*act_bwd)(int64_t n, const float *y, const float *dy, float *dx, frl_nn_act act);

    /* y = act(conv(x) + b) over `images` NHWC images without padding, with wt[(kh kw
     * in_c) x out_c] (im2col's patch order): for every output element the table's own
     * linear_fwd chain over the patch (ki, kj, channel) in order, read from the image
     * where it lies instead of from a patch matrix, so the bits are those of im2col and
     * linear_fwd, which nn/conv.c uses for padded layers and the backward pass. 1 when
     * done; 0, with y untouched, when the table leaves the shape to im2col (an output
     * too small for its register tiles, where a patch matrix over several images fills
     * them). */
    int (*conv_fwd)(const frl_conv_dims *d, int32_t images, const float *x, const float *wt,
                    const float *b, float *y, frl_nn_act act);
    /* The weight and bias gradients of the same convolution, dwt[(kh kw in_c) x out_c]
     * (+)= patches^T . dy and db (+)= column sums of dy (db may be NULL), dy being
     * [images out_h out_w x out_c]: linear_bwd_weight's chains over the positions in
     * order with the patches read where they lie, so the bits are those of im2col and
     * linear_bwd_weight. 1 when done; 0, nothing written, when the table leaves the
     * shape to them (outputs narrower than a vector, which linear_bwd_weight packs). */
    int (*conv_bwd_weight)(const frl_conv_dims *d, int32_t images, const float *x,
                           const float *dy, float *dwt, float *db, int accumulate);
    /* dx += the input gradient of the same convolution, with wtt holding wt's blocks
     * transposed, one per kernel position ((kh kw) blocks of out_c x in_c, the table's
     * transpose of each in_c x out_c block): each patch gradient element is
     * linear_bwd_input's chain over out_c, added to dx in the order of the positions,
     * so the bits are those of linear_bwd_input and col2im onto the same dx (nn/conv.c
     * zeroes it first). 1 when done; 0, dx untouched, when the table leaves the shape
     * to them (fewer channels than a vector). */
    int (*conv_bwd_input)(const frl_conv_dims *d, int32_t images, const float *dy,
                          const float *wtt, float *dx);

    /* dst[cols x rows] = src[rows x cols]^T (a copy: every table gives the same bits). */
    void (*transpose)(int32_t rows, int32_t cols, const float *src, float *dst);

    /* sum of x[i]^2, in double. Its order is the table's own (fixed, so a run is
     * repeatable), so tables differ by rounding only. */
    double (*sum_squares)(int64_t n, const float *x);

    /* Adam on n parameters: with gs = g * gscale, m = b1 m + (1 - b1) gs,
     * v = b2 v + (1 - b2) gs gs, p -= step m / (sqrt(v) rbc2 + eps), each operation
     * rounded as written (no FMA), so every table gives the same bits.
     *
     * A new m or v below FLT_MIN in magnitude is stored as +0 (NaN stays NaN), as the
     * CPU's flush-to-zero mode would store it: a dead ReLU unit's gradient is exactly
     * 0, its m decays by b1 into the subnormals and sticks there (0.9 x 4 ulps rounds
     * back to 4 ulps), and every later step on it pays the CPU's subnormal assists:
     * that was 57% of DQN's learner time on CartPole with the zoo's settings. A moment
     * of that size moves no parameter. A new v above FLT_MAX (a finite gradient beyond
     * ~1e19 squares to infinity) is stored as FLT_MAX: an infinite v would freeze its
     * parameter for good while the weights stayed finite, and no save could keep the
     * state; a non-finite gradient still reaches the parameter (the trainer's
     * divergence check). */
    void (*adam)(int64_t n, float *p, const float *g, float *m, float *v,
                 const frl_adam_coef *c);

    /* The elementwise parts of the recurrent cores (nn/rnn.h), PyTorch's gate order, one
     * row of h units at a time; sig(x) = 1 / (1 + e^-x), computed without cancellation
     * on either side (e^-|x| over 1 + e^-|x| for x < 0), and tanh: every table is
     * within 4 ulps of both (sig below x = -87 gives sig(-87), 1.6e-38, never a
     * subnormal; NaN stays NaN). The forward kernels of the tables differ by those ulps
     * as they propagate, not bit for bit; the backward kernels run the scalar table's
     * operations in its order without FMA, so every table gives the same bits. In place
     * is allowed where an output and an input are the same array of the same shape
     * (hout == hp, ...).
     *
     * GRU forward: gx = x.Wx + bx and gh = hp.Wh + bh are [rows x 3h] (blocks r, z, n);
     * r = sig(gx_r + gh_r), z = sig(gx_z + gh_z), n = tanh(gx_n + r gh_n),
     * hout = (1 - z) n + z hp. gates [rows x 4h] keeps r, z, n and gh_n for backward. */
    void (*gru_fwd)(int32_t rows, int32_t h, const float *gx, const float *gh,
                    const float *hp, float *hout, float *gates);
    /* GRU backward given dh = dL/dhout: dgx, dgh [rows x 3h] the gradients of the
     * pre-activation sums (dgx_n = da_n, dgh_n = da_n r; the r and z blocks are equal),
     * and dhp [rows x h] = dh z, the part of dL/dhp that does not pass through Wh. */
    void (*gru_bwd)(int32_t rows, int32_t h, const float *gates, const float *hp,
                    const float *dh, float *dgx, float *dgh, float *dhp);
    /* LSTM forward: g = x.Wx + bx + hp.Wh + bh is [rows x 4h] (blocks i, f, g, o);
     * c = sig(f) cp + sig(i) tanh(g), hout = sig(o) tanh(c). gates [rows x 5h] keeps the
     * four activated gates and tanh(c). */
    void (*lstm_fwd)(int32_t rows, int32_t h, const float *g, const float *cp, float *hout,
                     float *cout, float *gates);
    /* LSTM backward given dh = dL/dhout and dc = dL/dcout from later steps: dg
     * [rows x 4h] the pre-activation gradients, dcp [rows x h] = dL/dcp. */
    void (*lstm_bwd)(int32_t rows, int32_t h, const float *gates, const float *cp,
                     const float *dh, const float *dc, float *dg, float *dcp);
} frl_kernels;

/* The table for this CPU (the fastest one its features allow), chosen on first use;
 * thread-safe. FRL_KERNELS=scalar|avx2|avx512 in the environment forces a table the
 * CPU supports (for tests and benchmarks). */
const frl_kernels *frl_kernels_get(void);

/* Every table built into this library, NULL-terminated, and whether this CPU can run
 * one of them. Tests compare each runnable table against the scalar one. */
const frl_kernels *const *frl_kernels_all(void);
int frl_kernels_supported(const frl_kernels *k);

/* Internal, for tests and benchmarks: the table that FRL_KERNELS=name would choose.
 * NULL or "" gives the fastest table this CPU runs; a name that is unknown or that
 * this CPU cannot run gives that same table (never one that would crash). Pure: it
 * changes nothing, so it can be called after frl_kernels_get() has chosen. */
const frl_kernels *frl_kernels_select(const char *name);

#endif
