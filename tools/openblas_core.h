/* OpenBLAS's choice of kernels, for the programs that time sgemm as a floor
 * (fastrl bench train, bench/bench_kernels, bench/bench_conv).
 *
 * A DYNAMIC_ARCH OpenBLAS (Debian's) picks its kernels by CPU model when it loads. A
 * release older than the CPU does not know the model and falls back to a generic core:
 * Debian 12's 0.3.21 runs an Emerald Rapids Xeon (family 6, model 207) as "Prescott",
 * SSE3, and its sgemm at 21-28 GFLOP/s against 74-91 with its SkylakeX kernels on the
 * same core (bench_conv, 2026-11-27). A floor three times too low would make every
 * "fraction of the floor" three times too high. The choice is made at load, so it can
 * only be corrected by running the program again with OPENBLAS_CORETYPE set, which
 * frl_openblas_check_core does once, saying so. */
#ifndef FRL_TOOLS_OPENBLAS_CORE_H
#define FRL_TOOLS_OPENBLAS_CORE_H

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#ifdef OPENBLAS_VERSION
/* Cores that use neither AVX2 nor AVX-512 (OpenBLAS's names, driver/others/dynamic.c). */
static inline int frl_openblas_core_pre_avx2(const char *core)
{
    static const char *const old[] = {"Prescott",  "Core2",     "Penryn",    "Dunnington",
                                      "Nehalem",   "Sandybridge", "Atom",    "Katmai",
                                      "Coppermine", "Northwood", "Banias",   "Opteron",
                                      "Opteron_SSE3", "Barcelona", "Bobcat", "Bulldozer",
                                      "Piledriver", "Steamroller", "Unknown"};
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++)
        if (!strcasecmp(core, old[i]))
            return 1;
    return 0;
}

/* The core OpenBLAS should use on this CPU when the one it chose leaves the CPU's
 * vectors unused, else NULL. */
static inline const char *frl_openblas_better_core(const char *core)
{
    __builtin_cpu_init();
    int avx512 = __builtin_cpu_supports("avx512f"), avx2 = __builtin_cpu_supports("avx2");
    int old = frl_openblas_core_pre_avx2(core);
    if (avx512 && (old || !strcasecmp(core, "Haswell") || !strcasecmp(core, "Zen")))
        return "SkylakeX";
    if (avx2 && old)
        return "Haswell";
    return NULL;
}

/* Called first in main with main's argv: re-executes the program with OPENBLAS_CORETYPE
 * when OpenBLAS chose a core below the CPU and the variable is not already set (by the
 * user, or by this once). Returns if it does not (or cannot) re-execute. */
static inline void frl_openblas_check_core(char **argv)
{
    const char *core = openblas_get_corename();
    const char *better = core ? frl_openblas_better_core(core) : NULL;
    if (!better || getenv("OPENBLAS_CORETYPE"))
        return;
    fprintf(stderr, "OpenBLAS chose its %s kernels, older than this CPU (a release that "
            "predates the model): running again with OPENBLAS_CORETYPE=%s, so that the "
            "sgemm floor is the CPU's\n", core, better);
    fflush(stdout);
    if (setenv("OPENBLAS_CORETYPE", better, 1) == 0)
        execv("/proc/self/exe", argv);
    perror("re-executing with OPENBLAS_CORETYPE set");
}

/* "SkylakeX" or the like, for the figures' headers. */
static inline const char *frl_openblas_core(void)
{
    const char *core = openblas_get_corename();
    return core ? core : "unknown";
}
#else
static inline void frl_openblas_check_core(char **argv)
{
    (void)argv;
}

static inline const char *frl_openblas_core(void)
{
    return "not OpenBLAS";
}
#endif

#endif
