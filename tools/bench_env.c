/* fastrl bench env: steps/s through the public vec env API, against the floor
 * measured in the same run (the same dynamics in a bare loop on one core). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "core/rng.h"
#include "env/mujoco_env.h"
#include "env/pixel_grid.h"
#include "env/ray/env.h"
#include "env/registry.h"

enum { ACTION_SETS = 64, RUNS = 5 };

typedef struct bench_opts {
    const char *env;
    int32_t envs;
    int32_t threads;
    double seconds;
    double pub_min, pub_max, flo_min, flo_max; /* filled by the runs */
} bench_opts;

static int bench_usage(FILE *f, int rc)
{
    fprintf(f, "usage: fastrl bench env ENV [--envs N] [--threads T] [--seconds S]\n"
               "       fastrl bench train [ENV] [--steps N] [--threads T] [--set key=value ...]\n");
    return rc;
}

static int is_help(const char *a)
{
    return !strcmp(a, "--help") || !strcmp(a, "-h");
}

/* One option and its value; 2 for a bad one, after saying why. */
static int parse_opt(const char *a, const char *v, bench_opts *o)
{
    int64_t n = 0;
    int rc = 2;
    if (!strcmp(a, "--envs") && v) {
        rc = cli_parse_int("bench env", a, v, 1, INT32_MAX, &n);
        o->envs = (int32_t)n;
    } else if (!strcmp(a, "--threads") && v) { /* runtime.threads' range; 0: every core */
        rc = cli_parse_int("bench env", a, v, 0, 1024, &n);
        o->threads = (int32_t)n;
    } else if (!strcmp(a, "--seconds") && v) {
        rc = cli_parse_real("bench env", a, v, 1e-3, 1e6, &o->seconds);
    } else {
        fprintf(stderr, "fastrl bench env: unknown or incomplete option '%s'\n", a);
    }
    return rc;
}

/* 0, 2 for a usage error (said), or -1 for --help. */
static int parse_opts(int argc, char **argv, bench_opts *o)
{
    o->envs = 0; /* 4096, or 64 for a MuJoCo task (an mjData is tens of KiB) */
    o->threads = 0;
    o->seconds = 0.5;
    for (int i = 0; i < argc; i++)
        if (is_help(argv[i]))
            return -1;
    if (argc < 2 || strcmp(argv[0], "env") != 0 || argv[1][0] == '-')
        return bench_usage(stderr, 2);
    o->env = argv[1];
    for (int i = 2; i < argc; i += 2) {
        int rc = parse_opt(argv[i], i + 1 < argc ? argv[i + 1] : NULL, o);
        if (rc != 0)
            return rc;
    }
    if (o->envs == 0)
        o->envs = frl_mujoco_is_task(o->env) ? 64 : 4096;
    return 0;
}

/* ACTION_SETS random action arrays, so writing actions costs one memcpy per step. */
static void *make_actions(const frl_space *space, int32_t n, size_t *set_bytes)
{
    int64_t w = frl_space_width(space);
    int discrete = frl_space_get_kind(space) == FRL_SPACE_DISCRETE;
    *set_bytes = (size_t)n * (size_t)w * 4;
    unsigned char *t = malloc(*set_bytes * ACTION_SETS);
    frl_rng r = frl_rng_stream(12345, 0);
    for (size_t k = 0; t && k < (size_t)n * (size_t)w * ACTION_SETS; k++) {
        if (discrete) {
            int32_t a = (int32_t)(frl_rng_next(&r) % (uint64_t)frl_space_n(space));
            memcpy(t + 4 * k, &a, 4);
        } else {
            float lo = frl_space_low(space)[k % (size_t)w], hi = frl_space_high(space)[k % (size_t)w];
            float a = (float)frl_rng_uniform_range(&r, lo, hi);
            memcpy(t + 4 * k, &a, 4);
        }
    }
    return t;
}

/* Steps per second, or -1 with *st the failed step's status (its message is the
 * thread's last error). */
static double run_public(frl_vec_env *v, const unsigned char *table, size_t bytes, double secs,
                         frl_status *st)
{
    void *actions = frl_vec_env_actions(v);
    int64_t steps = 0;
    double t0 = cli_now(), t = t0;
    for (int k = 0; t - t0 < secs; k++, t = cli_now()) {
        memcpy(actions, table + bytes * (size_t)(k % ACTION_SETS), bytes);
        if ((*st = frl_vec_env_step(v)) != FRL_OK)
            return -1.0;
        steps += frl_vec_env_num_envs(v);
    }
    return (double)steps / (t - t0);
}

typedef struct floor_state {
    const frl_env_class *cls;
    frl_mujoco_floor *mj;       /* a MuJoCo task's floor instead of cls's */
    int32_t n;
    unsigned char *sims;
    frl_rng *rngs;
    float *obs;
    float *rewards;
    int32_t obs_dim; /* the class's, or its default settings' */
} floor_state;

static void floor_reset_all(floor_state *f)
{
    for (int32_t i = 0; i < f->n; i++)
        f->cls->reset(f->sims + (size_t)i * FRL_SIM_MAX_BYTES, &f->rngs[i],
                      f->obs + (size_t)i * (size_t)f->obs_dim);
}

static int floor_init(floor_state *f, const char *env, int32_t n)
{
    const frl_env_class *cls = frl_env_class_find(env);
    memset(f, 0, sizeof *f);
    f->n = n;
    if (!cls) /* a MuJoCo task (setup created its vec env, so it is one) */
        return frl_mujoco_floor_open(&f->mj, env, n) == FRL_OK ? 0 : -1;
    f->cls = cls;
    f->sims = aligned_alloc(64, (size_t)n * FRL_SIM_MAX_BYTES);
    f->rngs = malloc(sizeof(frl_rng) * (size_t)n);
    f->obs_dim = cls->obs_dim;
    f->rewards = malloc(sizeof(float) * (size_t)n);
    if (!f->sims || !f->rngs || !f->rewards)
        return -1;
    if (cls->configure) { /* the default settings, written into the sims */
        frl_env_shape shape;
        cls->configure(NULL, f->sims, n, &shape);
        f->obs_dim = shape.obs_dim;
    }
    f->obs = malloc(sizeof(float) * (size_t)n * (size_t)f->obs_dim);
    if (!f->obs)
        return -1;
    for (int32_t i = 0; i < n; i++)
        f->rngs[i] = frl_rng_stream(7, (uint64_t)i);
    floor_reset_all(f);
    return 0;
}

static void floor_free(floor_state *f)
{
    frl_mujoco_floor_close(f->mj);
    free(f->sims);
    free(f->rngs);
    free(f->obs);
    free(f->rewards);
}

static double run_floor(floor_state *f, const unsigned char *table, size_t bytes, double secs)
{
    int64_t steps = 0;
    double t0 = cli_now(), t = t0;
    for (int k = 0; t - t0 < secs; k++, t = cli_now()) {
        /* The time limit, as the public path applies it: without it Pendulum's angles
         * drift without bound and its floor slows down, flattering the ratio. */
        int32_t limit = f->mj ? frl_mujoco_floor_limit(f->mj) : f->cls->max_episode_steps;
        const unsigned char *actions = table + bytes * (size_t)(k % ACTION_SETS);
        if (k > 0 && limit > 0 && k % limit == 0)
            f->mj ? frl_mujoco_floor_reset(f->mj) : floor_reset_all(f);
        if (f->mj)
            frl_mujoco_floor_steps(f->mj, (const float *)(const void *)actions);
        else
            f->cls->floor_steps(f->sims, f->rngs, f->n, actions, f->obs, f->rewards);
        steps += f->n;
    }
    return (double)steps / (t - t0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* ---- pool wake-up latency ---- */

typedef struct wake_probe {
    double t0;
    int32_t threads;
    double start[64];
    atomic_int started;
} wake_probe;

/* Each task records when it started and waits (up to 50 ms) until every task has
 * started, so each of the `threads` tasks lands on a different thread. */
static int wake_task(void *user, int32_t task, int32_t thread)
{
    (void)thread;
    wake_probe *p = user;
    p->start[task] = cli_now();
    atomic_fetch_add(&p->started, 1);
    double deadline = p->start[task] + 0.05;
    while (atomic_load(&p->started) < p->threads && cli_now() < deadline) {
    }
    return 0;
}

static double wake_latency_us(frl_runtime *rt, int parked)
{
    double lat[15];
    wake_probe p;
    p.threads = frl_runtime_threads(rt) < 64 ? frl_runtime_threads(rt) : 64;
    if (p.threads < 2)
        return 0.0;
    for (int k = 0; k < 15; k++) {
        if (parked) {
            struct timespec ts = {0, 20 * 1000 * 1000}; /* longer than any spin */
            nanosleep(&ts, NULL);
        }
        atomic_store(&p.started, 0);
        p.t0 = cli_now();
        frl_runtime_parallel_for(rt, p.threads, wake_task, &p);
        double last = 0;
        for (int32_t i = 0; i < p.threads; i++)
            last = p.start[i] > last ? p.start[i] : last;
        lat[k] = (last - p.t0) * 1e6;
    }
    return median(lat, 15);
}

/* ---- the benchmark ---- */

static int setup(const bench_opts *o, frl_runtime **rt, frl_vec_env **v)
{
    frl_config *cfg;
    frl_status st = frl_config_create(&cfg, NULL);
    if (st == FRL_OK)
        st = frl_config_set_int(cfg, "runtime.threads", o->threads);
    if (st == FRL_OK)
        st = frl_runtime_create(rt, cfg, NULL, NULL);
    frl_config_destroy(cfg);
    if (st != FRL_OK)
        return cli_fail("runtime", st);
    st = frl_vec_env_create(v, *rt, o->env, o->envs, NULL);
    if (st == FRL_OK)
        st = frl_vec_env_reset(*v, 1);
    return st == FRL_OK ? 0 : cli_fail(o->env, st);
}

static void report(const bench_opts *o, int32_t threads, double pub, double flo,
                   frl_runtime *rt)
{
    printf("spread of the %d runs (min..max): public %.4g..%.4g, floor %.4g..%.4g steps/s\n",
           RUNS, o->pub_min, o->pub_max, o->flo_min, o->flo_max);
    printf("floor (bare dynamics loop, 1 core): %.4g steps/s, %.2f ns/step\n", flo, 1e9 / flo);
    printf("public vec env (%d threads): %.4g steps/s, %.2f ns/step per thread\n",
           (int)threads, pub, 1e9 * threads / pub);
    printf("ratio to floor: %.2fx; efficiency vs %d x floor: %.1f%%\n", pub / flo,
           (int)threads, 100.0 * pub / (threads * flo));
    printf("pool wake-up latency (median of 15): parked %.1f us, spinning %.2f us\n",
           wake_latency_us(rt, 1), wake_latency_us(rt, 0));
    printf("steps_per_second: %.0f\n", pub);
}

int cli_bench(int argc, char **argv)
{
    bench_opts o;
    if (argc >= 1 && strcmp(argv[0], "train") == 0)
        return cli_bench_train(argc, argv);
    int prc = parse_opts(argc, argv, &o);
    if (prc != 0)
        return prc < 0 ? bench_usage(stdout, 0) : prc;
    if (frl_ray_env_is(o.env) || frl_pixel_env_is(o.env)) {
        /* rendered on host callbacks: there is no bare dynamics loop to call a floor */
        fprintf(stderr, "fastrl bench env: %s has no floor loop (the library renders it on "
                        "host callbacks); build/bench/bench_raycast measures the ray envs "
                        "beside their renderer alone\n", o.env);
        return 2;
    }
    frl_runtime *rt = NULL;
    frl_vec_env *v = NULL;
    if (setup(&o, &rt, &v) != 0) {
        frl_runtime_destroy(rt);
        return 1;
    }
    size_t bytes;
    unsigned char *table = make_actions(frl_vec_env_action_space(v), o.envs, &bytes);
    floor_state f;
    int rc = 1;
    if (!table) {
        fprintf(stderr, "fastrl: bench: the floor: out of memory\n");
        goto out;
    }
    if (floor_init(&f, o.env, o.envs) != 0) { /* f is set up to be freed either way */
        fprintf(stderr, "fastrl: bench: the floor: %s\n", frl_last_error());
        goto out_floor;
    }
    int32_t threads = frl_runtime_threads(rt);
    printf("env: %s  envs: %d  threads: %d  runs: %d x %.2f s\n", o.env, (int)o.envs,
           (int)threads, RUNS, o.seconds);
    double pub[RUNS], flo[RUNS];
    frl_status st = FRL_OK;
    run_public(v, table, bytes, o.seconds / 4, &st); /* warm-up: page in, wake workers */
    for (int r = 0; r < RUNS && st == FRL_OK; r++) {
        flo[r] = run_floor(&f, table, bytes, o.seconds);
        pub[r] = run_public(v, table, bytes, o.seconds, &st);
        if (st == FRL_OK)
            printf("run %d: public %.4g steps/s, floor %.4g steps/s\n", r + 1, pub[r], flo[r]);
    }
    if (st != FRL_OK) { /* the env's own status and message, e.g. a MuJoCo warning */
        rc = cli_fail("bench: step", st);
        goto out_floor;
    }
    double pub_med = median(pub, RUNS), flo_med = median(flo, RUNS); /* sorts both */
    o.pub_min = pub[0];
    o.pub_max = pub[RUNS - 1];
    o.flo_min = flo[0];
    o.flo_max = flo[RUNS - 1];
    report(&o, threads, pub_med, flo_med, rt);
    rc = 0;
out_floor:
    floor_free(&f);
out:
    free(table);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
    return rc;
}
