/* A policy's networks on the runtime's CUDA device, through the plugin's model
 * (lib/core/plugin_api.h): see policy_device.h. Errors name the device, as the runtime
 * described it. */
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
    *m = (frl_dev_model){d, al, NULL, n->max_rows, n->obs_w, n->out_w};
    char why[WHY_SIZE] = "";
    if (d->plugin->model_create(d->ctx, n, &m->model, why, sizeof why) != 0) {
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

frl_status frl_dev_model_forward(frl_dev_model *m, int64_t rows, const float *obs, float *out,
                                 float *value, char *err)
{
    char why[WHY_SIZE] = "";
    for (int64_t first = 0; first < rows; first += m->rows) {
        int32_t n = rows - first < m->rows ? (int32_t)(rows - first) : m->rows;
        if (m->device->plugin->model_forward(m->model, n, obs + first * m->obs_w,
                                             out + first * m->out_w, value ? value + first : NULL,
                                             why, sizeof why) != 0)
            return frl_fail(err, FRL_ERR_DEVICE, "inference on %s: %s", m->device->name, why);
    }
    return FRL_OK;
}

frl_status frl_dev_model_members(frl_dev_model *m, int32_t members, int64_t stride,
                                 const float *params, char *err)
{
    char why[WHY_SIZE] = "";
    if (m->device->plugin->model_members(m->model, members, stride, params, why,
                                         sizeof why) != 0)
        return frl_fail(err, FRL_ERR_DEVICE, "uploading the population to %s: %s",
                        m->device->name, why);
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
