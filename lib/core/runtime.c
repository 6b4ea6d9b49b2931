/* frl_runtime: owns the allocator, logger, thread pool and base seed. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/c_numeric.h"
#include "core/config.h"
#include "core/runtime.h"
#include "core/table.h"

static int32_t online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (n > 1024 ? 1024 : (int32_t)n);
}

static frl_status copy_logger(frl_logger *dst, const frl_logger *src)
{
    frl_logger_init(dst);
    if (!src)
        return FRL_OK;
    return frl_copy_table(dst, sizeof *dst, src, offsetof(frl_logger, user) + sizeof(void *),
                          "frl_runtime_create", "logger", "frl_logger_init");
}

void frl_log(frl_runtime *rt, frl_log_level level, const char *fmt, ...)
{
    if (!rt->logger.log || level > rt->logger.max_level)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    frl_vsnprintf_c(msg, sizeof msg, fmt, ap); /* numbers as the library's files write them */
    va_end(ap);
    pthread_mutex_lock(&rt->log_lock);
    rt->logger.log(rt->logger.user, level, msg);
    pthread_mutex_unlock(&rt->log_lock);
}

static frl_status check_tables(const frl_allocator *alloc, const frl_logger *logger,
                               frl_allocator *a, frl_logger *l)
{
    frl_status st = frl_allocator_copy(a, alloc, "frl_runtime_create");
    return st != FRL_OK ? st : copy_logger(l, logger);
}

static frl_status start_pool(frl_runtime *rt, const frl_config *cfg)
{
    char msg[FRL_ERRMSG_SIZE];
    int64_t spin_ns = frl_cfg_int(cfg, FRL_KEY_RUNTIME_SPIN_US) * 1000;
    frl_status st = frl_pool_create(&rt->pool, &rt->alloc, rt->threads, spin_ns, msg);
    return st == FRL_OK ? st : frl_fail(NULL, st, "frl_runtime_create: %s", msg);
}

/* The log lock is recursive: a host logger that calls the library (a trainer made from
 * it logs its ring) takes it again on its own thread, which a plain mutex deadlocked. */
static int init_log_lock(pthread_mutex_t *lock)
{
    pthread_mutexattr_t a;
    if (pthread_mutexattr_init(&a) != 0)
        return -1;
    int rc = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    if (rc == 0)
        rc = pthread_mutex_init(lock, &a);
    pthread_mutexattr_destroy(&a);
    return rc == 0 ? 0 : -1;
}

static int init_locks(frl_runtime *rt)
{
    if (init_log_lock(&rt->log_lock) != 0)
        return -1;
    if (pthread_mutex_init(&rt->err_lock, NULL) != 0) {
        pthread_mutex_destroy(&rt->log_lock);
        return -1;
    }
    return 0;
}

static void destroy_locks(frl_runtime *rt)
{
    pthread_mutex_destroy(&rt->err_lock);
    pthread_mutex_destroy(&rt->log_lock);
}

FRL_API frl_status frl_runtime_create(frl_runtime **out, const frl_config *cfg,
                                      const frl_allocator *alloc, const frl_logger *logger)
{
    if (!out)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_runtime_create: out is NULL");
    *out = NULL;
    frl_allocator a;
    frl_logger l;
    frl_status st = check_tables(alloc, logger, &a, &l);
    if (st != FRL_OK)
        return st;
    frl_runtime *rt = frl_alloc(&a, sizeof *rt, FRL_CACHE_LINE);
    if (!rt)
        return frl_fail(NULL, FRL_ERR_NOMEM, "frl_runtime_create: out of memory");
    rt->alloc = a;
    rt->logger = l;
    int64_t threads = frl_cfg_int(cfg, FRL_KEY_RUNTIME_THREADS);
    rt->threads = threads == 0 ? online_cores() : (int32_t)threads;
    rt->seed = (uint64_t)frl_cfg_int(cfg, FRL_KEY_RUNTIME_SEED);
    if (init_locks(rt) != 0) {
        frl_free(&a, rt);
        return frl_fail(NULL, FRL_ERR_THREAD, "frl_runtime_create: cannot initialise a mutex");
    }
    st = frl_device_open(&rt->device, frl_cfg_choice(cfg, FRL_KEY_RUNTIME_DEVICE),
                         frl_cfg_bool(cfg, FRL_KEY_RUNTIME_TF32), NULL);
    if (st == FRL_OK && (st = start_pool(rt, cfg)) != FRL_OK)
        frl_device_close(&rt->device);
    if (st != FRL_OK) {
        destroy_locks(rt);
        frl_free(&a, rt);
        return st;
    }
    if (rt->device.note[0])
        frl_log(rt, FRL_LOG_INFO, "%s", rt->device.note);
    frl_log(rt, FRL_LOG_INFO, "runtime: %d threads, seed %llu, device %s", (int)rt->threads,
            (unsigned long long)rt->seed, rt->device.name);
    *out = rt;
    return FRL_OK;
}

FRL_API void frl_runtime_destroy(frl_runtime *rt)
{
    if (!rt)
        return;
    frl_pool_destroy(rt->pool);
    frl_device_close(&rt->device);
    destroy_locks(rt);
    frl_allocator a = rt->alloc;
    frl_free(&a, rt);
}

FRL_API const char *frl_runtime_device(const frl_runtime *rt)
{
    return rt ? rt->device.name : "frl_runtime_device: runtime is NULL";
}

FRL_API const char *frl_runtime_device_note(const frl_runtime *rt)
{
    return rt ? rt->device.note : "";
}

FRL_API int32_t frl_runtime_threads(const frl_runtime *rt)
{
    return rt ? rt->threads : 0;
}

FRL_API uint64_t frl_runtime_seed(const frl_runtime *rt)
{
    return rt ? rt->seed : 0;
}

/* Record a failure of frl_runtime_parallel_for on this thread and, under err_lock, in
 * rt->err: the calls it may fail in run concurrently, and two unguarded writes of one
 * buffer are a data race whose text can come out torn. */
static frl_status runtime_fail(frl_runtime *rt, frl_status status, const char *fmt, ...)
    FRL_PRINTF(3, 4);

static frl_status runtime_fail(frl_runtime *rt, frl_status status, const char *fmt, ...)
{
    char msg[FRL_ERRMSG_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&rt->err_lock);
    frl_fail_msg(rt->err, status, msg);
    pthread_mutex_unlock(&rt->err_lock);
    return status;
}

FRL_API frl_status frl_runtime_parallel_for(frl_runtime *rt, int32_t num_tasks,
                                            frl_task_fn fn, void *user)
{
    if (!rt)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_runtime_parallel_for: rt is NULL");
    if (!fn)
        return runtime_fail(rt, FRL_ERR_NULL, "frl_runtime_parallel_for: fn is NULL");
    if (num_tasks < 0)
        return runtime_fail(rt, FRL_ERR_RANGE,
                            "frl_runtime_parallel_for: num_tasks %d is negative", (int)num_tasks);
    int32_t failed = -1;
    int r = frl_pool_run(rt->pool, num_tasks, fn, user, &failed);
    if (r != 0)
        return runtime_fail(rt, FRL_ERR_CALLBACK,
                            "frl_runtime_parallel_for: task %d returned %d", (int)failed, r);
    return FRL_OK;
}

FRL_API const char *frl_runtime_last_error(const frl_runtime *rt)
{
    return rt ? rt->err : "frl_runtime_last_error: rt is NULL";
}
