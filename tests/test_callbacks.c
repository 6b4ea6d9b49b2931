/* Host environments through callbacks: per-env tables stepped by the pool and one
 * batch table for a whole world; autoreset, seeds, thread-count invariance, and
 * the non-finite checks (which must work in the release build the suite runs). */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastrl.h"
#include "test_util.h"

/* A counter world: obs = [position, seed-derived offset]; each step adds the action
 * (0 or 1) to position; the episode terminates when position reaches 3. */
typedef struct counter {
    float pos, offset;
    atomic_int steps, resets;
    float poison; /* written into obs[0] when non-zero */
    int fail_resets;    /* the next resets to fail (returning 5) */
    uint64_t last_seed; /* the seed of the last reset called */
    float reward;       /* each step's (0: 1) */
} counter;

static int counter_reset(void *user, uint64_t seed, float *obs)
{
    counter *c = user;
    c->last_seed = seed;
    if (c->fail_resets > 0) {
        c->fail_resets--;
        return 5;
    }
    c->pos = 0.0f;
    c->offset = (float)(seed % 1000u);
    atomic_fetch_add(&c->resets, 1);
    obs[0] = c->pos;
    obs[1] = c->offset;
    return 0;
}

static int counter_step(void *user, const void *action, float *obs, float *reward,
                        uint8_t *terminated, uint8_t *truncated)
{
    counter *c = user;
    c->pos += (float)*(const int32_t *)action;
    atomic_fetch_add(&c->steps, 1);
    obs[0] = c->poison != 0.0f ? c->poison : c->pos;
    obs[1] = c->offset;
    *reward = c->reward != 0.0f ? c->reward : 1.0f;
    *terminated = c->pos >= 3.0f;
    *truncated = 0;
    return 0;
}

static void make_spaces(frl_space **obs, frl_space **act)
{
    int64_t shape = 2;
    ck_assert_int_eq(frl_space_create_box(obs, NULL, 1, &shape, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(act, NULL, 2), FRL_OK);
}

static frl_vec_env *make_counters(frl_runtime *rt, counter *c, int32_t n)
{
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = counter_reset;
    cb.step = counter_step;
    void *users[64];
    for (int32_t i = 0; i < n; i++)
        users[i] = &c[i];
    frl_space *obs, *act;
    make_spaces(&obs, &act);
    frl_vec_env *v = NULL;
    ck_assert_int_eq(
        frl_vec_env_create_callbacks(&v, rt, &cb, users, n, obs, act, NULL), FRL_OK);
    frl_space_destroy(obs); /* copied by the vec env */
    frl_space_destroy(act);
    return v;
}

START_TEST(per_env_autoreset)
{
    frl_runtime *rt = frl_test_runtime(3);
    counter c[7];
    memset(c, 0, sizeof c);
    frl_vec_env *v = make_counters(rt, c, 7);
    ck_assert_ptr_null(frl_vec_env_name(v)); /* host envs have no built-in id */
    ck_assert_int_eq(frl_vec_env_reset(v, 9), FRL_OK);
    int32_t *a = frl_vec_env_actions(v);
    for (int s = 0; s < 4; s++) {
        for (int i = 0; i < 7; i++)
            a[i] = 1;
        ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
    }
    /* Steps 1-3 moved to 3 and terminated; step 4 autoreset without calling step. */
    for (int i = 0; i < 7; i++) {
        ck_assert_int_eq(atomic_load(&c[i].steps), 3);
        ck_assert_int_eq(atomic_load(&c[i].resets), 2);
        ck_assert_int_eq(frl_vec_env_reset_steps(v)[i], 1);
        ck_assert(frl_vec_env_rewards(v)[i] == 0.0f);
        ck_assert(frl_vec_env_observations(v)[2 * i] == 0.0f);
        ck_assert_int_eq(frl_vec_env_episode_lengths(v)[i], 3);
        ck_assert(frl_vec_env_episode_returns(v)[i] == 3.0f);
    }
    ck_assert_int_eq(frl_vec_env_total_episodes(v), 7);
    /* Seeds come from per-env streams: different envs, different seeds. */
    ck_assert(c[0].offset != c[1].offset || c[1].offset != c[2].offset);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* Finite rewards whose episode's sum passes FLT_MAX (3 x 2e38): the return is kept
 * in double and reported as FLT_MAX, not as infinity, which went into the trainer's
 * window of recent returns and made every checkpoint refuse to be written. */
START_TEST(huge_returns_saturate)
{
    frl_runtime *rt = frl_test_runtime(1);
    counter c[2];
    memset(c, 0, sizeof c);
    c[0].reward = 2e38f;
    c[1].reward = -2e38f;
    frl_vec_env *v = make_counters(rt, c, 2);
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    int32_t *a = frl_vec_env_actions(v);
    for (int s = 0; s < 3; s++) {
        a[0] = a[1] = 1;
        ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
    }
    ck_assert_int_eq(frl_vec_env_terminated(v)[0], 1);
    ck_assert_msg(frl_vec_env_episode_returns(v)[0] == FLT_MAX &&
                  frl_vec_env_episode_returns(v)[1] == -FLT_MAX, "returns %g %g",
                  (double)frl_vec_env_episode_returns(v)[0],
                  (double)frl_vec_env_episode_returns(v)[1]);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

/* The seeds a host env receives depend on (seed, env index) only. */
START_TEST(host_seeds_independent_of_threads)
{
    float offsets[2][7];
    for (int k = 0; k < 2; k++) {
        frl_runtime *rt = frl_test_runtime(k ? 7 : 1);
        counter c[7];
        memset(c, 0, sizeof c);
        frl_vec_env *v = make_counters(rt, c, 7);
        ck_assert_int_eq(frl_vec_env_reset(v, 123), FRL_OK);
        for (int i = 0; i < 7; i++)
            offsets[k][i] = c[i].offset;
        frl_vec_env_destroy(v);
        frl_runtime_destroy(rt);
    }
    ck_assert_mem_eq(offsets[0], offsets[1], sizeof offsets[0]);
}
END_TEST

/* NaN and infinity from a host env are caught, naming env and step. */
START_TEST(nonfinite_obs_detected)
{
    static const float poisons[] = {NAN, INFINITY, -INFINITY};
    for (int p = 0; p < 3; p++) {
        frl_runtime *rt = frl_test_runtime(2);
        counter c[7];
        memset(c, 0, sizeof c);
        frl_vec_env *v = make_counters(rt, c, 7);
        ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
        c[4].poison = poisons[p];
        memset(frl_vec_env_actions(v), 0, 7 * sizeof(int32_t));
        ck_assert_int_eq(frl_vec_env_step(v), FRL_ERR_NONFINITE);
        ck_assert_ptr_nonnull(strstr(frl_last_error(), "env 4 step 1"));
        ck_assert_ptr_nonnull(strstr(frl_vec_env_last_error(v), p ? "infinity" : "NaN"));
        frl_vec_env_destroy(v);
        frl_runtime_destroy(rt);
    }
}
END_TEST

/* A host env whose callbacks call back into their own vec env: each nested call must be
 * refused (it would step envs in the middle of a step) and the outer call unharmed. */
typedef struct reentrant {
    counter c;
    frl_vec_env *self;
    atomic_int refused, accepted;
} reentrant;

static void try_nested(reentrant *r)
{
    if (!r->self)
        return;
    frl_status a = frl_vec_env_step(r->self);
    a = a == FRL_ERR_STATE && strstr(frl_last_error(), "own callbacks") ? a : FRL_OK;
    frl_status b = frl_vec_env_reset(r->self, 9);
    atomic_fetch_add(a == FRL_ERR_STATE ? &r->refused : &r->accepted, 1);
    atomic_fetch_add(b == FRL_ERR_STATE ? &r->refused : &r->accepted, 1);
}

static int reentrant_reset(void *user, uint64_t seed, float *obs)
{
    try_nested(user);
    return counter_reset(&((reentrant *)user)->c, seed, obs);
}

static int reentrant_step(void *user, const void *action, float *obs, float *reward,
                          uint8_t *terminated, uint8_t *truncated)
{
    try_nested(user);
    return counter_step(&((reentrant *)user)->c, action, obs, reward, terminated, truncated);
}

START_TEST(nested_calls_from_callbacks_refused)
{
    frl_runtime *rt = frl_test_runtime(2);
    reentrant r[4];
    memset(r, 0, sizeof r);
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = reentrant_reset;
    cb.step = reentrant_step;
    void *users[4] = {&r[0], &r[1], &r[2], &r[3]};
    frl_space *obs, *act;
    make_spaces(&obs, &act);
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, 4, obs, act, NULL),
                     FRL_OK);
    for (int i = 0; i < 4; i++)
        r[i].self = v;
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    int32_t *a = frl_vec_env_actions(v);
    for (int i = 0; i < 4; i++)
        a[i] = 1;
    ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
    for (int i = 0; i < 4; i++) { /* one reset and one step each, as without the nesting */
        ck_assert_int_eq(atomic_load(&r[i].c.resets), 1);
        ck_assert_int_eq(atomic_load(&r[i].c.steps), 1);
        ck_assert_float_eq(frl_vec_env_observations(v)[2 * i], 1.0f);
        ck_assert_int_eq(atomic_load(&r[i].refused), 4);
        ck_assert_int_eq(atomic_load(&r[i].accepted), 0);
        r[i].self = NULL; /* the calls outside a callback work again */
    }
    ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
    ck_assert_int_eq(atomic_load(&r[3].c.steps), 2);
    frl_vec_env_destroy(v);
    frl_space_destroy(obs);
    frl_space_destroy(act);
    frl_runtime_destroy(rt);
}
END_TEST

/* A single host env whose step callback calls frl_env_step on its own env: the nested
 * call is refused, and must not have written its action over the one the running step
 * handed to the callback. */
typedef struct nested_single {
    counter c;
    frl_env *self;
    int32_t seen_before, seen_after;
    frl_status nested;
} nested_single;

static int nested_single_step(void *user, const void *action, float *obs, float *reward,
                              uint8_t *terminated, uint8_t *truncated)
{
    nested_single *n = user;
    n->seen_before = *(const int32_t *)action;
    int32_t other = 0;
    float o[2], r;
    uint8_t t, u;
    n->nested = frl_env_step(n->self, &other, o, &r, &t, &u);
    n->seen_after = *(const int32_t *)action;
    return counter_step(&n->c, action, obs, reward, terminated, truncated);
}

START_TEST(nested_single_env_step_leaves_action)
{
    frl_runtime *rt = frl_test_runtime(1);
    nested_single n;
    memset(&n, 0, sizeof n);
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = counter_reset;
    cb.step = nested_single_step;
    frl_space *obs, *act;
    make_spaces(&obs, &act);
    ck_assert_int_eq(frl_env_create_callbacks(&n.self, rt, &cb, &n, obs, act, NULL), FRL_OK);
    float o[2], r;
    uint8_t t, u;
    ck_assert_int_eq(frl_env_reset(n.self, 1, o), FRL_OK);
    int32_t one = 1;
    ck_assert_int_eq(frl_env_step(n.self, &one, o, &r, &t, &u), FRL_OK);
    ck_assert_int_eq(n.nested, FRL_ERR_STATE);
    ck_assert_int_eq(n.seen_before, 1);
    ck_assert_int_eq(n.seen_after, 1);
    ck_assert(o[0] == 1.0f); /* the outer step moved by its own action */
    frl_env_destroy(n.self);
    frl_space_destroy(obs);
    frl_space_destroy(act);
    frl_runtime_destroy(rt);
}
END_TEST

/* A reset callback that steps its own env: refused as a nested call, where it once read
 * "call frl_env_reset first" (first reset) or "the episode has ended" (a later one). */
typedef struct nested_reset {
    counter c;
    frl_env *self;
    frl_status got;
    char msg[256];
    char env_msg[256]; /* frl_env_last_error after the refusal */
    frl_status got_reset;
    char reset_msg[256]; /* a nested frl_env_reset's (it named frl_vec_env_reset) */
} nested_reset;

static int nested_reset_reset(void *user, uint64_t seed, float *obs)
{
    nested_reset *n = user;
    int32_t a = 0;
    float o[2], r;
    uint8_t t, u;
    n->got = frl_env_step(n->self, &a, o, &r, &t, &u);
    snprintf(n->msg, sizeof n->msg, "%s", frl_last_error());
    snprintf(n->env_msg, sizeof n->env_msg, "%s", frl_env_last_error(n->self));
    n->got_reset = frl_env_reset(n->self, 3, o);
    snprintf(n->reset_msg, sizeof n->reset_msg, "%s", frl_last_error());
    return counter_reset(&n->c, seed, obs);
}

START_TEST(step_from_reset_callback_is_named_nested)
{
    frl_runtime *rt = frl_test_runtime(1);
    nested_reset n;
    memset(&n, 0, sizeof n);
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = nested_reset_reset;
    cb.step = counter_step; /* n.c is first: n is a counter */
    frl_space *obs, *act;
    make_spaces(&obs, &act);
    ck_assert_int_eq(frl_env_create_callbacks(&n.self, rt, &cb, &n, obs, act, NULL), FRL_OK);
    float o[2];
    for (int k = 0; k < 2; k++) { /* the first reset, then one of a started env */
        n.got = FRL_OK;
        ck_assert_int_eq(frl_env_reset(n.self, 1, o), FRL_OK);
        ck_assert_int_eq(n.got, FRL_ERR_STATE);
        ck_assert_msg(strstr(n.msg, "own callbacks"), "%s", n.msg);
        /* the env's own buffer too, as every frl_env_step error writes it */
        ck_assert_msg(strstr(n.env_msg, "own callbacks"), "%s", n.env_msg);
        ck_assert_int_eq(n.got_reset, FRL_ERR_STATE);
        ck_assert_msg(!strncmp(n.reset_msg, "frl_env_reset: ", 15), "%s", n.reset_msg);
    }
    frl_env_destroy(n.self);
    frl_space_destroy(obs);
    frl_space_destroy(act);
    frl_runtime_destroy(rt);
}
END_TEST

/* A single host env with a state (its position) whose reset callback reads its own
 * env's state: the call is refused, since mid-reset the library still holds the ended
 * episode's elapsed count, and the state would pair the new episode's position with it. */
typedef struct nested_state {
    counter c;
    frl_env *self;
    frl_status got;
    double state[2];
    char msg[256]; /* the nested call's message */
} nested_state;

static int nested_state_reset(void *user, uint64_t seed, float *obs)
{
    nested_state *n = user;
    int rc = counter_reset(&n->c, seed, obs);
    if (n->self) {
        n->got = frl_env_get_state(n->self, n->state, 2);
        snprintf(n->msg, sizeof n->msg, "%s", frl_last_error());
    }
    return rc;
}

static int nested_state_get(void *user, double *state)
{
    state[0] = ((nested_state *)user)->c.pos;
    return 0;
}

static int nested_state_set(void *user, const double *state)
{
    ((nested_state *)user)->c.pos = (float)state[0];
    return 0;
}

/* A single host env of one state value (its position) on n's callbacks. */
static frl_env *state_env(frl_runtime *rt, nested_state *n)
{
    memset(n, 0, sizeof *n);
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = nested_state_reset;
    cb.step = counter_step;
    cb.state_size = 1;
    cb.get_state = nested_state_get;
    cb.set_state = nested_state_set;
    frl_space *obs, *act;
    make_spaces(&obs, &act);
    frl_env *e = NULL;
    ck_assert_int_eq(frl_env_create_callbacks(&e, rt, &cb, &n->c, obs, act, NULL), FRL_OK);
    frl_space_destroy(obs); /* copied by the env */
    frl_space_destroy(act);
    return e;
}

START_TEST(nested_get_state_refused)
{
    frl_runtime *rt = frl_test_runtime(1);
    nested_state n;
    frl_env *e = state_env(rt, &n);
    float o[2], r;
    uint8_t t, u;
    int32_t one = 1;
    ck_assert_int_eq(frl_env_reset(e, 1, o), FRL_OK);
    for (int k = 0; k < 2; k++)
        ck_assert_int_eq(frl_env_step(e, &one, o, &r, &t, &u), FRL_OK);
    n.self = e;
    n.got = FRL_OK;
    ck_assert_int_eq(frl_env_reset(e, 2, o), FRL_OK);
    ck_assert_int_eq(n.got, FRL_ERR_STATE);
    /* named as the call the host made, not the vec env's inside it */
    ck_assert_msg(!strncmp(n.msg, "frl_env_get_state: ", 19), "%s", n.msg);
    n.self = NULL;
    double s[2];
    ck_assert_int_eq(frl_env_get_state(e, s, 2), FRL_OK); /* outside a callback: fine */
    ck_assert(s[0] == 0.0 && s[1] == 0.0);
    frl_env_destroy(e);
    frl_runtime_destroy(rt);
}
END_TEST

/* A host env's set_state writes no observation, so obs got the last row: after a step
 * whose observation was refused (NaN), a set_state that succeeded handed back NaN. It
 * is refused (nothing changes) unless obs is NULL; the next step then observes. */
START_TEST(set_state_after_a_refused_observation)
{
    frl_runtime *rt = frl_test_runtime(1);
    nested_state n;
    frl_env *e = state_env(rt, &n);
    float o[2], r;
    uint8_t t, u;
    int32_t one = 1;
    ck_assert_int_eq(frl_env_reset(e, 1, o), FRL_OK);
    n.c.poison = NAN;
    ck_assert_int_eq(frl_env_step(e, &one, o, &r, &t, &u), FRL_ERR_NONFINITE);
    n.c.poison = 0.0f;
    double s[2] = {2.0, 0.0};
    n.c.pos = 7.0f;
    ck_assert_int_eq(frl_env_set_state(e, s, 2, o), FRL_ERR_STATE);
    ck_assert_msg(strstr(frl_env_last_error(e), "no observation to give"), "%s",
                  frl_env_last_error(e));
    ck_assert(n.c.pos == 7.0f); /* the host's set_state was not called */
    ck_assert_int_eq(frl_env_set_state(e, s, 2, NULL), FRL_OK);
    ck_assert(n.c.pos == 2.0f);
    /* a set_state without obs restores no observation either (a second one gave NaN) */
    ck_assert_int_eq(frl_env_set_state(e, s, 2, o), FRL_ERR_STATE);
    ck_assert_int_eq(frl_env_step(e, &one, o, &r, &t, &u), FRL_OK);
    ck_assert(o[0] == 3.0f && isfinite(o[1]));
    frl_env_destroy(e);
    frl_runtime_destroy(rt);
}
END_TEST

/* A batch world: every agent's position; reset_mask and seeds per agent. */
typedef struct world {
    float pos[16];
    int step_calls, reset_calls;
    uint64_t last_seed[16];
    int fail_steps; /* the next steps to fail (returning 6) */
} world;

static int world_reset(void *user, int32_t n, const uint64_t *seeds, float *obs)
{
    world *w = user;
    w->reset_calls++;
    for (int32_t i = 0; i < n; i++) {
        w->pos[i] = 0;
        w->last_seed[i] = seeds[i];
        obs[i] = 0;
    }
    return 0;
}

static int world_step(void *user, int32_t n, const void *actions, const uint8_t *mask,
                      const uint64_t *seeds, float *obs, float *rewards, uint8_t *term,
                      uint8_t *trunc)
{
    world *w = user;
    const int32_t *a = actions;
    w->step_calls++;
    for (int32_t i = 0; w->fail_steps > 0 && i < n; i++)
        if (mask[i])
            w->last_seed[i] = seeds[i];
    if (w->fail_steps > 0 && w->fail_steps--)
        return 6;
    for (int32_t i = 0; i < n; i++) {
        if (mask[i]) {
            w->pos[i] = 0;
            w->last_seed[i] = seeds[i];
        } else {
            w->pos[i] += (float)a[i];
        }
        obs[i] = w->pos[i];
        rewards[i] = mask[i] ? 123.0f : -1.0f; /* a reset agent's reward is ignored */
        term[i] = w->pos[i] >= (float)(1 + i % 3);
        trunc[i] = 0;
    }
    return 0;
}

/* A vec env of n agents of world w (reset and step callbacks), its spaces in *obs, *act
 * for the caller to destroy. */
static frl_vec_env *make_world(frl_runtime *rt, world *w, int32_t n, frl_space **obs,
                               frl_space **act)
{
    memset(w, 0, sizeof *w);
    frl_batch_env_callbacks cb;
    frl_batch_env_callbacks_init(&cb);
    cb.reset = world_reset;
    cb.step = world_step;
    int64_t one = 1;
    ck_assert_int_eq(frl_space_create_box(obs, NULL, 1, &one, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(act, NULL, 2), FRL_OK);
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create_batch(&v, rt, &cb, w, n, *obs, *act, NULL), FRL_OK);
    return v;
}

START_TEST(batch_world_autoreset)
{
    frl_runtime *rt = frl_test_runtime(2);
    world w;
    frl_space *obs, *act;
    frl_vec_env *v = make_world(rt, &w, 16, &obs, &act);
    ck_assert_int_eq(frl_vec_env_reset(v, 5), FRL_OK);
    ck_assert_int_eq(w.reset_calls, 1);
    int32_t *a = frl_vec_env_actions(v);
    int finished = 0;
    for (int s = 0; s < 12; s++) {
        for (int i = 0; i < 16; i++)
            a[i] = 1;
        ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
        for (int i = 0; i < 16; i++) {
            if (frl_vec_env_reset_steps(v)[i])
                ck_assert(frl_vec_env_rewards(v)[i] == 0.0f);
            else
                ck_assert(frl_vec_env_rewards(v)[i] == -1.0f);
            if (frl_vec_env_terminated(v)[i]) {
                finished++;
                ck_assert_int_eq(frl_vec_env_episode_lengths(v)[i], 1 + i % 3);
            }
        }
    }
    ck_assert_int_eq(w.step_calls, 12);
    ck_assert_int_eq(frl_vec_env_total_episodes(v), finished);
    ck_assert_int_gt(finished, 16);
    ck_assert(w.last_seed[0] != w.last_seed[1]);
    frl_vec_env_destroy(v);
    frl_space_destroy(obs);
    frl_space_destroy(act);
    frl_runtime_destroy(rt);
}
END_TEST

/* A failed autoreset is tried again on the next step with the seed it was given, so
 * the env's episodes are those of a run where it did not fail: per-env callbacks (a
 * failed reset callback) and a batch world (a failed step that was to reset agents). */
START_TEST(failed_autoreset_keeps_its_seed)
{
    frl_runtime *rt = frl_test_runtime(1);
    counter c[2], twin[2];
    memset(c, 0, sizeof c);
    memset(twin, 0, sizeof twin);
    frl_vec_env *v = make_counters(rt, c, 2), *u = make_counters(rt, twin, 2);
    ck_assert_int_eq(frl_vec_env_reset(v, 9), FRL_OK);
    ck_assert_int_eq(frl_vec_env_reset(u, 9), FRL_OK);
    for (int s = 0; s < 4; s++) { /* 3 steps end the episodes; the 4th resets */
        if (s == 3)
            c[0].fail_resets = 1;
        for (int i = 0; i < 2; i++)
            ((int32_t *)frl_vec_env_actions(v))[i] = ((int32_t *)frl_vec_env_actions(u))[i] = 1;
        ck_assert_int_eq(frl_vec_env_step(u), FRL_OK);
        ck_assert_int_eq(frl_vec_env_step(v), s == 3 ? FRL_ERR_CALLBACK : FRL_OK);
    }
    uint64_t failed = c[0].last_seed;
    ck_assert(failed == twin[0].last_seed);
    ck_assert_int_eq(frl_vec_env_step(v), FRL_OK); /* env 0 resets now */
    ck_assert_int_eq(frl_vec_env_reset_steps(v)[0], 1);
    ck_assert_msg(c[0].last_seed == failed, "the retried reset got another seed");
    ck_assert(frl_vec_env_observations(v)[1] == frl_vec_env_observations(u)[1]);
    frl_vec_env_destroy(v);
    frl_vec_env_destroy(u);

    world w;
    frl_space *obs, *act;
    v = make_world(rt, &w, 2, &obs, &act);
    ck_assert_int_eq(frl_vec_env_reset(v, 5), FRL_OK);
    ((int32_t *)frl_vec_env_actions(v))[0] = 1;
    ck_assert_int_eq(frl_vec_env_step(v), FRL_OK); /* agent 0's episode ends (pos 1) */
    ck_assert_int_eq(frl_vec_env_terminated(v)[0], 1);
    w.fail_steps = 1;
    ck_assert_int_eq(frl_vec_env_step(v), FRL_ERR_CALLBACK);
    failed = w.last_seed[0];
    ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
    ck_assert_int_eq(frl_vec_env_reset_steps(v)[0], 1);
    ck_assert_msg(w.last_seed[0] == failed, "the batch step's retry got other seeds");
    frl_vec_env_destroy(v);
    frl_space_destroy(obs);
    frl_space_destroy(act);
    frl_runtime_destroy(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("callbacks");
    TCase *tc = tcase_create("callbacks");
    tcase_add_test(tc, per_env_autoreset);
    tcase_add_test(tc, huge_returns_saturate);
    tcase_add_test(tc, host_seeds_independent_of_threads);
    tcase_add_test(tc, nonfinite_obs_detected);
    tcase_add_test(tc, set_state_after_a_refused_observation);
    tcase_add_test(tc, batch_world_autoreset);
    tcase_add_test(tc, failed_autoreset_keeps_its_seed);
    tcase_add_test(tc, nested_calls_from_callbacks_refused);
    tcase_add_test(tc, nested_single_env_step_leaves_action);
    tcase_add_test(tc, step_from_reset_callback_is_named_nested);
    tcase_add_test(tc, nested_get_state_refused);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
