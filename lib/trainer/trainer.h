/* Internal view of frl_trainer: the synchronous sampler and the PPO learner. */
#ifndef FRL_RL_TRAINER_H
#define FRL_RL_TRAINER_H

#include <stdatomic.h>
#include <stdio.h>

#include "env/vec_env.h"
#include "io/tfevents.h"
#include "algo/ppo.h"

enum { FRL_RECENT_EPISODES = 100, FRL_ENV_NAME_MAX = 64, FRL_MAX_GROUPS = 64 };

struct frl_async;

/* Learn from a READING slot and release it (the PPO learner; benchmarks of the sampler
 * alone put a learner that only releases). */
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
    struct frl_async *as;       /* sampler.mode=async: the scheduler, else NULL */
    frl_learn_fn learn;
    int64_t slots_dropped;      /* rollouts dropped for exceeding sampler.max_lag */
    atomic_int running;
    frl_policy *policy;
    frl_ring *ring;
    frl_ppo ppo;
    /* B: the envs of all groups, always train.num_envs of cfg. A built-in trainer makes
     * its vec envs from the key (frl_trainer_create, frl_trainer_load); a trainer on the
     * host's vec envs writes their size into it (frl_trainer_create_vecs) after
     * frl_trainer_check_num_envs, and frl_trainer_load_vec checks the saved B. */
    int32_t T, B;
    uint64_t seed;
    /* progress */
    int64_t env_steps, updates, rollout_steps, episodes;
    int64_t steps_at_start;     /* env_steps when created or loaded (for the rate) */
    int32_t started;
    float recent_return[FRL_RECENT_EPISODES];
    int32_t recent_length[FRL_RECENT_EPISODES];
    /* reward normalisation: discounted return per env and its running variance */
    int32_t reward_norm;
    double *disc_return;
    double rn_count, rn_mean, rn_m2;
    float rn_scale;
    /* acting */
    int32_t act_rows;
    float *dev_out;             /* runtime.device=cuda: the actor's outputs of one step */
    int32_t slot;
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

/* env_defaults.c: the settings that solve a built-in, as "key=value" text ("" if none). */
const char *frl_env_default_settings(const char *env_name);

/* trainer.c: build a trainer around existing vec envs, one per group (own = destroy
 * them with the trainer, also on failure); settings are the resolved config (taken
 * over). */
frl_status frl_trainer_build(frl_trainer **out, frl_runtime *rt, frl_vec_env *const *venvs,
                             int32_t groups, int own, frl_config *resolved,
                             const char *env_name, const char *who);
/* FRL_OK unless the caller's cfg sets train.num_envs to another number than n, the envs
 * of the host's count vec envs: then FRL_ERR_INVALID_ARGUMENT naming both, in err (may
 * be NULL). An unset key takes the vec envs' size. */
frl_status frl_trainer_check_num_envs(const frl_config *cfg, int64_t n, int32_t count, char *err);
/* Write the results of the step just taken by the vec env of group g into row block
 * step of slot; reward normalisation and episode statistics included. */
void frl_trainer_store_step(frl_trainer *t, int32_t g, int32_t slot, int32_t step);
/* The action of env `local` of group g, from the sampled row. */
void frl_trainer_env_action(frl_trainer *t, int32_t g, int32_t local, const void *sampled);
/* The default learner: values, advantages, the update, metrics; releases the slot. */
frl_status frl_trainer_learn_slot(frl_trainer *t, int32_t slot, int64_t num_updates);
/* Write outputs and call the metrics callback after an update. */
frl_status frl_trainer_after_update(frl_trainer *t);
int frl_trainer_target_reached(const frl_trainer *t);

/* trainer_async.c */
frl_status frl_async_create(struct frl_async **out, frl_trainer *t);
void frl_async_destroy(struct frl_async *a);
frl_status frl_async_train(struct frl_async *a, int64_t total_steps);
/* Train several async trainers (same runtime) in one run; *failed: the index of the
 * trainer whose error ended it (-1 if none). */
frl_status frl_async_train_many(struct frl_async *const *m, int32_t count, int64_t total_steps,
                                int32_t *failed);
/* The scheduler's lock, held while the learner reads progress the sampler writes. */
void frl_async_lock(struct frl_async *a);
void frl_async_unlock(struct frl_async *a);
/* How the device sampler has loaded weight versions so far: *taken from the learner
 * model's snapshots on the device, *uploaded from the host (both 0 on the CPU).
 * Between train calls only. */
void frl_async_device_loads(const struct frl_async *a, int64_t *taken, int64_t *uploaded);
/* The progress fields of the metrics (update, steps, episodes, mean return) from the
 * trainer's counters, e.g. after a load. */
void frl_trainer_refresh_progress(frl_trainer *t);
/* trainer_output.c */
frl_status frl_trainer_settings_text(const frl_trainer *t, char *buf, size_t size);
frl_status frl_trainer_write_outputs(frl_trainer *t);
void frl_trainer_close_outputs(frl_trainer *t);
double frl_now(void);

#endif
