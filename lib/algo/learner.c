/* The learner registry: the learners, in the order of train.algo's choices (lib/core/config_keys.c). A new
 * algorithm is its file and a row here. */
#include "algo/learner.h"

/* Defined by each algorithm's file. */
extern const frl_learner_ops frl_algo_ppo, frl_algo_a2c;

static const frl_learner_ops *const learners[] = {
    &frl_algo_ppo, /* ppo */
    &frl_algo_ppo, /* impala: PPO's learner with V-trace and IMPALA's policy gradient */
    &frl_algo_a2c, /* a2c */
};

const frl_learner_ops *frl_learner_lookup(const frl_config *cfg)
{
    return learners[frl_config_int(cfg, "train.algo")];
}

int32_t frl_learner_add_net(frl_learner *l, const char *name, frl_net_role role, int32_t source,
                            float *params, int64_t num_params)
{
    int32_t i = l->nets.count++;
    l->nets.net[i] = (frl_learner_net){name, role, source, params, num_params};
    return i;
}
