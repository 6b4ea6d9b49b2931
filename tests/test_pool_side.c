/* The pool's side jobs (frl_pool_help): a nested call inside a long job is shared with
 * the job's other threads, every task runs exactly once, the nested call returns only
 * after all of them, failures are reported, and without a wake function nested calls
 * still run inline. */
#include <stdatomic.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/pool.h"
#include "test_util.h"

enum { TASKS = 200, ROUNDS = 300 };

typedef struct shared {
    frl_pool *pool;
    atomic_int runs[TASKS];
    atomic_int by_helper;
    atomic_int done;
    atomic_int wakes;
    int fail_task;
    int fail_value; /* what fail_task returns; 5 unless a test sets it */
} shared;

static int count_task(void *user, int32_t task, int32_t thread)
{
    shared *s = user;
    atomic_fetch_add(&s->runs[task], 1);
    if (thread != 0)
        atomic_fetch_add(&s->by_helper, 1);
    /* A little work, so helpers have time to join. */
    volatile double x = 0;
    for (int i = 0; i < 2000; i++)
        x += i * 1e-9;
    if (x < 0) /* never: keeps the loop */
        return 9;
    return task == s->fail_task ? s->fail_value : 0;
}

static void wake(void *user)
{
    atomic_fetch_add(&((shared *)user)->wakes, 1);
}

/* Task 0 (on the caller's thread) makes nested calls; the others help until it is done. */
static int long_task(void *user, int32_t task, int32_t thread)
{
    shared *s = user;
    if (thread != 0) {
        while (!atomic_load(&s->done))
            frl_pool_help(s->pool, thread);
        return 0;
    }
    (void)task;
    int rc = 0;
    for (int r = 0; r < ROUNDS; r++) {
        int32_t failed = -1;
        int got = frl_pool_run(s->pool, TASKS, count_task, s, &failed);
        if (s->fail_task >= 0 && (got != s->fail_value || failed != s->fail_task))
            rc = 1;
        if (s->fail_task < 0 && got != 0)
            rc = 1;
    }
    atomic_store(&s->done, 1);
    return rc;
}

static void run_long(shared *s, int with_wake)
{
    char err[FRL_ERRMSG_SIZE];
    frl_allocator a; /* internal API: takes a filled table, as frl_allocator_copy leaves it */
    frl_allocator_default(&a);
    ck_assert_int_eq(frl_pool_create(&s->pool, &a, 2, 50000, err), FRL_OK);
    /* Two tasks: whichever thread runs task index 0 or 1, thread 0 makes the calls. */
    if (with_wake)
        ck_assert_int_eq(frl_pool_run_long(s->pool, 2, long_task, s, wake, s), 0);
    else
        ck_assert_int_eq(frl_pool_run(s->pool, 2, long_task, s, NULL), 0);
    frl_pool_destroy(s->pool);
}

START_TEST(side_job_tasks_run_once_and_are_shared)
{
    static shared s;
    memset(&s, 0, sizeof s);
    s.fail_task = -1;
    s.fail_value = 5;
    run_long(&s, 1);
    for (int t = 0; t < TASKS; t++)
        ck_assert_int_eq(atomic_load(&s.runs[t]), ROUNDS);
    ck_assert_int_eq(atomic_load(&s.wakes), ROUNDS);
    ck_assert_int_gt(atomic_load(&s.by_helper), 0);
}
END_TEST

START_TEST(side_job_failure_is_reported)
{
    static shared s;
    memset(&s, 0, sizeof s);
    s.fail_task = 17;
    s.fail_value = 5;
    run_long(&s, 1);
    for (int t = 0; t < TASKS; t++)
        ck_assert_int_eq(atomic_load(&s.runs[t]), ROUNDS);
}
END_TEST

/* A negative result (the library's own tasks return frl_status codes) is a failure like
 * any other: the side job reported it as "not published", and the nested call then ran
 * every task a second time inline. */
START_TEST(side_job_negative_failure_runs_tasks_once)
{
    static shared s;
    memset(&s, 0, sizeof s);
    s.fail_task = 17;
    s.fail_value = -9;
    run_long(&s, 1);
    for (int t = 0; t < TASKS; t++)
        ck_assert_int_eq(atomic_load(&s.runs[t]), ROUNDS);
}
END_TEST

START_TEST(no_wake_function_runs_inline)
{
    static shared s;
    memset(&s, 0, sizeof s);
    s.fail_task = -1;
    s.fail_value = 5;
    run_long(&s, 0);
    for (int t = 0; t < TASKS; t++)
        ck_assert_int_eq(atomic_load(&s.runs[t]), ROUNDS);
    ck_assert_int_eq(atomic_load(&s.by_helper), 0);
    ck_assert_int_eq(atomic_load(&s.wakes), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pool_side");
    TCase *tc = tcase_create("pool_side");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, side_job_tasks_run_once_and_are_shared);
    tcase_add_test(tc, side_job_failure_is_reported);
    tcase_add_test(tc, side_job_negative_failure_runs_tasks_once);
    tcase_add_test(tc, no_wake_function_runs_inline);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
