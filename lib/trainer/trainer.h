/* Internal view of frl_trainer: construction, the learn step and the public API around
 * a sampler (lib/sampler/) and a learner (lib/algo/), each chosen by the settings from a
 * table and called through it. */
#ifndef FRL_TRAINER_TRAINER_H
#define FRL_TRAINER_TRAINER_H

#include <stdatomic.h>
#include <stdio.h>

#include "algo/learner.h"
#include "trainer/env_defaults.h"
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
    /* The env groups: group g is venvs[g], columns [group_first[g], + its envs) of the
     * ring. One group in sync mode; sampler.groups (or the host's vec envs) in async. */
    int32_t groups;
    frl_vec_env *venvs[FRL_MAX_GROUPS];
    int32_t group_first[FRL_MAX_GROUPS];
    frl_sampler *sampler;       /* sampler.mode's */
    frl_sampler_host host;      /* the sampler's view of this trainer */
    frl_learn_fn learn;
    atomic_int running;
    frl_policy *policy;
    frl_ring *ring;             /* = store.ring */
    frl_storage store;          /* what the learner declared it needs */
    frl_learner learner;        /* train.algo's */
    /* B: the envs of all groups, always train.num_envs of cfg. A built-in trainer makes
     * its vec envs from the key (frl_trainer_create, frl_trainer_load); a trainer on the
     * host's vec envs writes their size into it (frl_trainer_create_vecs) after
     * frl_trainer_check_num_envs, and frl_trainer_load_vec checks the saved B. */
    int32_t T, B;
    uint64_t seed;
    frl_rollout_book book;      /* progress, episodes, reward normalisation */
    int64_t steps_at_start;     /* env_steps when created or loaded (for the rate) */
    frl_metrics metrics;
    frl_metrics_fn cb;
    void *cb_user;
    atomic_int stop;
    double t_start;
    /* outputs */
    FILE *csv;
    frl_tfevents *tb;
    char err[FRL_ERRMSG_SIZE];
};

/* trainer.c: build a trainer around existing vec envs, one per group (own = destroy
 * them with the trainer, also on failure); settings are the resolved config (taken
 * over). */
frl_status frl_trainer_build(frl_trainer **out, frl_runtime *rt, frl_vec_env *const *venvs,
                             int32_t groups, int own, frl_config *resolved,
                             const char *env_name, const char *who);
/* A trainer on the host's vec env (as frl_trainer_create_vec) whose learner is the
 * given table instead of train.algo's: tests put learners there that the library does
 * not ship. Such a trainer cannot be loaded from a checkpoint (the file names no table). */
frl_status frl_trainer_create_with_learner(frl_trainer **out, frl_runtime *rt, frl_vec_env *venv,
                                           const frl_config *cfg, const frl_learner_ops *learner);
/* FRL_OK unless the caller's cfg sets train.num_envs to another number than n, the envs
 * of the host's count vec envs: then FRL_ERR_INVALID_ARGUMENT naming both, in err (may
 * be NULL). An unset key takes the vec envs' size. */
frl_status frl_trainer_check_num_envs(const frl_config *cfg, int64_t n, int32_t count, char *err);
/* The default learn step: the learner's update, the normaliser, metrics; releases the
 * slot. */
frl_status frl_trainer_learn_slot(frl_trainer *t, int32_t slot, int64_t num_updates);
/* Write outputs and call the metrics callback after an update. */
frl_status frl_trainer_after_update(frl_trainer *t);
int frl_trainer_target_reached(const frl_trainer *t);

/* The progress fields of the metrics (update, steps, episodes, mean return) from the
 * trainer's counters, e.g. after a load. */
void frl_trainer_refresh_progress(frl_trainer *t);
/* trainer_output.c */
frl_status frl_trainer_settings_text(const frl_trainer *t, char *buf, size_t size);
frl_status frl_trainer_write_outputs(frl_trainer *t);
void frl_trainer_close_outputs(frl_trainer *t);

#endif
