#include <string.h>

#include "algo/param_passes.h"

typedef struct param_job {
    size_t n;
    /* summing */
    const float *grads;
    size_t stride;
    int32_t shards;
    float *out;
    /* Adam */
    const frl_adam *adam;
    const frl_kernels *k;
    float *params;
    const float *g;
    double lr;
    float scale;
} param_job;

static void part_range(size_t n, int32_t part, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)part / FRL_PARAM_PARTS;
    *hi = n * (size_t)(part + 1) / FRL_PARAM_PARTS;
}

static int on_pool(const frl_pool *pool, size_t n)
{
    return n >= FRL_PARALLEL_PARAMS && frl_pool_threads(pool) > 1;
}

static void sum_range(const param_job *j, size_t lo, size_t hi)
{
    memcpy(j->out + lo, j->grads + lo, sizeof(float) * (hi - lo));
    for (int32_t s = 1; s < j->shards; s++) {
        const float *gs = j->grads + (size_t)s * j->stride;
        for (size_t i = lo; i < hi; i++)
            j->out[i] += gs[i];
    }
}

static int sum_task(void *user, int32_t part, int32_t thread)
{
    (void)thread;
    const param_job *j = user;
    size_t lo, hi;
    part_range(j->n, part, &lo, &hi);
    sum_range(j, lo, hi);
    return 0;
}

void frl_params_sum_shards(frl_pool *pool, const float *grads, size_t stride, int32_t shards,
                           float *out, size_t n)
{
    param_job j = {.n = n, .grads = grads, .stride = stride, .shards = shards, .out = out};
    int32_t failed;
    if (on_pool(pool, n))
        frl_pool_run(pool, FRL_PARAM_PARTS, sum_task, &j, &failed);
    else
        sum_range(&j, 0, n);
}

static int adam_task(void *user, int32_t part, int32_t thread)
{
    (void)thread;
    const param_job *j = user;
    size_t lo, hi;
    part_range(j->n, part, &lo, &hi);
    frl_adam_update(j->adam, j->k, j->params, j->g, lo, hi, j->lr, j->scale);
    return 0;
}

void frl_params_adam(frl_pool *pool, frl_adam *adam, const frl_kernels *k, float *params,
                     const float *g, size_t n, double lr, float scale)
{
    frl_adam_begin(adam);
    int32_t failed;
    if (on_pool(pool, n)) {
        param_job j = {.n = n, .adam = adam, .k = k, .params = params, .g = g, .lr = lr,
                       .scale = scale};
        frl_pool_run(pool, FRL_PARAM_PARTS, adam_task, &j, &failed);
    } else {
        frl_adam_update(adam, k, params, g, 0, n, lr, scale);
    }
}
