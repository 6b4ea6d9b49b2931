/* The AVX-512F table: the vector layer for 16-float zmm registers, then the shared
 * kernels. Compiled with -mavx512f -mavx2 -mfma (lib/nn/meson.build); kernels.c runs it
 * only on CPUs with all three. Only AVX-512F instructions are used (no DQ/VL/BW). */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define VLEN 16
#define MR_MAIN 8 /* 8 x 2 vectors: 16 of the 32 zmm registers accumulate */
#define NV_MAIN 2
#define NV_ROW1 4
#define NV_ROW2 4
#define KERNELS_TABLE frl_kernels_avx512
#define KERNELS_NAME "avx512"

typedef __m512 vf;
typedef __mmask16 vmask;
typedef __mmask16 vbool;

static inline vf v_zero(void) { return _mm512_setzero_ps(); }
static inline vf v_set1(float x) { return _mm512_set1_ps(x); }
static inline vf v_bcast(const float *p) { return _mm512_set1_ps(*p); }
static inline vf v_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void v_store(float *p, vf v) { _mm512_storeu_ps(p, v); }
static inline vmask v_mask_first(int n) { return (__mmask16)((1u << n) - 1u); }
/* Masked lanes are not read (and do not fault). */
static inline vf v_load_m(const float *p, vmask m) { return _mm512_maskz_loadu_ps(m, p); }
static inline void v_store_part(float *p, int n, vf v)
{
    _mm512_mask_storeu_ps(p, v_mask_first(n), v);
}
static inline vf v_add(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf v_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static inline vf v_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf v_div(vf a, vf b) { return _mm512_div_ps(a, b); }
static inline vf v_sqrt(vf a) { return _mm512_sqrt_ps(a); }
static inline vf v_fma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
static inline vf v_fnma(vf a, vf b, vf c) { return _mm512_fnmadd_ps(a, b, c); }
static inline vf v_min(vf a, vf b) { return _mm512_min_ps(a, b); }
static inline vf v_max(vf a, vf b) { return _mm512_max_ps(a, b); }
/* Bit operations on floats are AVX512DQ; go through the integer forms (AVX512F). */
static inline vf v_and_bits(vf a, int32_t bits)
{
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(bits)));
}
static inline vf v_abs(vf a) { return v_and_bits(a, 0x7fffffff); }
static inline vf v_sign(vf a) { return v_and_bits(a, (int32_t)0x80000000u); }
static inline vf v_or(vf a, vf b)
{
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}
static inline vbool v_gt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
static inline vf v_sel(vbool c, vf t, vf f) { return _mm512_mask_blend_ps(c, f, t); }
static inline vf v_round(vf a)
{
    return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* 2^n for integral n in [-126, 127]. */
static inline vf v_pow2i(vf n)
{
    const __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
}

/* t[c] = a[r*lda + c] for rows r = 0..15: rows r, r+4, r+8, r+12 share a register (one
 * per 128-bit lane), then a 4x4 transpose inside each lane. */
static inline void v_load_t4(const float *a, ptrdiff_t lda, vf t[4])
{
    vf r[4];
    for (int i = 0; i < 4; i++) {
        vf v = _mm512_castps128_ps512(_mm_loadu_ps(a + i * lda));
        v = _mm512_insertf32x4(v, _mm_loadu_ps(a + (i + 4) * lda), 1);
        v = _mm512_insertf32x4(v, _mm_loadu_ps(a + (i + 8) * lda), 2);
        r[i] = _mm512_insertf32x4(v, _mm_loadu_ps(a + (i + 12) * lda), 3);
    }
    const vf u0 = _mm512_unpacklo_ps(r[0], r[1]), u1 = _mm512_unpackhi_ps(r[0], r[1]);
    const vf u2 = _mm512_unpacklo_ps(r[2], r[3]), u3 = _mm512_unpackhi_ps(r[2], r[3]);
    t[0] = _mm512_shuffle_ps(u0, u2, _MM_SHUFFLE(1, 0, 1, 0));
    t[1] = _mm512_shuffle_ps(u0, u2, _MM_SHUFFLE(3, 2, 3, 2));
    t[2] = _mm512_shuffle_ps(u1, u3, _MM_SHUFFLE(1, 0, 1, 0));
    t[3] = _mm512_shuffle_ps(u1, u3, _MM_SHUFFLE(3, 2, 3, 2));
}

#include "nn/kernels_simd.h"
