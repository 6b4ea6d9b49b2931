/* frl_weights: the versioned double buffer the asynchronous sampler acts from. */
#include <string.h>

#include "core/alloc.h"
#include "rl/weights.h"

static size_t buffer_floats(const frl_weights *w)
{
    return w->num_params + 2 * (size_t)w->obs_w;
}

static void copy_from(frl_weights *w, int32_t i, const frl_policy *p)
{
    float *b = w->buf[i];
    memcpy(b, p->params, sizeof(float) * w->num_params);
    memcpy(b + w->num_params, p->norm.use_mean, sizeof(float) * (size_t)w->obs_w);
    memcpy(b + w->num_params + w->obs_w, p->norm.use_inv_std, sizeof(float) * (size_t)w->obs_w);
    w->version[i] = p->version;
}

frl_status frl_weights_init(frl_weights *w, const frl_allocator *alloc, const frl_policy *p,
                            char *err)
{
    memset(w, 0, sizeof *w);
    w->alloc = alloc;
    w->num_params = p->num_params;
    w->obs_w = p->obs_w;
    for (int i = 0; i < 2; i++)
        if (!(w->buf[i] = frl_alloc(alloc, sizeof(float) * buffer_floats(w), FRL_CACHE_LINE))) {
            frl_weights_free(w);
            return frl_fail(err, FRL_ERR_NOMEM, "acting weights: out of memory for %zu floats",
                            buffer_floats(w));
        }
    if (pthread_mutex_init(&w->lock, NULL) != 0) {
        frl_weights_free(w);
        return frl_fail(err, FRL_ERR_THREAD, "acting weights: cannot initialise a mutex");
    }
    if (pthread_cond_init(&w->released, NULL) != 0) {
        pthread_mutex_destroy(&w->lock);
        frl_weights_free(w);
        return frl_fail(err, FRL_ERR_THREAD, "acting weights: cannot initialise a condition");
    }
    w->sync_live = 1;
    copy_from(w, 0, p);
    w->current = 0;
    return FRL_OK;
}

void frl_weights_free(frl_weights *w)
{
    if (w->sync_live) {
        pthread_cond_destroy(&w->released);
        pthread_mutex_destroy(&w->lock);
        w->sync_live = 0;
    }
    for (int i = 0; i < 2; i++) {
        if (w->alloc)
            frl_free(w->alloc, w->buf[i]);
        w->buf[i] = NULL;
    }
}

static void view_of(const frl_weights *w, int32_t i, const frl_policy *p, frl_weights_view *v)
{
    const float *b = w->buf[i];
    v->index = i;
    v->version = w->version[i];
    v->staged = w->staged[i];
    v->params = b;
    memset(&v->norm, 0, sizeof v->norm);
    v->norm.width = p->norm.width;
    v->norm.stride = p->norm.stride;
    v->norm.at = p->norm.at;
    v->norm.clip = p->norm.clip;
    v->norm.use_mean = (float *)(b + w->num_params);
    v->norm.use_inv_std = (float *)(b + w->num_params + w->obs_w);
}

frl_status frl_weights_publish(frl_weights *w, const frl_policy *p, frl_weights_stage_fn stage,
                               void *ctx, char *err)
{
    pthread_mutex_lock(&w->lock);
    int32_t idle = 1 - w->current;
    /* Readers of the idle buffer pinned it while it was current; each holds it for one
     * batch. New readers pin the current buffer only, so this wait ends. */
    while (w->readers[idle] > 0)
        pthread_cond_wait(&w->released, &w->lock);
    pthread_mutex_unlock(&w->lock);
    /* Nobody can pin `idle` until it becomes current below: only this thread
     * changes `current`. */
    copy_from(w, idle, p);
    frl_status st = FRL_OK;
    int32_t staged = 0;
    if (stage) {
        frl_weights_view v;
        view_of(w, idle, p, &v);
        st = stage(ctx, &v, &staged, err);
    }
    pthread_mutex_lock(&w->lock);
    w->staged[idle] = st == FRL_OK && staged;
    w->current = idle;
    pthread_mutex_unlock(&w->lock);
    return st;
}

void frl_weights_pin(frl_weights *w, const frl_policy *p, frl_weights_view *v)
{
    pthread_mutex_lock(&w->lock);
    int32_t i = w->current;
    w->readers[i]++;
    view_of(w, i, p, v);
    pthread_mutex_unlock(&w->lock);
}

void frl_weights_unpin(frl_weights *w, const frl_weights_view *v)
{
    pthread_mutex_lock(&w->lock);
    if (--w->readers[v->index] == 0 && v->index != w->current)
        pthread_cond_signal(&w->released);
    pthread_mutex_unlock(&w->lock);
}
