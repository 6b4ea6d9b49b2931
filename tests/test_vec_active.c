/* frl_vec_env_step_active, the population engine's step of some envs: idle envs are not
 * stepped, their actions not used (so not validated), and not counted; a step that is
 * refused counts nothing; and a nested call from a callback (refused) leaves the running
 * step's idle envs idle. */
#include <check.h>
#include <string.h>

#include "test_util.h"
#include "env/vec_step.h"

enum { N = 4 };

/* A host env counting its steps; env 0's step may call back into its vec env. */
typedef struct host {
    int32_t steps;
    frl_vec_env *self;      /* set: step calls step_active on it */
    const uint8_t *nested;  /* the flags of that nested call */
    frl_status nested_st;
} host;

static int host_reset(void *user, uint64_t seed, float *obs)
{
    (void)user;
    (void)seed;
    obs[0] = 0.0f;
    return 0;
}

static int host_step(void *user, const void *action, float *obs, float *reward,
                     uint8_t *terminated, uint8_t *truncated)
{
    host *h = user;
    (void)action;
    if (h->self)
        h->nested_st = frl_vec_env_step_active(h->self, h->nested);
    h->steps++;
    obs[0] = (float)h->steps;
    *reward = 1.0f;
    *terminated = 0;
    *truncated = 0;
    return 0;
}

static frl_vec_env *make_hosts(frl_runtime *rt, host *h)
{
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = host_reset;
    cb.step = host_step;
    void *users[N];
    for (int32_t i = 0; i < N; i++)
        users[i] = &h[i];
    int64_t one = 1;
    frl_space *os, *as;
    ck_assert_int_eq(frl_space_create_box(&os, NULL, 1, &one, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 2), FRL_OK);
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, N, os, as, NULL), FRL_OK);
    frl_space_destroy(os);
    frl_space_destroy(as);
    return v;
}

START_TEST(refused_steps_count_nothing)
{
    frl_runtime *rt = frl_test_runtime(1);
    host h[N];
    memset(h, 0, sizeof h);
    frl_vec_env *v = make_hosts(rt, h);
    const uint8_t active[N] = {1, 0, 1, 0};
    ck_assert_int_eq(frl_vec_env_step_active(v, active), FRL_ERR_STATE); /* no reset yet */
    ck_assert_int_eq(frl_vec_env_total_steps(v), 0);
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    int32_t *a = frl_vec_env_actions(v);
    a[2] = 7; /* an active env's bad action: refused, nothing stepped or counted */
    ck_assert_int_eq(frl_vec_env_step_active(v, active), FRL_ERR_RANGE);
    ck_assert_int_eq(frl_vec_env_total_steps(v), 0);
    a[2] = 1;
    ck_assert_int_eq(frl_vec_env_step_active(v, active), FRL_OK);
    ck_assert_int_eq(frl_vec_env_total_steps(v), 2);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(idle_actions_are_not_validated)
{
    frl_runtime *rt = frl_test_runtime(1);
    host h[N];
    memset(h, 0, sizeof h);
    frl_vec_env *v = make_hosts(rt, h);
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    int32_t *a = frl_vec_env_actions(v);
    a[1] = -5; /* idle: its action is never used */
    const uint8_t active[N] = {1, 0, 1, 1};
    ck_assert_msg(frl_vec_env_step_active(v, active) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(h[0].steps, 1);
    ck_assert_int_eq(h[1].steps, 0);
    ck_assert_int_eq(frl_vec_env_total_steps(v), 3);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(nested_call_keeps_idle_envs_idle)
{
    frl_runtime *rt = frl_test_runtime(1); /* env 0 steps first, before the idle ones */
    host h[N];
    memset(h, 0, sizeof h);
    frl_vec_env *v = make_hosts(rt, h);
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    const uint8_t all[N] = {1, 1, 1, 1}, first[N] = {1, 0, 0, 0};
    h[0].self = v;
    h[0].nested = all;
    ck_assert_int_eq(frl_vec_env_step_active(v, first), FRL_OK);
    ck_assert_int_eq(h[0].nested_st, FRL_ERR_STATE);
    for (int32_t i = 1; i < N; i++)
        ck_assert_msg(h[i].steps == 0, "idle env %d was stepped", (int)i);
    ck_assert_int_eq(frl_vec_env_total_steps(v), 1);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("vec_active");
    TCase *tc = tcase_create("vec_active");
    tcase_add_test(tc, refused_steps_count_nothing);
    tcase_add_test(tc, idle_actions_are_not_validated);
    tcase_add_test(tc, nested_call_keeps_idle_envs_idle);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
