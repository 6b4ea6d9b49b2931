/* Run-time choice of the kernel table: once, on first use, by CPU features. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "nn/kernels_impl.h"

static const frl_kernels *const all_tables[] = {
    &frl_kernels_scalar,
#if FRL_KERNELS_X86
    &frl_kernels_avx2,
    &frl_kernels_avx512,
#endif
    NULL,
};

const frl_kernels *const *frl_kernels_all(void) { return all_tables; }

int frl_kernels_supported(const frl_kernels *k)
{
    if (k == &frl_kernels_scalar)
        return 1;
#if FRL_KERNELS_X86
    frl_cpu_level level = frl_cpu_level_get();
    if (k == &frl_kernels_avx2)
        return level >= FRL_CPU_AVX2_FMA;
    if (k == &frl_kernels_avx512)
        return level >= FRL_CPU_AVX512F; /* it uses AVX2 for tails, which the level includes */
#endif
    return 0;
}

const frl_kernels *frl_kernels_select(const char *name)
{
    /* all_tables is ordered slowest first, so the last runnable one is the fastest. */
    const frl_kernels *best = &frl_kernels_scalar;
    for (const frl_kernels *const *t = all_tables; *t; t++)
        if (frl_kernels_supported(*t))
            best = *t;
    if (!name || !*name)
        return best;
    for (const frl_kernels *const *t = all_tables; *t; t++)
        if (strcmp((*t)->name, name) == 0 && frl_kernels_supported(*t))
            return *t;
    return best;
}

static const frl_kernels *chosen;
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static void choose(void) { chosen = frl_kernels_select(getenv("FRL_KERNELS")); }

const frl_kernels *frl_kernels_get(void)
{
    pthread_once(&chosen_once, choose);
    return chosen;
}
