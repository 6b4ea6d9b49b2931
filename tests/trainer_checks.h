/* What the off-policy learners' tests (test_dqn.c, test_r2d2.c) share: trainers of a
 * built-in made from settings text, a refusal checked for its status and words, a
 * metrics callback that stops a run at a step count (as Ctrl-C does), checkpoints
 * rewritten with one section changed or dropped, and the priorities of a run resumed
 * under another train.per_alpha. Header-only: each test is one file. */
#ifndef FRL_TESTS_TRAINER_CHECKS_H
#define FRL_TESTS_TRAINER_CHECKS_H

#include <math.h>
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

/* The checkpoint at src written to dst with text section `name` holding `text`. */
static inline void rewrite_bytes(const char *src, const char *dst, const char *name,
                                 const char *text, uint64_t count)
{
    char err[FRL_ERRMSG_SIZE];
    frl_container *c = NULL;
    ck_assert_msg(frl_container_read(&c, src, NULL, err) == FRL_OK, "%s", err);
    frl_section s[64];
    int32_t n = frl_container_count(c), found = 0;
    ck_assert_int_le(n, 64);
    for (int32_t i = 0; i < n; i++) {
        s[i] = *frl_container_at(c, i);
        if (strcmp(s[i].name, name) == 0) {
            ck_assert(s[i].dtype == FRL_DTYPE_TEXT);
            s[i].data = text;
            s[i].count = count;
            found = 1;
        }
    }
    ck_assert_msg(found, "no section %s", name);
    ck_assert_msg(frl_container_write(dst, NULL, s, n, err) == FRL_OK, "%s", err);
    frl_container_free(c);
}

static inline void rewrite_text(const char *src, const char *dst, const char *name,
                                const char *text)
{
    rewrite_bytes(src, dst, name, text, strlen(text));
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

/* The checkpoint at src written to dst without section `name`: a file from before it. */
static inline void drop_section(const char *src, const char *dst, const char *name)
{
    char err[FRL_ERRMSG_SIZE];
    frl_container *c = NULL;
    ck_assert_msg(frl_container_read(&c, src, NULL, err) == FRL_OK, "%s", err);
    frl_section s[64];
    int32_t n = 0;
    ck_assert_int_le(frl_container_count(c), 64);
    for (int32_t i = 0; i < frl_container_count(c); i++)
        if (strcmp(frl_container_at(c, i)->name, name) != 0)
            s[n++] = *frl_container_at(c, i);
    ck_assert_int_eq(n, frl_container_count(c) - 1);
    ck_assert_msg(frl_container_write(dst, NULL, s, n, err) == FRL_OK, "%s", err);
    frl_container_free(c);
}

/* Section `name` (F64) of the checkpoint at path, copied into a new array of *n. */
static inline double *read_f64(const char *path, const char *name, int64_t *n)
{
    char err[FRL_ERRMSG_SIZE];
    frl_container *c = NULL;
    ck_assert_msg(frl_container_read(&c, path, NULL, err) == FRL_OK, "%s", err);
    const frl_section *s = frl_container_find(c, name, FRL_DTYPE_F64, -1, err);
    ck_assert_msg(s != NULL, "%s", err);
    double *v = malloc(8 * (size_t)s->count);
    memcpy(v, s->data, 8 * (size_t)s->count);
    *n = (int64_t)s->count;
    frl_container_free(c);
    return v;
}

static inline void alpha_zero(void *data, uint64_t count, void *user)
{
    (void)count, (void)user;
    ((double *)data)[0] = 0;
}

/* The checkpoint at path loaded with train.per_alpha=`to` and saved again at dst (its
 * priorities section as the load made them). */
static inline void load_with_alpha(frl_runtime *rt, const char *path, double to,
                                   const char *dst)
{
    char text[64];
    snprintf(text, sizeof text, "train.per_alpha=%.17g", to);
    frl_config *over = frl_test_settings(text);
    frl_trainer *t;
    ck_assert_msg(frl_trainer_load(&t, rt, path, over) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(frl_trainer_save(t, dst), FRL_OK);
    frl_trainer_destroy(t);
    frl_config_destroy(over);
}

/* A run saved with priorities p^from (section `prio`, its exponent in `alpha`) and
 * resumed with train.per_alpha=`to` holds p^to, the same p (they held p^from before,
 * sampled as if p^to); a file without `alpha` (from before it) is read with its saved
 * settings' exponent, to the same bits; and one whose `alpha` says 0 (leaves that keep
 * no priority) is refused, naming both and the way on. path's run was saved with
 * from != to; out and bad are scratch files. */
static inline void check_alpha_remade(frl_runtime *rt, const char *path, const char *prio,
                                      const char *alpha, double from, double to,
                                      const char *out, const char *bad)
{
    int64_t n, m, live = 0;
    double *was = read_f64(path, prio, &n);
    load_with_alpha(rt, path, to, out);
    double *now = read_f64(out, prio, &m);
    ck_assert_int_eq(n, m);
    for (int64_t i = 0; i < n; i++) {
        ck_assert_msg((was[i] > 0) == (now[i] > 0), "%s[%lld]", prio, (long long)i);
        if (!(was[i] > 0))
            continue;
        double lp = log(was[i]) / from; /* log p, which both must give */
        ck_assert_msg(fabs(log(now[i]) / to - lp) <= 1e-9 * (1 + fabs(lp)),
                      "%s[%lld]: %.17g under %g, %.17g under %g", prio, (long long)i, was[i],
                      from, now[i], to);
        live += fabs(lp) > 1e-3;
    }
    ck_assert_int_gt(live, 0); /* priorities other than 1, which every alpha leaves */
    drop_section(path, bad, alpha);
    load_with_alpha(rt, bad, to, bad);
    double *old = read_f64(bad, prio, &m);
    ck_assert_mem_eq(old, now, 8 * (size_t)n);
    free(old);
    free(now);
    free(was);
    rewrite_section(path, bad, alpha, alpha_zero, NULL);
    frl_trainer *t = (frl_trainer *)1;
    ck_assert_int_eq(frl_trainer_load(&t, rt, bad, NULL), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(frl_last_error(), "train.per_alpha=0") &&
                      strstr(frl_last_error(), "train.save_replay=false"),
                  "%s", frl_last_error());
    unlink(out);
    unlink(bad);
}

#endif
