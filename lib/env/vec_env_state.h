/* A built-in vec env's state as checkpoint sections. */
#ifndef FRL_ENV_VEC_ENV_STATE_H
#define FRL_ENV_VEC_ENV_STATE_H

#include "env/vec_env.h"
#include "io/container.h"

enum { FRL_VEC_ENV_SECTIONS = 13 };

/* Append FRL_VEC_ENV_SECTIONS sections pointing into v (and totals[4]) to s. */
frl_status frl_vec_env_snapshot(const frl_vec_env *v, frl_section *s, int32_t *n, int64_t *totals,
                                char *err);
/* Restore into a vec env created with the same name and size. FRL_ERR_FORMAT if a
 * section is missing or has another size. */
frl_status frl_vec_env_restore(frl_vec_env *v, const frl_container *c, char *err);

#endif
