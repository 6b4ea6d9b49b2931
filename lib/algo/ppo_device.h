/* The PPO learner on the policy's CUDA device (through the plugin). */
#ifndef FRL_ALGO_PPO_DEVICE_H
#define FRL_ALGO_PPO_DEVICE_H

#include "algo/ppo.h"

/* ppo_device.c: the learner on the policy's CUDA device (l->p->dev set). create: after
 * frl_ppo_init; update: frl_ppo_update's work (values, advantages, epochs) on the
 * device, then the parameters back into the policy. */
frl_status frl_ppo_device_create(frl_ppo *l, char *err);
void frl_ppo_device_free(frl_ppo *l);
frl_status frl_ppo_device_update(frl_ppo *l, int32_t slot, int64_t update_index,
                                 int64_t num_updates, uint64_t seed, frl_ppo_stats *out,
                                 char *err);

#endif
