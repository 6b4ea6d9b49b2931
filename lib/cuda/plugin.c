/* The plugin's side of the ABI (lib/core/plugin_api.h) over one device-ops table, chosen at build
 * time: FRL_DEV_OPS=frl_dev_ops_cuda in libfastrl-cuda.so.0, frl_dev_ops_host
 * (tests/cuda/ops_host.c) in the test build that runs everything on the host. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/dev_learner.h"
#include "cuda/model.h"

#ifndef FRL_DEV_OPS
#error "FRL_DEV_OPS names the device-ops table (frl_dev_ops_cuda or frl_dev_ops_host)"
#endif

/* Declared here, not in dev_ops.h, so that the library's headers name no test double. */
extern const frl_dev_ops FRL_DEV_OPS;
static const frl_dev_ops *const ops = &FRL_DEV_OPS;

/* A context: the device and its settings, and one stream of its own for pinned memory.
 * Each model opens its own stream on the same device (one per role). Page-locked memory
 * is asked for from any thread, and the ops keep a refusal's reason in d until the next
 * sync: lock holds d for one caller's allocation and its reason. */
typedef struct context {
    frl_dev *d;
    int32_t device, tf32;
    pthread_mutex_t lock;
} context;

static int ctx_open(void **out, int32_t device, int32_t tf32, char *err, size_t err_size)
{
    context *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, err_size, "out of host memory");
        return 1;
    }
    if (ops->open(&c->d, device, tf32, err, err_size)) {
        free(c);
        return 1;
    }
    pthread_mutex_init(&c->lock, NULL);
    c->device = device;
    c->tf32 = tf32;
    *out = c;
    return 0;
}

static void ctx_close(void *p)
{
    context *c = p;
    if (!c)
        return;
    ops->close(c->d);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static void *pinned(void *p, size_t bytes, char *err, size_t err_size)
{
    context *c = p;
    pthread_mutex_lock(&c->lock);
    void *mem = ops->alloc_pinned(c->d, bytes);
    /* The ops keep the driver's reason as the context's pending failure. */
    if (!mem && ops->sync(c->d, err, err_size) == 0)
        snprintf(err, err_size, "no page-locked host memory for %zu bytes", bytes);
    pthread_mutex_unlock(&c->lock);
    return mem;
}

static void unpin(void *p, void *mem)
{
    context *c = p;
    char ignored[8];
    pthread_mutex_lock(&c->lock);
    ops->release_pinned(c->d, mem);
    /* A failure to free has no caller to tell; kept, a later refusal would carry it. */
    if (ops->check(c->d, ignored, sizeof ignored))
        ops->sync(c->d, ignored, sizeof ignored);
    pthread_mutex_unlock(&c->lock);
}

static void model_destroy(void *p)
{
    frl_cuda_model *m = p;
    if (!m)
        return;
    frl_dev *d = m->net.d;
    for (int i = 0; i < 2; i++) {
        ops->release(d, m->snap[i].buf);
        if (m->snap[i].ready)
            ops->event_destroy(d, m->snap[i].ready);
    }
    ops->release(d, m->net.params);
    ops->release(d, m->net.norm_mean);
    ops->release(d, m->net.norm_inv_std);
    frl_cuda_model_forward_release(m);
    ops->release(d, m->obs);
    ops->release(d, m->ws);
    frl_cuda_step_release(m);
    ops->close(d);
    free(m);
}

static int out_of_memory(const frl_net_desc *n, char *err, size_t err_size)
{
    snprintf(err, err_size, "out of device memory for a model of %llu parameters and %d rows",
             (unsigned long long)n->num_params, (int)n->max_rows);
    return 1;
}

static int model_alloc(frl_cuda_model *m, char *err, size_t err_size)
{
    const frl_net_desc *n = &m->net.desc;
    frl_dev *d = m->net.d;
    size_t f = sizeof(float), rows = (size_t)n->max_rows, ow = (size_t)n->obs_w;
    m->net.params = ops->alloc(d, f * n->num_params);
    m->net.norm_mean = ops->alloc(d, f * ow);
    m->net.norm_inv_std = ops->alloc(d, f * ow);
    m->obs = ops->alloc(d, f * rows * ow);
    m->ws = ops->alloc(d, f * frl_dev_pass_floats(n, n->max_rows, 0));
    if (!m->net.params || !m->net.norm_mean || !m->net.norm_inv_std || !m->obs || !m->ws)
        return out_of_memory(n, err, err_size);
    return n->towers ? frl_cuda_step_alloc(m, err, err_size) : 0;
}

/* FRL_CUDA_FORWARD names the path every model starts with (benchmarks compare them
 * through whole programs); unset or unknown, AUTO. */
static int32_t default_path(void)
{
    const char *v = getenv("FRL_CUDA_FORWARD");
    for (int32_t p = 0; v && p < FRL_CUDA_PATHS; p++)
        if (!strcmp(v, frl_cuda_path_name(p)))
            return p;
    return FRL_CUDA_PATH_AUTO;
}

static int model_create(void *ctx, const frl_net_desc *desc, void **out, char *err,
                        size_t err_size)
{
    if (desc->max_rows < 1 || desc->obs_w < 1 || desc->out_w < 1 || desc->num_params < 1) {
        snprintf(err, err_size, "a model needs max_rows, obs_w, out_w and parameters >= 1");
        return 1;
    }
    if (desc->towers < 0 || desc->towers > 2 || (desc->towers && desc->state_w < 1) ||
        desc->head < 0 || desc->head > 2) {
        snprintf(err, err_size, "a model has 0 to 2 towers (with state) and heads 0 to 2");
        return 1;
    }
    frl_cuda_model *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, err_size, "out of host memory");
        return 1;
    }
    const context *c = ctx;
    if (ops->open(&m->net.d, c->device, c->tf32, err, err_size)) {
        free(m);
        return 1;
    }
    m->net.ops = ops;
    m->net.desc = *desc;
    m->device = c->device;
    m->tf32 = c->tf32;
    frl_cuda_model_plan(m);
    m->path = default_path();
    const char *fuse = getenv("FRL_CUDA_FUSE");
    m->net.unfused = fuse && fuse[0] == '0';
    if (model_alloc(m, err, err_size)) {
        model_destroy(m);
        return 1;
    }
    *out = m;
    return 0;
}

static int model_load(void *p, const float *params, const float *mean, const float *inv_std,
                      float clip, char *err, size_t err_size)
{
    frl_cuda_model *m = p;
    size_t f = sizeof(float), ow = (size_t)m->net.desc.obs_w;
    if (params)
        ops->put(m->net.d, m->net.params, params, f * m->net.desc.num_params);
    if (mean && inv_std) {
        ops->put(m->net.d, m->net.norm_mean, mean, f * ow);
        ops->put(m->net.d, m->net.norm_inv_std, inv_std, f * ow);
    }
    m->net.norm_clip = clip;
    return ops->sync(m->net.d, err, err_size);
}

static int model_forward(void *p, int32_t rows, const float *obs, float *out, float *value,
                         char *err, size_t err_size)
{
    frl_cuda_model *m = p;
    const frl_net_desc *n = &m->net.desc;
    if (rows < 1 || rows > n->max_rows) {
        snprintf(err, err_size, "model_forward: %d rows, the model takes 1 to %d", (int)rows,
                 (int)n->max_rows);
        return 1;
    }
    if (n->towers) {
        snprintf(err, err_size, "model_forward: a recurrent model steps (model_step)");
        return 1;
    }
    if (value && !n->critic.layers) {
        snprintf(err, err_size, "model_forward: a Q-head has no values");
        return 1;
    }
    return frl_cuda_model_forward(m, rows, obs, out, value, err, err_size);
}

static int model_step(void *p, int32_t rows, const float *obs, float *state, float *out,
                      float *value, char *err, size_t err_size)
{
    return frl_cuda_model_step(p, rows, obs, state, out, value, err, err_size);
}

static int model_path(void *p, int32_t path, char *err, size_t err_size)
{
    if (!frl_cuda_path_name(path)) {
        snprintf(err, err_size, "model_path: %d is no path (0 to %d)", (int)path,
                 FRL_CUDA_PATHS - 1);
        return 1;
    }
    ((frl_cuda_model *)p)->path = path;
    return 0;
}

static int32_t model_last_path(void *p)
{
    return ((frl_cuda_model *)p)->last_path;
}

static int model_members(void *p, int32_t members, int64_t stride, const float *params,
                         char *err, size_t err_size)
{
    return frl_cuda_model_members(p, members, stride, params, err, err_size);
}

static int model_forward_members(void *p, int32_t rows, const int32_t *members,
                                 const float *obs, float *out, char *err, size_t err_size)
{
    return frl_cuda_model_forward_members(p, rows, members, obs, out, err, err_size);
}

static size_t snapshot_floats(const frl_net_desc *n)
{
    return (size_t)n->num_params + 2 * (size_t)n->obs_w;
}

static int snapshot_alloc(frl_cuda_model *m, frl_cuda_snapshot *s, char *err, size_t err_size)
{
    frl_dev *d = m->net.d;
    s->buf = ops->alloc(d, sizeof(float) * snapshot_floats(&m->net.desc));
    if (!s->buf) {
        snprintf(err, err_size, "out of device memory for a snapshot of %llu parameters",
                 (unsigned long long)m->net.desc.num_params);
        return 1;
    }
    if (!(s->ready = ops->event_create(d))) {
        ops->release(d, s->buf);
        s->buf = NULL;
        if (ops->sync(d, err, err_size) == 0)
            snprintf(err, err_size, "no event for a snapshot");
        return 1;
    }
    return 0;
}

/* After a failure to queue, the stream may still run what was queued before it: it
 * drains, so that the caller may reuse the memory (the sentence is already in err). */
static int failed_to_queue(frl_dev *d, char *err, size_t err_size)
{
    if (ops->check(d, err, err_size) == 0)
        return 0;
    char again[8];
    ops->sync(d, again, sizeof again);
    return 1;
}

static int model_stage(void *p, int32_t slot, const float *mean, const float *inv_std,
                       float clip, char *err, size_t err_size)
{
    frl_cuda_model *m = p;
    if (slot < 0 || slot > 1) {
        snprintf(err, err_size, "model_stage: slot %d, there are slots 0 and 1", (int)slot);
        return 1;
    }
    frl_cuda_snapshot *s = &m->snap[slot];
    if (!s->buf && snapshot_alloc(m, s, err, err_size))
        return 1;
    frl_dev *d = m->net.d;
    size_t f = sizeof(float), np = (size_t)m->net.desc.num_params;
    size_t ow = (size_t)m->net.desc.obs_w;
    ops->copy(d, s->buf, m->net.params, f * np);
    s->norm = mean && inv_std;
    if (s->norm) {
        ops->put(d, s->buf + np, mean, f * ow);
        ops->put(d, s->buf + np + ow, inv_std, f * ow);
    }
    s->clip = clip;
    ops->record(d, s->ready);
    return failed_to_queue(d, err, err_size);
}

static int model_take(void *dst, void *src, int32_t slot, char *err, size_t err_size)
{
    frl_cuda_model *t = dst;
    const frl_cuda_model *m = src;
    const frl_net_desc *a = &t->net.desc, *b = &m->net.desc;
    if (slot < 0 || slot > 1 || !m->snap[slot].buf) {
        snprintf(err, err_size, "model_take: slot %d was never staged", (int)slot);
        return 1;
    }
    if (a->num_params != b->num_params || a->obs_w != b->obs_w) {
        snprintf(err, err_size, "model_take: a model of %llu parameters cannot take a "
                 "snapshot of %llu", (unsigned long long)a->num_params,
                 (unsigned long long)b->num_params);
        return 1;
    }
    const frl_cuda_snapshot *s = &m->snap[slot];
    frl_dev *d = t->net.d;
    size_t f = sizeof(float), np = (size_t)a->num_params, ow = (size_t)a->obs_w;
    ops->wait(d, s->ready);
    ops->copy(d, t->net.params, s->buf, f * np);
    if (s->norm) {
        ops->copy(d, t->net.norm_mean, s->buf + np, f * ow);
        ops->copy(d, t->net.norm_inv_std, s->buf + np + ow, f * ow);
    }
    t->net.norm_clip = s->clip;
    return failed_to_queue(d, err, err_size);
}

static int learner_create(void *p, const frl_dm_learn_desc *s, void **out, char *err,
                          size_t err_size)
{
    const frl_net_desc *n = &((frl_cuda_model *)p)->net.desc;
    if (n->towers || n->head) {
        snprintf(err, err_size, "the device learner trains actor-critic MLPs, not %s",
                 n->towers ? "recurrent policies" : "Q-heads");
        return 1;
    }
    return frl_dev_learner_create((frl_dev_learner **)out, &((frl_cuda_model *)p)->net, s, err, err_size);
}

static void learner_destroy(void *p)
{
    frl_dev_learner_destroy(p);
}

static int learner_begin(void *p, const frl_cuda_rollout *r, char *err, size_t err_size)
{
    return frl_dev_learner_begin(p, r, err, err_size);
}

static int learner_epoch(void *p, const int32_t *perm, double lr, int64_t adam_t,
                         frl_cuda_epoch_stats *out, char *err, size_t err_size)
{
    return frl_dev_learner_epoch(p, perm, lr, adam_t, out, err, err_size);
}

static int learner_end(void *p, float *params, float *ret, float *values, uint8_t *valid,
                       char *err, size_t err_size)
{
    return frl_dev_learner_end(p, params, ret, values, valid, err, err_size);
}

/* The ops table is another translation unit's constant, so the table below cannot
 * take its members in an initialiser: these forward to them. */
static int probe(int32_t *count, char *err, size_t err_size)
{
    return ops->probe(count, err, err_size);
}

static int describe(int32_t index, char *name, size_t name_size, int32_t *cc_major,
                    int32_t *cc_minor, uint64_t *memory_bytes)
{
    return ops->describe(index, name, name_size, cc_major, cc_minor, memory_bytes);
}

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)

static int learner_adam(void *p, float *m, float *v, int upload, char *err, size_t err_size)
{
    return frl_dev_learner_adam(p, m, v, upload, err, err_size);
}

static const frl_cuda_plugin plugin = {
    .abi = FRL_CUDA_PLUGIN_ABI,
    .capabilities = FRL_CUDA_CAP_INFERENCE | FRL_CUDA_CAP_LEARNER,
    .backend = STRINGIFY(FRL_DEV_OPS),
    .probe = probe,
    .describe = describe,
    .open = ctx_open,
    .close = ctx_close,
    .alloc_pinned = pinned,
    .free_pinned = unpin,
    .model_create = model_create,
    .model_destroy = model_destroy,
    .model_load = model_load,
    .model_forward = model_forward,
    .model_stage = model_stage,
    .model_take = model_take,
    .learner_create = learner_create,
    .learner_destroy = learner_destroy,
    .learner_begin = learner_begin,
    .learner_epoch = learner_epoch,
    .learner_end = learner_end,
    .learner_adam = learner_adam,
    .model_path = model_path,
    .model_last_path = model_last_path,
    .model_members = model_members,
    .model_forward_members = model_forward_members,
    .model_step = model_step,
};

__attribute__((visibility("default"))) const frl_cuda_plugin *frl_cuda_plugin_get(void);

const frl_cuda_plugin *frl_cuda_plugin_get(void)
{
    return &plugin;
}
