/* frl_env: one environment, a vec env of one, so it runs the very code that vec
 * envs run (the reference tests of the built-ins go through it). */
#include <string.h>

#include "env/pixel_grid.h"
#include "env/ray/env.h"
#include "env/registry.h"
#include "env/vec_env.h"
#include "env/vec_env_named.h"
#include "env/vec_step.h"

struct frl_env {
    frl_vec_env *v;
    int failed; /* the last step failed: it, not an episode's end, wants the reset */
    /* the last reset or step failed, and no reset or step has succeeded since: the
     * observation row may hold what the library refused (set_state keeps it) */
    int obs_failed;
    char err[FRL_ERRMSG_SIZE];
};

static frl_status wrap(frl_env **out, frl_runtime *rt, frl_vec_env *v, frl_status st)
{
    if (st != FRL_OK)
        return st;
    frl_env *e = frl_alloc(&rt->alloc, sizeof *e, 16);
    if (!e) {
        if (!v->release) { /* the host keeps ownership of its user pointer */
            v->cb.close = NULL;
            v->bcb.close = NULL;
        }
        frl_vec_env_destroy(v);
        return frl_fail(NULL, FRL_ERR_NOMEM, "frl_env_create: out of memory");
    }
    e->v = v;
    e->failed = 0;
    *out = e;
    return FRL_OK;
}

FRL_API frl_status frl_env_create(frl_env **out, frl_runtime *rt, const char *name,
                                  const frl_config *cfg)
{
    if (!out)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_env_create: out is NULL");
    *out = NULL;
    frl_vec_env *v = NULL;
    frl_status st = frl_vec_env_create_as(&v, rt, name, 1, cfg, "frl_env_create");
    return wrap(out, rt, v, st);
}

FRL_API frl_status frl_env_create_callbacks(frl_env **out, frl_runtime *rt,
                                            const frl_env_callbacks *cb, void *user,
                                            const frl_space *observation_space,
                                            const frl_space *action_space,
                                            const frl_config *cfg)
{
    if (!out)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_env_create_callbacks: out is NULL");
    *out = NULL;
    frl_vec_env *v = NULL;
    frl_status st = frl_vec_env_create_callbacks_as(&v, rt, cb, &user, 1, observation_space,
                                                    action_space, cfg,
                                                    "frl_env_create_callbacks");
    return wrap(out, rt, v, st);
}

FRL_API void frl_env_destroy(frl_env *e)
{
    if (!e)
        return;
    frl_allocator a = e->v->rt->alloc;
    frl_vec_env_destroy(e->v);
    frl_free(&a, e);
}

FRL_API const char *frl_env_name_at(int32_t index)
{
    const frl_env_class *c = frl_env_class_at(index);
    if (c || index < 0)
        return c ? c->name : NULL;
    index -= frl_env_class_count();
    const char *pixel = frl_pixel_env_name_at(index);
    int32_t pixels = 0;
    while (frl_pixel_env_name_at(pixels))
        pixels++;
    return pixel ? pixel : frl_ray_env_name_at(index - pixels);
}

FRL_API const frl_space *frl_env_observation_space(const frl_env *e)
{
    return e ? e->v->obs_space : NULL;
}

FRL_API const frl_space *frl_env_action_space(const frl_env *e)
{
    return e ? e->v->act_space : NULL;
}

static void copy_obs(const frl_env *e, float *obs)
{
    memcpy(obs, e->v->b.obs, sizeof(float) * (size_t)e->v->obs_w);
}

FRL_API frl_status frl_env_reset(frl_env *e, uint64_t seed, float *obs)
{
    if (!e || !obs)
        return frl_fail(e ? e->err : NULL, FRL_ERR_NULL, "frl_env_reset: %s is NULL",
                        e ? "obs" : "env");
    /* checked here so that a nested call's message names this function, not the vec
     * env's inside it */
    frl_status st = frl_vec_env_check_idle(e->v, "frl_env_reset");
    if (st == FRL_OK)
        st = frl_vec_env_reset(e->v, seed);
    e->obs_failed = st != FRL_OK;
    if (st != FRL_OK)
        return frl_fail_msg(e->err, st, frl_last_error());
    e->failed = 0;
    copy_obs(e, obs);
    return FRL_OK;
}

static frl_status check_step_args(frl_env *e, const void *action, const float *obs,
                                  const float *reward, const uint8_t *term,
                                  const uint8_t *trunc)
{
    if (!e)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_env_step: env is NULL");
    const char *missing = !action ? "action" : !obs ? "obs" : !reward ? "reward"
                        : !term ? "terminated" : !trunc ? "truncated" : NULL;
    if (missing)
        return frl_fail(e->err, FRL_ERR_NULL, "frl_env_step: %s is NULL", missing);
    /* from the env's own reset callback the env reads as never reset, or as ended:
     * the nesting is what is wrong */
    frl_status st = frl_vec_env_check_idle(e->v, "frl_env_step");
    if (st != FRL_OK)
        return frl_fail_msg(e->err, st, frl_last_error());
    if (!e->v->has_reset)
        return frl_fail(e->err, FRL_ERR_STATE, "frl_env_step: call frl_env_reset first");
    if (e->v->b.needs_reset[0])
        return frl_fail(e->err, FRL_ERR_STATE, "frl_env_step: %s; call frl_env_reset",
                        e->failed ? "the last step failed" : "the episode has ended");
    return FRL_OK;
}

FRL_API frl_status frl_env_step(frl_env *e, const void *action, float *obs, float *reward,
                                uint8_t *terminated, uint8_t *truncated)
{
    frl_status st = check_step_args(e, action, obs, reward, terminated, truncated);
    if (st != FRL_OK)
        return st;
    frl_vec_env *v = e->v;
    st = frl_vec_env_step_with(v, action, "frl_env_step");
    e->failed = st != FRL_OK && v->b.needs_reset[0]; /* not a refused action's */
    e->obs_failed = e->failed;
    if (st != FRL_OK)
        return frl_fail_msg(e->err, st, frl_last_error());
    copy_obs(e, obs);
    *reward = v->b.rewards[0];
    *terminated = v->b.terminated[0];
    *truncated = v->b.truncated[0];
    return FRL_OK;
}

FRL_API int32_t frl_env_state_size(const frl_env *e)
{
    return (e && e->v->state_dim > 0) ? e->v->state_dim + 1 : 0;
}

FRL_API frl_status frl_env_get_state(frl_env *e, double *state, int32_t size)
{
    if (!e || !state)
        return frl_fail(e ? e->err : NULL, FRL_ERR_NULL, "frl_env_get_state: %s is NULL",
                        e ? "state" : "env");
    frl_status st = frl_vec_env_check_idle(e->v, "frl_env_get_state");
    if (st != FRL_OK)
        return frl_fail_msg(e->err, st, frl_last_error());
    return frl_vec_env_get_state_at(e->v, 0, state, size, e->err);
}

/* 1 when a host env's observation row holds what its last reset or step returned and
 * the library refused (NaN, infinity, or no index of a discrete space). A host
 * set_state writes no observation, so obs would get that row from a call that
 * succeeded; nor does it clear the refusal (a second set_state gave the row). Images are
 * bytes, refused by nothing a row could hold; a mixed row's vector part is checked as a
 * box's. */
static int refused_host_row(const frl_env *e)
{
    const frl_vec_env *v = e->v;
    if (v->kind == VEC_BUILTIN || v->observe || !e->obs_failed)
        return 0;
    frl_space_kind kind = frl_space_get_kind(v->obs_space);
    if (kind == FRL_SPACE_DISCRETE)
        return frl_find_bad_index(v->b.obs, 1, v->obs_n) >= 0;
    if (kind == FRL_SPACE_MIXED)
        return frl_find_nonfinite(v->b.obs + frl_space_vector_at(v->obs_space),
                                  frl_space_vector_floats(v->obs_space)) >= 0;
    return kind == FRL_SPACE_BOX && frl_find_nonfinite(v->b.obs, v->obs_w) >= 0;
}

FRL_API frl_status frl_env_set_state(frl_env *e, const double *state, int32_t size, float *obs)
{
    if (!e || !state)
        return frl_fail(e ? e->err : NULL, FRL_ERR_NULL, "frl_env_set_state: %s is NULL",
                        e ? "state" : "env");
    frl_status st = frl_vec_env_check_idle(e->v, "frl_env_set_state");
    if (st != FRL_OK)
        return frl_fail_msg(e->err, st, frl_last_error());
    if (obs && refused_host_row(e))
        return frl_fail(e->err, FRL_ERR_STATE, "frl_env_set_state: the env's last reset or "
                        "step returned an observation that was refused, and a host set_state "
                        "writes none, so there is no observation to give: pass obs = NULL "
                        "(the next step observes), or reset");
    st = frl_vec_env_set_state_at(e->v, 0, state, size, e->err);
    if (st == FRL_OK && obs)
        copy_obs(e, obs);
    return st;
}

FRL_API const char *frl_env_last_error(const frl_env *e)
{
    return e ? e->err : "frl_env_last_error: env is NULL";
}
