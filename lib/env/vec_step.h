/* Stepping a vec env (vec_step.c): the internal calls beside the public reset and step.
 * Unlike those, the calls here run a vec env a trainer holds (frl_vec_env_hold): the
 * trainer's samplers and population evaluations use them. */
#ifndef FRL_ENV_VEC_STEP_H
#define FRL_ENV_VEC_STEP_H

#include "env/vec_env.h"

/* frl_vec_env_step for the envs whose active flag is nonzero: the others are not
 * stepped (state kept, reward 0, no flags), their actions neither used nor validated,
 * and not counted in the totals. A host's batch world steps all its agents. active
 * NULL: every env. */
frl_status frl_vec_env_step_active(frl_vec_env *v, const uint8_t *active);

/* frl_vec_env_step of every env, for a vec env a trainer holds. */
frl_status frl_vec_env_step_held(frl_vec_env *v);

/* frl_vec_env_step with the n envs' actions (action_bytes each) first copied in from
 * actions, once v is claimed: a call refused because a step runs on v (from one of its
 * callbacks: frl_env_step) leaves the running step's actions as they are. who names the
 * caller in that refusal. */
frl_status frl_vec_env_step_with(frl_vec_env *v, const void *actions, const char *who);

/* frl_vec_env_reset with env i's stream that of env first + i (a rank's envs among all
 * ranks', dist.mode): the public reset is first 0. */
frl_status frl_vec_env_reset_from(frl_vec_env *v, uint64_t seed, int64_t first);

#endif
