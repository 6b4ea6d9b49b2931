/* Internal view of frl_trainer: the synchronous sampler and the PPO learner. */
#ifndef FRL_RL_TRAINER_H
#define FRL_RL_TRAINER_H

#include <stdatomic.h>
#include <stdio.h>

#include "env/vec_env.h"
#include "io/tfevents.h"
#include "rl/ppo.h"

enum { FRL_RECENT_EPISODES = 100, FRL_ENV_NAME_MAX = 64 };

struct frl_trainer {
    frl_runtime *rt;
    frl_config *cfg;            /* resolved settings: env defaults under the caller's */
    char env_name[FRL_ENV_NAME_MAX]; /* "" for a host vec env */
    frl_vec_env *venv;
    int32_t own_venv;
    frl_policy *policy;
    frl_ring *ring;
    frl_ppo ppo;
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

/* trainer.c: build a trainer around an existing vec env (own = destroy it with the
 * trainer); settings are the resolved config (taken over). */
frl_status frl_trainer_build(frl_trainer **out, frl_runtime *rt, frl_vec_env *venv, int own,
                             frl_config *resolved, const char *env_name, const char *who);
/* The progress fields of the metrics (update, steps, episodes, mean return) from the
 * trainer's counters, e.g. after a load. */
void frl_trainer_refresh_progress(frl_trainer *t);
/* trainer_output.c */
frl_status frl_trainer_settings_text(const frl_trainer *t, char *buf, size_t size);
frl_status frl_trainer_write_outputs(frl_trainer *t);
void frl_trainer_close_outputs(frl_trainer *t);
double frl_now(void);

#endif
