/* A vec env's state as checkpoint sections: built-ins and per-env host callbacks with
 * simulator state. */
#ifndef FRL_ENV_VEC_ENV_STATE_H
#define FRL_ENV_VEC_ENV_STATE_H

#include "env/vec_env.h"
#include "io/container.h"

/* At most this many sections are appended by frl_vec_env_snapshot. */
enum { FRL_VEC_ENV_SECTIONS = 14 };

/* What the sections point to besides the vec env's own arrays: its totals and, for
 * host envs, the states their get_state callbacks wrote. Free with
 * frl_vec_env_snap_free after the sections are written. */
typedef struct frl_vec_env_snap {
    int64_t totals[4];
    int64_t state_size;
    double *states;                 /* host envs: [n * state_size]; NULL for built-ins */
    const frl_allocator *alloc;
} frl_vec_env_snap;

/* FRL_OK when v's state can be saved: a built-in, or per-env callbacks with state.
 * Otherwise FRL_ERR_UNSUPPORTED with what is missing and what to do instead, in err. */
frl_status frl_vec_env_check_savable(const frl_vec_env *v, char *err);

/* Append up to FRL_VEC_ENV_SECTIONS sections describing v to s. Host envs' states are
 * read through get_state (FRL_ERR_CALLBACK naming the env if one fails; nothing is
 * appended then), into memory from v's runtime allocator (FRL_ERR_NOMEM). */
frl_status frl_vec_env_snapshot(const frl_vec_env *v, frl_vec_env_snap *snap, frl_section *s,
                                int32_t *n, char *err);
/* The same for env group `group` of an async trainer: group 0's sections are named
 * "env.*" (frl_vec_env_snapshot's), group g's "env.g<g>.*". */
frl_status frl_vec_env_snapshot_group(const frl_vec_env *v, int32_t group,
                                      frl_vec_env_snap *snap, frl_section *s, int32_t *n,
                                      char *err);
void frl_vec_env_snap_free(frl_vec_env_snap *snap);

/* The state_size a checkpoint's host envs were saved with, or 0 for a built-in's. */
int64_t frl_vec_env_saved_state_size(const frl_container *c);

/* Restore into a vec env of the same kind and size (a built-in of the same name, or
 * per-env callbacks of the same state_size: the caller checks). Every section is
 * checked before anything changes (FRL_ERR_FORMAT if one is missing or has another
 * size, or, when steps_on says the run goes on from the saved observations rather than
 * resetting its envs, if an observation row holds one its space cannot: NaN or
 * infinity in a box or a mixed observation's vector part, a discrete value that is no
 * index). Host envs then get their states through set_state; if one fails
 * (FRL_ERR_CALLBACK), v must be reset before it is stepped again. frl_vec_env_restore
 * is group 0 with steps_on. */
frl_status frl_vec_env_restore(frl_vec_env *v, const frl_container *c, char *err);
frl_status frl_vec_env_restore_group(frl_vec_env *v, int32_t group, const frl_container *c,
                                     int steps_on, char *err);

#endif
