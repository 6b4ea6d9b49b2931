/* Settings that solve each built-in environment with PPO, applied under the caller's.
 * CartPole and Acrobot keep CleanRL's update (4 epochs, 4 minibatches, rollout 128,
 * separate 64x64 tanh networks) with more environments and a larger step size. */
#include <string.h>

#include "rl/trainer.h"

typedef struct env_defaults {
    const char *env;
    const char *settings;
} env_defaults;

static const env_defaults table[] = {
    {"CartPole-v1", "train.num_envs=16 train.lr=2.5e-3"},
    {"Acrobot-v1", "train.num_envs=16 train.lr=2.5e-3"},
    {"Pendulum-v1",
     "train.num_envs=4 train.rollout=1024 train.epochs=10 train.minibatches=16 train.lr=1e-3 "
     "train.gamma=0.95 train.ent_coef=0 policy.obs_norm=true train.reward_norm=true"},
    {"MountainCar-v0", "train.num_envs=16"},
    {"MountainCarContinuous-v0", "train.num_envs=4 train.rollout=1024 train.ent_coef=0 "
                                 "policy.obs_norm=true train.reward_norm=true"},
};

const char *frl_env_default_settings(const char *env_name)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].env, env_name) == 0)
            return table[i].settings;
    return "";
}
