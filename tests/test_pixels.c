/* Pixel observations: image spaces, host frames with row strides, the convolutional
 * encoders in a policy (acting by rows, saving, bad settings) and PixelGrid-v0 learned
 * by PPO from its pixels. The encoder's gradients are checked in test_gradcheck.c, its
 * act path for allocations in test_act_noalloc.c, the conv layers in tests/nn. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

/* ---- image spaces ---- */

START_TEST(image_space)
{
    frl_space *s = NULL;
    ck_assert_int_eq(frl_space_create_image(&s, NULL, 84, 84, 4), FRL_OK);
    ck_assert_int_eq(frl_space_get_kind(s), FRL_SPACE_IMAGE);
    ck_assert_int_eq(frl_space_n(s), 84 * 84 * 4);
    ck_assert_int_eq(frl_space_width(s), 84 * 84 * 4);
    ck_assert_int_eq(frl_space_rank(s), 3);
    const int64_t *shape = frl_space_shape(s);
    ck_assert(shape[0] == 84 && shape[1] == 84 && shape[2] == 4);
    ck_assert_ptr_null(frl_space_low(s));
    ck_assert_ptr_null(frl_space_high(s));
    frl_space_destroy(s);

    ck_assert_int_eq(frl_space_create_image(NULL, NULL, 8, 8, 1), FRL_ERR_NULL);
    ck_assert_int_eq(frl_space_create_image(&s, NULL, 0, 8, 1), FRL_ERR_RANGE);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(frl_space_create_image(&s, NULL, 8, 8, 65), FRL_ERR_RANGE);
    ck_assert_int_eq(frl_space_create_image(&s, NULL, 4097, 4097, 1), FRL_ERR_RANGE);
    /* a side over 2^24, or a product past int64 (2^31 - 1 squared x 64): too large, and
     * said so (not "height and width must be >= 1") */
    ck_assert_int_eq(frl_space_create_image(&s, NULL, 1, (1 << 24) + 4, 1), FRL_ERR_RANGE);
    ck_assert_msg(strstr(frl_last_error(), "over 2^24 bytes") != NULL, "%s", frl_last_error());
    ck_assert_int_eq(frl_space_create_image(&s, NULL, INT32_MAX, INT32_MAX, 64), FRL_ERR_RANGE);
    ck_assert_msg(strstr(frl_last_error(), "over 2^24 bytes") != NULL, "%s", frl_last_error());
    /* 5 x 5 x 3 = 75 bytes: rows would not be whole words */
    ck_assert_int_eq(frl_space_create_image(&s, NULL, 5, 5, 3), FRL_ERR_SIZE);
    ck_assert_msg(strstr(frl_last_error(), "multiple of 4") != NULL, "%s", frl_last_error());
    ck_assert_ptr_null(s);
}
END_TEST

/* ---- PixelGrid-v0 ---- */

/* Pixels of an RGB image equal to (r, g, b). */
static int count_colour(const uint8_t *img, int32_t pixels, uint8_t r, uint8_t g, uint8_t b)
{
    int n = 0;
    for (int32_t i = 0; i < pixels; i++)
        n += img[3 * i] == r && img[3 * i + 1] == g && img[3 * i + 2] == b;
    return n;
}

START_TEST(pixel_grid_env)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "PixelGrid-v0", 8, NULL), FRL_OK);
    const frl_space *os = frl_vec_env_observation_space(v);
    ck_assert_int_eq(frl_space_get_kind(os), FRL_SPACE_IMAGE);
    ck_assert_int_eq(frl_space_n(os), 40 * 40 * 3);
    ck_assert_int_eq(frl_vec_env_reset(v, 7), FRL_OK);
    const uint8_t *img = frl_vec_env_frames(v);
    ck_assert_ptr_nonnull(img);
    ck_assert_ptr_eq(img, (const void *)frl_vec_env_observations(v));
    int32_t *act = frl_vec_env_actions(v);
    int64_t ended = 0, rewarded = 0;
    for (int step = 0; step < 200; step++) {
        for (int32_t e = 0; e < 8; e++) {
            const uint8_t *o = img + (size_t)e * 4800;
            /* The agent (red) and the goal (green) are one 8 x 8 cell each, apart,
             * unless the agent has just reached the goal (the last frame). */
            int red = count_colour(o, 1600, 255, 0, 0), green = count_colour(o, 1600, 0, 255, 0);
            int done = frl_vec_env_terminated(v)[e];
            ck_assert_int_eq(red, 64);
            ck_assert_int_eq(green, done ? 0 : 64);
            ck_assert_int_eq(count_colour(o, 1600, 0, 0, 0), 1600 - 64 - (done ? 0 : 64));
            act[e] = (step * 3 + e) % 4;
        }
        ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
        for (int32_t e = 0; e < 8; e++) {
            float r = frl_vec_env_rewards(v)[e];
            ck_assert(r == (frl_vec_env_terminated(v)[e] ? 1.0f : 0.0f));
            ck_assert(frl_vec_env_truncated(v)[e] == 0 || frl_vec_env_episode_lengths(v)[e] == 20);
            ended += frl_vec_env_terminated(v)[e] | frl_vec_env_truncated(v)[e];
            rewarded += r > 0;
        }
    }
    ck_assert(ended > 0 && rewarded > 0 && rewarded < ended);
    frl_vec_env_destroy(v);

    /* A float env has no frames; the id is listed. */
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "CartPole-v1", 2, NULL), FRL_OK);
    ck_assert_ptr_null(frl_vec_env_frames(v));
    frl_vec_env_destroy(v);
    int listed = 0;
    for (int32_t i = 0; frl_env_name_at(i); i++)
        listed |= strcmp(frl_env_name_at(i), "PixelGrid-v0") == 0;
    ck_assert(listed);
    frl_env *env;
    uint8_t obs[4800];
    ck_assert_int_eq(frl_env_create(&env, rt, "PixelGrid-v0", NULL), FRL_OK);
    ck_assert_int_eq(frl_env_reset(env, 3, (float *)(void *)obs), FRL_OK);
    ck_assert_int_eq(count_colour(obs, 1600, 255, 0, 0), 64);
    frl_env_destroy(env);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- host frames ---- */

enum { FH = 4, FW = 8, FC = 4, PAD = 12 };

/* A host that renders RGBA into a padded buffer, top-down or bottom-up. */
typedef struct render_host {
    uint8_t buf[FH * (FW * FC + PAD)];
    int64_t stride;      /* bytes per buffer row */
    int bottom_up;       /* rows stored last to first */
    int t;               /* what is drawn */
    /* faults to plant */
    int64_t give_stride; /* the stride reported (0: the real one) */
    int32_t give_height; /* the height reported (0: the real one) */
    int null_pixels, fail;
} render_host;

static uint8_t pattern(int t, int y, int x, int c)
{
    return (uint8_t)(t * 29 + y * 31 + x * 7 + c * 3);
}

static void render_rgba(render_host *h)
{
    memset(h->buf, 0xEE, sizeof h->buf); /* padding the library must not read into obs */
    for (int y = 0; y < FH; y++) {
        int row = h->bottom_up ? FH - 1 - y : y;
        for (int x = 0; x < FW; x++)
            for (int c = 0; c < FC; c++)
                h->buf[row * h->stride + x * FC + c] = pattern(h->t, y, x, c);
    }
}

static int host_reset(void *user, uint64_t seed, float *obs)
{
    (void)seed;
    (void)obs; /* the frame callback gives the observation */
    render_host *h = user;
    h->t = 0;
    render_rgba(h);
    return 0;
}

static int host_step(void *user, const void *action, float *obs, float *reward,
                     uint8_t *terminated, uint8_t *truncated)
{
    (void)action;
    (void)obs;
    render_host *h = user;
    h->t++;
    render_rgba(h);
    *reward = 0;
    *terminated = 0;
    *truncated = 0;
    return 0;
}

static int host_frame(void *user, frl_frame *f)
{
    render_host *h = user;
    ck_assert_uint_eq(f->struct_size, sizeof *f);
    if (h->fail)
        return h->fail;
    f->pixels = h->null_pixels ? NULL : h->buf + (h->bottom_up ? (FH - 1) * h->stride : 0);
    f->height = h->give_height ? h->give_height : FH;
    f->width = FW;
    f->channels = FC;
    f->row_stride = h->give_stride ? h->give_stride : (h->bottom_up ? -h->stride : h->stride);
    return 0;
}

static frl_status host_vec(frl_runtime *rt, render_host *h, int32_t channels, frl_vec_env **v)
{
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = host_reset;
    cb.step = host_step;
    cb.frame = host_frame;
    frl_space *os, *as;
    ck_assert_int_eq(frl_space_create_image(&os, NULL, FH, FW, channels), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 2), FRL_OK);
    void *users[1] = {h};
    frl_status st = frl_vec_env_create_callbacks(v, rt, &cb, users, 1, os, as, NULL);
    frl_space_destroy(os);
    frl_space_destroy(as);
    return st;
}

static void check_obs(const uint8_t *obs, int t, int channels)
{
    for (int y = 0; y < FH; y++)
        for (int x = 0; x < FW; x++)
            for (int c = 0; c < channels; c++)
                ck_assert_msg(obs[(y * FW + x) * channels + c] == pattern(t, y, x, c),
                              "t %d pixel (%d, %d) channel %d", t, y, x, c);
}

/* set_state takes cells, never the agent on the goal: from there every step paid the
 * goal again (an ended episode made live). */
START_TEST(pixel_grid_state_refused)
{
    frl_runtime *rt = frl_test_runtime(1);
    static const char *const names[] = {"PixelGrid-v0", "PixelGoal-v0"};
    for (int k = 0; k < 2; k++) {
        frl_env *e;
        ck_assert_int_eq(frl_env_create(&e, rt, names[k], NULL), FRL_OK);
        static float obs[1300];
        ck_assert_int_eq(frl_env_reset(e, 3, obs), FRL_OK);
        double s[5] = {1, 2, 3, 4, 0};
        ck_assert_int_eq(frl_env_set_state(e, s, 5, NULL), FRL_OK);
        s[2] = 1;
        s[3] = 2;
        ck_assert_int_eq(frl_env_set_state(e, s, 5, NULL), FRL_ERR_CALLBACK);
        /* the reason, not "set_state callback returned -1" of a callback no host wrote */
        const char *msg = frl_env_last_error(e);
        ck_assert_msg(strstr(msg, names[k]) && strstr(msg, "on the goal"), "%s", msg);
        s[3] = 5; /* off the grid */
        ck_assert_int_eq(frl_env_set_state(e, s, 5, NULL), FRL_ERR_CALLBACK);
        msg = frl_env_last_error(e);
        ck_assert_msg(strstr(msg, names[k]) && strstr(msg, "state[3] = 5"), "%s", msg);
        frl_env_destroy(e);
    }
    frl_runtime_destroy(rt);
}
END_TEST

/* Before its first reset an env's state is one set_state takes back (as a ray env's
 * is), not zeros: the agent on the goal, which set_state refuses. */
START_TEST(pixel_grid_state_before_reset)
{
    frl_runtime *rt = frl_test_runtime(1);
    static const char *const names[] = {"PixelGrid-v0", "PixelGoal-v0"};
    for (int k = 0; k < 2; k++) {
        frl_env *e;
        ck_assert_int_eq(frl_env_create(&e, rt, names[k], NULL), FRL_OK);
        double s[5];
        ck_assert_int_eq(frl_env_get_state(e, s, 5), FRL_OK);
        for (int i = 0; i < 4; i++)
            ck_assert_msg(s[i] >= 0 && s[i] < 5, "%s state[%d] = %g", names[k], i, s[i]);
        ck_assert_int_eq(frl_env_set_state(e, s, 5, NULL), FRL_OK);
        frl_env_destroy(e);
    }
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(host_frames_with_stride)
{
    frl_runtime *rt = frl_test_runtime(1);
    for (int bottom_up = 0; bottom_up < 2; bottom_up++)
        for (int channels = 1; channels <= 4; channels++) {
            if (FH * FW * channels % 4)
                continue;
            render_host h;
            memset(&h, 0, sizeof h);
            h.stride = FW * FC + PAD;
            h.bottom_up = bottom_up;
            frl_vec_env *v;
            ck_assert_int_eq(host_vec(rt, &h, channels, &v), FRL_OK);
            ck_assert_int_eq(frl_vec_env_reset(v, 1), FRL_OK);
            check_obs(frl_vec_env_frames(v), 0, channels);
            *(int32_t *)frl_vec_env_actions(v) = 1;
            ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
            check_obs(frl_vec_env_frames(v), 1, channels);
            frl_vec_env_destroy(v);
        }
    frl_runtime_destroy(rt);
}
END_TEST

/* A reset whose frame is bad: its status and a message holding `says`. */
static void expect_bad_frame(frl_runtime *rt, render_host *h, frl_status want, const char *says)
{
    h->stride = FW * FC;
    frl_vec_env *v;
    ck_assert_int_eq(host_vec(rt, h, 3, &v), FRL_OK);
    ck_assert_int_eq(frl_vec_env_reset(v, 1), want);
    ck_assert_msg(strstr(frl_vec_env_last_error(v), says) != NULL, "%s",
                  frl_vec_env_last_error(v));
    /* The host recovers: the next reset works. */
    memset(h, 0, sizeof *h);
    h->stride = FW * FC;
    ck_assert_int_eq(frl_vec_env_reset(v, 2), FRL_OK);
    check_obs(frl_vec_env_frames(v), 0, 3);
    frl_vec_env_destroy(v);
}

START_TEST(host_frame_errors)
{
    frl_runtime *rt = frl_test_runtime(1);
    render_host h;
    memset(&h, 0, sizeof h);
    h.give_stride = FW * FC - 1; /* smaller than a row of 8 RGBA pixels */
    expect_bad_frame(rt, &h, FRL_ERR_SIZE, "less than a row");
    h.give_stride = -(FW * FC - 4);
    expect_bad_frame(rt, &h, FRL_ERR_SIZE, "row_stride");
    h.give_stride = INT64_MIN; /* spans no buffer; checked without negating it */
    expect_bad_frame(rt, &h, FRL_ERR_SIZE, "more than a buffer");
    h.give_stride = INT64_MAX;
    expect_bad_frame(rt, &h, FRL_ERR_SIZE, "more than a buffer");
    h.give_height = FH + 1;
    expect_bad_frame(rt, &h, FRL_ERR_SIZE, "needs 4 x 8");
    h.null_pixels = 1;
    expect_bad_frame(rt, &h, FRL_ERR_NULL, "pixels is NULL");
    h.fail = 5;
    expect_bad_frame(rt, &h, FRL_ERR_CALLBACK, "frame callback returned 5");

    /* a frame callback for a float space, an image of actions */
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = host_reset;
    cb.step = host_step;
    cb.frame = host_frame;
    frl_space *box, *img, *disc;
    int64_t shape = 4;
    ck_assert_int_eq(frl_space_create_box(&box, NULL, 1, &shape, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_image(&img, NULL, FH, FW, 3), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&disc, NULL, 2), FRL_OK);
    void *users[1] = {&h};
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, 1, box, disc, NULL),
                     FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(strstr(frl_last_error(), "callbacks.frame") ? NULL : "");
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, 1, img, img, NULL),
                     FRL_ERR_UNSUPPORTED);
    frl_space_destroy(box);
    frl_space_destroy(img);
    frl_space_destroy(disc);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- policies with an encoder ---- */

static frl_status make_policy(frl_runtime *rt, const char *settings, int32_t h, int32_t w,
                              int32_t c, frl_policy **p)
{
    frl_space *os, *as;
    if (c > 0)
        ck_assert_int_eq(frl_space_create_image(&os, NULL, h, w, c), FRL_OK);
    else {
        int64_t shape = 4;
        ck_assert_int_eq(frl_space_create_box(&os, NULL, 1, &shape, NULL, NULL), FRL_OK);
    }
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 4), FRL_OK);
    frl_config *cfg = frl_test_settings(settings);
    frl_status st = frl_policy_create(p, rt, cfg, os, as);
    frl_config_destroy(cfg);
    frl_space_destroy(os);
    frl_space_destroy(as);
    return st;
}

static void expect_refused(frl_runtime *rt, const char *settings, int32_t h, int32_t w,
                           int32_t c, frl_status want, const char *says)
{
    frl_policy *p = NULL;
    ck_assert_int_eq(make_policy(rt, settings, h, w, c, &p), want);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(frl_last_error(), says) != NULL, "%s: %s", settings, frl_last_error());
}

START_TEST(encoder_errors)
{
    frl_runtime *rt = frl_test_runtime(1);
    expect_refused(rt, "", 40, 40, 3, FRL_ERR_INVALID_ARGUMENT, "policy.encoder=nature or simple");
    expect_refused(rt, "policy.encoder=nature", 0, 0, 0, FRL_ERR_INVALID_ARGUMENT,
                   "use policy.encoder=mlp");
    /* 32 x 32: the Nature stack's third layer gets a 2 x 2 input */
    expect_refused(rt, "policy.encoder=nature", 32, 32, 3, FRL_ERR_SIZE, "layer 3 of the nature");
    expect_refused(rt, "policy.encoder=simple policy.conv_channels=8,16", 40, 40, 3, FRL_ERR_SIZE,
                   "has 2 values");
    expect_refused(rt, "policy.encoder=simple policy.obs_norm=true", 40, 40, 3,
                   FRL_ERR_INVALID_ARGUMENT, "obs_norm");
    /* a core after the encoder is built (test_recurrent, test_gradcheck); with a frame
     * stack too, a row would carry two kinds of state */
    expect_refused(rt, "policy.encoder=simple policy.core=gru policy.frame_stack=2", 40, 40, 3,
                   FRL_ERR_UNSUPPORTED, "recurrent core");
    frl_policy *p;
    ck_assert_int_eq(make_policy(rt, "policy.encoder=nature", 84, 84, 4, &p), FRL_OK);
    /* 8x8x4x32 + 32, 4x4x32x64 + 64, 3x3x64x64 + 64, then 3136 -> 64 -> 64 -> 4 and -> 1 */
    int64_t conv = 8 * 8 * 4 * 32 + 32 + 4 * 4 * 32 * 64 + 64 + 3 * 3 * 64 * 64 + 64;
    int64_t mlp = 2 * (3136 * 64 + 64 + 64 * 64 + 64) + 64 * 4 + 4 + 64 + 1;
    ck_assert_int_eq(frl_policy_num_parameters(p), conv + mlp);
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
}
END_TEST

enum { ROWS = 7, IMG = 40 * 40 * 3 };

static void act_rows(frl_policy *p, const uint8_t *obs, int32_t rows, float *out, int32_t *acts)
{
    frl_act_args a;
    frl_act_args_init(&a);
    frl_test_act_widths(&a, p);
    a.batch = rows;
    a.observations = (const float *)(const void *)obs;
    a.actions = acts;
    a.deterministic = 1;
    a.outputs = out;
    ck_assert_int_eq(frl_policy_act(p, &a), FRL_OK);
}

static void random_images(uint8_t *obs, size_t n, uint64_t seed)
{
    uint64_t z = seed;
    for (size_t i = 0; i < n; i++) {
        z = z * 6364136223846793005ULL + 1442695040888963407ULL;
        obs[i] = (uint8_t)(z >> 56);
    }
}

/* A batch acts as its rows one by one, bit for bit; different images give different
 * outputs (the encoder reads them). */
START_TEST(encoder_act_rows)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_policy *p;
    ck_assert_int_eq(make_policy(rt, "policy.encoder=simple policy.shared=true", 40, 40, 3, &p),
                     FRL_OK);
    static uint8_t obs[ROWS * IMG] __attribute__((aligned(64)));
    random_images(obs, sizeof obs, 11);
    float all[ROWS * 4], one[4];
    int32_t acts[ROWS], a1;
    act_rows(p, obs, ROWS, all, acts);
    for (int32_t r = 0; r < ROWS; r++) {
        act_rows(p, obs + (size_t)r * IMG, 1, one, &a1);
        ck_assert_msg(memcmp(one, all + 4 * r, sizeof one) == 0, "row %d differs alone", r);
        ck_assert_int_eq(a1, acts[r]);
    }
    ck_assert(memcmp(all, all + 4, sizeof one) != 0);
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(encoder_save_load)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_policy *p, *q;
    ck_assert_int_eq(make_policy(rt, "policy.encoder=nature policy.conv_channels=4,8,8 "
                                     "policy.hidden=32", 40, 40, 3, &p), FRL_OK);
    char path[] = "/tmp/frl_pixels_XXXXXX";
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);
    ck_assert_int_eq(frl_policy_save(p, path), FRL_OK);
    ck_assert_int_eq(frl_policy_load(&q, rt, path), FRL_OK);
    unlink(path);
    const frl_space *s = frl_policy_observation_space(q);
    ck_assert_int_eq(frl_space_get_kind(s), FRL_SPACE_IMAGE);
    ck_assert(frl_space_shape(s)[0] == 40 && frl_space_shape(s)[2] == 3);
    ck_assert_int_eq(frl_policy_num_parameters(q), frl_policy_num_parameters(p));
    static uint8_t obs[ROWS * IMG] __attribute__((aligned(64)));
    random_images(obs, sizeof obs, 5);
    float a[ROWS * 4], b[ROWS * 4];
    int32_t acts[ROWS];
    act_rows(p, obs, ROWS, a, acts);
    act_rows(q, obs, ROWS, b, acts);
    ck_assert(memcmp(a, b, sizeof a) == 0);
    /* both writers emit the conv layers (their outputs are checked against the
     * library by the binding's test_export.py: onnxruntime, and the C compiled) */
    char onnx[64], cpre[64], cfile[68];
    snprintf(onnx, sizeof onnx, "/tmp/frl_pixels_%d.onnx", (int)getpid());
    snprintf(cpre, sizeof cpre, "/tmp/frl_pixels_%d", (int)getpid());
    ck_assert_msg(frl_policy_export(p, onnx, NULL) == FRL_OK, "%s", frl_policy_last_error(p));
    ck_assert_int_eq(access(onnx, F_OK), 0);
    unlink(onnx);
    frl_config *c = frl_test_settings("export.format=c");
    ck_assert_msg(frl_policy_export(p, cpre, c) == FRL_OK, "%s", frl_policy_last_error(p));
    for (int i = 0; i < 2; i++) {
        snprintf(cfile, sizeof cfile, "%s.%s", cpre, i ? "h" : "c");
        ck_assert_int_eq(access(cfile, F_OK), 0);
        unlink(cfile);
    }
    frl_config_destroy(c);
    frl_policy_destroy(p);
    frl_policy_destroy(q);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- frame stacks ---- */

/* One call of act on rows frames with state rows (and reset flags, may be NULL). */
static void act_state(frl_policy *p, const uint8_t *obs, int32_t rows, float *state,
                      const uint8_t *reset, float *out)
{
    frl_act_args a;
    frl_act_args_init(&a);
    frl_test_act_widths(&a, p);
    int32_t acts[ROWS];
    a.batch = rows;
    a.observations = (const float *)(const void *)obs;
    a.actions = acts;
    a.deterministic = 1;
    a.outputs = out;
    a.state = state;
    a.state_width = frl_policy_state_size(p);
    a.reset = reset;
    ck_assert_int_eq(frl_policy_act(p, &a), FRL_OK);
}

/* The state is the earlier frames, oldest first, as documented; a reset starts from
 * zeros; a batch acts as its rows one by one; the stack is what the outputs depend on. */
START_TEST(frame_stack_acting)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_policy *p;
    ck_assert_int_eq(make_policy(rt, "policy.encoder=simple policy.conv_channels=4,8,8 "
                                     "policy.frame_stack=3", 40, 40, 3, &p), FRL_OK);
    ck_assert_int_eq(frl_policy_state_size(p), 2 * IMG / 4);
    static uint8_t frames[ROWS * IMG] __attribute__((aligned(64)));
    random_images(frames, sizeof frames, 9);
    static float state[ROWS * 2 * IMG / 4], other[ROWS * 2 * IMG / 4];
    float out[ROWS * 4], again[ROWS * 4];
    memset(state, 0, sizeof state);
    for (int i = 0; i < 3; i++)
        act_state(p, frames + (size_t)i * IMG, 1, state, NULL, out);
    /* after frames 0, 1, 2 the state holds frames 1 and 2 */
    ck_assert(memcmp(state, frames + IMG, 2 * IMG) == 0);
    /* the same stack from a state built by hand gives the same outputs */
    memcpy(other, frames, 2 * IMG);
    act_state(p, frames + 2 * IMG, 1, other, NULL, again);
    ck_assert(memcmp(out, again, 4 * sizeof(float)) == 0);
    /* a reset: as from zeros, whatever the state held */
    uint8_t reset[ROWS];
    memset(reset, 1, sizeof reset);
    act_state(p, frames, 1, state, reset, out);
    memset(other, 0, sizeof other);
    act_state(p, frames, 1, other, NULL, again);
    ck_assert(memcmp(out, again, 4 * sizeof(float)) == 0);
    /* the earlier frames matter: a different history, different outputs */
    memset(other, 0x55, 2 * IMG);
    act_state(p, frames, 1, other, NULL, again);
    ck_assert(memcmp(out, again, 4 * sizeof(float)) != 0);
    /* a batch with its states, against each row alone */
    random_images((uint8_t *)state, sizeof state, 3);
    memcpy(other, state, sizeof state);
    act_state(p, frames, ROWS, state, NULL, out);
    for (int32_t r = 0; r < ROWS; r++) {
        act_state(p, frames + (size_t)r * IMG, 1, other + (size_t)r * IMG / 2, NULL, again);
        ck_assert_msg(memcmp(out + 4 * r, again, 4 * sizeof(float)) == 0, "row %d", r);
    }
    ck_assert(memcmp(state, other, sizeof state) == 0);
    /* no state: refused, saying the state is the frames (not a recurrent core's) */
    frl_act_args a;
    frl_act_args_init(&a);
    frl_test_act_widths(&a, p);
    int32_t acts[ROWS];
    a.batch = 1;
    a.observations = (const float *)(const void *)frames;
    a.actions = acts;
    a.state_width = frl_policy_state_size(p);
    ck_assert_int_eq(frl_policy_act(p, &a), FRL_ERR_NULL);
    ck_assert_msg(strstr(frl_policy_last_error(p), "earlier frames (policy.frame_stack)"), "%s",
                  frl_policy_last_error(p));
    frl_policy_destroy(p);

    expect_refused(rt, "policy.frame_stack=4", 0, 0, 0, FRL_ERR_INVALID_ARGUMENT,
                   "convolutional encoder");
    /* a Q-policy over stacks: DQN's replay gathers them (frame_stack_trains) */
    ck_assert_int_eq(make_policy(rt, "policy.encoder=simple policy.frame_stack=2 policy.head=q",
                                 40, 40, 3, &p), FRL_OK);
    ck_assert_int_eq(frl_policy_state_size(p), 40 * 40 * 3 / 4);
    frl_policy_destroy(p);
    ck_assert_int_eq(make_policy(rt, "policy.encoder=simple policy.frame_stack=2", 40, 40, 3,
                                 &p), FRL_OK);
    frl_population *pop = NULL;
    ck_assert_int_eq(frl_population_create(&pop, p, 4), FRL_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(frl_last_error(), "frame stack") != NULL, "%s", frl_last_error());
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
}
END_TEST

/* A short build's training runs (test_util.h): the code paths, at a tenth of the arithmetic. */
#define SHORT_RUN "train.num_envs=8 train.rollout=64 train.epochs=1"

/* PPO with a stack of 2 and APPO with 3 train on PixelGrid-v0 (which needs no memory:
 * this runs the paths; the gradient through gathered stacks is test_gradcheck's), and
 * DQN's path from the replay runs. A
 * uniform policy's mean return is about 0.33; runs of seeds 0-3 were at 0.82-0.88
 * (PPO) and 0.65-0.74 (APPO, seeds 0 and 2) by 20K steps. */
START_TEST(frame_stack_trains)
{
    static const char *const settings[] = {"policy.frame_stack=2",
                                           "policy.frame_stack=3 sampler.mode=async"};
    static const int64_t steps[] = {20480, 20480};
    for (int i = 0; i < 2; i++) {
        frl_runtime *rt = frl_test_runtime(2);
        frl_config *cfg = frl_test_settings(settings[i]);
        if (FRL_TEST_SHORT) /* the paths only: one small update's worth */
            ck_assert_int_eq(frl_config_parse(cfg, SHORT_RUN), FRL_OK);
        frl_trainer *t;
        int64_t budget = FRL_TEST_SHORT ? 1024 : steps[i];
        ck_assert_int_eq(frl_trainer_create(&t, rt, "PixelGrid-v0", cfg), FRL_OK);
        ck_assert_int_eq(frl_trainer_train(t, budget), FRL_OK);
        const frl_metrics *m = frl_trainer_metrics(t);
        /* An async run is not repeatable (the scheduler sets the policy lag): one short
         * of the target goes on, 10K steps at a time, up to twice the budget. */
        while (!FRL_TEST_SHORT && m->mean_return < 0.5 && budget < 2 * steps[i]) {
            budget += 10240;
            ck_assert_int_eq(frl_trainer_train(t, budget), FRL_OK);
        }
        ck_assert(m->env_steps >= budget);
        printf("frame_stack_trains: %s: mean return %.2f after %lld steps%s\n", settings[i],
               m->mean_return, (long long)m->env_steps,
               FRL_TEST_SHORT ? " (a short build: the paths only, no target)" : "");
        if (!FRL_TEST_SHORT)
            ck_assert_msg(m->mean_return >= 0.5, "%s: mean return %.2f", settings[i],
                          m->mean_return);
        frl_trainer_destroy(t);
        frl_config_destroy(cfg);
        frl_runtime_destroy(rt);
    }
    /* DQN draws its stacks from the replay (test_replay checks them against the ring's):
     * the path runs and learns updates; no target in this budget */
    frl_runtime *rt = frl_test_runtime(2);
    frl_config *cfg = frl_test_settings("policy.frame_stack=2 train.algo=dqn "
                                        "train.learning_starts=256 train.buffer_size=4096");
    frl_trainer *t = NULL;
    if (FRL_TEST_SHORT) /* the paths only: an update of 8 rows every 4 steps */
        ck_assert_int_eq(frl_config_parse(cfg, "train.batch_size=8 train.train_freq=4"), FRL_OK);
    ck_assert_msg(frl_trainer_create(&t, rt, "PixelGrid-v0", cfg) == FRL_OK, "%s",
                  frl_last_error());
    ck_assert_int_eq(frl_trainer_train(t, FRL_TEST_SHORT ? 512 : 2048), FRL_OK);
    ck_assert_int_gt(frl_trainer_metrics(t)->update, 0);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
    rt = frl_test_runtime(1);
    cfg = frl_test_settings("policy.frame_stack=2 train.algo=es");
    t = NULL;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "PixelGrid-v0", cfg), FRL_ERR_UNSUPPORTED);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- checkpoints of pixel runs ---- */

/* A host that shows a white frame (every byte 255) for 8 steps: each 4-byte word of its
 * rows reads as a NaN float, which no pixel is. */
enum { WH = 36, WW = 36, WC = 4 };

typedef struct white_host {
    int t;
} white_host;

static int white_reset(void *user, uint64_t seed, float *obs)
{
    (void)seed;
    ((white_host *)user)->t = 0;
    memset(obs, 255, WH * WW * WC);
    return 0;
}

static int white_step(void *user, const void *action, float *obs, float *reward,
                      uint8_t *terminated, uint8_t *truncated)
{
    white_host *h = user;
    h->t++;
    memset(obs, 255, WH * WW * WC);
    *reward = *(const int32_t *)action == 1 ? 1.0f : 0.0f;
    *terminated = h->t >= 8;
    *truncated = 0;
    return 0;
}

static int white_get(void *user, double *state)
{
    state[0] = ((white_host *)user)->t;
    return 0;
}

static int white_set(void *user, const double *state)
{
    ((white_host *)user)->t = (int)state[0];
    return 0;
}

static frl_vec_env *white_vec(frl_runtime *rt, white_host *hosts)
{
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = white_reset;
    cb.step = white_step;
    cb.state_size = 1;
    cb.get_state = white_get;
    cb.set_state = white_set;
    frl_space *os, *as;
    ck_assert_int_eq(frl_space_create_image(&os, NULL, WH, WW, WC), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 2), FRL_OK);
    void *users[2] = {&hosts[0], &hosts[1]};
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create_callbacks(&v, rt, &cb, users, 2, os, as, NULL), FRL_OK);
    frl_space_destroy(os);
    frl_space_destroy(as);
    return v;
}

/* A checkpoint of a pixel run resumes whatever its frames hold: the frame stack's
 * earlier frames (trainer.policy_state), the replay's observations and its blocks'
 * earlier frames are bytes, which loading checked as floats and refused ("holds a
 * non-finite value") for a white frame. DQN's minibatches are of 8: what is checked is
 * the checkpoint, not the learning. */
START_TEST(white_frames_checkpoint_resumes)
{
    static const char *const settings[] = {
        "policy.frame_stack=2",
        "train.algo=dqn train.buffer_size=1024 train.learning_starts=32 train.batch_size=8",
        ("train.algo=dqn train.buffer_size=1024 train.learning_starts=32 train.batch_size=8 "
         "policy.frame_stack=2")};
    char path[] = "/tmp/frl_pixels_ckpt_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    for (int i = 0; i < 3; i++) {
        frl_runtime *rt = frl_test_runtime(1);
        frl_config *cfg = frl_test_settings("policy.encoder=simple policy.conv_channels=4,4,4 "
                                            "train.rollout=16");
        ck_assert_int_eq(frl_config_parse(cfg, settings[i]), FRL_OK);
        white_host hosts[2], again[2];
        frl_vec_env *v = white_vec(rt, hosts), *w = white_vec(rt, again);
        frl_trainer *t = NULL, *resumed = NULL;
        ck_assert_int_eq(frl_trainer_create_vec(&t, rt, v, cfg), FRL_OK);
        ck_assert_int_eq(frl_trainer_train(t, 256), FRL_OK);
        ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
        ck_assert_msg(frl_trainer_load_vec(&resumed, rt, path, w, NULL) == FRL_OK, "%s: %s",
                      settings[i], frl_last_error());
        ck_assert_int_eq(frl_trainer_train(resumed, 320), FRL_OK);
        frl_trainer_destroy(resumed);
        frl_trainer_destroy(t);
        frl_vec_env_destroy(w);
        frl_vec_env_destroy(v);
        frl_config_destroy(cfg);
        frl_runtime_destroy(rt);
    }
    unlink(path);
}
END_TEST

/* ---- learning from pixels ---- */

/* PPO with the env's default settings (Sample Factory's encoder, 8-16-16 channels)
 * until its policy, acting as it learns (sampling), reaches the goal in 93% of 100
 * evaluation episodes, checked every 10K steps up to 200K. bench/learning.py --tasks
 * pixels: 10 of 10 seeds reached a training return of 0.95 by 25K steps; a uniform
 * policy reaches about a third of its goals. */
START_TEST(pixel_grid_learned)
{
    frl_runtime *rt = frl_test_runtime(2);
    frl_trainer *t;
    frl_config *cfg = frl_test_settings(FRL_TEST_SHORT ? SHORT_RUN : "");
    ck_assert_int_eq(frl_trainer_create(&t, rt, "PixelGrid-v0", cfg), FRL_OK);
    frl_vec_env *v;
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "PixelGrid-v0", 10, NULL), FRL_OK);
    int64_t budget = FRL_TEST_SHORT ? 2048 : 200000;
    if (FRL_TEST_SHORT)
        printf("pixel_grid_learned: a short build (a sanitizer or a second build) runs 2048 "
               "steps (" SHORT_RUN ") and 10 episodes without the target (the whole build "
               "checks it)\n");
    double mean = frl_test_train_until(t, v, FRL_TEST_SHORT ? 10 : 100, 0.93,
                                       FRL_TEST_SHORT ? 2048 : 10000, budget,
                                       "pixel_grid_learned");
    if (!FRL_TEST_SHORT)
        ck_assert_msg(mean >= 0.93, "PixelGrid-v0 not learned in %lld steps: %.2f",
                      (long long)budget, mean);
    frl_vec_env_destroy(v);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

static TCase *tcase(const char *name)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, 600);
    return tc;
}

int main(void)
{
    Suite *s = suite_create("pixels");
    TCase *env = tcase("envs"), *enc = tcase("encoders"), *stack = tcase("stacks");
    TCase *learn = tcase("learning");
    tcase_add_test(env, image_space);
    tcase_add_test(env, pixel_grid_env);
    tcase_add_test(env, pixel_grid_state_refused);
    tcase_add_test(env, pixel_grid_state_before_reset);
    tcase_add_test(env, host_frames_with_stride);
    tcase_add_test(env, host_frame_errors);
    tcase_add_test(enc, encoder_errors);
    tcase_add_test(enc, encoder_act_rows);
    tcase_add_test(enc, encoder_save_load);
    tcase_add_test(stack, frame_stack_acting);
    tcase_add_test(stack, frame_stack_trains);
    tcase_add_test(stack, white_frames_checkpoint_resumes);
    tcase_add_test(learn, pixel_grid_learned);
    suite_add_tcase(s, env);
    suite_add_tcase(s, enc);
    suite_add_tcase(s, stack);
    suite_add_tcase(s, learn);
    return frl_test_run(s);
}
