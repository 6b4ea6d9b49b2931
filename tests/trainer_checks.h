/* What the off-policy learners' tests (test_dqn.c, test_r2d2.c) share: trainers of a
 * built-in made from settings text, a refusal checked for its status and words, a
 * metrics callback that stops a run at a step count (as Ctrl-C does), and checkpoints
 * rewritten with one section changed. Header-only: each test is one file. */
#ifndef FRL_TESTS_TRAINER_CHECKS_H
#define FRL_TESTS_TRAINER_CHECKS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/container.h"
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

/* A fresh temporary file for a checkpoint (path, made by mkstemp from "/tmp/STEM_XXXXXX")
 * and the name of its forged copy beside it (path.bad). Both are the caller's to unlink. */
static inline void forged_paths(const char *stem, char path[64], char bad[72])
{
    snprintf(path, 64, "/tmp/%s_XXXXXX", stem);
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    snprintf(bad, 72, "%s.bad", path);
}

/* Changes a section's data (count values of its dtype) in place. */
typedef void (*section_edit)(void *data, uint64_t count, void *user);

/* The checkpoint at src written to dst with section `name` changed by edit: every
 * checksum right, the contents not. Any section but a text one. */
static inline void rewrite_section(const char *src, const char *dst, const char *name,
                                   section_edit edit, void *user)
{
    char err[FRL_ERRMSG_SIZE];
    frl_container *c = NULL;
    ck_assert_msg(frl_container_read(&c, src, NULL, err) == FRL_OK, "%s", err);
    frl_section s[64];
    int32_t n = frl_container_count(c);
    ck_assert_int_le(n, 64);
    void *copy = NULL;
    for (int32_t i = 0; i < n; i++) {
        s[i] = *frl_container_at(c, i);
        if (strcmp(s[i].name, name) != 0)
            continue;
        ck_assert(s[i].dtype != FRL_DTYPE_TEXT);
        size_t bytes = s[i].count * (s[i].dtype == FRL_DTYPE_U8    ? 1
                                     : s[i].dtype == FRL_DTYPE_I32 ||
                                             s[i].dtype == FRL_DTYPE_F32
                                         ? 4
                                         : 8);
        copy = malloc(bytes);
        memcpy(copy, s[i].data, bytes);
        edit(copy, s[i].count, user);
        s[i].data = copy;
    }
    ck_assert_msg(copy != NULL, "no section %s", name);
    ck_assert_msg(frl_container_write(dst, NULL, s, n, err) == FRL_OK, "%s", err);
    free(copy);
    frl_container_free(c);
}

#endif
