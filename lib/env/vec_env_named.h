/* Vec envs made by name: a built-in environment or a MuJoCo task. */
#ifndef FRL_ENV_VEC_ENV_NAMED_H
#define FRL_ENV_VEC_ENV_NAMED_H

#include "env/vec_env.h"

/* frl_vec_env_create, with `who` naming the public function in error messages. */
frl_status frl_vec_env_create_as(frl_vec_env **out, frl_runtime *rt, const char *name,
                                 int32_t num_envs, const frl_config *cfg, const char *who);

#endif
