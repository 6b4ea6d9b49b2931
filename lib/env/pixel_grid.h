/* Built-in environments observed through pixels (image observation spaces). They are
 * host envs the library makes itself (per-env callbacks over one block of sims), like
 * the MuJoCo tasks, so the image path they exercise is the one a host's env takes. */
#ifndef FRL_ENV_PIXEL_GRID_H
#define FRL_ENV_PIXEL_GRID_H

#include "core/runtime.h"

struct frl_config;

/* The pixel envs' ids by index (NULL past the last), and whether name is one. */
const char *frl_pixel_env_name_at(int32_t index);
int frl_pixel_env_is(const char *name);

/* num_envs envs of the pixel env name (frl_pixel_env_is). */
frl_status frl_pixel_vec_env_create(frl_vec_env **out, frl_runtime *rt, const char *name,
                                    int32_t num_envs, const struct frl_config *cfg,
                                    const char *who);

#endif
