/* Internal view of frl_runtime, shared by every object that belongs to one. */
#ifndef FRL_CORE_RUNTIME_H
#define FRL_CORE_RUNTIME_H

#include <pthread.h>

#include "core/alloc.h"
#include "core/device.h"
#include "core/error.h"
#include "core/pool.h"

struct frl_runtime {
    frl_allocator alloc;
    frl_logger logger;
    pthread_mutex_t log_lock;
    frl_pool *pool;
    int32_t threads;
    uint64_t seed;
    frl_device device;
    /* Guards err: frl_runtime_parallel_for may fail on several threads at once (calls
     * that run inline are not serialised, nested calls fail on workers). */
    pthread_mutex_t err_lock;
    char err[FRL_ERRMSG_SIZE];
};

void frl_log(frl_runtime *rt, frl_log_level level, const char *fmt, ...) FRL_PRINTF(3, 4);

#endif
