/* The learner registry: one row per choice of train.algo (lib/core/config_keys.h). A new
 * algorithm is its file, its choice in the key list and a row here. */
#include "algo/learner.h"

/* Defined by each algorithm's file. */
extern const frl_learner_ops frl_algo_ppo, frl_algo_impala, frl_algo_a2c, frl_algo_dqn,
    frl_algo_es, frl_algo_ga, frl_algo_r2d2;

static const frl_learner_ops *const learners[] = {
    [FRL_TRAIN_ALGO_PPO] = &frl_algo_ppo,
    /* IMPALA: PPO's learner with V-trace and IMPALA's policy gradient */
    [FRL_TRAIN_ALGO_IMPALA] = &frl_algo_impala,
    [FRL_TRAIN_ALGO_A2C] = &frl_algo_a2c,
    [FRL_TRAIN_ALGO_DQN] = &frl_algo_dqn,
    /* neuroevolution: the optimisers of lib/evo over the trainer's population */
    [FRL_TRAIN_ALGO_ES] = &frl_algo_es,
    [FRL_TRAIN_ALGO_GA] = &frl_algo_ga,
    /* recurrent Q-learning from prioritised sequences */
    [FRL_TRAIN_ALGO_R2D2] = &frl_algo_r2d2,
};
_Static_assert(sizeof learners / sizeof learners[0] == FRL_TRAIN_ALGO_COUNT,
               "one learner per choice of train.algo");

const frl_learner_ops *frl_learner_lookup(const frl_config *cfg)
{
    return learners[frl_cfg_choice(cfg, FRL_KEY_TRAIN_ALGO)];
}

int32_t frl_learner_add_net(frl_learner *l, const char *name, frl_net_role role, int32_t source,
                            float *params, int64_t num_params)
{
    int32_t i = l->nets.count++;
    l->nets.net[i] = (frl_learner_net){name, role, source, params, num_params};
    return i;
}
