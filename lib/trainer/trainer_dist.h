/* The trainer's side of dist.mode=ddppo (trainer_dist.c). */
#ifndef FRL_TRAINER_TRAINER_DIST_H
#define FRL_TRAINER_TRAINER_DIST_H

#include "trainer/trainer_state.h"

/* Open the ranks' communicator under dist.mode=ddppo (after the policy, before the
 * learner); nothing under dist.mode=none. Fails with the reason when the run cannot be
 * distributed (its algorithm, sampler or settings, or no MPI plugin). */
frl_status frl_trainer_dist_open(frl_trainer *t, const char *who);
void frl_trainer_dist_close(frl_trainer *t);
/* After the book's creation: with train.reward_norm, the return normaliser deferred to
 * the rollout's end (its statistics are every rank's). */
frl_status frl_trainer_dist_book(frl_trainer *t, const char *who);
/* Before an update: the rollout's rewards scaled by the return normaliser of every
 * rank's groups (train.reward_norm). */
frl_status frl_trainer_dist_before_learn(frl_trainer *t, int32_t slot);
/* The sampler's view of the ranks: this rank's first env, the rank count, and the
 * preemption callbacks under dist.preempt. */
void frl_trainer_dist_host(frl_trainer *t, frl_sampler_host *h);
/* This rank's first env among all ranks' envs, and the rank count (0 and 1 alone). */
int64_t frl_trainer_env_first(const frl_trainer *t);
int32_t frl_trainer_ranks(const frl_trainer *t);
/* After an update: the observation normaliser from every rank's groups, and the
 * episodes of every rank (t->dist_*). */
frl_status frl_trainer_dist_after_learn(frl_trainer *t, int32_t slot);
/* At a trainer's creation under dist.mode (not a load, whose seed is the checkpoint's):
 * every rank's seed (the runtime's runtime.seed plus train.seed_offset, which the
 * settings check does not see) against rank 0's, refused on every rank when they differ;
 * the message in the thread's last error. */
frl_status frl_trainer_dist_check_seed(frl_trainer *t, const char *who);
/* At a train call under dist.mode: every rank's total_steps against rank 0's (an
 * all-gather), refused on every rank when they differ. */
frl_status frl_trainer_dist_check_budget(frl_trainer *t, int64_t total_steps);
/* The traffic of a train call's updates (an INFO line, rank 0: each rank's bytes sent
 * and received per update, and the exchanges). */
void frl_trainer_dist_report(frl_trainer *t, int64_t updates);
/* After a checkpoint's restore under dist.mode: every rank's parameters, optimiser,
 * normaliser and counters against rank 0's (an all-gather of their CRC32Cs), so ranks
 * resumed from different files fail on every rank, naming the ranks that differ. */
frl_status frl_trainer_dist_check_resume(frl_trainer *t, char *err);
/* Whether this process writes outputs and checkpoints (rank 0, or no dist.mode). */
int frl_trainer_dist_writes(const frl_trainer *t);

#endif
