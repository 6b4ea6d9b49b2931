/* Thread-creation failure in frl_runtime_create.
 *
 * Links the STATIC library with -Wl,--wrap=pthread_create: every pthread_create the
 * library makes goes through __wrap_pthread_create below, which can fail the k-th
 * creation with EAGAIN. With runtime.threads = 4 (3 workers) and k = 1, 2, 3 the create
 * must fail with FRL_ERR_THREAD and a message naming the worker, join the k - 1 workers
 * already started (checked here by counting live threads, and by ASan/TSan at exit),
 * free every allocation, and leave the library working once the failure is disarmed.
 *
 * Build: cc -std=c11 -Iinclude tests/test_thread_fail.c <build>/lib/libfastrl.a
 *        -Wl,--wrap=pthread_create $(pkg-config --cflags --libs check) -pthread -lm */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastrl.h"
#include "test_util.h"

/* ---- the pthread_create wrapper --------------------------------------------------- */

int __real_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                          void *(*start)(void *), void *arg);
int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                          void *(*start)(void *), void *arg);

static atomic_int fail_at;  /* fail the fail_at-th creation since arming; 0: never */
static atomic_int creations; /* pthread_create calls since arming */
static atomic_int started;   /* threads successfully created since arming */
static atomic_int alive;     /* created threads that have not yet returned */

typedef struct trampoline_arg {
    void *(*start)(void *);
    void *arg;
} trampoline_arg;

static void *trampoline(void *p)
{
    trampoline_arg t = *(trampoline_arg *)p;
    free(p);
    void *result = t.start(t.arg);
    atomic_fetch_sub(&alive, 1);
    return result;
}

int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                          void *(*start)(void *), void *arg)
{
    int n = atomic_fetch_add(&creations, 1) + 1;
    int k = atomic_load(&fail_at);
    if (k > 0 && n == k)
        return EAGAIN;
    trampoline_arg *t = malloc(sizeof *t);
    if (!t)
        return EAGAIN;
    t->start = start;
    t->arg = arg;
    /* Counted alive before it exists, so a thread that was never joined shows up. */
    atomic_fetch_add(&alive, 1);
    int rc = __real_pthread_create(thread, attr, trampoline, t);
    if (rc != 0) {
        atomic_fetch_sub(&alive, 1);
        free(t);
        return rc;
    }
    atomic_fetch_add(&started, 1);
    return 0;
}

static void arm(int k)
{
    atomic_store(&fail_at, k);
    atomic_store(&creations, 0);
    atomic_store(&started, 0);
}

/* ---- a counting allocator: a failed create must free what it allocated ------------ */

static atomic_long live_allocs;

static void *c_alloc(void *user, size_t size, size_t alignment)
{
    (void)user;
    void *p = NULL;
    if (posix_memalign(&p, alignment < sizeof(void *) ? sizeof(void *) : alignment,
                       size ? size : 1) != 0)
        return NULL;
    atomic_fetch_add(&live_allocs, 1);
    return p;
}

static void c_free(void *user, void *ptr)
{
    (void)user;
    atomic_fetch_sub(&live_allocs, 1);
    free(ptr);
}

static frl_status make_runtime(int threads, frl_runtime **rt)
{
    frl_config *cfg = NULL;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "runtime.threads", threads), FRL_OK);
    frl_allocator a;
    frl_allocator_init(&a);
    a.alloc = c_alloc;
    a.free = c_free;
    frl_status st = frl_runtime_create(rt, cfg, &a, NULL);
    frl_config_destroy(cfg);
    return st;
}

/* ---- a runtime that works: every task once, on the runtime's threads -------------- */

typedef struct job {
    atomic_int hits[2000];
    atomic_int per_thread[64];
} job;

static int job_task(void *user, int32_t task, int32_t thread)
{
    job *j = user;
    atomic_fetch_add(&j->hits[task], 1);
    if (thread >= 0 && thread < 64)
        atomic_fetch_add(&j->per_thread[thread], 1);
    return 0;
}

static void check_runtime_works(frl_runtime *rt, int threads)
{
    ck_assert_int_eq(frl_runtime_threads(rt), threads);
    job *j = calloc(1, sizeof *j);
    ck_assert_ptr_nonnull(j);
    for (int rep = 0; rep < 50; rep++) {
        ck_assert_int_eq(frl_runtime_parallel_for(rt, 2000, job_task, j), FRL_OK);
        for (int t = 0; t < 2000; t++)
            ck_assert_int_eq(atomic_exchange(&j->hits[t], 0), 1);
    }
    for (int t = threads; t < 64; t++)
        ck_assert_int_eq(atomic_load(&j->per_thread[t]), 0);
    free(j);

    /* And a vec env on it steps. */
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "CartPole-v1", 512, NULL), FRL_OK);
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    for (int s = 0; s < 50; s++) {
        int32_t *a = frl_vec_env_actions(v);
        for (int i = 0; i < 512; i++)
            a[i] = (s + i) & 1;
        ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
    }
    ck_assert_int_eq(frl_vec_env_total_steps(v), 50 * 512);
    frl_vec_env_destroy(v);
}

/* ---- tests ------------------------------------------------------------------------ */

static char junk;

/* runtime.threads = 4 starts 3 workers; fail the k-th (k = 1, 2, 3), many times over so
 * that workers are stopped in every phase (spinning, parking, just started). */
START_TEST(worker_creation_fails)
{
    int k = _i;
    char worker[32];
    snprintf(worker, sizeof worker, "worker %d", k);
    for (int rep = 0; rep < 25; rep++) {
        arm(k);
        frl_runtime *rt = (frl_runtime *)(void *)&junk; /* must be overwritten */
        frl_status st = make_runtime(4, &rt);
        int made = atomic_load(&creations), ok = atomic_load(&started);
        arm(0);
        ck_assert_msg(st == FRL_ERR_THREAD, "k = %d: frl_runtime_create gave %s (%s)", k,
                      frl_status_name(st), frl_last_error());
        ck_assert_ptr_null(rt);
        ck_assert_msg(strstr(frl_last_error(), worker) != NULL,
                      "k = %d: message \"%s\" does not name \"%s\"", k, frl_last_error(), worker);
        ck_assert_msg(strstr(frl_last_error(), "of 3") != NULL,
                      "k = %d: message \"%s\" lacks \"of 3\"", k, frl_last_error());
        /* It stopped at the failure and joined the workers it had started. */
        ck_assert_int_eq(made, k);
        ck_assert_int_eq(ok, k - 1);
        ck_assert_msg(atomic_load(&alive) == 0, "k = %d: %d started workers were not joined", k,
                      atomic_load(&alive));
        ck_assert_msg(atomic_load(&live_allocs) == 0, "k = %d: %ld allocations leaked", k,
                      (long)atomic_load(&live_allocs));
    }

    /* Disarmed, the same process makes a working 4-thread runtime. */
    frl_runtime *rt = NULL;
    ck_assert_int_eq(make_runtime(4, &rt), FRL_OK);
    ck_assert_int_eq(atomic_load(&started), 3);
    check_runtime_works(rt, 4);
    frl_runtime_destroy(rt);
    ck_assert_int_eq(atomic_load(&alive), 0);
    ck_assert_int_eq(atomic_load(&live_allocs), 0);
}
END_TEST

/* Other thread counts: 2 threads (one worker) fails at k = 1; 1 thread starts none, so
 * an armed failure is never reached. */
START_TEST(other_thread_counts)
{
    frl_runtime *rt = NULL;
    arm(1);
    ck_assert_int_eq(make_runtime(2, &rt), FRL_ERR_THREAD);
    ck_assert_ptr_null(rt);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "worker 1 of 1"));
    ck_assert_int_eq(atomic_load(&alive), 0);

    arm(1);
    ck_assert_int_eq(make_runtime(1, &rt), FRL_OK);
    ck_assert_int_eq(atomic_load(&creations), 0);
    arm(0);
    check_runtime_works(rt, 1);
    frl_runtime_destroy(rt);

    /* 8 threads, the last worker fails: 6 started workers are joined. */
    arm(7);
    rt = NULL;
    ck_assert_int_eq(make_runtime(8, &rt), FRL_ERR_THREAD);
    ck_assert_int_eq(atomic_load(&started), 6);
    arm(0);
    ck_assert_ptr_null(rt);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "worker 7 of 7"));
    ck_assert_int_eq(atomic_load(&alive), 0);
    ck_assert_int_eq(atomic_load(&live_allocs), 0);

    ck_assert_int_eq(make_runtime(3, &rt), FRL_OK);
    check_runtime_works(rt, 3);
    frl_runtime_destroy(rt);
    ck_assert_int_eq(atomic_load(&alive), 0);
    ck_assert_int_eq(atomic_load(&live_allocs), 0);
}
END_TEST

/* A failed runtime create leaves other runtimes alone. */
START_TEST(failure_beside_a_live_runtime)
{
    frl_runtime *good = NULL;
    arm(0);
    ck_assert_int_eq(make_runtime(3, &good), FRL_OK);
    int before = atomic_load(&alive);
    ck_assert_int_eq(before, 2);
    frl_runtime *bad = NULL;
    arm(2);
    ck_assert_int_eq(make_runtime(4, &bad), FRL_ERR_THREAD);
    arm(0);
    ck_assert_ptr_null(bad);
    ck_assert_int_eq(atomic_load(&alive), before);
    check_runtime_works(good, 3);
    frl_runtime_destroy(good);
    ck_assert_int_eq(atomic_load(&alive), 0);
    ck_assert_int_eq(atomic_load(&live_allocs), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("thread_fail");
    TCase *tc = tcase_create("thread_fail");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, worker_creation_fails, 1, 4);
    tcase_add_test(tc, other_thread_counts);
    tcase_add_test(tc, failure_beside_a_live_runtime);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
