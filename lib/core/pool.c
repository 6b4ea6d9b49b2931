#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/pool.h"

typedef struct worker {
    struct frl_pool *pool;
    int32_t index;
    pthread_t thread;
} worker;

struct frl_pool {
    frl_allocator alloc;
    int32_t threads;
    int32_t started;         /* workers actually running */
    int64_t spin_ns;
    worker *workers;
    pthread_mutex_t run_lock; /* serialises callers */
    pthread_mutex_t lock;     /* guards parking */
    pthread_cond_t wake;      /* workers park here */
    pthread_cond_t done;      /* the caller parks here */
    _Atomic uint64_t generation;
    _Atomic int32_t sleeping;        /* workers parked or about to park */
    _Atomic int32_t caller_sleeping;
    /* 64 bits: every thread adds one past the last task, which near INT32_MAX tasks
     * wrapped a 32-bit counter to negative task indices */
    _Atomic int64_t next_task;
    _Atomic int32_t finished;        /* workers done with the current generation */
    _Atomic int first_result;
    _Atomic int32_t failed_task;
    _Atomic int stop;
    /* The job: written by the caller before the generation is bumped (release),
     * read by workers after they see the new generation (acquire). */
    frl_pool_fn fn;
    void *user;
    int32_t num_tasks;
    /* The side job (frl_pool_help), all under side_lock. */
    pthread_mutex_t side_lock;
    pthread_cond_t side_done;
    void (*side_wake)(void *);
    void *side_wake_user;
    frl_pool_fn side_fn;
    void *side_user;
    int32_t side_tasks, side_next, side_running;
    int side_active, side_result;
    int32_t side_failed;
};

/* The pool whose task this thread is running, to run nested calls inline. */
static _Thread_local frl_pool *tls_current_pool;
/* This thread's index in tls_current_pool, passed to the tasks of nested jobs. */
static _Thread_local int32_t tls_thread_index;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void run_tasks(frl_pool *p, int32_t thread)
{
    frl_pool_fn fn = p->fn;
    void *user = p->user;
    int32_t n = p->num_tasks;
    for (;;) {
        int64_t t = atomic_fetch_add_explicit(&p->next_task, 1, memory_order_relaxed);
        if (t >= n)
            break;
        int r = fn(user, (int32_t)t, thread);
        int zero = 0;
        if (r != 0 && atomic_compare_exchange_strong(&p->first_result, &zero, r))
            atomic_store(&p->failed_task, (int32_t)t);
    }
}

/* Spin until the generation moves past seen, then park. Returns the new generation. */
static uint64_t wait_for_job(frl_pool *p, uint64_t seen)
{
    int64_t deadline = now_ns() + p->spin_ns;
    for (uint32_t i = 1;; i++) {
        uint64_t g = atomic_load_explicit(&p->generation, memory_order_acquire);
        if (g != seen)
            return g;
        if ((i & 63) == 0 && now_ns() > deadline)
            break;
        cpu_relax();
    }
    pthread_mutex_lock(&p->lock);
    atomic_fetch_add(&p->sleeping, 1);
    uint64_t g;
    while ((g = atomic_load(&p->generation)) == seen)
        pthread_cond_wait(&p->wake, &p->lock);
    atomic_fetch_sub(&p->sleeping, 1);
    pthread_mutex_unlock(&p->lock);
    return g;
}

static void worker_finished(frl_pool *p)
{
    if (atomic_fetch_add(&p->finished, 1) + 1 == p->started &&
        atomic_load(&p->caller_sleeping)) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->lock);
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    frl_pool *p = w->pool;
    tls_current_pool = p;
    tls_thread_index = w->index;
    uint64_t seen = 0;
    for (;;) {
        seen = wait_for_job(p, seen);
        if (atomic_load(&p->stop))
            break;
        run_tasks(p, w->index);
        worker_finished(p);
    }
    return NULL;
}

/* Publish a new generation and wake parked workers. The seq_cst store and load pair
 * with the worker's increment of sleeping and load of generation (Dekker), so either
 * the worker sees the new generation or we see it sleeping and signal it. */
static void publish(frl_pool *p)
{
    atomic_fetch_add(&p->generation, 1);
    if (atomic_load(&p->sleeping) > 0) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
    }
}

static void wait_for_workers(frl_pool *p)
{
    int64_t deadline = now_ns() + p->spin_ns;
    for (uint32_t i = 1; atomic_load(&p->finished) != p->started; i++) {
        if ((i & 63) == 0 && now_ns() > deadline) {
            pthread_mutex_lock(&p->lock);
            atomic_store(&p->caller_sleeping, 1);
            while (atomic_load(&p->finished) != p->started)
                pthread_cond_wait(&p->done, &p->lock);
            atomic_store(&p->caller_sleeping, 0);
            pthread_mutex_unlock(&p->lock);
            return;
        }
        cpu_relax();
    }
}

static int run_inline(int32_t num_tasks, frl_pool_fn fn, void *user, int32_t thread,
                      int32_t *failed_task)
{
    int first = 0;
    for (int32_t t = 0; t < num_tasks; t++) {
        int r = fn(user, t, thread);
        if (r != 0 && first == 0) {
            first = r;
            *failed_task = t;
        }
    }
    return first;
}

/* Take and run side-job tasks until none is left, or `limit` of them; called and
 * returns with side_lock held. */
static void side_tasks(frl_pool *p, int32_t thread, int32_t limit)
{
    for (int32_t done = 0; done < limit && p->side_next < p->side_tasks; done++) {
        int32_t t = p->side_next++;
        frl_pool_fn fn = p->side_fn;
        void *user = p->side_user;
        pthread_mutex_unlock(&p->side_lock);
        int r = fn(user, t, thread);
        pthread_mutex_lock(&p->side_lock);
        if (r != 0 && p->side_result == 0) {
            p->side_result = r;
            p->side_failed = t;
        }
    }
}

int frl_pool_help(frl_pool *p, int32_t thread)
{
    pthread_mutex_lock(&p->side_lock);
    int ran = p->side_active && p->side_next < p->side_tasks;
    if (ran) {
        p->side_running++;
        side_tasks(p, thread, 1);
        if (--p->side_running == 0)
            pthread_cond_signal(&p->side_done);
    }
    pthread_mutex_unlock(&p->side_lock);
    return ran;
}

int frl_pool_side_pending(frl_pool *p)
{
    pthread_mutex_lock(&p->side_lock);
    int pending = p->side_active && p->side_next < p->side_tasks;
    pthread_mutex_unlock(&p->side_lock);
    return pending;
}

static void set_side_wake(frl_pool *p, void (*wake)(void *user), void *user)
{
    pthread_mutex_lock(&p->side_lock);
    p->side_wake = wake;
    p->side_wake_user = user;
    pthread_mutex_unlock(&p->side_lock);
}

int frl_pool_in_task(const frl_pool *p)
{
    return tls_current_pool == p;
}

/* A nested call published as the side job: returns 1 with its result in *result, or 0
 * if it cannot be (none wanted, or one is published already) and the caller runs it
 * inline. Not a sentinel in the result: tasks may return any non-zero value, negative
 * frl_status codes included, and a "not run" read from one ran every task twice. */
static int run_side(frl_pool *p, int32_t num_tasks, frl_pool_fn fn, void *user, int32_t thread,
                    int32_t *failed_task, int *result)
{
    pthread_mutex_lock(&p->side_lock);
    if (!p->side_wake || p->side_active || num_tasks <= 1) {
        pthread_mutex_unlock(&p->side_lock);
        return 0;
    }
    p->side_fn = fn;
    p->side_user = user;
    p->side_tasks = num_tasks;
    p->side_next = 0;
    p->side_running = 1;
    p->side_result = 0;
    p->side_active = 1;
    void (*wake)(void *) = p->side_wake;
    void *wake_user = p->side_wake_user;
    pthread_mutex_unlock(&p->side_lock);
    wake(wake_user);
    pthread_mutex_lock(&p->side_lock);
    side_tasks(p, thread, INT32_MAX);
    p->side_running--;
    while (p->side_running > 0)
        pthread_cond_wait(&p->side_done, &p->side_lock);
    p->side_active = 0;
    *result = p->side_result;
    if (*result != 0)
        *failed_task = p->side_failed;
    pthread_mutex_unlock(&p->side_lock);
    return 1;
}

/* A job from outside the pool's tasks: the pool's threads run it, wake set (or not) for
 * its length. */
static int run_job(frl_pool *p, int32_t num_tasks, frl_pool_fn fn, void *user,
                   int32_t *failed_task, void (*wake)(void *), void *wake_user)
{
    if (p->started == 0 || num_tasks <= 1)
        return run_inline(num_tasks, fn, user, 0, failed_task);
    pthread_mutex_lock(&p->run_lock);
    if (wake)
        set_side_wake(p, wake, wake_user);
    p->fn = fn;
    p->user = user;
    p->num_tasks = num_tasks;
    atomic_store_explicit(&p->next_task, 0, memory_order_relaxed);
    atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
    atomic_store_explicit(&p->first_result, 0, memory_order_relaxed);
    publish(p);
    frl_pool *outer = tls_current_pool;
    int32_t outer_index = tls_thread_index;
    tls_current_pool = p;
    tls_thread_index = 0;
    run_tasks(p, 0);
    tls_current_pool = outer;
    tls_thread_index = outer_index;
    wait_for_workers(p);
    int r = atomic_load(&p->first_result);
    if (r != 0)
        *failed_task = atomic_load(&p->failed_task);
    if (wake)
        set_side_wake(p, NULL, NULL);
    pthread_mutex_unlock(&p->run_lock);
    return r;
}

int frl_pool_run(frl_pool *p, int32_t num_tasks, frl_pool_fn fn, void *user,
                 int32_t *failed_task)
{
    int32_t dummy;
    failed_task = failed_task ? failed_task : &dummy;
    *failed_task = -1;
    if (tls_current_pool == p) {
        int r = 0;
        if (run_side(p, num_tasks, fn, user, tls_thread_index, failed_task, &r))
            return r;
        return run_inline(num_tasks, fn, user, tls_thread_index, failed_task);
    }
    return run_job(p, num_tasks, fn, user, failed_task, NULL, NULL);
}

int frl_pool_run_long(frl_pool *p, int32_t num_tasks, frl_pool_fn fn, void *user,
                      void (*wake)(void *user), void *wake_user)
{
    int32_t failed;
    return run_job(p, num_tasks, fn, user, &failed, wake, wake_user);
}

static void stop_workers(frl_pool *p)
{
    atomic_store(&p->stop, 1);
    publish(p);
    for (int32_t i = 0; i < p->started; i++)
        pthread_join(p->workers[i].thread, NULL);
    p->started = 0;
}

static int init_sync(frl_pool *p)
{
    if (pthread_mutex_init(&p->side_lock, NULL) != 0)
        return -1;
    if (pthread_cond_init(&p->side_done, NULL) != 0)
        goto fail_side;
    if (pthread_mutex_init(&p->run_lock, NULL) != 0)
        goto fail_run;
    if (pthread_mutex_init(&p->lock, NULL) != 0)
        goto fail_lock;
    if (pthread_cond_init(&p->wake, NULL) != 0)
        goto fail_wake;
    if (pthread_cond_init(&p->done, NULL) != 0)
        goto fail_done;
    return 0;
fail_done:
    pthread_cond_destroy(&p->wake);
fail_wake:
    pthread_mutex_destroy(&p->lock);
fail_lock:
    pthread_mutex_destroy(&p->run_lock);
fail_run:
    pthread_cond_destroy(&p->side_done);
fail_side:
    pthread_mutex_destroy(&p->side_lock);
    return -1;
}

static void destroy_sync(frl_pool *p)
{
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->run_lock);
    pthread_cond_destroy(&p->side_done);
    pthread_mutex_destroy(&p->side_lock);
}

static int start_workers(frl_pool *p, char *err)
{
    for (int32_t i = 0; i < p->threads - 1; i++) {
        worker *w = &p->workers[i];
        w->pool = p;
        w->index = i + 1;
        int rc = pthread_create(&w->thread, NULL, worker_main, w);
        if (rc != 0) {
            snprintf(err, FRL_ERRMSG_SIZE, "thread pool: starting worker %d of %d failed: %s",
                     (int)i + 1, (int)p->threads - 1, strerror(rc));
            return -1;
        }
        p->started = i + 1;
    }
    return 0;
}

frl_status frl_pool_create(frl_pool **out, const frl_allocator *alloc, int32_t threads,
                           int64_t spin_ns, char *err)
{
    *out = NULL;
    frl_pool *p = frl_alloc(alloc, sizeof *p, FRL_CACHE_LINE);
    if (!p) {
        snprintf(err, FRL_ERRMSG_SIZE, "thread pool: out of memory");
        return FRL_ERR_NOMEM;
    }
    p->alloc = *alloc;
    p->threads = threads;
    p->spin_ns = spin_ns;
    size_t wbytes = sizeof(worker) * (size_t)(threads > 1 ? threads - 1 : 1);
    p->workers = frl_alloc(alloc, wbytes, FRL_CACHE_LINE);
    if (!p->workers) {
        snprintf(err, FRL_ERRMSG_SIZE, "thread pool: out of memory for %d workers", threads - 1);
        frl_free(alloc, p);
        return FRL_ERR_NOMEM;
    }
    if (init_sync(p) != 0) {
        snprintf(err, FRL_ERRMSG_SIZE, "thread pool: cannot initialise mutexes");
        frl_free(alloc, p->workers);
        frl_free(alloc, p);
        return FRL_ERR_THREAD;
    }
    if (start_workers(p, err) != 0) {
        frl_pool_destroy(p);
        return FRL_ERR_THREAD;
    }
    *out = p;
    return FRL_OK;
}

void frl_pool_destroy(frl_pool *p)
{
    if (!p)
        return;
    stop_workers(p);
    destroy_sync(p);
    frl_allocator a = p->alloc;
    frl_free(&a, p->workers);
    frl_free(&a, p);
}

int32_t frl_pool_threads(const frl_pool *p)
{
    return p->threads;
}

int64_t frl_pool_spin_ns(const frl_pool *p)
{
    return p->spin_ns;
}
