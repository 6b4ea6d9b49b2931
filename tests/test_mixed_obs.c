/* Mixed observations (an image and a vector in one row): the space, host envs writing
 * the vector beside a frame with a row stride, batch hosts, the policy's join of the
 * encoder's features and the vector (acting, bad input, save/load, refusals), a host
 * run saved and resumed, and PixelGoal-v0 learned by PPO, whose greedy actions depend
 * on both parts. The join's gradients are checked in test_gradcheck.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

enum { H = 40, W = 40, C = 3, IMG = H * W * C, VEC = 2, ROW = IMG + 4 * VEC };

static frl_space *mixed_space(int64_t vec)
{
    frl_space *im, *box, *s;
    float lo[4] = {0, -1, -2, -3}, hi[4] = {1, 2, 3, 4};
    ck_assert(vec <= 4);
    ck_assert_int_eq(frl_space_create_image(&im, NULL, H, W, C), FRL_OK);
    ck_assert_int_eq(frl_space_create_box(&box, NULL, 1, &vec, lo, hi), FRL_OK);
    ck_assert_int_eq(frl_space_create_mixed(&s, NULL, im, box), FRL_OK);
    frl_space_destroy(im);
    frl_space_destroy(box);
    return s;
}

/* ---- the space ---- */

START_TEST(mixed_space_parts)
{
    frl_space *s = mixed_space(VEC);
    ck_assert_int_eq(frl_space_get_kind(s), FRL_SPACE_MIXED);
    ck_assert_int_eq(frl_space_n(s), ROW);
    ck_assert_int_eq(frl_space_width(s), ROW);
    ck_assert_int_eq(frl_space_rank(s), 0);
    ck_assert_ptr_null(frl_space_shape(s));
    ck_assert_ptr_null(frl_space_low(s));
    const frl_space *im = frl_space_part(s, 0), *box = frl_space_part(s, 1);
    ck_assert_int_eq(frl_space_get_kind(im), FRL_SPACE_IMAGE);
    ck_assert_int_eq(frl_space_n(im), IMG);
    ck_assert_int_eq(frl_space_get_kind(box), FRL_SPACE_BOX);
    ck_assert_int_eq(frl_space_n(box), VEC);
    ck_assert(frl_space_low(box)[1] == -1.0f && frl_space_high(box)[1] == 2.0f);
    ck_assert_ptr_null(frl_space_part(s, 2));
    ck_assert_ptr_null(frl_space_part(s, -1));
    ck_assert_ptr_null(frl_space_part(im, 0)); /* not a mixed space */
    ck_assert_ptr_null(frl_space_part(NULL, 0));

    /* parts of the wrong kind, in the wrong order, or missing */
    frl_space *d, *out = (frl_space *)1;
    ck_assert_int_eq(frl_space_create_discrete(&d, NULL, 3), FRL_OK);
    ck_assert_int_eq(frl_space_create_mixed(&out, NULL, box, im), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(out);
    ck_assert_msg(strstr(frl_last_error(), "first part must be an image") != NULL, "%s",
                  frl_last_error());
    ck_assert_int_eq(frl_space_create_mixed(&out, NULL, im, d), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(frl_last_error(), "second part must be a box") != NULL, "%s",
                  frl_last_error());
    ck_assert_int_eq(frl_space_create_mixed(&out, NULL, s, box), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(frl_space_create_mixed(&out, NULL, im, NULL), FRL_ERR_NULL);
    ck_assert_int_eq(frl_space_create_mixed(NULL, NULL, im, box), FRL_ERR_NULL);
    frl_space_destroy(d);
    frl_space_destroy(s);
}
END_TEST

/* ---- PixelGoal-v0 ---- */

static int count_colour(const uint8_t *img, uint8_t r, uint8_t g, uint8_t b)
{
    int n = 0;
    for (int i = 0; i < H * W; i++)
        n += img[3 * i] == r && img[3 * i + 1] == g && img[3 * i + 2] == b;
    return n;
}

/* The image shows the agent only; the vector is the goal's cell / 4 (from the state). */
START_TEST(pixel_goal_env)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_env *env;
    ck_assert_int_eq(frl_env_create(&env, rt, "PixelGoal-v0", NULL), FRL_OK);
    ck_assert_int_eq(frl_space_get_kind(frl_env_observation_space(env)), FRL_SPACE_MIXED);
    static float obs[ROW / 4];
    double state[8];
    int32_t ns = frl_env_state_size(env);
    ck_assert(ns >= 4 && ns <= 8);
    int32_t a = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        ck_assert_int_eq(frl_env_reset(env, seed, obs), FRL_OK);
        ck_assert_int_eq(frl_env_get_state(env, state, ns), FRL_OK);
        const uint8_t *img = (const uint8_t *)obs;
        ck_assert_int_eq(count_colour(img, 255, 0, 0), 64); /* the agent's 8 x 8 cell */
        ck_assert_int_eq(count_colour(img, 0, 255, 0), 0);  /* no goal in the image */
        ck_assert(obs[IMG / 4] == (float)(state[2] / 4) && obs[IMG / 4 + 1] == (float)(state[3] / 4));
        float r;
        uint8_t term, trunc;
        ck_assert_int_eq(frl_env_step(env, &a, obs, &r, &term, &trunc), FRL_OK);
        ck_assert(obs[IMG / 4] == (float)(state[2] / 4)); /* the goal stays */
    }
    frl_env_destroy(env);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- host envs ---- */

enum { PAD = 12 };

/* A host rendering RGBA into a padded buffer and writing a vector of its own. */
typedef struct host {
    uint8_t buf[H * (W * 4 + PAD)];
    int t;
    float bad; /* written into the vector at step bad_at (0: never) */
    int bad_at;
} host;

static uint8_t pattern(int t, int y, int x, int c)
{
    return (uint8_t)(t * 13 + y * 5 + x * 3 + c);
}

static void write_vector(host *h, float *obs)
{
    obs[IMG / 4] = (float)h->t;
    obs[IMG / 4 + 1] = h->bad_at && h->t == h->bad_at ? h->bad : 0.5f * (float)h->t;
}

static int h_reset(void *user, uint64_t seed, float *obs)
{
    (void)seed;
    host *h = user;
    h->t = 0;
    write_vector(h, obs);
    return 0;
}

static int h_step(void *user, const void *action, float *obs, float *reward,
                  uint8_t *terminated, uint8_t *truncated)
{
    (void)action;
    host *h = user;
    h->t++;
    write_vector(h, obs);
    *reward = 1;
    *terminated = 0;
    *truncated = 0;
    return 0;
}

static int h_frame(void *user, frl_frame *f)
{
    host *h = user;
    int64_t stride = W * 4 + PAD;
    memset(h->buf, 0xEE, sizeof h->buf);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 4; c++)
                h->buf[y * stride + x * 4 + c] = pattern(h->t, y, x, c);
    f->pixels = h->buf;
    f->height = H;
    f->width = W;
    f->channels = 4;
    f->row_stride = stride;
    return 0;
}

static int h_get(void *user, double *s)
{
    s[0] = ((host *)user)->t;
    return 0;
}

static int h_set(void *user, const double *s)
{
    ((host *)user)->t = (int)s[0];
    return 0;
}

static frl_vec_env *host_vec(frl_runtime *rt, host *hs, int32_t n)
{
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = h_reset;
    cb.step = h_step;
    cb.frame = h_frame;
    cb.state_size = 1;
    cb.get_state = h_get;
    cb.set_state = h_set;
    frl_space *os = mixed_space(VEC), *as;
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 4), FRL_OK);
    void *users[8];
    ck_assert(n <= 8);
    for (int32_t i = 0; i < n; i++)
        users[i] = &hs[i];
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, n, os, as, NULL), FRL_OK);
    frl_space_destroy(os);
    frl_space_destroy(as);
    return v;
}

static void check_row(const uint8_t *row, int t)
{
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < C; c++)
                ck_assert_msg(row[(y * W + x) * C + c] == pattern(t, y, x, c),
                              "t %d pixel (%d, %d) channel %d", t, y, x, c);
    float v[VEC];
    memcpy(v, row + IMG, sizeof v);
    ck_assert(v[0] == (float)t && v[1] == 0.5f * (float)t);
}

/* The frame (RGBA with padded rows) fills the image part, the callbacks' floats the
 * vector part; a NaN in the vector is refused naming the part, as in a box. */
START_TEST(host_frame_and_vector)
{
    frl_runtime *rt = frl_test_runtime(2);
    static host hs[3];
    memset(hs, 0, sizeof hs);
    frl_vec_env *v = host_vec(rt, hs, 3);
    ck_assert_ptr_eq(frl_vec_env_frames(v), (const void *)frl_vec_env_observations(v));
    ck_assert_int_eq(frl_vec_env_reset(v, 3), FRL_OK);
    for (int t = 0; t < 3; t++) {
        for (int i = 0; i < 3; i++)
            check_row(frl_vec_env_frames(v) + (size_t)i * ROW, t);
        memset(frl_vec_env_actions(v), 0, 3 * sizeof(int32_t));
        ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
    }
    hs[1].bad = NAN;
    hs[1].bad_at = hs[1].t + 1;
    ck_assert_int_eq(frl_vec_env_step(v), FRL_ERR_NONFINITE);
    ck_assert_msg(strstr(frl_last_error(), "env 1") && strstr(frl_last_error(), "vector part"),
                  "%s", frl_last_error());
    frl_vec_env_destroy(v);

    /* a mixed space is only an observation */
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = h_reset;
    cb.step = h_step;
    frl_space *s = mixed_space(VEC), *box;
    int64_t two = 2;
    ck_assert_int_eq(frl_space_create_box(&box, NULL, 1, &two, NULL, NULL), FRL_OK);
    frl_env *e = NULL;
    ck_assert_int_eq(frl_env_create_callbacks(&e, rt, &cb, hs, box, s, NULL),
                     FRL_ERR_UNSUPPORTED);
    ck_assert_ptr_null(e);

    /* A step refused for its vector leaves no observation for set_state to give (as a
     * box env's: api.md); the state alone is restored. */
    cb.frame = h_frame;
    cb.state_size = 1;
    cb.get_state = h_get;
    cb.set_state = h_set;
    frl_space *as;
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 4), FRL_OK);
    memset(hs, 0, sizeof hs);
    ck_assert_int_eq(frl_env_create_callbacks(&e, rt, &cb, hs, s, as, NULL), FRL_OK);
    float obs[ROW / 4], r;
    uint8_t te, tr;
    int32_t act = 0;
    ck_assert_int_eq(frl_env_reset(e, 1, obs), FRL_OK);
    hs[0].bad = NAN;
    hs[0].bad_at = 1;
    ck_assert_int_eq(frl_env_step(e, &act, obs, &r, &te, &tr), FRL_ERR_NONFINITE);
    double saved[8];
    int32_t n = frl_env_state_size(e);
    ck_assert(n >= 1 && n <= 8);
    memset(saved, 0, sizeof saved);
    ck_assert_int_eq(frl_env_set_state(e, saved, n, obs), FRL_ERR_STATE);
    ck_assert_msg(frl_env_set_state(e, saved, n, NULL) == FRL_OK, "%s", frl_last_error());
    frl_env_destroy(e);
    frl_space_destroy(as);
    frl_space_destroy(s);
    frl_space_destroy(box);
    frl_runtime_destroy(rt);
}
END_TEST

/* A batch host writes whole rows; an infinity in a vector part is refused. */
static int b_reset(void *user, int32_t n, const uint64_t *seeds, float *obs)
{
    (void)user;
    (void)seeds;
    memset(obs, 7, (size_t)n * ROW);
    for (int32_t i = 0; i < n; i++) {
        obs[(size_t)i * ROW / 4 + IMG / 4] = 1;
        obs[(size_t)i * ROW / 4 + IMG / 4 + 1] = i == *(int *)user ? INFINITY : 2;
    }
    return 0;
}

static int b_step(void *user, int32_t n, const void *actions, const uint8_t *reset_mask,
                  const uint64_t *seeds, float *obs, float *rewards, uint8_t *terminated,
                  uint8_t *truncated)
{
    (void)actions;
    (void)reset_mask;
    memset(rewards, 0, sizeof(float) * (size_t)n);
    memset(terminated, 0, (size_t)n);
    memset(truncated, 0, (size_t)n);
    return b_reset(user, n, seeds, obs);
}

START_TEST(batch_host_vector_checked)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_batch_env_callbacks cb;
    frl_batch_env_callbacks_init(&cb);
    cb.reset = b_reset;
    cb.step = b_step;
    frl_space *os = mixed_space(VEC), *as;
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 4), FRL_OK);
    int bad = -1;
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create_batch(&v, rt, &cb, &bad, 4, os, as, NULL), FRL_OK);
    ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
    ck_assert_int_eq(frl_vec_env_frames(v)[ROW + 5], 7);
    bad = 2;
    memset(frl_vec_env_actions(v), 0, 4 * sizeof(int32_t));
    ck_assert_int_eq(frl_vec_env_step(v), FRL_ERR_NONFINITE);
    ck_assert_msg(strstr(frl_last_error(), "env 2") && strstr(frl_last_error(), "element 1"),
                  "%s", frl_last_error());
    frl_vec_env_destroy(v);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- policies ---- */

static frl_status make_policy(frl_runtime *rt, const char *settings, frl_policy **p)
{
    frl_space *os = mixed_space(VEC), *as;
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 4), FRL_OK);
    frl_config *cfg = frl_test_settings(settings);
    frl_status st = frl_policy_create(p, rt, cfg, os, as);
    frl_config_destroy(cfg);
    frl_space_destroy(os);
    frl_space_destroy(as);
    return st;
}

enum { ROWS = 5 };

static frl_status act_rows(frl_policy *p, const uint8_t *obs, int32_t rows, float *out,
                           float *value, int32_t *acts)
{
    frl_act_args a;
    frl_act_args_init(&a);
    frl_test_act_widths(&a, p);
    a.batch = rows;
    a.observations = (const float *)(const void *)obs;
    a.actions = acts;
    a.deterministic = 1;
    a.outputs = out;
    a.values = value;
    return frl_policy_act(p, &a);
}

static void random_rows(uint8_t *obs, int32_t rows, uint64_t seed)
{
    uint64_t z = seed;
    for (int32_t r = 0; r < rows; r++) {
        uint8_t *row = obs + (size_t)r * ROW;
        for (size_t i = 0; i < IMG; i++) {
            z = z * 6364136223846793005ULL + 1442695040888963407ULL;
            row[i] = (uint8_t)(z >> 56);
        }
        float v[VEC] = {(float)(r % 3) - 1.0f, 0.25f * (float)r};
        memcpy(row + IMG, v, sizeof v);
    }
}

/* Rows act alone as in a batch, bit for bit; the value reads the vector and the image
 * (changing either changes it); a non-finite vector value is refused. */
START_TEST(policy_reads_both_parts)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_policy *p;
    ck_assert_int_eq(make_policy(rt, "policy.encoder=simple policy.conv_channels=4,8,8 "
                                     "policy.hidden=16", &p), FRL_OK);
    static uint8_t obs[ROWS * ROW] __attribute__((aligned(64)));
    random_rows(obs, ROWS, 3);
    float out[ROWS * 4], val[ROWS], o1[4], v1, v2;
    int32_t acts[ROWS], a1;
    ck_assert_int_eq(act_rows(p, obs, ROWS, out, val, acts), FRL_OK);
    for (int32_t r = 0; r < ROWS; r++) {
        ck_assert_int_eq(act_rows(p, obs + (size_t)r * ROW, 1, o1, &v1, &a1), FRL_OK);
        ck_assert_msg(memcmp(o1, out + 4 * r, sizeof o1) == 0 && v1 == val[r], "row %d", r);
    }
    static uint8_t row[ROW] __attribute__((aligned(64)));
    memcpy(row, obs, ROW);
    float x = 3.5f;
    memcpy(row + IMG + 4, &x, 4); /* the vector alone changes */
    ck_assert_int_eq(act_rows(p, row, 1, o1, &v2, &a1), FRL_OK);
    ck_assert_msg(v2 != val[0], "the value ignores the vector part");
    memcpy(row, obs, ROW);
    row[IMG / 2] ^= 0xff; /* a pixel alone changes */
    ck_assert_int_eq(act_rows(p, row, 1, o1, &v2, &a1), FRL_OK);
    ck_assert_msg(v2 != val[0], "the value ignores the image part");
    x = NAN;
    memcpy(row + IMG, &x, 4);
    ck_assert_int_eq(act_rows(p, row, 1, o1, &v2, &a1), FRL_ERR_NONFINITE);
    ck_assert_msg(strstr(frl_policy_last_error(p), "vector part") != NULL, "%s",
                  frl_policy_last_error(p));
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
}
END_TEST

static void expect_refused(frl_runtime *rt, const char *settings, frl_status want,
                           const char *says)
{
    frl_policy *p = NULL;
    ck_assert_int_eq(make_policy(rt, settings, &p), want);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(frl_last_error(), says) != NULL, "%s: %s", settings, frl_last_error());
}

START_TEST(policy_refusals)
{
    frl_runtime *rt = frl_test_runtime(1);
    expect_refused(rt, "", FRL_ERR_INVALID_ARGUMENT, "policy.encoder=nature or simple");
    expect_refused(rt, "policy.encoder=simple policy.frame_stack=2", FRL_ERR_UNSUPPORTED,
                   "mixed observation space");
    frl_runtime_destroy(rt);
}
END_TEST

static void temp_path(char *path, size_t size, const char *what)
{
    snprintf(path, size, "/tmp/frl_mixed_%s_%d", what, (int)getpid());
}

/* Saved and loaded: the same space (the vector's bounds too) and the same outputs. */
START_TEST(policy_save_load)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_policy *p, *q;
    ck_assert_int_eq(make_policy(rt, "policy.encoder=nature policy.conv_channels=4,4,8 "
                                     "policy.hidden=8", &p), FRL_OK);
    char path[64];
    temp_path(path, sizeof path, "policy");
    ck_assert_int_eq(frl_policy_save(p, path), FRL_OK);
    ck_assert_int_eq(frl_policy_load(&q, rt, path), FRL_OK);
    unlink(path);
    const frl_space *s = frl_policy_observation_space(q);
    ck_assert_int_eq(frl_space_get_kind(s), FRL_SPACE_MIXED);
    ck_assert_int_eq(frl_space_n(frl_space_part(s, 0)), IMG);
    ck_assert(frl_space_high(frl_space_part(s, 1))[0] == 1.0f);
    static uint8_t obs[ROWS * ROW] __attribute__((aligned(64)));
    random_rows(obs, ROWS, 9);
    float a[ROWS * 4], b[ROWS * 4], va[ROWS], vb[ROWS];
    int32_t acts[ROWS];
    ck_assert_int_eq(act_rows(p, obs, ROWS, a, va, acts), FRL_OK);
    ck_assert_int_eq(act_rows(q, obs, ROWS, b, vb, acts), FRL_OK);
    ck_assert(memcmp(a, b, sizeof a) == 0 && memcmp(va, vb, sizeof va) == 0);
    frl_policy_destroy(p);
    frl_policy_destroy(q);
    frl_runtime_destroy(rt);
}
END_TEST

/* A run on host envs with a mixed space saved and resumed on the same envs made again
 * (the saved spaces decoded and compared), and refused on envs whose vector differs. */
START_TEST(host_run_saved_and_resumed)
{
    frl_runtime *rt = frl_test_runtime(2);
    static host hs[4], hs2[4];
    memset(hs, 0, sizeof hs);
    frl_vec_env *v = host_vec(rt, hs, 4);
    frl_config *cfg = frl_test_settings("policy.encoder=simple policy.conv_channels=4,4,4 "
                                        "policy.hidden=8 train.rollout=8 train.minibatches=2");
    frl_trainer *t, *u = NULL;
    ck_assert_int_eq(frl_trainer_create_vec(&t, rt, v, cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 64), FRL_OK);
    char path[64];
    temp_path(path, sizeof path, "run");
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    memset(hs2, 0, sizeof hs2);
    frl_vec_env *v2 = host_vec(rt, hs2, 4);
    ck_assert_msg(frl_trainer_load_vec(&u, rt, path, v2, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_int_eq(hs2[3].t, hs[3].t); /* the envs' states came back */
    ck_assert_int_eq(frl_trainer_train(u, 128), FRL_OK);
    frl_trainer_destroy(u);

    /* envs with a vector of three floats: the saved run's spaces differ */
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = h_reset;
    cb.step = h_step;
    cb.state_size = 1;
    cb.get_state = h_get;
    cb.set_state = h_set;
    frl_space *os = mixed_space(3), *as;
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 4), FRL_OK);
    void *users[4] = {&hs2[0], &hs2[1], &hs2[2], &hs2[3]};
    frl_vec_env *v3;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v3, rt, &cb, users, 4, os, as, NULL), FRL_OK);
    ck_assert_int_eq(frl_trainer_load_vec(&u, rt, path, v3, NULL), FRL_ERR_SIZE);
    ck_assert_msg(strstr(frl_last_error(), "mixed(image[40x40x3], box[2])") != NULL, "%s",
                  frl_last_error());
    unlink(path);
    frl_vec_env_destroy(v3);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_trainer_destroy(t);
    frl_vec_env_destroy(v2);
    frl_vec_env_destroy(v);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- learning ---- */

/* The agent's cell painted red at (x, y), the goal's cell as the vector. */
static void goal_row(uint8_t *row, int ax, int ay, int gx, int gy)
{
    memset(row, 0, IMG);
    for (int y = ay * 8; y < ay * 8 + 8; y++)
        for (int x = ax * 8; x < ax * 8 + 8; x++)
            row[(y * W + x) * C] = 255;
    float v[VEC] = {(float)gx / 4, (float)gy / 4};
    memcpy(row + IMG, v, sizeof v);
}

/* PPO with the env's defaults (and then with the vector normalised by running
 * statistics, policy.obs_norm) until the sampled policy reaches the goal in 93% of 100
 * episodes (checked every 10K steps up to 100K; bench/learning.py --tasks pixels: 0.95 by
 * 16K steps, 10 seeds of 10). Then the join is what it learned: from the centre, a goal
 * two cells away in each direction (only the vector says where) gets the greedy move
 * towards it, and the same goal from two agent cells (only the image says where) gets
 * two moves. */
START_TEST(pixel_goal_learned)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_trainer *t;
    frl_config *cfg = frl_test_settings(_i ? "policy.obs_norm=true" : "");
    if (FRL_TEST_SHORT)
        ck_assert_int_eq(frl_config_parse(cfg, "train.rollout=16"), FRL_OK);
    ck_assert_int_eq(frl_trainer_create(&t, rt, "PixelGoal-v0", cfg), FRL_OK);
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "PixelGoal-v0", 10, NULL), FRL_OK);
    int64_t budget = FRL_TEST_SHORT ? 1024 : 100000;
    if (FRL_TEST_SHORT)
        printf("pixel_goal_learned: a short build (a sanitizer or a second build) runs 1024 "
               "steps and 10 episodes without the targets (the whole build checks them)\n");
    double mean = frl_test_train_until(t, v, FRL_TEST_SHORT ? 10 : 100, 0.93,
                                       FRL_TEST_SHORT ? 1024 : 10000, budget,
                                       _i ? "pixel_goal_learned (obs_norm)" : "pixel_goal_learned");
    static uint8_t rows[6 * ROW] __attribute__((aligned(64)));
    static const int goal[4][2] = {{2, 0}, {2, 4}, {0, 2}, {4, 2}}; /* up, down, left, right */
    for (int k = 0; k < 4; k++)
        goal_row(rows + (size_t)k * ROW, 2, 2, goal[k][0], goal[k][1]);
    goal_row(rows + 4 * (size_t)ROW, 0, 2, 2, 2); /* the goal to the right */
    goal_row(rows + 5 * (size_t)ROW, 4, 2, 2, 2); /* the goal to the left */
    float out[6 * 4], val[6];
    int32_t acts[6];
    ck_assert_int_eq(act_rows(frl_trainer_policy(t), rows, 6, out, val, acts), FRL_OK);
    printf("pixel_goal_learned: greedy moves %d %d %d %d (0 1 2 3 wanted), %d %d (3 2 wanted)\n",
           acts[0], acts[1], acts[2], acts[3], acts[4], acts[5]);
    if (!FRL_TEST_SHORT) {
        ck_assert_msg(mean >= 0.93, "PixelGoal-v0 not learned in %lld steps: %.2f",
                      (long long)budget, mean);
        for (int k = 0; k < 4; k++)
            ck_assert_int_eq(acts[k], k);
        ck_assert(acts[4] == 3 && acts[5] == 2);
    }
    frl_vec_env_destroy(v);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mixed_obs");
    TCase *tc = tcase_create("mixed");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, mixed_space_parts);
    tcase_add_test(tc, pixel_goal_env);
    tcase_add_test(tc, host_frame_and_vector);
    tcase_add_test(tc, batch_host_vector_checked);
    tcase_add_test(tc, policy_reads_both_parts);
    tcase_add_test(tc, policy_refusals);
    tcase_add_test(tc, policy_save_load);
    tcase_add_test(tc, host_run_saved_and_resumed);
    tcase_add_loop_test(tc, pixel_goal_learned, 0, 2);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
