/* A logger for tests that keeps the last warning's text and counts warnings; the
 * library may log from pool threads, hence the lock. */
#ifndef FRL_TEST_LOG_CAPTURE_H
#define FRL_TEST_LOG_CAPTURE_H

#include <pthread.h>
#include <stdio.h>

#include "fastrl.h"

typedef struct log_capture {
    pthread_mutex_t lock;
    char text[1024];
    int warnings;
} log_capture;

static inline void capture(void *user, frl_log_level level, const char *message)
{
    log_capture *c = user;
    pthread_mutex_lock(&c->lock);
    if (level == FRL_LOG_WARNING) {
        c->warnings++;
        snprintf(c->text, sizeof c->text, "%s", message);
    }
    pthread_mutex_unlock(&c->lock);
}

/* A one-thread-default runtime whose warnings go to *cap (the logger table is copied by
 * frl_runtime_create); NULL if it cannot be made. */
static inline frl_runtime *capturing_runtime(log_capture *cap)
{
    frl_logger lg;
    frl_logger_init(&lg);
    lg.log = capture;
    lg.user = cap;
    lg.max_level = FRL_LOG_WARNING;
    frl_runtime *rt = NULL;
    return frl_runtime_create(&rt, NULL, NULL, &lg) == FRL_OK ? rt : NULL;
}

#endif
