/* Private to lib/nn: the tables the dispatcher in kernels.c chooses from. */
#ifndef FRL_NN_KERNELS_IMPL_H
#define FRL_NN_KERNELS_IMPL_H

#include "nn/kernels.h"

/* The SIMD tables exist on x86-64 with gcc or clang; lib/nn/meson.build builds them
 * under the same condition, so this macro and the build cannot disagree. */
#if defined(__x86_64__) && defined(__GNUC__)
#define FRL_KERNELS_X86 1
#else
#define FRL_KERNELS_X86 0
#endif

extern const frl_kernels frl_kernels_scalar;
#if FRL_KERNELS_X86
extern const frl_kernels frl_kernels_avx2;   /* kernels_avx2.c, built with -mavx2 -mfma */
extern const frl_kernels frl_kernels_avx512; /* kernels_avx512.c, adds -mavx512f */
#endif

#endif
