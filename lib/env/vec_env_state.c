/* Snapshot and restore of a vec env's whole state, for trainer checkpoints: random
 * streams, observations, flags and episode bookkeeping, plus the simulators (a
 * built-in's raw structs, or each host env's state through its get_state and
 * set_state callbacks), so a resumed run continues exactly where it stopped. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "env/values.h"
#include "env/vec_env_state.h"

/* One array of the vec env as it is saved. */
typedef struct env_array {
    char name[FRL_SECTION_NAME_MAX];
    frl_dtype type;
    size_t count, elem;
    void *data;
} env_array;

enum { MAX_ARRAYS = 12 };

/* Section names: "env.<what>" for group 0 (the only one of a sync trainer, and what
 * files of 0.2 hold), "env.g<g>.<what>" for the async sampler's other groups. */
static void section_name(char *out, int32_t group, const char *what)
{
    if (group == 0)
        snprintf(out, FRL_SECTION_NAME_MAX, "env.%s", what);
    else
        snprintf(out, FRL_SECTION_NAME_MAX, "env.g%d.%s", (int)group, what);
}

static void put(env_array *a, int32_t *k, int32_t group, const char *what, frl_dtype type,
                size_t count, size_t elem, void *data)
{
    env_array *e = &a[(*k)++];
    section_name(e->name, group, what);
    e->type = type;
    e->count = count;
    e->elem = elem;
    e->data = data;
}

/* The per-env arrays saved for every kind, plus a built-in's simulator structs. A host
 * env's simulator is its own: it travels through get_state and set_state instead. */
static int32_t env_arrays(const frl_vec_env *v, int32_t g, env_array *a)
{
    const frl_builtin_batch *b = &v->b;
    size_t N = (size_t)v->n;
    int32_t k = 0;
    if (v->kind == VEC_BUILTIN)
        put(a, &k, g, "sims", FRL_DTYPE_U8, N * FRL_SIM_MAX_BYTES, 1, b->sims);
    put(a, &k, g, "rngs", FRL_DTYPE_U64, 2 * N, 8, b->rngs);
    put(a, &k, g, "obs", FRL_DTYPE_F32, N * (size_t)v->obs_w, 4, b->obs);
    put(a, &k, g, "rewards", FRL_DTYPE_F32, N, 4, b->rewards);
    put(a, &k, g, "terminated", FRL_DTYPE_U8, N, 1, b->terminated);
    put(a, &k, g, "truncated", FRL_DTYPE_U8, N, 1, b->truncated);
    put(a, &k, g, "reset_step", FRL_DTYPE_U8, N, 1, b->reset_step);
    put(a, &k, g, "needs_reset", FRL_DTYPE_U8, N, 1, b->needs_reset);
    put(a, &k, g, "elapsed", FRL_DTYPE_I32, N, 4, b->elapsed);
    put(a, &k, g, "ep_return", FRL_DTYPE_F64, N, 8, b->ep_return);
    put(a, &k, g, "done_return", FRL_DTYPE_F32, N, 4, b->done_return);
    put(a, &k, g, "done_length", FRL_DTYPE_I32, N, 4, b->done_length);
    return k;
}

frl_status frl_vec_env_check_savable(const frl_vec_env *v, char *err)
{
    if (v->kind == VEC_BATCH)
        return frl_fail(err, FRL_ERR_UNSUPPORTED,
                        "a batch world (frl_vec_env_create_batch) cannot be checkpointed: the "
                        "library cannot read or restore its state; use per-env callbacks with "
                        "state, or save the policy with frl_policy_save");
    if (v->kind == VEC_CALLBACKS && v->state_dim == 0)
        return frl_fail(err, FRL_ERR_UNSUPPORTED,
                        "the vec env's callbacks provide no simulator state (state_size 0): set "
                        "state_size, get_state and set_state in frl_env_callbacks to checkpoint "
                        "the run, or save the policy with frl_policy_save");
    return FRL_OK;
}

/* Env i's state through its get_state callback, into states[i * S, + S). Envs waiting
 * for their autoreset are left at 0: the reset replaces their simulator whatever it
 * holds, and a finished or failed episode's state may be one the host cannot give. */
static frl_status read_host_states(const frl_vec_env *v, double *states, char *err)
{
    size_t S = (size_t)v->state_dim;
    memset(states, 0, sizeof(double) * S * (size_t)v->n);
    for (int32_t i = 0; v->has_reset && i < v->n; i++) {
        if (v->b.needs_reset[i])
            continue;
        int rc = v->cb.get_state(v->users[i], states + (size_t)i * S);
        if (rc != 0)
            return frl_fail(err, FRL_ERR_CALLBACK, "env %d: get_state callback returned %d",
                            (int)i, rc);
        frl_status st = frl_vec_env_check_host_state(states + (size_t)i * S, (int32_t)S, i, err);
        if (st != FRL_OK)
            return st;
    }
    return FRL_OK;
}

static frl_status snapshot_host(const frl_vec_env *v, frl_vec_env_snap *snap, char *err)
{
    snap->state_size = v->state_dim;
    size_t bytes = sizeof(double) * (size_t)v->state_dim * (size_t)v->n;
    snap->states = frl_alloc(snap->alloc, bytes, 64);
    if (!snap->states)
        return frl_fail(err, FRL_ERR_NOMEM, "out of memory for %d env states (%zu bytes)",
                        (int)v->n, bytes);
    frl_status st = read_host_states(v, snap->states, err);
    if (st != FRL_OK)
        frl_vec_env_snap_free(snap);
    return st;
}

frl_status frl_vec_env_snapshot(const frl_vec_env *v, frl_vec_env_snap *snap, frl_section *s,
                                int32_t *n, char *err)
{
    return frl_vec_env_snapshot_group(v, 0, snap, s, n, err);
}

frl_status frl_vec_env_snapshot_group(const frl_vec_env *v, int32_t group,
                                      frl_vec_env_snap *snap, frl_section *s, int32_t *n,
                                      char *err)
{
    memset(snap, 0, sizeof *snap);
    snap->alloc = &v->rt->alloc;
    frl_status st = frl_vec_env_check_savable(v, err);
    if (st == FRL_OK && v->kind == VEC_CALLBACKS)
        st = snapshot_host(v, snap, err);
    if (st != FRL_OK)
        return st;
    env_array a[MAX_ARRAYS];
    int32_t k = env_arrays(v, group, a);
    for (int32_t i = 0; i < k; i++)
        frl_section_add(s, n, a[i].name, a[i].type, a[i].count, a[i].data);
    snap->totals[0] = v->step_calls;
    snap->totals[1] = v->total_steps;
    snap->totals[2] = v->total_episodes;
    snap->totals[3] = v->has_reset;
    char name[FRL_SECTION_NAME_MAX];
    section_name(name, group, "totals");
    frl_section_add(s, n, name, FRL_DTYPE_I64, 4, snap->totals);
    if (snap->states) {
        section_name(name, group, "state_size");
        frl_section_add(s, n, name, FRL_DTYPE_I64, 1, &snap->state_size);
        section_name(name, group, "states");
        frl_section_add(s, n, name, FRL_DTYPE_F64,
                        (uint64_t)snap->state_size * (uint64_t)v->n, snap->states);
    }
    return FRL_OK;
}

void frl_vec_env_snap_free(frl_vec_env_snap *snap)
{
    if (snap->alloc)
        frl_free(snap->alloc, snap->states);
    snap->states = NULL;
}

int64_t frl_vec_env_saved_state_size(const frl_container *c)
{
    const frl_section *s = frl_container_optional(c, "env.state_size", FRL_DTYPE_I64, 1);
    return s ? *(const int64_t *)s->data : 0;
}

/* ---- restoring ---- */

/* Which of the k arrays saves `what` (every kind saves each array it is asked for). */
static int32_t index_of(const env_array *a, int32_t k, const char *what)
{
    size_t w = strlen(what);
    for (int32_t i = 0; i < k; i++) {
        size_t len = strlen(a[i].name);
        if (len > w && a[i].name[len - w - 1] == '.' && strcmp(a[i].name + len - w, what) == 0)
            return i;
    }
    return 0;
}

/* Every section v needs, found and sized, before anything is written. */
static frl_status find_all(const frl_vec_env *v, int32_t g, const frl_container *c,
                           env_array *a, int32_t k, const frl_section **found, char *err)
{
    for (int32_t i = 0; i < k; i++)
        if (!(found[i] = frl_container_find(c, a[i].name, a[i].type, (int64_t)a[i].count, err)))
            return FRL_ERR_FORMAT;
    char totals[FRL_SECTION_NAME_MAX], states[FRL_SECTION_NAME_MAX];
    section_name(totals, g, "totals");
    section_name(states, g, "states");
    found[k] = frl_container_find(c, totals, FRL_DTYPE_I64, 4, err);
    found[k + 1] = v->kind != VEC_CALLBACKS ? NULL
        : frl_container_find(c, states, FRL_DTYPE_F64,
                             (int64_t)v->state_dim * (int64_t)v->n, err);
    if (!found[k] || (v->kind == VEC_CALLBACKS && !found[k + 1]))
        return FRL_ERR_FORMAT;
    return FRL_OK;
}

/* Host env i takes its saved state unless the saved run had it waiting for its
 * autoreset (its state was not saved; the reset will make a new one). */
static frl_status write_host_states(frl_vec_env *v, const uint8_t *needs_reset,
                                    const double *states, char *err)
{
    /* Checked before any host is given its state, so a refused file changes nothing. */
    for (int32_t i = 0; i < v->n; i++)
        for (int32_t k = 0; !needs_reset[i] && k < v->state_dim; k++)
            if (!isfinite(states[(size_t)i * (size_t)v->state_dim + (size_t)k]))
                return frl_fail(err, FRL_ERR_FORMAT, "the saved state of host env %d is not "
                                "finite (state[%d])", (int)i, (int)k);
    for (int32_t i = 0; i < v->n; i++) {
        if (needs_reset[i])
            continue;
        int rc = v->cb.set_state(v->users[i], states + (size_t)i * (size_t)v->state_dim);
        if (rc != 0) {
            /* Some hosts already hold the saved states, the others do not: only a reset
             * makes the vec env consistent again. */
            v->has_reset = 0;
            char msg[FRL_ERRMSG_SIZE]; /* a library env's own reason (a ray env's map) */
            frl_vec_env_callback_failed(v, i, "set_state", rc, msg);
            /* A built-in's (made by name: a pixel, ray or MuJoCo task) refusal is the
             * file's fault, not a host's: said as a saved simulator it cannot be in. */
            if (frl_vec_env_builtin_name(v))
                return frl_fail(err, FRL_ERR_FORMAT, "the saved state of env %d: %.200s",
                                (int)i, msg);
            return frl_fail(err, FRL_ERR_CALLBACK, "env %d: %.200s", (int)i, msg);
        }
    }
    return FRL_OK;
}

/* Whether a sim that check_sim took is one an episode goes on from: what set_state
 * takes (on a scratch copy of the configured sim). An env waiting for its autoreset may
 * hold an ended episode's state (MemoryProbe-v0's t = D + 2); one that steps on must not,
 * or its episode never ends. */
static int steps_on_from(const frl_env_class *c, const uint8_t *sim, const uint8_t *configured)
{
    double state[FRL_SIM_MAX_STATE];
    unsigned char scratch[FRL_SIM_MAX_BYTES];
    c->get_state(sim, state);
    memcpy(scratch, configured, sizeof scratch);
    return c->set_state(scratch, state) == 0;
}

/* A built-in's saved sims, each checked by its class against v's own (configure's
 * settings) before any is copied: a file is only CRC-checked, and a forged count or
 * index in a sim divided by zero or wrote past an array at the next step. */
static frl_status check_sims(const frl_vec_env *v, const char *section, const uint8_t *saved,
                             const uint8_t *needs_reset, char *err)
{
    char why[160];
    for (int32_t i = 0; i < v->n; i++) {
        size_t at = (size_t)i * FRL_SIM_MAX_BYTES;
        if (v->cls->check_sim(saved + at, v->b.sims + at, why, sizeof why) != 0)
            return frl_fail(err, FRL_ERR_FORMAT, "%s: env %d holds no %s simulator: %s",
                            section, (int)i, v->cls->name, why);
        if (!needs_reset[i] && !steps_on_from(v->cls, saved + at, v->b.sims + at))
            return frl_fail(err, FRL_ERR_FORMAT, "%s: env %d is not waiting for its reset, "
                            "but its state is not one a %s episode goes on from (%s)",
                            section, (int)i, v->cls->name, v->cls->state_rule);
    }
    return FRL_OK;
}

/* Elapsed counts a run can hold: a negative one (only a forged file has it) would put
 * off the time limit by as many steps and report negative episode lengths. */
static frl_status check_elapsed(const frl_vec_env *v, const char *section,
                                const int32_t *elapsed, char *err)
{
    for (int32_t i = 0; i < v->n; i++)
        if (elapsed[i] < 0)
            return frl_fail(err, FRL_ERR_FORMAT, "%s: env %d has %d elapsed steps (negative)",
                            section, (int)i, (int)elapsed[i]);
    return FRL_OK;
}

/* The episode bookkeeping a run can hold: finite running returns and rewards (a step
 * records no other). A forged NaN in a running return went into the trainer's episode
 * window when the episode ended, and the next checkpoint, which saves that window,
 * could not be loaded. (done_return is left: the step that ends an episode writes it,
 * and its float copy of a finite return can be infinite.) */
static frl_status check_returns(const frl_vec_env *v, const env_array *a, int32_t k,
                                const frl_section *const *found, char *err)
{
    static const char *const names[] = {"ep_return", "rewards"};
    for (int32_t j = 0; j < 2; j++) {
        int32_t at = index_of(a, k, names[j]);
        for (int32_t i = 0; i < v->n; i++) {
            double x = a[at].type == FRL_DTYPE_F64 ? ((const double *)found[at]->data)[i]
                                                   : ((const float *)found[at]->data)[i];
            if (!isfinite(x))
                return frl_fail(err, FRL_ERR_FORMAT, "%s: env %d holds %g, which no run "
                                "does (not finite)", a[at].name, (int)i, x);
        }
    }
    return FRL_OK;
}

/* Index in its row of the first saved observation value the space cannot hold, or -1:
 * what a step refuses from an env is refused from a file too (before, a forged NaN
 * loaded and the policy refused it at the next act). Pixels are any bytes; a mixed
 * observation's vector part and a box must be finite; a discrete observation is an
 * index in [0, n). */
static int64_t bad_obs_in_row(const frl_vec_env *v, const float *row)
{
    if (frl_space_is_image(v->obs_space))
        return frl_find_nonfinite_cols(row, 1, v->obs_w, frl_space_vector_at(v->obs_space),
                                       frl_space_vector_floats(v->obs_space));
    return v->obs_n ? frl_find_bad_index(row, v->obs_w, v->obs_n)
                    : frl_find_nonfinite(row, v->obs_w);
}

/* The counts (step calls, steps, episodes) and the reset flag, 0 or 1: a forged 2^40
 * read as an int once became 0, and the loaded run could not step. */
static frl_status check_totals(const char *section, const int64_t *totals, char *err)
{
    const int64_t most = (int64_t)1 << 62;
    for (int i = 0; i < 3; i++)
        if (totals[i] < 0 || totals[i] > most)
            return frl_fail(err, FRL_ERR_FORMAT, "%s: count %d is %lld, outside [0, 2^62]",
                            section, i, (long long)totals[i]);
    if (totals[3] != 0 && totals[3] != 1)
        return frl_fail(err, FRL_ERR_FORMAT, "%s: the reset flag is %lld, not 0 or 1", section,
                        (long long)totals[3]);
    return FRL_OK;
}

/* Rows awaiting a reset are checked too: the policy acts on every row. */
static frl_status check_obs(const frl_vec_env *v, const char *section, const float *obs,
                            char *err)
{
    for (int32_t i = 0; i < v->n; i++) {
        const float *row = obs + (size_t)i * (size_t)v->obs_w;
        int64_t k = bad_obs_in_row(v, row);
        if (k < 0)
            continue;
        char val[32];
        frl_describe_value(row[k], val, sizeof val);
        return frl_fail(err, FRL_ERR_FORMAT, "%s: env %d holds %s at obs[%lld], which its "
                        "observation space cannot hold", section, (int)i, val, (long long)k);
    }
    return FRL_OK;
}

frl_status frl_vec_env_restore(frl_vec_env *v, const frl_container *c, char *err)
{
    return frl_vec_env_restore_group(v, 0, c, 1, err);
}

frl_status frl_vec_env_restore_group(frl_vec_env *v, int32_t group, const frl_container *c,
                                     int steps_on, char *err)
{
    env_array a[MAX_ARRAYS];
    const frl_section *found[MAX_ARRAYS + 2];
    int32_t k = env_arrays(v, group, a);
    frl_status st = find_all(v, group, c, a, k, found, err);
    if (st != FRL_OK)
        return st;
    const int64_t *totals = found[k]->data;
    if ((st = check_totals(found[k]->name, totals, err)) != FRL_OK)
        return st;
    int32_t sims = index_of(a, k, "sims"), elapsed = index_of(a, k, "elapsed");
    const uint8_t *needs_reset = found[index_of(a, k, "needs_reset")]->data;
    if (v->kind == VEC_BUILTIN &&
        (st = check_sims(v, a[sims].name, found[sims]->data, needs_reset, err)) != FRL_OK)
        return st;
    if ((st = check_elapsed(v, a[elapsed].name, found[elapsed]->data, err)) != FRL_OK ||
        (st = check_returns(v, a, k, found, err)) != FRL_OK)
        return st;
    int32_t obs = index_of(a, k, "obs");
    if (steps_on && (st = check_obs(v, a[obs].name, found[obs]->data, err)) != FRL_OK)
        return st;
    if (v->kind == VEC_CALLBACKS && totals[3]) {
        st = write_host_states(v, needs_reset, found[k + 1]->data, err);
        if (st != FRL_OK)
            return st;
    }
    for (int32_t i = 0; i < k; i++)
        memcpy(a[i].data, found[i]->data, a[i].count * a[i].elem);
    v->step_calls = totals[0];
    v->total_steps = totals[1];
    v->total_episodes = totals[2];
    v->has_reset = (int)totals[3];
    return FRL_OK;
}
