/* bench_replay: minibatch sampling from the replay against a memory floor measured in
 * the same run.
 *
 *   bench_replay [--capacity 1000000] [--obs 4] [--batch 256] [--batches 4000] [--reps 5]
 *
 * The replay is filled with CartPole-shaped slots (T = 128, B = 16, discrete actions,
 * episodes of about 200 steps, so one reset row in 200). Figures, each the median over
 * reps of the time per minibatch:
 *   floor    a bare loop gathering the same bytes per row (x, x', action, reward and the
 *            two flags: 8W + 10 bytes) at random indices from one array of the replay's
 *            size, rows stored whole: what a random gather costs on this machine;
 *   uniform  frl_replay_sample, uniform, n = 1 (target: floor / uniform >= 50%);
 *   per      frl_replay_sample, prioritised (stratified, beta 0.4) and frl_replay_update
 *            of the drawn rows (target: floor / per >= 25%).
 * Indices come from the same rng in all three. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "rl/replay.h"

enum { T = 128, B = 16, MAX_REPS = 31 };

typedef struct opts {
    int64_t capacity;
    int obs, batch, batches, reps;
} opts;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse(opts *o, int argc, char **argv)
{
    *o = (opts){1000000, 4, 256, 4000, 5};
    for (int i = 1; i + 1 < argc; i += 2) {
        long long v = atoll(argv[i + 1]);
        if (!strcmp(argv[i], "--capacity"))
            o->capacity = v;
        else if (!strcmp(argv[i], "--obs"))
            o->obs = (int)v;
        else if (!strcmp(argv[i], "--batch"))
            o->batch = (int)v;
        else if (!strcmp(argv[i], "--batches"))
            o->batches = (int)v;
        else if (!strcmp(argv[i], "--reps"))
            o->reps = (int)v;
        else
            return fprintf(stderr, "bench_replay: unknown option %s\n", argv[i]), -1;
    }
    if (o->capacity < 1 || o->obs < 1 || o->batch < 1 || o->batch > 4096 || o->batches < 1 ||
        o->reps < 1 || o->reps > MAX_REPS)
        return fprintf(stderr, "bench_replay: a value is out of range\n"), -1;
    return 0;
}

/* One slot of CartPole-like rows: episodes end with chance 1/200 per step. */
static void fill_slot(frl_ring *ring, frl_rng *rng, int W, uint8_t *pending)
{
    float *obs = frl_ring_at(ring, 0, FRL_RING_OBSERVATIONS);
    int32_t *act = frl_ring_at(ring, 0, FRL_RING_ACTIONS);
    float *rew = frl_ring_at(ring, 0, FRL_RING_REWARDS);
    uint8_t *term = frl_ring_at(ring, 0, FRL_RING_TERMINATED);
    uint8_t *trunc = frl_ring_at(ring, 0, FRL_RING_TRUNCATED);
    uint8_t *reset = frl_ring_at(ring, 0, FRL_RING_RESET_STEPS);
    float *boot = frl_ring_at(ring, 0, FRL_RING_BOOTSTRAP_OBS);
    for (int i = 0; i < T * B; i++) {
        for (int w = 0; w < W; w++)
            obs[i * W + w] = (float)frl_rng_uniform(rng);
        act[i] = (int32_t)(frl_rng_next(rng) & 1);
        reset[i] = pending[i % B];
        rew[i] = reset[i] ? 0.0f : 1.0f;
        term[i] = !reset[i] && frl_rng_uniform(rng) < 1.0 / 200;
        trunc[i] = 0;
        pending[i % B] = term[i];
    }
    for (int i = 0; i < B * W; i++)
        boot[i] = (float)frl_rng_uniform(rng);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* The floor: rows of 8W + 10 bytes stored whole, gathered at uniform random indices. */
static double run_floor(const unsigned char *arr, int64_t rows, size_t row_bytes,
                        unsigned char *out, const opts *o, frl_rng *rng)
{
    double t0 = now_s();
    for (int k = 0; k < o->batches; k++)
        for (int j = 0; j < o->batch; j++) {
            int64_t i = (int64_t)(frl_rng_uniform(rng) * (double)rows);
            memcpy(out + (size_t)j * row_bytes, arr + (size_t)i * row_bytes, row_bytes);
        }
    return (now_s() - t0) / o->batches;
}

static double run_replay(frl_replay *r, const opts *o, frl_rng *rng, int prioritized,
                         float *prio)
{
    frl_replay_draw d = {.rows = o->batch, .n_step = 1, .gamma = 0.99,
                         .prioritized = prioritized, .beta = 0.4};
    char err[FRL_ERRMSG_SIZE];
    double t0 = now_s();
    for (int k = 0; k < o->batches; k++) {
        if (frl_replay_sample(r, rng, &d, &r->batch, err) != FRL_OK)
            return fprintf(stderr, "bench_replay: %s\n", err), -1;
        if (prioritized && frl_replay_update(r, r->batch.index, prio, o->batch, err) != FRL_OK)
            return fprintf(stderr, "bench_replay: %s\n", err), -1;
    }
    return (now_s() - t0) / o->batches;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(&o, argc, argv))
        return 2;
    frl_runtime *rt;
    frl_config *cfg;
    if (frl_config_create(&cfg, NULL) || frl_config_set_int(cfg, "runtime.threads", 1) ||
        frl_runtime_create(&rt, cfg, NULL, NULL))
        return fprintf(stderr, "bench_replay: %s\n", frl_last_error()), 1;
    frl_config_destroy(cfg);
    frl_space *os, *as;
    int64_t shape = o.obs;
    frl_ring *ring;
    if (frl_space_create_box(&os, NULL, 1, &shape, NULL, NULL) ||
        frl_space_create_discrete(&as, NULL, 2) || frl_ring_create(&ring, rt, 1, T, B, os, as))
        return fprintf(stderr, "bench_replay: %s\n", frl_last_error()), 1;
    frl_replay_shape sh = {.capacity = o.capacity, .steps = T, .envs = B, .obs_w = o.obs,
                           .act_w = 1, .discrete = 1, .prioritized = 1, .alpha = 0.6,
                           .batch_rows = o.batch};
    char err[FRL_ERRMSG_SIZE];
    frl_replay *r;
    size_t bytes;
    if (frl_replay_memory_size(&sh, &bytes, err) || frl_replay_create(&r, rt, &sh, err))
        return fprintf(stderr, "bench_replay: %s\n", err), 1;
    frl_rng rng = frl_rng_stream(1, 0);
    uint8_t pending[B] = {0};
    for (int64_t k = 0; k < r->blocks; k++) {
        fill_slot(ring, &rng, o.obs, pending);
        if (frl_replay_add_slot(r, ring, 0, err))
            return fprintf(stderr, "bench_replay: %s\n", err), 1;
    }
    size_t row_bytes = 8 * (size_t)o.obs + 10;
    int64_t floor_rows = (int64_t)(bytes / row_bytes);
    unsigned char *arr = malloc(floor_rows * row_bytes), *out = malloc(4096 * row_bytes);
    float *prio = malloc(sizeof(float) * (size_t)o.batch);
    if (!arr || !out || !prio)
        return fprintf(stderr, "bench_replay: out of memory\n"), 1;
    for (size_t i = 0; i < floor_rows * row_bytes; i++)
        arr[i] = (unsigned char)i;
    for (int j = 0; j < o.batch; j++)
        prio[j] = 0.1f + (float)(j % 17);
    printf("replay: %lld rows (%lld transitions) of obs width %d, %.1f MiB; batch %d\n",
           (long long)r->capacity, (long long)r->size, o.obs, (double)bytes / 1048576.0,
           o.batch);
    double f[MAX_REPS], u[MAX_REPS], p[MAX_REPS];
    for (int rep = 0; rep < o.reps; rep++) {
        frl_rng a = frl_rng_stream(2, (uint64_t)rep), b = a, c = a;
        f[rep] = run_floor(arr, floor_rows, row_bytes, out, &o, &a);
        u[rep] = run_replay(r, &o, &b, 0, prio);
        p[rep] = run_replay(r, &o, &c, 1, prio);
        if (u[rep] < 0 || p[rep] < 0)
            return 1;
    }
    double fm = median(f, o.reps), um = median(u, o.reps), pm = median(p, o.reps);
    printf("floor    %8.2f us/batch  (%zu bytes/row, same rng)\n", 1e6 * fm, row_bytes);
    printf("uniform  %8.2f us/batch  floor/uniform = %5.1f%%  (target >= 50%%)\n", 1e6 * um,
           100 * fm / um);
    printf("per      %8.2f us/batch  floor/per     = %5.1f%%  (target >= 25%%; sample + "
           "update)\n", 1e6 * pm, 100 * fm / pm);
    free(arr);
    free(out);
    free(prio);
    frl_replay_destroy(r);
    frl_ring_destroy(ring);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
    return 0;
}
