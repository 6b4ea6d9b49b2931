/* A policy's networks on the runtime's CUDA device, through the plugin's model
 * (lib/core/plugin_api.h). The host keeps the master copy of the parameters, so saving,
 * loading and the CPU paths work unchanged; the device copy follows it. */
#include <string.h>

#include "core/device.h"
#include "core/plugin_api.h"
#include "nn/net.h"
#include "rl/policy.h"

/* Rows of one device forward: large enough that a batch of envs goes in one call, small
 * enough that the model's workspace stays a few MiB for typical networks. */
enum { DEVICE_ROWS = 16384 };

const frl_cuda_plugin *frl_policy_plugin(const frl_policy *p)
{
    return p->rt->device.plugin;
}

static void describe_net(const frl_policy *p, frl_net_desc *d)
{
    memset(d, 0, sizeof *d);
    d->obs_w = p->obs_w;
    d->out_w = p->out_w;
    d->discrete = p->discrete;
    d->shared = p->shared;
    d->obs_norm = p->obs_norm;
    d->trunk = p->trunk;
    d->actor = p->actor;
    d->critic = p->critic;
    d->log_std_off = p->log_std_off;
    d->num_params = p->num_params;
    d->max_rows = p->dev_rows;
}

frl_status frl_policy_device_model(const frl_policy *p, int32_t rows, void **model,
                                   const char *who)
{
    const frl_cuda_plugin *pl = frl_policy_plugin(p);
    char why[FRL_ERRMSG_SIZE - 64] = "";
    frl_net_desc d;
    describe_net(p, &d);
    d.max_rows = rows;
    if (pl->model_create(p->rt->device.ctx, &d, model, why, sizeof why) != 0)
        return frl_fail(NULL, FRL_ERR_DEVICE, "%s: on %s: %s", who, p->rt->device.name, why);
    return FRL_OK;
}

frl_status frl_policy_device_open(frl_policy *p, const char *who)
{
    if (p->rt->device.kind != FRL_DEVICE_CUDA)
        return FRL_OK;
    /* The device networks read float rows of in_w values straight from the ring and the
     * sampler's buffers; a discrete space's rows are indices that the CPU expands into
     * one-hot rows (policy.c), which the device path does not do yet. */
    if (p->obs_n)
        return frl_fail(NULL, FRL_ERR_UNSUPPORTED,
                        "%s: discrete(%d) observation spaces run on the CPU for now, and this "
                        "runtime computes on %s: use a runtime with runtime.device=cpu",
                        who, (int)p->obs_n, p->rt->device.name);
    p->dev_rows = DEVICE_ROWS;
    frl_status st = frl_policy_device_model(p, p->dev_rows, &p->dev, who);
    if (st != FRL_OK)
        return st;
    size_t floats = (size_t)p->dev_rows * (size_t)(p->out_w + 1);
    char why[FRL_ERRMSG_SIZE / 2] = "";
    p->dev_out = frl_device_host_alloc(&p->rt->device, &p->rt->alloc, sizeof(float) * floats,
                                       why, sizeof why);
    if (!p->dev_out)
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: the outputs of device inference: %s", who, why);
    p->dev_value = p->dev_out + (size_t)p->dev_rows * (size_t)p->out_w;
    p->dev_version = ~(uint64_t)0; /* nothing uploaded yet */
    p->dev_norm_stale = 1;
    return FRL_OK;
}

void frl_policy_device_close(frl_policy *p)
{
    const frl_cuda_plugin *pl = frl_policy_plugin(p);
    if (p->dev_out)
        frl_device_host_free(&p->rt->device, &p->rt->alloc, p->dev_out);
    if (p->dev)
        pl->model_destroy(p->dev);
    p->dev = NULL;
    p->dev_out = p->dev_value = NULL;
}

frl_status frl_policy_device_load(const frl_policy *p, void *model, const float *params,
                                  const float *norm_mean, const float *norm_inv_std, char *err)
{
    char why[FRL_ERRMSG_SIZE - 64] = "";
    if (frl_policy_plugin(p)->model_load(model, params, norm_mean, norm_inv_std, p->norm.clip,
                                         why, sizeof why) != 0)
        return frl_fail(err, FRL_ERR_DEVICE, "uploading the policy to %s: %s",
                        p->rt->device.name, why);
    return FRL_OK;
}

frl_status frl_policy_device_refresh(frl_policy *p, char *err)
{
    int params = p->dev_version != p->version, norm = p->obs_norm && p->dev_norm_stale;
    if (!p->dev || (!params && !norm))
        return FRL_OK;
    frl_status st = frl_policy_device_load(p, p->dev, params ? p->params : NULL,
                                           norm ? p->norm.use_mean : NULL,
                                           norm ? p->norm.use_inv_std : NULL, err);
    if (st != FRL_OK)
        return st;
    p->dev_version = p->version;
    p->dev_norm_stale = 0;
    return FRL_OK;
}

frl_status frl_policy_device_infer(const frl_policy *p, void *model, int32_t max_rows,
                                   int64_t rows, const float *obs, float *out, float *value,
                                   char *err)
{
    const frl_cuda_plugin *pl = frl_policy_plugin(p);
    char why[FRL_ERRMSG_SIZE - 64] = "";
    for (int64_t first = 0; first < rows; first += max_rows) {
        int32_t n = rows - first < max_rows ? (int32_t)(rows - first) : max_rows;
        if (pl->model_forward(model, n, obs + first * p->obs_w, out + first * p->out_w,
                              value ? value + first : NULL, why, sizeof why) != 0)
            return frl_fail(err, FRL_ERR_DEVICE, "inference on %s: %s", p->rt->device.name, why);
    }
    return FRL_OK;
}

frl_status frl_policy_device_forward(frl_policy *p, int64_t rows, const float *obs, float *out,
                                     float *value, char *err)
{
    frl_status st = frl_policy_device_refresh(p, err);
    if (st != FRL_OK)
        return st;
    return frl_policy_device_infer(p, p->dev, p->dev_rows, rows, obs, out, value, err);
}
