/* The PPO learner's table functions (lib/algo/ppo_learner.c). */
#ifndef FRL_ALGO_PPO_LEARNER_H
#define FRL_ALGO_PPO_LEARNER_H

#include "algo/ppo.h"

/* The learner table's functions, for algorithms built on this learner (A2C): create
 * with the given settings, then update, checkpoint and free as PPO does. */
frl_status frl_ppo_learner_create(frl_learner *l, const frl_learner_ctx *c,
                                  const frl_ppo_settings *s, char *err);
void frl_ppo_learner_destroy(frl_learner *l);
frl_status frl_ppo_learner_learn(frl_learner *l, const frl_batch *b, frl_learn_stats *out,
                                 char *err);
void frl_ppo_learner_save(const frl_learner *l, frl_section *s, int32_t *n, int64_t *steps);
frl_status frl_ppo_learner_load(frl_learner *l, const frl_container *c, int64_t steps, char *err);

#endif
