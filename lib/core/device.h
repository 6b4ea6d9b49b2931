/* Which device a runtime computes on, and the CUDA plugin behind it (runtime.device). */
#ifndef FRL_CORE_DEVICE_H
#define FRL_CORE_DEVICE_H

#include <stdint.h>

#include "core/error.h"
#include "fastrl.h"

typedef enum frl_device_kind { FRL_DEVICE_CPU = 0, FRL_DEVICE_CUDA = 1 } frl_device_kind;

typedef struct frl_device {
    frl_device_kind kind;
    void *plugin_handle;           /* dlopen handle of libfastrl-cuda, or NULL */
    const void *plugin;            /* its frl_cuda_plugin table */
    void *ctx;                     /* the plugin's context on device 0 (stream, cuBLAS) */
    char name[160];                /* "cpu" or "cuda:0 NVIDIA H100 ... (cc 9.0, 80 GiB)" */
    char note[FRL_ERRMSG_SIZE];    /* auto: why it stayed on the CPU ("" otherwise) */
} frl_device;

/* Choose the device for runtime.device (0 cpu, 1 cuda, 2 auto). cuda that cannot be had
 * fails with FRL_ERR_UNSUPPORTED and the reason; auto then stays on the CPU and keeps
 * the reason in d->note. */
frl_status frl_device_open(frl_device *d, int64_t choice, int tf32, char *err);
void frl_device_close(frl_device *d);

#endif
