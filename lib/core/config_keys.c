/* Every config key the library knows, with its type, default, range and help.
 * Add keys here; `fastrl config --list` and the bindings read this table. */
#include "core/config.h"

const frl_key_def frl_key_defs[] = {
    {"env.max_episode_steps", FRL_CONFIG_INT, "-1", -1, -1, 2147483647.0, "",
     "episode time limit in steps: -1 = the environment's own, 0 = none"},
    {"policy.activation", FRL_CONFIG_CHOICE, "tanh", 0, 0, 0, "tanh|relu|elu",
     "activation of the hidden layers"},
    {"policy.hidden", FRL_CONFIG_INT_LIST, "64,64", 0, 1, 4096, "",
     "hidden layer widths of the MLP trunk, e.g. 64,64 (empty: a linear policy)"},
    {"policy.init_log_std", FRL_CONFIG_FLOAT, "0", 0, -10, 5, "",
     "initial log standard deviation of a Gaussian (box action) head"},
    {"policy.obs_clip", FRL_CONFIG_FLOAT, "10", 10, 0, 1e9, "",
     "normalised observations are clipped to [-clip, clip] (obs_norm only)"},
    {"policy.obs_norm", FRL_CONFIG_BOOL, "false", 0, 0, 1, "",
     "normalise box observations by running mean and variance (saved with the policy)"},
    {"policy.shared", FRL_CONFIG_BOOL, "false", 0, 0, 1, "",
     "actor and critic share one trunk (false: two separate networks)"},
    {"runtime.device", FRL_CONFIG_CHOICE, "cpu", 0, 0, 0, "cpu|cuda|auto",
     "where networks run: cpu; cuda (the CUDA plugin and a device, or an error); auto "
     "(cuda when it can run the work, else cpu)"},
    {"runtime.seed", FRL_CONFIG_INT, "0", 0, 0, 9007199254740992.0, "",
     "base seed of the runtime (environments take theirs from reset)"},
    {"runtime.spin_us", FRL_CONFIG_INT, "50", 50, 0, 1000000, "",
     "microseconds an idle worker spins for new work before it sleeps"},
    {"runtime.tf32", FRL_CONFIG_BOOL, "false", 0, 0, 1, "",
     "cuda: let the GPU's matrix products use TensorFloat-32 (faster on Ampere and later, "
     "about 3 decimal digits instead of 7)"},
    {"runtime.threads", FRL_CONFIG_INT, "0", 0, 0, 1024, "",
     "threads doing work, the caller included: 0 = one per core, 1 = no workers"},
    {"sampler.groups", FRL_CONFIG_INT, "2", 2, 1, 64, "",
     "async: environment groups stepped in turn (double-buffered sampling: while one "
     "group's actions are computed, the others step)"},
    {"sampler.max_lag", FRL_CONFIG_INT, "0", 0, 0, 1e9, "",
     "async: drop a rollout any step of which is more than this many policy versions "
     "behind the learner, and count it (0: never drop)"},
    {"sampler.mode", FRL_CONFIG_CHOICE, "sync", 0, 0, 0, "sync|async",
     "sync: step, act and learn in turn; async: environments, inference and the learner "
     "run at the same time (APPO: V-trace corrects for the policy lag)"},
    {"sampler.slots", FRL_CONFIG_INT, "2", 2, 2, 64, "",
     "async: rollouts in the ring (more lets sampling run further ahead of the learner, "
     "with more lag)"},
    {"train.adam_eps", FRL_CONFIG_FLOAT, "1e-5", 1e-5, 1e-12, 1, "", "Adam's epsilon"},
    {"train.advantage", FRL_CONFIG_CHOICE, "gae", 0, 0, 0, "gae|vtrace",
     "advantages and value targets: GAE(lambda), or V-trace (IMPALA), which corrects for "
     "the policy having changed since the rollout"},
    {"train.algo", FRL_CONFIG_CHOICE, "ppo", 0, 0, 0, "ppo|impala|a2c",
     "the learner: PPO's clipped surrogate, IMPALA's V-trace actor-critic "
     "(-A log pi; implies train.advantage=vtrace), or A2C (SB3's settings: 5 steps x 8 "
     "envs, one gradient step per rollout)"},
    {"train.anneal_lr", FRL_CONFIG_BOOL, "true", 1, 0, 1, "",
     "decay the learning rate linearly to 0 over the step budget"},
    {"train.clip", FRL_CONFIG_FLOAT, "0.2", 0.2, 0, 10, "", "PPO's ratio clipping range"},
    {"train.clip_value", FRL_CONFIG_BOOL, "true", 1, 0, 1, "",
     "clip value updates to the same range around the old values"},
    {"train.ent_coef", FRL_CONFIG_FLOAT, "0.01", 0.01, 0, 100, "", "entropy bonus coefficient"},
    {"train.epochs", FRL_CONFIG_INT, "4", 4, 1, 1000, "", "passes over each rollout"},
    {"train.gae_lambda", FRL_CONFIG_FLOAT, "0.95", 0.95, 0, 1, "", "GAE's lambda"},
    {"train.gamma", FRL_CONFIG_FLOAT, "0.99", 0.99, 0, 1, "", "discount factor"},
    {"train.lr", FRL_CONFIG_FLOAT, "2.5e-4", 2.5e-4, 0, 10, "", "Adam learning rate (initial)"},
    {"train.max_grad_norm", FRL_CONFIG_FLOAT, "0.5", 0.5, 0, 1e9, "",
     "clip the global gradient norm to this (0: no clipping)"},
    {"train.minibatches", FRL_CONFIG_INT, "4", 4, 1, 1048576, "",
     "minibatches per epoch (rollout * num_envs must divide evenly)"},
    {"train.norm_adv", FRL_CONFIG_BOOL, "true", 1, 0, 1, "",
     "normalise advantages per minibatch"},
    {"train.num_envs", FRL_CONFIG_INT, "8", 8, 1, 1048576, "", "environments stepped together"},
    {"train.reward_norm", FRL_CONFIG_BOOL, "false", 0, 0, 1, "",
     "scale rewards by the running std of the discounted return"},
    {"train.rollout", FRL_CONFIG_INT, "128", 128, 1, 1048576, "",
     "steps per environment in each rollout (T)"},
    {"train.seed_offset", FRL_CONFIG_INT, "0", 0, 0, 9007199254740992.0, "",
     "added to the runtime's seed to make the trainer's (initial weights, sampling, env "
     "resets): members of a population on one runtime need different offsets"},
    {"train.target_kl", FRL_CONFIG_FLOAT, "none", 0, 0, 1e9, "",
     "stop an update's epochs once the approximate KL exceeds this (unset: never)"},
    {"train.target_return", FRL_CONFIG_FLOAT, "none", 0, -1e300, 1e300, "",
     "stop training once the mean return of the last 100 episodes reaches this (unset: never)"},
    {"train.vtrace_c", FRL_CONFIG_FLOAT, "1", 1, 1e-6, 1e9, "",
     "V-trace: traces are lambda * min(c, pi/mu) (train.advantage=vtrace)"},
    {"train.vtrace_rho", FRL_CONFIG_FLOAT, "1", 1, 1e-6, 1e9, "",
     "V-trace: TD weights are min(rho, pi/mu) (train.advantage=vtrace)"},
    {"train.vf_coef", FRL_CONFIG_FLOAT, "0.5", 0.5, 0, 100, "", "value loss coefficient"},
};

const int32_t frl_key_count = (int32_t)(sizeof frl_key_defs / sizeof frl_key_defs[0]);
