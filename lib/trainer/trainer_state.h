/* Internal view of frl_trainer: its fields, which the trainer's files share (its
 * functions are declared in trainer.h, its outputs' in trainer_output.h). */
#ifndef FRL_TRAINER_TRAINER_STATE_H
#define FRL_TRAINER_TRAINER_STATE_H

#include <stdatomic.h>
#include <stdio.h>

#include "algo/learner.h"
#include "io/tfevents.h"
#include "sampler/sampler.h"

enum { FRL_ENV_NAME_MAX = 64 };

/* Learn from a READING slot and release it (frl_trainer_learn_slot; benchmarks of the
 * sampler alone put a learner that only releases). */
typedef frl_status (*frl_learn_fn)(frl_trainer *t, int32_t slot, int64_t num_updates);

struct frl_trainer {
    frl_runtime *rt;
    frl_config *cfg;            /* resolved settings: env defaults under the caller's */
    char env_name[FRL_ENV_NAME_MAX]; /* "" for a host vec env */
    frl_vec_env *venv;          /* venvs[0] */
    int32_t own_venv;           /* destroy the vec envs with the trainer */
    int32_t held;               /* venvs[0..held) are held (frl_vec_env_hold) by this one */
    /* The env groups: group g is venvs[g], columns [group_first[g], + its envs) of the
     * ring. One group in sync mode; sampler.groups (or the host's vec envs) in async. */
    int32_t groups;
    frl_vec_env *venvs[FRL_MAX_GROUPS];
    int32_t group_first[FRL_MAX_GROUPS];
    frl_sampler *sampler;       /* sampler.mode's */
    frl_sampler_host host;      /* the sampler's view of this trainer */
    frl_learn_fn learn;
    /* A train call, or a save or set_output made outside one, holds the trainer (the
     * others are refused meanwhile); frl_trainer_in_callback tells the callback's own
     * save and set_output from another thread's. */
    atomic_int running;
    frl_policy *policy;
    frl_ring *ring;             /* = store.ring */
    frl_storage store;          /* what the learner declared it needs */
    frl_learner learner;        /* train.algo's */
    /* B: the envs of all groups, counted from the vec envs by the build, which writes it
     * into cfg's train.num_envs (the key's one writer: set_groups in trainer.c). A
     * built-in trainer makes its vec envs from the key (frl_trainer_create,
     * frl_trainer_load); a caller's train.num_envs must match the host's vec envs
     * (frl_trainer_check_num_envs), and frl_trainer_load_vec checks the saved B. */
    int32_t T, B;
    uint64_t seed;
    frl_rollout_book book;      /* progress, episodes, reward normalisation */
    int64_t steps_at_start;     /* env_steps when created or loaded (for the rate) */
    /* Made by frl_trainer_load or _load_vec: its metrics.csv continues the saved run's.
     * A created trainer's replaces the file, updates done or not. */
    int32_t resumed;
    frl_metrics metrics;
    frl_metrics_fn cb;
    void *cb_user;
    atomic_int stop;
    double t_start;
    /* outputs */
    FILE *csv;
    int64_t logged_steps;       /* env_steps of the last row written (train.log_every) */
    frl_tfevents *tb;
    /* dist.mode=ddppo (trainer_dist.c): the ranks, the normaliser's env groups, the
     * exchange buffers, and the episodes of all ranks (the metrics and target use them) */
    struct frl_dist *dist;
    int32_t dist_group_envs;
    size_t dist_record;         /* doubles a rank sends after each update */
    double *dist_send, *dist_recv;
    double *dist_rewards;       /* every rank's return statistics of a rollout's steps */
    int64_t dist_episodes, dist_window;
    double dist_return, dist_length;
    /* A resumed run's episodes of ranks other than rank 0 before the save (rank 0 keeps
     * its own count, the others start from 0): dist_episodes goes on from the saved. */
    int64_t dist_episodes_base;
    int64_t dist_bytes0, dist_exchanges0; /* the traffic when the last report was made */
    int64_t dist_mark, dist_update_bytes; /* the traffic at the last update's end; its own */
    int32_t dist_need;          /* dist.preempt: finished ranks that stop the others (0: off) */
    int32_t dist_min_steps;     /* the steps a rollout collects before it may be stopped */
    int64_t dist_preempted;     /* rollouts this rank cut short */
    int64_t dist_preempted_all; /* all ranks', as of the last update */
    /* A stop request (`stop`) is exchanged after each update; when any rank has one, all
     * stop before the next (the sampler watches dist_stop instead of stop). */
    atomic_int dist_stop;
    char err[FRL_ERRMSG_SIZE];
};

#endif
