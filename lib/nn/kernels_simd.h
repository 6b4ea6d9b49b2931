/* The SIMD kernels, written once over a small vector layer and included by
 * kernels_avx2.c and kernels_avx512.c, which define that layer first:
 *
 *   VLEN                       floats per vector
 *   vf, vmask, vbool           vector, lane mask for tails, comparison result
 *   MR_MAIN, NV_MAIN           rows x vectors of the main register tile (wide GEMM)
 *   NV_ROW1, NV_ROW2           vectors per tile when C has only 1 or 2 rows
 *   v_zero v_set1 v_bcast v_load v_store v_load_m v_mask_first
 *   v_store_part(p, n, v)      store the first n lanes (the fast way on this ISA)
 *   v_add v_sub v_mul v_div v_sqrt v_fma(a,b,c)=a*b+c v_fnma(a,b,c)=c-a*b v_min v_max
 *   v_abs v_sign v_or v_gt v_sel(cond, if_true, if_false) v_round v_pow2i
 *   v_load_t4(a, lda, t)       t[c] = column c of the VLEN x 4 block at a (row stride lda)
 *   KERNELS_TABLE, KERNELS_NAME
 *
 * Determinism: every output element is one chain "acc = 0 (or the stored value); for q
 * in order: acc = fma(a_q, b_q, acc)", then "+ bias", then the activation, whichever
 * tile, tail or path computes it. Paths are chosen by n and k (where m picks one, as
 * for bwd_input with a few rows, both run the same chains); tiles differ only in how
 * many chains run side by side. So row blocking and batch splits change no bit. SIMD
 * runs across output columns, or across rows (narrow layers), never across the
 * reduction. */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nn/kernels_impl.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))
#define MR_MAX MR_MAIN
#define NV_MAX (NV_ROW1 > NV_MAIN ? NV_ROW1 : NV_MAIN)
/* Outputs at most this wide use the row-vectorised (narrow) path. */
#define NARROW_MAX 7
/* Stack scratch for packed weight panels: 16 KiB keeps pool threads' stacks safe. */
#define PACK_FLOATS 4096

static inline int32_t min32(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int32_t max32(int32_t a, int32_t b) { return a > b ? a : b; }

/* ---- activations ------------------------------------------------------------- */

/* Cephes' expf reduction: x = n ln2 + r, |r| <= ln2 / 2; sets *t = 2^n and returns
 * expm1(r) = r + r^2 P(r), which cancels nothing. The caller clamps x so that n stays
 * in [-126, 127] (v_pow2i). */
static inline vf v_exp_parts(vf x, vf *t)
{
    const vf n = v_round(v_mul(x, v_set1(1.44269504088896341f)));
    vf r = v_fnma(n, v_set1(0.693359375f), x); /* ln2 in two parts: r is exact-ish */
    r = v_fnma(n, v_set1(-2.12194440e-4f), r);
    vf p = v_set1(1.9875691500e-4f);
    p = v_fma(p, r, v_set1(1.3981999507e-3f));
    p = v_fma(p, r, v_set1(8.3334519073e-3f));
    p = v_fma(p, r, v_set1(4.1665795894e-2f));
    p = v_fma(p, r, v_set1(1.6666665459e-1f));
    p = v_fma(p, r, v_set1(5.0000001201e-1f));
    *t = v_pow2i(n);
    return v_fma(p, v_mul(r, r), r);
}

/* expm1(x) with full relative accuracy near 0: 2^n expm1(r) + (2^n - 1), n = 0 for
 * |x| < ln2 / 2. x is clamped to [-30, 20]: expm1 is -1 in float below -30, and the
 * callers need no more than 20. max/min return their second operand for NaN, so NaN
 * passes through. */
static inline vf v_expm1(vf x)
{
    vf t;
    const vf em1r = v_exp_parts(v_min(v_set1(20.0f), v_max(v_set1(-30.0f), x)), &t);
    return v_fma(t, em1r, v_sub(t, v_set1(1.0f)));
}

/* e^x for x <= 0: 2^n (1 + expm1(r)) in one rounding. x is clamped at -87, where
 * n = -126 and the result (1.6e-38) are still normal floats. NaN passes through. */
static inline vf v_exp_neg(vf x)
{
    vf t;
    const vf em1r = v_exp_parts(v_max(v_set1(-87.0f), x), &t);
    return v_fma(t, em1r, t);
}

/* tanh|x| = e / (e + 2), e = expm1(2|x|): no cancellation anywhere, one division, and
 * the clamp at 2|x| = 20 gives exactly 1 from |x| = 9.1 on (as tanhf does), also for
 * x = +-inf. The sign is put back with a bit operation. */
static inline vf v_tanh(vf x)
{
    const vf ax = v_abs(x);
    const vf e = v_expm1(v_add(ax, ax));
    return v_or(v_div(e, v_add(e, v_set1(2.0f))), v_sign(x));
}

static inline vf v_act(vf v, frl_nn_act act)
{
    switch (act) {
    case FRL_NN_TANH:
        return v_tanh(v);
    case FRL_NN_RELU:
        return v_max(v_zero(), v); /* NaN stays NaN, -0 stays -0 (as in scalar) */
    case FRL_NN_ELU:
        return v_sel(v_gt(v, v_zero()), v, v_expm1(v));
    case FRL_NN_LINEAR:
    default:
        return v;
    }
}

/* In place over a contiguous array, act fixed per instantiation; the tail goes through
 * the same vector code. Four vectors per step: their long dependency chains (exp,
 * division) interleave, which the out-of-order window alone does not manage. */
static ALWAYS_INLINE void act_array_k(float *y, int64_t len, frl_nn_act act)
{
    int64_t i = 0;
    for (; i + 4 * VLEN <= len; i += 4 * VLEN) {
        vf v[4];
        for (int u = 0; u < 4; u++)
            v[u] = v_act(v_load(y + i + u * VLEN), act);
        for (int u = 0; u < 4; u++)
            v_store(y + i + u * VLEN, v[u]);
    }
    for (; i + VLEN <= len; i += VLEN)
        v_store(y + i, v_act(v_load(y + i), act));
    if (i < len) {
        const vmask mk = v_mask_first((int)(len - i));
        v_store_part(y + i, (int)(len - i), v_act(v_load_m(y + i, mk), act));
    }
}

static void act_array(float *y, int64_t len, frl_nn_act act)
{
    switch (act) {
    case FRL_NN_TANH: act_array_k(y, len, FRL_NN_TANH); break;
    case FRL_NN_RELU: act_array_k(y, len, FRL_NN_RELU); break;
    case FRL_NN_ELU: act_array_k(y, len, FRL_NN_ELU); break;
    case FRL_NN_LINEAR:
    default: break;
    }
}

static inline vf v_act_grad(vf y, vf g, frl_nn_act act)
{
    /* The same operations, in the same order, as the scalar table: no FMA here. */
    switch (act) {
    case FRL_NN_TANH:
        return v_mul(g, v_sub(v_set1(1.0f), v_mul(y, y)));
    case FRL_NN_RELU:
        return v_sel(v_gt(y, v_zero()), g, v_zero());
    case FRL_NN_ELU:
        return v_sel(v_gt(y, v_zero()), g, v_mul(g, v_add(y, v_set1(1.0f))));
    case FRL_NN_LINEAR:
    default:
        return g;
    }
}

/* act fixed per instantiation, so the loop has no switch in it. */
static ALWAYS_INLINE void act_bwd_k(int64_t n, const float *y, const float *dy, float *dx,
                                    frl_nn_act act)
{
    int64_t i = 0;
    for (; i + 2 * VLEN <= n; i += 2 * VLEN) {
        const vf g0 = v_act_grad(v_load(y + i), v_load(dy + i), act);
        const vf g1 = v_act_grad(v_load(y + i + VLEN), v_load(dy + i + VLEN), act);
        v_store(dx + i, g0);
        v_store(dx + i + VLEN, g1);
    }
    for (; i + VLEN <= n; i += VLEN)
        v_store(dx + i, v_act_grad(v_load(y + i), v_load(dy + i), act));
    if (i < n) {
        const vmask mk = v_mask_first((int)(n - i));
        const vf g = v_act_grad(v_load_m(y + i, mk), v_load_m(dy + i, mk), act);
        v_store_part(dx + i, (int)(n - i), g);
    }
}

static void act_bwd(int64_t n, const float *y, const float *dy, float *dx, frl_nn_act act)
{
    switch (act) {
    case FRL_NN_TANH: act_bwd_k(n, y, dy, dx, FRL_NN_TANH); break;
    case FRL_NN_RELU: act_bwd_k(n, y, dy, dx, FRL_NN_RELU); break;
    case FRL_NN_ELU: act_bwd_k(n, y, dy, dx, FRL_NN_ELU); break;
    case FRL_NN_LINEAR:
    default: act_bwd_k(n, y, dy, dx, FRL_NN_LINEAR); break;
    }
}

/* ---- wide GEMM: SIMD across the columns of C ----------------------------------
 * C[r][j] (= or +=) sum_q A(r, q) B[q][j] (+ bias[j]), A(r, q) = a[r*a_rs + q*a_cs], so
 * one routine serves x.wt (a_cs = 1), dy.wt^T (wt^T packed) and x^T.dy (a_rs = 1). */
typedef struct wide_args {
    int32_t kdim; /* reduction length */
    const float *a;
    ptrdiff_t a_rs, a_cs;
    const float *b;
    ptrdiff_t ldb;
    float *c;
    ptrdiff_t ldc;
    const float *bias; /* or NULL */
    int beta;          /* 1: chains start from the values in C (accumulate) */
    /* A convolution's reduction in runs of kdim (one a kernel row), A moving on by
     * run_jump more between runs; 0 or 1 run: a plain GEMM. */
    int32_t runs;
    ptrdiff_t run_jump;
    /* The runs repeated over blocks (images), A moving on by block_jump more after each
     * block's last run and B going on where it stopped; 0 or 1: one block. */
    int32_t blocks;
    ptrdiff_t block_jump;
} wide_args;

/* What a tile does to its registers before the store, a constant of each instance of
 * the GEMM (a run-time choice inside the tile costs the registers their place): relu,
 * the same operation as the activation pass, so the same bits; add, C's value plus the
 * finished chain (a product added to C as a separate step, as col2im adds a patch
 * gradient, where beta would start the chain from C and round differently). */
enum { EPI_NONE, EPI_RELU, EPI_ADD };

/* One MR x (NV vectors) register tile; the last vector holds only `tail` columns when
 * `masked`. The arguments that shape it are constants at every call, so the loops
 * unroll and acc lives in registers. Fields are copied to locals: stores through c
 * could alias *g, which would make the compiler reload them. */
static ALWAYS_INLINE void wide_tile(const wide_args *g, int32_t i, int32_t j, int mr,
                                    int nv, int masked, int tail, int epi)
{
    const ptrdiff_t ldc = g->ldc, a_rs = g->a_rs, a_cs = g->a_cs, ldb = g->ldb;
    const int32_t kdim = g->kdim;
    const vmask mk = v_mask_first(masked ? tail : 0);
    vf acc[MR_MAX][NV_MAX];
    float *c = g->c + i * ldc + j;
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++) {
            float *cp = c + r * ldc + v * VLEN;
            if (!g->beta)
                acc[r][v] = v_zero();
            else
                acc[r][v] = masked && v == nv - 1 ? v_load_m(cp, mk) : v_load(cp);
        }
    const float *a = g->a + i * a_rs;
    const float *b = g->b + j;
    const int32_t runs = g->runs > 1 ? g->runs : 1, blocks = g->blocks > 1 ? g->blocks : 1;
    for (int32_t blk = 0; blk < blocks; blk++, a += g->block_jump)
        for (int32_t run = 0; run < runs; run++, a += g->run_jump)
            for (int32_t q = 0; q < kdim; q++) {
                vf bv[NV_MAX];
                for (int v = 0; v < nv; v++)
                    bv[v] = masked && v == nv - 1 ? v_load_m(b + v * VLEN, mk)
                                                  : v_load(b + v * VLEN);
                for (int r = 0; r < mr; r++) {
                    const vf av = v_bcast(a + r * a_rs);
                    for (int v = 0; v < nv; v++)
                        acc[r][v] = v_fma(av, bv[v], acc[r][v]);
                }
                a += a_cs;
                b += ldb;
            }
    if (g->bias)
        for (int v = 0; v < nv; v++) {
            const float *bp = g->bias + j + v * VLEN;
            const vf bb = masked && v == nv - 1 ? v_load_m(bp, mk) : v_load(bp);
            for (int r = 0; r < mr; r++)
                acc[r][v] = v_add(acc[r][v], bb);
        }
    if (epi == EPI_RELU)
        for (int r = 0; r < mr; r++)
            for (int v = 0; v < nv; v++)
                acc[r][v] = v_act(acc[r][v], FRL_NN_RELU);
    if (epi == EPI_ADD)
        for (int r = 0; r < mr; r++)
            for (int v = 0; v < nv; v++) {
                const float *cp = c + r * ldc + v * VLEN;
                acc[r][v] = v_add(masked && v == nv - 1 ? v_load_m(cp, mk) : v_load(cp),
                                  acc[r][v]);
            }
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++) {
            float *cp = c + r * ldc + v * VLEN;
            if (masked && v == nv - 1)
                v_store_part(cp, tail, acc[r][v]);
            else
                v_store(cp, acc[r][v]);
        }
}

/* Rows [0, rows) for the columns [j, j + nv*VLEN): MR_MAIN-row tiles, then the rest. */
static ALWAYS_INLINE void wide_rowblocks(const wide_args *g, int32_t rows, int32_t j, int nv,
                                         int masked, int tail, int epi)
{
    int32_t i = 0;
    for (; i + MR_MAIN <= rows; i += MR_MAIN)
        wide_tile(g, i, j, MR_MAIN, nv, masked, tail, epi);
    switch (rows - i) {
    case 1: wide_tile(g, i, j, 1, nv, masked, tail, epi); break;
    case 2: wide_tile(g, i, j, 2, nv, masked, tail, epi); break;
    case 3: wide_tile(g, i, j, 3, nv, masked, tail, epi); break;
    case 4: wide_tile(g, i, j, 4, nv, masked, tail, epi); break;
    case 5: wide_tile(g, i, j, 5, nv, masked, tail, epi); break;
#if MR_MAIN > 6
    case 6: wide_tile(g, i, j, 6, nv, masked, tail, epi); break;
    case 7: wide_tile(g, i, j, 7, nv, masked, tail, epi); break;
#endif
    default: break;
    }
}

/* C with only mr (1 or 2) rows: wider tiles, so enough chains hide the FMA latency. */
static ALWAYS_INLINE void wide_fewrows(const wide_args *g, int32_t cols, int mr, int nvw,
                                       int epi)
{
    int32_t j = 0;
    for (; j + nvw * VLEN <= cols; j += nvw * VLEN)
        wide_tile(g, 0, j, mr, nvw, 0, 0, epi);
    for (; j + VLEN <= cols; j += VLEN)
        wide_tile(g, 0, j, mr, 1, 0, 0, epi);
    if (j < cols)
        wide_tile(g, 0, j, mr, 1, 1, cols - j, epi);
}

/* C[rows x cols]: column tiles outside, row tiles inside, so a B panel stays in L1
 * while the rows (a chunk the caller keeps small) stream past it. */
static ALWAYS_INLINE void wide_gemm_k(const wide_args *g, int32_t rows, int32_t cols, int epi,
                                       int nv_main)
{
    if (rows <= 0)
        return;
    if (rows == 1) {
        wide_fewrows(g, cols, 1, NV_ROW1, epi);
        return;
    }
    if (rows == 2) {
        wide_fewrows(g, cols, 2, NV_ROW2, epi);
        return;
    }
    int32_t j = 0;
    /* nv_main is a constant: at 1 the next loop does these columns, and this one folds
     * away instead of inlining a second copy of the one-vector tiles. */
    for (; nv_main > 1 && j + nv_main * VLEN <= cols; j += nv_main * VLEN)
        wide_rowblocks(g, rows, j, nv_main, 0, 0, epi);
    for (; j + VLEN <= cols; j += VLEN)
        wide_rowblocks(g, rows, j, 1, 0, 0, epi);
    if (j < cols)
        wide_rowblocks(g, rows, j, 1, 1, cols - j, epi);
}

static void wide_gemm(const wide_args *g, int32_t rows, int32_t cols)
{
    wide_gemm_k(g, rows, cols, EPI_NONE, NV_MAIN);
}

static void wide_gemm_relu(const wide_args *g, int32_t rows, int32_t cols)
{
    wide_gemm_k(g, rows, cols, EPI_RELU, NV_MAIN);
}

/* A convolution's strips take one vector of columns at a time where MR_MAIN rows alone
 * give enough chains to hide the FMA latency (the AVX-512 table's 8): the strip's
 * patches, gathered from up to kh image rows, then come from L1 for every further
 * vector of columns, where a two-vector tile met each of them once, in L2 (bench_conv,
 * AMD Zen 4, AVX-512 table: the first layers' forward +8-13% at batch 256, +0-7% at 32,
 * the others +1-4% or within the noise). The AVX2 table's 6 rows keep two vectors. */
#if MR_MAIN >= 8
#define CONV_NV 1
#else
#define CONV_NV NV_MAIN
#endif

static void conv_gemm(const wide_args *g, int32_t rows, int32_t cols)
{
    wide_gemm_k(g, rows, cols, EPI_NONE, CONV_NV);
}

static void conv_gemm_relu(const wide_args *g, int32_t rows, int32_t cols)
{
    wide_gemm_k(g, rows, cols, EPI_RELU, CONV_NV);
}

/* ---- narrow GEMM: SIMD across rows, for outputs 1..NARROW_MAX wide -------------
 * C(i, c) = act(sum_q a[i*lda + q] B(q, c) + bias[c]), B(q, c) = b[q*b_rs + c*b_cs],
 * C(i, c) at c[i*ldc + c*c_cs].
 * Blocks of A are transposed in registers so each vector holds one column q of VLEN
 * rows; the sum over q stays in order per row. */
typedef struct narrow_args {
    int32_t kdim;
    const float *a;
    ptrdiff_t lda;
    const float *b;
    ptrdiff_t b_rs, b_cs;
    float *c;
    ptrdiff_t ldc, c_cs;
    const float *bias;
    frl_nn_act act;
} narrow_args;

/* The transposed VLEN x 4 block at a, of which only nrows x ncols exist (the k tail):
 * each existing column gathered through a small array, so nothing past the arrays is
 * read. Column by column, not a zeroed 4-wide block transposed: that block's narrow
 * loads each straddled several scalar stores, which the CPU cannot forward, and made
 * a layer with k % 4 of 2 or 3 and a narrow output 5-15x slower than k % 4 == 0
 * (Pendulum's input layer, an elastic policy's narrow sub-policies). */
static inline void load_t4_part(const float *a, ptrdiff_t lda, int nrows, int ncols, vf t[4])
{
    float col[VLEN] __attribute__((aligned(64)));
    for (int c = 0; c < ncols; c++) {
        for (int r = 0; r < VLEN; r++)
            col[r] = r < nrows ? a[r * lda + c] : 0.0f;
        t[c] = v_load(col);
    }
    for (int c = ncols; c < 4; c++)
        t[c] = v_zero();
}

#define NARROW_RB_MAX 4

/* acc[r][c] += columns q..q+qn-1 of block r times B rows q..; the block's rows come
 * from t (already transposed). */
static ALWAYS_INLINE void narrow_fma4(vf acc[NARROW_MAX], const vf t[4], const float *b,
                                      ptrdiff_t b_rs, ptrdiff_t b_cs, int qn, int nc)
{
    for (int qq = 0; qq < qn; qq++)
        for (int c = 0; c < nc; c++)
            acc[c] = v_fma(t[qq], v_bcast(b + qq * b_rs + c * b_cs), acc[c]);
}

/* rb blocks of VLEN rows from row i, nc output columns. The shape arguments, and the B
 * strides when B was packed, are constants at each call. */
static ALWAYS_INLINE void narrow_block(const narrow_args *g, const float *b, ptrdiff_t b_rs,
                                       ptrdiff_t b_cs, int32_t i, int rb, int nc)
{
    const ptrdiff_t lda = g->lda;
    const int32_t kdim = g->kdim;
    vf acc[NARROW_RB_MAX][NARROW_MAX];
    for (int r = 0; r < rb; r++)
        for (int c = 0; c < nc; c++)
            acc[r][c] = v_zero();
    const float *a = g->a + i * lda;
    int32_t q = 0;
    for (; q + 4 <= kdim; q += 4, a += 4, b += 4 * b_rs)
        for (int r = 0; r < rb; r++) {
            vf t[4];
            v_load_t4(a + r * VLEN * lda, lda, t);
            narrow_fma4(acc[r], t, b, b_rs, b_cs, 4, nc);
        }
    const int kr = (int)(kdim - q);
    if (kr > 0)
        for (int r = 0; r < rb; r++) {
            vf t[4];
            load_t4_part(a + r * VLEN * lda, lda, VLEN, kr, t);
            narrow_fma4(acc[r], t, b, b_rs, b_cs, kr, nc);
        }
    for (int r = 0; r < rb; r++)
        for (int c = 0; c < nc; c++) {
            vf v = acc[r][c];
            if (g->bias)
                v = v_add(v, v_bcast(g->bias + c));
            float out[VLEN];
            v_store(out, v_act(v, g->act));
            float *cp = g->c + (i + r * VLEN) * g->ldc + c * g->c_cs;
            for (int l = 0; l < VLEN; l++)
                cp[l * g->ldc] = out[l];
        }
}

/* Rows r0..r0+rg-1 of a partial block into res[c][r]: their rg * nc chains side by
 * side in registers (rg and nc are constants). */
static ALWAYS_INLINE void narrow_rows(const narrow_args *g, const float *b, ptrdiff_t b_rs,
                                      ptrdiff_t b_cs, int32_t i, int r0, int rg, int nc,
                                      float res[NARROW_MAX][VLEN])
{
    float acc[4][NARROW_MAX];
    for (int r = 0; r < rg; r++)
        for (int c = 0; c < nc; c++)
            acc[r][c] = 0.0f;
    const float *a = g->a + (i + r0) * g->lda;
    for (int32_t q = 0; q < g->kdim; q++, b += b_rs)
        for (int r = 0; r < rg; r++)
            for (int c = 0; c < nc; c++)
                acc[r][c] = fmaf(a[r * g->lda + q], b[c * b_cs], acc[r][c]);
    for (int r = 0; r < rg; r++)
        for (int c = 0; c < nc; c++)
            res[c][r0 + r] = acc[r][c];
}

/* The last rows, fewer than VLEN: the same chains computed with fmaf (one lane of
 * v_fma is the same fused operation), which spares the zero-padded transposes that
 * would dominate small batches. Bias and activation still go through the vector code,
 * so every bit matches what a full block gives. */
static ALWAYS_INLINE void narrow_part(const narrow_args *g, const float *b, ptrdiff_t b_rs,
                                      ptrdiff_t b_cs, int32_t i, int nrows, int nc)
{
    const int rg = nc <= 2 ? 4 : 2; /* 8 to 14 chains, in registers */
    float res[NARROW_MAX][VLEN];
    memset(res, 0, sizeof res);
    int r = 0;
    for (; r + rg <= nrows; r += rg)
        narrow_rows(g, b, b_rs, b_cs, i, r, rg, nc, res);
    for (; r < nrows; r++)
        narrow_rows(g, b, b_rs, b_cs, i, r, 1, nc, res);
    for (int c = 0; c < nc; c++) {
        vf v = v_load(res[c]);
        if (g->bias)
            v = v_add(v, v_bcast(g->bias + c));
        float out[VLEN];
        v_store(out, v_act(v, g->act));
        for (int l = 0; l < nrows; l++)
            g->c[(i + l) * g->ldc + c * g->c_cs] = out[l];
    }
}

static ALWAYS_INLINE void narrow_cols(const narrow_args *g, const float *b, ptrdiff_t b_rs,
                                      ptrdiff_t b_cs, int32_t m, int nc)
{
    /* Chains per group: enough to cover the FMA latency for one output column. */
    const int rb = nc == 1 ? 4 : nc <= 5 ? 2 : 1;
    int32_t i = 0;
    for (; i + rb * VLEN <= m; i += rb * VLEN)
        narrow_block(g, b, b_rs, b_cs, i, rb, nc);
    for (; i + VLEN <= m; i += VLEN)
        narrow_block(g, b, b_rs, b_cs, i, 1, nc);
    if (i < m)
        narrow_part(g, b, b_rs, b_cs, i, (int)(m - i), nc);
}

/* B packed as bp[q*nc + c] (constant strides: cheap addressing, no stride multiplies)
 * when full blocks will reuse it and it fits the scratch; the sums are the same either
 * way. */
static ALWAYS_INLINE void narrow_nc(const narrow_args *g, int32_t m, int nc)
{
    float bp[PACK_FLOATS];
    if (m < VLEN || (int64_t)g->kdim * nc > PACK_FLOATS) {
        narrow_cols(g, g->b, g->b_rs, g->b_cs, m, nc);
        return;
    }
    for (int32_t q = 0; q < g->kdim; q++)
        for (int c = 0; c < nc; c++)
            bp[q * nc + c] = g->b[q * g->b_rs + c * g->b_cs];
    narrow_cols(g, bp, nc, 1, m, nc);
}

static void narrow_gemm(const narrow_args *g, int32_t m, int32_t nc)
{
    switch (nc) {
    case 1: narrow_nc(g, m, 1); break;
    case 2: narrow_nc(g, m, 2); break;
    case 3: narrow_nc(g, m, 3); break;
    case 4: narrow_nc(g, m, 4); break;
    case 5: narrow_nc(g, m, 5); break;
    case 6: narrow_nc(g, m, 6); break;
    default: narrow_nc(g, m, 7); break;
    }
}

/* ---- the table's entry points ---------------------------------------------- */

static void linear_fwd(int32_t m, int32_t n, int32_t k, const float *x, const float *wt,
                       const float *b, float *y, frl_nn_act act)
{
    if (m <= 0 || n <= 0)
        return; /* y is empty (narrow_gemm would take n = 0 for its widest case) */
    if (n <= NARROW_MAX) {
        const narrow_args g = {k, x, k, wt, n, 1, y, n, 1, b, act};
        narrow_gemm(&g, m, n);
        return;
    }
    /* relu costs one operation, so it is applied in the registers; tanh and elu would
     * crowd the tile's registers and run in a pass over the chunk instead. Row chunks
     * are small enough that x and y of a chunk stay in L1 across the column tiles and
     * that pass. k = 0 (no products: bias and activation only) sizes chunks as k = 1. */
    int32_t mc = min32(4096 / max32(k, 1), 8192 / n);
    mc = max32(MR_MAIN, mc - mc % MR_MAIN);
    for (int32_t i0 = 0; i0 < m; i0 += mc) {
        const int32_t rows = min32(mc, m - i0);
        const wide_args g = {k, x + (ptrdiff_t)i0 * k, k, 1, wt, n, y + (ptrdiff_t)i0 * n, n,
                             b, 0, 1, 0, 1, 0};
        if (act == FRL_NN_RELU) {
            wide_gemm_relu(&g, rows, n);
        } else {
            wide_gemm(&g, rows, n);
            act_array(y + (ptrdiff_t)i0 * n, (int64_t)rows * n, act);
        }
    }
}

/* The wide GEMM over the patches where they lie: A's row r is the patch of one output
 * position, kh runs of kw in_c values a row of the image apart (run_jump), and rows
 * step by a_rs, one position along an output row (stride in_c) or down a column
 * (stride rows of the image); C's rows step by ldc likewise; B is wt as linear_fwd
 * reads it. Each element is linear_fwd's chain, so the bits are im2col's (narrow
 * outputs, which linear_fwd gives to narrow_gemm, too: every path runs the same chain). */
static void conv_strip(const frl_conv_dims *d, const float *a, ptrdiff_t a_rs, float *c,
                       ptrdiff_t ldc, int32_t rows, const float *wt, const float *b, int relu)
{
    const ptrdiff_t pitch = (ptrdiff_t)d->in_w * d->in_c, run = (ptrdiff_t)d->kw * d->in_c;
    const wide_args g = {(int32_t)run, a, a_rs, 1, wt, d->out_c, c, ldc, b, 0, d->kh,
                         pitch - run, 1, 0};
    if (relu)
        conv_gemm_relu(&g, rows, d->out_c);
    else
        conv_gemm(&g, rows, d->out_c);
}

/* One image: along each output row in whole register tiles, then the columns those
 * leave over down the image (a row's last few positions would otherwise run as small
 * tiles, whose short chains leave the FMA units idle: a 9-wide row cost 20%). Each
 * output row also requests its share of the next image into L2: a batch of 256 images
 * (13-29 MB) comes from memory, which the hardware prefetcher does not run ahead of
 * across images (bench_conv at 256: +5-11% on four of five layers, in the noise on the
 * fifth). */
static void conv_image(const frl_conv_dims *d, const float *x, const float *wt,
                       const float *b, float *y, int relu, const float *next, int32_t down)
{
    const ptrdiff_t pitch = (ptrdiff_t)d->in_w * d->in_c, step = (ptrdiff_t)d->stride * d->in_c;
    const int32_t whole = d->out_w - d->out_w % MR_MAIN;
    const ptrdiff_t in = (ptrdiff_t)d->in_h * pitch, slice = (in + d->out_h - 1) / d->out_h;
    for (int32_t oh = 0; oh < d->out_h; oh++) {
        for (ptrdiff_t o = oh * slice; next && o < (oh + 1) * slice && o < in; o += 16)
            __builtin_prefetch(next + o, 0, 2);
        if (whole > 0)
            conv_strip(d, x + (ptrdiff_t)oh * d->stride * pitch, step,
                       y + (ptrdiff_t)oh * d->out_w * d->out_c, d->out_c, whole, wt, b, relu);
    }
    for (int32_t ow = whole; down > 0 && ow < d->out_w; ow++)
        conv_strip(d, x + ow * step, (ptrdiff_t)d->stride * pitch, y + (ptrdiff_t)ow * d->out_c,
                   (ptrdiff_t)d->out_w * d->out_c, down, wt, b, relu);
}

/* Positions [h0, out_h) x [w0, out_w) of `count` (<= MR_MAIN) images, one position of
 * every image a tile, their patches one image's size apart. */
static void conv_down_images(const frl_conv_dims *d, int32_t count, const float *x,
                             const float *wt, const float *b, float *y, int relu, int32_t h0,
                             int32_t w0)
{
    const ptrdiff_t pitch = (ptrdiff_t)d->in_w * d->in_c, in = (ptrdiff_t)d->in_h * pitch;
    const ptrdiff_t out = (ptrdiff_t)d->out_h * d->out_w * d->out_c;
    for (int32_t oh = h0; oh < d->out_h; oh++)
        for (int32_t ow = w0; ow < d->out_w; ow++)
            conv_strip(d, x + ((ptrdiff_t)oh * pitch + ow * d->in_c) * d->stride, in,
                       y + ((ptrdiff_t)oh * d->out_w + ow) * d->out_c, out, count, wt, b, relu);
}

/* An output too small both ways for whole tiles (convnet_simple's last layer, 3 x 6
 * positions an image, ran at half speed as 3-row tiles; Nature's third, 7 x 7, at
 * 84-89% of its GEMM floor as 7-row strips under the AVX-512 table's 8-row tiles, and
 * at 100% down the images: +15-20% at batch 32 and 256): tiles down the images instead,
 * one position of MR_MAIN images, whose patches are one image's size apart. */
static void conv_across_images(const frl_conv_dims *d, int32_t images, const float *x,
                               const float *wt, const float *b, float *y, int relu)
{
    const ptrdiff_t in = (ptrdiff_t)d->in_h * d->in_w * d->in_c;
    const ptrdiff_t out = (ptrdiff_t)d->out_h * d->out_w * d->out_c;
    for (int32_t i0 = 0; i0 < images; i0 += MR_MAIN)
        conv_down_images(d, min32(MR_MAIN, images - i0), x + i0 * in, wt, b, y + i0 * out,
                         relu, 0, 0);
}

/* MR_MAIN images at a time: each image along its rows and its leftover columns down to
 * the last whole tile of rows, then the corner those leave (the last out_h % MR_MAIN
 * rows of the leftover columns) down the group's images, in whole tiles, where it
 * would be one short tile a column: convnet_simple's first layer (17 x 31) had a 1-row
 * tile, one chain, under each 16 rows, its second (7 x 14) 7-row tiles, each a B load
 * for 7 FMAs instead of 8 (bench_conv, AMD Zen 4, AVX-512 table: +3-8% and +4% at
 * batch 32, +0% and +3% at 256; Nature's first and second layers +0-5%; the AVX2
 * table +3% on Nature's second, the others within the noise). A group short of
 * MR_MAIN images runs its leftover columns all the way down. */
static void conv_images(const frl_conv_dims *d, int32_t images, const float *x,
                        const float *wt, const float *b, float *y, frl_nn_act act)
{
    const ptrdiff_t in = (ptrdiff_t)d->in_h * d->in_w * d->in_c;
    const ptrdiff_t out = (ptrdiff_t)d->out_h * d->out_w * d->out_c;
    const int32_t whole = d->out_w - d->out_w % MR_MAIN, tall = d->out_h - d->out_h % MR_MAIN;
    const int relu = act == FRL_NN_RELU, corner = whole < d->out_w && tall < d->out_h;
    for (int32_t i0 = 0; i0 < images; i0 += MR_MAIN) {
        const int32_t count = min32(MR_MAIN, images - i0);
        const int grouped = corner && count == MR_MAIN;
        for (int32_t img = i0; img < i0 + count; img++)
            conv_image(d, x + img * in, wt, b, y + img * out, relu,
                       img + 1 < images ? x + (img + 1) * in : NULL, grouped ? tall : d->out_h);
        if (grouped)
            conv_down_images(d, count, x + i0 * in, wt, b, y + i0 * out, relu, tall, whole);
        if (!relu)
            act_array(y + i0 * out, count * out, act);
    }
}

/* Declined (0, y untouched) when the output is too small both ways for whole tiles and
 * there are too few images to tile down: the patch matrix then does as well. */
static int conv_fwd(const frl_conv_dims *d, int32_t images, const float *x, const float *wt,
                    const float *b, float *y, frl_nn_act act)
{
    const ptrdiff_t out = (ptrdiff_t)d->out_h * d->out_w * d->out_c;
    if (d->out_w < MR_MAIN && d->out_h < MR_MAIN && images >= MR_MAIN) {
        conv_across_images(d, images, x, wt, b, y, act == FRL_NN_RELU);
        if (act != FRL_NN_RELU)
            act_array(y, images * out, act);
        return 1;
    }
    if (d->out_w < MR_MAIN && d->out_h < MR_MAIN - 1)
        return 0;
    conv_images(d, images, x, wt, b, y, act);
    return 1;
}

/* dx = dy . wt^T with dx at least NARROW_MAX + 1 wide: wt^T is packed in panels
 * [j0, j0 + jc) x [p0, p0 + pc); later j panels continue the chains stored in dx. */
static void bwd_input_wide(int32_t m, int32_t n, int32_t k, const float *dy,
                           const float *wt, float *dx)
{
    float buf[PACK_FLOATS] __attribute__((aligned(64)));
    int32_t pw = k;
    if ((int64_t)n * k > PACK_FLOATS)
        pw = min32(k, max32(2 * VLEN, (PACK_FLOATS / n) / VLEN * VLEN));
    const int32_t jw = min32(n, PACK_FLOATS / pw);
    int32_t mc = max32(MR_MAIN, 4096 / jw); /* dy rows of a chunk: 16 KiB */
    mc -= mc % MR_MAIN;
    for (int32_t p0 = 0; p0 < k; p0 += pw) {
        const int32_t pc = min32(pw, k - p0);
        for (int32_t j0 = 0; j0 < n; j0 += jw) {
            const int32_t jc = min32(jw, n - j0);
            for (int32_t jj = 0; jj < jc; jj++)
                for (int32_t pp = 0; pp < pc; pp++)
                    buf[jj * pc + pp] = wt[(ptrdiff_t)(p0 + pp) * n + j0 + jj];
            for (int32_t i0 = 0; i0 < m; i0 += mc) {
                const wide_args g = {jc, dy + (ptrdiff_t)i0 * n + j0, n, 1, buf, pc,
                                     dx + (ptrdiff_t)i0 * k + p0, k, NULL, j0 > 0, 1, 0, 1, 0};
                wide_gemm(&g, min32(mc, m - i0), pc);
            }
        }
    }
}

static void linear_bwd_input(int32_t m, int32_t n, int32_t k, const float *dy,
                             const float *wt, float *dx)
{
    if (m <= 0 || k <= 0)
        return; /* dx is empty (narrow_gemm would take k = 0 for its widest case) */
    if (n <= 0) {
        /* Empty sums: the +0 every chain starts from (bwd_input_wide sizes by n). */
        memset(dx, 0, sizeof(float) * (size_t)m * (size_t)k);
        return;
    }
    if (k <= NARROW_MAX) {
        /* B(q = j, c = p) = wt[p*n + j]. */
        const narrow_args g = {n, dy, n, wt, 1, n, dx, k, 1, NULL, FRL_NN_LINEAR};
        narrow_gemm(&g, m, k);
        return;
    }
    if (m <= NARROW_MAX && n >= 16) {
        /* A few rows and a long sum (packing wt^T would cost as much as the product):
         * dx^T = wt . dy^T, SIMD across p, nothing to pack. Each chain is the one
         * bwd_input_wide runs, fma(wt[p][j], dy[i][j], .) over j in order (a product
         * does not depend on the order of its factors), so the bits are the same for
         * any m; the split-batch test checks it. */
        const narrow_args g = {n, wt, n, dy, 1, n, dx, 1, k, NULL, FRL_NN_LINEAR};
        narrow_gemm(&g, k, m);
        return;
    }
    bwd_input_wide(m, n, k, dy, wt, dx);
}

/* Rows of x and dy per pass over dwt: the chunk stays in L1 while every dwt tile
 * accumulates it; dwt holds each chain's value between chunks. */
static int32_t bwd_weight_chunk(int32_t n, int32_t k)
{
    return max32(16, 6144 / (n + k));
}

/* n narrower than a vector: SIMD across p on dwt^T, packed into a panel buffer. */
static void bwd_weight_narrow(int32_t m, int32_t n, int32_t k, const float *x,
                              const float *dy, float *dwt, int accumulate)
{
    float buf[PACK_FLOATS] __attribute__((aligned(64)));
    const int32_t pw = min32(k, PACK_FLOATS / n);
    const int32_t mc = bwd_weight_chunk(n, k);
    for (int32_t p0 = 0; p0 < k; p0 += pw) {
        const int32_t pc = min32(pw, k - p0);
        for (int32_t j = 0; j < n; j++)
            for (int32_t p = 0; p < pc; p++)
                buf[j * pc + p] = accumulate ? dwt[(ptrdiff_t)(p0 + p) * n + j] : 0.0f;
        for (int32_t i0 = 0; i0 < m; i0 += mc) {
            /* A(r = j, q = i) = dy[i*n + j]; B[q = i][p] = x[i*k + p0 + p]. */
            const wide_args g = {min32(mc, m - i0), dy + (ptrdiff_t)i0 * n, 1, n,
                                 x + (ptrdiff_t)i0 * k + p0, k, buf, pc, NULL, 1, 1, 0, 1, 0};
            wide_gemm(&g, n, pc);
        }
        for (int32_t j = 0; j < n; j++)
            for (int32_t p = 0; p < pc; p++)
                dwt[(ptrdiff_t)(p0 + p) * n + j] = buf[j * pc + p];
    }
}

static void bias_grad(int32_t m, int32_t n, const float *dy, float *db)
{
    int32_t j = 0;
    for (; j + VLEN <= n; j += VLEN) {
        vf acc = v_load(db + j);
        for (int32_t i = 0; i < m; i++)
            acc = v_add(acc, v_load(dy + (ptrdiff_t)i * n + j));
        v_store(db + j, acc);
    }
    if (j < n) {
        const vmask mk = v_mask_first(n - j);
        vf acc = v_load_m(db + j, mk);
        for (int32_t i = 0; i < m; i++)
            acc = v_add(acc, v_load_m(dy + (ptrdiff_t)i * n + j, mk));
        v_store_part(db + j, n - j, acc);
    }
}

static void linear_bwd_weight(int32_t m, int32_t n, int32_t k, const float *x,
                              const float *dy, float *dwt, float *db, int accumulate)
{
    if (n <= 0)
        return; /* dwt and db are empty (the panels and chunks divide by n) */
    if (m <= 0 || !accumulate) {
        /* Chains that start from 0 in the registers or from a stored +0 are the same. */
        if (!accumulate && db)
            memset(db, 0, sizeof(float) * (size_t)n);
        if (m <= 0) {
            if (!accumulate)
                memset(dwt, 0, sizeof(float) * (size_t)n * (size_t)k);
            return;
        }
    }
    if (db)
        bias_grad(m, n, dy, db);
    if (n < VLEN && n < k) {
        bwd_weight_narrow(m, n, k, x, dy, dwt, accumulate);
        return;
    }
    const int32_t mc = bwd_weight_chunk(n, k);
    for (int32_t i0 = 0; i0 < m; i0 += mc) {
        /* A(r = p, q = i) = x[i*k + p]; B[q = i][j] = dy[i*n + j]; C = dwt. */
        const wide_args g = {min32(mc, m - i0), x + (ptrdiff_t)i0 * k, 1, k,
                             dy + (ptrdiff_t)i0 * n, n, dwt, n, NULL,
                             accumulate || i0 > 0, 1, 0, 1, 0};
        wide_gemm(&g, k, n);
    }
}

/* linear_bwd_weight over the patches where they lie: for each image and kernel row, C is
 * that row's kw in_c rows of dwt, A(r, q) the value r of position q's patch (a_rs 1),
 * the positions along an output row in_c stride apart and the rows joined by run_jump,
 * B the image's rows of dy; each chain continues over the images (beta). */
static int conv_bwd_weight(const frl_conv_dims *d, int32_t images, const float *x,
                           const float *dy, float *dwt, float *db, int accumulate)
{
    const int32_t n = d->out_c;
    if (n < VLEN)
        return 0;
    const int32_t per = d->out_h * d->out_w, m = images * per;
    const ptrdiff_t pitch = (ptrdiff_t)d->in_w * d->in_c, run = (ptrdiff_t)d->kw * d->in_c;
    const ptrdiff_t step = (ptrdiff_t)d->stride * d->in_c, in = (ptrdiff_t)d->in_h * pitch;
    if (!accumulate && db)
        memset(db, 0, sizeof(float) * (size_t)n);
    if (m <= 0) {
        if (!accumulate)
            memset(dwt, 0, sizeof(float) * (size_t)n * (size_t)(run * d->kh));
        return 1;
    }
    if (db)
        bias_grad(m, n, dy, db);
    /* Small outputs take 4 images a pass, so each tile of dwt goes through L2 once for
     * 4 images' positions, not for each image's few (bench_conv, AMD Zen 4, batch 256:
     * 49 positions +4-8%, 18 +7-16%; 81 or more gained nothing or lost). */
    const int32_t group = per < 64 ? 4 : 1;
    const ptrdiff_t row_jump = (ptrdiff_t)d->stride * pitch - d->out_w * step;
    const ptrdiff_t image_jump = in - d->out_h * (d->out_w * step + row_jump);
    for (int32_t img = 0; img < images; img += group)
        for (int32_t ki = 0; ki < d->kh; ki++) {
            const wide_args g = {d->out_w, x + img * in + ki * pitch, 1, step,
                                 dy + (ptrdiff_t)img * per * n, n, dwt + ki * run * n, n,
                                 NULL, accumulate || img > 0, d->out_h, row_jump,
                                 min32(group, images - img), image_jump};
            wide_gemm(&g, (int32_t)run, n);
        }
    return 1;
}

/* One strip of patch gradients added where they belong: rows output positions (dy's
 * rows a_rs apart), each dotted with the kernel position's block of wtt and added to
 * dx's in_c values at that position's input (ldc apart). */
static void bwd_input_strip(const frl_conv_dims *d, const float *dy, ptrdiff_t a_rs,
                            const float *wtt, float *dx, ptrdiff_t ldc, int32_t rows)
{
    const wide_args g = {d->out_c, dy, a_rs, 1, wtt, d->in_c, dx, ldc, NULL, 0, 1, 0, 1, 0};
    wide_gemm_k(&g, rows, d->in_c, EPI_ADD, NV_MAIN);
}

/* An output smaller than a tile both ways, tiled down MR_MAIN images at a time at each
 * position, as conv_fwd tiles it (a 7 x 7 output otherwise ran as 7-row strips, 3 x 6 as
 * 3-row ones; bench_conv, AMD Zen 4, batch 256: +9% and +47%; 2 or 4 tiles of images a
 * pass lost 4-20%, their dx out of L2). */
static void bwd_input_down(const frl_conv_dims *d, int32_t images, const float *dy,
                           const float *wtt, float *dx)
{
    const int32_t n = d->out_c;
    const ptrdiff_t pitch = (ptrdiff_t)d->in_w * d->in_c, step = (ptrdiff_t)d->stride * d->in_c;
    const ptrdiff_t in = (ptrdiff_t)d->in_h * pitch, per = (ptrdiff_t)d->out_h * d->out_w;
    for (int32_t img = 0; img < images; img += MR_MAIN) {
        const int32_t rows = min32(MR_MAIN, images - img);
        for (int32_t ki = d->kh - 1; ki >= 0; ki--)
            for (int32_t kj = d->kw - 1; kj >= 0; kj--) {
                const float *b = wtt + ((ptrdiff_t)ki * d->kw + kj) * n * d->in_c;
                float *base = dx + img * in + ki * pitch + kj * d->in_c;
                for (int32_t oh = 0; oh < d->out_h; oh++)
                    for (int32_t ow = 0; ow < d->out_w; ow++)
                        bwd_input_strip(d, dy + (img * per + oh * d->out_w + ow) * n, per * n,
                                        b, base + oh * d->stride * pitch + ow * step, in, rows);
            }
    }
}

/* One image: along each output row in whole register tiles, then the columns those
 * leave over down the image, as conv_image does. */
static void bwd_input_image(const frl_conv_dims *d, const float *dy, const float *wtt,
                            float *dx)
{
    const int32_t n = d->out_c, whole = d->out_w - d->out_w % MR_MAIN;
    const ptrdiff_t pitch = (ptrdiff_t)d->in_w * d->in_c, step = (ptrdiff_t)d->stride * d->in_c;
    for (int32_t ki = d->kh - 1; ki >= 0; ki--)
        for (int32_t kj = d->kw - 1; kj >= 0; kj--) {
            const float *b = wtt + ((ptrdiff_t)ki * d->kw + kj) * n * d->in_c;
            float *base = dx + ki * pitch + kj * d->in_c;
            for (int32_t oh = 0; whole > 0 && oh < d->out_h; oh++)
                bwd_input_strip(d, dy + (ptrdiff_t)oh * d->out_w * n, n, b,
                                base + oh * d->stride * pitch, step, whole);
            for (int32_t ow = whole; ow < d->out_w; ow++)
                bwd_input_strip(d, dy + (ptrdiff_t)ow * n, (ptrdiff_t)d->out_w * n, b,
                                base + ow * step, d->stride * pitch, d->out_h);
        }
}

/* linear_bwd_input and col2im in one pass, with no patch-gradient matrix: for each
 * kernel position (ki, kj), every output position's in_c patch gradients are chains
 * over out_c (linear_bwd_input's: from +0, in order) added to dx at the input they came
 * from. The kernel positions run from last to first, so every dx element takes its
 * terms in the order of the positions they come from, as col2im adds them: the same
 * bits (bench_conv, AMD Zen 4, batch 256: Nature's third layer's input gradient 10-15%
 * faster than linear_bwd_input and col2im, whose 29 MB of patch gradients it skips). */
static int conv_bwd_input(const frl_conv_dims *d, int32_t images, const float *dy,
                          const float *wtt, float *dx)
{
    if (d->in_c < VLEN)
        return 0; /* a vector wider than a position's channels: col2im's path */
    if (d->out_w < MR_MAIN && d->out_h < MR_MAIN && images >= MR_MAIN) {
        bwd_input_down(d, images, dy, wtt, dx);
        return 1;
    }
    const ptrdiff_t in = (ptrdiff_t)d->in_h * d->in_w * d->in_c;
    const ptrdiff_t out = (ptrdiff_t)d->out_h * d->out_w * d->out_c;
    for (int32_t img = 0; img < images; img++)
        bwd_input_image(d, dy + img * out, wtt, dx + img * in);
    return 1;
}

/* ---- transposition ------------------------------------------------------------ */

/* VLEN x 4 blocks through the registers (v_load_t4), the edges one element at a time. */
static void transpose(int32_t rows, int32_t cols, const float *src, float *dst)
{
    int32_t r = 0;
    for (; r + VLEN <= rows; r += VLEN) {
        int32_t c = 0;
        for (; c + 4 <= cols; c += 4) {
            vf t[4];
            v_load_t4(src + (ptrdiff_t)r * cols + c, cols, t);
            for (int u = 0; u < 4; u++)
                v_store(dst + (ptrdiff_t)(c + u) * rows + r, t[u]);
        }
        for (; c < cols; c++)
            for (int i = 0; i < VLEN; i++)
                dst[(ptrdiff_t)c * rows + r + i] = src[(ptrdiff_t)(r + i) * cols + c];
    }
    for (; r < rows; r++)
        for (int32_t c = 0; c < cols; c++)
            dst[(ptrdiff_t)c * rows + r] = src[(ptrdiff_t)r * cols + c];
}

/* ---- the optimiser ---------------------------------------------------------- */

/* Blocks of 1024 squares summed in four float vectors (at most 32 terms per lane, so
 * the float error stays near 2e-6 relative), the blocks' lanes added in double. */
static double sum_squares(int64_t n, const float *x)
{
    double total = 0;
    for (int64_t b = 0; b < n; b += 1024) {
        const int64_t e = b + 1024 < n ? b + 1024 : n;
        vf acc[4] = {v_zero(), v_zero(), v_zero(), v_zero()};
        int64_t i = b;
        for (; i + 4 * VLEN <= e; i += 4 * VLEN)
            for (int u = 0; u < 4; u++) {
                const vf v = v_load(x + i + u * VLEN);
                acc[u] = v_fma(v, v, acc[u]);
            }
        for (; i + VLEN <= e; i += VLEN) {
            const vf v = v_load(x + i);
            acc[0] = v_fma(v, v, acc[0]);
        }
        if (i < e) {
            const vf v = v_load_m(x + i, v_mask_first((int)(e - i)));
            acc[1] = v_fma(v, v, acc[1]);
        }
        float lanes[4 * VLEN];
        for (int u = 0; u < 4; u++)
            v_store(lanes + u * VLEN, acc[u]);
        for (int l = 0; l < 4 * VLEN; l++)
            total += lanes[l];
    }
    return total;
}

/* k: gscale, b1, 1 - b1, b2, 1 - b2, step, rbc2, eps, FLT_MIN, FLT_MAX. The scalar
 * table's operations in its order, so the bits match it. */
/* x, or +0 where |x| < FLT_MIN (k[8]); NaN compares false and stays. */
static inline vf flush_subnormal(vf x, const vf *k)
{
    return v_sel(v_gt(k[8], v_abs(x)), v_zero(), x);
}

static inline void adam_vec(float *p, const float *g, float *m, float *v, const vf *k)
{
    const vf gs = v_mul(v_load(g), k[0]);
    const vf mn = flush_subnormal(v_add(v_mul(k[1], v_load(m)), v_mul(k[2], gs)), k);
    const vf vs = flush_subnormal(v_add(v_mul(k[3], v_load(v)), v_mul(v_mul(k[4], gs), gs)), k);
    const vf vn = v_sel(v_gt(vs, k[9]), k[9], vs); /* infinity as FLT_MAX; NaN stays */
    const vf den = v_add(v_mul(v_sqrt(vn), k[6]), k[7]);
    v_store(m, mn);
    v_store(v, vn);
    v_store(p, v_sub(v_load(p), v_div(v_mul(k[5], mn), den)));
}

static void adam(int64_t n, float *p, const float *g, float *m, float *v, const frl_adam_coef *c)
{
    const vf k[10] = {v_set1(c->gscale), v_set1(c->b1), v_set1(1.0f - c->b1), v_set1(c->b2),
                      v_set1(1.0f - c->b2), v_set1(c->step), v_set1(c->rbc2), v_set1(c->eps),
                      v_set1(FLT_MIN), v_set1(FLT_MAX)};
    int64_t i = 0;
    for (; i + VLEN <= n; i += VLEN)
        adam_vec(p + i, g + i, m + i, v + i, k);
    if (i < n) {
        /* The tail through a full-width copy, so only n - i lanes are read and written. */
        float buf[4][VLEN];
        const int r = (int)(n - i);
        memset(buf, 0, sizeof buf);
        memcpy(buf[0], p + i, sizeof(float) * (size_t)r);
        memcpy(buf[1], g + i, sizeof(float) * (size_t)r);
        memcpy(buf[2], m + i, sizeof(float) * (size_t)r);
        memcpy(buf[3], v + i, sizeof(float) * (size_t)r);
        adam_vec(buf[0], buf[1], buf[2], buf[3], k);
        memcpy(p + i, buf[0], sizeof(float) * (size_t)r);
        memcpy(m + i, buf[2], sizeof(float) * (size_t)r);
        memcpy(v + i, buf[3], sizeof(float) * (size_t)r);
    }
}

/* ---- recurrent gates ------------------------------------------------------------ */

/* The first n (1..VLEN) lanes of p: a plain load for a whole vector, masked for a tail. */
static inline vf ld_n(const float *p, int n)
{
    return n == VLEN ? v_load(p) : v_load_m(p, v_mask_first(n));
}

static inline void st_n(float *p, int n, vf v)
{
    if (n == VLEN)
        v_store(p, v);
    else
        v_store_part(p, n, v);
}

/* sig(x) as the scalar table writes it: E = e^-|x| (v_exp_neg clamps at -87, as the
 * scalar does), 1 / (1 + E) for x >= 0, E / (1 + E) below; NaN stays NaN. */
static inline vf v_sigmoid(vf x)
{
    const vf e = v_exp_neg(v_sub(v_zero(), v_abs(x)));
    return v_div(v_sel(v_gt(v_zero(), x), e, v_set1(1.0f)), v_add(v_set1(1.0f), e));
}

static inline vf one_minus(vf a) { return v_sub(v_set1(1.0f), a); }

static ALWAYS_INLINE void gru_fwd_vec(int32_t h, int32_t j, int n, const float *x, const float *y,
                                      const float *hp, float *hout, float *g)
{
    const vf r = v_sigmoid(v_add(ld_n(x + j, n), ld_n(y + j, n)));
    const vf z = v_sigmoid(v_add(ld_n(x + h + j, n), ld_n(y + h + j, n)));
    const vf ghn = ld_n(y + 2 * h + j, n);
    const vf nn = v_tanh(v_add(ld_n(x + 2 * h + j, n), v_mul(r, ghn)));
    const vf prev = ld_n(hp + j, n);
    st_n(g + j, n, r);
    st_n(g + h + j, n, z);
    st_n(g + 2 * h + j, n, nn);
    st_n(g + 3 * h + j, n, ghn);
    st_n(hout + j, n, v_add(v_mul(one_minus(z), nn), v_mul(z, prev)));
}

static void gru_fwd(int32_t rows, int32_t h, const float *gx, const float *gh, const float *hp,
                    float *hout, float *gates)
{
    for (int32_t i = 0; i < rows; i++) {
        const float *x = gx + (int64_t)i * 3 * h, *y = gh + (int64_t)i * 3 * h;
        const float *prev = hp + (int64_t)i * h;
        float *out = hout + (int64_t)i * h, *g = gates + (int64_t)i * 4 * h;
        for (int32_t j = 0; j < h; j += VLEN)
            gru_fwd_vec(h, j, h - j < VLEN ? (int)(h - j) : VLEN, x, y, prev, out, g);
    }
}

/* The scalar table's operations in its order, without FMA: the same bits. */
static ALWAYS_INLINE void gru_bwd_vec(int32_t h, int32_t j, int n, const float *g,
                                      const float *hp, const float *dh, float *ax, float *ah,
                                      float *dhp)
{
    const vf r = ld_n(g + j, n), z = ld_n(g + h + j, n), nn = ld_n(g + 2 * h + j, n);
    const vf ghn = ld_n(g + 3 * h + j, n), d = ld_n(dh + j, n), prev = ld_n(hp + j, n);
    const vf dan = v_mul(v_mul(d, one_minus(z)), one_minus(v_mul(nn, nn)));
    const vf daz = v_mul(v_mul(v_mul(d, v_sub(prev, nn)), z), one_minus(z));
    const vf dar = v_mul(v_mul(v_mul(dan, ghn), r), one_minus(r));
    st_n(ax + j, n, dar);
    st_n(ah + j, n, dar);
    st_n(ax + h + j, n, daz);
    st_n(ah + h + j, n, daz);
    st_n(ax + 2 * h + j, n, dan);
    st_n(ah + 2 * h + j, n, v_mul(dan, r));
    st_n(dhp + j, n, v_mul(d, z));
}

static void gru_bwd(int32_t rows, int32_t h, const float *gates, const float *hp,
                    const float *dh, float *dgx, float *dgh, float *dhp)
{
    for (int32_t i = 0; i < rows; i++) {
        const float *g = gates + (int64_t)i * 4 * h;
        float *ax = dgx + (int64_t)i * 3 * h, *ah = dgh + (int64_t)i * 3 * h;
        for (int32_t j = 0; j < h; j += VLEN)
            gru_bwd_vec(h, j, h - j < VLEN ? (int)(h - j) : VLEN, g, hp + (int64_t)i * h,
                        dh + (int64_t)i * h, ax, ah, dhp + (int64_t)i * h);
    }
}

static ALWAYS_INLINE void lstm_fwd_vec(int32_t h, int32_t j, int n, const float *a,
                                       const float *cp, float *hout, float *cout, float *s)
{
    const vf ig = v_sigmoid(ld_n(a + j, n)), fg = v_sigmoid(ld_n(a + h + j, n));
    const vf gg = v_tanh(ld_n(a + 2 * h + j, n)), og = v_sigmoid(ld_n(a + 3 * h + j, n));
    const vf c = v_add(v_mul(fg, ld_n(cp + j, n)), v_mul(ig, gg));
    const vf tc = v_tanh(c);
    st_n(s + j, n, ig);
    st_n(s + h + j, n, fg);
    st_n(s + 2 * h + j, n, gg);
    st_n(s + 3 * h + j, n, og);
    st_n(s + 4 * h + j, n, tc);
    st_n(cout + j, n, c);
    st_n(hout + j, n, v_mul(og, tc));
}

static void lstm_fwd(int32_t rows, int32_t h, const float *g, const float *cp, float *hout,
                     float *cout, float *gates)
{
    for (int32_t i = 0; i < rows; i++)
        for (int32_t j = 0; j < h; j += VLEN)
            lstm_fwd_vec(h, j, h - j < VLEN ? (int)(h - j) : VLEN, g + (int64_t)i * 4 * h,
                         cp + (int64_t)i * h, hout + (int64_t)i * h, cout + (int64_t)i * h,
                         gates + (int64_t)i * 5 * h);
}

static ALWAYS_INLINE void lstm_bwd_vec(int32_t h, int32_t j, int n, const float *s,
                                       const float *cp, const float *dh, const float *dc,
                                       float *d, float *dcp)
{
    const vf ig = ld_n(s + j, n), fg = ld_n(s + h + j, n), gg = ld_n(s + 2 * h + j, n);
    const vf og = ld_n(s + 3 * h + j, n), tc = ld_n(s + 4 * h + j, n), dhv = ld_n(dh + j, n);
    const vf dct = v_add(ld_n(dc + j, n), v_mul(v_mul(dhv, og), one_minus(v_mul(tc, tc))));
    st_n(d + j, n, v_mul(v_mul(v_mul(dct, gg), ig), one_minus(ig)));
    st_n(d + h + j, n, v_mul(v_mul(v_mul(dct, ld_n(cp + j, n)), fg), one_minus(fg)));
    st_n(d + 2 * h + j, n, v_mul(v_mul(dct, ig), one_minus(v_mul(gg, gg))));
    st_n(d + 3 * h + j, n, v_mul(v_mul(v_mul(dhv, tc), og), one_minus(og)));
    st_n(dcp + j, n, v_mul(dct, fg));
}

static void lstm_bwd(int32_t rows, int32_t h, const float *gates, const float *cp,
                     const float *dh, const float *dc, float *dg, float *dcp)
{
    for (int32_t i = 0; i < rows; i++)
        for (int32_t j = 0; j < h; j += VLEN)
            lstm_bwd_vec(h, j, h - j < VLEN ? (int)(h - j) : VLEN, gates + (int64_t)i * 5 * h,
                         cp + (int64_t)i * h, dh + (int64_t)i * h, dc + (int64_t)i * h,
                         dg + (int64_t)i * 4 * h, dcp + (int64_t)i * h);
}

const frl_kernels KERNELS_TABLE = {
    .name = KERNELS_NAME,
    .linear_fwd = linear_fwd,
    .conv_fwd = conv_fwd,
    .conv_bwd_weight = conv_bwd_weight,
    .conv_bwd_input = conv_bwd_input,
    .linear_bwd_input = linear_bwd_input,
    .linear_bwd_weight = linear_bwd_weight,
    .act_bwd = act_bwd,
    .transpose = transpose,
    .sum_squares = sum_squares,
    .adam = adam,
    .gru_fwd = gru_fwd,
    .gru_bwd = gru_bwd,
    .lstm_fwd = lstm_fwd,
    .lstm_bwd = lstm_bwd,
};
