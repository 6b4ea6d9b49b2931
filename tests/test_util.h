/* Helpers shared by the Check suites. Header-only: each test is one program. */
#ifndef FRL_TESTS_TEST_UTIL_H
#define FRL_TESTS_TEST_UTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "fastrl.h"
#include "test_sanitizer.h"

/* 1 where learning runs are short: a sanitizer build, or a second build of the same code
 * with another compiler (meson -Dsecond_build=true defines FRL_TEST_SECOND_BUILD: the
 * clang build of scripts/test.sh), whose long runs would repeat the whole build's. */
#if FRL_TEST_SANITIZED || defined(FRL_TEST_SECOND_BUILD)
#define FRL_TEST_SHORT 1
#else
#define FRL_TEST_SHORT 0
#endif

/* An allocator that refuses blocks over *cap bytes (a cap of 0 refuses every block), so
 * a check that must refuse a size before allocating does not depend on the machine's
 * memory, and a call that must allocate nothing can be shown to. *cap may change while
 * the allocator is in use (the caller's own thread only). */
static inline void *frl_test_capped_alloc(void *user, size_t size, size_t alignment)
{
    void *p = NULL;
    size_t a = alignment < sizeof(void *) ? sizeof(void *) : alignment;
    if (size > *(const size_t *)user || posix_memalign(&p, a, size ? size : 1) != 0)
        return NULL;
    return p;
}

static inline void frl_test_capped_free(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

static inline frl_allocator frl_test_capped_allocator(size_t *cap)
{
    frl_allocator al;
    frl_allocator_init(&al);
    al.alloc = frl_test_capped_alloc;
    al.free = frl_test_capped_free;
    al.user = cap;
    return al;
}

/* Run a suite; the exit status of main(): non-zero if any check failed. */
static inline int frl_test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* A runtime with the given thread count and default allocator and logger. */
/* The row widths frl_policy_act requires, taken from the policy's own spaces (for
 * tests whose arrays are made for that policy). */
static inline void frl_test_act_widths(frl_act_args *a, const frl_policy *p)
{
    a->observation_width = frl_space_width(frl_policy_observation_space(p));
    a->action_width = frl_space_width(frl_policy_action_space(p));
}

static inline frl_runtime *frl_test_runtime(int threads)
{
    frl_config *cfg;
    frl_runtime *rt = NULL;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "runtime.threads", threads), FRL_OK);
    ck_assert_int_eq(frl_runtime_create(&rt, cfg, NULL, NULL), FRL_OK);
    frl_config_destroy(cfg);
    return rt;
}

/* A config holding the settings of `text` ("key=value key=value"). */
static inline frl_config *frl_test_settings(const char *text)
{
    frl_config *cfg;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_parse(cfg, text), FRL_OK);
    return cfg;
}

/* Train t in increments of `step` env steps up to `budget`, evaluating its sampling
 * policy on v over `episodes` episodes after each, until the mean return reaches
 * `target`; each evaluation printed under `name`. Returns the last mean. */
static inline double frl_test_train_until(frl_trainer *t, frl_vec_env *v, int32_t episodes,
                                          double target, int64_t step, int64_t budget,
                                          const char *name)
{
    frl_eval_args e;
    frl_eval_args_init(&e);
    e.episodes = episodes;
    e.deterministic = 0;
    double mean = 0;
    for (int64_t steps = 0; steps < budget && mean < target;) {
        steps += step;
        ck_assert_int_eq(frl_trainer_train(t, steps), FRL_OK);
        ck_assert_int_eq(frl_policy_evaluate(frl_trainer_policy(t), v, &e, &mean), FRL_OK);
        printf("%s: %lld steps, mean return %.2f\n", name, (long long)steps, mean);
    }
    return mean;
}

/* After stops, a trainer still trains `steps` more to a budget: at least one more
 * update. (A stop that came after the last call returned is still pending and ends the
 * next call at once, as documented, so one interrupted call is allowed.) */
static inline void frl_test_trains_on(frl_trainer *t, int64_t steps)
{
    int64_t before = frl_trainer_metrics(t)->update;
    int64_t total = frl_trainer_metrics(t)->env_steps + steps;
    frl_status st = frl_trainer_train(t, total);
    if (st == FRL_ERR_INTERRUPTED)
        st = frl_trainer_train(t, total);
    ck_assert_int_eq(st, FRL_OK);
    ck_assert_int_ge(frl_trainer_metrics(t)->update, before + 1);
}

#endif
