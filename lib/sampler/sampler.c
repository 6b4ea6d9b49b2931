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
