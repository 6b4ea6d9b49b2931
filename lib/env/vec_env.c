/* frl_vec_env: creation, memory layout, accessors and simulator state.
 * Stepping is in vec_step.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/config.h"
#include "core/table.h"
#include "env/registry.h"
#include "env/vec_env.h"


/* ---- memory: every per-env array lives in one cache-line aligned arena ---- */

typedef struct arena_plan {
    size_t sims, rngs, actions, obs, rewards, term, trunc, reset_step, needs_reset, elapsed,
        ep_return, done_return, done_length, seeds, users, chunk_episodes, chunk_status,
        chunk_err, total;
} arena_plan;

static size_t take(size_t *cursor, size_t bytes)
{
    size_t at = *cursor;
    *cursor = frl_align_up(at + bytes, FRL_CACHE_LINE);
    return at;
}

static arena_plan plan_arena(const frl_vec_env *v)
{
    size_t n = (size_t)v->n, c = 0, chunks = (size_t)v->num_chunks;
    arena_plan p;
    p.sims = take(&c, v->kind == VEC_BUILTIN ? n * FRL_SIM_MAX_BYTES : 0);
    p.rngs = take(&c, n * sizeof(frl_rng));
    p.actions = take(&c, n * v->action_bytes);
    p.obs = take(&c, n * (size_t)v->obs_w * sizeof(float));
    p.rewards = take(&c, n * sizeof(float));
    p.term = take(&c, n);
    p.trunc = take(&c, n);
    p.reset_step = take(&c, n);
    p.needs_reset = take(&c, n);
    p.elapsed = take(&c, n * sizeof(int32_t));
    p.ep_return = take(&c, n * sizeof(double));
    p.done_return = take(&c, n * sizeof(float));
    p.done_length = take(&c, n * sizeof(int32_t));
    p.seeds = take(&c, v->kind == VEC_BATCH ? n * sizeof(uint64_t) : 0);
    p.users = take(&c, v->kind == VEC_CALLBACKS ? n * sizeof(void *) : 0);
    p.chunk_episodes = take(&c, chunks * sizeof(int64_t));
    p.chunk_status = take(&c, chunks * sizeof(int32_t));
    p.chunk_err = take(&c, chunks * FRL_ERRMSG_SIZE);
    p.total = c;
    return p;
}

static void bind_arena(frl_vec_env *v, unsigned char *m, const arena_plan *p)
{
    frl_builtin_batch *b = &v->b;
    b->sims = m + p->sims;
    b->rngs = (frl_rng *)(void *)(m + p->rngs);
    b->actions = m + p->actions;
    b->obs = (float *)(void *)(m + p->obs);
    b->rewards = (float *)(void *)(m + p->rewards);
    b->terminated = m + p->term;
    b->truncated = m + p->trunc;
    b->reset_step = m + p->reset_step;
    b->needs_reset = m + p->needs_reset;
    b->elapsed = (int32_t *)(void *)(m + p->elapsed);
    b->ep_return = (double *)(void *)(m + p->ep_return);
    b->done_return = (float *)(void *)(m + p->done_return);
    b->done_length = (int32_t *)(void *)(m + p->done_length);
    v->seeds = (uint64_t *)(void *)(m + p->seeds);
    v->users = (void **)(void *)(m + p->users);
    v->chunk_episodes = (int64_t *)(void *)(m + p->chunk_episodes);
    v->chunk_status = (int32_t *)(void *)(m + p->chunk_status);
    v->chunk_err = (char(*)[FRL_ERRMSG_SIZE])(void *)(m + p->chunk_err);
}

/* Envs per pool task: built-ins take about 20 ns a step, so chunks of a few hundred
 * keep the per-task overhead (one atomic add) under 1%; chunk sizes are multiples of
 * 64 so no two threads write the same cache line of a byte array. Host callbacks may
 * be slow and uneven, so they get small chunks for load balance. */
static void choose_chunks(frl_vec_env *v)
{
    int32_t threads = v->rt->threads;
    int32_t per = (v->n + threads * 4 - 1) / (threads * 4);
    if (v->kind == VEC_BUILTIN) {
        per = per < 64 ? 64 : (per > 1024 ? 1024 : per);
        per = (per + 63) & ~63;
    } else if (per < 1) {
        per = 1;
    }
    v->chunk = per;
    v->num_chunks = (v->n + per - 1) / per;
}

/* ---- creation ---- */

frl_status frl_vec_env_check_args(frl_vec_env **out, frl_runtime *rt, int32_t num_envs,
                                  const char *who)
{
    if (!out)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: out is NULL", who);
    *out = NULL;
    if (!rt)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: runtime is NULL", who);
    if (num_envs < 1 || num_envs > FRL_MAX_ENVS)
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: num_envs %d is outside [1, %d]", who,
                        (int)num_envs, FRL_MAX_ENVS);
    return FRL_OK;
}

static frl_status new_vec(frl_runtime *rt, vec_kind kind, int32_t n, frl_vec_env **out)
{
    frl_vec_env *v = frl_alloc(&rt->alloc, sizeof *v, FRL_CACHE_LINE);
    if (!v)
        return frl_fail(NULL, FRL_ERR_NOMEM, "vec env: out of memory");
    v->rt = rt;
    v->kind = kind;
    v->n = n;
    *out = v;
    return FRL_OK;
}

/* Sizes from the spaces, then the arena. */
static frl_status finish_layout(frl_vec_env *v, const frl_config *cfg, int32_t class_limit)
{
    v->obs_w = (int32_t)frl_space_row_floats(v->obs_space);
    v->obs_n = v->obs_space->kind == FRL_SPACE_DISCRETE ? (int32_t)v->obs_space->n : 0;
    v->act_w = (int32_t)frl_space_width(v->act_space);
    v->action_n = v->act_space->kind == FRL_SPACE_DISCRETE ? (int32_t)v->act_space->n : 0;
    v->action_bytes = (size_t)v->act_w * (v->action_n ? sizeof(int32_t) : sizeof(float));
    choose_chunks(v);
    arena_plan p = plan_arena(v);
    v->arena = frl_alloc(&v->rt->alloc, p.total, FRL_CACHE_LINE);
    if (!v->arena)
        return frl_fail(NULL, FRL_ERR_NOMEM, "vec env: out of memory for %d envs (%zu bytes)",
                        (int)v->n, p.total);
    bind_arena(v, v->arena, &p);
    int64_t limit = frl_cfg_int(cfg, FRL_KEY_ENV_MAX_EPISODE_STEPS);
    v->b.max_episode_steps = limit < 0 ? class_limit : (int32_t)limit;
    v->b.obs_dim = v->obs_w;
    return FRL_OK;
}

/* The class's shape, or the one its settings give it. */
static frl_env_shape class_shape(const frl_env_class *c, const frl_config *cfg)
{
    frl_env_shape shape = {c->obs_dim, c->action_n};
    if (c->configure)
        c->configure(cfg, NULL, 0, &shape);
    return shape;
}

static frl_status class_spaces(frl_vec_env *v, const frl_env_class *c, const frl_config *cfg)
{
    frl_env_shape shape = class_shape(c, cfg);
    int64_t obs_shape = shape.obs_dim, act_shape = c->action_dim;
    frl_status st = frl_space_create_box(&v->obs_space, &v->rt->alloc, 1, &obs_shape,
                                         c->obs_low, c->obs_high);
    if (st != FRL_OK)
        return st;
    if (shape.action_n > 0)
        return frl_space_create_discrete(&v->act_space, &v->rt->alloc, shape.action_n);
    return frl_space_create_box(&v->act_space, &v->rt->alloc, 1, &act_shape, c->action_low,
                                c->action_high);
}

frl_status frl_vec_env_create_builtin(frl_vec_env **out, frl_runtime *rt,
                                     const frl_env_class *c, int32_t num_envs,
                                     const frl_config *cfg, const char *who)
{
    frl_status st = frl_vec_env_check_args(out, rt, num_envs, who);
    if (st != FRL_OK)
        return st;
    frl_vec_env *v = NULL;
    st = new_vec(rt, VEC_BUILTIN, num_envs, &v);
    if (st != FRL_OK)
        return st;
    v->cls = c;
    v->state_dim = c->state_dim;
    st = class_spaces(v, c, cfg);
    if (st == FRL_OK)
        st = finish_layout(v, cfg, c->max_episode_steps);
    if (st == FRL_OK && c->configure) {
        frl_env_shape shape;
        c->configure(cfg, v->b.sims, v->n, &shape);
    }
    if (st != FRL_OK) {
        frl_vec_env_destroy(v);
        return st;
    }
    *out = v;
    return FRL_OK;
}

frl_status frl_check_observation_space(const frl_space *s, const char *who, char *err)
{
    if (s->kind == FRL_SPACE_DISCRETE && s->n > FRL_DISCRETE_OBS_MAX)
        return frl_fail(err, FRL_ERR_RANGE,
                        "%s: a discrete observation space needs n <= 2^24 = %d, not %lld "
                        "(an observation is its index as one float32, exact up to 2^24)",
                        who, FRL_DISCRETE_OBS_MAX, (long long)s->n);
    return FRL_OK;
}

frl_status frl_check_action_space(const frl_space *s, const char *who, char *err)
{
    if (frl_space_is_image(s))
        return frl_fail(err, FRL_ERR_UNSUPPORTED,
                        "%s: the action space holds an image; images can only be "
                        "observations (actions are discrete or a box)", who);
    return FRL_OK;
}

static frl_status copy_spaces(frl_vec_env *v, const frl_space *obs, const frl_space *act,
                              const char *who)
{
    if (!obs || !act)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: %s space is NULL", who,
                        obs ? "action" : "observation");
    frl_status st = frl_check_observation_space(obs, who, NULL);
    if (st == FRL_OK)
        st = frl_check_action_space(act, who, NULL);
    if (st != FRL_OK)
        return st;
    v->obs_space = frl_space_clone(&v->rt->alloc, obs);
    v->act_space = v->obs_space ? frl_space_clone(&v->rt->alloc, act) : NULL;
    return v->act_space ? FRL_OK : FRL_ERR_NOMEM;
}

static frl_status copy_callbacks(frl_env_callbacks *dst, const frl_env_callbacks *src,
                                 const char *who)
{
    frl_env_callbacks_init(dst);
    frl_status st = frl_copy_table(dst, sizeof *dst, src, offsetof(frl_env_callbacks, close),
                                   who, "callbacks", "frl_env_callbacks_init");
    if (st != FRL_OK)
        return st;
    if (!dst->reset || !dst->step)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: callbacks.%s is NULL", who,
                        dst->reset ? "step" : "reset");
    /* The elapsed count follows the state: state_size + 1 values, an int32 size. */
    if (dst->state_size < 0 || dst->state_size == INT32_MAX)
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT,
                        "%s: state_size %d is outside [0, 2^31 - 2] (the state and its elapsed "
                        "count are state_size + 1 values)", who, (int)dst->state_size);
    if (dst->state_size > 0 && (!dst->get_state || !dst->set_state))
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT,
                        "%s: state_size %d needs both get_state and set_state", who,
                        (int)dst->state_size);
    return FRL_OK;
}

FRL_API frl_status frl_vec_env_create_callbacks(frl_vec_env **out, frl_runtime *rt,
                                                const frl_env_callbacks *cb,
                                                void *const *users, int32_t num_envs,
                                                const frl_space *observation_space,
                                                const frl_space *action_space,
                                                const frl_config *cfg)
{
    return frl_vec_env_create_callbacks_as(out, rt, cb, users, num_envs, observation_space,
                                           action_space, cfg, "frl_vec_env_create_callbacks");
}

frl_status frl_vec_env_create_callbacks_as(frl_vec_env **out, frl_runtime *rt,
                                           const frl_env_callbacks *cb, void *const *users,
                                           int32_t num_envs, const frl_space *observation_space,
                                           const frl_space *action_space, const frl_config *cfg,
                                           const char *who)
{
    return frl_vec_env_create_hosted(out, rt, cb, users, num_envs, observation_space,
                                     action_space, cfg, 0, who);
}

frl_status frl_vec_env_create_hosted(frl_vec_env **out, frl_runtime *rt,
                                     const frl_env_callbacks *cb, void *const *users,
                                     int32_t num_envs, const frl_space *observation_space,
                                     const frl_space *action_space, const frl_config *cfg,
                                     int32_t default_limit, const char *who)
{
    frl_env_callbacks table;
    frl_status st = frl_vec_env_check_args(out, rt, num_envs, who);
    if (st == FRL_OK)
        st = copy_callbacks(&table, cb, who);
    if (st == FRL_OK && !users)
        st = frl_fail(NULL, FRL_ERR_NULL, "%s: users array is NULL", who);
    frl_vec_env *v = NULL;
    if (st == FRL_OK)
        st = new_vec(rt, VEC_CALLBACKS, num_envs, &v);
    if (st != FRL_OK)
        return st;
    v->cb = table;
    v->state_dim = table.state_size;
    st = copy_spaces(v, observation_space, action_space, who);
    if (st == FRL_OK && table.frame && !frl_space_is_image(v->obs_space))
        st = frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT,
                      "%s: callbacks.frame is set, but the observation space holds no image "
                      "(frames are for frl_space_create_image and _mixed spaces)", who);
    if (st == FRL_OK)
        st = finish_layout(v, cfg, default_limit);
    if (st != FRL_OK) {
        v->cb.close = NULL; /* the caller keeps ownership of users on failure */
        frl_vec_env_destroy(v);
        return st;
    }
    memcpy(v->users, users, sizeof(void *) * (size_t)num_envs);
    *out = v;
    return FRL_OK;
}

static frl_status copy_batch_callbacks(frl_batch_env_callbacks *dst,
                                       const frl_batch_env_callbacks *src, const char *who)
{
    frl_batch_env_callbacks_init(dst);
    frl_status st = frl_copy_table(dst, sizeof *dst, src,
                                   offsetof(frl_batch_env_callbacks, close), who, "callbacks",
                                   "frl_batch_env_callbacks_init");
    if (st != FRL_OK)
        return st;
    if (!dst->reset || !dst->step)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: callbacks.%s is NULL", who,
                        dst->reset ? "step" : "reset");
    return FRL_OK;
}

FRL_API frl_status frl_vec_env_create_batch(frl_vec_env **out, frl_runtime *rt,
                                            const frl_batch_env_callbacks *cb, void *user,
                                            int32_t num_envs,
                                            const frl_space *observation_space,
                                            const frl_space *action_space,
                                            const frl_config *cfg)
{
    const char *who = "frl_vec_env_create_batch";
    frl_batch_env_callbacks table;
    frl_status st = frl_vec_env_check_args(out, rt, num_envs, who);
    if (st == FRL_OK)
        st = copy_batch_callbacks(&table, cb, who);
    frl_vec_env *v = NULL;
    if (st == FRL_OK)
        st = new_vec(rt, VEC_BATCH, num_envs, &v);
    if (st != FRL_OK)
        return st;
    v->bcb = table;
    v->batch_user = user;
    st = copy_spaces(v, observation_space, action_space, who);
    if (st == FRL_OK)
        st = finish_layout(v, cfg, 0);
    if (st != FRL_OK) {
        v->bcb.close = NULL;
        frl_vec_env_destroy(v);
        return st;
    }
    *out = v;
    return FRL_OK;
}

static void close_hosts(frl_vec_env *v)
{
    if (v->kind == VEC_CALLBACKS && v->cb.close && v->users)
        for (int32_t i = 0; i < v->n; i++)
            v->cb.close(v->users[i]);
    if (v->kind == VEC_BATCH && v->bcb.close)
        v->bcb.close(v->batch_user);
}

FRL_API void frl_vec_env_destroy(frl_vec_env *v)
{
    if (!v)
        return;
    if (v->arena)
        close_hosts(v);
    if (v->release)
        v->release(v->owner);
    frl_space_destroy(v->obs_space);
    frl_space_destroy(v->act_space);
    frl_config_destroy(v->env_cfg);
    frl_allocator a = v->rt->alloc;
    frl_free(&a, v->arena);
    frl_free(&a, v);
}

/* ---- accessors ---- */

FRL_API int32_t frl_vec_env_num_envs(const frl_vec_env *v) { return v ? v->n : 0; }
FRL_API const frl_space *frl_vec_env_observation_space(const frl_vec_env *v)
{
    return v ? v->obs_space : NULL;
}
FRL_API const frl_space *frl_vec_env_action_space(const frl_vec_env *v)
{
    return v ? v->act_space : NULL;
}
FRL_API const char *frl_vec_env_name(const frl_vec_env *v)
{
    return v ? frl_vec_env_builtin_name(v) : NULL;
}
FRL_API void *frl_vec_env_actions(frl_vec_env *v) { return v ? (void *)v->b.actions : NULL; }
FRL_API const float *frl_vec_env_observations(const frl_vec_env *v) { return v ? v->b.obs : NULL; }
FRL_API const uint8_t *frl_vec_env_frames(const frl_vec_env *v)
{
    return v && frl_space_is_image(v->obs_space) ? (const uint8_t *)v->b.obs : NULL;
}
FRL_API const float *frl_vec_env_rewards(const frl_vec_env *v) { return v ? v->b.rewards : NULL; }
FRL_API const uint8_t *frl_vec_env_terminated(const frl_vec_env *v)
{
    return v ? v->b.terminated : NULL;
}
FRL_API const uint8_t *frl_vec_env_truncated(const frl_vec_env *v)
{
    return v ? v->b.truncated : NULL;
}
FRL_API const uint8_t *frl_vec_env_reset_steps(const frl_vec_env *v)
{
    return v ? v->b.reset_step : NULL;
}
FRL_API const float *frl_vec_env_episode_returns(const frl_vec_env *v)
{
    return v ? v->b.done_return : NULL;
}
FRL_API const int32_t *frl_vec_env_episode_lengths(const frl_vec_env *v)
{
    return v ? v->b.done_length : NULL;
}
FRL_API int64_t frl_vec_env_total_steps(const frl_vec_env *v) { return v ? v->total_steps : 0; }
FRL_API int64_t frl_vec_env_total_episodes(const frl_vec_env *v)
{
    return v ? v->total_episodes : 0;
}
FRL_API const char *frl_vec_env_last_error(const frl_vec_env *v)
{
    return v ? v->err : "frl_vec_env_last_error: venv is NULL";
}

/* ---- simulator state ---- */

static frl_status check_state_size(const frl_vec_env *v, int32_t size, char *err)
{
    if (v->state_dim == 0)
        return frl_fail(err, FRL_ERR_UNSUPPORTED, "this environment has no simulator state");
    if (size != v->state_dim + 1)
        return frl_fail(err, FRL_ERR_SIZE, "state has %d values, this environment needs %d",
                        (int)size, (int)v->state_dim + 1);
    return FRL_OK;
}

frl_status frl_vec_env_check_host_state(const double *state, int32_t size, int32_t i,
                                        char *err)
{
    for (int32_t k = 0; k < size; k++)
        if (!isfinite(state[k]))
            return frl_fail(err, FRL_ERR_NONFINITE, "env %d: get_state callback wrote %s in "
                            "state[%d]", (int)i, isnan(state[k]) ? "NaN" : "infinity", (int)k);
    return FRL_OK;
}

static frl_status get_state_locked(frl_vec_env *v, int32_t i, double *state, int32_t size,
                                   char *err)
{
    frl_status st = check_state_size(v, size, err);
    if (st != FRL_OK)
        return st;
    if (v->kind == VEC_BUILTIN) {
        v->cls->get_state(v->b.sims + (size_t)i * FRL_SIM_MAX_BYTES, state);
    } else {
        int rc = v->cb.get_state(v->users[i], state);
        if (rc != 0)
            return frl_fail(err, FRL_ERR_CALLBACK, "env %d: get_state callback returned %d",
                            (int)i, rc);
        if ((st = frl_vec_env_check_host_state(state, v->state_dim, i, err)) != FRL_OK)
            return st;
    }
    state[v->state_dim] = (double)v->b.elapsed[i];
    return FRL_OK;
}

/* Refused while a reset or step runs (from one of the env's own callbacks): mid-reset
 * the elapsed count is still the ended episode's, and the state would pair it with the
 * new episode's simulator. */
frl_status frl_vec_env_get_state_at(frl_vec_env *v, int32_t i, double *state, int32_t size,
                                    char *err)
{
    frl_status st = frl_vec_env_enter(v, "get_state");
    if (st != FRL_OK)
        return frl_fail_msg(err, st, frl_last_error());
    st = get_state_locked(v, i, state, size, err);
    frl_vec_env_leave(v);
    return st;
}

static frl_status check_state_values(const frl_vec_env *v, const double *state, char *err)
{
    for (int32_t k = 0; k <= v->state_dim; k++)
        if (!isfinite(state[k]))
            return frl_fail(err, FRL_ERR_NONFINITE, "state[%d] is not finite", (int)k);
    double elapsed = state[v->state_dim];
    if (elapsed < 0 || elapsed > INT32_MAX || elapsed != floor(elapsed))
        return frl_fail(err, FRL_ERR_RANGE,
                        "state[%d] (elapsed steps) = %g is not an integer in [0, 2^31)",
                        (int)v->state_dim, elapsed);
    return FRL_OK;
}

void frl_vec_env_callback_failed(const frl_vec_env *v, int32_t i, const char *what, int rc,
                                 char *err)
{
    const char *why = v->fault ? v->fault(v->users[i]) : NULL;
    if (why && why[0])
        snprintf(err, FRL_ERRMSG_SIZE, "%s", why);
    else
        snprintf(err, FRL_ERRMSG_SIZE, "%s callback returned %d", what, rc);
}

/* The thread's message only: the running call owns v->err, and the callbacks that call
 * back in may run on several pool threads at once. */
static frl_status busy_error(const char *who)
{
    return frl_fail(NULL, FRL_ERR_STATE, "%s: the vec env is already being reset or stepped "
                    "(a call from one of its own callbacks, or from a second thread at once); "
                    "nothing was done", who);
}

frl_status frl_vec_env_enter(frl_vec_env *v, const char *who)
{
    if (!atomic_exchange_explicit(&v->busy, 1, memory_order_acquire))
        return FRL_OK;
    return busy_error(who);
}

frl_status frl_vec_env_check_idle(frl_vec_env *v, const char *who)
{
    return atomic_load_explicit(&v->busy, memory_order_acquire) ? busy_error(who) : FRL_OK;
}

frl_status frl_vec_env_hold(frl_vec_env *v, const char *who, const char *what)
{
    if (!atomic_exchange_explicit(&v->held, 1, memory_order_acq_rel))
        return FRL_OK;
    return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "%s: %s is already another trainer's "
                    "vec env (two trainers would step the same envs)", who, what);
}

frl_status frl_vec_env_check_free(const frl_vec_env *v, const char *who)
{
    if (!atomic_load_explicit(&v->held, memory_order_acquire))
        return FRL_OK;
    return frl_fail(NULL, FRL_ERR_STATE, "%s: the vec env is a trainer's (frl_trainer_vec_env): "
                    "only the trainer resets and steps it, or its run would no longer match "
                    "its envs; nothing was done", who);
}

/* A built-in's state must also have a finite observation: a finite double beyond
 * float32's range (x_dot = 1e39) was taken, and its observation held infinity. A
 * refused state leaves the simulator as it was. */
static frl_status set_builtin_state(frl_vec_env *v, int32_t i, const double *state,
                                    char *err)
{
    unsigned char *sim = v->b.sims + (size_t)i * FRL_SIM_MAX_BYTES;
    unsigned char kept[FRL_SIM_MAX_BYTES];
    float obs[FRL_OBS_MAX_DIM];
    memcpy(kept, sim, sizeof kept);
    if (v->cls->set_state(sim, state) != 0)
        return frl_fail(err, FRL_ERR_RANGE, "state is not a valid %s state (%s)", v->cls->name,
                        v->cls->state_rule);
    v->cls->observe(sim, obs);
    int64_t k = frl_find_nonfinite(obs, v->obs_w);
    if (k >= 0) {
        memcpy(sim, kept, sizeof kept);
        return frl_fail(err, FRL_ERR_RANGE, "state is not a valid %s state: its "
                        "observation[%lld] would be %s (beyond float32)", v->cls->name,
                        (long long)k, obs[k] != obs[k] ? "NaN" : "infinite");
    }
    memcpy(v->b.obs + (size_t)i * (size_t)v->obs_w, obs, sizeof(float) * (size_t)v->obs_w);
    return FRL_OK;
}

static frl_status host_set_failed(const frl_vec_env *v, int32_t i, int rc, char *err)
{
    char msg[FRL_ERRMSG_SIZE];
    frl_vec_env_callback_failed(v, i, "set_state", rc, msg);
    return frl_fail(err, FRL_ERR_CALLBACK, "env %d: %.200s", (int)i, msg);
}

/* The first float of row that must be finite and is not, or -1: any of a vector row, a
 * mixed row's vector part only, none of an image's (its bytes are pixels, every value
 * valid, and four of them can read as a NaN float: a ray env's state was refused for
 * the colours of its frame). */
static int64_t find_nonfinite_obs(const frl_vec_env *v, const float *row)
{
    if (!frl_space_is_image(v->obs_space))
        return frl_find_nonfinite(row, v->obs_w);
    int64_t at = frl_space_vector_at(v->obs_space);
    int64_t k = frl_find_nonfinite(row + at, frl_space_vector_floats(v->obs_space));
    return k < 0 ? -1 : at + k;
}

/* set_state, its observation written to row and checked: FRL_OK, or the failure (err
 * written before anything undoes the callback's message). */
static frl_status set_and_observe(frl_vec_env *v, int32_t i, const double *state, float *row,
                                  char *err)
{
    int rc = v->cb.set_state(v->users[i], state);
    if (rc == 0)
        rc = v->observe(v->users[i], row);
    if (rc != 0)
        return host_set_failed(v, i, rc, err);
    int64_t k = find_nonfinite_obs(v, row);
    if (k < 0)
        return FRL_OK;
    return frl_fail(err, FRL_ERR_NONFINITE, "env %d: set_state: the state's observation holds "
                    "%s in obs[%lld]; the env keeps its own state", (int)i,
                    row[k] != row[k] ? "NaN" : "infinity", (long long)k);
}

/* An env the library runs (v->observe: the MuJoCo envs) observes the state it takes, and
 * that observation must be finite, as a built-in's must (a height of 1e39 was observed
 * as infinity, a host's observe wrote NaN, and the batch held it for the policy). A
 * refused state, or one whose set_state or observe failed, is undone: the env gets back
 * its own state and observation. */
static frl_status set_observed_state(frl_vec_env *v, int32_t i, const double *state,
                                     char *err)
{
    float *row = v->b.obs + (size_t)i * (size_t)v->obs_w;
    size_t state_bytes = sizeof(double) * (size_t)v->state_dim;
    double *kept = frl_alloc(&v->rt->alloc, state_bytes + sizeof(float) * (size_t)v->obs_w, 16);
    if (!kept)
        return frl_fail(err, FRL_ERR_NOMEM, "env %d: out of memory to keep the env's state",
                        (int)i);
    float *kept_obs = (float *)(kept + v->state_dim);
    memcpy(kept_obs, row, sizeof(float) * (size_t)v->obs_w);
    int rc = v->cb.get_state(v->users[i], kept);
    frl_status st = rc != 0 ? host_set_failed(v, i, rc, err)
                            : set_and_observe(v, i, state, row, err);
    if (st != FRL_OK && rc == 0) {
        memcpy(row, kept_obs, sizeof(float) * (size_t)v->obs_w);
        if (v->cb.set_state(v->users[i], kept) != 0)
            v->b.needs_reset[i] = 1; /* its own state did not take either: reset it */
    }
    frl_free(&v->rt->alloc, kept);
    return st;
}

static frl_status set_host_state(frl_vec_env *v, int32_t i, const double *state, char *err)
{
    if (v->observe)
        return set_observed_state(v, i, state, err);
    int rc = v->cb.set_state(v->users[i], state);
    return rc == 0 ? FRL_OK : host_set_failed(v, i, rc, err);
}

static frl_status set_state_locked(frl_vec_env *v, int32_t i, const double *state,
                                   int32_t size, char *err)
{
    frl_status st = check_state_size(v, size, err);
    if (st == FRL_OK)
        st = check_state_values(v, state, err);
    if (st != FRL_OK)
        return st;
    if (v->kind == VEC_BUILTIN)
        st = set_builtin_state(v, i, state, err);
    else
        st = set_host_state(v, i, state, err);
    if (st != FRL_OK)
        return st;
    v->b.elapsed[i] = (int32_t)state[v->state_dim];
    v->b.needs_reset[i] = 0;
    v->b.ep_return[i] = 0.0;
    v->has_reset = 1;
    return FRL_OK;
}

frl_status frl_vec_env_set_state_at(frl_vec_env *v, int32_t i, const double *state,
                                    int32_t size, char *err)
{
    frl_status st = frl_vec_env_enter(v, "set_state");
    if (st != FRL_OK)
        return frl_fail_msg(err, st, frl_last_error());
    st = set_state_locked(v, i, state, size, err);
    frl_vec_env_leave(v);
    return st;
}
