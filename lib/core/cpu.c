/* CPU feature detection: see cpu.h. The build description for `fastrl info`, which
 * names the network kernels chosen from it, is lib/nn/build_info.c. */
#include "core/cpu.h"
#include "fastrl.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define FRL_CPU_X86 1
#else
#define FRL_CPU_X86 0
#endif

frl_cpu_level frl_cpu_level_get(void)
{
#if FRL_CPU_X86
    __builtin_cpu_init();
    frl_cpu_level level = FRL_CPU_BASE;
    if (__builtin_cpu_supports("avx"))
        level = FRL_CPU_AVX;
    if (level == FRL_CPU_AVX && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        level = FRL_CPU_AVX2_FMA;
    if (level == FRL_CPU_AVX2_FMA && __builtin_cpu_supports("avx512f"))
        level = FRL_CPU_AVX512F;
    return level;
#else
    return FRL_CPU_BASE;
#endif
}

FRL_API const char *frl_cpu_features(void)
{
#if FRL_CPU_X86
    /* The answer is one of a few static strings, so no buffer is shared between threads. */
    static const char *const table[] = {
        "sse2", "sse2 avx", "sse2 avx avx2 fma", "sse2 avx avx2 fma avx512f",
    };
    return table[frl_cpu_level_get()];
#elif defined(__aarch64__)
    return "neon";
#else
    return "generic";
#endif
}
