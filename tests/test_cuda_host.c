/* The device paths of the core and the plugin's networks and learner, run on the host
 * through the plugin's test build (FRL_CUDA_PLUGIN = libfastrl-cuda-host, whose ops are
 * tests/cuda/ops_host.c) with runtime.device=cuda. The CPU runtime is the reference:
 * acting must give the same bits (both sides use the scalar kernel table, FRL_KERNELS=
 * scalar), learning the same parameters up to the rounding of a different summation
 * order (the CPU sums shard gradients; the device sums the whole minibatch at once). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/ppo.h"
#include "core/plugin_api.h"
#include "nn/dev_math.h"
#include "sampler/async.h"
#include "trainer/trainer.h"
#include "test_util.h"

static frl_runtime *runtime_on(const char *device, int threads)
{
    frl_config *cfg = frl_test_settings("runtime.seed=7");
    frl_runtime *rt = NULL;
    ck_assert_int_eq(frl_config_set(cfg, "runtime.device", device), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "runtime.threads", threads), FRL_OK);
    frl_status st = frl_runtime_create(&rt, cfg, NULL, NULL);
    ck_assert_msg(st == FRL_OK, "runtime.device=%s: %s", device, frl_last_error());
    frl_config_destroy(cfg);
    return rt;
}

/* Sanitizer builds: short learning runs, which check memory and threads but not that
 * the task is solved (the release builds do). */
static int quick(void)
{
    const char *q = getenv("FRL_TEST_QUICK");
    return q && q[0] == '1';
}

/* Fewer cases of the comparisons that repeat one path with other arithmetic: under
 * TSan, and on the emulator under ASan (FRL_TEST_FEW_CASES), where every case costs
 * seconds; the emulator's ops are checked there op by op (cuda_ops_emu), and the
 * plugin's code runs every case on the host ops (cuda_host). */
static int few_cases(void)
{
    const char *q = getenv("FRL_TEST_FEW_CASES");
    return FRL_TEST_TSAN || (q && q[0] == '1');
}

/* The budget of a learning run: `full` steps, or `short_steps` with FRL_TEST_QUICK (a
 * sanitizer build or the emulator), where the run is not asked to solve the task. */
static int64_t learning_budget(int64_t full, int64_t short_steps, const char *what)
{
    if (!quick())
        return full;
    printf("%s: %lld steps only (FRL_TEST_QUICK, a sanitizer build or the emulator): the "
           "release builds check that it solves the task\n", what, (long long)short_steps);
    return short_steps;
}

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return *x >> 11;
}

static float *random_obs(int64_t n, uint64_t seed)
{
    float *o = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        o[i] = (float)((double)lcg(&seed) / 9007199254740992.0 * 4.0 - 2.0);
    return o;
}

START_TEST(device_is_the_host_plugin)
{
    frl_runtime *rt = runtime_on("cuda", 1);
    ck_assert_ptr_nonnull(strstr(frl_runtime_device(rt), "host stand-in"));
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- acting: the same bits as the CPU ---- */

typedef struct act_out {
    unsigned char *actions;
    float *lp, *v;
} act_out;

static act_out act_with(frl_policy *p, int32_t rows, int32_t act_bytes, const float *obs)
{
    act_out o = {malloc((size_t)rows * (size_t)act_bytes), malloc(sizeof(float) * (size_t)rows),
                 malloc(sizeof(float) * (size_t)rows)};
    frl_act_args a;
    frl_act_args_init(&a);
    frl_test_act_widths(&a, p);
    a.batch = rows;
    a.observations = obs;
    a.actions = o.actions;
    a.log_probs = o.lp;
    a.values = o.v;
    a.counter = 3;
    ck_assert_msg(frl_policy_act(p, &a) == FRL_OK, "%s", frl_policy_last_error(p));
    return o;
}

static void free_out(act_out *o)
{
    free(o->actions);
    free(o->lp);
    free(o->v);
}

/* A policy of `settings` on the CPU and on the device acting on rows observations. */
static void check_act_same(const char *env, const char *settings, int32_t rows)
{
    frl_runtime *cpu = runtime_on("cpu", 1), *dev = runtime_on("cuda", 1);
    frl_config *cfg = frl_test_settings(settings);
    frl_env *e;
    ck_assert_int_eq(frl_env_create(&e, cpu, env, NULL), FRL_OK);
    const frl_space *os = frl_env_observation_space(e), *as = frl_env_action_space(e);
    frl_policy *pc, *pd;
    ck_assert_int_eq(frl_policy_create(&pc, cpu, cfg, os, as), FRL_OK);
    ck_assert_msg(frl_policy_create(&pd, dev, cfg, os, as) == FRL_OK, "%s", frl_last_error());
    int32_t ow = (int32_t)frl_space_n(os), width = (int32_t)frl_space_n(as);
    int32_t ab = frl_space_get_kind(as) == FRL_SPACE_DISCRETE ? 4 : 4 * width;
    float *obs = random_obs((int64_t)rows * ow, 11);
    act_out a = act_with(pc, rows, ab, obs), b = act_with(pd, rows, ab, obs);
    ck_assert_int_eq(memcmp(a.actions, b.actions, (size_t)rows * (size_t)ab), 0);
    ck_assert_int_eq(memcmp(a.lp, b.lp, sizeof(float) * (size_t)rows), 0);
    ck_assert_int_eq(memcmp(a.v, b.v, sizeof(float) * (size_t)rows), 0);
    free_out(&a);
    free_out(&b);
    free(obs);
    frl_policy_destroy(pc);
    frl_policy_destroy(pd);
    frl_env_destroy(e);
    frl_config_destroy(cfg);
    frl_runtime_destroy(cpu);
    frl_runtime_destroy(dev);
}

START_TEST(act_matches_cpu)
{
    check_act_same("CartPole-v1", "policy.hidden=64,64", 1000);
    /* more rows than one device forward takes: chunked */
    check_act_same("CartPole-v1", "policy.hidden=8", quick() ? 16385 : 40000);
    check_act_same("Pendulum-v1", "policy.hidden=32,32 policy.activation=relu", 777);
    check_act_same("Acrobot-v1", "policy.shared=true policy.obs_norm=true policy.activation=elu", 513);
    check_act_same("MountainCarContinuous-v0", "policy.hidden=", 100);
    /* a pixel encoder: the images' bytes scaled, three conv layers, then the MLPs */
    check_act_same("PixelGrid-v0", "policy.encoder=simple policy.conv_channels=4,8,8 "
                   "policy.hidden=32", quick() ? 5 : 70);
    check_act_same("PixelGrid-v0", "policy.encoder=nature policy.conv_channels=4,4,8 "
                   "policy.shared=true policy.hidden=16,16", quick() ? 3 : 33);
    /* a mixed observation: the features joined by the row's vector */
    check_act_same("PixelGoal-v0", "policy.encoder=simple policy.conv_channels=4,8,8 "
                   "policy.hidden=32", quick() ? 5 : 70);
    check_act_same("PixelGoal-v0", "policy.encoder=simple policy.conv_channels=4,4,4 "
                   "policy.hidden=8 policy.obs_norm=true", quick() ? 5 : 40);
    /* Q-heads (DQN's acting): Q-values, and a dueling Q's V + A - mean A */
    check_act_same("CartPole-v1", "policy.head=q policy.hidden=32,32", 300);
    check_act_same("Acrobot-v1", "policy.head=dueling_q policy.hidden=16", 300);
}
END_TEST

/* A policy with state acting step by step on the CPU and on the device: the same
 * actions, values and states, bit for bit (row 1 starts an episode at step 2). */
static void check_state_same(const frl_space *os, const frl_space *as, const char *settings,
                             int32_t rows, int32_t steps)
{
    frl_runtime *cpu = runtime_on("cpu", 1), *dev = runtime_on("cuda", 1);
    frl_config *cfg = frl_test_settings(settings);
    frl_policy *p[2];
    ck_assert_int_eq(frl_policy_create(&p[0], cpu, cfg, os, as), FRL_OK);
    ck_assert_msg(frl_policy_create(&p[1], dev, cfg, os, as) == FRL_OK, "%s", frl_last_error());
    ck_assert_ptr_nonnull(p[1]->dev); /* acting runs on the device, not a CPU fallback */
    int64_t sw = frl_policy_state_size(p[0]), ow = frl_space_width(os);
    int32_t ab = frl_space_get_kind(as) == FRL_SPACE_DISCRETE ? 4 : 4 * (int32_t)frl_space_n(as);
    size_t sbytes = sizeof(float) * (size_t)(rows * sw);
    float *state[2] = {calloc(1, sbytes), calloc(1, sbytes)};
    unsigned char *acts[2] = {malloc((size_t)(rows * ab)), malloc((size_t)(rows * ab))};
    float *v[2] = {malloc(sizeof(float) * (size_t)rows), malloc(sizeof(float) * (size_t)rows)};
    uint8_t *reset = calloc((size_t)rows, 1);
    for (int32_t t = 0; t < steps; t++) {
        float *obs = random_obs(rows * ow, (uint64_t)(20 + t));
        reset[rows > 1] = t == 2;
        for (int k = 0; k < 2; k++) {
            frl_act_args a;
            frl_act_args_init(&a);
            frl_test_act_widths(&a, p[k]);
            a.batch = rows;
            a.observations = obs;
            a.actions = acts[k];
            a.values = v[k];
            a.state = state[k];
            a.state_width = sw;
            a.reset = reset;
            ck_assert_msg(frl_policy_act(p[k], &a) == FRL_OK, "%s", frl_policy_last_error(p[k]));
        }
        ck_assert_msg(memcmp(acts[0], acts[1], (size_t)(rows * ab)) == 0, "[%s] step %d: "
                      "actions differ", settings, (int)t);
        ck_assert_msg(memcmp(v[0], v[1], sizeof(float) * (size_t)rows) == 0, "[%s] step %d: "
                      "values differ (%.9g, %.9g)", settings, (int)t, v[0][0], v[1][0]);
        ck_assert_msg(memcmp(state[0], state[1], sbytes) == 0, "[%s] step %d: states differ",
                      settings, (int)t);
        free(obs);
    }
    for (int k = 0; k < 2; k++) {
        free(state[k]);
        free(acts[k]);
        free(v[k]);
        frl_policy_destroy(p[k]);
    }
    free(reset);
    frl_config_destroy(cfg);
    frl_runtime_destroy(cpu);
    frl_runtime_destroy(dev);
}

/* A frame stack: the device takes the stacks the host builds from the state. */
START_TEST(stack_act_matches_cpu)
{
    frl_space *os, *as;
    ck_assert_int_eq(frl_space_create_image(&os, NULL, 40, 40, 3), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 4), FRL_OK);
    check_state_same(os, as, "policy.encoder=simple policy.conv_channels=4,4,4 "
                     "policy.hidden=8 policy.frame_stack=3", 5, 4);
    frl_space_destroy(os);
    frl_space_destroy(as);
}
END_TEST

/* One act of a recurrent policy over rows rows from state (read and replaced). */
static frl_status act_state(frl_policy *p, int32_t rows, const float *obs, float *state,
                            int32_t *actions)
{
    frl_act_args a;
    frl_act_args_init(&a);
    frl_test_act_widths(&a, p);
    a.batch = rows;
    a.observations = obs;
    a.actions = actions;
    a.state = state;
    a.state_width = frl_policy_state_size(p);
    return frl_policy_act(p, &a);
}

/* A device failure during a recurrent step leaves the caller's state as it was (the
 * plugin lands the new one in its own buffer first), and the step after it gives what
 * a step without the failure would have. */
START_TEST(recurrent_failure_keeps_state)
{
    enum { ROWS = 6 };
    frl_runtime *dev = runtime_on("cuda", 1);
    frl_env *e;
    ck_assert_int_eq(frl_env_create(&e, dev, "CartPole-v1", NULL), FRL_OK);
    frl_config *cfg = frl_test_settings("policy.core=lstm policy.hidden=8 policy.core_size=8");
    frl_policy *p;
    ck_assert_int_eq(frl_policy_create(&p, dev, cfg, frl_env_observation_space(e),
                                       frl_env_action_space(e)), FRL_OK);
    int64_t sw = frl_policy_state_size(p);
    size_t bytes = sizeof(float) * (size_t)(ROWS * sw);
    float *state = calloc(1, bytes), *kept = malloc(bytes), *twin = malloc(bytes);
    float *obs = random_obs(ROWS * 4, 5);
    int32_t act[ROWS], act_twin[ROWS];
    ck_assert_int_eq(act_state(p, ROWS, obs, state, act), FRL_OK); /* uploads the weights */
    memcpy(kept, state, bytes);
    memcpy(twin, state, bytes);
    setenv("FAKE_CUDA_FAIL_SYNC", "1", 1);
    frl_status st = act_state(p, ROWS, obs, state, act);
    unsetenv("FAKE_CUDA_FAIL_SYNC");
    ck_assert_int_eq(st, FRL_ERR_DEVICE);
    ck_assert_int_eq(memcmp(state, kept, bytes), 0);
    ck_assert_int_eq(act_state(p, ROWS, obs, state, act), FRL_OK);
    ck_assert_int_eq(act_state(p, ROWS, obs, twin, act_twin), FRL_OK);
    ck_assert_int_eq(memcmp(act, act_twin, sizeof act), 0);
    ck_assert_int_eq(memcmp(state, twin, bytes), 0);
    ck_assert_int_ne(memcmp(state, kept, bytes), 0); /* and it did step */
    free(state);
    free(kept);
    free(twin);
    free(obs);
    frl_policy_destroy(p);
    frl_config_destroy(cfg);
    frl_env_destroy(e);
    frl_runtime_destroy(dev);
}
END_TEST

/* A device failure while a frame stack acts leaves the caller's frames as they were
 * (they were shifted before the forward, so a failed call lost the oldest frame), and
 * the act after it gives what an act without the failure would have. */
START_TEST(stack_failure_keeps_state)
{
    enum { ROWS = 3 };
    frl_runtime *dev = runtime_on("cuda", 1);
    frl_space *os, *as;
    ck_assert_int_eq(frl_space_create_image(&os, NULL, 40, 40, 3), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 3), FRL_OK);
    frl_config *cfg = frl_test_settings("policy.encoder=simple policy.conv_channels=4,4,4 "
                                        "policy.hidden=8 policy.frame_stack=3");
    frl_policy *p;
    ck_assert_int_eq(frl_policy_create(&p, dev, cfg, os, as), FRL_OK);
    ck_assert_ptr_nonnull(p->dev);
    int64_t sw = frl_policy_state_size(p), ow = frl_space_width(os);
    size_t bytes = sizeof(float) * (size_t)(ROWS * sw);
    float *state = calloc(1, bytes), *kept = malloc(bytes), *twin = malloc(bytes);
    float *obs[2] = {random_obs(ROWS * ow, 8), random_obs(ROWS * ow, 9)};
    int32_t act[ROWS], act_twin[ROWS];
    ck_assert_int_eq(act_state(p, ROWS, obs[0], state, act), FRL_OK);
    memcpy(kept, state, bytes);
    memcpy(twin, state, bytes);
    setenv("FAKE_CUDA_FAIL_SYNC", "1", 1);
    frl_status st = act_state(p, ROWS, obs[1], state, act);
    unsetenv("FAKE_CUDA_FAIL_SYNC");
    ck_assert_int_eq(st, FRL_ERR_DEVICE);
    ck_assert_int_eq(memcmp(state, kept, bytes), 0);
    ck_assert_int_eq(act_state(p, ROWS, obs[1], state, act), FRL_OK);
    ck_assert_int_eq(act_state(p, ROWS, obs[1], twin, act_twin), FRL_OK);
    ck_assert_int_eq(memcmp(act, act_twin, sizeof act), 0);
    ck_assert_int_eq(memcmp(state, twin, bytes), 0);
    ck_assert_int_ne(memcmp(state, kept, bytes), 0); /* and it did step */
    free(state);
    free(kept);
    free(twin);
    free(obs[0]);
    free(obs[1]);
    frl_policy_destroy(p);
    frl_config_destroy(cfg);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_runtime_destroy(dev);
}
END_TEST

/* The plugin refuses, with a sentence, what the core never asks of it: a recurrent model
 * through model_forward or into a device learner, an MLP model through model_step, and
 * values from a Q-head. */
START_TEST(plugin_refuses_mismatched_calls)
{
    frl_runtime *dev = runtime_on("cuda", 1);
    const frl_cuda_plugin *pl = dev->device.plugin;
    frl_env *e;
    ck_assert_int_eq(frl_env_create(&e, dev, "CartPole-v1", NULL), FRL_OK);
    const frl_space *os = frl_env_observation_space(e), *as = frl_env_action_space(e);
    frl_config *cg = frl_test_settings("policy.core=gru policy.hidden=8 policy.core_size=8");
    frl_config *cq = frl_test_settings("policy.head=q policy.hidden=8");
    frl_policy *gru, *q;
    ck_assert_int_eq(frl_policy_create(&gru, dev, cg, os, as), FRL_OK);
    ck_assert_int_eq(frl_policy_create(&q, dev, cq, os, as), FRL_OK);
    float obs[4] = {0}, out[2], value[1], state[8] = {0};
    char err[256];
    ck_assert_int_ne(pl->model_forward(gru->dev->model, 1, obs, out, NULL, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "model_step"));
    frl_dm_learn_desc ld;
    memset(&ld, 0, sizeof ld);
    void *learner = NULL;
    ck_assert_int_ne(pl->learner_create(gru->dev->model, &ld, &learner, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "recurrent"));
    ck_assert_int_ne(pl->learner_create(q->dev->model, &ld, &learner, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "Q-heads"));
    ck_assert_ptr_null(learner);
    ck_assert_int_ne(pl->model_step(q->dev->model, 1, obs, state, out, NULL, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "no recurrent core"));
    ck_assert_int_ne(pl->model_forward(q->dev->model, 1, obs, out, value, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "no values"));
    frl_policy_destroy(gru);
    frl_policy_destroy(q);
    frl_config_destroy(cg);
    frl_config_destroy(cq);
    frl_env_destroy(e);
    frl_runtime_destroy(dev);
}
END_TEST

/* STREAMS without its events (FAKE_CUDA_NO_EVENTS): every forward falls back to LAUNCH
 * with the same outputs, the second one too. The half-made second stream used to stay
 * open, so the next forward took STREAMS into a missing event and workspace (a crash on
 * the host ops, an illegal address on a GPU). */
START_TEST(streams_setup_failure_falls_back)
{
    frl_runtime *dev = runtime_on("cuda", 1);
    const frl_cuda_plugin *pl = dev->device.plugin;
    frl_env *e;
    ck_assert_int_eq(frl_env_create(&e, dev, "CartPole-v1", NULL), FRL_OK);
    frl_config *cfg = frl_test_settings("policy.hidden=8");
    frl_policy *p;
    ck_assert_int_eq(frl_policy_create(&p, dev, cfg, frl_env_observation_space(e),
                                       frl_env_action_space(e)), FRL_OK);
    ck_assert_int_eq(frl_policy_device_refresh(p, NULL), FRL_OK);
    enum { ROWS = 6 };
    float *obs = random_obs(ROWS * 4, 11), want[ROWS * 2], got[ROWS * 2], v[ROWS], w[ROWS];
    char err[256];
    void *m = p->dev->model;
    ck_assert_int_eq(pl->model_path(m, FRL_CUDA_PATH_LAUNCH, err, sizeof err), 0);
    ck_assert_int_eq(pl->model_forward(m, ROWS, obs, want, w, err, sizeof err), 0);
    ck_assert_int_eq(pl->model_path(m, FRL_CUDA_PATH_STREAMS, err, sizeof err), 0);
    setenv("FAKE_CUDA_NO_EVENTS", "1", 1);
    for (int i = 0; i < 2; i++) {
        memset(got, 0, sizeof got);
        ck_assert_msg(pl->model_forward(m, ROWS, obs, got, v, err, sizeof err) == 0,
                      "forward %d: %s", i, err);
        ck_assert_int_eq(pl->model_last_path(m), FRL_CUDA_PATH_LAUNCH);
        ck_assert_int_eq(memcmp(got, want, sizeof got), 0);
        ck_assert_int_eq(memcmp(v, w, sizeof v), 0);
    }
    unsetenv("FAKE_CUDA_NO_EVENTS");
    free(obs);
    frl_policy_destroy(p);
    frl_config_destroy(cfg);
    frl_env_destroy(e);
    frl_runtime_destroy(dev);
}
END_TEST

/* Recurrent policies step on the device (the plugin's model_step), their state going
 * up and coming back each step: GRU and LSTM cores, one tower or two, with and without
 * encoder layers, the normaliser, a pixel encoder, and the Q-heads R2D2 acts with. */
START_TEST(recurrent_act_matches_cpu)
{
    frl_space *box, *disc, *img, *cont;
    int64_t w = 4, cw = 2;
    ck_assert_int_eq(frl_space_create_box(&box, NULL, 1, &w, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&disc, NULL, 3), FRL_OK);
    ck_assert_int_eq(frl_space_create_box(&cont, NULL, 1, &cw, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_image(&img, NULL, 40, 40, 3), FRL_OK);
    int32_t rows = quick() ? 9 : 300;
    check_state_same(box, disc, "policy.core=gru policy.shared=true policy.hidden=16", rows, 5);
    check_state_same(box, cont, "policy.core=lstm policy.hidden=16,8 policy.core_size=12", rows,
                     5);
    check_state_same(box, disc, "policy.core=gru policy.hidden= policy.obs_norm=true", rows, 4);
    check_state_same(box, disc, "policy.core=lstm policy.head=q policy.hidden=16", rows, 5);
    check_state_same(box, disc, "policy.core=gru policy.head=dueling_q policy.hidden=8", rows,
                     5);
    check_state_same(img, disc, "policy.core=gru policy.encoder=simple "
                     "policy.conv_channels=4,4,4 policy.hidden=8", quick() ? 3 : 20, 3);
    frl_space_destroy(box);
    frl_space_destroy(disc);
    frl_space_destroy(cont);
    frl_space_destroy(img);
}
END_TEST

/* ---- learning: the same parameters, to rounding ---- */

static frl_trainer *trainer_on(const char *device, const char *env, const char *settings)
{
    frl_runtime *rt = runtime_on(device, 1);
    frl_config *cfg = frl_test_settings(settings);
    /* quick: the same code paths with networks a sixteenth of the work */
    if (quick())
        ck_assert_int_eq(frl_config_parse(cfg, "policy.hidden=16,16"), FRL_OK);
    frl_trainer *t;
    frl_status st = frl_trainer_create(&t, rt, env, cfg);
    ck_assert_msg(st == FRL_OK, "%s on %s: %s", env, device, frl_last_error());
    frl_config_destroy(cfg);
    return t;
}

static void destroy_trainer(frl_trainer *t)
{
    frl_runtime *rt = t->rt;
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
}

/* ---- runtime.device=auto places a trainer's networks by its workload ---- */

/* A trainer on a runtime of `threads` threads: whether its networks are on the device. */
static int placed_on_device(const char *device, int threads, const char *settings)
{
    frl_runtime *rt = runtime_on(device, threads);
    frl_config *cfg = frl_test_settings(settings);
    if (quick()) /* the rule reads the env and thread counts, not the network's size */
        ck_assert_int_eq(frl_config_parse(cfg, "policy.hidden=16,16"), FRL_OK);
    frl_trainer *t;
    frl_status st = frl_trainer_create(&t, rt, "CartPole-v1", cfg);
    ck_assert_msg(st == FRL_OK, "[%s] on %s: %s", settings, device, frl_last_error());
    /* The place is chosen at creation; the updates check it trains there (one when
     * quick: under the sanitizers and on the emulator each update costs a second). */
    ck_assert_int_eq(frl_trainer_train(t, (quick() ? 1 : 2) * t->T * t->B), FRL_OK);
    int on = t->policy->dev != NULL;
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
    return on;
}

/* auto: the device from 16 envs a thread (frl_device_pays), networks it cannot hold on
 * the CPU instead of an error; cuda keeps small workloads on the device and refuses
 * what it cannot hold. */
START_TEST(auto_places_by_workload)
{
    ck_assert_int_eq(placed_on_device("auto", 2, "train.num_envs=8"), 0);
    ck_assert_int_eq(placed_on_device("auto", 2, "train.num_envs=31 train.rollout=8"), 0);
    ck_assert_int_eq(placed_on_device("auto", 2, "train.num_envs=32 train.rollout=8"), 1);
    ck_assert_int_eq(placed_on_device("auto", 1, "train.num_envs=16 train.rollout=8"), 1);
    ck_assert_int_eq(placed_on_device("auto", 2, "train.num_envs=32 train.rollout=8 "
                                      "sampler.mode=async"), 1);
    /* a recurrent policy acts on the device by the same rule (and learns on the CPU) */
    ck_assert_int_eq(placed_on_device("auto", 2, "train.num_envs=32 train.rollout=8 "
                                      "policy.core=gru"), 1);
    ck_assert_int_eq(placed_on_device("auto", 2, "train.num_envs=8 train.rollout=8 "
                                      "policy.core=gru"), 0);
    ck_assert_int_eq(placed_on_device("cuda", 2, "train.num_envs=8"), 1);
    ck_assert_int_eq(placed_on_device("cuda", 2, "train.num_envs=8 train.rollout=8 "
                                      "policy.core=lstm"), 1);
}
END_TEST

/* Stops at random moments of an async trainer on the device with 2 threads, whose
 * batches of 256 rows are sampled in two SAMPLE pieces: every call returns OK or
 * INTERRUPTED, a batch left half sampled by a stop is finished at the call's end (else
 * its groups would never step again and its weights stay pinned), and the trainer then
 * trains on to a budget. */
typedef struct stop_after {
    frl_trainer *t;
    int us;
} stop_after;

static void *stop_later(void *arg)
{
    const stop_after *s = arg;
    usleep((useconds_t)s->us);
    frl_trainer_request_stop(s->t);
    return NULL;
}

START_TEST(async_device_random_stops)
{
    frl_runtime *rt = runtime_on("cuda", 2);
    frl_config *cfg = frl_test_settings("sampler.mode=async train.num_envs=512 "
                                        "train.rollout=2 policy.hidden=8");
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    uint64_t x = 99;
    int interrupted = 0;
    /* few_cases: 20 stops (9 s for 60 under TSan, where every call was interrupted) */
    int stops = few_cases() ? 20 : 60;
    for (int i = 0; i < stops; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        stop_after s = {t, (int)((x >> 33) % 4000)};
        pthread_t th;
        ck_assert_int_eq(pthread_create(&th, NULL, stop_later, &s), 0);
        frl_status st = frl_trainer_train(t, frl_trainer_metrics(t)->env_steps + 1024 * 20);
        ck_assert_msg(st == FRL_OK || st == FRL_ERR_INTERRUPTED, "%s", frl_last_error());
        interrupted += st == FRL_ERR_INTERRUPTED;
        pthread_join(th, NULL);
    }
    printf("async on the device, 2 threads: %d random stops, %d interrupted\n", stops,
           interrupted);
    ck_assert_int_gt(interrupted, 0);
    frl_test_trains_on(t, 1024 * 4);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- a population evaluated on the device: the CPU's returns, bit for bit ---- */

/* ES on both runtimes for a few generations (its members' inference runs through the
 * plugin's model_forward_members on the device one): the same fitnesses, so the same
 * parameters after every tell. */
START_TEST(population_matches_cpu)
{
    const char *settings = "train.algo=es es.population=16 train.num_envs=8 "
                           "policy.obs_norm=true es.noise_floats=100000";
    frl_trainer *c = trainer_on("cpu", "CartPole-v1", settings);
    frl_trainer *d = trainer_on("cuda", "CartPole-v1", settings);
    ck_assert_ptr_nonnull(d->policy->dev);
    int64_t steps = quick() ? 2000 : 20000;
    ck_assert_int_eq(frl_trainer_train(c, steps), FRL_OK);
    ck_assert_msg(frl_trainer_train(d, steps) == FRL_OK, "%s", frl_trainer_last_error(d));
    const frl_metrics *mc = frl_trainer_metrics(c), *md = frl_trainer_metrics(d);
    printf("population on the device: %lld generations, %lld steps, mean fitness %g / %g\n",
           (long long)mc->update, (long long)mc->env_steps, mc->population_mean,
           md->population_mean);
    ck_assert_int_ge(mc->update, 2);
    ck_assert_int_eq(mc->env_steps, md->env_steps);
    ck_assert_double_eq(mc->population_mean, md->population_mean);
    ck_assert_int_eq(memcmp(c->policy->params, d->policy->params,
                            sizeof(float) * c->policy->num_params), 0);
    destroy_trainer(c);
    destroy_trainer(d);
}
END_TEST

/* A network the members' kernel cannot run (here an image encoder): runtime.device=auto
 * evaluates on the CPU, as the CPU runtime does (it failed every train call with
 * FRL_ERR_DEVICE); cuda refuses, naming why. */
START_TEST(population_beyond_the_kernel)
{
    const char *settings = "train.algo=es es.population=16 train.num_envs=16 "
                           "policy.conv_channels=4,4,4 es.noise_floats=100000";
    frl_trainer *c = trainer_on("cpu", "PixelGrid-v0", settings);
    frl_trainer *a = trainer_on("auto", "PixelGrid-v0", settings);
    frl_trainer *d = trainer_on("cuda", "PixelGrid-v0", settings);
    ck_assert_ptr_nonnull(a->policy->dev);
    ck_assert_int_eq(frl_trainer_train(c, 1000), FRL_OK);
    ck_assert_msg(frl_trainer_train(a, 1000) == FRL_OK, "%s", frl_trainer_last_error(a));
    ck_assert_int_ge(frl_trainer_metrics(a)->update, 1);
    ck_assert_int_eq(frl_trainer_metrics(c)->env_steps, frl_trainer_metrics(a)->env_steps);
    ck_assert_int_eq(memcmp(c->policy->params, a->policy->params,
                            sizeof(float) * c->policy->num_params), 0);
    ck_assert_int_eq(frl_trainer_train(d, 1000), FRL_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(frl_trainer_last_error(d), "image encoder") &&
                  strstr(frl_trainer_last_error(d), "auto acts on the CPU"), "%s",
                  frl_trainer_last_error(d));
    destroy_trainer(c);
    destroy_trainer(a);
    destroy_trainer(d);
}
END_TEST

/* The largest parameter difference over the largest parameter magnitude. */
static double param_gap(const frl_policy *a, const frl_policy *b)
{
    double d = 0, m = 0;
    for (size_t i = 0; i < a->num_params; i++) {
        d = fmax(d, fabs((double)a->params[i] - b->params[i]));
        m = fmax(m, fabs((double)a->params[i]));
    }
    return d / m;
}

/* updates updates of `settings` on both: the parameters and the metrics agree. */
static void check_learn_same(const char *env, const char *settings, int updates, double tol)
{
    frl_trainer *c = trainer_on("cpu", env, settings), *d = trainer_on("cuda", env, settings);
    ck_assert_ptr_nonnull(((frl_ppo *)d->learner.impl)->dev);
    updates = quick() ? 1 : updates;
    int64_t steps = (int64_t)updates * c->T * c->B;
    ck_assert_int_eq(frl_trainer_train(c, steps), FRL_OK);
    ck_assert_msg(frl_trainer_train(d, steps) == FRL_OK, "%s", frl_trainer_last_error(d));
    const frl_metrics *mc = frl_trainer_metrics(c), *md = frl_trainer_metrics(d);
    double gap = param_gap(c->policy, d->policy);
    printf("%s [%s]: %d updates, parameter gap %.3g, policy loss %.6g / %.6g, value loss "
           "%.6g / %.6g, kl %.3g / %.3g\n", env, settings, updates, gap, mc->policy_loss,
           md->policy_loss, mc->value_loss, md->value_loss, mc->approx_kl, md->approx_kl);
    ck_assert_int_eq(mc->update, md->update);
    ck_assert_int_eq(mc->epochs_done, md->epochs_done);
    ck_assert_msg(gap < tol, "parameter gap %g >= %g", gap, tol);
    ck_assert(fabs(mc->value_loss - md->value_loss) <= 1e-3 * fabs(mc->value_loss) + 1e-6);
    ck_assert(fabs(mc->entropy - md->entropy) <= 1e-4 * fabs(mc->entropy) + 1e-6);
    ck_assert(fabs(mc->explained_variance - md->explained_variance) <= 1e-3);
    ck_assert_uint_eq(frl_policy_version(c->policy), frl_policy_version(d->policy));
    destroy_trainer(c);
    destroy_trainer(d);
}

START_TEST(learner_matches_cpu)
{
    check_learn_same("CartPole-v1", "", 2, 1e-4);
    check_learn_same("Acrobot-v1", "policy.shared=true policy.obs_norm=true train.clip_value=true "
                     "train.advantage=vtrace train.vtrace_rho=0.9", 2, 1e-4);
    /* a mixed observation with a shared trunk: the features' share of the input
     * gradient unpacked for the encoder */
    check_learn_same("PixelGoal-v0", "policy.conv_channels=4,4,8 policy.hidden=16 "
                     "policy.shared=true train.num_envs=2 train.rollout=16 "
                     "train.minibatches=1 policy.obs_norm=true", 2, 1e-4);
    /* a frame stack: the device builds each row's stack from single frames (the
     * rollout's, the bootstrap step's, the state's before step 0, zeros before an
     * episode's start); two updates, so the second starts from the first's state.
     * few_cases: half the rows and channels (the same stacking, with minibatches and
     * an episode start, as 20 steps truncate one; 20 s under TSan at full size) */
    check_learn_same("PixelGrid-v0", few_cases() ? "policy.conv_channels=4,4,4 policy.hidden=16 "
                     "policy.frame_stack=3 train.num_envs=2 train.rollout=32 "
                     "train.minibatches=2" : "policy.conv_channels=4,8,8 policy.hidden=32 "
                     "policy.frame_stack=3 train.num_envs=4 train.rollout=32 "
                     "train.minibatches=2", 2, 1e-4);
    /* The cases above are one of each path's threads; those below run the same threads
     * with other arithmetic (a Gaussian head, IMPALA's loss, the other encoders), which
     * the other builds check (few_cases). */
    if (few_cases()) {
        printf("learner_matches_cpu: 4 of 9 cases (TSan, or the emulator under ASan: one "
               "of each path's threads)\n");
        return;
    }
    check_learn_same("Pendulum-v1", "train.num_envs=2 train.rollout=256 train.minibatches=8", 1,
                     1e-4);
    check_learn_same("CartPole-v1", "train.algo=impala train.epochs=1", 2, 1e-4);
    check_learn_same("MountainCarContinuous-v0", "train.norm_adv=false train.max_grad_norm=0.1 "
                     "train.target_kl=0.001", 1, 1e-4);
    /* through a pixel encoder (its gradients summed over blocks of images) */
    check_learn_same("PixelGrid-v0", "policy.conv_channels=4,8,8 policy.hidden=32 "
                     "train.num_envs=4 train.rollout=32 train.minibatches=2", 1, 1e-4);
    /* the same with separate networks */
    check_learn_same("PixelGoal-v0", "policy.conv_channels=4,8,8 policy.hidden=32 "
                     "train.num_envs=4 train.rollout=32 train.minibatches=2", 1, 1e-4);
    if (!quick()) /* the sanitizer builds keep the first: the encoder's backward is one */
        check_learn_same("PixelGrid-v0", "policy.encoder=nature policy.conv_channels=4,4,8 "
                         "policy.shared=true policy.hidden=16 train.num_envs=2 "
                         "train.rollout=16 train.minibatches=1", 1, 1e-4);
}
END_TEST

/* FRL_CUDA_FUSE=0: the learner's passes layer by layer (act_bwd, linear_bwd_weight and a
 * gather an array, as before the tiled and fused ops), which benchmarks compare with the
 * default; it must learn the same, a shared trunk and an encoder included. */
START_TEST(learner_unfused_matches_cpu)
{
    setenv("FRL_CUDA_FUSE", "0", 1);
    check_learn_same("CartPole-v1", "", 2, 1e-4);
    if (quick()) /* the sanitizer builds: the layer-by-layer path once; the rest in release */
        printf("FRL_TEST_QUICK: FRL_CUDA_FUSE=0 with a shared trunk and an encoder is left to "
               "the release builds\n");
    else {
        check_learn_same("Acrobot-v1", "policy.shared=true policy.obs_norm=true", 1, 1e-4);
        check_learn_same("PixelGoal-v0", "policy.conv_channels=4,8,8 policy.hidden=32 "
                         "train.num_envs=4 train.rollout=32 train.minibatches=2", 1, 1e-4);
    }
    unsetenv("FRL_CUDA_FUSE");
}
END_TEST

/* The device learner solves CartPole with the built-in settings but for a network of
 * 16 x 16: the host ops are scalar loops, which took 24 s for the 64 x 64 default; the
 * comparisons above check the default's sizes update for update. */
START_TEST(learns_cartpole)
{
    frl_trainer *t = trainer_on("cuda", "CartPole-v1",
                                "train.target_return=475 policy.hidden=16,16");
    frl_status st = frl_trainer_train(t, learning_budget(400000, 8192, "learns_cartpole"));
    const frl_metrics *m = frl_trainer_metrics(t);
    printf("CartPole-v1 on the device learner: mean return %.1f after %lld steps\n",
           m->mean_return, (long long)m->env_steps);
    ck_assert_msg(st == FRL_OK, "%s", frl_trainer_last_error(t));
    ck_assert(quick() || m->mean_return >= 475);
    destroy_trainer(t);
}
END_TEST

/* A trainer saved from the device runs on: the host copy is the device's. */
START_TEST(save_and_load_on_device)
{
    char path[] = "/tmp/frl_cuda_host_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    frl_trainer *t = trainer_on("cuda", "CartPole-v1", "");
    ck_assert_int_eq(frl_trainer_train(t, 2048), FRL_OK);
    ck_assert_int_eq(frl_trainer_save(t, path), FRL_OK);
    frl_trainer *u;
    ck_assert_msg(frl_trainer_load(&u, t->rt, path, NULL) == FRL_OK, "%s", frl_last_error());
    ck_assert_double_eq(param_gap(t->policy, u->policy), 0);
    ck_assert_int_eq(frl_trainer_train(t, 4096), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(u, 4096), FRL_OK);
    ck_assert_double_eq(param_gap(t->policy, u->policy), 0);
    frl_trainer_destroy(u);
    destroy_trainer(t);
    remove(path);
}
END_TEST

/* A device failure at any point of a rollout or an update reaches the caller as
 * FRL_ERR_DEVICE; the policy keeps its last good parameters and the run goes on. */
START_TEST(device_failures_are_reported)
{
    frl_trainer *t = trainer_on("cuda", "CartPole-v1", "train.epochs=2");
    int64_t per_update = (int64_t)t->T * t->B;
    ck_assert_int_eq(frl_trainer_train(t, per_update), FRL_OK);
    size_t np = t->policy->num_params;
    const frl_ppo *l = t->learner.impl;
    float *before = malloc(sizeof(float) * np), *adam_before = malloc(sizeof(float) * np);
    /* T forwards, then the update: begin, 2 epochs, end, Adam read-back. */
    int stride = quick() ? t->T / 2 : t->T / 4;
    for (int n = 1; n <= t->T + 5; n += n < 2 || n >= t->T - 1 ? 1 : stride) {
        memcpy(before, t->policy->params, sizeof(float) * np);
        memcpy(adam_before, l->adam.m, sizeof(float) * np);
        uint64_t version = frl_policy_version(t->policy);
        int64_t adam_t = l->adam.t;
        char v[16];
        snprintf(v, sizeof v, "%d", n);
        setenv("FAKE_CUDA_FAIL_SYNC", v, 1);
        frl_status st = frl_trainer_train(t, t->book.pr.env_steps + per_update);
        unsetenv("FAKE_CUDA_FAIL_SYNC");
        ck_assert_msg(st == FRL_ERR_DEVICE, "sync %d: %s", n, frl_status_name(st));
        ck_assert_ptr_nonnull(strstr(frl_trainer_last_error(t), "injected device failure"));
        ck_assert_uint_eq(frl_policy_version(t->policy), version);
        ck_assert_int_eq(memcmp(before, t->policy->params, sizeof(float) * np), 0);
        /* ...and Adam's state with its step count, which a save writes with it */
        ck_assert_int_eq(memcmp(adam_before, l->adam.m, sizeof(float) * np), 0);
        ck_assert_msg(l->adam.t == adam_t, "sync %d: Adam's step %lld, was %lld", n,
                      (long long)l->adam.t, (long long)adam_t);
        /* A failed rollout is given back and a failed update drops its rollout (its steps
         * stay counted); either way the next call runs one whole update. */
        ck_assert_msg(frl_trainer_train(t, t->book.pr.env_steps + per_update) == FRL_OK,
                      "after sync %d: %s", n, frl_trainer_last_error(t));
        ck_assert_uint_eq(frl_policy_version(t->policy), version + 1);
        ck_assert_int_eq(l->adam.t, adam_t + 2 * (int64_t)l->s.minibatches);
    }
    /* acting through the public API */
    float obs[4] = {0.01f, 0.02f, 0.03f, 0.04f};
    int32_t action;
    frl_act_args a;
    frl_act_args_init(&a);
    frl_test_act_widths(&a, t->policy);
    a.batch = 1;
    a.observations = obs;
    a.actions = &action;
    setenv("FAKE_CUDA_FAIL_SYNC", "1", 1);
    ck_assert_int_eq(frl_policy_act(t->policy, &a), FRL_ERR_DEVICE);
    unsetenv("FAKE_CUDA_FAIL_SYNC");
    ck_assert_int_eq(frl_policy_act(t->policy, &a), FRL_OK);
    free(before);
    free(adam_before);
    destroy_trainer(t);
}
END_TEST

/* The asynchronous sampler on the device: inference on its own model, learning on the
 * trainer's. */
START_TEST(async_with_device_learner)
{
    frl_runtime *rt = runtime_on("cuda", 2);
    /* 16 x 16, as learns_cartpole: 44 s on the host ops with the default's 64 x 64 */
    frl_config *cfg = frl_test_settings("sampler.mode=async train.target_return=475 "
                                        "policy.hidden=16,16");
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_ptr_nonnull(((frl_ppo *)t->learner.impl)->dev);
    /* Quick: 4 updates, enough for what the sanitizers watch (the sampler and the
     * device learner overlapping, the weights handed over), which every update does. */
    frl_status st = frl_trainer_train(t, learning_budget(500000, 4 * t->T * t->B,
                                                         "async_with_device_learner"));
    const frl_metrics *m = frl_trainer_metrics(t);
    printf("async CartPole-v1, device inference and learner: mean return %.1f after %lld steps, lag %.2f\n",
           m->mean_return, (long long)m->env_steps, m->policy_lag_mean);
    ck_assert_msg(st == FRL_OK, "%s", frl_trainer_last_error(t));
    ck_assert(quick() || m->mean_return >= 475);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}
END_TEST

/* Async trainers on the device and on the CPU, one thread each (so one schedule): the
 * device's inference model acts with the CPU's bits on every version it is given, so
 * after `updates` updates the parameters differ only by the learners' rounding. The
 * first version is uploaded from the host; every later one is taken from the learner
 * model's snapshot on the device (parameters and frozen normaliser), so a snapshot of
 * the wrong buffer, or one taken before it is written, shows as a gap. Groups of 3
 * make batches of several groups. The sizes are small: the sanitizer builds run it
 * whole. */
static void check_async_same(const char *env, const char *settings, int updates)
{
    frl_trainer *c = trainer_on("cpu", env, settings), *d = trainer_on("cuda", env, settings);
    int64_t steps = (int64_t)updates * c->T * c->B;
    ck_assert_int_eq(frl_trainer_train(c, steps), FRL_OK);
    ck_assert_msg(frl_trainer_train(d, steps) == FRL_OK, "%s", frl_trainer_last_error(d));
    double gap = param_gap(c->policy, d->policy);
    int64_t taken, uploaded;
    frl_sampler_device_loads(d->sampler, &taken, &uploaded);
    printf("async %s [%s]: %d updates on the device vs the CPU, parameter gap %.3g; "
           "versions taken on the device %lld, uploaded %lld\n", env, settings, updates, gap,
           (long long)taken, (long long)uploaded);
    ck_assert_uint_eq(frl_policy_version(c->policy), (uint64_t)updates);
    ck_assert_uint_eq(frl_policy_version(d->policy), (uint64_t)updates);
    ck_assert_msg(gap < 1e-4, "parameter gap %g", gap);
    ck_assert_int_eq(uploaded, 1);
    ck_assert_int_ge(taken, updates - 1);
    destroy_trainer(c);
    destroy_trainer(d);
}

START_TEST(async_device_acts_as_cpu)
{
    /* few_cases: fewer updates (3, and 2 with the frame stack); each after the first
     * still takes its version on the device. The frame stack there has one env per
     * group (11 s under TSan with two). */
    int n = few_cases() ? 3 : 5;
    check_async_same("CartPole-v1", "sampler.mode=async sampler.groups=3 train.num_envs=12", n);
    check_async_same("Pendulum-v1", "sampler.mode=async sampler.groups=2 train.num_envs=4 "
                     "train.rollout=128 policy.obs_norm=true", n);
    /* a frame stack: each group's stacks built from its rows of the state */
    check_async_same("PixelGrid-v0", few_cases() ? "sampler.mode=async sampler.groups=2 "
                     "train.num_envs=2 train.rollout=16 train.minibatches=1 "
                     "policy.conv_channels=4,4,4 policy.hidden=16 policy.frame_stack=2" :
                     "sampler.mode=async sampler.groups=2 train.num_envs=4 "
                     "train.rollout=16 train.minibatches=1 policy.conv_channels=4,4,4 "
                     "policy.hidden=16 policy.frame_stack=2", few_cases() ? 2 : 3);
}
END_TEST

/* Trainers that act on the device and learn on the CPU: PPO with a GRU through the
 * sync sampler, R2D2 in SEED's layout (the async sampler's central inference, each
 * batch carrying its envs' states up and back), and DQN (Q-values, plain and dueling).
 * Acting gives the CPU's bits, so the learners see the same experience and end with
 * the same parameters. */
static void check_acting_on_device(const char *env, const char *settings, int64_t steps)
{
    frl_trainer *c = trainer_on("cpu", env, settings), *d = trainer_on("cuda", env, settings);
    ck_assert_ptr_nonnull(d->policy->dev);
    ck_assert_int_eq(frl_trainer_train(c, steps), FRL_OK);
    ck_assert_msg(frl_trainer_train(d, steps) == FRL_OK, "%s", frl_trainer_last_error(d));
    double gap = param_gap(c->policy, d->policy);
    uint64_t vc = frl_policy_version(c->policy), vd = frl_policy_version(d->policy);
    printf("%s [%s]: %lld steps, versions %llu (CPU) and %llu (device), parameter gap %.3g\n",
           env, settings, (long long)steps, (unsigned long long)vc, (unsigned long long)vd,
           gap);
    ck_assert_uint_gt(vd, 1);
    ck_assert_uint_eq(vc, vd);
    ck_assert_msg(gap == 0, "parameter gap %g", gap);
    if (strstr(settings, "sampler.mode=async")) { /* its own model took the weights */
        int64_t taken, uploaded;
        frl_sampler_device_loads(d->sampler, &taken, &uploaded);
        ck_assert_int_ge(taken + uploaded, 2);
    }
    destroy_trainer(c);
    destroy_trainer(d);
}

START_TEST(recurrent_trainers_on_device)
{
    check_acting_on_device("CartPoleNoVel-v1", "policy.core=gru policy.hidden=16 "
                         "policy.core_size=16 train.num_envs=8 train.rollout=16", 3 * 8 * 16);
    check_acting_on_device("CartPoleNoVel-v1", "train.algo=r2d2 sampler.mode=async "
                         "sampler.groups=2 train.num_envs=4 train.seq_length=16 "
                         "train.seq_overlap=8 train.burn_in=4 train.buffer_size=4096 "
                         "train.batch_size=8 train.learning_starts=200 train.replay_ratio=4 "
                         "train.target_period=10 policy.core_size=16 policy.hidden=16", 1200);
    check_acting_on_device("CartPole-v1", "train.algo=dqn train.learning_starts=200 "
                           "policy.hidden=32", 1000);
    check_acting_on_device("CartPole-v1", "train.algo=dqn train.learning_starts=200 "
                           "policy.head=dueling_q policy.hidden=32", 1000);
}
END_TEST

/* An async trainer on the device, one update in. */
static frl_trainer *async_after_one_update(void)
{
    frl_trainer *t = trainer_on("cuda", "CartPole-v1", "sampler.mode=async sampler.groups=2");
    ck_assert_int_eq(frl_trainer_train(t, (int64_t)t->T * t->B), FRL_OK);
    return t;
}

/* One train call of up to 4 more updates with the host ops' fault `fault` set: it must
 * end with FRL_ERR_DEVICE; returns its sentence. */
static const char *call_with_fault(frl_trainer *t, const char *fault)
{
    setenv(fault, "1", 1);
    frl_status st = frl_trainer_train(t, t->book.pr.env_steps + 4 * (int64_t)t->T * t->B);
    unsetenv(fault);
    const char *msg = frl_trainer_last_error(t);
    printf("async, %s: %s: %s\n", fault, frl_status_name(st), msg);
    ck_assert_int_eq(st, FRL_ERR_DEVICE);
    return msg;
}

/* A device failure while the async sampler infers ends the train call with
 * FRL_ERR_DEVICE and the inference's sentence; the next call trains on. */
START_TEST(async_device_failure)
{
    frl_trainer *t = async_after_one_update();
    uint64_t version = frl_policy_version(t->policy);
    const char *msg = call_with_fault(t, "FAKE_CUDA_FAIL_SYNC");
    ck_assert_ptr_nonnull(strstr(msg, "injected device failure"));
    ck_assert_ptr_nonnull(strstr(msg, "async sampler"));
    ck_assert_msg(frl_trainer_train(t, t->book.pr.env_steps + 2 * (int64_t)t->T * t->B) == FRL_OK,
                  "%s", frl_trainer_last_error(t));
    ck_assert_uint_gt(frl_policy_version(t->policy), version);
    destroy_trainer(t);
}
END_TEST

/* A failure to stage the weights on the device (here: no event for the second
 * snapshot; the first update staged the other) ends the train call with FRL_ERR_DEVICE
 * and the reason, after the update it followed: the version moved and the sampler acts
 * from the host copy. The next call trains on and takes later versions from the device
 * again. */
START_TEST(async_stage_failure)
{
    frl_trainer *t = async_after_one_update();
    uint64_t version = frl_policy_version(t->policy);
    const char *msg = call_with_fault(t, "FAKE_CUDA_NO_EVENTS");
    ck_assert_ptr_nonnull(strstr(msg, "staging the weights"));
    ck_assert_ptr_nonnull(strstr(msg, "FAKE_CUDA_NO_EVENTS"));
    ck_assert_uint_eq(frl_policy_version(t->policy), version + 1);
    int64_t taken, uploaded, taken2, uploaded2;
    frl_sampler_device_loads(t->sampler, &taken, &uploaded);
    ck_assert_msg(frl_trainer_train(t, t->book.pr.env_steps + 4 * (int64_t)t->T * t->B) == FRL_OK,
                  "%s", frl_trainer_last_error(t));
    frl_sampler_device_loads(t->sampler, &taken2, &uploaded2);
    printf("versions taken %lld -> %lld, uploaded %lld -> %lld\n", (long long)taken,
           (long long)taken2, (long long)uploaded, (long long)uploaded2);
    ck_assert_int_gt(taken2, taken);
    destroy_trainer(t);
}
END_TEST

/* Page-locked memory is asked for from any thread (plugin_api.h's alloc_pinned): the
 * runtime's one context serves them all. With none to give (FAKE_CUDA_NO_PINNED), every
 * caller must get its own refusal's reason, however the calls interleave; the context's
 * pending failure used to be shared, so one caller took another's reason and the other
 * got none. */
typedef struct pin_race {
    const frl_cuda_plugin *pl;
    void *ctx;
    int bad;
} pin_race;

static void *refused_pins(void *arg)
{
    pin_race *r = arg;
    char err[256];
    for (int i = 0; i < 20000; i++) {
        err[0] = '\0';
        void *mem = r->pl->alloc_pinned(r->ctx, 64, err, sizeof err);
        if (mem)
            r->pl->free_pinned(r->ctx, mem);
        if (mem || !strstr(err, "FAKE_CUDA_NO_PINNED"))
            r->bad++;
    }
    return NULL;
}

START_TEST(pinned_refusals_from_threads)
{
    frl_runtime *rt = runtime_on("cuda", 1);
    enum { THREADS = 4 };
    pin_race r[THREADS];
    pthread_t th[THREADS];
    setenv("FAKE_CUDA_NO_PINNED", "1", 1);
    for (int i = 0; i < THREADS; i++) {
        r[i] = (pin_race){rt->device.plugin, rt->device.ctx, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, refused_pins, &r[i]), 0);
    }
    int bad = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        bad += r[i].bad;
    }
    unsetenv("FAKE_CUDA_NO_PINNED");
    ck_assert_msg(bad == 0, "%d refusals without their reason", bad);
    frl_runtime_destroy(rt);
}
END_TEST

/* On a CUDA runtime the ring and the inference buffers are page-locked; when the system
 * has no locked memory to give, creating them fails with the reason, and nothing leaks
 * (the sanitizer builds check). */
START_TEST(no_pinned_memory)
{
    frl_runtime *rt = runtime_on("cuda", 1);
    frl_space *os, *as;
    int64_t shape = 4;
    ck_assert_int_eq(frl_space_create_box(&os, NULL, 1, &shape, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&as, NULL, 2), FRL_OK);
    setenv("FAKE_CUDA_NO_PINNED", "1", 1);
    frl_ring *r = NULL;
    ck_assert_int_eq(frl_ring_create(&r, rt, 2, 8, 4, os, as), FRL_ERR_NOMEM);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "FAKE_CUDA_NO_PINNED"));
    frl_trainer *t = NULL;
    frl_status st = frl_trainer_create(&t, rt, "CartPole-v1", NULL);
    printf("trainer without page-locked memory: %s: %s\n", frl_status_name(st), frl_last_error());
    ck_assert_int_eq(st, FRL_ERR_NOMEM);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "FAKE_CUDA_NO_PINNED"));
    unsetenv("FAKE_CUDA_NO_PINNED");
    ck_assert_int_eq(frl_ring_create(&r, rt, 2, 8, 4, os, as), FRL_OK);
    frl_ring_destroy(r);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
}
END_TEST

/* Counts the INFO lines that say the async sampler acts on the CPU. */
static void count_sampler_fallbacks(void *user, frl_log_level level, const char *message)
{
    if (level == FRL_LOG_INFO && strstr(message, "acting on the CPU, since async sampler"))
        __atomic_fetch_add((int *)user, 1, __ATOMIC_RELAXED);
}

/* runtime.device=auto, async, 16 envs on one thread (auto's rule takes the device): the
 * n-th device allocation fails (FAKE_CUDA_FAIL_ALLOC) for every n that creation
 * reaches. Each creation succeeds: the policy's model, the learner and the sampler's own
 * model each stay on the CPU when the device has no memory for them. Where the
 * sampler's model was the one refused, it acts on the CPU beside the device learner and
 * trains. The sampler's model failed creation with FRL_ERR_DEVICE before. */
START_TEST(auto_async_without_device_memory)
{
    int fallbacks = 0, trained = 0;
    frl_config *rc = frl_test_settings("runtime.seed=7 runtime.device=auto runtime.threads=1");
    frl_logger lg;
    frl_logger_init(&lg);
    lg.log = count_sampler_fallbacks;
    lg.user = &fallbacks;
    lg.max_level = FRL_LOG_INFO;
    frl_runtime *rt = NULL;
    ck_assert_int_eq(frl_runtime_create(&rt, rc, NULL, &lg), FRL_OK);
    frl_config *cfg = frl_test_settings("train.num_envs=16 train.rollout=8 sampler.mode=async "
                                        "policy.hidden=16,16");
    enum { TRIES = 60 }; /* creation takes about 45 allocations here */
    for (int n = 1; n <= TRIES; n++) {
        char v[16];
        snprintf(v, sizeof v, "%d", n);
        setenv("FAKE_CUDA_FAIL_ALLOC", v, 1);
        int before = __atomic_load_n(&fallbacks, __ATOMIC_RELAXED);
        frl_trainer *t = NULL;
        frl_status st = frl_trainer_create(&t, rt, "CartPole-v1", cfg);
        ck_assert_msg(st == FRL_OK, "allocation %d refused: %s", n, frl_last_error());
        if (__atomic_load_n(&fallbacks, __ATOMIC_RELAXED) > before) {
            ck_assert_ptr_nonnull(t->policy->dev); /* the learner stayed on the device */
            ck_assert_msg(frl_trainer_train(t, 2 * 8 * 16) == FRL_OK, "allocation %d: %s", n,
                          frl_trainer_last_error(t));
            trained++;
        }
        frl_trainer_destroy(t);
    }
    unsetenv("FAKE_CUDA_FAIL_ALLOC");
    printf("auto, async: %d of %d refused allocations fell on the sampler's model\n", trained,
           TRIES);
    ck_assert_int_ge(trained, 1);
    frl_config_destroy(cfg);
    frl_config_destroy(rc);
    frl_runtime_destroy(rt);
}
END_TEST

/* 16 envs on one thread (auto's rule takes the device): the n-th device sync fails
 * (FAKE_CUDA_FAIL_SYNC) for every n that creation reaches. A creation that fails says
 * why with FRL_ERR_DEVICE and frees everything; one that succeeds (auto leaves the
 * device instead) holds no learner over a model the policy left behind (a learner whose
 * last sync failed was once kept, over the model that the fallback then freed), and
 * with the fault gone it trains. */
static void creation_sync_failures(const char *device)
{
    frl_config *rc = frl_test_settings("runtime.seed=7 runtime.threads=1");
    ck_assert_int_eq(frl_config_set(rc, "runtime.device", device), FRL_OK);
    frl_runtime *rt = NULL;
    ck_assert_int_eq(frl_runtime_create(&rt, rc, NULL, NULL), FRL_OK);
    frl_config *cfg = frl_test_settings("train.num_envs=16 train.rollout=8 policy.hidden=16,16");
    enum { TRIES = 4 }; /* creation syncs once here, making the learner */
    int refused = 0;
    for (int n = 1; n <= TRIES; n++) {
        char v[16];
        snprintf(v, sizeof v, "%d", n);
        setenv("FAKE_CUDA_FAIL_SYNC", v, 1);
        frl_trainer *t = NULL;
        frl_status st = frl_trainer_create(&t, rt, "CartPole-v1", cfg);
        unsetenv("FAKE_CUDA_FAIL_SYNC");
        if (st != FRL_OK) {
            ck_assert_msg(st == FRL_ERR_DEVICE, "%s, sync %d: %s", device, n, frl_last_error());
            ck_assert_ptr_nonnull(strstr(frl_last_error(), "FAKE_CUDA_FAIL_SYNC"));
            refused++;
            continue;
        }
        ck_assert_msg(frl_trainer_train(t, 8 * 16) == FRL_OK, "%s, sync %d: %s", device, n,
                      frl_trainer_last_error(t));
        frl_trainer_destroy(t);
    }
    printf("runtime.device=%s: %d of %d failed syncs refused the trainer\n", device, refused,
           TRIES);
    frl_config_destroy(cfg);
    frl_config_destroy(rc);
    frl_runtime_destroy(rt);
}

START_TEST(creation_sync_failures_auto)
{
    creation_sync_failures("auto");
}
END_TEST

START_TEST(creation_sync_failures_cuda)
{
    creation_sync_failures("cuda");
}
END_TEST

/* A trainer's frame stacks on the device step on only once the forward succeeded: a
 * rollout whose first device call fails (nothing stepped) leaves every env's stacked
 * frames as they were, sync and async, and the next call runs from them. */
static void check_sampler_stack_kept(const char *settings)
{
    frl_trainer *t = trainer_on("cuda", "PixelGrid-v0", settings);
    ck_assert_int_eq(frl_trainer_train(t, (int64_t)t->T * t->B), FRL_OK);
    size_t bytes = sizeof(float) * (size_t)t->B * (size_t)t->policy->state_w;
    size_t ow = sizeof(float) * (size_t)t->policy->obs_w;
    float *kept = malloc(bytes), *obs = malloc(ow * (size_t)t->B);
    memcpy(kept, t->book.state, bytes);
    for (int32_t g = 0; g < t->groups; g++)
        memcpy(obs + (size_t)t->group_first[g] * (ow / sizeof(float)),
               frl_vec_env_observations(t->venvs[g]), ow * (size_t)t->venvs[g]->n);
    setenv("FAKE_CUDA_FAIL_SYNC", "1", 1);
    frl_status st = frl_trainer_train(t, 2 * (int64_t)t->T * t->B);
    unsetenv("FAKE_CUDA_FAIL_SYNC");
    ck_assert_msg(st == FRL_ERR_DEVICE, "[%s]: %s", settings, frl_status_name(st));
    for (int32_t g = 0; g < t->groups; g++)
        ck_assert_msg(!memcmp(obs + (size_t)t->group_first[g] * (ow / sizeof(float)),
                              frl_vec_env_observations(t->venvs[g]),
                              ow * (size_t)t->venvs[g]->n),
                      "[%s]: group %d's envs stepped before the failure", settings, (int)g);
    ck_assert_msg(!memcmp(kept, t->book.state, bytes), "[%s]: the frame stacks stepped on "
                  "through a failed forward", settings);
    ck_assert_msg(frl_trainer_train(t, 2 * (int64_t)t->T * t->B) == FRL_OK, "%s",
                  frl_trainer_last_error(t));
    free(kept);
    free(obs);
    destroy_trainer(t);
}

START_TEST(sampler_stack_failure_keeps_frames)
{
    const char *small = "policy.conv_channels=4,4,4 policy.hidden=16 policy.frame_stack=3 "
                        "train.num_envs=2 train.rollout=16 train.minibatches=1";
    check_sampler_stack_kept(small);
    char async[512];
    snprintf(async, sizeof async, "%s sampler.mode=async", small);
    check_sampler_stack_kept(async);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cuda_host");
    TCase *tc = tcase_create("host plugin");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, device_is_the_host_plugin);
    tcase_add_test(tc, auto_places_by_workload);
    tcase_add_test(tc, async_device_random_stops);
    tcase_add_test(tc, act_matches_cpu);
    tcase_add_test(tc, stack_act_matches_cpu);
    tcase_add_test(tc, recurrent_act_matches_cpu);
    tcase_add_test(tc, recurrent_failure_keeps_state);
    tcase_add_test(tc, plugin_refuses_mismatched_calls);
    tcase_add_test(tc, streams_setup_failure_falls_back);
    tcase_add_test(tc, recurrent_trainers_on_device);
    tcase_add_test(tc, population_matches_cpu);
    tcase_add_test(tc, population_beyond_the_kernel);
    tcase_add_test(tc, async_stage_failure);
    tcase_add_test(tc, learner_matches_cpu);
    tcase_add_test(tc, learner_unfused_matches_cpu);
    tcase_add_test(tc, learns_cartpole);
    tcase_add_test(tc, save_and_load_on_device);
    tcase_add_test(tc, device_failures_are_reported);
    tcase_add_test(tc, async_with_device_learner);
    tcase_add_test(tc, async_device_acts_as_cpu);
    tcase_add_test(tc, async_device_failure);
    tcase_add_test(tc, no_pinned_memory);
    tcase_add_test(tc, auto_async_without_device_memory);
    tcase_add_test(tc, pinned_refusals_from_threads);
    suite_add_tcase(s, tc);
    /* faults at creation, a case of its own so that CK_RUN_CASE can pick it */
    TCase *faults = tcase_create("creation faults");
    tcase_set_timeout(faults, 600);
    tcase_add_test(faults, creation_sync_failures_auto);
    tcase_add_test(faults, creation_sync_failures_cuda);
    tcase_add_test(faults, stack_failure_keeps_state);
    tcase_add_test(faults, sampler_stack_failure_keeps_frames);
    suite_add_tcase(s, faults);
    return frl_test_run(s);
}
