/* PPO's minibatches by env groups (dist.mode=ddppo): see algo/ppo_groups.c. */
#ifndef FRL_ALGO_PPO_GROUPS_H
#define FRL_ALGO_PPO_GROUPS_H

#include "algo/ppo.h"

/* The groups' shape from l->B, l->T and the settings (before the buffers). */
frl_status frl_ppo_groups_init(frl_ppo *l, char *err);
frl_status frl_ppo_groups_alloc(frl_ppo *l, char *err);
void frl_ppo_groups_free(frl_ppo *l);
/* Shard task's rows [*first, + *rows) of the minibatch (never across a group). */
void frl_ppo_groups_span(const frl_ppo *l, int32_t task, int32_t *first, int32_t *rows);
/* The epoch's minibatches into l->perm: minibatch m is l->perm[m * M, + M), group by
 * group. */
void frl_ppo_groups_shuffle(frl_ppo *l, uint64_t seed, int64_t update, int32_t epoch);
/* Every epoch's and minibatch's advantage normalisation, from all ranks (one exchange
 * an update; the shuffles do not depend on the parameters). */
frl_status frl_ppo_groups_moments(frl_ppo *l, uint64_t seed, int64_t update, char *err);
/* The current minibatch's (mean, 1 / (std + 1e-8), 1 / n, n). */
const double *frl_ppo_groups_minibatch(const frl_ppo *l);
/* The shards' gradients summed per group, exchanged, and summed in global group order
 * into l->g; the loss sums likewise into stats[FRL_PPO_STAT_COUNT]. */
frl_status frl_ppo_groups_reduce(frl_ppo *l, double *stats, char *err);

#endif
