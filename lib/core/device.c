/* runtime.device: the CPU, or a CUDA device through the plugin libfastrl-cuda.so.0,
 * loaded with dlopen so that the core library links nothing of CUDA and runs where no
 * driver exists. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "core/config_keys.h"
#include "core/device.h"
#include "core/plugin_api.h"
#include "core/plugin_load.h"

/* Device 0 through the plugin, described in d->name, with a context open on it; 0 on
 * success, else why says. */
static int open_cuda(frl_device *d, int tf32, char *why, size_t size)
{
    void *h = frl_plugin_open(FRL_CUDA_PLUGIN_FILE, "FRL_CUDA_PLUGIN", "build with -Dcuda=enabled",
                              why, size);
    if (!h)
        return 1;
    const frl_cuda_plugin *p = frl_plugin_table(h, FRL_CUDA_PLUGIN_FILE, "FRL_CUDA_PLUGIN",
                                                FRL_CUDA_PLUGIN_SYMBOL, FRL_CUDA_PLUGIN_ABI,
                                                why, size);
    int32_t count = 0;
    if (!p || p->probe(&count, why, size) != 0) {
        dlclose(h);
        return 1;
    }
    void *ctx = NULL;
    if (p->open(&ctx, 0, tf32, why, size) != 0) {
        dlclose(h);
        return 1;
    }
    char dev[96] = "?";
    int32_t major = 0, minor = 0;
    uint64_t mem = 0;
    p->describe(0, dev, sizeof dev, &major, &minor, &mem);
    snprintf(d->name, sizeof d->name, "cuda:0 %s (cc %d.%d, %.0f GiB; %d device%s)", dev,
             (int)major, (int)minor, (double)mem / (1024.0 * 1024 * 1024), (int)count,
             count == 1 ? "" : "s");
    d->kind = FRL_DEVICE_CUDA;
    d->plugin_handle = h;
    d->plugin = p;
    d->ctx = ctx;
    return 0;
}

frl_status frl_device_open(frl_device *d, int64_t choice, int tf32, char *err)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "cpu");
    if (choice == FRL_RUNTIME_DEVICE_CPU)
        return FRL_OK;
    char why[FRL_ERRMSG_SIZE - 40] = "";
    if (open_cuda(d, tf32, why, sizeof why) != 0) {
        if (choice == FRL_RUNTIME_DEVICE_CUDA)
            return frl_fail(err, FRL_ERR_UNSUPPORTED, "runtime.device=cuda: %s", why);
        snprintf(d->note, sizeof d->note, "runtime.device=auto: on the CPU, %s", why);
        return FRL_OK;
    }
    const frl_cuda_plugin *p = d->plugin;
    d->automatic = choice == FRL_RUNTIME_DEVICE_AUTO;
    if (choice == FRL_RUNTIME_DEVICE_AUTO && !(p->capabilities & FRL_CUDA_CAP_LEARNER)) {
        /* A device is there, but nothing can run on it yet: auto means the fastest
         * place that works. */
        snprintf(d->note, sizeof d->note, "runtime.device=auto: on the CPU, the CUDA plugin "
                 "found %s but has no GPU learner yet", d->name);
        frl_device_close(d);
        snprintf(d->name, sizeof d->name, "cpu");
    }
    return FRL_OK;
}

/* Measured on an H200 host with 16 cores (bench/gpu/README.md, "Which device pays"):
 * PPO on CartPole with 64x64 networks ran at 0.45x the CPU's env steps/s on the device
 * with 16 and 64 envs, 1.01x with 256, 1.47x with 1,024 and 2.3x with 4,096. What the
 * device saves is the CPU's share of inference and learning, which its threads divide:
 * the device is taken from 16 envs a thread (256 with 16 threads, where its steady rate
 * was 1.40x the CPU's; 32 with 2). */
int frl_device_pays(int32_t envs, int32_t threads)
{
    return (int64_t)envs >= 16 * (int64_t)(threads > 0 ? threads : 1);
}

void frl_device_close(frl_device *d)
{
    if (d->ctx)
        d->plugin->close(d->ctx);
    d->ctx = NULL;
    if (d->plugin_handle)
        dlclose(d->plugin_handle);
    d->plugin_handle = NULL;
    d->plugin = NULL;
    d->kind = FRL_DEVICE_CPU;
}

/* The plugins of tests may leave out pinned memory: their runtimes use the allocator. */
static const frl_cuda_plugin *pinning(const frl_device *d)
{
    const frl_cuda_plugin *p = d->kind == FRL_DEVICE_CUDA ? d->plugin : NULL;
    return p && p->alloc_pinned && p->free_pinned ? p : NULL;
}

void *frl_device_host_alloc(const frl_device *d, const frl_allocator *al, size_t bytes,
                            char *why, size_t size)
{
    const frl_cuda_plugin *p = pinning(d);
    if (!p) {
        void *mem = frl_alloc(al, bytes, 4096);
        if (!mem)
            snprintf(why, size, "out of memory for %zu bytes", bytes);
        return mem;
    }
    void *mem = p->alloc_pinned(d->ctx, bytes, why, size);
    if (mem)
        memset(mem, 0, bytes);
    return mem;
}

void frl_device_host_free(const frl_device *d, const frl_allocator *al, void *mem)
{
    const frl_cuda_plugin *p = pinning(d);
    if (!p)
        frl_free(al, mem);
    else if (mem)
        p->free_pinned(d->ctx, mem);
}
