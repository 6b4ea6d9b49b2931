/* The PPO/APPO/IMPALA learner on the policy's CUDA device, through the plugin
 * (lib/core/plugin_api.h, lib/cuda/dev_learner.c): the one caller of the plugin's learner
 * functions, over the policy's model (policy_device.h). The control stays here and
 * matches frl_ppo_update: the same shuffles, learning-rate schedule, Adam step count,
 * early stop and statistics; only the arithmetic moves. */
#include <string.h>
#include <time.h>

#include "algo/ppo_device.h"
#include "core/plugin_api.h"
#include "nn/dev_math.h"

static void describe_learner(const frl_ppo *l, frl_dm_learn_desc *d)
{
    const frl_ppo_settings *s = &l->s;
    memset(d, 0, sizeof *d);
    d->T = l->T;
    d->B = l->B;
    d->M = l->M;
    d->norm_adv = s->norm_adv;
    d->adv = (frl_dm_adv_params){s->gamma,  s->lambda, s->rho_bar,
                                 s->c_bar,  s->vtrace, s->decoupled};
    d->loss = (frl_dm_loss){s->clip,       s->ent_coef, s->vf_coef,   s->clip_value,
                            s->impala,     s->decoupled, s->rho_bar};
    d->max_grad_norm = s->max_grad_norm;
    d->adam_eps = s->adam_eps;
}

frl_status frl_ppo_device_create(frl_ppo *l, char *err)
{
    /* A recurrent policy acts on the device (the plugin's model_step) and learns on the
     * CPU: the device learner has no backward through time yet. */
    if (!l->p->dev || l->p->towers)
        return FRL_OK;
    frl_dm_learn_desc d;
    describe_learner(l, &d);
    char why[FRL_ERRMSG_SIZE - 64] = "";
    const frl_cuda_plugin *pl = l->rt->device.plugin;
    void *dev = NULL;
    /* l->dev only on success: on auto a failure moves the policy off the device, and a
     * learner kept over its freed model would be driven and destroyed later. */
    if (pl->learner_create(l->p->dev->model, &d, &dev, why, sizeof why) != 0)
        return frl_fail(err, FRL_ERR_DEVICE, "the learner on %s: %s", l->rt->device.name, why);
    l->dev = dev;
    return FRL_OK;
}

void frl_ppo_device_free(frl_ppo *l)
{
    if (l->dev)
        l->rt->device.plugin->learner_destroy(l->dev);
    l->dev = NULL;
}

static void rollout_of(const frl_ppo *l, int32_t slot, frl_cuda_rollout *r)
{
    frl_ring *ring = l->ring;
    r->obs = frl_ring_at(ring, slot, FRL_RING_OBSERVATIONS);
    r->actions = frl_ring_at(ring, slot, FRL_RING_ACTIONS);
    r->log_probs = frl_ring_at(ring, slot, FRL_RING_LOG_PROBS);
    r->rewards = frl_ring_at(ring, slot, FRL_RING_REWARDS);
    r->terminated = frl_ring_at(ring, slot, FRL_RING_TERMINATED);
    r->truncated = frl_ring_at(ring, slot, FRL_RING_TRUNCATED);
    r->reset = frl_ring_at(ring, slot, FRL_RING_RESET_STEPS);
    r->bootstrap_obs = frl_ring_at(ring, slot, FRL_RING_BOOTSTRAP_OBS);
    r->state0 = l->p->stack > 1 ? l->state0 : NULL; /* the frames before step 0 */
}

/* The epoch's means, as frl_ppo_update reports them. */
static void epoch_means(const frl_cuda_epoch_stats *e, frl_ppo_stats *out)
{
    double cnt = e->count > 0 ? e->count : 1;
    out->policy_loss = e->policy_loss / cnt;
    out->value_loss = e->value_loss / cnt;
    out->entropy = e->entropy / cnt;
    out->approx_kl = e->approx_kl / cnt;
    out->clip_fraction = e->clip_fraction / cnt;
    out->grad_norm = e->grad_norm;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static frl_status epochs(frl_ppo *l, int64_t update_index, uint64_t seed, double lr,
                         frl_ppo_stats *out, char *why, size_t size)
{
    const frl_cuda_plugin *pl = l->rt->device.plugin;
    for (int32_t e = 0; e < l->s.epochs; e++) {
        frl_cuda_epoch_stats es;
        double t0 = now_s();
        frl_ppo_shuffle(l->perm, l->N, seed, update_index, e);
        if (pl->learner_epoch(l->dev, l->perm, lr, l->adam.t + 1, &es, why, size) != 0)
            return FRL_ERR_DEVICE;
        l->adam.t += l->s.minibatches;
        out->epochs_done = e + 1;
        epoch_means(&es, out);
        out->time_backward += now_s() - t0;
        if (l->s.use_target_kl && out->approx_kl > l->s.target_kl)
            break;
    }
    return FRL_OK;
}

frl_status frl_ppo_device_update(frl_ppo *l, int32_t slot, int64_t update_index,
                                 int64_t num_updates, uint64_t seed, frl_ppo_stats *out,
                                 char *err)
{
    frl_policy *p = l->p;
    const frl_cuda_plugin *pl = l->rt->device.plugin;
    double lr = frl_lr_at(l->s.lr, l->s.anneal_lr, update_index, num_updates);
    char why[FRL_ERRMSG_SIZE - 64] = "";
    memset(out, 0, sizeof *out);
    frl_status st = frl_policy_device_refresh(p, err);
    if (st != FRL_OK)
        return st;
    frl_cuda_rollout r;
    rollout_of(l, slot, &r);
    /* The shard gradient buffers, idle on a device: room for parameters and moments. */
    float *stage = l->grads;
    int64_t adam_t = l->adam.t; /* the epochs count their steps as they go */
    if ((l->dev_adam_stale &&
         pl->learner_adam(l->dev, l->adam.m, l->adam.v, 1, why, sizeof why) != 0) ||
        pl->learner_begin(l->dev, &r, why, sizeof why) != 0 ||
        epochs(l, update_index, seed, lr, out, why, sizeof why) != FRL_OK ||
        pl->learner_end(l->dev, stage, l->ret, frl_ring_at(l->ring, slot, FRL_RING_VALUES),
                        l->valid, why, sizeof why) != 0 ||
        /* the host keeps Adam's state too, so a save holds the run's whole state */
        pl->learner_adam(l->dev, stage + l->grad_stride, stage + 2 * l->grad_stride, 0, why,
                         sizeof why) != 0) {
        /* The device's state may be half updated; the host's is that of the last good
         * update (read back through a staging buffer), and the next update uploads it. */
        p->dev_version = ~(uint64_t)0;
        l->dev_adam_stale = 1;
        l->adam.t = adam_t; /* the step count of the moments kept, which a save pairs */
        return frl_fail(err, FRL_ERR_DEVICE, "learning on %s: %s", l->rt->device.name, why);
    }
    out->learning_rate = lr;
    out->explained_variance = frl_ppo_explained_variance(l, slot);
    memcpy(p->params, stage, sizeof(float) * p->num_params);
    memcpy(l->adam.m, stage + l->grad_stride, sizeof(float) * p->num_params);
    memcpy(l->adam.v, stage + 2 * l->grad_stride, sizeof(float) * p->num_params);
    l->dev_adam_stale = 0;
    p->version++;
    p->dev_version = p->version; /* the device's parameters are the ones just read back */
    return FRL_OK;
}
