/* The AVX2 + FMA table: the vector layer for 8-float ymm registers, then the shared
 * kernels. This file alone is compiled with -mavx2 -mfma (lib/nn/meson.build); nothing
 * here runs before kernels.c has checked the CPU. */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#define VLEN 8
#define MR_MAIN 6 /* 6 x 2 vectors: 12 accumulators + 2 B vectors + 1 broadcast of 16 */
#define NV_MAIN 2
#define NV_ROW1 8 /* one row of C: 8 chains cover 4-cycle FMA latency at 2 per cycle */
#define NV_ROW2 4
#define KERNELS_TABLE frl_kernels_avx2
#define KERNELS_NAME "avx2"

typedef __m256 vf;
typedef __m256i vmask;
typedef __m256 vbool;

static inline vf v_zero(void) { return _mm256_setzero_ps(); }
static inline vf v_set1(float x) { return _mm256_set1_ps(x); }
static inline vf v_bcast(const float *p) { return _mm256_broadcast_ss(p); }
static inline vf v_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void v_store(float *p, vf v) { _mm256_storeu_ps(p, v); }
static inline vmask v_mask_first(int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
/* Masked lanes are not read, so tails never touch memory past n. */
static inline vf v_load_m(const float *p, vmask m) { return _mm256_maskload_ps(p, m); }
/* The first n (0..8) lanes: 4, 2 and 1 at a time, since vmaskmovps stores are
 * microcoded and slow on AMD. */
static inline void v_store_part(float *p, int n, vf v)
{
    __m128 h = _mm256_castps256_ps128(v);
    if (n >= 4) {
        _mm_storeu_ps(p, h);
        if (n == 8) {
            _mm_storeu_ps(p + 4, _mm256_extractf128_ps(v, 1));
            return;
        }
        h = _mm256_extractf128_ps(v, 1);
        p += 4;
        n -= 4;
    }
    if (n >= 2) {
        _mm_storel_pi((__m64 *)(void *)p, h);
        h = _mm_movehl_ps(h, h);
        p += 2;
        n -= 2;
    }
    if (n)
        _mm_store_ss(p, h);
}
static inline vf v_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf v_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf v_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf v_div(vf a, vf b) { return _mm256_div_ps(a, b); }
static inline vf v_sqrt(vf a) { return _mm256_sqrt_ps(a); }
static inline vf v_fma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
static inline vf v_fnma(vf a, vf b, vf c) { return _mm256_fnmadd_ps(a, b, c); }
static inline vf v_min(vf a, vf b) { return _mm256_min_ps(a, b); }
static inline vf v_max(vf a, vf b) { return _mm256_max_ps(a, b); }
static inline vf v_abs(vf a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
static inline vf v_sign(vf a) { return _mm256_and_ps(_mm256_set1_ps(-0.0f), a); }
static inline vf v_or(vf a, vf b) { return _mm256_or_ps(a, b); }
static inline vbool v_gt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
static inline vf v_sel(vbool c, vf t, vf f) { return _mm256_blendv_ps(f, t, c); }
static inline vf v_round(vf a)
{
    return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* 2^n for integral n in [-126, 127]. */
static inline vf v_pow2i(vf n)
{
    const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
}

/* t[c] = a[r*lda + c] for rows r = 0..7: rows r and r+4 share a register (one per
 * 128-bit lane), then a 4x4 transpose inside each lane. */
static inline void v_load_t4(const float *a, ptrdiff_t lda, vf t[4])
{
    vf r[4];
    for (int i = 0; i < 4; i++)
        r[i] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(a + i * lda)),
                                    _mm_loadu_ps(a + (i + 4) * lda), 1);
    const vf u0 = _mm256_unpacklo_ps(r[0], r[1]), u1 = _mm256_unpackhi_ps(r[0], r[1]);
    const vf u2 = _mm256_unpacklo_ps(r[2], r[3]), u3 = _mm256_unpackhi_ps(r[2], r[3]);
    t[0] = _mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(1, 0, 1, 0));
    t[1] = _mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(3, 2, 3, 2));
    t[2] = _mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(1, 0, 1, 0));
    t[3] = _mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(3, 2, 3, 2));
}

#include "nn/kernels_simd.h"
