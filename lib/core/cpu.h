/* What this CPU can run, probed in one place (cpu.c): the public
 * frl_cpu_features() and the network kernels' choice of table (lib/nn/kernels.c) read
 * the same answer, and the kernels need not probe the CPU themselves. */
#ifndef FRL_CORE_CPU_H
#define FRL_CORE_CPU_H

#include <stddef.h>

/* x86 vector levels, each including the ones below; FRL_CPU_BASE elsewhere. The
 * probe (__builtin_cpu_supports) also checks that the OS saves the wider registers. */
typedef enum frl_cpu_level {
    FRL_CPU_BASE = 0,     /* sse2 on x86-64 */
    FRL_CPU_AVX = 1,
    FRL_CPU_AVX2_FMA = 2, /* avx2 and fma */
    FRL_CPU_AVX512F = 3
} frl_cpu_level;

frl_cpu_level frl_cpu_level_get(void);

/* This CPU's brand string, trimmed, its runs of spaces made one ("unknown" where the
 * CPU does not say), into buf of size bytes: latency models record it, since times
 * measured on one CPU do not hold on another, even with the same kernels. */
void frl_cpu_name(char *buf, size_t size);

#endif
