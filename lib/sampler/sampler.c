/* The sampler registry: one row per choice of sampler.mode (lib/core/config_keys.h). */
#include "sampler/sampler.h"

static const frl_sampler_ops *const samplers[] = {
    [FRL_SAMPLER_MODE_SYNC] = &frl_sampler_sync,
    [FRL_SAMPLER_MODE_ASYNC] = &frl_sampler_async,
};
_Static_assert(sizeof samplers / sizeof samplers[0] == FRL_SAMPLER_MODE_COUNT,
               "one sampler per choice of sampler.mode");

const frl_sampler_ops *frl_sampler_lookup(const frl_config *cfg)
{
    return samplers[frl_cfg_choice(cfg, FRL_KEY_SAMPLER_MODE)];
}

frl_status frl_sampler_loop(frl_sampler_host *h, int64_t total_steps,
                            frl_status (*update)(void *arg), void *arg)
{
    frl_status st = FRL_OK;
    while (st == FRL_OK && h->book->pr.env_steps < total_steps && !h->target_reached(h->owner)) {
        if (atomic_exchange(h->stop, 0))
            return frl_fail(h->err, FRL_ERR_INTERRUPTED, "training stopped by request at %lld "
                            "steps", (long long)h->book->pr.env_steps);
        if ((st = update(arg)) == FRL_OK)
            st = h->after_update(h->owner);
    }
    /* A stop that arrives during the last update is not carried over to the next call. */
    atomic_store(h->stop, 0);
    return st;
}

void frl_sampler_no_lock(frl_sampler *s)
{
    (void)s;
}
