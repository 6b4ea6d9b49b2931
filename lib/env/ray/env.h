/* The raycasting envs as vec envs: per-env callbacks over one block of sims that the
 * vec env frees (its release hook), like PixelGrid-v0 and the MuJoCo tasks, stepped in
 * chunks on the pool's threads. Settings: env.width, env.height, env.grayscale,
 * env.frame_skip (frames per step, the last two max-pooled) and env.maze_size. */
#ifndef FRL_ENV_RAY_ENV_H
#define FRL_ENV_RAY_ENV_H

#include "core/runtime.h"

struct frl_config;

/* The ray envs' ids by index (NULL past the last), and whether name is one. */
const char *frl_ray_env_name_at(int32_t index);
int frl_ray_env_is(const char *name);

frl_status frl_ray_vec_env_create(frl_vec_env **out, frl_runtime *rt, const char *name,
                                  int32_t num_envs, const struct frl_config *cfg,
                                  const char *who);

/* The scripted oracle's action for every env of v (a ray vec env, else
 * FRL_ERR_INVALID_ARGUMENT): what bench/ and the tests measure the tasks' best returns
 * with. */
frl_status frl_ray_oracle_actions(const frl_vec_env *v, int32_t *actions);

#endif
