/* The runtime's thread pool: fork-join over a range of task indices.
 *
 * The caller publishes a job by bumping a generation counter, runs tasks itself,
 * and returns once every worker has acknowledged that generation, so no worker can
 * still be reading the job when the next one is written. Idle workers spin for a
 * short time (the next job of a stepping loop is usually microseconds away) and then
 * park on a condition variable, so an idle pool burns no CPU. */
#ifndef FRL_CORE_POOL_H
#define FRL_CORE_POOL_H

#include <stdint.h>

#include "fastrl.h"

typedef struct frl_pool frl_pool;

/* Returns 0 or a failure code; all tasks run even if one fails. */
typedef int (*frl_pool_fn)(void *user, int32_t task, int32_t thread);

/* threads >= 1 (threads - 1 workers are started). On failure writes a message to err. */
frl_status frl_pool_create(frl_pool **out, const frl_allocator *alloc, int32_t threads,
                           int64_t spin_ns, char *err);
void frl_pool_destroy(frl_pool *pool);
int32_t frl_pool_threads(const frl_pool *pool);
/* How long idle workers spin before they sleep (runtime.spin_us). */
int64_t frl_pool_spin_ns(const frl_pool *pool);

/* Run fn(user, t, thread) for t in [0, num_tasks). Returns 0, or the first non-zero
 * result with its task index in *failed_task. Calls are serialised; a call made from
 * inside a task of the same pool runs inline on that thread. */
int frl_pool_run(frl_pool *pool, int32_t num_tasks, frl_pool_fn fn, void *user,
                 int32_t *failed_task);

/* Helping with nested jobs. A long job whose tasks sit in loops of their own (the async
 * sampler's roles) would otherwise run every nested call inline on its thread.
 * frl_pool_run_long runs such a job with a wake function set for its length: a nested
 * call with several tasks is published as the pool's side job and wake(wake_user) is
 * called; threads of the long job with nothing else to do call frl_pool_help, which
 * runs tasks of the side job with their own thread index. The nested call returns when
 * all its tasks are done, as any frl_pool_run. One side job at a time: a nested call
 * made while one is published runs inline. The wake is set once the job holds the pool
 * (a second caller waiting for it cannot replace the running job's). The long job's
 * tasks must all run at once, so it cannot start from inside a task of the same pool
 * (frl_pool_in_task): it would run inline, one task inside another. */
int frl_pool_run_long(frl_pool *pool, int32_t num_tasks, frl_pool_fn fn, void *user,
                      void (*wake)(void *user), void *wake_user);
/* 1 when the calling thread is running a task of pool's (a nested call's place). */
int frl_pool_in_task(const frl_pool *pool);
/* 1 if a side job has tasks nobody has taken (a hint: frl_pool_help may still find
 * none). */
int frl_pool_side_pending(frl_pool *pool);
/* Run one task of the side job (so a helper soon looks for its own work again);
 * returns 1 if it ran one. */
int frl_pool_help(frl_pool *pool, int32_t thread);

#endif
