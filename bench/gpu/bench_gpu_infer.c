/* bench_gpu_infer: MLP inference latency and throughput through the CUDA plugin
 * (libfastrl-cuda.so.0, lib/core/plugin_api.h), one model_forward per call, for a range of
 * batch sizes.
 *
 * Each call does what acting on a device does in the trainer: host observations in,
 * host logits out (upload, actor forward, download, synchronise), into and out of
 * page-locked buffers from the plugin's alloc_pinned when it has one. The plugin is
 * opened with dlopen at run time, so this program builds without CUDA and, on a machine
 * without a GPU or without the plugin, prints `SKIP: <why>` and exits 0.
 *
 * Before timing, the plugin's output is checked against the library's CPU forward pass
 * (frl_mlp_forward) on the same parameters, so a fast but wrong plugin is not reported.
 *
 *   bench_gpu_infer [--plugin PATH] [--device N] [--obs 64] [--hidden 256,256]
 *                   [--actions 8] [--act tanh|relu|elu|linear]
 *                   [--batches 1,4,...,65536] [--reps 200] [--budget 2] [--tf32 0|1]
 *                   [--paths auto,launch,graph,fused,mapped,streams,runs] [--csv] [--handoff]
 *                   [--core gru|lstm] [--core-size 64]
 *
 * --paths times each of model_forward's paths in turn (lib/core/plugin_api.h,
 * FRL_CUDA_PATH_*; default auto alone), each checked against the CPU first; the table's
 * last column is the path a call took (a path that cannot run a batch falls back to
 * launch, and auto says what it chose).
 *
 * --core gru|lstm times a recurrent policy's acting step instead (model_step: host obs
 * and host states in, host logits and the new states out): the hidden layers an
 * encoder, then a core of --core-size units (64), then a one-layer actor, as
 * policy.core lays them out; checked against the CPU's step (frl_rnn_step) first. Its
 * paths: auto (captured as a graph up to 1,024 rows) and launch (op by op); no
 * --handoff.
 *
 * --handoff adds the cost of giving the inference model a new weight version, as the
 * async sampler does after each update: an upload from a host copy (model_load, the
 * path for a version the learner did not stage) against the device handoff
 * (model_stage on a second model, the learner's, then model_take), each followed by a
 * one-row forward so the new weights are in use; the forward alone is the floor. The
 * handoff is checked first: the taken weights must give the CPU's logits.
 *
 * The plugin is, in order: --plugin, $FRL_CUDA_PLUGIN, the one this build made (when
 * meson built it), libfastrl-cuda.so.0 on the loader's search path. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/plugin_api.h"
#include "nn/kernels.h"
#include "nn/mlp.h"
#include "nn/net.h"
#include "nn/rnn.h"

enum { MAX_BATCHES = 32, ERR_SIZE = 512, CHECK_ROWS = 256 };

typedef struct opts {
    const char *plugin;
    int32_t device, obs, actions, tf32, csv, reps, handoff;
    int32_t core, core_size; /* frl_rnn_kind (FRL_RNN_NONE: an MLP) and its units */
    int32_t paths[FRL_CUDA_PATHS], np;
    int32_t hidden[FRL_MLP_MAX_LAYERS], nh;
    frl_nn_act act;
    int32_t batches[MAX_BATCHES], nb;
    double budget; /* seconds of timed calls per batch, at most (reps may stop sooner) */
} opts;

typedef struct bench {
    void *dl;
    const frl_cuda_plugin *p;
    void *ctx, *model;
    frl_net_desc desc;
    float *params, *obs, *out;
    float *state; /* --core: the rows' states [rows x state_w] */
    int32_t asked; /* the path the model is set to */
    int obs_pinned, out_pinned, state_pinned; /* from alloc_pinned (else malloc) */
    char err[ERR_SIZE];
} bench;

/* ---- options ---- */

static const char *const act_names[] = {"linear", "tanh", "relu", "elu"};
static const char *const path_names[FRL_CUDA_PATHS] = {"auto", "launch", "graph",
                                                       "fused", "mapped", "streams",
                                                       "runs"};

/* A comma-separated list of path names into o->paths; 1 when one is unknown. */
static int parse_paths(const char *s, opts *o)
{
    o->np = 0;
    while (*s) {
        size_t len = strcspn(s, ",");
        int32_t p = 0;
        while (p < FRL_CUDA_PATHS && (strlen(path_names[p]) != len || strncmp(s, path_names[p], len)))
            p++;
        if (p == FRL_CUDA_PATHS || o->np == FRL_CUDA_PATHS)
            return 1;
        o->paths[o->np++] = p;
        s += len + (s[len] == ',');
    }
    return o->np == 0;
}

/* A comma-separated list of positive integers into v; the count, or -1 when malformed. */
static int parse_list(const char *s, int32_t *v, int max)
{
    int n = 0;
    while (*s) {
        char *end;
        long x = strtol(s, &end, 10);
        if (end == s || x < 1 || x > 0x7fffffff || n == max || (*end && *end != ','))
            return -1;
        v[n++] = (int32_t)x;
        s = *end ? end + 1 : end;
    }
    return n;
}

static int parse_act(const char *s, frl_nn_act *act)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, act_names[i])) {
            *act = (frl_nn_act)i;
            return 0;
        }
    return -1;
}

static int32_t parse_int(const char *s, int *bad)
{
    char *end;
    long x = strtol(s, &end, 10);
    if (end == s || *end || x < 0 || x > 0x7fffffff)
        *bad = 1;
    return (int32_t)x;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_gpu_infer [--plugin PATH] [--device N] [--obs N] [--hidden A,B,...]\n"
               "         [--actions N] [--act tanh|relu|elu|linear] [--batches A,B,...]\n"
               "         [--reps N] [--budget SECONDS] [--tf32 0|1] [--csv] [--handoff]\n"
               "         [--paths auto,launch,graph,fused,mapped,streams,runs]\n"
               "         [--core gru|lstm] [--core-size N]\n");
}

static void default_opts(opts *o)
{
    static const int32_t batches[] = {1, 4, 16, 64, 256, 1024, 4096, 16384, 65536};
    memset(o, 0, sizeof *o);
    o->obs = 64;
    o->actions = 8;
    o->hidden[0] = o->hidden[1] = 256;
    o->nh = 2;
    o->act = FRL_NN_TANH;
    o->nb = (int32_t)(sizeof batches / sizeof batches[0]);
    memcpy(o->batches, batches, sizeof batches);
    o->reps = 200;
    o->budget = 2.0;
    o->np = 1; /* auto */
    o->core_size = 64;
}

static int parse_core(const char *s, int32_t *core)
{
    static const char *const names[] = {"none", "gru", "lstm"};
    for (int32_t i = 0; i < 3; i++)
        if (!strcmp(s, names[i])) {
            *core = i;
            return 0;
        }
    return 1;
}

/* One option with its value; 0 when understood. */
static int parse_pair(opts *o, const char *a, const char *v)
{
    int bad = 0;
    char *end;
    if (!strcmp(a, "--plugin"))
        o->plugin = v;
    else if (!strcmp(a, "--device"))
        o->device = parse_int(v, &bad);
    else if (!strcmp(a, "--obs"))
        bad = (o->obs = parse_int(v, &bad)) < 1 || bad;
    else if (!strcmp(a, "--actions"))
        bad = (o->actions = parse_int(v, &bad)) < 1 || bad;
    else if (!strcmp(a, "--hidden")) /* the output layer takes one of the layers */
        bad = (o->nh = parse_list(v, o->hidden, FRL_MLP_MAX_LAYERS - 1)) < 0;
    else if (!strcmp(a, "--act"))
        bad = parse_act(v, &o->act);
    else if (!strcmp(a, "--batches"))
        bad = (o->nb = parse_list(v, o->batches, MAX_BATCHES)) < 1;
    else if (!strcmp(a, "--reps"))
        bad = (o->reps = parse_int(v, &bad)) < 1 || bad;
    else if (!strcmp(a, "--budget")) /* read whole: "2x" was 2 */
        bad = !((o->budget = strtod(v, &end)) > 0) || *end || !isfinite(o->budget);
    else if (!strcmp(a, "--tf32"))
        bad = (o->tf32 = parse_int(v, &bad)) > 1 || bad;
    else if (!strcmp(a, "--paths"))
        bad = parse_paths(v, o);
    else if (!strcmp(a, "--core"))
        bad = parse_core(v, &o->core);
    else if (!strcmp(a, "--core-size"))
        bad = (o->core_size = parse_int(v, &bad)) < 1 || bad;
    else
        bad = 1;
    return bad;
}

static int parse_args(int argc, char **argv, opts *o)
{
    default_opts(o);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--csv")) {
            o->csv = 1;
        } else if (!strcmp(argv[i], "--handoff")) {
            o->handoff = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            exit(0);
        } else if (i + 1 >= argc || parse_pair(o, argv[i], argv[i + 1])) {
            fprintf(stderr, "bench_gpu_infer: bad or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else {
            i++;
        }
    }
    int other_path = 0; /* a step has two: captured (auto) and op by op (launch) */
    for (int32_t i = 0; i < o->np; i++)
        other_path |= o->paths[i] != FRL_CUDA_PATH_AUTO && o->paths[i] != FRL_CUDA_PATH_LAUNCH;
    if (o->core && (o->handoff || other_path)) {
        fprintf(stderr, "bench_gpu_infer: --core steps a recurrent model: --paths auto or "
                "launch, no --handoff\n");
        return 2;
    }
    return 0;
}

/* ---- the plugin ---- */

/* A benchmark has nothing to report where there is nothing to run on: say why, exit 0
 * (1 with FRL_BENCH_REQUIRE_DEVICE=1, as its test on the CUDA emulator sets: there a
 * plugin that does not load is a failure). */
static int skip(bench *b, const char *why)
{
    printf("SKIP: %s\n", why);
    if (b->dl)
        dlclose(b->dl);
    b->dl = NULL;
    const char *req = getenv("FRL_BENCH_REQUIRE_DEVICE");
    return req && req[0] == '1';
}

static const char *plugin_path(const opts *o)
{
    const char *env = getenv("FRL_CUDA_PLUGIN");
    if (o->plugin)
        return o->plugin;
    if (env && env[0])
        return env;
#ifdef BENCH_GPU_BUILT_PLUGIN
    /* meson built the plugin in this tree: that one, where it still is. */
    if (access(BENCH_GPU_BUILT_PLUGIN, F_OK) == 0)
        return BENCH_GPU_BUILT_PLUGIN;
#endif
    return FRL_CUDA_PLUGIN_FILE; /* the loader's search path */
}

/* dlopen and look up the table; 1 (with b->err) when there is none to use. */
static int load_plugin(bench *b, const opts *o)
{
    const char *path = plugin_path(o);
    b->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!b->dl) {
        snprintf(b->err, sizeof b->err,
                 "the CUDA plugin %.200s cannot be loaded (%.200s); build with -Dcuda=enabled, "
                 "or pass --plugin PATH or set FRL_CUDA_PLUGIN", path, dlerror());
        return 1;
    }
    void *sym = dlsym(b->dl, FRL_CUDA_PLUGIN_SYMBOL);
    frl_cuda_plugin_get_fn get;
    memcpy(&get, &sym, sizeof get); /* object to function pointer, as POSIX allows */
    b->p = sym ? get() : NULL;
    if (!b->p)
        snprintf(b->err, sizeof b->err, "%.200s has no %s", path, FRL_CUDA_PLUGIN_SYMBOL);
    else if (b->p->abi != FRL_CUDA_PLUGIN_ABI)
        snprintf(b->err, sizeof b->err, "%.200s speaks plugin ABI %u, this bench %u", path,
                 b->p->abi, FRL_CUDA_PLUGIN_ABI);
    else if (!(b->p->capabilities & FRL_CUDA_CAP_INFERENCE))
        snprintf(b->err, sizeof b->err, "%.200s has no inference capability", path);
    else
        return 0;
    return 1;
}

/* probe, then check the device index exists; 1 (with b->err) when there is no device. */
static int probe_device(bench *b, const opts *o)
{
    int32_t count = 0;
    if (b->p->probe(&count, b->err, sizeof b->err) != 0)
        return 1;
    if (o->device >= count) {
        snprintf(b->err, sizeof b->err, "--device %d, but the plugin sees %d device%s",
                 (int)o->device, (int)count, count == 1 ? "" : "s");
        return 1;
    }
    return 0;
}

/* ---- the network ---- */

/* The policy's layout for a discrete action space with separate networks (as
 * lib/rl/policy.c lays them out): actor obs -> hidden -> actions, then critic
 * obs -> hidden -> 1, parameters contiguous, actor first. */
static void describe_net(const opts *o, int32_t max_rows, frl_net_desc *d);

/* --core: policy.core's layout with one tower (lib/rl/policy_rnn.c): the hidden layers an
 * encoder (all activated), the core, a one-layer actor and a one-layer critic. */
static void describe_recurrent(const opts *o, int32_t max_rows, frl_net_desc *d)
{
    memset(d, 0, sizeof *d);
    d->obs_w = o->obs;
    d->out_w = o->actions;
    d->discrete = 1;
    d->shared = 1;
    d->towers = 1;
    size_t at = 0;
    int32_t in = o->obs, h = o->core_size;
    if (o->nh > 0) {
        frl_mlp_init(&d->enc[0], o->obs, o->hidden, o->nh, 0, o->act, 0);
        at = d->enc[0].num_params;
        in = frl_mlp_out(&d->enc[0]);
    }
    frl_rnn_init(&d->core[0], (frl_rnn_kind)o->core, in, h, at);
    at += d->core[0].num_params;
    frl_mlp_init(&d->actor, h, NULL, 0, o->actions, o->act, at);
    frl_mlp_init(&d->critic, h, NULL, 0, 1, o->act, at + d->actor.num_params);
    d->state_w = frl_rnn_state_w(&d->core[0]);
    d->num_params = d->log_std_off = d->critic.param_base + d->critic.num_params;
    d->max_rows = max_rows;
}

static void describe_net(const opts *o, int32_t max_rows, frl_net_desc *d)
{
    if (o->core) {
        describe_recurrent(o, max_rows, d);
        return;
    }
    memset(d, 0, sizeof *d);
    d->obs_w = o->obs;
    d->out_w = o->actions;
    d->discrete = 1;
    frl_mlp_init(&d->actor, o->obs, o->hidden, o->nh, o->actions, o->act, 0);
    frl_mlp_init(&d->critic, o->obs, o->hidden, o->nh, 1, o->act, d->actor.num_params);
    d->log_std_off = d->critic.param_base + d->critic.num_params;
    d->num_params = d->log_std_off; /* discrete: no log-std */
    d->max_rows = max_rows;
}

/* xorshift64*: reproducible without a dependency; uniform in [-1, 1). */
static float uniform(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (float)((double)((*s * 0x2545F4914F6CDD1DULL) >> 11) * 0x1.0p-52 - 1.0);
}

/* Weights uniform in +-1/sqrt(fan-in) (as PyTorch's default Linear), so the activations
 * stay in the range a trained net sees; biases small. */
static void init_mlp(const frl_mlp *m, float *params, uint64_t *s)
{
    for (int32_t l = 0; l < m->layers; l++) {
        size_t nw = (size_t)m->width[l] * (size_t)m->width[l + 1];
        float a = 1.0f / sqrtf((float)m->width[l]);
        for (size_t i = 0; i < nw; i++)
            params[m->off_w[l] + i] = a * uniform(s);
        for (int32_t i = 0; i < m->width[l + 1]; i++)
            params[m->off_b[l] + (size_t)i] = 0.1f * uniform(s);
    }
}

static int32_t max_batch(const opts *o)
{
    int32_t m = 1;
    for (int32_t i = 0; i < o->nb; i++)
        m = o->batches[i] > m ? o->batches[i] : m;
    return m;
}

/* A host buffer: page-locked from the plugin when it can (transfers from it are direct
 * DMA, as the trainer's are), else plain malloc; *pinned says which. */
static float *host_floats(bench *b, size_t n, int *pinned)
{
    char why[256] = "";
    float *p = b->p->alloc_pinned ? b->p->alloc_pinned(b->ctx, sizeof(float) * n, why, sizeof why)
                                  : NULL;
    if (!p && why[0])
        fprintf(stderr, "note: %s; using malloc (the copies then stage through the driver)\n", why);
    *pinned = p != NULL;
    return p ? p : malloc(sizeof(float) * n);
}

static void free_host(bench *b, float *p, int pinned)
{
    if (p && pinned)
        b->p->free_pinned(b->ctx, p);
    else
        free(p);
}

/* The context, the model with random parameters and the I/O buffers; 1 with b->err. */
static int setup(bench *b, const opts *o)
{
    int32_t rows = max_batch(o);
    describe_net(o, rows, &b->desc);
    if (b->p->open(&b->ctx, o->device, o->tf32, b->err, sizeof b->err) != 0)
        return 1;
    if (b->p->model_create(b->ctx, &b->desc, &b->model, b->err, sizeof b->err) != 0)
        return 1;
    b->params = malloc(sizeof(float) * b->desc.num_params);
    if (!b->params) {
        snprintf(b->err, sizeof b->err, "out of host memory");
        return 1;
    }
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    init_mlp(&b->desc.enc[0], b->params, &s);
    const frl_rnn *c = &b->desc.core[0];
    for (size_t i = 0; b->desc.towers && i < c->num_params; i++)
        b->params[c->param_base + i] = uniform(&s) / sqrtf((float)c->h);
    init_mlp(&b->desc.actor, b->params, &s);
    init_mlp(&b->desc.critic, b->params, &s);
    if (b->p->model_load(b->model, b->params, NULL, NULL, 0.0f, b->err, sizeof b->err) != 0)
        return 1;
    b->obs = host_floats(b, (size_t)rows * (size_t)o->obs, &b->obs_pinned);
    b->out = host_floats(b, (size_t)rows * (size_t)o->actions, &b->out_pinned);
    size_t sn = (size_t)rows * (size_t)b->desc.state_w;
    if (sn)
        b->state = host_floats(b, sn, &b->state_pinned);
    for (size_t i = 0; b->state && i < sn; i++)
        b->state[i] = 0.5f * uniform(&s);
    if (!b->obs || !b->out || (sn && !b->state)) {
        snprintf(b->err, sizeof b->err, "out of host memory");
        return 1;
    }
    for (size_t i = 0; i < (size_t)rows * (size_t)o->obs; i++)
        b->obs[i] = uniform(&s);
    return 0;
}

static void teardown(bench *b)
{
    if (b->ctx) {
        free_host(b, b->obs, b->obs_pinned);
        free_host(b, b->out, b->out_pinned);
        free_host(b, b->state, b->state_pinned);
    }
    free(b->params);
    if (b->model)
        b->p->model_destroy(b->model);
    if (b->ctx)
        b->p->close(b->ctx);
    if (b->dl)
        dlclose(b->dl);
}

/* ---- the check against the CPU forward pass ---- */

static double max_rel_diff(const float *got, const float *ref, size_t n)
{
    double dmax = 0, rmax = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]);
        dmax = d > dmax || isnan(d) ? d : dmax; /* a NaN fails the check */
        rmax = fabs(ref[i]) > rmax ? fabs(ref[i]) : rmax;
    }
    return dmax / (1 + rmax);
}

/* --core: the CPU's step (encoder, frl_rnn_step, actor) from the rows' states before the
 * plugin's step, against its logits and new states; as check_against_cpu. */
static double check_step_against_cpu(bench *b, int32_t rows)
{
    const frl_net_desc *d = &b->desc;
    const frl_kernels *k = frl_kernels_get();
    size_t f = sizeof(float), r = (size_t)rows, sn = r * (size_t)d->state_w;
    float *state = malloc(f * sn), *hout = malloc(f * r * (size_t)d->core[0].h);
    float *enc = malloc(f * (r * (size_t)d->enc[0].act_width + 1));
    float *acts = malloc(f * r * (size_t)d->actor.act_width);
    /* frl_rnn_step's work is 64-byte aligned, in whole lines */
    float *work = aligned_alloc(64, (f * frl_rnn_step_floats(&d->core[0], rows) + 63) &
                                      ~(size_t)63);
    double diff = -1;
    if (!state || !hout || !enc || !acts || !work) {
        snprintf(b->err, sizeof b->err, "out of host memory");
    } else {
        memcpy(state, b->state, f * sn);
        const float *x = d->enc[0].layers
                             ? frl_mlp_forward(&d->enc[0], k, b->params, rows, b->obs, enc)
                             : b->obs;
        frl_rnn_step(&d->core[0], k, b->params, rows, x, state, NULL, hout, work);
        const float *ref = frl_mlp_forward(&d->actor, k, b->params, rows, hout, acts);
        if (b->p->model_step(b->model, rows, b->obs, b->state, b->out, NULL, b->err,
                             sizeof b->err) == 0) {
            double a = max_rel_diff(b->out, ref, r * (size_t)d->out_w);
            double sd = max_rel_diff(b->state, state, sn);
            diff = a > sd || isnan(sd) ? a : sd;
        }
    }
    free(state);
    free(hout);
    free(enc);
    free(acts);
    free(work);
    return diff;
}

/* The largest |plugin - cpu| of the actor's output over the first rows rows, relative to
 * 1 + the largest |cpu|; negative when something failed (b->err says). */
static double check_against_cpu(bench *b, int32_t rows)
{
    if (b->desc.towers)
        return check_step_against_cpu(b, rows);
    const frl_mlp *a = &b->desc.actor;
    float *acts = malloc(sizeof(float) * (size_t)rows * (size_t)a->act_width);
    if (!acts) {
        snprintf(b->err, sizeof b->err, "out of host memory");
        return -1;
    }
    const float *ref = frl_mlp_forward(a, frl_kernels_get(), b->params, rows, b->obs, acts);
    double diff = -1;
    if (b->p->model_forward(b->model, rows, b->obs, b->out, NULL, b->err, sizeof b->err) == 0)
        diff = max_rel_diff(b->out, ref, (size_t)rows * (size_t)b->desc.out_w);
    free(acts);
    return diff;
}

/* ---- timing ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, c = *(const double *)y;
    return (a > c) - (a < c);
}

static int forward(bench *b, int32_t rows)
{
    if (b->desc.towers)
        return b->p->model_step(b->model, rows, b->obs, b->state, b->out, NULL, b->err,
                                sizeof b->err);
    return b->p->model_forward(b->model, rows, b->obs, b->out, NULL, b->err, sizeof b->err);
}

/* Warm up (cuBLAS picks its kernels, the clocks rise): at least 3 calls, then until
 * 0.1 s or 100 calls. */
static int warm_up(bench *b, int32_t rows)
{
    double t0 = now_s();
    for (int i = 0; i < 3 || (i < 100 && now_s() - t0 < 0.1); i++)
        if (forward(b, rows) != 0)
            return 1;
    return 0;
}

/* Time up to o->reps calls, each on its own, stopping once o->budget seconds are spent
 * (after 3 at least); sorted seconds into t, the count into *n. */
static int time_calls(bench *b, const opts *o, int32_t rows, double *t, int *n)
{
    double spent = 0;
    *n = 0;
    for (int i = 0; i < o->reps && (i < 3 || spent < o->budget); i++) {
        double t0 = now_s();
        if (forward(b, rows) != 0)
            return 1;
        t[i] = now_s() - t0;
        spent += t[i];
        *n = i + 1;
    }
    qsort(t, (size_t)*n, sizeof *t, cmp_double);
    return 0;
}

static double quantile(const double *sorted, int n, double q)
{
    double pos = q * (n - 1);
    int lo = (int)pos;
    int hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
}

static void print_row(const bench *b, const opts *o, int32_t rows, const double *t, int n)
{
    double med = quantile(t, n, 0.5), p90 = quantile(t, n, 0.9);
    const char *taken = !b->desc.towers ? path_names[b->p->model_last_path(b->model)]
                        : b->asked == FRL_CUDA_PATH_LAUNCH || rows > FRL_CUDA_STAGE_ROWS
                            ? "step, op by op" : "step, graph";
    if (o->csv)
        printf("%d,%d,%.3f,%.3f,%.3f,%.1f,%s\n", (int)rows, n, med * 1e6, t[0] * 1e6,
               p90 * 1e6, rows / med, taken);
    else
        printf("%8d %6d %12.2f %12.2f %12.2f %14.4g  %s\n", (int)rows, n, med * 1e6, t[0] * 1e6,
               p90 * 1e6, rows / med, taken);
    fflush(stdout);
}

/* ---- the report ---- */

static void print_net(const frl_mlp *m, const char *name, const char *pfx)
{
    printf("%s%s: ", pfx, name);
    for (int32_t l = 0; l <= m->layers; l++)
        printf("%s%d", l ? "-" : "", (int)m->width[l]);
    printf(" (%s hidden, %zu parameters)\n", act_names[m->act], m->num_params);
}

static void print_header(const bench *b, const opts *o)
{
    const char *pfx = o->csv ? "# " : "";
    char name[128] = "?";
    int32_t major = 0, minor = 0;
    uint64_t mem = 0;
    b->p->describe(o->device, name, sizeof name, &major, &minor, &mem);
    printf("%sdevice: %d %s (cc %d.%d, %.1f GiB)\n", pfx, (int)o->device, name, (int)major,
           (int)minor, (double)mem / (1024.0 * 1024 * 1024));
    printf("%sbackend: %s\n", pfx, b->p->backend ? b->p->backend : "?");
    if (b->p->backend && strstr(b->p->backend, "host"))
        printf("%snote: the host test backend runs its ops on the CPU; these numbers say "
               "nothing about a GPU\n", pfx);
    printf("%stf32: %s\n", pfx, o->tf32 ? "on" : "off");
    if (b->desc.towers) {
        if (b->desc.enc[0].layers)
            print_net(&b->desc.enc[0], "encoder (timed)", pfx);
        printf("%score: %s of %d units over %d inputs (timed)\n", pfx,
               b->desc.core[0].kind == FRL_RNN_GRU ? "GRU" : "LSTM", (int)b->desc.core[0].h,
               (int)b->desc.core[0].in);
    }
    print_net(&b->desc.actor, "actor (timed)", pfx);
    print_net(&b->desc.critic, "critic (uploaded, not run: value=NULL)", pfx);
    static const char *const kinds[] = {"malloc (not pinned)", "page-locked (alloc_pinned)"};
    printf("%shost buffers: obs %s, logits %s%s%s\n", pfx, kinds[b->obs_pinned],
           kinds[b->out_pinned], b->desc.towers ? ", states " : "",
           b->desc.towers ? kinds[b->state_pinned] : "");
    printf("%scall: %s, synchronous; wall time per call\n", pfx,
           b->desc.towers ? "model_step(rows, host obs and states -> host logits and states)"
                          : "model_forward(rows, host obs -> host logits)");
}

static void print_table_head(const opts *o)
{
    if (o->csv)
        printf("batch,reps,median_us,min_us,p90_us,rows_per_s,path\n");
    else
        printf("%8s %6s %12s %12s %12s %14s  %s\n", "batch", "reps", "median_us", "min_us",
               "p90_us", "rows/s", "path");
}

/* The check, then every batch, on the path the model is set to; 0, or 1 after printing
 * FAIL. */
static int run_path(bench *b, const opts *o)
{
    int32_t rows = max_batch(o) < CHECK_ROWS ? max_batch(o) : CHECK_ROWS;
    double diff = check_against_cpu(b, rows), tol = o->tf32 ? 2e-2 : 1e-4;
    if (diff < 0 || !(diff <= tol)) {
        if (diff < 0)
            printf("FAIL: the check's forward: %s\n", b->err);
        else
            printf("FAIL: the plugin's logits differ from the CPU forward pass by %.3g "
                   "(relative; tolerance %.0e)\n", diff, tol);
        return 1;
    }
    printf("%scheck: %d rows match the CPU forward pass (max |diff| / (1 + max |cpu|) = "
           "%.2e, tolerance %.0e)\n", o->csv ? "# " : "", (int)rows, diff, tol);
    double *t = malloc(sizeof(double) * (size_t)o->reps);
    int n = 0, rc = t ? 0 : 1;
    print_table_head(o);
    for (int32_t i = 0; rc == 0 && i < o->nb; i++) {
        /* Each batch on its own too: a path may choose another way by size. */
        int32_t k = o->batches[i] < CHECK_ROWS ? o->batches[i] : CHECK_ROWS;
        double d = check_against_cpu(b, k);
        if (d < 0 || !(d <= tol)) {
            printf("FAIL: batch %d: %s%.3g\n", (int)o->batches[i],
                   d < 0 ? b->err : "differs from the CPU forward pass by ", d < 0 ? 0.0 : d);
            rc = 1;
            break;
        }
        rc = warm_up(b, o->batches[i]) || time_calls(b, o, o->batches[i], t, &n);
        if (rc)
            printf("FAIL: batch %d: %s\n", (int)o->batches[i], b->err);
        else
            print_row(b, o, o->batches[i], t, n);
    }
    free(t);
    return rc;
}

static int run(bench *b, const opts *o)
{
    for (int32_t i = 0; i < o->np; i++) {
        if (b->p->model_path(b->model, o->paths[i], b->err, sizeof b->err) != 0) {
            printf("FAIL: %s\n", b->err);
            return 1;
        }
        b->asked = o->paths[i];
        printf("%spath asked: %s\n", o->csv ? "# " : "", path_names[o->paths[i]]);
        if (run_path(b, o))
            return 1;
    }
    return 0;
}

/* ---- the weight handoff (--handoff) ---- */

typedef struct handoff {
    void *learner;     /* the learner's role: a second model, with its own stream */
    float *params;     /* another weight version, in pageable host memory */
    double *t[3];      /* seconds per rep: floor, upload, take */
} handoff;

enum { H_FLOOR, H_UPLOAD, H_TAKE };
static const char *const handoff_names[] = {"forward(1) alone", "upload + forward(1)",
                                            "stage + take + forward(1)"};

static int handoff_step(bench *b, handoff *h, int kind, int32_t slot)
{
    const frl_cuda_plugin *p = b->p;
    if (kind == H_UPLOAD &&
        p->model_load(b->model, h->params, NULL, NULL, 0.0f, b->err, sizeof b->err) != 0)
        return 1;
    if (kind == H_TAKE &&
        (p->model_stage(h->learner, slot, NULL, NULL, 0.0f, b->err, sizeof b->err) != 0 ||
         p->model_take(b->model, h->learner, slot, b->err, sizeof b->err) != 0))
        return 1;
    return forward(b, 1);
}

/* The learner's model holding h->params, and the check that a take gives the CPU's
 * logits for them; 1 with b->err (or a printed FAIL). */
static int handoff_setup(bench *b, handoff *h, const opts *o)
{
    frl_net_desc d = b->desc;
    d.max_rows = 1;
    uint64_t s = 0xD1B54A32D192ED03ULL;
    h->params = malloc(sizeof(float) * d.num_params);
    if (!h->params) {
        snprintf(b->err, sizeof b->err, "out of host memory");
        return 1;
    }
    init_mlp(&d.actor, h->params, &s);
    init_mlp(&d.critic, h->params, &s);
    if (b->p->model_create(b->ctx, &d, &h->learner, b->err, sizeof b->err) != 0 ||
        b->p->model_load(h->learner, h->params, NULL, NULL, 0.0f, b->err, sizeof b->err) != 0 ||
        b->p->model_stage(h->learner, 0, NULL, NULL, 0.0f, b->err, sizeof b->err) != 0 ||
        b->p->model_take(b->model, h->learner, 0, b->err, sizeof b->err) != 0)
        return 1;
    float *kept = b->params;
    b->params = h->params; /* the CPU reference now uses the taken version */
    int32_t rows = max_batch(o) < CHECK_ROWS ? max_batch(o) : CHECK_ROWS;
    double diff = check_against_cpu(b, rows);
    b->params = kept;
    if (diff < 0)
        return 1;
    if (!(diff <= (o->tf32 ? 2e-2 : 1e-4))) {
        snprintf(b->err, sizeof b->err, "after a take the logits differ from the CPU forward "
                 "pass on the staged weights by %.3g", diff);
        return 1;
    }
    printf("%shandoff check: the taken weights give the CPU's logits (%.2e)\n",
           o->csv ? "# " : "", diff);
    return 0;
}

/* The three kinds interleaved rep by rep, so they share the machine's noise. */
static int handoff_time(bench *b, handoff *h, const opts *o, int *n)
{
    double spent = 0;
    *n = 0;
    for (int i = 0; i < o->reps && (i < 3 || spent < o->budget); i++) {
        for (int k = 0; k < 3; k++) {
            double t0 = now_s();
            if (handoff_step(b, h, k, (int32_t)(i & 1)) != 0)
                return 1;
            h->t[k][i] = now_s() - t0;
            spent += h->t[k][i];
        }
        *n = i + 1;
    }
    for (int k = 0; k < 3; k++)
        qsort(h->t[k], (size_t)*n, sizeof(double), cmp_double);
    return 0;
}

static void handoff_report(const bench *b, const handoff *h, const opts *o, int n)
{
    const char *pfx = o->csv ? "# " : "";
    double med[3];
    for (int k = 0; k < 3; k++)
        med[k] = quantile(h->t[k], n, 0.5);
    printf("%sweight handoff: %llu parameters (%.1f KiB), %d reps each, interleaved\n", pfx,
           (unsigned long long)b->desc.num_params, 4.0 * (double)b->desc.num_params / 1024, n);
    for (int k = 0; k < 3; k++)
        printf("%s  %-28s median %10.2f us  min %10.2f us\n", pfx, handoff_names[k],
               med[k] * 1e6, h->t[k][0] * 1e6);
    double up = med[H_UPLOAD] - med[H_FLOOR], take = med[H_TAKE] - med[H_FLOOR];
    printf("%s  above the floor: upload %.2f us, handoff %.2f us; upload / handoff = %.2fx\n",
           pfx, up * 1e6, take * 1e6, take > 0 ? up / take : INFINITY);
}

static int run_handoff(bench *b, const opts *o)
{
    if (!b->p->model_stage || !b->p->model_take) {
        printf("handoff: this plugin cannot stage weights\n");
        return 1;
    }
    handoff h;
    memset(&h, 0, sizeof h);
    int n = 0, rc = handoff_setup(b, &h, o);
    for (int k = 0; rc == 0 && k < 3; k++)
        rc = !(h.t[k] = malloc(sizeof(double) * (size_t)o->reps));
    if (rc == 0 && warm_up(b, 1) == 0)
        rc = handoff_time(b, &h, o, &n);
    if (rc)
        printf("FAIL: handoff: %s\n", b->err);
    else
        handoff_report(b, &h, o, n);
    if (h.learner)
        b->p->model_destroy(h.learner);
    for (int k = 0; k < 3; k++)
        free(h.t[k]);
    free(h.params);
    return rc;
}

int main(int argc, char **argv)
{
    opts o;
    bench b;
    memset(&b, 0, sizeof b);
    if (parse_args(argc, argv, &o))
        return 2;
    if (o.plugin && access(o.plugin, F_OK) != 0) {
        fprintf(stderr, "bench_gpu_infer: --plugin %s: no such file\n", o.plugin);
        return 2;
    }
    if (load_plugin(&b, &o) || probe_device(&b, &o))
        return skip(&b, b.err);
    int rc = 1;
    if (setup(&b, &o) != 0)
        printf("FAIL: setting up the model: %s\n", b.err);
    else {
        print_header(&b, &o);
        rc = run(&b, &o);
        if (rc == 0 && o.handoff)
            rc = run_handoff(&b, &o);
    }
    teardown(&b);
    return rc;
}
