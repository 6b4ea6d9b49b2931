/* Snapshot and restore of a built-in vec env's whole state, for trainer checkpoints:
 * simulators, random streams, observations, flags and episode bookkeeping, so a
 * resumed run continues exactly where it stopped. */
#include <string.h>

#include "env/vec_env_state.h"

frl_status frl_vec_env_snapshot(const frl_vec_env *v, frl_section *s, int32_t *n, int64_t *totals,
                                char *err)
{
    if (v->kind != VEC_BUILTIN)
        return frl_fail(err, FRL_ERR_UNSUPPORTED,
                        "only built-in environments can be saved in a checkpoint");
    const frl_builtin_batch *b = &v->b;
    size_t N = (size_t)v->n;
    struct { const char *name; frl_dtype t; size_t count; const void *data; } a[] = {
        {"env.sims", FRL_DTYPE_U8, N * FRL_SIM_MAX_BYTES, b->sims},
        {"env.rngs", FRL_DTYPE_U64, 2 * N, b->rngs},
        {"env.obs", FRL_DTYPE_F32, N * (size_t)v->obs_w, b->obs},
        {"env.rewards", FRL_DTYPE_F32, N, b->rewards},
        {"env.terminated", FRL_DTYPE_U8, N, b->terminated},
        {"env.truncated", FRL_DTYPE_U8, N, b->truncated},
        {"env.reset_step", FRL_DTYPE_U8, N, b->reset_step},
        {"env.needs_reset", FRL_DTYPE_U8, N, b->needs_reset},
        {"env.elapsed", FRL_DTYPE_I32, N, b->elapsed},
        {"env.ep_return", FRL_DTYPE_F64, N, b->ep_return},
        {"env.done_return", FRL_DTYPE_F32, N, b->done_return},
        {"env.done_length", FRL_DTYPE_I32, N, b->done_length},
        {"env.totals", FRL_DTYPE_I64, 4, totals},
    };
    totals[0] = v->step_calls;
    totals[1] = v->total_steps;
    totals[2] = v->total_episodes;
    totals[3] = v->has_reset;
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
        frl_section_add(s, n, a[i].name, a[i].t, a[i].count, a[i].data);
    return FRL_OK;
}

static int restore_array(const frl_container *c, const char *name, frl_dtype t, size_t count,
                         size_t elem, void *dst, char *err)
{
    const frl_section *s = frl_container_find(c, name, t, (int64_t)count, err);
    if (!s)
        return -1;
    memcpy(dst, s->data, count * elem);
    return 0;
}

frl_status frl_vec_env_restore(frl_vec_env *v, const frl_container *c, char *err)
{
    frl_builtin_batch *b = &v->b;
    size_t N = (size_t)v->n;
    int64_t totals[4];
    int bad = 0;
    bad |= restore_array(c, "env.sims", FRL_DTYPE_U8, N * FRL_SIM_MAX_BYTES, 1, b->sims, err);
    bad |= restore_array(c, "env.rngs", FRL_DTYPE_U64, 2 * N, 8, b->rngs, err);
    bad |= restore_array(c, "env.obs", FRL_DTYPE_F32, N * (size_t)v->obs_w, 4, b->obs, err);
    bad |= restore_array(c, "env.rewards", FRL_DTYPE_F32, N, 4, b->rewards, err);
    bad |= restore_array(c, "env.terminated", FRL_DTYPE_U8, N, 1, b->terminated, err);
    bad |= restore_array(c, "env.truncated", FRL_DTYPE_U8, N, 1, b->truncated, err);
    bad |= restore_array(c, "env.reset_step", FRL_DTYPE_U8, N, 1, b->reset_step, err);
    bad |= restore_array(c, "env.needs_reset", FRL_DTYPE_U8, N, 1, b->needs_reset, err);
    bad |= restore_array(c, "env.elapsed", FRL_DTYPE_I32, N, 4, b->elapsed, err);
    bad |= restore_array(c, "env.ep_return", FRL_DTYPE_F64, N, 8, b->ep_return, err);
    bad |= restore_array(c, "env.done_return", FRL_DTYPE_F32, N, 4, b->done_return, err);
    bad |= restore_array(c, "env.done_length", FRL_DTYPE_I32, N, 4, b->done_length, err);
    bad |= restore_array(c, "env.totals", FRL_DTYPE_I64, 4, 8, totals, err);
    if (bad)
        return FRL_ERR_FORMAT;
    v->step_calls = totals[0];
    v->total_steps = totals[1];
    v->total_episodes = totals[2];
    v->has_reset = (int)totals[3];
    return FRL_OK;
}
