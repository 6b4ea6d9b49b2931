/* CPU feature detection: see cpu.h. The build description for `fastrl info`, which
 * names the network kernels chosen from it, is lib/nn/build_info.c. */
#include <stdio.h>
#include <string.h>

#include "core/cpu.h"
#include "fastrl.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define FRL_CPU_X86 1
#else
#define FRL_CPU_X86 0
#endif
#if FRL_CPU_X86
#include <cpuid.h>
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

void frl_cpu_name(char *buf, size_t size)
{
    snprintf(buf, size, "unknown");
#if FRL_CPU_X86
    unsigned int r[12];
    if ((unsigned int)__get_cpuid_max(0x80000000u, NULL) < 0x80000004u) /* int in clang */
        return;
    for (unsigned int i = 0; i < 3; i++)
        __get_cpuid(0x80000002u + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
    char name[49];
    memcpy(name, r, 48);
    name[48] = '\0';
    /* The brand string pads with spaces, at either end on some CPUs: trimmed, and runs
     * of them made one, so the name is one field of a text line. */
    size_t at = 0;
    int space = 0;
    for (const char *c = name; *c; c++) {
        if ((unsigned char)*c <= ' ') {
            space = at > 0;
            continue;
        }
        if (space && at + 1 < size)
            buf[at++] = ' ';
        space = 0;
        if (at + 1 < size)
            buf[at++] = *c;
    }
    buf[at] = '\0';
    if (at == 0)
        snprintf(buf, size, "unknown");
#endif
}
