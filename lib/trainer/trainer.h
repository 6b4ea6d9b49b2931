/* The trainer's functions: construction and the learn step (trainer.c), around a
 * sampler (lib/sampler/) and a learner (lib/algo/), each chosen by the settings from a
 * table and called through it. */
#ifndef FRL_TRAINER_TRAINER_H
#define FRL_TRAINER_TRAINER_H

#include "trainer/env_defaults.h"
#include "trainer/trainer_state.h"

/* trainer.c: build a trainer around existing vec envs, one per group (own = destroy
 * them with the trainer, also on failure); settings are the resolved config (taken
 * over). */
frl_status frl_trainer_build(frl_trainer **out, frl_runtime *rt, frl_vec_env *const *venvs,
                             int32_t groups, int own, frl_config *resolved,
                             const char *env_name, const char *who);
/* trainer.c: the env groups the settings' sampler steps (sampler.groups for async, one
 * for sync); and k vec envs of the built-in env_name, train.num_envs split as evenly as
 * possible (destroyed on failure). */
int32_t frl_trainer_groups_for(const frl_config *c);
frl_status frl_trainer_make_groups(frl_vec_env **v, int32_t k, frl_runtime *rt,
                                   const char *env_name, const frl_config *c, const char *who);
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
/* The same for a neuroevolution learner: slot is unused (-1); the fitnesses of the
 * population's members, just evaluated, are its input. */
frl_status frl_trainer_learn_population(frl_trainer *t, int32_t slot, int64_t num_updates);
/* Write outputs and call the metrics callback after an update. */
frl_status frl_trainer_after_update(frl_trainer *t);
int frl_trainer_target_reached(const frl_trainer *t);

/* The progress fields of the metrics (update, steps, episodes, mean return) from the
 * trainer's counters, e.g. after a load. */
void frl_trainer_refresh_progress(frl_trainer *t);

#endif
