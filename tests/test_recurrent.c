/* Recurrent policies (policy.core): the state API of frl_policy_act, its bad inputs,
 * acting step by step against the learner's sequence pass, policy files, evaluation
 * carrying state, and learning a task that needs memory (sync and async samplers). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/container.h"
#include "rl/policy_rnn.h"
#include "test_util.h"

enum { OBS_W = 3, B = 4 };

typedef struct fixture {
    frl_runtime *rt;
    frl_space *os, *as;
    frl_config *cfg;
    frl_policy *p;
} fixture;

static void make(fixture *f, const char *settings, int discrete)
{
    int64_t shape = OBS_W;
    f->rt = frl_test_runtime(1);
    ck_assert_int_eq(frl_space_create_box(&f->os, NULL, 1, &shape, NULL, NULL), FRL_OK);
    if (discrete)
        ck_assert_int_eq(frl_space_create_discrete(&f->as, NULL, 3), FRL_OK);
    else
        ck_assert_int_eq(frl_space_create_box(&f->as, NULL, 1, (int64_t[]){2}, NULL, NULL), FRL_OK);
    f->cfg = frl_test_settings(settings);
    frl_status st = frl_policy_create(&f->p, f->rt, f->cfg, f->os, f->as);
    ck_assert_msg(st == FRL_OK, "%s: %s", settings, frl_last_error());
}

static void unmake(fixture *f)
{
    frl_policy_destroy(f->p);
    frl_config_destroy(f->cfg);
    frl_space_destroy(f->os);
    frl_space_destroy(f->as);
    frl_runtime_destroy(f->rt);
}

/* Observations of step t, row r: smooth, distinct per row and step. */
static void observe(float *obs, int32_t t, int32_t rows)
{
    for (int32_t r = 0; r < rows; r++)
        for (int32_t i = 0; i < OBS_W; i++)
            obs[r * OBS_W + i] = sinf(0.7f * (float)t + 1.3f * (float)r + 0.4f * (float)i);
}

typedef struct act_out {
    float a[B * 2]; /* room for int32 indices or 2-wide box actions */
    float v[B], lp[B];
} act_out;

static frl_status act(frl_policy *p, const float *obs, int32_t rows, float *state,
                      const uint8_t *reset, act_out *o)
{
    frl_act_args a;
    frl_act_args_init(&a);
    frl_test_act_widths(&a, p);
    a.batch = rows;
    a.observations = obs;
    a.actions = o->a;
    a.values = o->v;
    a.log_probs = o->lp;
    a.deterministic = 1;
    a.state = state;
    a.state_width = frl_policy_state_size(p);
    a.reset = reset;
    return frl_policy_act(p, &a);
}

/* ---- sizes ---- */

START_TEST(state_size_per_core)
{
    static const struct {
        const char *settings;
        int64_t size;
    } cases[] = {
        {"", 0},
        {"policy.core=gru policy.core_size=5 policy.shared=true", 5},
        {"policy.core=lstm policy.core_size=5 policy.shared=true", 10},
        {"policy.core=gru policy.core_size=5", 10},  /* actor's and critic's */
        {"policy.core=lstm policy.core_size=5", 20},
        {"policy.core=gru policy.core_size=7 policy.hidden=", 14}, /* no encoder */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fixture f;
        make(&f, cases[i].settings, 1);
        ck_assert_msg(frl_policy_state_size(f.p) == cases[i].size, "%s: %lld, want %lld",
                      cases[i].settings, (long long)frl_policy_state_size(f.p),
                      (long long)cases[i].size);
        unmake(&f);
    }
    ck_assert_int_eq(frl_policy_state_size(NULL), 0);
}
END_TEST

/* ---- acting ---- */

START_TEST(state_moves_and_replays)
{
    fixture f;
    make(&f, "policy.core=gru policy.core_size=6 policy.shared=true", 1);
    int64_t sw = frl_policy_state_size(f.p);
    float obs[B * OBS_W], s0[B * 12] = {0}, s1[B * 12], s2[B * 12];
    act_out o1, o2;
    observe(obs, 0, B);
    ck_assert_int_eq(act(f.p, obs, B, s0, NULL, &o1), FRL_OK);
    int moved = 0;
    for (int64_t i = 0; i < B * sw; i++)
        moved |= s0[i] != 0.0f;
    ck_assert_msg(moved, "act left the state at zero");
    /* The same state and observations give the same outputs and the same next state. */
    memcpy(s1, s0, sizeof s1);
    memcpy(s2, s0, sizeof s2);
    observe(obs, 1, B);
    ck_assert_int_eq(act(f.p, obs, B, s1, NULL, &o1), FRL_OK);
    ck_assert_int_eq(act(f.p, obs, B, s2, NULL, &o2), FRL_OK);
    ck_assert_int_eq(memcmp(s1, s2, sizeof s1), 0);
    ck_assert_int_eq(memcmp(o1.v, o2.v, sizeof o1.v), 0);
    /* The state matters: from zeros the values differ. */
    float z[B * 12] = {0};
    ck_assert_int_eq(act(f.p, obs, B, z, NULL, &o2), FRL_OK);
    ck_assert_msg(memcmp(o1.v, o2.v, sizeof o1.v) != 0, "the values ignore the state");
    unmake(&f);
}
END_TEST

/* A reset row acts as a fresh agent; the other rows keep their state; rows are
 * independent of the batch they are in. */
START_TEST(reset_rows_and_row_independence)
{
    fixture f;
    make(&f, "policy.core=lstm policy.core_size=4", 0); /* Gaussian head, two cores */
    int64_t sw = frl_policy_state_size(f.p);
    float obs[B * OBS_W], warm[B * 16] = {0}, s[B * 16], zero[16] = {0};
    act_out o, one;
    for (int32_t t = 0; t < 3; t++) {
        observe(obs, t, B);
        ck_assert_int_eq(act(f.p, obs, B, warm, NULL, &o), FRL_OK);
    }
    memcpy(s, warm, sizeof s);
    uint8_t reset[B] = {0, 1, 0, 0};
    observe(obs, 3, B);
    ck_assert_int_eq(act(f.p, obs, B, s, reset, &o), FRL_OK);
    for (int32_t r = 0; r < B; r++) {
        float row[16];
        memcpy(row, reset[r] ? zero : warm + r * sw, sizeof(float) * (size_t)sw);
        ck_assert_int_eq(act(f.p, obs + r * OBS_W, 1, row, NULL, &one), FRL_OK);
        ck_assert_msg(one.v[0] == o.v[r] && memcmp(row, s + r * sw, sizeof(float) * (size_t)sw) == 0,
                      "row %d differs acting alone", (int)r);
    }
    unmake(&f);
}
END_TEST

/* The learner's sequence pass over T steps of B rows from state0 gives the values
 * acting gave (values, [T x B]) and ends in the state acting ended in (state). */
static void check_sequence_pass(frl_policy *p, int32_t T, const float *obs,
                                const float *state0, const uint8_t *starts,
                                const float *values, const float *state)
{
    size_t floats = frl_policy_rnn_seq_floats(p, T, B, 0);
    float *ws = aligned_alloc(64, (sizeof(float) * floats + 63) / 64 * 64);
    frl_rpass rp;
    frl_policy_rnn_seq_layout(p, T, B, 0, ws, &rp);
    frl_policy_rnn_seq_forward(p, p->params, obs, state0, starts, &rp,
                               FRL_HEAD_ACTOR | FRL_HEAD_CRITIC);
    ck_assert_int_eq(memcmp(rp.value, values, sizeof(float) * (size_t)(T * B)), 0);
    int64_t sw = frl_policy_state_size(p);
    float *fin = malloc(sizeof(float) * (size_t)(B * sw));
    frl_policy_rnn_seq_final_state(p, &rp, fin);
    ck_assert_int_eq(memcmp(fin, state, sizeof(float) * (size_t)(B * sw)), 0);
    free(fin);
    free(ws);
}

/* The learner's sequence pass gives the values acting gave, step by step, resets included
 * (the same kernels on the same rows). */
START_TEST(steps_match_the_sequence_pass)
{
    static const char *const settings[] = {"policy.core=gru policy.core_size=5",
                                           "policy.core=lstm policy.core_size=3 policy.shared=true"};
    for (int k = 0; k < 2; k++) {
        fixture f;
        make(&f, settings[k], 1);
        enum { T = 6 };
        int64_t sw = frl_policy_state_size(f.p);
        float obs[T * B * OBS_W], state[B * 12] = {0}, state0[B * 12], values[T * B];
        uint8_t starts[T * B] = {0};
        starts[3 * B + 1] = starts[4 * B + 2] = 1;
        for (int64_t i = 0; i < B * sw; i++)
            state[i] = 0.1f * sinf((float)i);
        memcpy(state0, state, sizeof state0);
        for (int32_t t = 0; t < T; t++) {
            act_out o;
            observe(obs + t * B * OBS_W, t, B);
            ck_assert_int_eq(act(f.p, obs + t * B * OBS_W, B, state, starts + t * B, &o), FRL_OK);
            memcpy(values + t * B, o.v, sizeof o.v);
        }
        check_sequence_pass(f.p, T, obs, state0, starts, values, state);
        unmake(&f);
    }
}
END_TEST

/* The same with a conv encoder before the core: image rows of bytes (40 x 40 x 1). */
START_TEST(steps_match_the_sequence_pass_conv_encoder)
{
    enum { T = 5, PIX = 40 * 40, ROW = PIX / 4 };
    fixture f;
    f.rt = frl_test_runtime(1);
    ck_assert_int_eq(frl_space_create_image(&f.os, NULL, 40, 40, 1), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&f.as, NULL, 3), FRL_OK);
    f.cfg = frl_test_settings("policy.encoder=simple policy.conv_channels=2,3,2 "
                              "policy.core=gru policy.core_size=5 policy.hidden=4");
    frl_status st = frl_policy_create(&f.p, f.rt, f.cfg, f.os, f.as);
    ck_assert_msg(st == FRL_OK, "%s", frl_last_error());
    int64_t sw = frl_policy_state_size(f.p);
    ck_assert_int_eq(sw, 2 * 5); /* two towers' GRU states; no frames */
    static float obs[T * B * ROW];
    uint8_t *bytes = (uint8_t *)obs;
    for (size_t i = 0; i < sizeof obs; i++)
        bytes[i] = (uint8_t)((i * 2654435761u) >> 24);
    float state[B * 10] = {0}, state0[B * 10], values[T * B];
    uint8_t starts[T * B] = {0};
    starts[2 * B + 1] = 1;
    memcpy(state0, state, sizeof state0);
    for (int32_t t = 0; t < T; t++) {
        act_out o;
        ck_assert_int_eq(act(f.p, obs + (size_t)t * B * ROW, B, state, starts + t * B, &o),
                         FRL_OK);
        memcpy(values + t * B, o.v, sizeof o.v);
    }
    check_sequence_pass(f.p, T, obs, state0, starts, values, state);
    frl_config *bad = frl_test_settings("policy.encoder=simple policy.core=gru "
                                        "policy.frame_stack=2");
    frl_policy *p2;
    ck_assert_int_eq(frl_policy_create(&p2, f.rt, bad, f.os, f.as), FRL_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(frl_last_error(), "frame_stack"), "%s", frl_last_error());
    frl_config_destroy(bad);
    unmake(&f);
}
END_TEST

/* ---- bad input ---- */

START_TEST(bad_state_arguments)
{
    fixture f;
    make(&f, "policy.core=gru policy.core_size=4 policy.shared=true", 1);
    float obs[B * OBS_W], state[B * 4] = {0};
    act_out o;
    observe(obs, 0, B);
    frl_act_args a;
    frl_act_args_init(&a);
    frl_test_act_widths(&a, f.p);
    a.batch = B;
    a.observations = obs;
    a.actions = o.a;
    a.state_width = 4;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_ERR_NULL); /* no state */
    ck_assert_ptr_nonnull(strstr(frl_policy_last_error(f.p), "args->state is NULL"));
    a.state = state;
    a.state_width = 8;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_ERR_SIZE);
    ck_assert_ptr_nonnull(strstr(frl_policy_last_error(f.p), "state_width is 8"));
    /* A caller built before the state fields: its table ends before them. */
    a.state_width = 4;
    a.struct_size = offsetof(frl_act_args, state);
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_ERR_SIZE);
    ck_assert_ptr_nonnull(strstr(frl_policy_last_error(f.p), "built before the state fields"));
    a.struct_size = sizeof a;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_OK);
    /* A state that is not finite is refused, naming the row and element, with nothing
     * written (it gave NaN values and an argmax over NaN logits); a reset row is not
     * read, so anything may be there. */
    uint8_t reset[B] = {0};
    state[4 * (B - 1) + 2] = NAN;
    o.a[0] = -7.0f;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_ERR_NONFINITE);
    ck_assert_msg(strstr(frl_policy_last_error(f.p), "state of row 3, element 2"), "%s",
                  frl_policy_last_error(f.p));
    ck_assert(o.a[0] == -7.0f && isnan(state[4 * (B - 1) + 2]));
    state[4 * (B - 1) + 2] = -INFINITY;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_ERR_NONFINITE);
    reset[B - 1] = 1;
    a.reset = reset;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_OK);
    ck_assert(isfinite(state[4 * (B - 1) + 2]));
    a.reset = NULL;
    unmake(&f);
    /* An MLP takes the same calls with width 0, with or without an array. */
    make(&f, "", 1);
    a.state_width = 0;
    a.state = NULL;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_OK);
    a.state = state;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_OK);
    a.state_width = 4;
    ck_assert_int_eq(frl_policy_act(f.p, &a), FRL_ERR_SIZE);
    unmake(&f);
}
END_TEST

START_TEST(bad_core_settings)
{
    frl_config *cfg;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_set(cfg, "policy.core_size", "0"), FRL_ERR_RANGE);
    ck_assert_int_eq(frl_config_set(cfg, "policy.core_size", "1025"), FRL_ERR_RANGE);
    ck_assert_int_eq(frl_config_set(cfg, "policy.core", "rnn"), FRL_ERR_UNKNOWN_NAME);
    ck_assert_int_eq(frl_config_set(cfg, "train.bptt", "-1"), FRL_ERR_RANGE);
    frl_config_destroy(cfg);
    /* Minibatches are whole env sequences: they must divide the envs. */
    frl_runtime *rt = frl_test_runtime(1);
    frl_trainer *t = NULL;
    cfg = frl_test_settings("policy.core=gru train.num_envs=6 train.minibatches=4 train.rollout=8");
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPoleNoVel-v1", cfg), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "whole env sequences"));
    ck_assert_ptr_null(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- files ---- */

/* The settings text a policy file holds. */
static void file_settings(const char *path, char *buf, size_t size)
{
    frl_container *c = NULL;
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_container_read(&c, path, NULL, err), FRL_OK);
    const frl_section *sec = frl_container_find(c, "policy.settings", FRL_DTYPE_TEXT, -1, err);
    ck_assert_ptr_nonnull(sec);
    ck_assert_int_lt(sec->count, size);
    memcpy(buf, sec->data, (size_t)sec->count);
    buf[sec->count] = '\0';
    frl_container_free(c);
}

START_TEST(policy_file_records_its_core)
{
    char path[] = "/tmp/frl_recurrent_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    fixture f;
    make(&f, "policy.core=lstm policy.core_size=5 policy.shared=true", 1);
    ck_assert_int_eq(frl_policy_save(f.p, path), FRL_OK);
    frl_policy *q = NULL;
    ck_assert_int_eq(frl_policy_load(&q, f.rt, path), FRL_OK);
    ck_assert_int_eq(frl_policy_state_size(q), 10);
    float obs[B * OBS_W], s1[B * 10] = {0}, s2[B * 10] = {0};
    act_out o1, o2;
    for (int32_t t = 0; t < 3; t++) {
        observe(obs, t, B);
        ck_assert_int_eq(act(f.p, obs, B, s1, NULL, &o1), FRL_OK);
        ck_assert_int_eq(act(q, obs, B, s2, NULL, &o2), FRL_OK);
        ck_assert_int_eq(memcmp(o1.v, o2.v, sizeof o1.v), 0);
    }
    frl_policy_destroy(q);
    static char text[1 << 16];
    file_settings(path, text, sizeof text);
    ck_assert_ptr_nonnull(strstr(text, "policy.core=lstm"));
    unmake(&f);
    /* A memoryless policy's file does not name the key, so readers from before it
     * still load the file. */
    make(&f, "", 1);
    ck_assert_int_eq(frl_policy_save(f.p, path), FRL_OK);
    file_settings(path, text, sizeof text);
    ck_assert_ptr_null(strstr(text, "policy.core"));
    unmake(&f);
    remove(path);
}
END_TEST

/* A reader meets a key it does not know in a policy file, as a reader from before
 * policy.core meets that key in a recurrent policy's file: FRL_ERR_FORMAT naming it. */
START_TEST(unknown_key_in_a_file_is_named)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/frl_recurrent_key_%d.frl", (int)getpid());
    fixture f;
    make(&f, "policy.core=gru policy.core_size=4", 1);
    ck_assert_int_eq(frl_policy_save(f.p, path), FRL_OK);
    frl_container *c = NULL;
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_container_read(&c, path, NULL, err), FRL_OK);
    static frl_section sec[64];
    static char text[FRL_SETTINGS_MAX + 64];
    int32_t n = frl_container_count(c);
    ck_assert_int_le(n, 64);
    for (int32_t i = 0; i < n; i++) {
        sec[i] = *frl_container_at(c, i);
        if (strcmp(sec[i].name, "policy.settings") != 0)
            continue;
        int len = snprintf(text, sizeof text, "policy.core_from_the_future=1\n%.*s",
                           (int)sec[i].count, (const char *)sec[i].data);
        sec[i].data = text;
        sec[i].count = (uint64_t)len;
    }
    ck_assert_int_eq(frl_container_write(path, NULL, sec, n, err), FRL_OK);
    frl_container_free(c);
    frl_policy *q = NULL;
    ck_assert_int_eq(frl_policy_load(&q, f.rt, path), FRL_ERR_FORMAT);
    ck_assert_ptr_null(q);
    ck_assert_msg(strstr(frl_last_error(), "policy.core_from_the_future") != NULL, "%s",
                  frl_last_error());
    unmake(&f);
    remove(path);
}
END_TEST

/* ---- training runs: thread count, resume ---- */

static const char *nv_small = "policy.core=gru policy.core_size=8 policy.hidden=8 "
                              "train.num_envs=8 train.rollout=16 train.minibatches=2";

static int stop_at_update(void *user, const frl_metrics *m)
{
    frl_trainer **t = user;
    if (m->update == 3)
        frl_trainer_request_stop(*t);
    return 0;
}

/* Train CartPoleNoVel-v1 for steps; the parameters into params (num_params floats).
 * With save_path, stop after update 3, save, load and go on from the file. */
static int64_t train_nv(int threads, int64_t steps, float *params, const char *save_path)
{
    frl_runtime *rt = frl_test_runtime(threads);
    frl_config *cfg = frl_test_settings(nv_small);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPoleNoVel-v1", cfg), FRL_OK);
    if (save_path) {
        frl_trainer_set_callback(t, stop_at_update, &t);
        ck_assert_int_eq(frl_trainer_train(t, steps), FRL_ERR_INTERRUPTED);
        ck_assert_int_eq(frl_trainer_save(t, save_path), FRL_OK);
        frl_trainer_destroy(t);
        ck_assert_int_eq(frl_trainer_load(&t, rt, save_path, NULL), FRL_OK);
    }
    ck_assert_msg(frl_trainer_train(t, steps) == FRL_OK, "%s", frl_trainer_last_error(t));
    frl_policy *p = frl_trainer_policy(t);
    int64_t n = frl_policy_num_parameters(p);
    memcpy(params, p->params, sizeof(float) * (size_t)n);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
    return n;
}

/* A2C's recurrent update truncates its gradients at train.bptt as PPO's does: A2C once
 * left the key unread, so bptt 2 trained the same bits as the whole rollout. bptt 8 (the
 * rollout) must equal 0, and 2 must differ from both. */
static int64_t train_a2c_gru(const char *bptt, float *params, int64_t cap)
{
    char settings[256];
    snprintf(settings, sizeof settings, "train.algo=a2c policy.core=gru policy.core_size=8 "
             "policy.hidden=8 train.rollout=8 train.bptt=%s", bptt);
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg = frl_test_settings(settings);
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPoleNoVel-v1", cfg), FRL_OK);
    ck_assert_msg(frl_trainer_train(t, 8 * 8 * 4) == FRL_OK, "%s", frl_trainer_last_error(t));
    frl_policy *p = frl_trainer_policy(t);
    int64_t n = frl_policy_num_parameters(p);
    ck_assert_int_le(n, cap);
    memcpy(params, p->params, sizeof(float) * (size_t)n);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
    return n;
}

START_TEST(a2c_truncates_at_bptt)
{
    static float whole[1 << 12], at_rollout[1 << 12], at_2[1 << 12];
    int64_t n = train_a2c_gru("0", whole, 1 << 12);
    train_a2c_gru("8", at_rollout, 1 << 12);
    train_a2c_gru("2", at_2, 1 << 12);
    ck_assert_msg(memcmp(whole, at_rollout, sizeof(float) * (size_t)n) == 0,
                  "bptt = the rollout differs from 0");
    ck_assert_msg(memcmp(whole, at_2, sizeof(float) * (size_t)n) != 0,
                  "a2c trained the same bits with train.bptt=2 as with the whole rollout");
}
END_TEST

START_TEST(same_bits_any_thread_count_and_after_resume)
{
    static float a[1 << 14], b[1 << 14], c[1 << 14];
    int64_t n = train_nv(1, 1024 * 6, a, NULL);
    ck_assert_int_le(n, 1 << 14);
    train_nv(2, 1024 * 6, b, NULL);
    ck_assert_msg(memcmp(a, b, sizeof(float) * (size_t)n) == 0, "1 and 2 threads differ");
    char path[64];
    snprintf(path, sizeof path, "/tmp/frl_recurrent_resume_%d.frl", (int)getpid());
    train_nv(2, 1024 * 6, c, path);
    remove(path);
    /* The checkpoint carries each env's recurrent state: without it the resumed run's
     * next rollout would start from zeros and differ. */
    ck_assert_msg(memcmp(a, c, sizeof(float) * (size_t)n) == 0, "the resumed run differs");
}
END_TEST

/* ---- learning ---- */

/* Greedy evaluation's share of right answers on MemoryProbe-v0 (reward 1 or 0). */
static double probe_rate(frl_runtime *rt, frl_policy *p, const char *env_settings)
{
    frl_vec_env *v;
    frl_config *cfg = frl_test_settings(env_settings);
    ck_assert_int_eq(frl_vec_env_create(&v, rt, "MemoryProbe-v0", 8, cfg), FRL_OK);
    frl_eval_args ea;
    frl_eval_args_init(&ea);
    ea.episodes = 200;
    double mean = NAN;
    frl_status st = frl_policy_evaluate(p, v, &ea, &mean);
    ck_assert_msg(st == FRL_OK, "%s", frl_policy_last_error(p));
    frl_vec_env_destroy(v);
    frl_config_destroy(cfg);
    return mean;
}

/* The cue must be kept for 3 blank steps: a memoryless policy stays at chance (1/2),
 * recurrent PPO answers right, through the sync and the async samplers. */
static void learns_probe(const char *extra, int64_t budget, double want)
{
    const char *env = "env.memory_delay=3 env.memory_cues=2";
    char text[512];
    snprintf(text, sizeof text, "%s train.lr=1e-3 train.ent_coef=0.001 runtime.seed=3 %s", env,
             extra);
    frl_runtime *rt = frl_test_runtime(2);
    frl_config *cfg = frl_test_settings(text);
    frl_trainer *t = NULL;
    frl_status st = frl_trainer_create(&t, rt, "MemoryProbe-v0", cfg);
    ck_assert_msg(st == FRL_OK, "%s: %s", extra, frl_last_error());
    if (FRL_TEST_SHORT)
        budget = 8192;
    st = frl_trainer_train(t, budget);
    ck_assert_msg(st == FRL_OK, "%s: %s", extra, frl_trainer_last_error(t));
    double rate = probe_rate(rt, frl_trainer_policy(t), env);
    printf("MemoryProbe-v0 (D=3, K=2) after %lld steps, %s: %.3f right\n", (long long)budget,
           extra, rate);
    if (FRL_TEST_SHORT)
        printf("  short build (a sanitizer or a second build): a short run of the same code; "
               "the rate is checked in the whole build\n");
    else
        ck_assert_msg(want > 0.9 ? rate >= want : rate <= want, "%s: %.3f right", extra, rate);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}

START_TEST(gru_learns_the_probe_sync)
{
    learns_probe("policy.core=gru policy.core_size=32", 60000, 0.95);
}
END_TEST

START_TEST(lstm_learns_the_probe_async)
{
    learns_probe("policy.core=lstm policy.core_size=32 sampler.mode=async", 80000, 0.95);
}
END_TEST

START_TEST(mlp_stays_at_chance)
{
    learns_probe("policy.core=none", 60000, 0.75);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("recurrent");
    TCase *tc = tcase_create("recurrent");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, state_size_per_core);
    tcase_add_test(tc, state_moves_and_replays);
    tcase_add_test(tc, reset_rows_and_row_independence);
    tcase_add_test(tc, steps_match_the_sequence_pass);
    tcase_add_test(tc, steps_match_the_sequence_pass_conv_encoder);
    tcase_add_test(tc, bad_state_arguments);
    tcase_add_test(tc, bad_core_settings);
    tcase_add_test(tc, policy_file_records_its_core);
    tcase_add_test(tc, unknown_key_in_a_file_is_named);
    tcase_add_test(tc, same_bits_any_thread_count_and_after_resume);
    tcase_add_test(tc, a2c_truncates_at_bptt);
    tcase_add_test(tc, gru_learns_the_probe_sync);
    tcase_add_test(tc, lstm_learns_the_probe_async);
    tcase_add_test(tc, mlp_stays_at_chance);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
