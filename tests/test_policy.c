/* frl_policy and frl_ring through the public API: acting, streams, workspaces, bad
 * input, saving and loading; ring slot states and sizes. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

typedef struct fix {
    frl_runtime *rt;
    frl_space *os, *as;
    frl_policy *p;
} fix;

static void make(fix *f, int discrete, const char *settings)
{
    f->rt = frl_test_runtime(2);
    int64_t shape = 4, ashape = 2;
    float lo[2] = {-1, -2}, hi[2] = {1, 2};
    ck_assert_int_eq(frl_space_create_box(&f->os, NULL, 1, &shape, NULL, NULL), FRL_OK);
    if (discrete)
        ck_assert_int_eq(frl_space_create_discrete(&f->as, NULL, 3), FRL_OK);
    else
        ck_assert_int_eq(frl_space_create_box(&f->as, NULL, 1, &ashape, lo, hi), FRL_OK);
    frl_config *cfg;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_parse(cfg, settings), FRL_OK);
    ck_assert_int_eq(frl_policy_create(&f->p, f->rt, cfg, f->os, f->as), FRL_OK);
    frl_config_destroy(cfg);
}

static void unmake(fix *f)
{
    frl_policy_destroy(f->p);
    frl_space_destroy(f->os);
    frl_space_destroy(f->as);
    frl_runtime_destroy(f->rt);
}

enum { ROWS = 100 };

static void obs_batch(float *obs, int n)
{
    for (int i = 0; i < n * 4; i++)
        obs[i] = sinf((float)i * 0.37f);
}

static frl_act_args args_for(const frl_policy *p, const float *obs, void *act, float *lp,
                             float *v, int32_t n)
{
    frl_act_args a;
    frl_act_args_init(&a);
    frl_test_act_widths(&a, p);
    a.batch = n;
    a.observations = obs;
    a.actions = act;
    a.log_probs = lp;
    a.values = v;
    return a;
}

START_TEST(act_rows_do_not_depend_on_batching)
{
    fix f;
    make(&f, _i, "policy.hidden=16,16");
    float obs[ROWS * 4], lp[ROWS], v[ROWS], lp1, v1, act[ROWS * 2], act1[2];
    obs_batch(obs, ROWS);
    frl_act_args a = args_for(f.p, obs, act, lp, v, ROWS);
    a.counter = 9;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_OK);
    /* Row by row, with the stream offset naming the row: the same bits. */
    for (int r = 0; r < ROWS; r++) {
        frl_act_args b = args_for(f.p, obs + r * 4, act1, &lp1, &v1, 1);
        b.counter = 9;
        b.stream_offset = (uint64_t)r;
        ck_assert_int_eq(frl_policy_act(f.p, &b), FRL_OK);
        ck_assert(lp1 == lp[r] && v1 == v[r]);
        ck_assert(memcmp(act1, (char *)act + (size_t)r * (_i ? 4 : 8), _i ? 4 : 8) == 0);
    }
    /* A small caller workspace (chunks of 3 rows) gives the same bits too. */
    static char ws[1 << 16] __attribute__((aligned(64)));
    size_t need = frl_policy_workspace_size(f.p, 3);
    ck_assert(need > 0 && need <= sizeof ws);
    float lp2[ROWS], v2[ROWS], act2[ROWS * 2];
    frl_act_args c = args_for(f.p, obs, act2, lp2, v2, ROWS);
    c.counter = 9;
    c.workspace = ws;
    c.workspace_size = need;
    ck_assert_int_eq(frl_policy_act(f.p, &c), FRL_OK);
    ck_assert(memcmp(lp, lp2, sizeof lp) == 0 && memcmp(v, v2, sizeof v) == 0);
    /* Another counter draws other actions for some rows. */
    c.counter = 10;
    ck_assert_int_eq(frl_policy_act(f.p, &c), FRL_OK);
    ck_assert(memcmp(lp, lp2, sizeof lp) != 0);
    unmake(&f);
}
END_TEST

START_TEST(deterministic_is_the_mode)
{
    fix f;
    make(&f, 1, "policy.hidden=8");
    float obs[ROWS * 4], lp[ROWS], lps[ROWS];
    int32_t det[ROWS], smp[ROWS];
    obs_batch(obs, ROWS);
    frl_act_args a = args_for(f.p, obs, det, lp, NULL, ROWS);
    a.deterministic = 1;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_OK);
    for (uint64_t c = 0; c < 20; c++) {
        frl_act_args b = args_for(f.p, obs, smp, lps, NULL, ROWS);
        b.counter = c;
        ck_assert_int_eq(frl_policy_act(f.p, &b), FRL_OK);
        /* The mode's probability is at least any sampled action's. */
        for (int r = 0; r < ROWS; r++)
            ck_assert(lp[r] >= lps[r] - 1e-6f);
    }
    unmake(&f);
}
END_TEST

START_TEST(act_rejects_bad_input)
{
    fix f;
    make(&f, 1, "");
    float obs[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int32_t act[2] = {-7, -7};
    frl_act_args a = args_for(f.p, obs, act, NULL, NULL, 2);
    ck_assert_int_eq(frl_policy_act(NULL, &a), FRL_ERR_NULL);
    ck_assert_int_eq(frl_policy_act(f.p, NULL), FRL_ERR_NULL);
    obs[6] = NAN;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_ERR_NONFINITE);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "row 1, element 2"));
    ck_assert(act[0] == -7 && act[1] == -7); /* nothing written */
    obs[6] = 0;
    a.batch = 0;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_ERR_RANGE);
    a.batch = 2;
    a.struct_size = 8;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_ERR_VERSION);
    a.struct_size = sizeof a;
    /* rows of another env's width, or a short action buffer: an error naming both */
    a.observation_width = 6;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_ERR_SIZE);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "6 observation and 1 action values wide, "
                                                   "the policy's spaces 4 and 1"));
    a.observation_width = 4;
    a.action_width = 0; /* unset: 0.3 callers must state it */
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_ERR_SIZE);
    ck_assert(act[0] == -7 && act[1] == -7);
    /* a caller built against 0.2 has no width fields: not checked */
    a.struct_size = offsetof(frl_act_args, observation_width);
    a.observation_width = 99;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_OK);
    act[0] = act[1] = -7;
    a.struct_size = sizeof a;
    frl_test_act_widths(&a, f.p);
    static char ws[256] __attribute__((aligned(64)));
    a.workspace = ws;
    a.workspace_size = 8;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_ERR_SIZE);
    a.workspace = ws + 1;
    a.workspace_size = 200;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_ERR_SIZE);
    a.observations = NULL;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_ERR_NULL);
    unmake(&f);
}
END_TEST

START_TEST(create_rejects_bad_input)
{
    fix f;
    make(&f, 1, "");
    frl_policy *p = (frl_policy *)1;
    ck_assert_int_eq(frl_policy_create(&p, NULL, NULL, f.os, f.as), FRL_ERR_NULL);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(frl_policy_create(&p, f.rt, NULL, NULL, f.as), FRL_ERR_NULL);
    frl_space *huge; /* discrete observations are float32 indices: n <= 2^24 */
    ck_assert_int_eq(frl_space_create_discrete(&huge, NULL, (1 << 24) + 1), FRL_OK);
    ck_assert_int_eq(frl_policy_create(&p, f.rt, NULL, huge, f.as), FRL_ERR_RANGE);
    frl_space_destroy(huge);
    frl_config *cfg;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_set(cfg, "policy.hidden", "8,8,8,8,8,8,8,8"), FRL_OK);
    ck_assert_int_eq(frl_policy_create(&p, f.rt, cfg, f.os, f.as), FRL_OK);
    frl_policy_destroy(p);
    ck_assert_int_eq(frl_config_set(cfg, "policy.hidden", "8,8,8,8,8,8,8,8,8"), FRL_ERR_PARSE);
    ck_assert_int_eq(frl_config_set(cfg, "policy.hidden", "8,,8"), FRL_ERR_PARSE);
    ck_assert_int_eq(frl_config_set(cfg, "policy.hidden", "0"), FRL_ERR_RANGE);
    ck_assert_int_eq(frl_config_set(cfg, "policy.activation", "swish"), FRL_ERR_UNKNOWN_NAME);
    frl_config_destroy(cfg);
    ck_assert_int_eq(frl_policy_num_parameters(f.p), (4 * 64 + 64 + 64 * 64 + 64 + 64 * 3 + 3) +
                                                         (4 * 64 + 64 + 64 * 64 + 64 + 64 + 1));
    unmake(&f);
}
END_TEST

static void tmp_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "/tmp/frl_test_policy_%d_%s", (int)getpid(), name);
}

START_TEST(save_and_load_round_trip)
{
    fix f;
    make(&f, _i, _i ? "policy.hidden=32 policy.shared=true" : "policy.obs_norm=true");
    char path[256];
    tmp_path(path, sizeof path, "p.frl");
    ck_assert_int_eq(frl_policy_save(f.p, path), FRL_OK);
    frl_policy *q;
    ck_assert_int_eq(frl_policy_load(&q, f.rt, path), FRL_OK);
    ck_assert_int_eq(frl_policy_num_parameters(q), frl_policy_num_parameters(f.p));
    float obs[ROWS * 4], lp[2][ROWS], v[2][ROWS], act[2][ROWS * 2];
    obs_batch(obs, ROWS);
    for (int k = 0; k < 2; k++) {
        frl_act_args a = args_for(f.p, obs, act[k], lp[k], v[k], ROWS);
        ck_assert_int_eq(frl_policy_act(k ? q : f.p, &a), FRL_OK);
    }
    ck_assert(memcmp(lp[0], lp[1], sizeof lp[0]) == 0 && memcmp(v[0], v[1], sizeof v[0]) == 0);
    ck_assert_int_eq(frl_space_get_kind(frl_policy_action_space(q)), _i ? FRL_SPACE_DISCRETE : FRL_SPACE_BOX);
    frl_policy_destroy(q);
    /* Truncated: every length a tenth apart fails with FRL_ERR_FORMAT. */
    FILE *fp = fopen(path, "rb");
    static unsigned char bytes[1 << 20];
    size_t n = fread(bytes, 1, sizeof bytes, fp);
    fclose(fp);
    char cut[256];
    tmp_path(cut, sizeof cut, "cut.frl");
    for (size_t len = 0; len < n; len += n / 10 + 1) {
        fp = fopen(cut, "wb");
        fwrite(bytes, 1, len, fp);
        fclose(fp);
        ck_assert_int_eq(frl_policy_load(&q, f.rt, cut), FRL_ERR_FORMAT);
        ck_assert_ptr_null(q);
    }
    ck_assert_int_eq(frl_policy_load(&q, f.rt, "/nonexistent/p.frl"), FRL_ERR_IO);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "/nonexistent/p.frl"));
    ck_assert_int_eq(frl_policy_save(f.p, "/nonexistent/dir/p.frl"), FRL_ERR_IO);
    unlink(cut);
    unlink(path);
    unmake(&f);
}
END_TEST

/* ---- ring ---- */

START_TEST(ring_slots_and_sizes)
{
    fix f;
    make(&f, 0, "");
    frl_ring *r;
    size_t bytes;
    ck_assert_int_eq(frl_ring_memory_size(3, 10, 7, f.os, f.as, &bytes), FRL_OK);
    /* per slot: obs 280 floats, actions 140 floats, 3 float arrays of 70, 3 byte arrays
     * of 70, 10 versions, 28 bootstrap floats, each rounded up to 64 bytes */
    size_t per = 1152 + 576 + 3 * 320 + 3 * 128 + 128 + 128;
    ck_assert_uint_ge(bytes, 3 * per);
    ck_assert_uint_le(bytes, 3 * per + 3 * 256 + 1024); /* slot records and the ring */
    /* 2^31 - 1 slots of one step pass the per-array bound, but not the whole ring's
     * (1.8 TB once each array is padded to a cache line) */
    ck_assert_int_eq(frl_ring_memory_size(INT32_MAX, 1, 1, f.os, f.as, &bytes), FRL_ERR_RANGE);
    ck_assert_msg(strstr(frl_last_error(), "at most 2^40"), "%s", frl_last_error());
    /* an image is no action space, as for the vec envs the ring holds steps of */
    frl_space *img;
    ck_assert_int_eq(frl_space_create_image(&img, NULL, 4, 4, 4), FRL_OK);
    ck_assert_int_eq(frl_ring_memory_size(3, 10, 7, f.os, img, &bytes), FRL_ERR_UNSUPPORTED);
    frl_space_destroy(img);
    ck_assert_int_eq(frl_ring_create(&r, f.rt, 3, 10, 7, f.os, f.as), FRL_OK);
    ck_assert_int_eq(frl_ring_slots(r), 3);
    void *data;
    size_t sz;
    ck_assert_int_eq(frl_ring_array(r, 2, FRL_RING_ACTIONS, &data, &sz), FRL_OK);
    ck_assert_uint_eq(sz, 10 * 7 * 2 * sizeof(float));
    ck_assert_int_eq((uintptr_t)data % 64, 0);
    ck_assert_int_eq(frl_ring_array(r, 3, FRL_RING_ACTIONS, &data, &sz), FRL_ERR_RANGE);
    ck_assert_int_eq(frl_ring_array(r, 0, FRL_RING_ARRAY_COUNT, &data, &sz), FRL_ERR_UNKNOWN_NAME);
    int32_t s[3], x;
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(frl_ring_acquire_write(r, &s[i]), FRL_OK);
        ck_assert_int_eq(s[i], i);
    }
    ck_assert_int_eq(frl_ring_acquire_write(r, &x), FRL_ERR_STATE);
    ck_assert_int_eq(frl_ring_acquire_read(r, &x), FRL_ERR_STATE);
    ck_assert_int_eq(frl_ring_release(r, 0), FRL_ERR_STATE);
    /* Commit 2, 0, 1: readers get them in that order. */
    ck_assert_int_eq(frl_ring_commit(r, 2), FRL_OK);
    ck_assert_int_eq(frl_ring_commit(r, 0), FRL_OK);
    ck_assert_int_eq(frl_ring_commit(r, 0), FRL_ERR_STATE);
    ck_assert_int_eq(frl_ring_commit(r, 1), FRL_OK);
    ck_assert_int_eq(frl_ring_slot_state(r, 1), FRL_SLOT_READY);
    int want[3] = {2, 0, 1};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(frl_ring_acquire_read(r, &x), FRL_OK);
        ck_assert_int_eq(x, want[i]);
        ck_assert_int_eq(frl_ring_slot_state(r, x), FRL_SLOT_READING);
    }
    ck_assert_int_eq(frl_ring_release(r, 0), FRL_OK);
    ck_assert_int_eq(frl_ring_acquire_write(r, &x), FRL_OK);
    ck_assert_int_eq(x, 0);
    frl_ring *bad = (frl_ring *)1;
    ck_assert_int_eq(frl_ring_create(&bad, f.rt, 0, 10, 7, f.os, f.as), FRL_ERR_RANGE);
    ck_assert_ptr_null(bad);
    ck_assert_int_eq(frl_ring_create(&bad, NULL, 1, 10, 7, f.os, f.as), FRL_ERR_NULL);
    ck_assert_ptr_null(bad);
    frl_ring_destroy(r);
    unmake(&f);
}
END_TEST

/* Failures on one ring from two threads: frl_ring_array's (which may run at any time)
 * and a transition's. Each thread's frl_last_error() names its own failure, and the
 * ring's shared message is one of the two whole; under TSan the shared buffer's writes
 * are checked for races (frl_ring_array once wrote it without the ring's mutex). */
typedef struct ring_failer {
    frl_ring *ring;
    int array_side, wrong;
} ring_failer;

static void *fail_on_ring(void *user)
{
    ring_failer *f = user;
    void *data;
    size_t sz;
    for (int i = 0; i < 500; i++) {
        frl_status st = f->array_side ? frl_ring_array(f->ring, 9, FRL_RING_ACTIONS, &data, &sz)
                                      : frl_ring_commit(f->ring, 0);
        const char *want = f->array_side ? "slot 9 is outside" : "is free, not being written";
        f->wrong += st != (f->array_side ? FRL_ERR_RANGE : FRL_ERR_STATE) ||
                    !strstr(frl_last_error(), want);
    }
    return NULL;
}

START_TEST(ring_failures_from_two_threads)
{
    fix f;
    make(&f, 0, "");
    frl_ring *r;
    ck_assert_int_eq(frl_ring_create(&r, f.rt, 2, 4, 7, f.os, f.as), FRL_OK);
    ring_failer a = {r, 1, 0}, b = {r, 0, 0};
    pthread_t ta, tb;
    ck_assert_int_eq(pthread_create(&ta, NULL, fail_on_ring, &a), 0);
    ck_assert_int_eq(pthread_create(&tb, NULL, fail_on_ring, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    ck_assert_int_eq(a.wrong + b.wrong, 0);
    const char *m = frl_ring_last_error(r);
    ck_assert_msg(strstr(m, "slot 9 is outside [0, 2)") ||
                      strstr(m, "slot 0 is free, not being written"),
                  "%s", m);
    frl_ring_destroy(r);
    unmake(&f);
}
END_TEST

/* Two threads fail frl_policy_act on one policy at once (acting with a workspace is
 * allowed on several threads): each gets its own whole message in frl_last_error(),
 * and the policy's shared message is one of the two whole. The checks once wrote the
 * policy's buffer without a lock, a data race (torn text here, a report under TSan). */
typedef struct act_failer {
    frl_policy *p;
    int nan_side, wrong;
    char last[256];
} act_failer;

static void *fail_acting(void *user)
{
    act_failer *f = user;
    float obs[8 * 4], act[8 * 2];
    obs_batch(obs, 8);
    if (f->nan_side)
        obs[3 * 4 + 1] = NAN;
    _Alignas(64) static unsigned char small_ws[64];
    frl_act_args a = args_for(f->p, obs, act, NULL, NULL, 8);
    if (!f->nan_side) {
        a.workspace = small_ws; /* too small for one row */
        a.workspace_size = sizeof small_ws;
    }
    frl_status want = f->nan_side ? FRL_ERR_NONFINITE : FRL_ERR_SIZE;
    for (int i = 0; i < (FRL_TEST_TSAN ? 2000 : 20000); i++)
        f->wrong += frl_policy_act(f->p, &a) != want;
    snprintf(f->last, sizeof f->last, "%s", frl_last_error());
    return NULL;
}

START_TEST(act_failures_from_two_threads)
{
    fix f;
    make(&f, 0, "policy.hidden=8");
    act_failer a = {f.p, 1, 0, ""}, b = {f.p, 0, 0, ""};
    pthread_t ta, tb;
    ck_assert_int_eq(pthread_create(&ta, NULL, fail_acting, &a), 0);
    ck_assert_int_eq(pthread_create(&tb, NULL, fail_acting, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    ck_assert_int_eq(a.wrong + b.wrong, 0);
    ck_assert_ptr_nonnull(strstr(a.last, "row 3, element 1 is not finite"));
    ck_assert_ptr_nonnull(strstr(b.last, "workspace must be 64-byte aligned"));
    const char *m = frl_policy_last_error(f.p);
    ck_assert_msg(strcmp(m, a.last) == 0 || strcmp(m, b.last) == 0, "torn message: \"%s\"", m);
    unmake(&f);
}
END_TEST

/* A finite observation far outside anything trained on (FLT_MAX in each of 16
 * elements, whose sums overflow the first layer) turns a ReLU network's outputs into
 * NaN and infinities: act fails with FRL_ERR_NONFINITE naming the row, for a box and a
 * discrete head, with the workspace and without, and writes no action. It returned
 * FRL_OK with NaN actions (a box) or action n - 1 (a discrete head's NaN logits). */
START_TEST(nonfinite_outputs_refused)
{
    enum { W = 16 };
    for (int discrete = 0; discrete < 2; discrete++) {
        frl_runtime *rt = frl_test_runtime(1);
        int64_t shape = W, one = 1;
        float lo = -1, hi = 1;
        frl_space *os, *as;
        ck_assert_int_eq(frl_space_create_box(&os, NULL, 1, &shape, NULL, NULL), FRL_OK);
        if (discrete)
            ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 3), FRL_OK);
        else
            ck_assert_int_eq(frl_space_create_box(&as, NULL, 1, &one, &lo, &hi), FRL_OK);
        frl_config *cfg = frl_test_settings("policy.activation=relu policy.hidden=64,64");
        frl_policy *p;
        ck_assert_int_eq(frl_policy_create(&p, rt, cfg, os, as), FRL_OK);
        float obs[3 * W], act[3] = {-7, -7, -7};
        for (int i = 0; i < 3 * W; i++)
            obs[i] = i >= 2 * W ? FLT_MAX : sinf((float)i);
        frl_act_args a;
        frl_act_args_init(&a);
        frl_test_act_widths(&a, p);
        a.batch = 3;
        a.observations = obs;
        a.actions = act;
        ck_assert_int_eq(frl_policy_act(p, &a), FRL_ERR_NONFINITE);
        ck_assert_msg(strstr(frl_last_error(), "output for row 2 is not finite"), "%s",
                      frl_last_error());
        ck_assert_str_eq(frl_policy_last_error(p), frl_last_error());
        for (int i = 0; i < 3; i++)
            ck_assert(act[i] == -7);
        size_t size = frl_policy_workspace_size(p, 4);
        void *ws = aligned_alloc(64, (size + 63) / 64 * 64);
        a.workspace = ws;
        a.workspace_size = size;
        ck_assert_int_eq(frl_policy_act(p, &a), FRL_ERR_NONFINITE);
        for (int i = 2 * W; i < 3 * W; i++) /* in range, the call succeeds */
            obs[i] = 0.5f;
        ck_assert_int_eq(frl_policy_act(p, &a), FRL_OK);
        free(ws);
        frl_policy_destroy(p);
        frl_config_destroy(cfg);
        frl_space_destroy(os);
        frl_space_destroy(as);
        frl_runtime_destroy(rt);
    }
}
END_TEST

/* frl_policy_save may run beside frl_policy_act (both only read the policy), and a
 * failing save wrote the policy's message without the lock the act path takes: the same
 * race as above, between a save into a missing directory and an acting failure. */
typedef struct save_failer {
    frl_policy *p;
    int wrong;
    char last[256];
} save_failer;

static void *fail_saving(void *user)
{
    save_failer *f = user;
    for (int i = 0; i < (FRL_TEST_TSAN ? 300 : 3000); i++)
        f->wrong += frl_policy_save(f->p, "/nonexistent-dir/sub/p.frl") != FRL_ERR_IO;
    snprintf(f->last, sizeof f->last, "%s", frl_last_error());
    return NULL;
}

START_TEST(save_failure_beside_act_failure)
{
    fix f;
    make(&f, 0, "policy.hidden=8");
    act_failer a = {f.p, 1, 0, ""};
    save_failer b = {f.p, 0, ""};
    pthread_t ta, tb;
    ck_assert_int_eq(pthread_create(&ta, NULL, fail_acting, &a), 0);
    ck_assert_int_eq(pthread_create(&tb, NULL, fail_saving, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    ck_assert_int_eq(a.wrong + b.wrong, 0);
    ck_assert_ptr_nonnull(strstr(b.last, "nonexistent-dir"));
    const char *m = frl_policy_last_error(f.p);
    ck_assert_msg(strcmp(m, a.last) == 0 || strcmp(m, b.last) == 0, "torn message: \"%s\"", m);
    unmake(&f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("policy");
    TCase *tc = tcase_create("policy");
    tcase_add_loop_test(tc, act_rows_do_not_depend_on_batching, 0, 2);
    tcase_add_test(tc, deterministic_is_the_mode);
    tcase_add_test(tc, act_rejects_bad_input);
    tcase_add_test(tc, create_rejects_bad_input);
    tcase_add_loop_test(tc, save_and_load_round_trip, 0, 2);
    tcase_add_test(tc, ring_slots_and_sizes);
    tcase_add_test(tc, ring_failures_from_two_threads);
    tcase_add_test(tc, act_failures_from_two_threads);
    tcase_add_test(tc, save_failure_beside_act_failure);
    tcase_add_test(tc, nonfinite_outputs_refused);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
