/* The learner interface: what every algorithm (PPO, IMPALA, A2C, ...) gives the trainer.
 * The trainer looks a table up by train.algo (frl_learner_lookup) and calls through it;
 * it never asks which algorithm it holds, so a new one is a file and a table row.
 *
 * Three things the next algorithms need are in the interface already:
 * - storage: a learner declares what it learns from (the on-policy ring only, a replay
 *   with random access beside it, or a population's [P x n] parameters) and the trainer
 *   allocates that before create;
 * - networks: a learner lists every network it owns (actor, critics, target copies) by
 *   name and role, so checkpoints and devices iterate a list, not special cases;
 * - recurrent state: each batch carries the per-env state captured at its rollout's
 *   start (zero floats wide for the MLP policies of today). */
#ifndef FRL_ALGO_LEARNER_H
#define FRL_ALGO_LEARNER_H

#include "core/config.h"
#include "io/container.h"
#include "rl/policy.h"
#include "rl/population.h"
#include "rl/replay.h"
#include "rl/ring.h"

typedef enum frl_storage_kind {
    FRL_STORAGE_ROLLOUT,    /* the on-policy ring slot is all the learner reads */
    FRL_STORAGE_REPLAY,     /* plus a replay of transitions with random access */
    FRL_STORAGE_POPULATION, /* plus [members x num_params] parameters (GA, ES) */
} frl_storage_kind;

typedef struct frl_storage_need {
    frl_storage_kind kind;
    int64_t capacity;       /* replay: transitions kept (rounded up to whole slots) */
    int32_t prioritized;    /* replay: keep sum and min trees (frl_replay_shape) */
    double alpha;           /* replay: priority exponent */
    int32_t batch_rows;     /* replay: rows of its own minibatch arrays (0: none) */
    int32_t keep_state;     /* replay: keep each block's recurrent state0 (sequences) */
    int32_t members;        /* population: P */
} frl_storage_need;

/* Allocated by the trainer per the learner's need; the ring always (the samplers write
 * rollouts there, and every learner takes its input from a slot). */
typedef struct frl_storage {
    frl_storage_kind kind;
    frl_ring *ring;
    frl_replay *replay;     /* FRL_STORAGE_REPLAY, else NULL */
    frl_population *population; /* FRL_STORAGE_POPULATION, else NULL */
} frl_storage;

typedef enum frl_net_role {
    FRL_NET_ACTOR_CRITIC,   /* the policy: actor and critic heads in one vector */
    FRL_NET_ACTOR,
    FRL_NET_CRITIC,
    FRL_NET_Q,
    FRL_NET_TARGET,         /* a delayed copy of another net (its `source`) */
} frl_net_role;

enum { FRL_LEARNER_MAX_NETS = 8 };

typedef struct frl_learner_net {
    const char *name;       /* "policy", "q", "q_target", ... (checkpoint section names) */
    frl_net_role role;
    int32_t source;         /* FRL_NET_TARGET: the index it copies, else -1 */
    float *params;
    int64_t num_params;
} frl_learner_net;

/* Every network the learner trains or keeps; net[0] is the one the samplers act with. */
typedef struct frl_learner_nets {
    int32_t count;
    frl_learner_net net[FRL_LEARNER_MAX_NETS];
} frl_learner_nets;

/* One learn call's input. The slot is READING; the trainer releases it after. */
typedef struct frl_batch {
    int32_t slot;
    const float *state0;    /* [B x state_w]: each env's recurrent state at the rollout's start */
    int32_t state_w;        /* 0 today: no policy carries state yet */
    int64_t update_index;   /* counts from 0 (annealing, shuffles) */
    int64_t num_updates;    /* of the train call, for annealing */
    uint64_t seed;
    int32_t steps;          /* steps of the slot's rollout collected (0: all T; fewer when
                             * a distributed rank was preempted: later rows are no data) */
} frl_batch;

/* What an update reports (the metrics' learner fields). */
typedef struct frl_learn_stats {
    double policy_loss, value_loss, entropy, approx_kl, clip_fraction;
    double explained_variance, grad_norm, learning_rate;
    int32_t epochs_done;
    double time_backward, time_optimizer;
    double time_values;     /* the value pass over the rollout (CPU learners) */
    /* Value learners (DQN): the mean Q of the actions taken and the mean |TD error| over
     * the minibatches, the acting epsilon of the rollout, the replay's fill (0..1), the
     * minibatches' mean age (rows written since), and the time in the replay. */
    double q_mean, td_error, epsilon, replay_fill, sample_age, time_replay;
    /* R2D2: the drawn sequences' largest priority over their smallest. */
    double priority_spread;
    /* Neuroevolution: the generation's mean and best fitness, the kept policy's. */
    double population_mean, population_best, kept_fitness;
} frl_learn_stats;

/* What create gets: the trainer's runtime, settings, acting policy and storage. */
typedef struct frl_learner_ctx {
    frl_runtime *rt;
    const frl_config *cfg;
    frl_policy *policy;
    frl_storage *store;
    /* The env groups (the async sampler's actors): group g is the envs [group_first[g],
     * group_first[g + 1]) of the B, the last one running to B. */
    int32_t groups;
    const int32_t *group_first;
    /* dist.mode: this process's place among the ranks (NULL: one process) */
    struct frl_dist *dist;
} frl_learner_ctx;

typedef struct frl_learner frl_learner;

typedef struct frl_learner_ops {
    const char *name;
    /* "key=value" settings the algorithm is defined with (its reference's), applied over
     * the environment's defaults (tuned for PPO) and under the caller's; NULL: none. */
    const char *settings;
    /* Trains elastic policies (elastic.widths); the trainer refuses the key for the
     * others, which would otherwise train a plain policy that fastrl cut cannot cut. */
    int elastic;
    /* Steps per env in each rollout (T) for these settings; NULL: train.rollout. */
    int64_t (*rollout)(const frl_config *cfg);
    /* The storage the trainer must allocate for these settings. */
    void (*storage)(const frl_config *cfg, frl_storage_need *need);
    /* Fill l->impl and l->nets; on failure the trainer still calls destroy. */
    frl_status (*create)(frl_learner *l, const frl_learner_ctx *c, char *err);
    void (*destroy)(frl_learner *l);
    frl_status (*learn)(frl_learner *l, const frl_batch *b, frl_learn_stats *out, char *err);
    /* Checkpoints: the optimiser's step count (*steps) and the sections of its state;
     * load restores them from a container written by save. */
    void (*save)(const frl_learner *l, frl_section *s, int32_t *n, int64_t *steps);
    frl_status (*load)(frl_learner *l, const frl_container *c, int64_t steps, char *err);
    /* Neuroevolution: the fitness of the parameters kept in the policy, from state that
     * checkpoints keep (NaN before the first generation), for train.target_return's
     * check after a load as well; NULL for the others. */
    double (*kept_fitness)(const frl_learner *l);
} frl_learner_ops;

struct frl_learner {
    const frl_learner_ops *ops;
    frl_runtime *rt;
    frl_learner_nets nets;
    void *impl;             /* the algorithm's own state */
    /* While a checkpoint loads: the train.per_alpha its saved settings name (NaN: none),
     * the exponent of priorities saved before files recorded theirs; and whether the
     * file holds the replay (train.save_replay as saved): a learner's own replay state
     * (R2D2's priorities) is in it only then. */
    double saved_alpha;
    int32_t saved_replay;
};

/* The table of train.algo's choice in cfg (lib/algo/learner.c). */
const frl_learner_ops *frl_learner_lookup(const frl_config *cfg);

/* Add a net to l->nets; returns its index. */
int32_t frl_learner_add_net(frl_learner *l, const char *name, frl_net_role role, int32_t source,
                            float *params, int64_t num_params);

#endif
