/* bench_async: the synchronous and the asynchronous sampler side by side, on a host
 * world that steps all its agents in one serial batch callback (a game engine
 * simulating its world on one thread).
 *
 *   bench_async [--threads 2] [--obs 32] [--actions 4] [--hidden 64,64]
 *               [--agents 256,1024,4096] [--groups 2,4] [--rollout 32]
 *               [--rollouts 40] [--cost-ns N] [--reps 3]
 *
 * The callback busy-waits N ns per agent it steps (default: as long as inference takes
 * per agent, measured first in the same run, so callback and inference cost the same;
 * "auto" is printed with the figure). Only sampling is measured: the learner is
 * replaced by one that releases each rollout at once, so the figure is the sampler's
 * throughput, sync against async with the same runtime thread count. Sync steps one
 * world of all agents; async K worlds of agents/K each (K = --groups), so the total
 * callback work per env step is the same.
 *
 * Per configuration, reps alternate sync and async; the table gives median env steps/s,
 * the ratio async / sync (from the medians), and each role's busy time as a share of
 * wall time summed over threads: env (the callback), inference, and the caller's wait.
 * The bound: with threads=2 and callback time C and inference time I per env step,
 * sync needs C + I/2 (its inference is split over both threads) and async at least
 * max(C, (C + I)/2), so async / sync is at most 1.5 at C = I. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_args.h"
#include "trainer/trainer.h"

enum { MAX_LIST = 8, MAX_GROUPS = MAX_LIST * 8, MAX_REPS = 31 };

static const char usage[] =
    "usage: bench_async [--threads 2] [--obs 32] [--actions 4] [--hidden 64,64]\n"
    "                   [--agents 256,1024,4096] [--groups 2,4] [--rollout 32]\n"
    "                   [--rollouts 40] [--cost-ns N|auto] [--reps 3 (1..31)]\n";

typedef struct opts {
    int threads, obs, actions, rollout, rollouts, reps;
    char hidden[64];
    int agents[MAX_LIST], n_agents;
    int groups[MAX_LIST], n_groups;
    double cost_ns; /* < 0: auto */
} opts;

typedef struct world {
    int32_t obs_w, n_act;
    double cost_ns;
    uint64_t state;
} world;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void busy_wait(double seconds)
{
    double end = now_s() + seconds;
    while (now_s() < end) {
    }
}

static void fill_obs(world *w, int32_t n, float *obs)
{
    for (int64_t i = 0; i < (int64_t)n * w->obs_w; i++) {
        w->state = w->state * 6364136223846793005ULL + 1442695040888963407ULL;
        obs[i] = (float)(w->state >> 40) * (1.0f / 16777216.0f) - 0.5f;
    }
}

static int world_reset(void *user, int32_t n, const uint64_t *seeds, float *obs)
{
    (void)seeds;
    fill_obs(user, n, obs);
    return 0;
}

/* Episodes end at random (1 in 200 steps) so autoreset runs too. */
static int world_step(void *user, int32_t n, const void *actions, const uint8_t *reset_mask,
                      const uint64_t *seeds, float *obs, float *rewards, uint8_t *term,
                      uint8_t *trunc)
{
    world *w = user;
    (void)actions;
    (void)reset_mask;
    (void)seeds;
    busy_wait(w->cost_ns * 1e-9 * n);
    fill_obs(w, n, obs);
    for (int32_t i = 0; i < n; i++) {
        rewards[i] = 0.0f;
        term[i] = (uint8_t)((w->state >> (i % 32)) % 200 == 0);
        trunc[i] = 0;
    }
    return 0;
}

/* The sampler alone: every rollout is released as soon as it is complete. */
static frl_status release_only(frl_trainer *t, int32_t slot, int64_t num_updates)
{
    (void)num_updates;
    frl_ring_release(t->ring, slot);
    t->book.pr.updates++;
    t->metrics.update = t->book.pr.updates;
    return FRL_OK;
}

typedef struct busy {
    double env, inference, waiting;
} busy;

static int add_busy(void *user, const frl_metrics *m)
{
    busy *b = user;
    b->env += m->time_env;
    b->inference += m->time_inference;
    b->waiting += m->time_waiting;
    return 0;
}

static frl_vec_env *make_world(frl_runtime *rt, world *w, int32_t n, const opts *o)
{
    frl_space *os, *as;
    int64_t shape = o->obs;
    float *lo = malloc(sizeof(float) * (size_t)o->obs), *hi = malloc(sizeof(float) * (size_t)o->obs);
    for (int i = 0; i < o->obs; i++) {
        lo[i] = -1;
        hi[i] = 1;
    }
    frl_space_create_box(&os, NULL, 1, &shape, lo, hi);
    frl_space_create_discrete(&as, NULL, o->actions);
    free(lo);
    free(hi);
    frl_batch_env_callbacks cb;
    frl_batch_env_callbacks_init(&cb);
    cb.reset = world_reset;
    cb.step = world_step;
    frl_vec_env *v = NULL;
    if (frl_vec_env_create_batch(&v, rt, &cb, w, n, os, as, NULL) != FRL_OK)
        fprintf(stderr, "bench_async: %s\n", frl_last_error());
    frl_space_destroy(os);
    frl_space_destroy(as);
    return v;
}

/* One timed run: env steps per second, and the busy time of each role. */
static double run_once(const opts *o, int agents, int groups, double cost_ns, busy *b)
{
    frl_config *cfg;
    frl_config_create(&cfg, NULL);
    frl_config_set_int(cfg, "runtime.threads", o->threads);
    frl_runtime *rt;
    if (frl_runtime_create(&rt, cfg, NULL, NULL) != FRL_OK) {
        fprintf(stderr, "bench_async: %s\n", frl_last_error());
        exit(1);
    }
    char text[256];
    snprintf(text, sizeof text, "sampler.mode=%s train.rollout=%d policy.hidden=%s",
             groups ? "async" : "sync", o->rollout, o->hidden);
    if (frl_config_parse(cfg, text) != FRL_OK) {
        fprintf(stderr, "bench_async: %s\n", frl_last_error());
        exit(1);
    }
    int k = groups ? groups : 1;
    world w[MAX_GROUPS];
    frl_vec_env *v[MAX_GROUPS];
    for (int g = 0; g < k; g++) {
        w[g] = (world){o->obs, o->actions, cost_ns, 0x1234u + (uint64_t)g};
        v[g] = make_world(rt, &w[g], agents / k + (g < agents % k), o);
    }
    frl_trainer *t;
    if (frl_trainer_create_vecs(&t, rt, v, k, cfg) != FRL_OK) {
        fprintf(stderr, "bench_async: %s\n", frl_last_error());
        exit(1);
    }
    t->learn = release_only;
    memset(b, 0, sizeof *b);
    frl_trainer_set_callback(t, add_busy, b);
    /* One rollout to warm up (first touches, thread wake-ups). */
    int64_t per = (int64_t)o->rollout * agents;
    frl_trainer_train(t, per);
    memset(b, 0, sizeof *b);
    double t0 = now_s();
    frl_status st = frl_trainer_train(t, per * (1 + o->rollouts));
    double dt = now_s() - t0;
    if (st != FRL_OK) {
        fprintf(stderr, "bench_async: %s\n", frl_trainer_last_error(t));
        exit(1);
    }
    frl_trainer_destroy(t);
    for (int g = 0; g < k; g++)
        frl_vec_env_destroy(v[g]);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
    b->env /= dt;
    b->inference /= dt;
    b->waiting /= dt;
    return (double)per * o->rollouts / dt;
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

/* Inference ns per agent: the sync sampler with a free callback, all time in acting. */
static double calibrate(const opts *o, int agents)
{
    busy b;
    double sps = run_once(o, agents, 0, 0.0, &b);
    /* Per env step, inference took b.inference / sps seconds of wall time on `threads`
     * threads: its work on one thread is that times the threads. */
    return 1e9 * b.inference / sps * o->threads;
}

static void parse(int argc, char **argv, opts *o)
{
    *o = (opts){.threads = 2, .obs = 32, .actions = 4, .rollout = 32, .rollouts = 40, .reps = 3,
                .cost_ns = -1, .agents = {256, 1024, 4096}, .n_agents = 3, .groups = {2, 4},
                .n_groups = 2};
    snprintf(o->hidden, sizeof o->hidden, "64,64");
    bench_args_init(argc, argv, "bench_async", usage);
    for (int i = 1; i < argc; i += 2) {
        const char *k = argv[i], *v = bench_value(argc, argv, i);
        if (!strcmp(k, "--threads")) o->threads = (int)bench_int(k, v, 1, 1024);
        else if (!strcmp(k, "--obs")) o->obs = (int)bench_int(k, v, 1, 1 << 16);
        else if (!strcmp(k, "--actions")) o->actions = (int)bench_int(k, v, 2, 1 << 16);
        else if (!strcmp(k, "--rollout")) o->rollout = (int)bench_int(k, v, 1, 1 << 16);
        else if (!strcmp(k, "--rollouts")) o->rollouts = (int)bench_int(k, v, 1, 1 << 20);
        else if (!strcmp(k, "--reps")) o->reps = (int)bench_int(k, v, 1, MAX_REPS);
        else if (!strcmp(k, "--cost-ns"))
            o->cost_ns = strcmp(v, "auto") ? bench_real(k, v, 0, 0) : -1;
        else if (!strcmp(k, "--hidden")) {
            int widths[8]; /* policy.hidden's: 1 to 8 layers of 1 to 4096 */
            bench_list(k, v, widths, 8, 1, 4096);
            snprintf(o->hidden, sizeof o->hidden, "%s", v);
        }
        else if (!strcmp(k, "--agents"))
            o->n_agents = bench_list(k, v, o->agents, MAX_LIST, 1, 1 << 20);
        else if (!strcmp(k, "--groups"))
            /* a world of agents / groups each (w[] and v[] in run_once hold MAX_GROUPS) */
            o->n_groups = bench_list(k, v, o->groups, MAX_LIST, 1, MAX_GROUPS);
        else bench_unknown(k);
    }
    for (int ai = 0; ai < o->n_agents; ai++)
        for (int gi = 0; gi < o->n_groups; gi++)
            if (o->groups[gi] > o->agents[ai])
                bench_refuse("--groups: more worlds than --agents leaves an empty world");
}

int main(int argc, char **argv)
{
    opts o;
    parse(argc, argv, &o);
    printf("bench_async: %d threads, obs %d, %d actions, policy %s, rollout %d, %d rollouts "
           "timed, median of %d reps\n", o.threads, o.obs, o.actions, o.hidden, o.rollout,
           o.rollouts, o.reps);
    printf("%7s %6s %9s %12s %12s %7s  %-26s %-26s\n", "agents", "groups", "cost ns",
           "sync st/s", "async st/s", "ratio", "sync busy env/inf/wait", "async busy env/inf/wait");
    for (int ai = 0; ai < o.n_agents; ai++) {
        int agents = o.agents[ai];
        double cost = o.cost_ns >= 0 ? o.cost_ns : calibrate(&o, agents);
        for (int gi = 0; gi < o.n_groups; gi++) {
            double s[MAX_REPS], a[MAX_REPS];
            busy bs = {0}, ba = {0}, b;
            for (int r = 0; r < o.reps; r++) {
                s[r] = run_once(&o, agents, 0, cost, &b);
                bs = b;
                a[r] = run_once(&o, agents, o.groups[gi], cost, &b);
                ba = b;
            }
            double ms = median(s, o.reps), ma = median(a, o.reps);
            printf("%7d %6d %8.0f%s %12.0f %12.0f %6.2fx  %5.2f / %5.2f / %5.2f         "
                   "%5.2f / %5.2f / %5.2f\n", agents, o.groups[gi], cost,
                   o.cost_ns >= 0 ? " " : "a", ms, ma, ma / ms, bs.env, bs.inference, bs.waiting,
                   ba.env, ba.inference, ba.waiting);
            fflush(stdout);
        }
    }
    return 0;
}
