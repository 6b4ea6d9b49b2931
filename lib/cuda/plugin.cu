// libfastrl-cuda: the CUDA side of libfastrl, loaded by the core with dlopen (see
// plugin_api.h). It links the CUDA runtime statically, so what it needs from the
// machine is the driver (libcuda.so.1) and nothing else of the toolkit.
#include <cuda_runtime.h>
#include <stdio.h>

extern "C" {
#include "plugin_api.h"
}

static int probe(int32_t *count, char *err, size_t err_size)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaErrorInsufficientDriver) {
        snprintf(err, err_size, "no usable CUDA driver (libcuda.so.1 is missing or older than "
                 "this CUDA %d.%d build needs)", CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
        return 1;
    }
    if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0)) {
        snprintf(err, err_size, "the CUDA driver sees no device");
        return 1;
    }
    if (e != cudaSuccess) {
        snprintf(err, err_size, "cudaGetDeviceCount failed: %s", cudaGetErrorString(e));
        return 1;
    }
    *count = n;
    return 0;
}

static int describe(int32_t index, char *name, size_t name_size, int32_t *cc_major,
                    int32_t *cc_minor, uint64_t *memory_bytes)
{
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, index) != cudaSuccess)
        return 1;
    snprintf(name, name_size, "%s", p.name);
    *cc_major = p.major;
    *cc_minor = p.minor;
    *memory_bytes = (uint64_t)p.totalGlobalMem;
    return 0;
}

static const frl_cuda_plugin plugin = {FRL_CUDA_PLUGIN_ABI, 0u, probe, describe};

extern "C" __attribute__((visibility("default"))) const frl_cuda_plugin *frl_cuda_plugin_get(void)
{
    return &plugin;
}
