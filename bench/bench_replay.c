/* bench_replay: minibatch sampling from the replay against a memory floor measured in
 * the same run.
 *
 *   bench_replay [--capacity 1000000] [--obs 4] [--batch 256] [--batches 4000] [--reps 5]
 *                [--sequences 100000] [--seq-len 80] [--seq-batch 32]
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
 * Indices come from the same rng in all three. Then sequences (R2D2's input): a replay of
 * --sequences env columns of --seq-len steps (16 envs a slot, 8 floats of recurrent
 * state each), --seq-batch of them a minibatch:
 *   seq floor  the same bytes per sequence (the observations, actions, rewards, flags
 *              and state) copied from a random place in one array of the replay's size;
 *   seq        frl_replay_sample_sequences (target: seq floor / seq >= 50%). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_args.h"
#include "core/alloc.h"
#include "rl/replay.h"

enum { T = 128, B = 16, MAX_REPS = 31, SEQ_B = 16, SEQ_STATE = 8 };

typedef struct opts {
    int64_t capacity, sequences;
    int obs, batch, batches, reps, seq_len, seq_batch;
} opts;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void parse(opts *o, int argc, char **argv)
{
    *o = (opts){1000000, 100000, 4, 256, 4000, 5, 80, 32};
    bench_args_init(argc, argv, "bench_replay",
                    "usage: bench_replay [--capacity 1000000] [--obs 4] [--batch 256 (..4096)] "
                    "[--batches 4000]\n"
                    "                    [--reps 5 (..31)] [--sequences 100000 (16..)] "
                    "[--seq-len 80] [--seq-batch 32]\n");
    for (int i = 1; i < argc; i += 2) {
        const char *k = argv[i], *v = bench_value(argc, argv, i);
        if (!strcmp(k, "--capacity"))
            o->capacity = bench_int(k, v, 1, INT64_C(1) << 40);
        else if (!strcmp(k, "--obs"))
            o->obs = (int)bench_int(k, v, 1, 1 << 20);
        else if (!strcmp(k, "--batch"))
            o->batch = (int)bench_int(k, v, 1, 4096);
        else if (!strcmp(k, "--batches"))
            o->batches = (int)bench_int(k, v, 1, INT32_MAX);
        else if (!strcmp(k, "--reps"))
            o->reps = (int)bench_int(k, v, 1, MAX_REPS);
        else if (!strcmp(k, "--sequences"))
            o->sequences = bench_int(k, v, SEQ_B, INT64_C(1) << 40);
        else if (!strcmp(k, "--seq-len"))
            o->seq_len = (int)bench_int(k, v, 1, 1 << 20);
        else if (!strcmp(k, "--seq-batch"))
            o->seq_batch = (int)bench_int(k, v, 1, 1 << 20);
        else
            bench_unknown(k);
    }
}

/* One slot of CartPole-like rows: episodes end with chance 1/200 per step. */
static void fill_slot_of(frl_ring *ring, frl_rng *rng, int W, uint8_t *pending, int T_, int B_)
{
    float *obs = frl_ring_at(ring, 0, FRL_RING_OBSERVATIONS);
    int32_t *act = frl_ring_at(ring, 0, FRL_RING_ACTIONS);
    float *rew = frl_ring_at(ring, 0, FRL_RING_REWARDS);
    uint8_t *term = frl_ring_at(ring, 0, FRL_RING_TERMINATED);
    uint8_t *trunc = frl_ring_at(ring, 0, FRL_RING_TRUNCATED);
    uint8_t *reset = frl_ring_at(ring, 0, FRL_RING_RESET_STEPS);
    float *boot = frl_ring_at(ring, 0, FRL_RING_BOOTSTRAP_OBS);
    for (int i = 0; i < T_ * B_; i++) {
        for (int w = 0; w < W; w++)
            obs[i * W + w] = (float)frl_rng_uniform(rng);
        act[i] = (int32_t)(frl_rng_next(rng) & 1);
        reset[i] = pending[i % B_];
        rew[i] = reset[i] ? 0.0f : 1.0f;
        term[i] = !reset[i] && frl_rng_uniform(rng) < 1.0 / 200;
        trunc[i] = 0;
        pending[i % B_] = term[i];
    }
    for (int i = 0; i < B_ * W; i++)
        boot[i] = (float)frl_rng_uniform(rng);
}

static void fill_slot(frl_ring *ring, frl_rng *rng, int W, uint8_t *pending)
{
    fill_slot_of(ring, rng, W, pending, T, B);
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

/* The floor: rows of 8W + 10 bytes stored whole, gathered at uniform random indices.
 * The default rows (W = 4: 42 bytes) are copied with a constant size, which the
 * compiler inlines: a call to memcpy per row would make the floor slower than it is. */
/* The floors' arrays come from the library's default allocator, as the replay's arena
 * does: both on 2 MiB pages (core/alloc.c), so the floor pays no TLB misses the replay
 * is spared (with malloc's 4 KiB pages the floor ran slower than it can). */
static frl_allocator floor_al;

static unsigned char *floor_array(size_t bytes)
{
    if (!floor_al.alloc)
        frl_allocator_default(&floor_al);
    return frl_alloc(&floor_al, bytes, 64);
}

static double run_floor(const unsigned char *arr, int64_t rows, size_t row_bytes,
                        unsigned char *out, const opts *o, frl_rng *rng)
{
    double t0 = now_s();
    for (int k = 0; k < o->batches; k++)
        for (int j = 0; j < o->batch; j++) {
            int64_t i = (int64_t)(frl_rng_uniform(rng) * (double)rows);
            if (row_bytes == 42)
                memcpy(out + (size_t)j * 42, arr + (size_t)i * 42, 42);
            else
                memcpy(out + (size_t)j * row_bytes, arr + (size_t)i * row_bytes, row_bytes);
        }
    return (now_s() - t0) / o->batches;
}

/* Seconds a batch; *update_s gets the part spent in frl_replay_update (read around each
 * call: two clock reads a batch, about 1% of a prioritised one). */
static double run_replay(frl_replay *r, const opts *o, frl_rng *rng, int prioritized,
                         float *prio, double *update_s)
{
    frl_replay_draw d = {.rows = o->batch, .n_step = 1, .gamma = 0.99,
                         .prioritized = prioritized, .beta = 0.4};
    char err[FRL_ERRMSG_SIZE];
    double t0 = now_s(), up = 0;
    for (int k = 0; k < o->batches; k++) {
        if (frl_replay_sample(r, rng, &d, &r->batch, err) != FRL_OK)
            return fprintf(stderr, "bench_replay: %s\n", err), -1;
        if (!prioritized)
            continue;
        double t1 = now_s();
        if (frl_replay_update(r, r->batch.index, prio, o->batch, err) != FRL_OK)
            return fprintf(stderr, "bench_replay: %s\n", err), -1;
        up += now_s() - t1;
    }
    *update_s = up / o->batches;
    return (now_s() - t0) / o->batches;
}

/* The sequence figures: a replay of o->sequences env columns of o->seq_len steps. */
static int run_sequences(frl_runtime *rt, const opts *o)
{
    int L = o->seq_len, W = o->obs, N = o->seq_batch;
    frl_space *os, *as;
    int64_t shape = W;
    frl_ring *ring;
    if (frl_space_create_box(&os, NULL, 1, &shape, NULL, NULL) ||
        frl_space_create_discrete(&as, NULL, 2) || frl_ring_create(&ring, rt, 1, L, SEQ_B, os, as) ||
        frl_ring_alloc_state(ring, SEQ_STATE))
        return fprintf(stderr, "bench_replay: %s\n", frl_last_error()), 1;
    frl_replay_shape sh = {.capacity = o->sequences * L, .steps = L, .envs = SEQ_B, .obs_w = W,
                           .act_w = 1, .discrete = 1, .state_w = SEQ_STATE};
    char err[FRL_ERRMSG_SIZE];
    frl_replay *r;
    size_t bytes;
    if (frl_replay_memory_size(&sh, &bytes, err) || frl_replay_create(&r, rt, &sh, err))
        return fprintf(stderr, "bench_replay: %s\n", err), 1;
    frl_rng rng = frl_rng_stream(3, 0);
    uint8_t pending[SEQ_B] = {0};
    for (int64_t k = 0; k < r->blocks; k++) {
        fill_slot_of(ring, &rng, W, pending, L, SEQ_B);
        if (frl_replay_add_slot(r, ring, 0, err))
            return fprintf(stderr, "bench_replay: %s\n", err), 1;
    }
    /* what a sequence's arrays hold: x_0..x_L, L actions, rewards and 3 flags, a state */
    size_t seq_bytes = 4 * (size_t)(L + 1) * W + (size_t)L * (4 + 4 + 3) + 4 * SEQ_STATE;
    int64_t floor_seqs = (int64_t)(bytes / seq_bytes);
    unsigned char *arr = floor_array((size_t)floor_seqs * seq_bytes);
    unsigned char *fo = malloc((size_t)N * seq_bytes);
    float *obs = malloc(4 * (size_t)N * (L + 1) * W), *rew = malloc(4 * (size_t)N * L);
    float *st = malloc(4 * (size_t)N * SEQ_STATE);
    int32_t *act = malloc(4 * (size_t)N * L);
    uint8_t *flags = malloc(3 * (size_t)N * L);
    int64_t *idx = malloc(8 * (size_t)N);
    if (!arr || !fo || !obs || !rew || !st || !act || !flags || !idx)
        return fprintf(stderr, "bench_replay: out of memory\n"), 1;
    memset(arr, 1, (size_t)floor_seqs * seq_bytes);
    frl_replay_seq_batch sb = {N, obs, act, rew, flags, flags + (size_t)N * L,
                               flags + 2 * (size_t)N * L, st, idx};
    double f[MAX_REPS], s[MAX_REPS];
    for (int rep = 0; rep < o->reps; rep++) {
        frl_rng a = frl_rng_stream(4, (uint64_t)rep), b = a;
        opts fo_opts = *o;
        fo_opts.batch = N;
        f[rep] = run_floor(arr, floor_seqs, seq_bytes, fo, &fo_opts, &a);
        double t0 = now_s();
        for (int k = 0; k < o->batches; k++)
            if (frl_replay_sample_sequences(r, &b, N, &sb, err) != FRL_OK)
                return fprintf(stderr, "bench_replay: %s\n", err), 1;
        s[rep] = (now_s() - t0) / o->batches;
    }
    double fm = median(f, o->reps), sm = median(s, o->reps);
    printf("sequences: %lld of %d steps (%d envs a slot, %d floats of state), %.1f MiB; "
           "batch %d\n", (long long)(r->filled * SEQ_B), L, SEQ_B, SEQ_STATE,
           (double)bytes / 1048576.0, N);
    printf("seq floor %8.2f us/batch  (%zu bytes/sequence, same rng)\n", 1e6 * fm, seq_bytes);
    printf("seq       %8.2f us/batch  floor/seq     = %5.1f%%  (target >= 50%%)\n", 1e6 * sm,
           100 * fm / sm);
    frl_free(&floor_al, arr);
    free(fo);
    free(obs);
    free(rew);
    free(st);
    free(act);
    free(flags);
    free(idx);
    frl_replay_destroy(r);
    frl_ring_destroy(ring);
    frl_space_destroy(os);
    frl_space_destroy(as);
    return 0;
}

int main(int argc, char **argv)
{
    opts o;
    parse(&o, argc, argv);
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
    unsigned char *arr = floor_array(floor_rows * row_bytes), *out = malloc(4096 * row_bytes);
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
    double f[MAX_REPS], u[MAX_REPS], p[MAX_REPS], pu[MAX_REPS], unused;
    for (int rep = 0; rep < o.reps; rep++) {
        frl_rng a = frl_rng_stream(2, (uint64_t)rep), b = a, c = a;
        f[rep] = run_floor(arr, floor_rows, row_bytes, out, &o, &a);
        u[rep] = run_replay(r, &o, &b, 0, prio, &unused);
        p[rep] = run_replay(r, &o, &c, 1, prio, &pu[rep]);
        if (u[rep] < 0 || p[rep] < 0)
            return 1;
    }
    double fm = median(f, o.reps), um = median(u, o.reps), pm = median(p, o.reps);
    double pum = median(pu, o.reps);
    printf("floor    %8.2f us/batch  (%zu bytes/row, same rng)\n", 1e6 * fm, row_bytes);
    printf("uniform  %8.2f us/batch  floor/uniform = %5.1f%%  (target >= 50%%)\n", 1e6 * um,
           100 * fm / um);
    printf("per      %8.2f us/batch  floor/per     = %5.1f%%  (target >= 25%%; sample + "
           "update)\n", 1e6 * pm, 100 * fm / pm);
    printf("           of which update %.2f us (median of its own)\n", 1e6 * pum);
    frl_free(&floor_al, arr);
    free(out);
    free(prio);
    if (run_sequences(rt, &o))
        return 1;
    frl_replay_destroy(r);
    frl_ring_destroy(ring);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
    return 0;
}
