/* The sampler registry: the samplers, in the order of sampler.mode's choices (lib/core/config_keys.c). */
#include "sampler/sampler.h"

static const frl_sampler_ops *const samplers[] = {
    &frl_sampler_sync,  /* sync */
    &frl_sampler_async, /* async */
};

const frl_sampler_ops *frl_sampler_lookup(const frl_config *cfg)
{
    return samplers[frl_config_int(cfg, "sampler.mode")];
}
