/* What the off-policy learners' tests (test_dqn.c, test_r2d2.c) share: trainers of a
 * built-in made from settings text, a refusal checked for its status and words, and a
 * metrics callback that stops a run at a step count (as Ctrl-C does). Header-only: each
 * test is one file. */
#ifndef FRL_TESTS_TRAINER_CHECKS_H
#define FRL_TESTS_TRAINER_CHECKS_H

#include <string.h>

#include "test_util.h"

static inline frl_status create_builtin(frl_runtime *rt, const char *env, const char *text,
                                        frl_trainer **t)
{
    frl_config *cfg = frl_test_settings(text);
    frl_status st = frl_trainer_create(t, rt, env, cfg);
    frl_config_destroy(cfg);
    return st;
}

/* Creating a trainer of env with text fails with want, creates nothing, and the
 * message holds words. */
static inline void expect_refused(frl_runtime *rt, const char *env, const char *text,
                                  frl_status want, const char *words)
{
    frl_trainer *t = (frl_trainer *)1;
    frl_status st = create_builtin(rt, env, text, &t);
    ck_assert_msg(st == want, "%s with %s: status %d (%s), want %d", env, text, (int)st,
                  frl_last_error(), (int)want);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(frl_last_error(), words), "'%s' does not say '%s'", frl_last_error(),
                  words);
}

typedef struct stopper {
    frl_trainer *t;
    int64_t at;
} stopper;

/* A metrics callback: asks the trainer to stop once env_steps reaches s->at. */
static inline int stop_at(void *user, const frl_metrics *m)
{
    stopper *s = user;
    if (m->env_steps >= s->at)
        frl_trainer_request_stop(s->t);
    return 0;
}

#endif
