/* The acting weights' double buffer: a reader never sees a torn vector. The publisher
 * fills every parameter and the normaliser with the version number before each
 * publish; readers pin, check that every value equals the pinned version, and unpin,
 * while versions are published as fast as possible. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "rl/weights.h"
#include "test_util.h"

enum { VERSIONS = 3000, READERS = 2 };

typedef struct ctx {
    frl_weights w;
    frl_policy *p;
    atomic_int stop;
    atomic_long torn, reads, went_back;
} ctx;

static void *reader(void *arg)
{
    ctx *c = arg;
    uint64_t last = 0;
    while (!atomic_load(&c->stop)) {
        frl_weights_view v;
        frl_weights_pin(&c->w, c->p, &v);
        float want = (float)v.version;
        for (size_t i = 0; i < c->w.num_params; i++)
            if (v.params[i] != want)
                atomic_fetch_add(&c->torn, 1);
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

START_TEST(readers_never_see_a_torn_vector)
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
    pthread_t th[READERS];
    for (int i = 0; i < READERS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, reader, &c), 0);
    for (uint64_t v = 1; v <= VERSIONS; v++) {
        stamp(c.p, v);
        frl_weights_publish(&c.w, c.p);
    }
    atomic_store(&c.stop, 1);
    for (int i = 0; i < READERS; i++)
        pthread_join(th[i], NULL);
    printf("%d versions published, %ld pinned reads, %ld torn\n", VERSIONS,
           atomic_load(&c.reads), atomic_load(&c.torn));
    ck_assert_int_eq(atomic_load(&c.torn), 0);
    ck_assert_int_eq(atomic_load(&c.went_back), 0);
    ck_assert_int_gt(atomic_load(&c.reads), 0);
    /* The last version published is the one a new reader gets. */
    frl_weights_view v;
    frl_weights_pin(&c.w, c.p, &v);
    ck_assert_uint_eq(v.version, VERSIONS);
    frl_weights_unpin(&c.w, &v);
    frl_weights_free(&c.w);
    frl_policy_destroy(c.p);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("weights");
    TCase *tc = tcase_create("weights");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, readers_never_see_a_torn_vector);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
