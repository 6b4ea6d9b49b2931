/* The acting weights' double buffer: a reader never sees a torn vector. The publisher
 * fills every parameter and the normaliser with the version number before each
 * publish; readers pin, check that every value equals the pinned version, and unpin,
 * while versions are published as fast as possible. A stage hook stands in for the
 * device copy (lib/sampler/async.c): it copies each buffer into a "device" buffer of
 * the same index, and readers of a staged buffer check that copy too, so a stage into a
 * buffer someone holds, or a staged flag on the wrong buffer, fails. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rl/weights.h"
#include "test_util.h"

/* TSan checks every access of fewer versions (each some 10x slower there): 1,000 */
enum { VERSIONS = FRL_TEST_TSAN ? 1000 : 3000, READERS = 2 };

enum { FAIL_EVERY = 7 }; /* the stage hook fails on every 7th version */

typedef struct ctx {
    frl_weights w;
    frl_policy *p;
    float *dev[2];        /* the stand-in device copies */
    atomic_int stop;
    atomic_long torn, reads, went_back, staged_reads, stage_calls;
} ctx;

static long torn_values(const float *x, size_t n, float want)
{
    long bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += x[i] != want;
    return bad;
}

static frl_status stage(void *arg, const frl_weights_view *v, int32_t *staged, char *err)
{
    ctx *c = arg;
    atomic_fetch_add(&c->stage_calls, 1);
    *staged = 0;
    if (v->version % FAIL_EVERY == 0)
        return frl_fail(err, FRL_ERR_DEVICE, "stage of version %llu refused",
                        (unsigned long long)v->version);
    memcpy(c->dev[v->index], v->params, sizeof(float) * c->w.num_params);
    *staged = 1;
    return FRL_OK;
}

static void *reader(void *arg)
{
    ctx *c = arg;
    uint64_t last = 0;
    while (!atomic_load(&c->stop)) {
        frl_weights_view v;
        frl_weights_pin(&c->w, c->p, &v);
        float want = (float)v.version;
        atomic_fetch_add(&c->torn, torn_values(v.params, c->w.num_params, want));
        if (v.staged) {
            atomic_fetch_add(&c->torn, torn_values(c->dev[v.index], c->w.num_params, want));
            atomic_fetch_add(&c->staged_reads, 1);
        }
        for (int32_t i = 0; i < v.norm.width; i++)
            if (v.norm.use_mean[i] != want || v.norm.use_inv_std[i] != want)
                atomic_fetch_add(&c->torn, 1);
        if (v.version < last)
            atomic_fetch_add(&c->went_back, 1);
        last = v.version;
        frl_weights_unpin(&c->w, &v);
        atomic_fetch_add(&c->reads, 1);
    }
    return NULL;
}

static void stamp(frl_policy *p, uint64_t version)
{
    p->version = version;
    for (size_t i = 0; i < p->num_params; i++)
        p->params[i] = (float)version;
    for (int32_t i = 0; i < p->obs_w; i++)
        p->norm.use_mean[i] = p->norm.use_inv_std[i] = (float)version;
}

static void run_readers(int with_stage)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_parse(cfg, "policy.hidden=64,64 policy.obs_norm=true"), FRL_OK);
    frl_space *os, *as;
    int64_t shape = 8;
    float lo[8], hi[8];
    for (int i = 0; i < 8; i++) {
        lo[i] = -1;
        hi[i] = 1;
    }
    ck_assert_int_eq(frl_space_create_box(&os, NULL, 1, &shape, lo, hi), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 3), FRL_OK);
    static ctx c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(frl_policy_create(&c.p, rt, cfg, os, as), FRL_OK);
    stamp(c.p, 0);
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_weights_init(&c.w, &rt->alloc, c.p, err), FRL_OK);
    for (int i = 0; i < 2; i++)
        ck_assert_ptr_nonnull(c.dev[i] = calloc(c.w.num_params, sizeof(float)));
    pthread_t th[READERS];
    for (int i = 0; i < READERS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, reader, &c), 0);
    long refused = 0;
    for (uint64_t v = 1; v <= VERSIONS; v++) {
        stamp(c.p, v);
        frl_status st = frl_weights_publish(&c.w, c.p, with_stage ? stage : NULL, &c, err);
        ck_assert_int_eq(st, with_stage && v % FAIL_EVERY == 0 ? FRL_ERR_DEVICE : FRL_OK);
        refused += st != FRL_OK;
    }
    atomic_store(&c.stop, 1);
    for (int i = 0; i < READERS; i++)
        pthread_join(th[i], NULL);
    printf("%s: %d versions published (%ld stages refused), %ld pinned reads (%ld staged), "
           "%ld torn\n", with_stage ? "with a stage hook" : "host only", VERSIONS, refused,
           atomic_load(&c.reads), atomic_load(&c.staged_reads), atomic_load(&c.torn));
    ck_assert_int_eq(atomic_load(&c.torn), 0);
    ck_assert_int_eq(atomic_load(&c.went_back), 0);
    ck_assert_int_gt(atomic_load(&c.reads), 0);
    ck_assert_int_eq(atomic_load(&c.stage_calls), with_stage ? VERSIONS : 0);
    if (!with_stage)
        ck_assert_int_eq(atomic_load(&c.staged_reads), 0);
    /* The last version published is the one a new reader gets, staged unless its stage
     * was refused (a refused stage still publishes the host copy). */
    frl_weights_view v;
    frl_weights_pin(&c.w, c.p, &v);
    ck_assert_uint_eq(v.version, VERSIONS);
    ck_assert_int_eq(v.staged, with_stage && VERSIONS % FAIL_EVERY != 0);
    frl_weights_unpin(&c.w, &v);
    if (with_stage) {
        /* A refused stage: published, not staged. */
        stamp(c.p, FAIL_EVERY * 1000);
        ck_assert_int_eq(frl_weights_publish(&c.w, c.p, stage, &c, err), FRL_ERR_DEVICE);
        ck_assert_ptr_nonnull(strstr(err, "refused"));
        frl_weights_pin(&c.w, c.p, &v);
        ck_assert_uint_eq(v.version, FAIL_EVERY * 1000);
        ck_assert_int_eq(v.staged, 0);
        frl_weights_unpin(&c.w, &v);
    }
    for (int i = 0; i < 2; i++)
        free(c.dev[i]);
    frl_weights_free(&c.w);
    frl_policy_destroy(c.p);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}

START_TEST(readers_never_see_a_torn_vector)
{
    run_readers(0);
}
END_TEST

START_TEST(staged_copies_follow_their_buffers)
{
    run_readers(1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("weights");
    TCase *tc = tcase_create("weights");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, readers_never_see_a_torn_vector);
    tcase_add_test(tc, staged_copies_follow_their_buffers);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
