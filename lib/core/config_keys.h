/* Every config key the library knows, in one list (an X-macro, as MuJoCo's mjxmacro.h
 * does). From it come the enum of keys (below), the table of key definitions
 * (config_keys.c) and an enum per choice key, so a key, its index and its choices
 * cannot drift apart, and the library reads settings by enum: a misspelt key does not
 * compile. Add keys here; `fastrl config --list` and the bindings read the table.
 *
 * A row is X(ID, name, TYPE, default, min, max, help):
 * - ID names the key in code: FRL_KEY_<ID>;
 * - TYPE is INT, FLOAT, BOOL, CHOICE or INT_LIST (frl_config_type without FRL_CONFIG_);
 * - default is text, as a user writes it: the value is parsed once from it by the
 *   parser of frl_config_set, so the default is written once; "none" marks an optional FLOAT
 *   key, unset by default;
 * - min and max bound INT and FLOAT values and INT_LIST items.
 * frl_config_next and `fastrl config --list` follow the rows' order; a namespace's
 * rows stay together, since the "did you mean" hints take them as one run. */
#ifndef FRL_CORE_CONFIG_KEYS_H
#define FRL_CORE_CONFIG_KEYS_H

/* clang-format off */
#define FRL_CONFIG_KEYS(X)                                                                   \
    X(ENV_FRAME_SKIP, "env.frame_skip", INT, "0", 0, 1000,                                   \
      "MuJoCo envs: mj_step calls per env step (the control period): 0 = the task's own "    \
      "(Gymnasium's), 1 for a host's model; ray envs: frames per step, the last two "        \
      "max-pooled (0 = 4)")                                                                  \
    X(ENV_GRAYSCALE, "env.grayscale", BOOL, "true", 0, 1,                                    \
      "ray envs (RayRoom-v0 ...): observe luminance (1 channel) rather than RGB (3)")        \
    X(ENV_HEIGHT, "env.height", INT, "84", 16, 512,                                          \
      "ray envs: rendered frame height in pixels")                                           \
    X(ENV_MAX_EPISODE_STEPS, "env.max_episode_steps", INT, "-1", -1, 2147483647.0,           \
      "episode time limit in steps: -1 = the environment's own, 0 = none")                   \
    X(ENV_MAZE_SIZE, "env.maze_size", INT, "3", 2, 15,                                     \
      "RayMaze-v0: maze cells a side (a map of 2n + 1 squares, walls included)")             \
    X(ENV_MEMORY_CUES, "env.memory_cues", INT, "4", 2, 64,                                   \
      "MemoryProbe-v0: number of cues K (actions; chance is 1/K)")                           \
    X(ENV_MEMORY_DELAY, "env.memory_delay", INT, "20", 0, 10000,                             \
      "MemoryProbe-v0: blank steps D between the cue and the answer step")                   \
    X(ENV_RANDOMIZE_DAMPING, "env.randomize_damping", FLOAT, "0", 0, 0.9,                    \
      "MuJoCo envs: each episode scales every joint's damping by its own factor drawn "      \
      "uniformly from [1 - r, 1 + r] (domain randomisation; 0 = off)")                        \
    X(ENV_RANDOMIZE_FRICTION, "env.randomize_friction", FLOAT, "0", 0, 0.9,                  \
      "MuJoCo envs: as env.randomize_damping, for every geom's and contact pair's "          \
      "sliding friction")                                                                     \
    X(ENV_RANDOMIZE_MASS, "env.randomize_mass", FLOAT, "0", 0, 0.9,                          \
      "MuJoCo envs: as env.randomize_damping, for every body's mass (and its inertia, by "   \
      "the same factor)")                                                                    \
    X(ENV_WIDTH, "env.width", INT, "84", 16, 512,                                            \
      "ray envs: rendered frame width in pixels (the view spans 90 degrees)")                \
    X(ES_EPISODES, "es.episodes", INT, "1", 1, 1000000,                                      \
      "ES: episodes per member per generation (its fitness is their mean return)")          \
    X(ES_LR, "es.lr", FLOAT, "0.03", 0, 10,                                                  \
      "ES: Adam's step size on the estimated gradient")                                      \
    X(ES_NOISE_FLOATS, "es.noise_floats", INT, "4194304", 1024, 1073741824,                  \
      "ES: floats in the shared noise table (4 bytes each; perturbations are slices of it)") \
    X(ES_POPULATION, "es.population", INT, "256", 2, 1048576,                                \
      "ES: members per generation, an even number (antithetic pairs theta +- sigma eps)")    \
    X(ES_SIGMA, "es.sigma", FLOAT, "0.1", 1e-9, 100,                                         \
      "ES: standard deviation of the parameter noise")                                       \
    X(ES_WEIGHT_DECAY, "es.weight_decay", FLOAT, "0.005", 0, 100,                            \
      "ES: L2 coefficient added to the gradient estimate (OpenAI-ES's l2coeff)")             \
    X(EXPORT_FORMAT, "export.format", CHOICE, "onnx", 0, 0,                                  \
      "frl_policy_export: an ONNX model (onnx; one file) or dependency-free C99 source (c; "  \
      "PATH.h and PATH.c, the name of PATH's last part prefixing every symbol)")             \
    X(EXPORT_PROBE, "export.probe", BOOL, "false", 0, 1,                                     \
      "export.format=c: also write PATH_probe.c, a main() that times the act function on "   \
      "the target")                                                                          \
    X(EXPORT_WEIGHTS, "export.weights", CHOICE, "float32", 0, 0,                             \
      "export.format=c: weights as float32, or int8 with one float scale per output "        \
      "channel (a quarter of the size; doc/export.md gives the accuracy cost)")              \
    X(GA_ELITES, "ga.elites", INT, "5", 1, 1048576,                                          \
      "GA: the best members carried unmutated into the next generation, where they are "     \
      "evaluated again; the policy kept is the one with the best mean over all its "         \
      "evaluations")                                                                         \
    X(GA_EPISODES, "ga.episodes", INT, "1", 1, 1000000,                                      \
      "GA: episodes per member per generation (its fitness is their mean return)")           \
    X(GA_INIT_SIGMA, "ga.init_sigma", FLOAT, "0.1", 0, 100,                                  \
      "GA: standard deviation of the first seed's noise around the initial parameters "     \
      "(generation 0's diversity)")                                                          \
    X(GA_POPULATION, "ga.population", INT, "256", 2, 1048576,                                \
      "GA: members per generation")                                                          \
    X(GA_SIGMA, "ga.sigma", FLOAT, "0.02", 1e-9, 100,                                        \
      "GA: mutation power (standard deviation of each mutation's noise)")                    \
    X(GA_TRUNCATION, "ga.truncation", INT, "20", 1, 1048576,                                 \
      "GA: the best this many members of a generation are the parents of the next")          \
    X(DIST_COMM, "dist.comm", INT, "-1", -1, 2147483647.0,                                   \
      "dist.mode: the MPI communicator as a Fortran handle (MPI_Comm_c2f; mpi4py: "         \
      "comm.py2f()); -1 = MPI_COMM_WORLD, MPI initialised by the library if the host has "  \
      "not (doc/distributed.md)")                                                            \
    X(DIST_GROUP_ENVS, "dist.group_envs", INT, "0", 0, 1048576,                              \
      "dist.mode=ddppo: envs per minibatching group (a rank's train.num_envs a multiple "    \
      "of it; 0 = a rank's train.num_envs); runs with the same groups give the same bits "   \
      "on any number of ranks")                                                              \
    X(DIST_MODE, "dist.mode", CHOICE, "none", 0, 0,                                          \
      "training across MPI ranks (the MPI plugin): none, or ddppo (data-parallel PPO: "      \
      "every rank steps train.num_envs envs and learns; gradients summed in group order)")   \
    X(DIST_ON_FAULT, "dist.on_fault", CHOICE, "abort", 0, 0,                                 \
      "a rank that dies or stops answering: abort (the message, then MPI_Abort ends the "    \
      "job on every rank) or return (the error to the caller, which must end the job)")      \
    X(DIST_PREEMPT, "dist.preempt", FLOAT, "0", 0, 1,                                       \
      "dist.mode=ddppo: a rank stops collecting its rollout once this share of all ranks "  \
      "have finished theirs, after a quarter of it at least (DD-PPO's preemption of "        \
      "stragglers; the paper's 0.6); 0 = off, which the same bits on any rank count need")   \
    X(DIST_REDUCE, "dist.reduce", CHOICE, "auto", 0, 0,                                     \
      "dist.mode=ddppo: how gradients are summed across ranks: gather (every rank gets "    \
      "every group's), slices (each rank sums a slice, then the slices are gathered: about " \
      "2 gradients a rank, twice the messages), auto (slices from 8 ranks); same bits")     \
    X(DIST_TIMEOUT, "dist.timeout", FLOAT, "60", 0.01, 1e6,                                  \
      "seconds a collective waits for every rank before the job ends naming the missing "   \
      "ones")                                                                                \
    X(ELASTIC_DEPTH_FRACTION, "elastic.depth_fraction", FLOAT, "0.15", 0, 1,                 \
      "elastic policies: the share of the run's updates that distil sub-policies of every "  \
      "depth at full width, after the full stage; the rest adds elastic widths")            \
    X(ELASTIC_EPOCHS, "elastic.epochs", INT, "1", 1, 1000,                                   \
      "elastic policies: distillation passes over each rollout after the PPO update")        \
    X(ELASTIC_FULL_FRACTION, "elastic.full_fraction", FLOAT, "0.5", 0, 1,                    \
      "elastic policies: the share of the run's updates that train the full policy alone "   \
      "before progressive shrinking begins")                                                 \
    X(ELASTIC_MINIBATCHES, "elastic.minibatches", INT, "0", 0, 1048576,                      \
      "elastic policies: distillation minibatches per pass over a rollout (0: of 64 rows "   \
      "each)")                                                                  \
    X(ELASTIC_SUBNETS, "elastic.subnets", INT, "2", 1, 64,                                   \
      "elastic policies: sub-policies distilled per minibatch (the stage's narrowest is "    \
      "always one of them)")                                                                 \
    X(ELASTIC_WIDTHS, "elastic.widths", INT_LIST, "", 1, 4096,                               \
      "width choices of an elastic policy's hidden layers (once-for-all training, "          \
      "doc/elastic.md); each layer also keeps its full width; empty: an ordinary policy")    \
    X(POLICY_ACTIVATION, "policy.activation", CHOICE, "tanh", 0, 0,                          \
      "activation of the hidden layers")                                                     \
    X(POLICY_CONV_CHANNELS, "policy.conv_channels", INT_LIST, "", 1, 1024,                   \
      "output channels of each layer of a convolutional encoder (policy.encoder nature or "  \
      "simple), e.g. 32,64,64; empty: the encoder's own (nature 32,64,64; simple "           \
      "32,64,128)")                                                                          \
    X(POLICY_CORE, "policy.core", CHOICE, "none", 0, 0,                                      \
      "recurrent core between the encoder and the heads: none (an MLP), gru or lstm")         \
    X(POLICY_CORE_KEEP_BIAS, "policy.core_keep_bias", FLOAT, "0", -10, 10,                   \
      "initial bias of the core's keep gate (GRU: update gate; LSTM: forget gate, 1 + "     \
      "this): positive starts with a longer memory")                                        \
    X(POLICY_CORE_SIZE, "policy.core_size", INT, "64", 1, 1024,                              \
      "units of the recurrent core (policy.core gru or lstm)")                               \
    X(POLICY_ENCODER, "policy.encoder", CHOICE, "mlp", 0, 0,                                 \
      "what reads the observations before the MLP trunk: mlp (box and discrete "             \
      "observations, read as they are) or a convolutional stack over image observations, "  \
      "each byte scaled to [0, 1]: nature (Nature DQN's 8x8/4, 4x4/2, 3x3/1) or simple "     \
      "(Sample Factory's convnet_simple, 8x8/4, 4x4/2, 3x3/2); ReLU after each layer")        \
    X(POLICY_EPSILON, "policy.epsilon", FLOAT, "0.05", 0, 1,                                 \
      "Q-policies (policy.head=q or dueling_q): the chance of a uniform random action when " \
      "acting without deterministic (DQN's training sets it by its schedule; "               \
      "frl_policy_load restores the saved one)")                                             \
    X(POLICY_FRAME_STACK, "policy.frame_stack", INT, "1", 1, 16,                             \
      "image observations: the encoder reads the last this many frames of each env, "        \
      "stacked as channels (zeros before an episode's first); each frame is stored once, "   \
      "the earlier ones kept as the policy's state (frl_policy_state_size)")                  \
    X(POLICY_HEAD, "policy.head", CHOICE, "actor_critic", 0, 0,                              \
      "what the networks output: an actor and a critic, Q-values (q; discrete actions), or " \
      "a dueling trunk with value and advantage heads (dueling_q; Wang et al., 2016)")       \
    X(POLICY_HIDDEN, "policy.hidden", INT_LIST, "64,64", 1, 4096,                            \
      "hidden layer widths of the MLP trunk, e.g. 64,64 (empty: a linear policy)")           \
    X(POLICY_INIT_LOG_STD, "policy.init_log_std", FLOAT, "0", -10, 5,                        \
      "initial log standard deviation of a Gaussian (box action) head")                      \
    X(POLICY_INIT, "policy.init", CHOICE, "orthogonal", 0, 0,                                \
      "initial weights of the MLP layers: orthogonal (gain sqrt 2 for hidden layers, 0.01 "  \
      "for the policy's outputs, 1 for values and Q-values; zero biases) or uniform "        \
      "(PyTorch's nn.Linear default, +-1/sqrt(fan_in) for weights and biases; DQN's, as "    \
      "SB3 and CleanRL start)")                                                              \
    X(POLICY_OBS_CLIP, "policy.obs_clip", FLOAT, "10", 0.001, 1e9,                           \
      "normalised observations are clipped to [-clip, clip] (obs_norm only; 0 would zero "   \
      "them all, so it is out of range)")                                                    \
    X(POLICY_OBS_NORM, "policy.obs_norm", BOOL, "false", 0, 1,                               \
      "normalise box observations by running mean and variance (saved with the policy)")     \
    X(POLICY_SHARED, "policy.shared", BOOL, "false", 0, 1,                                   \
      "actor and critic share one trunk (false: two separate networks)")                     \
    X(RUNTIME_DEVICE, "runtime.device", CHOICE, "cpu", 0, 0,                                 \
      "where networks run: cpu; cuda (the CUDA plugin and a device, or an error); auto "     \
      "(cuda when it can run the work and a trainer has 16 envs a thread or more, else cpu)") \
    X(RUNTIME_SEED, "runtime.seed", INT, "0", 0, 9007199254740992.0,                         \
      "base seed of the runtime (environments take theirs from reset)")                      \
    X(RUNTIME_SPIN_US, "runtime.spin_us", INT, "50", 0, 1000000,                             \
      "microseconds an idle worker spins for new work before it sleeps")                     \
    X(RUNTIME_TF32, "runtime.tf32", BOOL, "false", 0, 1,                                     \
      "cuda: let the GPU's matrix products use TensorFloat-32 (faster on Ampere and later, " \
      "about 3 decimal digits instead of 7)")                                                \
    X(RUNTIME_THREADS, "runtime.threads", INT, "0", 0, 1024,                                 \
      "threads doing work, the caller included: 0 = one per core, 1 = no workers")           \
    X(SAMPLER_GROUPS, "sampler.groups", INT, "2", 1, 64,                                     \
      "async: environment groups stepped in turn (double-buffered sampling: while one "      \
      "group's actions are computed, the others step); left unset, at most train.num_envs")  \
    X(SAMPLER_MAX_LAG, "sampler.max_lag", INT, "0", 0, 1e9,                                  \
      "async: drop a rollout any step of which is more than this many policy versions "      \
      "behind the learner, and count it (0: never drop)")                                    \
    X(SAMPLER_MODE, "sampler.mode", CHOICE, "sync", 0, 0,                                    \
      "sync: step, act and learn in turn; async: environments, inference and the learner "   \
      "run at the same time (APPO: decoupled PPO corrects for the policy lag, "              \
      "train.decoupled)")                                                                    \
    X(SAMPLER_SLOTS, "sampler.slots", INT, "2", 2, 64,                                       \
      "async: rollouts in the ring (more lets sampling run further ahead of the learner, "   \
      "with more lag)")                                                                      \
    X(TRAIN_ADAM_EPS, "train.adam_eps", FLOAT, "1e-5", 1e-12, 1, "Adam's epsilon")           \
    X(TRAIN_ADVANTAGE, "train.advantage", CHOICE, "gae", 0, 0,                               \
      "advantages and value targets: GAE(lambda), or V-trace (IMPALA), which corrects for "  \
      "the policy having changed since the rollout")                                         \
    X(TRAIN_ALGO, "train.algo", CHOICE, "ppo", 0, 0,                                         \
      "the learner: PPO's clipped surrogate, IMPALA's V-trace actor-critic "                 \
      "(-A log pi; implies train.advantage=vtrace), A2C (SB3's settings: 5 steps x 8 envs, " \
      "one gradient step per rollout, so train.epochs, train.minibatches, train.clip, "      \
      "train.clip_value and train.target_kl do not apply), DQN (Q-learning from a replay; "  \
      "SB3's defaults, doc/dqn.md), R2D2 (recurrent Q-learning from prioritised sequences, " \
      "doc/r2d2.md), "                                                                       \
      "or neuroevolution: OpenAI-ES (es.*) or Deep GA (ga.*), doc/neuroevolution.md")      \
    X(TRAIN_ANNEAL_LR, "train.anneal_lr", BOOL, "true", 0, 1,                                \
      "decay the learning rate linearly to 0 over the step budget")                          \
    X(TRAIN_APEX_ALPHA, "train.apex_alpha", FLOAT, "7", 0, 100,                              \
      "R2D2: actor i of N acts with epsilon apex_epsilon^(1 + apex_alpha i / (N - 1)) "      \
      "(Ape-X; one actor: i = (N - 1) / 2 of a range of N = 2, so 0.4^4.5 with the "        \
      "defaults; doc/r2d2.md)")                                                              \
    X(TRAIN_APEX_EPSILON, "train.apex_epsilon", FLOAT, "0.4", 0, 1,                          \
      "R2D2: the base of the actors' epsilons (train.apex_alpha)")                           \
    X(TRAIN_BATCH_SIZE, "train.batch_size", INT, "32", 1, 1048576,                           \
      "DQN: transitions per minibatch drawn from the replay; R2D2: sequences")              \
    X(TRAIN_BPTT, "train.bptt", INT, "0", 0, 1048576,                                        \
      "recurrent policies: gradients flow back at most this many steps (0: the whole "       \
      "rollout)")                                                                            \
    X(TRAIN_BUFFER_SIZE, "train.buffer_size", INT, "1000000", 1, 4503599627370496.0,          \
      "DQN, R2D2: env steps the replay keeps (rounded up to whole rollouts of T x B; "    \
      "doc/dqn.md gives the memory it takes)")                             \
    X(TRAIN_BURN_IN, "train.burn_in", INT, "40", 0, 1048576,                                 \
      "R2D2: steps at the start of each replayed sequence that only bring the recurrent "   \
      "state up to date (no loss, no gradient); must be below train.seq_length")             \
    X(TRAIN_CLIP, "train.clip", FLOAT, "0.2", 0, 10, "PPO's ratio clipping range")           \
    X(TRAIN_CLIP_VALUE, "train.clip_value", BOOL, "true", 0, 1,                              \
      "clip value updates to the same range around the old values")                          \
    X(TRAIN_DECOUPLED, "train.decoupled", BOOL, "false", 0, 1,                               \
      "PPO on lagged rollouts: clip around the learner's policy at the update's start and "  \
      "weight each normalised advantage by min(train.vtrace_rho, pi/mu) (on by default "     \
      "with sampler.mode=async)")                                                            \
    X(TRAIN_DOUBLE_Q, "train.double_q", BOOL, "false", 0, 1,                                 \
      "DQN: the online network picks the next action and the target network values it "     \
      "(van Hasselt et al., 2016)")                                                          \
    X(TRAIN_ENT_COEF, "train.ent_coef", FLOAT, "0.01", 0, 100, "entropy bonus coefficient")  \
    X(TRAIN_EPOCHS, "train.epochs", INT, "4", 1, 1000, "passes over each rollout")           \
    X(TRAIN_EXPLORATION_FINAL_EPS, "train.exploration_final_eps", FLOAT, "0.05", 0, 1,       \
      "DQN: epsilon at the end of its linear schedule")                                      \
    X(TRAIN_EXPLORATION_FRACTION, "train.exploration_fraction", FLOAT, "0.1", 0, 1,          \
      "DQN: the share of the step budget over which epsilon falls linearly to its final "    \
      "value")                                                                               \
    X(TRAIN_EXPLORATION_INITIAL_EPS, "train.exploration_initial_eps", FLOAT, "1", 0, 1,      \
      "DQN: epsilon at the start of its schedule")                                           \
    X(TRAIN_GAE_LAMBDA, "train.gae_lambda", FLOAT, "0.95", 0, 1, "GAE's lambda")             \
    X(TRAIN_GAMMA, "train.gamma", FLOAT, "0.99", 0, 1, "discount factor")                    \
    X(TRAIN_GRADIENT_STEPS, "train.gradient_steps", INT, "1", -1, 1048576,                   \
      "DQN: minibatch updates after each train.train_freq steps (-1: as many as the env "  \
      "steps collected, train.train_freq x train.num_envs, as SB3)")                         \
    X(TRAIN_LEARNING_STARTS, "train.learning_starts", INT, "100", 0, 9007199254740992.0,     \
      "DQN: env steps of uniform random actions before the first update; R2D2: env steps "\
      "before the first update (the actors keep their epsilons)")                    \
    X(TRAIN_LOG_EVERY, "train.log_every", INT, "0", 0, 9007199254740992.0,                  \
      "write a metrics.csv row and TensorBoard scalars at most once per this many env "      \
      "steps (0: after every update; DQN's and R2D2's short rollouts default to 1000)")      \
    X(TRAIN_LOSS, "train.loss", CHOICE, "huber", 0, 0,                                       \
      "DQN: the TD loss, Huber (smooth L1, delta 1) or squared error (e^2, CleanRL's)")      \
    X(TRAIN_LR, "train.lr", FLOAT, "2.5e-4", 0, 10, "Adam learning rate (initial)")          \
    X(TRAIN_MAX_GRAD_NORM, "train.max_grad_norm", FLOAT, "0.5", 0, 1e9,                      \
      "clip the global gradient norm to this (0: no clipping)")                              \
    X(TRAIN_MINIBATCHES, "train.minibatches", INT, "4", 1, 1048576,                          \
      "minibatches per epoch (rollout * num_envs must divide evenly)")                       \
    X(TRAIN_N_STEP, "train.n_step", INT, "1", 1, 1024,                                       \
      "DQN, R2D2: rewards summed before bootstrapping (n-step returns)")                           \
    X(TRAIN_NORM_ADV, "train.norm_adv", BOOL, "true", 0, 1,                                  \
      "normalise advantages per minibatch")                                                  \
    X(TRAIN_NUM_ENVS, "train.num_envs", INT, "8", 1, 1048576, "environments stepped together") \
    X(TRAIN_PER_ALPHA, "train.per_alpha", FLOAT, "0.6", 0, 1,                                \
      "prioritised replay (DQN with train.prioritized; R2D2, which sets 0.9): sampling "     \
      "probability proportional to priority^alpha")                                          \
    X(TRAIN_PER_BETA, "train.per_beta", FLOAT, "0.4", 0, 1,                                  \
      "prioritised replay: importance-sampling exponent (DQN: at the start, annealed "      \
      "linearly to 1 over the step budget; R2D2 keeps it)")                                 \
    X(TRAIN_PRIORITIZED, "train.prioritized", BOOL, "false", 0, 1,                           \
      "DQN: prioritised replay (Schaul et al., 2016) instead of uniform draws")              \
    X(TRAIN_PRIORITY_ETA, "train.priority_eta", FLOAT, "0.9", 0, 1,                          \
      "R2D2: a sequence's priority is eta max|TD error| + (1 - eta) mean|TD error| over its " \
      "trained steps")                                                                       \
    X(TRAIN_REPLAY_RATIO, "train.replay_ratio", FLOAT, "1", 1e-6, 1e6,                       \
      "R2D2: steps trained on (after burn-in) per env step added to the replay; sets the "   \
      "learner updates per rollout")                                                         \
    X(TRAIN_REWARD_NORM, "train.reward_norm", BOOL, "false", 0, 1,                           \
      "scale rewards by the running std of the discounted return")                           \
    X(TRAIN_ROLLOUT, "train.rollout", INT, "128", 1, 1048576,                                \
      "steps per environment in each rollout (T)")                                           \
    X(TRAIN_SAVE_REPLAY, "train.save_replay", BOOL, "true", 0, 1,                            \
      "checkpoints of an off-policy trainer include the replay's contents, so a resumed "    \
      "run samples what it would have (false: smaller files; the replay refills)")           \
    X(TRAIN_SEED_OFFSET, "train.seed_offset", INT, "0", 0, 9007199254740992.0,               \
      "added to the runtime's seed to make the trainer's (initial weights, sampling, env "   \
      "resets): members of a population on one runtime need different offsets")              \
    X(TRAIN_SEQ_LENGTH, "train.seq_length", INT, "80", 2, 1048576,                           \
      "R2D2: steps per replayed sequence, burn-in included")                                 \
    X(TRAIN_SEQ_OVERLAP, "train.seq_overlap", INT, "40", 0, 1048576,                         \
      "R2D2: steps adjacent sequences share; seq_length - seq_overlap is the rollout (T) "    \
      "and must divide seq_length")                                                          \
    X(TRAIN_STORED_STATE, "train.stored_state", BOOL, "true", 0, 1,                          \
      "R2D2: start each sequence from the recurrent state acting had there (false: from "    \
      "zeros, the ablation of Kapturowski et al.)")                                          \
    X(TRAIN_TARGET_KL, "train.target_kl", FLOAT, "none", 0, 1e9,                             \
      "stop an update's epochs once the approximate KL exceeds this (unset: never)")         \
    X(TRAIN_TARGET_UPDATE_INTERVAL, "train.target_update_interval", INT, "10000", 1,         \
      9007199254740992.0,                                                                    \
      "DQN: env steps between target-network updates (SB3's: every interval / num_envs "    \
      "vec-env steps; each moves it train.tau of the way to the online network)")            \
    X(TRAIN_TARGET_PERIOD, "train.target_period", INT, "2500", 1, 9007199254740992.0,        \
      "R2D2: learner updates between copies of the online network to the target network")   \
    X(TRAIN_TARGET_RETURN, "train.target_return", FLOAT, "none", -1e300, 1e300,              \
      "stop training once the mean return of the last 100 episodes reaches this (ES and "    \
      "GA: the kept policy's fitness; unset: never)")                                        \
    X(TRAIN_TAU, "train.tau", FLOAT, "1", 0, 1,                                              \
      "DQN: target update rate (1: copy; below 1: Polyak averaging)")                        \
    X(TRAIN_TRAIN_FREQ, "train.train_freq", INT, "4", 1, 1048576,                            \
      "DQN: steps per env between updates (its rollout length; train.rollout is PPO's)")     \
    X(TRAIN_VTRACE_C, "train.vtrace_c", FLOAT, "1", 1e-6, 1e9,                               \
      "V-trace: traces are lambda * min(c, pi/mu) (train.advantage=vtrace)")                 \
    X(TRAIN_VTRACE_RHO, "train.vtrace_rho", FLOAT, "1", 1e-6, 1e9,                           \
      "V-trace's TD weights min(rho, pi/mu) (train.advantage=vtrace), and decoupled PPO's "  \
      "advantage weights (train.decoupled)")                                                 \
    X(TRAIN_VALUE_RESCALE, "train.value_rescale", BOOL, "true", 0, 1,                        \
      "R2D2: learn h(Q) with h(x) = sign(x)(sqrt(|x| + 1) - 1) + 0.001 x, targets built "    \
      "from h^-1 of the target network's values")                                            \
    X(TRAIN_VF_COEF, "train.vf_coef", FLOAT, "0.5", 0, 100, "value loss coefficient")

/* The choices of each CHOICE key, FRL_CHOICES_<ID>(X, K): X(K, NAME, text) per choice,
 * in the order of their indices. Each gives enum { FRL_<ID>_<NAME>..., FRL_<ID>_COUNT }
 * and the key's "a|b|c" text. */
#define FRL_CHOICES_DIST_MODE(X, K) X(K, NONE, "none") X(K, DDPPO, "ddppo")
#define FRL_CHOICES_DIST_REDUCE(X, K) X(K, AUTO, "auto") X(K, GATHER, "gather") \
    X(K, SLICES, "slices")
#define FRL_CHOICES_DIST_ON_FAULT(X, K) X(K, ABORT, "abort") X(K, RETURN, "return")
#define FRL_CHOICES_EXPORT_FORMAT(X, K) X(K, ONNX, "onnx") X(K, C, "c")
#define FRL_CHOICES_EXPORT_WEIGHTS(X, K) X(K, FLOAT32, "float32") X(K, INT8, "int8")
#define FRL_CHOICES_POLICY_HEAD(X, K) X(K, ACTOR_CRITIC, "actor_critic") X(K, Q, "q") \
    X(K, DUELING_Q, "dueling_q")
#define FRL_CHOICES_POLICY_INIT(X, K) X(K, ORTHOGONAL, "orthogonal") X(K, UNIFORM, "uniform")
#define FRL_CHOICES_POLICY_ENCODER(X, K) X(K, MLP, "mlp") X(K, NATURE, "nature") \
    X(K, SIMPLE, "simple")
#define FRL_CHOICES_POLICY_CORE(X, K) X(K, NONE, "none") X(K, GRU, "gru") X(K, LSTM, "lstm")
#define FRL_CHOICES_POLICY_ACTIVATION(X, K) X(K, TANH, "tanh") X(K, RELU, "relu") X(K, ELU, "elu")
#define FRL_CHOICES_RUNTIME_DEVICE(X, K) X(K, CPU, "cpu") X(K, CUDA, "cuda") X(K, AUTO, "auto")
#define FRL_CHOICES_SAMPLER_MODE(X, K) X(K, SYNC, "sync") X(K, ASYNC, "async")
#define FRL_CHOICES_TRAIN_ADVANTAGE(X, K) X(K, GAE, "gae") X(K, VTRACE, "vtrace")
#define FRL_CHOICES_TRAIN_LOSS(X, K) X(K, HUBER, "huber") X(K, MSE, "mse")
#define FRL_CHOICES_TRAIN_ALGO(X, K) X(K, PPO, "ppo") X(K, IMPALA, "impala") X(K, A2C, "a2c") \
    X(K, DQN, "dqn") X(K, ES, "es") X(K, GA, "ga") X(K, R2D2, "r2d2")
/* clang-format on */

#define FRL_KEY_ENUMERATOR(ID, ...) FRL_KEY_##ID,
typedef enum frl_key { FRL_CONFIG_KEYS(FRL_KEY_ENUMERATOR) FRL_KEY_COUNT } frl_key;

/* Only CHOICE rows make an enum; the other types expand to nothing. */
#define FRL_CHOICE_ENUMERATOR(K, NAME, text) FRL_##K##_##NAME,
#define FRL_CHOICE_ENUM_CHOICE(ID)                                                           \
    enum { FRL_CHOICES_##ID(FRL_CHOICE_ENUMERATOR, ID) FRL_##ID##_COUNT };
#define FRL_CHOICE_ENUM_INT(ID)
#define FRL_CHOICE_ENUM_FLOAT(ID)
#define FRL_CHOICE_ENUM_BOOL(ID)
#define FRL_CHOICE_ENUM_INT_LIST(ID)
#define FRL_CHOICE_ENUM(ID, name, TYPE, ...) FRL_CHOICE_ENUM_##TYPE(ID)
FRL_CONFIG_KEYS(FRL_CHOICE_ENUM)

/* "|a|b|c" of a key's choices; the table skips the first bar. */
#define FRL_CHOICE_BAR_TEXT(K, NAME, text) "|" text
#define FRL_CHOICES_TEXT(ID) FRL_CHOICES_##ID(FRL_CHOICE_BAR_TEXT, ID)

#endif
