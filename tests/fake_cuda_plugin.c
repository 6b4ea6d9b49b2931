/* A stand-in for libfastrl-cuda.so.0, so the device selection (lib/core/device.c) is
 * tested on machines without a GPU: FAKE_CUDA=ok|nodevice|badabi|notable chooses what it
 * reports, FAKE_CUDA_CAPS its capabilities. Its models fail to be made, as on a device
 * without the memory for them; with FAKE_CUDA_MODELS=1 they are made (and run nothing)
 * and its learners fail so instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/plugin_api.h"

static int probe(int32_t *count, char *err, size_t err_size)
{
    const char *mode = getenv("FAKE_CUDA");
    if (mode && strcmp(mode, "nodevice") == 0) {
        snprintf(err, err_size, "the CUDA driver sees no device");
        return 1;
    }
    *count = 2;
    return 0;
}

static int describe(int32_t index, char *name, size_t name_size, int32_t *cc_major,
                    int32_t *cc_minor, uint64_t *memory_bytes)
{
    snprintf(name, name_size, "Fake GPU %d", (int)index);
    *cc_major = 9;
    *cc_minor = 0;
    *memory_bytes = (uint64_t)80 << 30;
    return 0;
}

static int open_ctx(void **ctx, int32_t device, int32_t tf32, char *err, size_t err_size)
{
    (void)device, (void)tf32, (void)err, (void)err_size;
    static int dummy;
    *ctx = &dummy;
    return 0;
}

static void close_ctx(void *ctx)
{
    (void)ctx;
}

/* No networks: creating one fails as a device out of memory would, unless
 * FAKE_CUDA_MODELS=1 asks for models that hold nothing. */
static int model_create(void *ctx, const struct frl_net_desc *d, void **model, char *err,
                        size_t err_size)
{
    (void)ctx, (void)d;
    static int dummy;
    const char *models = getenv("FAKE_CUDA_MODELS");
    if (models && models[0] == '1') {
        *model = &dummy;
        return 0;
    }
    snprintf(err, err_size, "the fake plugin runs no networks");
    return 1;
}

static void model_destroy(void *model)
{
    (void)model;
}

static int learner_create(void *model, const struct frl_dm_learn_desc *d, void **learner,
                          char *err, size_t err_size)
{
    (void)model, (void)d, (void)learner;
    snprintf(err, err_size, "the fake plugin has no memory for a learner");
    return 1;
}

static frl_cuda_plugin plugin = {
    .abi = FRL_CUDA_PLUGIN_ABI,
    .backend = "fake",
    .probe = probe,
    .describe = describe,
    .open = open_ctx,
    .close = close_ctx,
    .model_create = model_create,
    .model_destroy = model_destroy,
    .learner_create = learner_create,
};

__attribute__((visibility("default"))) const frl_cuda_plugin *frl_cuda_plugin_get(void);

const frl_cuda_plugin *frl_cuda_plugin_get(void)
{
    const char *mode = getenv("FAKE_CUDA"), *caps = getenv("FAKE_CUDA_CAPS");
    if (mode && strcmp(mode, "notable") == 0)
        return NULL; /* the entry point exists but gives no table */
    plugin.abi = mode && strcmp(mode, "badabi") == 0 ? 99u : FRL_CUDA_PLUGIN_ABI;
    plugin.capabilities = caps ? (uint32_t)atoi(caps) : 0u;
    return &plugin;
}
