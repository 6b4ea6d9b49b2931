/* Settings that solve each built-in environment with PPO, applied under the caller's.
 * CartPole and Acrobot keep CleanRL's update (4 epochs, 4 minibatches, rollout 128,
 * separate 64x64 tanh networks) with more environments and a larger step size.
 * Pendulum uses the settings of RLtools' PPO example (v2.2.0): 4 envs x 1024 steps,
 * 2 epochs of 16 minibatches, relu 64x64 networks, gamma 0.9, constant lr 1e-3, no
 * clipping of values or gradients, no normalisation, initial std 4 (RLtools' 2 in
 * units of the maximum torque, 2). Over seeds 1-30 every run reached -200 within 300K
 * steps (worst 258K); the earlier 10-epoch settings solved in fewer steps but took 4x
 * the time and failed one seed in ten. MemoryProbe-v0's reward comes once, after the
 * delay, for the one action that matches the cue: a smaller entropy bonus and step
 * size let a recurrent policy's answer sharpen (with PPO's 0.01 and CartPole's step, a
 * GRU stayed at chance over 1M steps with D = 20), and a core that starts with a long
 * memory (keep gate bias 2: a GRU keeps 88% of its state a step) finds the cue: seeds
 * 1-4 solved D = 20 in 74K-134K steps, against 111K-917K or never with bias 0. A
 * memoryless policy stays at chance whatever its settings. */
#include <string.h>

#include "trainer/env_defaults.h"

#define MUJOCO_PPO                                                                      \
    "train.num_envs=4 train.rollout=512 train.epochs=10 train.minibatches=32 train.lr=3e-4 " \
    "train.ent_coef=0 policy.obs_norm=true train.reward_norm=true"

#define RAY_PPO "policy.encoder=simple policy.conv_channels=8,16,16 train.num_envs=16 train.lr=2.5e-3"

typedef struct env_defaults {
    const char *env;
    const char *settings;
} env_defaults;

static const env_defaults table[] = {
    {"CartPole-v1", "train.num_envs=16 train.lr=2.5e-3"},
    {"Acrobot-v1", "train.num_envs=16 train.lr=2.5e-3"},
    {"Pendulum-v1",
     "train.num_envs=4 train.rollout=1024 train.epochs=2 train.minibatches=16 train.lr=1e-3 "
     "train.anneal_lr=false train.gamma=0.9 train.gae_lambda=0.95 train.ent_coef=0 "
     "train.clip_value=false train.max_grad_norm=0 train.adam_eps=1e-8 "
     "policy.activation=relu policy.init_log_std=1.386"},
    {"MountainCar-v0", "train.num_envs=16"},
    /* A recurrent policy must infer the velocities: CartPole's step size made a GRU solve
     * 2 of 3 seeds within 1M steps; a smaller one with rl-zoo3's discounting for this
     * task (gamma 0.98, lambda 0.8) solved 3 of 3 in 295K-432K. The same for every
     * policy, so a memoryless one is compared on equal terms. */
    {"CartPoleNoVel-v1", "train.num_envs=16 train.lr=1e-3 train.gamma=0.98 train.gae_lambda=0.8"},
    {"MemoryProbe-v0", "train.lr=1e-3 train.ent_coef=0.001 policy.core_keep_bias=2"},
    /* Sample Factory's encoder, thinned (8, 16, 16 channels: 40 x 40 pixels hold two
     * coloured cells), and CartPole's step size: with it a run's greedy mean reached 0.95
     * by 60K steps (lr 1e-3: 80K); bench/learning.py --tasks pixels, seeds 1-10: a
     * training return of 0.95 by 22.5K steps (median), 24.6K at worst. */
    {"PixelGrid-v0", "policy.encoder=simple policy.conv_channels=8,16,16 train.num_envs=16 "
                     "train.lr=2.5e-3"},
    /* The same world with the goal as a vector beside the image (a mixed space), the
     * same settings. */
    {"PixelGoal-v0", "policy.encoder=simple policy.conv_channels=8,16,16 train.num_envs=16 "
                     "train.lr=2.5e-3"},
    /* The first-person tasks (doc/environments.md): PixelGrid-v0's thin convnet_simple
     * and step size at 84 x 84 grayscale. RayRoom-v0 passed 80% of the way from the
     * random return to the oracle's by 45K steps (seed 0); bench/README.md has the
     * learning.py table. */
    {"RayRoom-v0", RAY_PPO},
    {"RayMaze-v0", RAY_PPO},
    {"RayCollect-v0", RAY_PPO},
    {"MountainCarContinuous-v0", "train.num_envs=4 train.rollout=1024 train.ent_coef=0 "
                                 "policy.obs_norm=true train.reward_norm=true"},
    /* The MuJoCo tasks: CleanRL's and rl-zoo3's PPO for MuJoCo (2,048 steps per update,
     * 10 epochs of 64-row minibatches, lr 3e-4, no entropy bonus, observation and reward
     * normalisation), as 4 envs x 512 steps. InvertedPendulum-v5 reached 1000 by 20K
     * steps and Reacher-v5 -5 by 200K in seeds 1-3. */
    {"InvertedPendulum-v5", MUJOCO_PPO},
    {"InvertedDoublePendulum-v5", MUJOCO_PPO},
    {"Reacher-v5", MUJOCO_PPO},
    {"Hopper-v5", MUJOCO_PPO},
    {"HalfCheetah-v5", MUJOCO_PPO},
    {"Walker2d-v5", MUJOCO_PPO},
    {"Ant-v5", MUJOCO_PPO},
};

const char *frl_env_default_settings(const char *env_name)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].env, env_name) == 0)
            return table[i].settings;
    return "";
}
