/* The asynchronous sampler under faults injected at link time (-Wl,--wrap, on the
 * static library): a learner that fails an update; and the action draws it makes
 * (frl_policy_head_act's streams and counters), watched the same way; and a ring whose
 * mutex cannot be initialised.
 *
 * Build: see tests/meson.build (async_faults). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "algo/ppo.h"
#include "core/error.h"
#include "test_util.h"
#include "test_watchdog.h"

/* ---- the wrappers ----------------------------------------------------------------- */

frl_status __real_frl_ppo_values(frl_ppo *l, int32_t slot, char *err);
frl_status __wrap_frl_ppo_values(frl_ppo *l, int32_t slot, char *err);

static atomic_int values_to_failure; /* the n-th value pass from now fails; 0: none */

frl_status __wrap_frl_ppo_values(frl_ppo *l, int32_t slot, char *err)
{
    if (atomic_load(&values_to_failure) > 0 && atomic_fetch_sub(&values_to_failure, 1) == 1)
        return frl_fail(err, FRL_ERR_INTERNAL, "injected learner failure");
    return __real_frl_ppo_values(l, slot, err);
}

double __real_frl_policy_head_act(const frl_policy *p, const float *params, const float *out,
                                  int deterministic, uint64_t stream, uint64_t counter,
                                  void *action_row);
double __wrap_frl_policy_head_act(const frl_policy *p, const float *params, const float *out,
                                  int deterministic, uint64_t stream, uint64_t counter,
                                  void *action_row);

enum { STREAMS = 8, COUNTERS = 4096 };
/* While `drawing` points at it: the (stream, counter) pairs drawn from. */
static _Atomic(uint8_t (*)[COUNTERS]) drawing;
static atomic_int beyond; /* draws outside the table */

double __wrap_frl_policy_head_act(const frl_policy *p, const float *params, const float *out,
                                  int deterministic, uint64_t stream, uint64_t counter,
                                  void *action_row)
{
    uint8_t(*seen)[COUNTERS] = atomic_load(&drawing);
    if (seen && stream < STREAMS && counter < COUNTERS)
        seen[stream][counter] = 1;
    else if (seen)
        atomic_store(&beyond, 1);
    return __real_frl_policy_head_act(p, params, out, deterministic, stream, counter,
                                      action_row);
}

int __real_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a);
int __wrap_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a);

static atomic_int mutexes_fail; /* every pthread_mutex_init fails while set */

int __wrap_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
    return atomic_load(&mutexes_fail) ? EAGAIN : __real_pthread_mutex_init(m, a);
}

/* ---- helpers ---------------------------------------------------------------------- */

static frl_runtime *runtime(int threads)
{
    frl_config *cfg = frl_test_settings("runtime.seed=3");
    frl_runtime *rt;
    ck_assert_int_eq(frl_config_set_int(cfg, "runtime.threads", threads), FRL_OK);
    ck_assert_int_eq(frl_runtime_create(&rt, cfg, NULL, NULL), FRL_OK);
    frl_config_destroy(cfg);
    return rt;
}

static frl_trainer *small_trainer(frl_runtime *rt)
{
    frl_config *cfg = frl_test_settings("sampler.mode=async train.num_envs=8 "
                                        "train.rollout=16 policy.hidden=16");
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    frl_config_destroy(cfg);
    return t;
}

/* ---- tests ------------------------------------------------------------------------ */

/* A failed update ends the call with its error; the rollout it took counts toward the
 * budget (its steps were taken, as a dropped one's), so the next call ends at its own
 * budget instead of waiting for a rollout that no longer exists. */
START_TEST(failed_update_counts_its_rollout)
{
    frl_runtime *rt = runtime(2);
    frl_trainer *t = small_trainer(rt);
    int64_t per = 8 * 16;
    atomic_store(&values_to_failure, 10);
    frl_status st = frl_trainer_train(t, per * 20);
    atomic_store(&values_to_failure, 0);
    ck_assert_int_eq(st, FRL_ERR_INTERNAL);
    ck_assert_ptr_nonnull(strstr(frl_trainer_last_error(t), "injected learner failure"));
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 9);
    st = frl_test_train_watched(t, per * 20, 30);
    ck_assert_msg(st == FRL_OK, "%s", frl_trainer_last_error(t));
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 19);
    /* and on to a larger total */
    ck_assert_int_eq(frl_test_train_watched(t, per * 25, 30), FRL_OK);
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 24);
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
}
END_TEST

/* A checkpoint saved after a failed update keeps its rollout in the budget: the loaded
 * run ends at the same update as the trainer that was never saved (it trained one
 * rollout more, the lost one counted nowhere). */
START_TEST(failed_update_survives_a_checkpoint)
{
    frl_runtime *rt = runtime(2);
    char path[] = "/tmp/frl_async_lost_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    frl_trainer *t = small_trainer(rt), *b;
    int64_t per = 8 * 16;
    atomic_store(&values_to_failure, 4);
    frl_status st = frl_trainer_train(t, per * 10);
    atomic_store(&values_to_failure, 0);
    ck_assert_int_eq(st, FRL_ERR_INTERNAL);
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 3);
    ck_assert_msg(frl_trainer_save(t, path) == FRL_OK, "%s", frl_last_error());
    ck_assert_msg(frl_trainer_load(&b, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    st = frl_test_train_watched(b, per * 10, 30);
    ck_assert_msg(st == FRL_OK, "%s", frl_trainer_last_error(b));
    ck_assert_int_eq(frl_trainer_metrics(b)->update, 9);
    ck_assert_int_eq(frl_test_train_watched(t, per * 10, 30), FRL_OK);
    ck_assert_int_eq(frl_trainer_metrics(t)->update, 9);
    frl_trainer_destroy(b);
    frl_trainer_destroy(t);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* A loaded trainer's envs draw their actions from counters the saved run never used:
 * the sampling counter goes on from the checkpoint (it started again at 0, so the
 * continued run repeated the saved run's first draws). */
START_TEST(loaded_run_draws_afresh)
{
    frl_runtime *rt = runtime(2);
    char path[] = "/tmp/frl_async_draws_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    static uint8_t before[STREAMS][COUNTERS], after[STREAMS][COUNTERS];
    frl_trainer *t = small_trainer(rt);
    atomic_store(&drawing, before);
    ck_assert_int_eq(frl_trainer_train(t, 8 * 16 * 6), FRL_OK);
    atomic_store(&drawing, NULL);
    ck_assert_msg(frl_trainer_save(t, path) == FRL_OK, "%s", frl_last_error());
    frl_trainer_destroy(t);
    ck_assert_msg(frl_trainer_load(&t, rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    atomic_store(&drawing, after);
    ck_assert_int_eq(frl_trainer_train(t, 8 * 16 * 10), FRL_OK);
    atomic_store(&drawing, NULL);
    ck_assert_int_eq(atomic_load(&beyond), 0);
    int drawn = 0;
    for (int s = 0; s < STREAMS; s++)
        for (int c = 0; c < COUNTERS; c++) {
            ck_assert_msg(!(before[s][c] && after[s][c]), "env %d drew counter %d again after "
                          "the load", s, c);
            drawn += after[s][c];
        }
    ck_assert_int_ge(drawn, 8 * 16 * 4);
    frl_trainer_destroy(t);
    unlink(path);
    frl_runtime_destroy(rt);
}
END_TEST

/* frl_ring_create reports a mutex it cannot initialise (it returned a ring whose lock
 * was never initialised). */
START_TEST(ring_without_a_mutex)
{
    frl_runtime *rt = runtime(1);
    frl_space *obs, *act;
    int64_t shape = 2;
    ck_assert_int_eq(frl_space_create_box(&obs, NULL, 1, &shape, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&act, NULL, 2), FRL_OK);
    frl_ring *r = (frl_ring *)1;
    atomic_store(&mutexes_fail, 1);
    frl_status st = frl_ring_create(&r, rt, 2, 4, 3, obs, act);
    atomic_store(&mutexes_fail, 0);
    ck_assert_int_eq(st, FRL_ERR_THREAD);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "mutex"));
    ck_assert_int_eq(frl_ring_create(&r, rt, 2, 4, 3, obs, act), FRL_OK);
    frl_ring_destroy(r);
    frl_space_destroy(obs);
    frl_space_destroy(act);
    frl_runtime_destroy(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("async_faults");
    TCase *tc = tcase_create("async_faults");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, failed_update_counts_its_rollout);
    tcase_add_test(tc, failed_update_survives_a_checkpoint);
    tcase_add_test(tc, loaded_run_draws_afresh);
    tcase_add_test(tc, ring_without_a_mutex);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
