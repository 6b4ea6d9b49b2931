/* CPU feature detection and the build description for `fastrl info`. */
#include <pthread.h>
#include <stdio.h>

#include "fastrl.h"
#include "nn/kernels.h"

FRL_API const char *frl_cpu_features(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    /* The answer is one of a few static strings, so no buffer is shared between threads. */
    __builtin_cpu_init();
    static const char *const table[] = {
        "sse2", "sse2 avx", "sse2 avx avx2 fma", "sse2 avx avx2 fma avx512f",
    };
    int level = 0;
    if (__builtin_cpu_supports("avx"))
        level = 1;
    if (level == 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        level = 2;
    if (level == 2 && __builtin_cpu_supports("avx512f"))
        level = 3;
    return table[level];
#elif defined(__aarch64__)
    return "neon";
#else
    return "generic";
#endif
}

#ifndef FRL_CUDA_BUILT
#define FRL_CUDA_BUILT 0
#endif

#if defined(__clang__)
#define FRL_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define FRL_COMPILER "gcc " __VERSION__
#else
#define FRL_COMPILER "unknown"
#endif

#define FRL_STR2(x) #x
#define FRL_STR(x) FRL_STR2(x)

static char build_info[512];
static pthread_once_t build_info_once = PTHREAD_ONCE_INIT;

/* Formatted once: the network kernels are only known at run time. */
static void format_build_info(void)
{
    snprintf(build_info, sizeof build_info,
             "version: %s\n"
             "abi: " FRL_STR(FRL_ABI_VERSION_MAJOR) "." FRL_STR(FRL_ABI_VERSION_MINOR) "\n"
             "compiler: " FRL_COMPILER "\n"
             "cuda plugin built: " FRL_STR(FRL_CUDA_BUILT) "\n"
             "network kernels: %s (chosen for this CPU; FRL_KERNELS overrides)\n"
             "env kernels: portable C, one specialised loop per environment\n",
             frl_version_string(), frl_kernels_get()->name);
}

FRL_API const char *frl_build_info(void)
{
    pthread_once(&build_info_once, format_build_info);
    return build_info;
}
