/* A watchdog for tests of calls that could run forever: it requests a stop after a
 * number of seconds unless disarmed, so such a test fails instead of hanging. */
#ifndef FRL_TEST_WATCHDOG_H
#define FRL_TEST_WATCHDOG_H

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "fastrl.h"

typedef struct frl_test_watchdog {
    frl_trainer *t;
    int seconds;
    atomic_int disarmed;
    pthread_t thread;
} frl_test_watchdog;

static inline void *frl_test_watch(void *arg)
{
    frl_test_watchdog *w = arg;
    for (int i = 0; i < w->seconds * 100 && !atomic_load(&w->disarmed); i++)
        usleep(10000);
    if (!atomic_load(&w->disarmed))
        frl_trainer_request_stop(w->t);
    return NULL;
}

static inline void frl_test_watchdog_start(frl_test_watchdog *w, frl_trainer *t, int seconds)
{
    w->t = t;
    w->seconds = seconds;
    atomic_init(&w->disarmed, 0);
    ck_assert_int_eq(pthread_create(&w->thread, NULL, frl_test_watch, w), 0);
}

static inline void frl_test_watchdog_stop(frl_test_watchdog *w)
{
    atomic_store(&w->disarmed, 1);
    pthread_join(w->thread, NULL);
}

/* train under a watchdog of `seconds` */
static inline frl_status frl_test_train_watched(frl_trainer *t, int64_t total, int seconds)
{
    frl_test_watchdog w;
    frl_test_watchdog_start(&w, t, seconds);
    frl_status st = frl_trainer_train(t, total);
    frl_test_watchdog_stop(&w);
    return st;
}

#endif
