/* frl_vec_env: reset, action validation and stepping for the three kinds. */
#include <stdio.h>
#include <string.h>

#include "env/frame.h"
#include "env/step_range.h"
#include "env/vec_env.h"
#include "env/vec_step.h"

/* ---- action validation: all actions are checked before any env is stepped ---- */

/* Whether env i's action is used this step: not an autoreset's, nor an idle env's
 * (frl_vec_env_step_active), whose action is ignored and so not validated. */
static int action_used(const frl_builtin_batch *b, int32_t i)
{
    return !b->needs_reset[i] && (!b->active || b->active[i]);
}

static frl_status validate_discrete(frl_vec_env *v)
{
    const int32_t *a = v->b.actions;
    const uint8_t *skip = v->b.needs_reset;
    uint32_t n = (uint32_t)v->action_n, bad = 0;
    /* Branch-free over every env that is not autoresetting (it vectorises); idle envs
     * are looked past only when one is flagged. */
    for (int32_t i = 0; i < v->n; i++)
        bad |= (uint32_t)(skip[i] == 0) & (uint32_t)((uint32_t)a[i] >= n);
    if (!bad)
        return FRL_OK;
    for (int32_t i = 0; i < v->n; i++)
        if (action_used(&v->b, i) && (uint32_t)a[i] >= n)
            return frl_fail(v->err, FRL_ERR_RANGE,
                            "env %d step %lld: action %d is outside the discrete range [0, %d)",
                            (int)i, (long long)v->step_calls, (int)a[i], (int)n);
    return FRL_OK;
}

static frl_status validate_box(frl_vec_env *v)
{
    const float *a = v->b.actions;
    int64_t w = v->act_w;
    int64_t bad = frl_find_nonfinite(a, (int64_t)v->n * w);
    while (bad >= 0) {
        int64_t env = bad / w;
        if (action_used(&v->b, (int32_t)env))
            return frl_fail(v->err, FRL_ERR_NONFINITE,
                            "env %lld step %lld: action[%lld] is %s", (long long)env,
                            (long long)v->step_calls, (long long)(bad % w),
                            a[bad] != a[bad] ? "NaN" : "infinite");
        /* An autoreset or idle env's action is ignored: look past it. */
        int64_t next = (env + 1) * w;
        int64_t rest = frl_find_nonfinite(a + next, (int64_t)v->n * w - next);
        bad = rest < 0 ? -1 : next + rest;
    }
    return FRL_OK;
}

static frl_status validate_actions(frl_vec_env *v)
{
    return v->action_n ? validate_discrete(v) : validate_box(v);
}

/* ---- one env of a host per-env callback table ---- */

/* A host env whose callback failed reports no transition this step (reward 0, no
 * flags, so it is not counted as an episode) and starts over on the next step. */
static void mark_failed(frl_vec_env *v, int32_t i)
{
    v->b.needs_reset[i] = 1;
    v->b.rewards[i] = 0.0f;
    v->b.terminated[i] = 0;
    v->b.truncated[i] = 0;
    v->b.reset_step[i] = 0;
}

static frl_status host_fail(frl_vec_env *v, int32_t i, char *err, const char *what, int rc)
{
    mark_failed(v, i);
    char msg[FRL_ERRMSG_SIZE];
    frl_vec_env_callback_failed(v, i, what, rc, msg);
    snprintf(err, FRL_ERRMSG_SIZE, "env %d step %lld: %.200s", (int)i,
             (long long)v->step_calls, msg);
    return FRL_ERR_CALLBACK;
}

/* A discrete observation must name a state: an integer index in [0, n). */
static frl_status check_host_index(frl_vec_env *v, int32_t i, const float *obs, char *err,
                                   const char *who)
{
    if (frl_find_bad_index(obs, 1, v->obs_n) < 0)
        return FRL_OK;
    mark_failed(v, i);
    char val[32];
    frl_describe_value(obs[0], val, sizeof val);
    snprintf(err, FRL_ERRMSG_SIZE,
             "env %d step %lld: %s callback returned observation %s, not an index of the "
             "discrete(%d) observation space (an integer in [0, %d))",
             (int)i, (long long)v->step_calls, who, val, (int)v->obs_n, (int)v->obs_n);
    return FRL_ERR_RANGE;
}

static frl_status check_host_obs(frl_vec_env *v, int32_t i, const float *obs, char *err,
                                 const char *who)
{
    if (v->obs_n)
        return check_host_index(v, i, obs, err, who);
    int64_t k = frl_find_nonfinite(obs, v->obs_w);
    if (k < 0)
        return FRL_OK;
    mark_failed(v, i);
    snprintf(err, FRL_ERRMSG_SIZE, "env %d step %lld: %s callback returned %s in obs[%lld]",
             (int)i, (long long)v->step_calls, who, obs[k] != obs[k] ? "NaN" : "infinity",
             (long long)k);
    return FRL_ERR_NONFINITE;
}

/* An image env's frame callback, its frame copied into obs. */
static frl_status take_frame(frl_vec_env *v, int32_t i, float *obs, char *err, const char *who)
{
    frl_frame f;
    memset(&f, 0, sizeof f);
    f.struct_size = sizeof f;
    int rc = v->cb.frame(v->users[i], &f);
    if (rc != 0)
        return host_fail(v, i, err, "frame", rc);
    char why[FRL_ERRMSG_SIZE / 2];
    frl_status st = frl_frame_copy(frl_space_image_of(v->obs_space), &f, (uint8_t *)obs, why,
                                   sizeof why);
    if (st == FRL_OK)
        return FRL_OK;
    mark_failed(v, i);
    snprintf(err, FRL_ERRMSG_SIZE, "env %d step %lld: the frame after %s: %s", (int)i,
             (long long)v->step_calls, who, why);
    return st;
}

/* A mixed observation's vector part must be finite, as a box's. */
static frl_status check_host_vector(frl_vec_env *v, int32_t i, const float *obs, char *err,
                                    const char *who)
{
    int64_t at = frl_space_vector_at(v->obs_space);
    int64_t k = frl_find_nonfinite(obs + at, frl_space_vector_floats(v->obs_space));
    if (k < 0)
        return FRL_OK;
    mark_failed(v, i);
    snprintf(err, FRL_ERRMSG_SIZE, "env %d step %lld: %s callback returned %s in the vector "
             "part of a mixed observation, element %lld (float %lld of obs)", (int)i,
             (long long)v->step_calls, who, obs[at + k] != obs[at + k] ? "NaN" : "infinity",
             (long long)k, (long long)(at + k));
    return FRL_ERR_NONFINITE;
}

/* The observation a reset or step callback left: checked (floats, indices, a mixed
 * row's vector), and the frame taken (images; any byte is a valid pixel). */
static frl_status host_observation(frl_vec_env *v, int32_t i, float *obs, char *err,
                                   const char *who)
{
    /* A MuJoCo env's observation is its observe callback's, whatever the call (a host
     * model may have no reset callback at all) */
    if (v->observe)
        who = "observe";
    if (!frl_space_is_image(v->obs_space))
        return check_host_obs(v, i, obs, err, who);
    frl_status st = check_host_vector(v, i, obs, err, who);
    return st == FRL_OK && v->cb.frame ? take_frame(v, i, obs, err, who) : st;
}

/* The env's stream moves on only when the reset succeeded: a failed autoreset is tried
 * again on the next step with the same seed, as if it had not failed. */
static frl_status host_reset_one(frl_vec_env *v, int32_t i, float *obs, char *err)
{
    frl_rng rng = v->b.rngs[i];
    uint64_t seed = frl_rng_next(&rng);
    int rc = v->cb.reset(v->users[i], seed, obs);
    if (rc != 0)
        return host_fail(v, i, err, "reset", rc);
    frl_status st = host_observation(v, i, obs, err, "reset");
    if (st == FRL_OK) {
        v->b.rngs[i] = rng;
        frl_record_reset(&v->b, i);
    }
    return st;
}

/* A simulator the library runs went wrong on this step and has reset itself: the
 * episode ends here, truncated with reward 0, and the runtime's log says where. */
static frl_status host_fault(frl_vec_env *v, int32_t i, float *obs, char *err)
{
    frl_status st = host_observation(v, i, obs, err, "step");
    if (st != FRL_OK)
        return st;
    atomic_fetch_add(&v->faults, 1);
    frl_log(v->rt, FRL_LOG_WARNING, "env %d step %lld: %s; the episode was ended there "
            "(truncated, reward 0) and the env reset", (int)i, (long long)v->step_calls,
            v->fault(v->users[i]));
    frl_record_step(&v->b, i, 0.0f, 0, 1);
    return FRL_OK;
}

static frl_status host_step_one(frl_vec_env *v, int32_t i, char *err)
{
    float *obs = v->b.obs + (size_t)i * (size_t)v->obs_w;
    if (v->b.needs_reset[i])
        return host_reset_one(v, i, obs, err);
    const void *action = (const unsigned char *)v->b.actions + (size_t)i * v->action_bytes;
    float reward = 0.0f;
    uint8_t term = 0, trunc = 0;
    int rc = v->cb.step(v->users[i], action, obs, &reward, &term, &trunc);
    if (rc != 0 && v->fault && rc == v->fault_code)
        return host_fault(v, i, obs, err);
    if (rc != 0)
        return host_fail(v, i, err, "step", rc);
    frl_status st = host_observation(v, i, obs, err, "step");
    if (st != FRL_OK)
        return st;
    if (frl_find_nonfinite(&reward, 1) >= 0) {
        mark_failed(v, i);
        snprintf(err, FRL_ERRMSG_SIZE, "env %d step %lld: %s callback returned %s reward",
                 (int)i, (long long)v->step_calls, v->observe ? "reward" : "step",
                 reward != reward ? "NaN" : "infinite");
        return FRL_ERR_NONFINITE;
    }
    frl_record_step(&v->b, i, reward, (uint8_t)(term != 0), (uint8_t)(trunc != 0));
    return FRL_OK;
}

/* ---- pool tasks: one chunk of envs each ---- */

static int64_t count_episodes(const frl_builtin_batch *b, int32_t begin, int32_t end)
{
    int64_t n = 0;
    for (int32_t i = begin; i < end; i++)
        n += b->terminated[i] | b->truncated[i];
    return n;
}

static void chunk_range(const frl_vec_env *v, int32_t task, int32_t *begin, int32_t *end)
{
    *begin = task * v->chunk;
    *end = *begin + v->chunk < v->n ? *begin + v->chunk : v->n;
}

static int builtin_task(void *user, int32_t task, int32_t thread)
{
    (void)thread;
    frl_vec_env *v = user;
    int32_t begin, end;
    chunk_range(v, task, &begin, &end);
    v->chunk_episodes[task] = v->cls->step_range(&v->b, begin, end);
    v->chunk_status[task] = FRL_OK;
    return 0;
}

static int host_task(void *user, int32_t task, int32_t thread)
{
    (void)thread;
    frl_vec_env *v = user;
    int32_t begin, end;
    chunk_range(v, task, &begin, &end);
    /* Every env is stepped even after one fails, so which envs advanced never depends
     * on how envs were split into chunks; the chunk keeps its first (lowest) error. */
    frl_status st = FRL_OK;
    char scratch[FRL_ERRMSG_SIZE];
    for (int32_t i = begin; i < end; i++) {
        if (v->b.active && !v->b.active[i]) {
            frl_record_idle(&v->b, i);
            continue;
        }
        frl_status s = host_step_one(v, i, st == FRL_OK ? v->chunk_err[task] : scratch);
        st = st == FRL_OK ? s : st;
    }
    v->chunk_episodes[task] = count_episodes(&v->b, begin, end);
    v->chunk_status[task] = st;
    return st != FRL_OK;
}

/* Run every chunk on the pool, then collect episode counts and the error of the
 * lowest failing chunk (lowest, so the message does not depend on timing). */
static frl_status run_chunks(frl_vec_env *v, frl_pool_fn fn)
{
    frl_pool_run(v->rt->pool, v->num_chunks, fn, v, NULL);
    frl_status st = FRL_OK;
    for (int32_t t = 0; t < v->num_chunks; t++) {
        v->total_episodes += v->chunk_episodes[t];
        if (st == FRL_OK && v->chunk_status[t] != FRL_OK)
            st = frl_fail_msg(v->err, (frl_status)v->chunk_status[t], v->chunk_err[t]);
    }
    return st;
}

/* ---- one host world stepping all envs ---- */

static frl_status check_batch_index(frl_vec_env *v, const char *who)
{
    int64_t k = frl_find_bad_index(v->b.obs, v->n, v->obs_n);
    if (k < 0)
        return FRL_OK;
    char val[32];
    frl_describe_value(v->b.obs[k], val, sizeof val);
    return frl_fail(v->err, FRL_ERR_RANGE,
                    "env %lld step %lld: batch %s callback returned observation %s, not an "
                    "index of the discrete(%d) observation space (an integer in [0, %d))",
                    (long long)k, (long long)v->step_calls, who, val, (int)v->obs_n,
                    (int)v->obs_n);
}

static frl_status check_batch_obs(frl_vec_env *v, const char *who)
{
    if (frl_space_is_image(v->obs_space)) { /* any byte is a pixel; a mixed vector is not */
        int64_t at = frl_space_vector_at(v->obs_space);
        int64_t k = frl_find_nonfinite_cols(v->b.obs, v->n, v->obs_w, at,
                                            frl_space_vector_floats(v->obs_space));
        if (k >= 0)
            return frl_fail(v->err, FRL_ERR_NONFINITE,
                            "env %lld step %lld: batch %s callback returned %s in the vector "
                            "part of a mixed observation, element %lld",
                            (long long)(k / v->obs_w), (long long)v->step_calls, who,
                            v->b.obs[k] != v->b.obs[k] ? "NaN" : "infinity",
                            (long long)(k % v->obs_w - at));
        return FRL_OK;
    }
    if (v->obs_n)
        return check_batch_index(v, who);
    int64_t k = frl_find_nonfinite(v->b.obs, (int64_t)v->n * v->obs_w);
    if (k >= 0)
        return frl_fail(v->err, FRL_ERR_NONFINITE,
                        "env %lld step %lld: batch %s callback returned %s in obs[%lld]",
                        (long long)(k / v->obs_w), (long long)v->step_calls, who,
                        v->b.obs[k] != v->b.obs[k] ? "NaN" : "infinity",
                        (long long)(k % v->obs_w));
    return FRL_OK;
}

static frl_status check_batch_rewards(frl_vec_env *v)
{
    /* Rewards of agents that were reset are ignored. */
    for (int32_t i = 0; i < v->n; i++)
        if (!v->b.needs_reset[i] && frl_find_nonfinite(&v->b.rewards[i], 1) >= 0)
            return frl_fail(v->err, FRL_ERR_NONFINITE,
                            "env %d step %lld: batch step callback returned a non-finite reward",
                            (int)i, (long long)v->step_calls);
    return FRL_OK;
}

/* The seeds of the envs that reset in this call (all, or those an episode end left),
 * each its stream's next, which take_seeds then moves past: a failed batch step draws
 * the same seeds again on the next (nothing of a failed call is kept). */
static void draw_seeds(frl_vec_env *v, int all)
{
    for (int32_t i = 0; i < v->n; i++) {
        v->seeds[i] = 0;
        if (all || v->b.needs_reset[i]) {
            frl_rng next = v->b.rngs[i]; /* a copy: take_seeds moves the stream on */
            v->seeds[i] = frl_rng_next(&next);
        }
    }
}

static void take_seeds(frl_vec_env *v, int all)
{
    for (int32_t i = 0; i < v->n; i++)
        if (all || v->b.needs_reset[i])
            (void)frl_rng_next(&v->b.rngs[i]);
}

static frl_status batch_step(frl_vec_env *v)
{
    frl_builtin_batch *b = &v->b;
    draw_seeds(v, 0);
    int rc = v->bcb.step(v->batch_user, v->n, b->actions, b->needs_reset, v->seeds, b->obs,
                         b->rewards, b->terminated, b->truncated);
    if (rc != 0)
        return frl_fail(v->err, FRL_ERR_CALLBACK, "step %lld: batch step callback returned %d",
                        (long long)v->step_calls, rc);
    frl_status st = check_batch_obs(v, "step");
    if (st == FRL_OK)
        st = check_batch_rewards(v);
    if (st != FRL_OK)
        return st;
    take_seeds(v, 0);
    for (int32_t i = 0; i < v->n; i++) {
        if (b->needs_reset[i]) {
            frl_record_reset(b, i);
            continue;
        }
        frl_record_step(b, i, b->rewards[i], (uint8_t)(b->terminated[i] != 0),
                        (uint8_t)(b->truncated[i] != 0));
        v->total_episodes += b->terminated[i] | b->truncated[i];
    }
    return FRL_OK;
}

static frl_status batch_reset(frl_vec_env *v)
{
    draw_seeds(v, 1);
    int rc = v->bcb.reset(v->batch_user, v->n, v->seeds, v->b.obs);
    if (rc != 0)
        return frl_fail(v->err, FRL_ERR_CALLBACK, "batch reset callback returned %d", rc);
    take_seeds(v, 1);
    memset(v->b.needs_reset, 0, (size_t)v->n);
    frl_status st = check_batch_obs(v, "reset");
    if (st != FRL_OK)
        return st;
    for (int32_t i = 0; i < v->n; i++)
        frl_record_reset(&v->b, i);
    return FRL_OK;
}

/* ---- public entry points ---- */

static frl_status step_kind(frl_vec_env *v)
{
    switch (v->kind) {
    case VEC_BUILTIN: return run_chunks(v, builtin_task);
    case VEC_CALLBACKS: return run_chunks(v, host_task);
    case VEC_BATCH: return batch_step(v);
    }
    return frl_fail(v->err, FRL_ERR_INTERNAL, "vec env of unknown kind %d", (int)v->kind);
}

FRL_API frl_status frl_vec_env_reset(frl_vec_env *v, uint64_t seed)
{
    if (v && frl_vec_env_check_free(v, "frl_vec_env_reset") != FRL_OK)
        return FRL_ERR_STATE;
    return frl_vec_env_reset_from(v, seed, 0);
}

static frl_status reset_locked(frl_vec_env *v, uint64_t seed, int64_t first)
{
    for (int32_t i = 0; i < v->n; i++) {
        v->b.rngs[i] = frl_rng_stream(seed, (uint64_t)(first + i));
        v->b.needs_reset[i] = 1;
    }
    v->has_reset = 1;
    /* A reset is a step in which every env autoresets: the same code path. */
    frl_status st = v->kind == VEC_BATCH ? batch_reset(v) : step_kind(v);
    if (st != FRL_OK)
        v->has_reset = 0;
    return st;
}

frl_status frl_vec_env_reset_from(frl_vec_env *v, uint64_t seed, int64_t first)
{
    if (!v)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_vec_env_reset: venv is NULL");
    frl_status st = frl_vec_env_enter(v, "frl_vec_env_reset");
    if (st != FRL_OK)
        return st;
    st = reset_locked(v, seed, first);
    frl_vec_env_leave(v);
    return st;
}

/* The envs a step runs: all, or the active ones (the idle are not counted). */
static int64_t stepped_envs(const frl_vec_env *v)
{
    if (!v->b.active)
        return v->n;
    int64_t k = 0;
    for (int32_t i = 0; i < v->n; i++)
        k += v->b.active[i] != 0;
    return k;
}

static frl_status step_locked(frl_vec_env *v)
{
    if (!v->has_reset)
        return frl_fail(v->err, FRL_ERR_STATE,
                        "frl_vec_env_step: call frl_vec_env_reset before the first step");
    v->step_calls++; /* the messages name the step being tried */
    frl_status st = validate_actions(v);
    if (st != FRL_OK) {
        v->step_calls--; /* a refused step leaves the env as it was, its count too */
        return st;
    }
    st = step_kind(v);
    v->total_steps += stepped_envs(v);
    return st;
}

/* v claimed, `actions` copied in (NULL: the host wrote them), the step run with
 * `active` (NULL: every env), v given back. Actions and flags are written only once v is
 * claimed: a refused nested call must not change a running step's. */
static frl_status step_claimed(frl_vec_env *v, const void *actions, const uint8_t *active,
                               const char *who)
{
    frl_status st = frl_vec_env_enter(v, who);
    if (st != FRL_OK)
        return st;
    if (actions)
        memcpy((void *)v->b.actions, actions, v->action_bytes * (size_t)v->n);
    v->b.active = active;
    st = step_locked(v);
    v->b.active = NULL;
    frl_vec_env_leave(v);
    return st;
}

FRL_API frl_status frl_vec_env_step(frl_vec_env *v)
{
    if (!v)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_vec_env_step: venv is NULL");
    if (frl_vec_env_check_free(v, "frl_vec_env_step") != FRL_OK)
        return FRL_ERR_STATE;
    return step_claimed(v, NULL, NULL, "frl_vec_env_step");
}

frl_status frl_vec_env_step_held(frl_vec_env *v)
{
    return step_claimed(v, NULL, NULL, "frl_vec_env_step");
}

frl_status frl_vec_env_step_active(frl_vec_env *v, const uint8_t *active)
{
    if (!v)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_vec_env_step: venv is NULL");
    if (v->kind == VEC_BATCH || !active)
        active = NULL; /* a host's batch world steps every agent */
    return step_claimed(v, NULL, active, "frl_vec_env_step");
}

frl_status frl_vec_env_step_with(frl_vec_env *v, const void *actions, const char *who)
{
    return step_claimed(v, actions, NULL, who);
}
