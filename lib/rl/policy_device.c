/* A policy's networks on the runtime's CUDA device, through the plugin's model
 * (lib/core/plugin_api.h): see policy_device.h. Errors name the device, as the runtime
 * described it. */
#include <string.h>

#include "core/plugin_api.h"
#include "rl/policy_device.h"

/* Room in a message for the plugin's reason after our own words. */
enum { WHY_SIZE = FRL_ERRMSG_SIZE - 64 };

frl_status frl_dev_model_create(frl_dev_model **out, const frl_device *d,
                                const frl_allocator *al, const frl_net_desc *n, const char *who)
{
    *out = NULL;
    frl_dev_model *m = frl_alloc(al, sizeof *m, FRL_CACHE_LINE);
    if (!m)
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory", who);
    *m = (frl_dev_model){d, al, NULL, n->max_rows, n->obs_w, n->out_w, n->head,
                         n->towers ? n->state_w : 0, NULL};
    if (m->head == 2) {
        m->v = frl_alloc(al, sizeof(float) * (size_t)m->rows, FRL_CACHE_LINE);
        if (!m->v) {
            frl_free(al, m);
            return frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory", who);
        }
    }
    char why[WHY_SIZE] = "";
    if (d->plugin->model_create(d->ctx, n, &m->model, why, sizeof why) != 0) {
        frl_free(al, m->v);
        frl_free(al, m);
        return frl_fail(NULL, FRL_ERR_DEVICE, "%s: on %s: %s", who, d->name, why);
    }
    *out = m;
    return FRL_OK;
}

void frl_dev_model_destroy(frl_dev_model *m)
{
    if (!m)
        return;
    if (m->model)
        m->device->plugin->model_destroy(m->model);
    frl_free(m->alloc, m->v);
    frl_free(m->alloc, m);
}

frl_status frl_dev_model_load(frl_dev_model *m, const float *params, const float *mean,
                              const float *inv_std, float clip, char *err)
{
    char why[WHY_SIZE] = "";
    if (m->device->plugin->model_load(m->model, params, mean, inv_std, clip, why,
                                      sizeof why) != 0)
        return frl_fail(err, FRL_ERR_DEVICE, "uploading the policy to %s: %s", m->device->name,
                        why);
    return FRL_OK;
}

/* A dueling Q's heads give A and V: the rows' Q from them (value: the caller's V, or
 * the model's own). */
static void combine(const frl_dev_model *m, int32_t n, float *out, const float *value)
{
    if (m->head == 2)
        frl_net_dueling_combine(n, m->out_w, out, value);
}

/* The value buffer a chunk's call gets: the caller's, or a dueling Q's own for its V. */
static float *chunk_value(const frl_dev_model *m, float *value, int64_t first)
{
    return value ? value + first : m->v;
}

frl_status frl_dev_model_forward(frl_dev_model *m, int64_t rows, const float *obs, float *out,
                                 float *value, char *err)
{
    char why[WHY_SIZE] = "";
    for (int64_t first = 0; first < rows; first += m->rows) {
        int32_t n = rows - first < m->rows ? (int32_t)(rows - first) : m->rows;
        float *o = out + first * m->out_w, *v = chunk_value(m, value, first);
        if (m->device->plugin->model_forward(m->model, n, obs + first * m->obs_w, o, v, why,
                                             sizeof why) != 0)
            return frl_fail(err, FRL_ERR_DEVICE, "inference on %s: %s", m->device->name, why);
        combine(m, n, o, v);
    }
    return FRL_OK;
}

frl_status frl_dev_model_step(frl_dev_model *m, int64_t rows, const float *obs, float *state,
                              const uint8_t *reset, float *out, float *value, char *err)
{
    char why[WHY_SIZE] = "";
    size_t sw = (size_t)m->state_w;
    for (int64_t i = 0; reset && i < rows; i++)
        if (reset[i])
            memset(state + (size_t)i * sw, 0, sizeof(float) * sw);
    for (int64_t first = 0; first < rows; first += m->rows) {
        int32_t n = rows - first < m->rows ? (int32_t)(rows - first) : m->rows;
        float *o = out + first * m->out_w, *v = chunk_value(m, value, first);
        if (m->device->plugin->model_step(m->model, n, obs + first * m->obs_w,
                                          state + (size_t)first * sw, o, v, why,
                                          sizeof why) != 0)
            return frl_fail(err, FRL_ERR_DEVICE, "inference on %s: %s", m->device->name, why);
        combine(m, n, o, v);
    }
    return FRL_OK;
}

frl_status frl_dev_model_members(frl_dev_model *m, int32_t members, int64_t stride,
                                 const float *params, char *err)
{
    char why[WHY_SIZE] = "";
    int rc = m->device->plugin->model_members(m->model, members, stride, params, why,
                                              sizeof why);
    if (rc != 0)
        return frl_fail(err, rc == 2 ? FRL_ERR_UNSUPPORTED : FRL_ERR_DEVICE,
                        "the population on %s: %s", m->device->name, why);
    return FRL_OK;
}

frl_status frl_dev_model_forward_members(frl_dev_model *m, int32_t rows, const int32_t *members,
                                         const float *obs, float *out, char *err)
{
    char why[WHY_SIZE] = "";
    if (m->device->plugin->model_forward_members(m->model, rows, members, obs, out, why,
                                                 sizeof why) != 0)
        return frl_fail(err, FRL_ERR_DEVICE, "the population's inference on %s: %s",
                        m->device->name, why);
    return FRL_OK;
}

frl_status frl_dev_model_stage(frl_dev_model *m, int32_t slot, const float *mean,
                               const float *inv_std, float clip, const char *who, char *err)
{
    char why[WHY_SIZE] = "";
    if (m->device->plugin->model_stage(m->model, slot, mean, inv_std, clip, why,
                                       sizeof why) != 0)
        return frl_fail(err, FRL_ERR_DEVICE, "%s: staging the weights on %s: %s", who,
                        m->device->name, why);
    return FRL_OK;
}

frl_status frl_dev_model_take(frl_dev_model *dst, const frl_dev_model *src, int32_t slot,
                              char *err)
{
    char why[WHY_SIZE] = "";
    if (dst->device->plugin->model_take(dst->model, src->model, slot, why, sizeof why) != 0)
        return frl_fail(err, FRL_ERR_DEVICE, "taking the learner's weights on %s: %s",
                        dst->device->name, why);
    return FRL_OK;
}
