/* frl_runtime: the thread pool's fork-join, nesting, errors, logging and parking. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fastrl.h"
#include "test_util.h"

static frl_runtime *make_runtime(int threads, int spin_us)
{
    frl_config *cfg;
    frl_runtime *rt = NULL;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "runtime.threads", threads), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "runtime.spin_us", spin_us), FRL_OK);
    ck_assert_int_eq(frl_runtime_create(&rt, cfg, NULL, NULL), FRL_OK);
    frl_config_destroy(cfg);
    return rt;
}

typedef struct counts {
    atomic_int hits[1000];
    atomic_int threads_seen[64];
} counts;

static int count_task(void *user, int32_t task, int32_t thread)
{
    counts *c = user;
    atomic_fetch_add(&c->hits[task], 1);
    atomic_fetch_add(&c->threads_seen[thread], 1);
    return 0;
}

/* Every task index runs exactly once per job, over many back-to-back jobs of
 * varying size, with spinning workers (50 us) and with always-parking ones (0). Under
 * a sanitizer (ten times slower under TSan: 96 s) 400 jobs per setting instead of
 * 2,000, which still reach every job size up to 1,000 tasks. */
START_TEST(every_task_once)
{
    static const int thread_counts[] = {1, 2, 3, 7};
    const int jobs = FRL_TEST_SHORT ? 400 : 2000;
    if (FRL_TEST_SHORT)
        printf("every_task_once: short build (a sanitizer or a second build), %d jobs per "
               "setting (2000 in the whole build)\n", jobs);
    for (int spin = 0; spin < 2; spin++) {
        for (int t = 0; t < 4; t++) {
            frl_runtime *rt = make_runtime(thread_counts[t], spin ? 50 : 0);
            ck_assert_int_eq(frl_runtime_threads(rt), thread_counts[t]);
            counts *c = calloc(1, sizeof *c);
            int expected = 0;
            for (int job = 0; job < jobs; job++) {
                int n = 1 + (job * 37) % 1000;
                if (n > 1000)
                    n = 1000;
                ck_assert_int_eq(frl_runtime_parallel_for(rt, n, count_task, c), FRL_OK);
                for (int i = 0; i < n; i++)
                    ck_assert_int_eq(atomic_exchange(&c->hits[i], 0), 1);
                expected += n;
            }
            int total = 0;
            for (int i = 0; i < 64; i++)
                total += atomic_load(&c->threads_seen[i]);
            ck_assert_int_eq(total, expected);
            for (int i = thread_counts[t]; i < 64; i++)
                ck_assert_int_eq(atomic_load(&c->threads_seen[i]), 0);
            free(c);
            frl_runtime_destroy(rt);
        }
    }
}
END_TEST

static int failing_task(void *user, int32_t task, int32_t thread)
{
    (void)thread;
    atomic_fetch_add((atomic_int *)user, 1);
    return task == 5 ? 42 : 0;
}

START_TEST(failure_reaches_caller)
{
    frl_runtime *rt = make_runtime(3, 50);
    atomic_int ran = 0;
    ck_assert_int_eq(frl_runtime_parallel_for(rt, 20, failing_task, &ran), FRL_ERR_CALLBACK);
    ck_assert_int_eq(atomic_load(&ran), 20); /* all tasks still run */
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "task 5 returned 42"));
    ck_assert_ptr_nonnull(strstr(frl_runtime_last_error(rt), "task 5"));
    ck_assert_int_eq(frl_runtime_parallel_for(rt, 0, failing_task, &ran), FRL_OK);
    ck_assert_int_eq(frl_runtime_parallel_for(rt, -1, failing_task, &ran), FRL_ERR_RANGE);
    ck_assert_int_eq(frl_runtime_parallel_for(rt, 4, NULL, &ran), FRL_ERR_NULL);
    frl_runtime_destroy(rt);
}
END_TEST

typedef struct nest {
    frl_runtime *rt;
    atomic_int inner;
    atomic_int wrong_thread;
} nest;

typedef struct inner_arg {
    nest *n;
    int32_t outer_thread;
} inner_arg;

/* A nested job's tasks run on the outer task's thread and must get its index. */
static int nested_inner_task(void *user, int32_t task, int32_t thread)
{
    (void)task;
    inner_arg *a = user;
    atomic_fetch_add(&a->n->inner, 1);
    if (thread != a->outer_thread)
        atomic_fetch_add(&a->n->wrong_thread, 1);
    return 0;
}

static int inner_task(void *user, int32_t task, int32_t thread)
{
    (void)task;
    (void)thread;
    atomic_fetch_add((atomic_int *)user, 1);
    return 0;
}

static int outer_task(void *user, int32_t task, int32_t thread)
{
    (void)task;
    inner_arg a = {user, thread};
    return frl_runtime_parallel_for(a.n->rt, 10, nested_inner_task, &a) != FRL_OK;
}

START_TEST(nested_call_runs_inline)
{
    nest n;
    n.rt = make_runtime(2, 50);
    atomic_init(&n.inner, 0);
    atomic_init(&n.wrong_thread, 0);
    ck_assert_int_eq(frl_runtime_parallel_for(n.rt, 8, outer_task, &n), FRL_OK);
    ck_assert_int_eq(atomic_load(&n.inner), 80);
    ck_assert_int_eq(atomic_load(&n.wrong_thread), 0);
    frl_runtime_destroy(n.rt);
}
END_TEST

static void collect_log(void *user, frl_log_level level, const char *msg)
{
    if (level == FRL_LOG_INFO && strstr(msg, "threads"))
        (*(int *)user)++;
}

START_TEST(logger_and_defaults)
{
    frl_logger l;
    int seen = 0;
    frl_logger_init(&l);
    l.log = collect_log;
    l.user = &seen;
    frl_runtime *rt = NULL;
    ck_assert_int_eq(frl_runtime_create(&rt, NULL, NULL, &l), FRL_OK);
    ck_assert_int_eq(seen, 1);
    ck_assert_int_ge(frl_runtime_threads(rt), 1);
    frl_runtime_destroy(rt);
    l.max_level = FRL_LOG_ERROR; /* INFO is above the threshold: not formatted */
    ck_assert_int_eq(frl_runtime_create(&rt, NULL, NULL, &l), FRL_OK);
    ck_assert_int_eq(seen, 1);
    frl_runtime_destroy(rt);
}
END_TEST

/* A logger that calls the library: the first message makes a trainer, which logs its
 * ring from inside the logger. The runtime's log lock deadlocked on it. */
typedef struct calling_logger {
    frl_runtime *rt;
    int depth, max_depth, made;
} calling_logger;

static void call_from_log(void *user, frl_log_level level, const char *msg)
{
    (void)level;
    (void)msg;
    calling_logger *c = user;
    c->depth++;
    c->max_depth = c->depth > c->max_depth ? c->depth : c->max_depth;
    if (c->rt && !c->made++) {
        frl_trainer *t = NULL;
        ck_assert_int_eq(frl_trainer_create(&t, c->rt, "CartPole-v1", NULL), FRL_OK);
        frl_trainer_destroy(t);
    }
    c->depth--;
}

START_TEST(logger_may_call_the_library)
{
    alarm(120); /* a deadlock ends the test (SIGALRM) rather than hanging the suite */
    calling_logger c = {0};
    frl_logger l;
    frl_logger_init(&l);
    l.log = call_from_log;
    l.user = &c;
    ck_assert_int_eq(frl_runtime_create(&c.rt, NULL, NULL, &l), FRL_OK);
    frl_trainer *t = NULL;
    ck_assert_int_eq(frl_trainer_create(&t, c.rt, "CartPole-v1", NULL), FRL_OK);
    ck_assert_int_eq(c.made, 2); /* the outer trainer's ring line, then the nested one's */
    ck_assert_int_eq(c.max_depth, 2); /* the nested trainer's message came inside */
    frl_trainer_destroy(t);
    frl_runtime_destroy(c.rt);
    alarm(0);
}
END_TEST

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Idle workers park: after a burst of jobs, 300 ms of idling costs the process far
 * less CPU than one spinning worker would burn (300 ms). */
START_TEST(idle_workers_park)
{
    frl_runtime *rt = make_runtime(3, 50);
    atomic_int ran = 0;
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(frl_runtime_parallel_for(rt, 16, inner_task, &ran), FRL_OK);
    double c0 = cpu_seconds();
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    double used = cpu_seconds() - c0;
    ck_assert_msg(used < 0.1, "idle pool used %.3f s of CPU in 0.3 s", used);
    frl_runtime_destroy(rt);
}
END_TEST

/* Failing calls on several threads at once each leave a whole message in the runtime's
 * buffer: inline jobs from two host threads (not serialised) and a nested job failing on
 * every worker. The buffer used to be written unguarded, a data race (torn text here,
 * a report under TSan). */
static int fail_with(void *user, int32_t task, int32_t thread)
{
    (void)task;
    (void)thread;
    return *(const int *)user;
}

typedef struct failer {
    frl_runtime *rt;
    int value;
    int calls;
} failer;

static void *fail_many(void *arg)
{
    failer *f = arg;
    for (int i = 0; i < f->calls; i++)
        if (frl_runtime_parallel_for(f->rt, 1, fail_with, &f->value) != FRL_ERR_CALLBACK)
            return arg;
    return NULL;
}

static int nested_fail(void *user, int32_t task, int32_t thread)
{
    (void)thread;
    static const int values[2] = {1, 1234567890};
    failer *f = user;
    for (int i = 0; i < 50; i++)
        frl_runtime_parallel_for(f->rt, 2, fail_with, (void *)&values[task % 2]);
    return 0;
}

static void assert_whole_message(const char *msg)
{
    ck_assert_msg(strcmp(msg, "frl_runtime_parallel_for: task 0 returned 1") == 0 ||
                      strcmp(msg, "frl_runtime_parallel_for: task 0 returned 1234567890") == 0,
                  "torn message: \"%s\"", msg);
}

START_TEST(concurrent_failures_keep_whole_message)
{
    const int calls = FRL_TEST_SHORT ? 2000 : 20000;
    frl_runtime *rt = make_runtime(1, 0);
    failer f[2] = {{rt, 1, calls}, {rt, 1234567890, calls}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, fail_many, &f[i]), 0);
    for (int i = 0; i < 2; i++) {
        void *bad = &f[i];
        ck_assert_int_eq(pthread_join(th[i], &bad), 0);
        ck_assert_ptr_null(bad);
    }
    assert_whole_message(frl_runtime_last_error(rt));
    frl_runtime_destroy(rt);

    failer n = {make_runtime(4, 50), 0, 0};
    ck_assert_int_eq(frl_runtime_parallel_for(n.rt, 8, nested_fail, &n), FRL_OK);
    assert_whole_message(frl_runtime_last_error(n.rt));
    frl_runtime_destroy(n.rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime");
    TCase *tc = tcase_create("pool");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_task_once);
    tcase_add_test(tc, failure_reaches_caller);
    tcase_add_test(tc, nested_call_runs_inline);
    tcase_add_test(tc, logger_and_defaults);
    tcase_add_test(tc, logger_may_call_the_library);
    tcase_add_test(tc, idle_workers_park);
    tcase_add_test(tc, concurrent_failures_keep_whole_message);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
