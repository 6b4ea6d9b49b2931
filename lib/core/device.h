/* Which device a runtime computes on, and the CUDA plugin behind it (runtime.device). */
#ifndef FRL_CORE_DEVICE_H
#define FRL_CORE_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "core/alloc.h"
#include "core/error.h"
#include "fastrl.h"

struct frl_cuda_plugin; /* plugin_api.h, for those that call it */

typedef enum frl_device_kind { FRL_DEVICE_CPU = 0, FRL_DEVICE_CUDA = 1 } frl_device_kind;

typedef struct frl_device {
    frl_device_kind kind;
    void *plugin_handle;           /* dlopen handle of libfastrl-cuda, or NULL */
    const struct frl_cuda_plugin *plugin; /* its table (plugin_api.h) */
    void *ctx;                     /* the plugin's context on device 0 (stream, cuBLAS) */
    char name[160];                /* "cpu" or "cuda:0 NVIDIA H100 ... (cc 9.0, 80 GiB)" */
    char note[FRL_ERRMSG_SIZE];    /* auto: why it stayed on the CPU ("" otherwise) */
    /* runtime.device=auto chose the device: networks it cannot hold stay on the CPU,
     * and trainers leave it for workloads the CPU runs faster (frl_device_pays). */
    int32_t automatic;
} frl_device;

/* Choose the device for runtime.device (choice: FRL_RUNTIME_DEVICE_CPU, _CUDA or _AUTO
 * of core/config_keys.h). cuda that cannot be had
 * fails with FRL_ERR_UNSUPPORTED and the reason; auto then stays on the CPU and keeps
 * the reason in d->note. */
frl_status frl_device_open(frl_device *d, int64_t choice, int tf32, char *err);
void frl_device_close(frl_device *d);
/* Whether a trainer of `envs` environments on `threads` threads runs faster with its
 * networks on the device than on the CPU (runtime.device=auto's rule). */
int frl_device_pays(int32_t envs, int32_t threads);

/* Host memory for buffers that cross to the device (ring slots, inference inputs and
 * outputs): page-locked through the plugin on a CUDA device, so the copies run
 * asynchronously and without a staging copy in the driver; from the allocator al
 * otherwise. Zeroed, aligned to 4096. NULL when there is none, with the reason in why.
 * Free with frl_device_host_free on the same device and allocator. */
void *frl_device_host_alloc(const frl_device *d, const frl_allocator *al, size_t bytes,
                            char *why, size_t size);
void frl_device_host_free(const frl_device *d, const frl_allocator *al, void *p);

#endif
