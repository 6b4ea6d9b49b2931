/* The build description for `fastrl info`. It names the network kernels chosen for this
 * CPU, so it lives with them in nn, above the CPU probe in core. */
#include <pthread.h>
#include <stdio.h>

#include "fastrl.h"
#include "nn/kernels.h"

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
             "blas: none (the kernel tables run every layer; bench/bench_kernels and "
             "bench_conv time them against OpenBLAS's sgemm)\n"
             "env kernels: portable C, one specialised loop per environment\n",
             frl_version_string(), frl_kernels_get()->name);
}

FRL_API const char *frl_build_info(void)
{
    pthread_once(&build_info_once, format_build_info);
    return build_info;
}
