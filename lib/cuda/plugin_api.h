/* The interface between libfastrl and its CUDA plugin (libfastrl-cuda.so.0), which the
 * core loads with dlopen when a runtime asks for runtime.device=cuda or auto. The core
 * links nothing of CUDA; everything that touches the driver lives behind this table.
 * Internal: both sides are built from this tree, and the ABI number guards against a
 * plugin from another build. */
#ifndef FRL_CUDA_PLUGIN_API_H
#define FRL_CUDA_PLUGIN_API_H

#include <stddef.h>
#include <stdint.h>

#define FRL_CUDA_PLUGIN_ABI 1u
#define FRL_CUDA_PLUGIN_SYMBOL "frl_cuda_plugin_get"
#define FRL_CUDA_PLUGIN_FILE "libfastrl-cuda.so.0"

/* What the plugin can run. None yet: the GPU inference and learners come with the rest
 * of the CUDA issue, and until then runtime.device=auto stays on the CPU. */
enum { FRL_CUDA_CAP_INFERENCE = 1u, FRL_CUDA_CAP_LEARNER = 2u };

typedef struct frl_cuda_plugin {
    uint32_t abi;          /* FRL_CUDA_PLUGIN_ABI */
    uint32_t capabilities; /* FRL_CUDA_CAP_* */
    /* Find the driver and count the devices. 0 on success with *count >= 1; otherwise
     * nonzero with a sentence in err (no driver, no device, a driver too old). */
    int (*probe)(int32_t *count, char *err, size_t err_size);
    /* The name of device index ("NVIDIA H100 80GB HBM3"), its compute capability and
     * memory; 0 on success. */
    int (*describe)(int32_t index, char *name, size_t name_size, int32_t *cc_major,
                    int32_t *cc_minor, uint64_t *memory_bytes);
} frl_cuda_plugin;

typedef const frl_cuda_plugin *(*frl_cuda_plugin_get_fn)(void);

#endif
