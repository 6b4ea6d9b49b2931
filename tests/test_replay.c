/* The replay (lib/rl/replay.c): the observations-once layout against a naive copy of
 * (x, a, r, x', done) over random streams, the sum and min trees, importance weights
 * against float64, priority updates, bad inputs, allocation failure, no allocation
 * while adding and sampling, and checkpoint sections. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/pow_pos.h"
#include "rl/frame_stack.h"
#include "rl/replay.h"
#include "test_util.h"

/* ---- a counting allocator that can fail ---- */

typedef struct counter {
    long calls, fail_at;
} counter;

static void *count_alloc(void *user, size_t size, size_t align)
{
    counter *c = user;
    if (++c->calls == c->fail_at)
        return NULL;
    void *p = NULL;
    return posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size) ? NULL : p;
}

static void count_free(void *user, void *p)
{
    (void)user;
    free(p);
}

static frl_runtime *counting_runtime(counter *c)
{
    frl_allocator a;
    frl_allocator_init(&a);
    a.alloc = count_alloc;
    a.free = count_free;
    a.user = c;
    frl_config *cfg;
    frl_runtime *rt = NULL;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "runtime.threads", 1), FRL_OK);
    ck_assert_int_eq(frl_runtime_create(&rt, cfg, &a, NULL), FRL_OK);
    frl_config_destroy(cfg);
    return rt;
}

/* ---- rings filled with random episodes ---- */

enum { T = 5, B = 3, W = 2, MAXROWS = 64 };

static frl_ring *make_ring(frl_runtime *rt, int32_t steps, int32_t envs, int32_t ow)
{
    frl_space *o, *a;
    int64_t shape = ow;
    ck_assert_int_eq(frl_space_create_box(&o, NULL, 1, &shape, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&a, NULL, 4), FRL_OK);
    frl_ring *ring;
    ck_assert_int_eq(frl_ring_create(&ring, rt, 1, steps, envs, o, a), FRL_OK);
    frl_space_destroy(o);
    frl_space_destroy(a);
    return ring;
}

/* The vec env seen by the sampler: each env's stream goes on across slots; after an
 * episode ends the next row is a reset row whose observation is the final one. */
typedef struct streams {
    frl_rng rng;
    float obs[B][W];   /* the observation the next row acts on */
    uint8_t reset[B];  /* the next row is a reset row */
    double p_end;      /* chance a step terminates, and again that it truncates */
} streams;

/* One naive transition per row: x and x' copied. */
typedef struct naive {
    float x[W], x2[W], r;
    int32_t a;
    uint8_t term, trunc, reset;
} naive;

static void fill_slot(streams *s, frl_ring *ring, naive *out)
{
    float *obs = frl_ring_at(ring, 0, FRL_RING_OBSERVATIONS);
    int32_t *act = frl_ring_at(ring, 0, FRL_RING_ACTIONS);
    float *rew = frl_ring_at(ring, 0, FRL_RING_REWARDS);
    uint8_t *term = frl_ring_at(ring, 0, FRL_RING_TERMINATED);
    uint8_t *trunc = frl_ring_at(ring, 0, FRL_RING_TRUNCATED);
    uint8_t *reset = frl_ring_at(ring, 0, FRL_RING_RESET_STEPS);
    float *boot = frl_ring_at(ring, 0, FRL_RING_BOOTSTRAP_OBS);
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++) {
            int i = t * B + b;
            naive *n = &out[i];
            memcpy(obs + i * W, s->obs[b], sizeof s->obs[b]);
            memcpy(n->x, s->obs[b], sizeof n->x);
            act[i] = n->a = (int32_t)(frl_rng_next(&s->rng) % 4);
            reset[i] = n->reset = s->reset[b];
            if (s->reset[b]) { /* reward 0, flags 0, a fresh observation */
                rew[i] = n->r = 0;
                term[i] = trunc[i] = n->term = n->trunc = 0;
                s->reset[b] = 0;
            } else {
                rew[i] = n->r = (float)frl_rng_uniform_range(&s->rng, -1, 1);
                term[i] = n->term = frl_rng_uniform(&s->rng) < s->p_end;
                trunc[i] = n->trunc = !n->term && frl_rng_uniform(&s->rng) < s->p_end;
                s->reset[b] = n->term || n->trunc;
            }
            for (int w = 0; w < W; w++)
                s->obs[b][w] = (float)frl_rng_uniform_range(&s->rng, -10, 10);
            memcpy(n->x2, s->obs[b], sizeof n->x2);
        }
    for (int b = 0; b < B; b++)
        memcpy(boot + b * W, s->obs[b], sizeof s->obs[b]);
}

static frl_replay_shape shape_of(int64_t capacity, int prioritized, double alpha)
{
    return (frl_replay_shape){.capacity = capacity, .steps = T, .envs = B, .obs_w = W,
                              .act_w = 1, .discrete = 1, .prioritized = prioritized,
                              .alpha = alpha, .batch_rows = 256};
}

/* The naive n-step target of row (t, b) of block k of nb: the same walk over copied x',
 * going on at step 0 of block k + 1 (mod nb) unless k is the newest block. */
static void naive_target(naive (*blk)[T * B], int nb, int newest, int k, int t, int b,
                         int n_step, double gamma, double *ret, double *disc,
                         const float **x2, int *term)
{
    double g = 1;
    *ret = 0;
    *term = 0;
    for (int j = 0; j < n_step; j++, t++) {
        if (t == T) {
            if (k == newest)
                break;
            k = (k + 1) % nb;
            t = 0;
        }
        const naive *n = &blk[k][t * B + b];
        *ret += g * n->r;
        g *= gamma;
        *x2 = n->x2;
        if (n->term || n->trunc) {
            *term = n->term;
            break;
        }
    }
    *disc = *term ? 0 : g;
}

/* 13 slots into a replay of 4 blocks (it wraps three times), then every sampled row
 * against the naive copy of the blocks it came from, for n = 1, 3 and 2T + 1 (sums
 * that go on into the next one or two blocks, and stop at the newest's end). */
START_TEST(obs_once_matches_naive)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_ring *ring = make_ring(rt, T, B, W);
    frl_replay_shape sh = shape_of(4 * T * B - 7, 0, 0); /* rounds up to 4 blocks */
    frl_replay *r;
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_replay_create(&r, rt, &sh, err), FRL_OK);
    ck_assert_int_eq(r->capacity, 4 * T * B);
    streams s = {.rng = frl_rng_stream(7, 0), .p_end = 0.15};
    naive blocks[4][T * B];
    frl_rng draws = frl_rng_stream(8, 0);
    for (int slot = 0; slot < 13; slot++) {
        fill_slot(&s, ring, blocks[slot % 4]);
        ck_assert_int_eq(frl_replay_add_slot(r, ring, 0, err), FRL_OK);
        int seen[4 * T * B] = {0}, crossed = 0;
        for (int n_step = 1; n_step <= 2 * T + 1; n_step += n_step == 1 ? 2 : 2 * T - 2)
            for (int rep = 0; rep < 4; rep++) {
                frl_replay_draw d = {.rows = 256, .n_step = n_step, .gamma = 0.9};
                ck_assert_int_eq(frl_replay_sample(r, &draws, &d, &r->batch, err), FRL_OK);
                for (int o = 0; o < 256; o++) {
                    int64_t i = r->batch.index[o];
                    ck_assert_int_lt(i, r->filled * T * B);
                    int k = (int)(i / (T * B));
                    const naive *blk = blocks[k];
                    int t = (int)(i % (T * B)) / B, b = (int)(i % B);
                    ck_assert_int_eq(blk[t * B + b].reset, 0);
                    seen[i] = 1;
                    double ret, disc;
                    const float *x2 = NULL;
                    int term;
                    naive_target(blocks, 4, slot % 4, k, t, b, n_step, 0.9, &ret, &disc, &x2,
                                 &term);
                    crossed += !term && disc < pow(0.9, T - t) - 1e-6;
                    ck_assert_mem_eq(r->batch.obs + o * W, blk[t * B + b].x, sizeof(float) * W);
                    ck_assert_int_eq(((int32_t *)r->batch.action)[o], blk[t * B + b].a);
                    ck_assert_float_eq_tol(r->batch.reward[o], ret, 1e-5);
                    ck_assert_float_eq_tol(r->batch.discount[o], disc, 1e-6);
                    ck_assert_int_eq(r->batch.terminated[o], term);
                    if (!term)
                        ck_assert_mem_eq(r->batch.next_obs + o * W, x2, sizeof(float) * W);
                    ck_assert_float_eq(r->batch.weight[o], 1.0f);
                }
            }
        if (slot > 0) /* sums went past their block's end: the walk across was checked */
            ck_assert_int_gt(crossed, 0);
        /* Every transition is drawn, and the count is the rows that are not resets. */
        int64_t live = 0;
        for (int64_t i = 0; i < r->filled * T * B; i++) {
            int is = !blocks[i / (T * B)][i % (T * B)].reset;
            live += is;
            ck_assert_msg(seen[i] == is, "slot %d row %lld: seen %d, transition %d", slot,
                          (long long)i, seen[i], is);
        }
        ck_assert_int_eq(r->size, live);
    }
    frl_replay_destroy(r);
    frl_ring_destroy(ring);
    frl_runtime_destroy(rt);
}
END_TEST

/* A stream that broke between two blocks (the run went on after a failed env step,
 * which resets the envs: the next block starts a fresh episode, not from the bootstrap
 * observation) ends an n-step sum at the block's end, bootstrapping from that
 * observation, as at the newest block's end; an unbroken one goes on across. */
/* Three blocks of episodes that never end, the stream broken between blocks 0 and 1
 * (fresh first observations, as after a restart) and whole between 1 and 2. */
static frl_replay *broken_replay(frl_runtime *rt, frl_ring *ring, uint64_t seed,
                                 naive (*blk)[T * B])
{
    frl_replay_shape sh = shape_of(3 * T * B, 0, 0);
    frl_replay *r;
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_replay_create(&r, rt, &sh, err), FRL_OK);
    streams s = {.rng = frl_rng_stream(seed, 0), .p_end = 0};
    for (int k = 0; k < 3; k++) {
        if (k == 1)
            for (int b = 0; b < B; b++)
                for (int w = 0; w < W; w++)
                    s.obs[b][w] = (float)frl_rng_uniform_range(&s.rng, 20, 30);
        fill_slot(&s, ring, blk[k]);
        ck_assert_int_eq(frl_replay_add_slot(r, ring, 0, err), FRL_OK);
    }
    return r;
}

START_TEST(broken_stream_not_crossed)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_ring *ring = make_ring(rt, T, B, W);
    char err[FRL_ERRMSG_SIZE];
    naive blk[3][T * B];
    frl_replay *r = broken_replay(rt, ring, 11, blk);
    frl_rng draws = frl_rng_stream(12, 0);
    const double gamma = 0.9;
    int seen[2] = {0, 0};
    for (int rep = 0; rep < 20; rep++) {
        frl_replay_draw d = {.rows = 256, .n_step = T + 2, .gamma = gamma};
        ck_assert_int_eq(frl_replay_sample(r, &draws, &d, &r->batch, err), FRL_OK);
        for (int o = 0; o < 256; o++) {
            int64_t i = r->batch.index[o];
            int k = (int)(i / (T * B)), t = (int)(i % (T * B)) / B, b = (int)(i % B);
            if (k == 2)
                continue;
            double ret, disc;
            const float *x2 = NULL;
            int term;
            /* block 0 as the newest of one block (the walk stops at its end); block 1
             * going on into block 2 */
            naive_target(blk, 3, k == 0 ? 0 : 2, k, t, b, T + 2, gamma, &ret, &disc, &x2,
                         &term);
            ck_assert_float_eq_tol(r->batch.reward[o], ret, 1e-5);
            ck_assert_float_eq_tol(r->batch.discount[o], disc, 1e-6);
            ck_assert_mem_eq(r->batch.next_obs + o * W, x2, sizeof(float) * W);
            seen[k] = 1;
        }
    }
    ck_assert(seen[0] && seen[1]);
    frl_replay_destroy(r);
    frl_ring_destroy(ring);
    frl_runtime_destroy(rt);
}
END_TEST

/* The same break seen by a sequence (R2D2's frl_replay_gather_span): the block before
 * it ends its episode as an autoreset row would, so the recurrent state restarts at the
 * fresh episode and n-step sums stop at the old one's last observation; an unbroken
 * join keeps its records' flags. */
START_TEST(broken_stream_ends_sequences)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_ring *ring = make_ring(rt, T, B, W);
    naive blk[3][T * B];
    frl_replay *r = broken_replay(rt, ring, 13, blk);
    enum { ROWS = 3 * T + 1 };
    float obs[ROWS * W], reward[3 * T];
    int32_t action[3 * T];
    uint8_t flags[3 * ROWS];
    frl_replay_span sp = {1, obs, action, reward, flags, flags + ROWS, flags + 2 * ROWS, NULL};
    for (int b = 0; b < B; b++) {
        frl_replay_gather_span(r, 2, b, 3, 0, &sp);
        for (int i = 0; i < 3 * T; i++) {
            int broken_end = i == T - 1, before = i == T - 2;
            ck_assert_msg(sp.reset[i] == broken_end, "env %d row %d reset %d", b, i, sp.reset[i]);
            ck_assert_msg(sp.truncated[i] == before, "env %d row %d truncated %d", b, i,
                          sp.truncated[i]);
            ck_assert_int_eq(sp.terminated[i], 0);
        }
    }
    frl_replay_destroy(r);
    frl_ring_destroy(ring);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- priorities ---- */

/* A prioritised replay of 3 blocks (45 rows, not a power of two) without reset rows. */
static frl_replay *full_prioritized(frl_runtime *rt, frl_ring *ring, double alpha)
{
    frl_replay_shape sh = shape_of(3 * T * B, 1, alpha);
    frl_replay *r;
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_replay_create(&r, rt, &sh, err), FRL_OK);
    streams s = {.rng = frl_rng_stream(3, 0), .p_end = 0};
    naive blk[T * B];
    for (int k = 0; k < 3; k++) {
        fill_slot(&s, ring, blk);
        ck_assert_int_eq(frl_replay_add_slot(r, ring, 0, err), FRL_OK);
    }
    ck_assert_int_eq(r->size, 3 * T * B);
    return r;
}

static void set_priorities(frl_replay *r, const float *p)
{
    int64_t idx[3 * T * B];
    for (int i = 0; i < 3 * T * B; i++)
        idx[i] = i;
    char err[FRL_ERRMSG_SIZE];
    ck_assert_msg(frl_replay_update(r, idx, p, 3 * T * B, err) == FRL_OK, "%s", err);
}

/* Root sum and minimum against the leaves; draws against p^alpha by chi-square. */
START_TEST(sum_tree_frequencies)
{
    enum { N = 3 * T * B, CALLS = 200 };
    frl_runtime *rt = frl_test_runtime(1);
    frl_ring *ring = make_ring(rt, T, B, W);
    const double alpha = 0.6;
    frl_replay *r = full_prioritized(rt, ring, alpha);
    float p[N];
    double want = 0, pmin = INFINITY, pa[N];
    for (int i = 0; i < N; i++) {
        p[i] = 0.05f + (float)((i * 37) % 11);
        pa[i] = pow(p[i], alpha);
        want += pa[i];
        pmin = fmin(pmin, pa[i]);
    }
    set_priorities(r, p);
    ck_assert_double_eq_tol(frl_replay_priority_total(r), want, 1e-9 * want);
    ck_assert_float_eq_tol(frl_replay_priority_min(r), pmin, 1e-6 * pmin);
    long count[N] = {0};
    frl_rng rng = frl_rng_stream(11, 0);
    frl_replay_draw d = {.rows = 256, .n_step = 1, .gamma = 0.99, .prioritized = 1, .beta = 0.4};
    char err[FRL_ERRMSG_SIZE];
    for (int c = 0; c < CALLS; c++) {
        ck_assert_int_eq(frl_replay_sample(r, &rng, &d, &r->batch, err), FRL_OK);
        for (int o = 0; o < 256; o++)
            count[r->batch.index[o]]++;
    }
    double chi2 = 0, draws = 256.0 * CALLS;
    for (int i = 0; i < N; i++) {
        double e = draws * pa[i] / want;
        chi2 += (count[i] - e) * (count[i] - e) / e;
    }
    /* 44 degrees of freedom: P(chi2 > 90) < 1e-4 for independent draws, and stratified
     * draws vary less; the seed is fixed, so this is deterministic. */
    ck_assert_msg(chi2 < 90, "chi-square %.1f over %d rows", chi2, N);
    frl_replay_destroy(r);
    frl_ring_destroy(ring);
    frl_runtime_destroy(rt);
}
END_TEST

/* Weights (N P(i))^-beta / max_j (N P(j))^-beta against float64 from the priorities. */
START_TEST(importance_weights)
{
    enum { N = 3 * T * B };
    frl_runtime *rt = frl_test_runtime(1);
    frl_ring *ring = make_ring(rt, T, B, W);
    const double alpha = 0.7, beta = 0.5;
    frl_replay *r = full_prioritized(rt, ring, alpha);
    float p[N];
    double total = 0, pmin = INFINITY;
    for (int i = 0; i < N; i++) {
        p[i] = 0.01f + 0.37f * (float)(i % 7);
        total += pow(p[i], alpha);
        pmin = fmin(pmin, pow(p[i], alpha));
    }
    set_priorities(r, p);
    frl_rng rng = frl_rng_stream(5, 0);
    frl_replay_draw d = {.rows = 256, .n_step = 1, .gamma = 0.99, .prioritized = 1, .beta = beta};
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_replay_sample(r, &rng, &d, &r->batch, err), FRL_OK);
    double max_w = pow(N * pmin / total, -beta);
    for (int o = 0; o < 256; o++) {
        int64_t i = r->batch.index[o];
        double w = pow(N * pow(p[i], alpha) / total, -beta) / max_w;
        ck_assert_double_eq_tol(r->batch.weight[o], w, 2e-6);
        ck_assert_double_le(r->batch.weight[o], 1.0);
    }
    frl_replay_destroy(r);
    frl_ring_destroy(ring);
    frl_runtime_destroy(rt);
}
END_TEST

/* The draws' start at each level of the tree: the walk along a level (as many nodes as
 * draws or fewer) then the descent, with the walk's level from the root to the leaves
 * by the batch size. 27 of 40 blocks filled, with autoreset rows: the zero leaves of
 * resets and of the unfilled blocks are never drawn, and the frequencies follow
 * p^alpha (chi-square). */
START_TEST(prioritized_walk_levels)
{
    enum { BLOCKS = 40, FILLED = 27, N = FILLED * T * B, CALLS_ROWS = 60000 };
    frl_runtime *rt = frl_test_runtime(1);
    frl_ring *ring = make_ring(rt, T, B, W);
    frl_replay_shape sh = shape_of(BLOCKS * T * B, 1, 0.6);
    sh.batch_rows = 1024;
    frl_replay *r;
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_replay_create(&r, rt, &sh, err), FRL_OK);
    ck_assert_int_eq(r->tree_top, 4); /* 600 -> 75 -> 10 -> 2 -> 1 */
    streams s = {.rng = frl_rng_stream(21, 0), .p_end = 0.2};
    static naive blk[FILLED][T * B];
    for (int k = 0; k < FILLED; k++) {
        fill_slot(&s, ring, blk[k]);
        ck_assert_int_eq(frl_replay_add_slot(r, ring, 0, err), FRL_OK);
    }
    static int64_t idx[N];
    static float p[N];
    static double pa[N];
    int n = 0;
    double total = 0;
    for (int i = 0; i < N; i++) {
        pa[i] = 0;
        if (blk[i / (T * B)][i % (T * B)].reset)
            continue;
        p[n] = 0.5f + (float)((i * 29) % 13);
        pa[i] = pow(p[n], 0.6);
        total += pa[i];
        idx[n++] = i;
    }
    ck_assert_int_eq(frl_replay_update(r, idx, p, n, err), FRL_OK);
    /* An autoreset row, or a row of an unfilled block, is not a transition: refused,
     * with nothing changed (the first index, a transition, keeps its leaf). */
    int reset_row = 0;
    while (pa[reset_row] > 0)
        reset_row++;
    const double total_before = frl_replay_priority_total(r);
    for (int k = 0; k < 2; k++) {
        int64_t bad[2] = {idx[0], k ? (int64_t)N + 4 : reset_row};
        float pr[2] = {77.0f, 1.0f};
        ck_assert_int_eq(frl_replay_update(r, bad, pr, 2, err), FRL_ERR_RANGE);
        ck_assert_msg(strstr(err, "not a transition"), "%s", err);
        ck_assert_double_eq(frl_replay_priority_total(r), total_before);
    }
    const int32_t rows[] = {1, 3, 8, 64, 256, 700};
    for (int k = 0; k < 6; k++) {
        static long count[N];
        memset(count, 0, sizeof count);
        frl_rng rng = frl_rng_stream(22, (uint64_t)k);
        frl_replay_draw d = {.rows = rows[k], .n_step = 1, .gamma = 0.99, .prioritized = 1,
                             .beta = 0.4};
        long draws = 0;
        for (int c = 0; c < CALLS_ROWS / rows[k] + 1; c++) {
            ck_assert_int_eq(frl_replay_sample(r, &rng, &d, &r->batch, err), FRL_OK);
            for (int o = 0; o < rows[k]; o++) {
                int64_t i = r->batch.index[o];
                ck_assert_msg(i >= 0 && i < N && pa[i] > 0, "rows %d: drew row %lld",
                              (int)rows[k], (long long)i);
                count[i]++;
            }
            draws += rows[k];
        }
        double chi2 = 0;
        for (int j = 0; j < n; j++) {
            double e = (double)draws * pa[idx[j]] / total;
            chi2 += (count[idx[j]] - e) * (count[idx[j]] - e) / e;
        }
        /* n - 1 degrees of freedom: six standard deviations above the mean (draws in
         * strata vary less than independent ones; the seeds are fixed) */
        double df = n - 1;
        ck_assert_msg(chi2 < df + 6 * sqrt(2 * df), "rows %d: chi-square %.1f over %d rows",
                      (int)rows[k], chi2, n);
    }
    frl_replay_destroy(r);
    frl_ring_destroy(ring);
    frl_runtime_destroy(rt);
}
END_TEST

/* core/pow_pos.h against libm in double, over floats spread across their range (and
 * the ends): x^a for p^alpha within 5e-14 relative (the product a log x's rounding, as
 * for exp(a log x)); the weights' float x^-b within twice the error of expf(-b logf x),
 * which they used before (both limited by b log x's rounding in float: about 1e-5
 * relative at x = 2^125), and never below 2^-125. */
START_TEST(pow_pos_accuracy)
{
    frl_rng rng = frl_rng_stream(31, 0);
    const double as[] = {0.0, 0.123, 0.4, 0.5, 0.6, 0.7, 0.999, 1.0};
    double worst = 0, worst_f = 0, worst_libf = 0;
    for (int k = 0; k < 200000; k++) {
        uint32_t bits = (uint32_t)(frl_rng_next(&rng) % 0x7f7fffffu) + 1; /* (0, FLT_MAX] */
        if (k < 4)
            bits = (uint32_t[]){1u, 0x00800000u, 0x3f800000u, 0x7f7fffffu}[k];
        float x;
        memcpy(&x, &bits, sizeof x);
        double a = as[k % 8], want = pow((double)x, a), got = frl_pow_pos((double)x, a);
        worst = fmax(worst, fabs(got - want) / want);
        /* weights: x in [1, 2^125], b in [0, 1] */
        float xf = 1.0f + (float)ldexp(frl_rng_uniform(&rng), (int)(frl_rng_next(&rng) % 126));
        float b = (float)frl_rng_uniform(&rng);
        float gf = frl_powf_pos(xf, -b), libf = expf(-b * logf(xf));
        double wf = pow((double)xf, -(double)b);
        ck_assert_msg(gf >= 0x1p-125f && gf <= 1.0f, "%g^-%g gave %g", xf, b, gf);
        worst_f = fmax(worst_f, fabs(gf - wf) / wf);
        worst_libf = fmax(worst_libf, fabs(libf - wf) / wf);
    }
    ck_assert_msg(worst < 5e-14, "x^a: worst relative error %g", worst);
    ck_assert_msg(worst_f < 2 * worst_libf && worst_f < 2e-5,
                  "x^-b in float: worst relative error %g (expf(-b logf x): %g)", worst_f,
                  worst_libf);
}
END_TEST

/* Every internal node of both trees against its 8 children: the sum (in any order, to
 * rounding) and the minimum (exactly); padding nodes empty. */
static void check_tree(const frl_replay *r)
{
    const double *sum = r->array[FRL_REPLAY_SUM_TREE];
    const float *mn = r->array[FRL_REPLAY_MIN_TREE];
    int64_t n = r->capacity;
    for (int L = 1; L <= r->tree_top; L++) {
        int64_t m_n = (n + 7) / 8;
        for (int64_t m = 0; m < (m_n + 7) / 8 * 8; m++) {
            const double *cs = sum + r->tree_off[L - 1] + 8 * m;
            const float *cm = mn + r->tree_off[L - 1] + 8 * m;
            double t = 0;
            float lo = INFINITY;
            for (int c = 0; c < 8 && m < m_n; c++) {
                t += cs[c];
                lo = fminf(lo, cm[c]);
            }
            ck_assert_double_eq_tol(sum[r->tree_off[L] + m], t, 1e-12 * (1 + t));
            ck_assert_float_eq(mn[r->tree_off[L] + m], lo);
        }
        n = m_n;
    }
    ck_assert_int_eq(n, 1);
}

/* Updates change the leaves and the roots; new rows get the largest priority seen. */
START_TEST(priority_updates)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_ring *ring = make_ring(rt, T, B, W);
    const double alpha = 0.5;
    frl_replay *r = full_prioritized(rt, ring, alpha);
    const double *sum = r->array[FRL_REPLAY_SUM_TREE]; /* row i's leaf is sum[i] */
    int64_t C = r->capacity;
    /* all at max priority 1 */
    ck_assert_double_eq_tol(frl_replay_priority_total(r), (double)C, 1e-9);
    int64_t idx[2] = {3, 40};
    float pr[2] = {9.0f, 0.25f};
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_replay_update(r, idx, pr, 2, err), FRL_OK);
    ck_assert_double_eq_tol(sum[3], 3.0, 1e-12);
    ck_assert_double_eq_tol(sum[40], 0.5, 1e-12);
    ck_assert_double_eq_tol(frl_replay_priority_total(r), (double)(C - 2) + 3.5, 1e-9);
    ck_assert_float_eq_tol(frl_replay_priority_min(r), 0.5f, 1e-7);
    ck_assert_double_eq(r->max_priority, 9.0);
    /* The next slot overwrites block 0 at priority 9^alpha = 3; row 3's update is gone. */
    streams s = {.rng = frl_rng_stream(4, 0), .p_end = 0};
    naive blk[T * B];
    fill_slot(&s, ring, blk);
    ck_assert_int_eq(frl_replay_add_slot(r, ring, 0, err), FRL_OK);
    for (int i = 0; i < T * B; i++)
        ck_assert_double_eq_tol(sum[i], 3.0, 1e-12);
    ck_assert_double_eq_tol(frl_replay_priority_total(r),
                            3.0 * T * B + (double)(C - T * B - 1) + 0.5, 1e-9);
    check_tree(r);
    /* A bad value anywhere in the list changes nothing. */
    int64_t idx3[3] = {0, 1, 2};
    const float bad[][3] = {{1, NAN, 1}, {1, -1, 1}, {1, 0, 1}, {1, INFINITY, 1}};
    const frl_status want[] = {FRL_ERR_NONFINITE, FRL_ERR_RANGE, FRL_ERR_RANGE, FRL_ERR_NONFINITE};
    for (int k = 0; k < 4; k++) {
        ck_assert_int_eq(frl_replay_update(r, idx3, bad[k], 3, err), want[k]);
        ck_assert_msg(strstr(err, "priority 1"), "%s", err);
        ck_assert_double_eq_tol(sum[0], 3.0, 1e-12);
    }
    int64_t out_of_range[1] = {C};
    ck_assert_int_eq(frl_replay_update(r, out_of_range, pr, 1, err), FRL_ERR_RANGE);
    frl_replay_destroy(r);
    frl_ring_destroy(ring);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- bad inputs and memory ---- */

START_TEST(bad_inputs)
{
    frl_runtime *rt = frl_test_runtime(1);
    char err[FRL_ERRMSG_SIZE];
    frl_replay *r = (frl_replay *)1;
    size_t bytes;
    frl_replay_shape sh = shape_of(0, 0, 0);
    ck_assert_int_eq(frl_replay_create(&r, rt, &sh, err), FRL_ERR_RANGE);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(err, "capacity 0"), "%s", err);
    /* Too large for any address space: the message gives the bytes needed. */
    sh = shape_of(INT64_MAX / 2, 1, 0.6);
    sh.obs_w = 1000;
    ck_assert_int_eq(frl_replay_memory_size(&sh, &bytes, err), FRL_ERR_SIZE);
    ck_assert_msg(strstr(err, "bytes") && strstr(err, "need"), "%s", err);
    ck_assert_int_eq(frl_replay_create(&r, rt, &sh, err), FRL_ERR_SIZE);
    sh = shape_of(100, 1, 1.5);
    ck_assert_int_eq(frl_replay_create(&r, rt, &sh, err), FRL_ERR_RANGE);
    sh = shape_of(100, 0, 0);
    sh.act_w = 2;
    ck_assert_int_eq(frl_replay_create(&r, rt, &sh, err), FRL_ERR_RANGE);
    ck_assert_int_eq(frl_replay_create(&r, rt, NULL, err), FRL_ERR_NULL);
    /* Empty, and draws that do not fit. */
    sh = shape_of(100, 0, 0);
    ck_assert_int_eq(frl_replay_create(&r, rt, &sh, err), FRL_OK);
    frl_rng rng = frl_rng_stream(1, 0);
    frl_replay_draw d = {.rows = 32, .n_step = 1, .gamma = 0.9};
    ck_assert_int_eq(frl_replay_sample(r, &rng, &d, &r->batch, err), FRL_ERR_STATE);
    frl_ring *ring = make_ring(rt, T, B, W);
    streams s = {.rng = frl_rng_stream(2, 0), .p_end = 0.2};
    naive blk[T * B];
    fill_slot(&s, ring, blk);
    ck_assert_int_eq(frl_replay_add_slot(r, ring, 0, err), FRL_OK);
    ck_assert_int_eq(frl_replay_add_slot(r, ring, 1, err), FRL_ERR_RANGE);
    d.rows = 257;
    ck_assert_int_eq(frl_replay_sample(r, &rng, &d, &r->batch, err), FRL_ERR_RANGE);
    d.rows = 32;
    d.n_step = 0;
    ck_assert_int_eq(frl_replay_sample(r, &rng, &d, &r->batch, err), FRL_ERR_RANGE);
    d.n_step = 1;
    d.gamma = NAN;
    ck_assert_int_eq(frl_replay_sample(r, &rng, &d, &r->batch, err), FRL_ERR_RANGE);
    d.gamma = 0.9;
    d.prioritized = 1;
    ck_assert_int_eq(frl_replay_sample(r, &rng, &d, &r->batch, err), FRL_ERR_STATE);
    int64_t idx = 0;
    float one = 1;
    ck_assert_int_eq(frl_replay_update(r, &idx, &one, 1, err), FRL_ERR_STATE);
    frl_replay_destroy(r);
    /* A ring of another shape. */
    sh.envs = B + 1;
    ck_assert_int_eq(frl_replay_create(&r, rt, &sh, err), FRL_OK);
    ck_assert_int_eq(frl_replay_add_slot(r, ring, 0, err), FRL_ERR_SIZE);
    frl_replay_destroy(r);
    frl_replay_destroy(NULL);
    frl_ring_destroy(ring);
    frl_runtime_destroy(rt);
}
END_TEST

/* The memory formula of replay.h, by hand, for the bench's CartPole shape. */
START_TEST(memory_formula)
{
    frl_replay_shape sh = {.capacity = 1000000, .steps = 128, .envs = 16, .obs_w = 4,
                           .act_w = 1, .discrete = 1, .prioritized = 1, .alpha = 0.6};
    size_t bytes;
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_replay_memory_size(&sh, &bytes, err), FRL_OK);
    double blocks = ceil(1e6 / 2048), C = blocks * 2048;
    double nodes = 0; /* each level of the 8-ary trees in whole groups of 8 */
    for (double n = C;; n = ceil(n / 8)) {
        nodes += ceil(n / 8) * 8;
        if (n <= 1)
            break;
    }
    /* records of 16 + 4 + 4 + 3 bytes, rounded up to 32 */
    double want = blocks * 16 * 129 * 32 + 12 * nodes + 4 * blocks;
    ck_assert_double_ge(bytes, want);
    ck_assert_double_le(bytes, want + 16 * 64 + sizeof(frl_replay) + 8 * 64);
}
END_TEST

/* Each allocation of create failing in turn: an error that says memory and bytes, no
 * handle, no leak; then adding and sampling allocate nothing. */
START_TEST(alloc_failure_and_none_after)
{
    counter c = {0, 0};
    frl_runtime *rt = counting_runtime(&c);
    frl_ring *ring = make_ring(rt, T, B, W);
    frl_replay_shape sh = shape_of(200, 1, 0.6);
    char err[FRL_ERRMSG_SIZE];
    for (long n = 1; n <= 2; n++) {
        frl_replay *r = (frl_replay *)1;
        c.fail_at = c.calls + n;
        ck_assert_int_eq(frl_replay_create(&r, rt, &sh, err), FRL_ERR_NOMEM);
        ck_assert_ptr_null(r);
        ck_assert_msg(strstr(err, "out of memory") && strstr(err, "bytes"), "%s", err);
    }
    c.fail_at = 0;
    frl_replay *r;
    ck_assert_int_eq(frl_replay_create(&r, rt, &sh, err), FRL_OK);
    long before = c.calls;
    streams s = {.rng = frl_rng_stream(9, 0), .p_end = 0.1};
    naive blk[T * B];
    frl_rng rng = frl_rng_stream(1, 0);
    for (int k = 0; k < 20; k++) {
        fill_slot(&s, ring, blk);
        ck_assert_int_eq(frl_replay_add_slot(r, ring, 0, err), FRL_OK);
        frl_replay_draw d = {.rows = 256, .n_step = 3, .gamma = 0.9, .prioritized = k % 2,
                             .beta = 0.4};
        ck_assert_int_eq(frl_replay_sample(r, &rng, &d, &r->batch, err), FRL_OK);
        float p[256];
        for (int o = 0; o < 256; o++)
            p[o] = 0.5f + (float)o;
        ck_assert_int_eq(frl_replay_update(r, r->batch.index, p, 256, err), FRL_OK);
    }
    ck_assert_int_eq(c.calls, before);
    frl_replay_destroy(r);
    frl_ring_destroy(ring);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- checkpoints ---- */

static frl_container *round_trip(frl_runtime *rt, const frl_section *s, int32_t n)
{
    /* tmpfs where there is one: its fsync costs nothing, and the test stays fast. */
    char path[64];
    snprintf(path, sizeof path, "%s/frl_test_replay_XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char err[FRL_ERRMSG_SIZE];
    ck_assert_msg(frl_container_write(path, &rt->alloc, s, n, err) == FRL_OK, "%s", err);
    frl_container *c;
    ck_assert_msg(frl_container_read(&c, path, &rt->alloc, err) == FRL_OK, "%s", err);
    unlink(path);
    return c;
}

/* A prioritised replay of alpha filled with the same slots as every other, each
 * transition then given priority 1e-3 * 3.7^(i % 23) (a float), so that replays of two
 * alphas hold the same raw priorities. */
static frl_replay *filled_replay(frl_runtime *rt, frl_ring *ring, double alpha)
{
    frl_replay_shape sh = shape_of(4 * T * B, 1, alpha);
    frl_replay *r;
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_replay_create(&r, rt, &sh, err), FRL_OK);
    streams s = {.rng = frl_rng_stream(6, 0), .p_end = 0.2};
    naive blk[T * B];
    for (int k = 0; k < 6; k++) {
        fill_slot(&s, ring, blk);
        ck_assert_int_eq(frl_replay_add_slot(r, ring, 0, err), FRL_OK);
    }
    int64_t idx[4 * T * B];
    float p[4 * T * B];
    int32_t n = 0;
    for (int64_t i = 0; i < r->capacity; i++) {
        if (((const double *)r->array[FRL_REPLAY_SUM_TREE])[i] > 0) {
            idx[n] = i;
            p[n++] = (float)(1e-3 * pow(3.7, (double)(i % 23)));
        }
    }
    ck_assert_int_gt(n, 0);
    ck_assert_msg(frl_replay_update(r, idx, p, n, err) == FRL_OK, "%s", err);
    return r;
}

/* `from` saved, loaded into a replay of another alpha (its settings' train.per_alpha
 * changed on resume): the leaves are those `want` (the same priorities under the new
 * alpha all along) holds, bit for bit, not the old exponent's (they were before:
 * p^0.6 leaves sampled as p^0.9 ones). */
static void assert_loads_as(frl_runtime *rt, frl_replay *from, frl_replay *want,
                            const char *drop, double saved_alpha)
{
    frl_section sec[FRL_REPLAY_SECTIONS];
    int32_t n = 0, m = 0;
    frl_replay_save(from, sec, &n);
    for (int32_t i = 0; i < n; i++) /* a file from before a section was written */
        if (strcmp(sec[i].name, drop) != 0)
            sec[m++] = sec[i];
    frl_container *c = round_trip(rt, sec, m);
    frl_replay *b;
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_replay_create(&b, rt, &want->shape, err), FRL_OK);
    ck_assert_msg(frl_replay_load(b, c, saved_alpha, err) == FRL_OK, "%s", err);
    frl_container_free(c);
    for (int i = 0; i < FRL_REPLAY_ARRAY_COUNT; i++)
        ck_assert_msg(!want->bytes[i] || memcmp(want->array[i], b->array[i],
                                                want->bytes[i]) == 0, "array %d differs", i);
    ck_assert(frl_replay_priority_total(b) == frl_replay_priority_total(want));
    ck_assert(b->max_priority == want->max_priority);
    frl_replay_destroy(b);
}

START_TEST(alpha_changed_on_load)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_ring *ring = make_ring(rt, T, B, W);
    frl_replay *a6 = filled_replay(rt, ring, 0.6), *a9 = filled_replay(rt, ring, 0.9);
    ck_assert(frl_replay_priority_total(a6) != frl_replay_priority_total(a9));
    assert_loads_as(rt, a6, a9, "", NAN);
    assert_loads_as(rt, a9, a6, "", NAN);
    assert_loads_as(rt, a6, a6, "", NAN);
    /* A file from before replay.alpha: the caller names the alpha it was saved with. */
    assert_loads_as(rt, a6, a9, "replay.alpha", 0.6);
    /* Saved with alpha 0 every leaf is 1: no priority to remake, said with the way on,
     * and the replay is left as it was. */
    frl_replay *a0 = filled_replay(rt, ring, 0.0);
    frl_section sec[FRL_REPLAY_SECTIONS];
    int32_t n = 0;
    frl_replay_save(a0, sec, &n);
    frl_container *c = round_trip(rt, sec, n);
    char err[FRL_ERRMSG_SIZE];
    int64_t filled = a9->filled;
    double total = frl_replay_priority_total(a9);
    ck_assert_int_eq(frl_replay_load(a9, c, NAN, err), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "train.per_alpha=0") && strstr(err, "0.9") &&
                  strstr(err, "train.save_replay=false"), "%s", err);
    ck_assert_int_eq(a9->filled, filled);
    ck_assert(frl_replay_priority_total(a9) == total);
    frl_container_free(c);
    /* A recorded alpha outside [0, 1] is a broken file. */
    double bad = 1.5;
    ck_assert_str_eq(sec[1].name, "replay.alpha");
    sec[1].data = &bad;
    c = round_trip(rt, sec, n);
    ck_assert_int_eq(frl_replay_load(a9, c, NAN, err), FRL_ERR_FORMAT);
    ck_assert_msg(strstr(err, "replay.alpha"), "%s", err);
    frl_container_free(c);
    frl_replay_destroy(a0);
    frl_replay_destroy(a6);
    frl_replay_destroy(a9);
    frl_ring_destroy(ring);
    frl_runtime_destroy(rt);
}
END_TEST

/* Saved and loaded, a replay draws the same minibatches; broken sections are refused
 * with a message and leave the replay as it was. */
START_TEST(save_and_load)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_ring *ring = make_ring(rt, T, B, W);
    frl_replay_shape sh = shape_of(4 * T * B, 1, 0.6);
    frl_replay *a, *b;
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_replay_create(&a, rt, &sh, err), FRL_OK);
    ck_assert_int_eq(frl_replay_create(&b, rt, &sh, err), FRL_OK);
    streams s = {.rng = frl_rng_stream(6, 0), .p_end = 0.2};
    naive blk[T * B];
    frl_rng rng = frl_rng_stream(1, 0);
    frl_replay_draw d = {.rows = 64, .n_step = 2, .gamma = 0.9, .prioritized = 1, .beta = 0.4};
    for (int k = 0; k < 6; k++) {
        fill_slot(&s, ring, blk);
        ck_assert_int_eq(frl_replay_add_slot(a, ring, 0, err), FRL_OK);
        ck_assert_int_eq(frl_replay_sample(a, &rng, &d, &a->batch, err), FRL_OK);
        float p[64];
        for (int o = 0; o < 64; o++)
            p[o] = 0.1f + (float)(o % 5);
        ck_assert_int_eq(frl_replay_update(a, a->batch.index, p, 64, err), FRL_OK);
    }
    frl_section sec[FRL_REPLAY_SECTIONS];
    int32_t n = 0;
    frl_replay_save(a, sec, &n);
    frl_container *c = round_trip(rt, sec, n);
    ck_assert_msg(frl_replay_load(b, c, NAN, err) == FRL_OK, "%s", err);
    frl_container_free(c);
    ck_assert_int_eq(b->size, a->size);
    ck_assert_int_eq(b->next, a->next);
    for (int i = 0; i < FRL_REPLAY_ARRAY_COUNT; i++)
        ck_assert_msg(!a->bytes[i] || memcmp(a->array[i], b->array[i], a->bytes[i]) == 0,
                      "array %d differs", i);
    frl_rng ra = frl_rng_stream(2, 0), rb = ra;
    ck_assert_int_eq(frl_replay_sample(a, &ra, &d, &a->batch, err), FRL_OK);
    ck_assert_int_eq(frl_replay_sample(b, &rb, &d, &b->batch, err), FRL_OK);
    ck_assert_mem_eq(a->batch.index, b->batch.index, 64 * sizeof(int64_t));
    ck_assert_mem_eq(a->batch.weight, b->batch.weight, 64 * sizeof(float));
    /* A NaN priority, a cursor past the end, a missing section. */
    int32_t pi = n - 1, ci = n - 3;
    ck_assert_str_eq(sec[pi].name, "replay.priorities");
    ck_assert_str_eq(sec[ci].name, "replay.cursor");
    double *pr = malloc(8 * (size_t)a->capacity);
    memcpy(pr, sec[pi].data, 8 * (size_t)a->capacity);
    pr[1] = NAN;
    frl_section bad[FRL_REPLAY_SECTIONS];
    memcpy(bad, sec, sizeof bad);
    bad[pi].data = pr;
    c = round_trip(rt, bad, n);
    ck_assert_int_eq(frl_replay_load(b, c, NAN, err), FRL_ERR_FORMAT);
    ck_assert_msg(strstr(err, "replay.priorities"), "%s", err);
    frl_container_free(c);
    /* Finite but beyond any float priority: the sums would overflow to inf. */
    int live = 0;
    while (((const double *)sec[pi].data)[live] == 0)
        live++;
    memcpy(pr, sec[pi].data, 8 * (size_t)a->capacity);
    pr[live] = 1e308;
    c = round_trip(rt, bad, n);
    ck_assert_int_eq(frl_replay_load(b, c, NAN, err), FRL_ERR_FORMAT);
    ck_assert_msg(strstr(err, "replay.priorities"), "%s", err);
    frl_container_free(c);
    /* Positive but below any float (a priority^alpha is at least the least float): the
     * min tree's leaf would be 0 and every importance weight the floor's. */
    pr[live] = 1e-300;
    c = round_trip(rt, bad, n);
    ck_assert_int_eq(frl_replay_load(b, c, NAN, err), FRL_ERR_FORMAT);
    ck_assert_msg(strstr(err, "replay.priorities"), "%s", err);
    frl_container_free(c);
    memcpy(bad, sec, sizeof bad);
    ck_assert_str_eq(sec[pi - 1].name, "replay.max_priority");
    /* Above any float priority, or below the 1 it starts at (new rows would get it). */
    double maxp[2] = {1e300, 1e-300};
    for (int j = 0; j < 2; j++) {
        bad[pi - 1].data = &maxp[j];
        c = round_trip(rt, bad, n);
        ck_assert_int_eq(frl_replay_load(b, c, NAN, err), FRL_ERR_FORMAT);
        ck_assert_msg(strstr(err, "replay.max_priority"), "%s", err);
        frl_container_free(c);
    }
    /* A flag byte other than 0 or 1 (a terminated 2 would reach the batch as 2). */
    memcpy(bad, sec, sizeof bad);
    ck_assert_str_eq(sec[0].name, "replay.rows");
    unsigned char *recs = malloc(a->bytes[FRL_REPLAY_ROWS]);
    memcpy(recs, sec[0].data, a->bytes[FRL_REPLAY_ROWS]);
    for (int f = 0; f < 3; f++) {
        recs[a->off_flags + (size_t)f] += 2;
        bad[0].data = recs;
        c = round_trip(rt, bad, n);
        ck_assert_int_eq(frl_replay_load(b, c, NAN, err), FRL_ERR_FORMAT);
        ck_assert_msg(strstr(err, "replay.rows") && strstr(err, "flag"), "%s", err);
        frl_container_free(c);
        recs[a->off_flags + (size_t)f] -= 2;
    }
    free(recs);
    int64_t cur[3] = {a->capacity, 4, 9};
    memcpy(bad, sec, sizeof bad);
    bad[ci].data = cur;
    c = round_trip(rt, bad, n);
    ck_assert_int_eq(frl_replay_load(b, c, NAN, err), FRL_ERR_FORMAT);
    ck_assert_msg(strstr(err, "replay.cursor"), "%s", err);
    frl_container_free(c);
    c = round_trip(rt, sec + 1, n - 1);
    ck_assert_int_eq(frl_replay_load(b, c, NAN, err), FRL_ERR_FORMAT);
    ck_assert_msg(strstr(err, "replay.rows"), "%s", err);
    frl_container_free(c);
    free(pr);
    /* Still as loaded. */
    for (int i = 0; i < FRL_REPLAY_ARRAY_COUNT; i++)
        ck_assert_msg(!a->bytes[i] || memcmp(a->array[i], b->array[i], a->bytes[i]) == 0,
                      "array %d changed", i);
    frl_replay_destroy(a);
    frl_replay_destroy(b);
    frl_ring_destroy(ring);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- sequences ---- */

enum { S = 3 }; /* floats of recurrent state per env */

/* Sequence q = k*B + b of a block against the naive rows of env b, its bootstrap
 * observation and the state given with the slot. */
static void check_sequence(const frl_replay_seq_batch *sb, int o, const naive *blk,
                           const float *state0, int b)
{
    for (int t = 0; t < T; t++) {
        const naive *n = &blk[t * B + b];
        ck_assert_mem_eq(sb->obs + (o * (T + 1) + t) * W, n->x, sizeof(float) * W);
        ck_assert_int_eq(((int32_t *)sb->action)[o * T + t], n->a);
        ck_assert_float_eq(sb->reward[o * T + t], n->r);
        ck_assert_int_eq(sb->terminated[o * T + t], n->term);
        ck_assert_int_eq(sb->truncated[o * T + t], n->trunc);
        ck_assert_int_eq(sb->reset[o * T + t], n->reset);
    }
    ck_assert_mem_eq(sb->obs + (o * (T + 1) + T) * W, blk[(T - 1) * B + b].x2, sizeof(float) * W);
    ck_assert_mem_eq(sb->state0 + o * S, state0 + b * S, sizeof(float) * S);
}

/* 9 slots into 4 blocks (wrapping twice): every drawn env column, with its state, is the
 * slot's; every column of the filled blocks is drawn; the contents survive save and
 * load; bad requests are refused. */
START_TEST(sequences_match_naive)
{
    enum { ROWS = 40 };
    frl_runtime *rt = frl_test_runtime(1);
    frl_ring *ring = make_ring(rt, T, B, W);
    ck_assert_int_eq(frl_ring_alloc_state(ring, S), FRL_OK);
    frl_replay_shape sh = shape_of(4 * T * B, 0, 0);
    sh.state_w = S;
    frl_replay *r, *back;
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_replay_create(&r, rt, &sh, err), FRL_OK);
    ck_assert_int_eq(frl_replay_create(&back, rt, &sh, err), FRL_OK);
    static float obs[ROWS * (T + 1) * W], rew[ROWS * T], st[ROWS * S];
    static int32_t act[ROWS * T];
    static uint8_t term[ROWS * T], trunc[ROWS * T], rst[ROWS * T];
    static int64_t idx[ROWS];
    frl_replay_seq_batch sb = {ROWS, obs, act, rew, term, trunc, rst, st, idx};
    frl_rng draws = frl_rng_stream(5, 0);
    ck_assert_int_eq(frl_replay_sample_sequences(r, &draws, 4, &sb, err), FRL_ERR_STATE);
    streams s = {.rng = frl_rng_stream(9, 0), .p_end = 0.2};
    naive blocks[4][T * B];
    float states[4][B * S];
    for (int slot = 0; slot < 9; slot++) {
        fill_slot(&s, ring, blocks[slot % 4]);
        for (int j = 0; j < B * S; j++)
            ring->slot[0].state0[j] = states[slot % 4][j] = (float)(slot * 100 + j);
        ck_assert_int_eq(frl_replay_add_slot(r, ring, 0, err), FRL_OK);
        int seen[4 * B] = {0};
        for (int rep = 0; rep < 6; rep++) {
            ck_assert_int_eq(frl_replay_sample_sequences(r, &draws, ROWS, &sb, err), FRL_OK);
            for (int o = 0; o < ROWS; o++) {
                int64_t q = idx[o];
                ck_assert_int_lt(q, r->filled * B);
                check_sequence(&sb, o, blocks[q / B], states[q / B], (int)(q % B));
                seen[q] = 1;
            }
        }
        for (int q = 0; q < r->filled * B; q++)
            ck_assert_msg(seen[q], "slot %d: sequence %d never drawn", slot, q);
    }
    frl_section sec[FRL_REPLAY_SECTIONS];
    int32_t n = 0;
    frl_replay_save(r, sec, &n);
    frl_container *c = round_trip(rt, sec, n);
    ck_assert_msg(frl_replay_load(back, c, NAN, err) == FRL_OK, "%s", err);
    frl_container_free(c);
    for (int i = 0; i < FRL_REPLAY_ARRAY_COUNT; i++)
        ck_assert_msg(!r->bytes[i] || memcmp(r->array[i], back->array[i], r->bytes[i]) == 0,
                      "array %d", i);
    ck_assert_int_eq(frl_replay_sample_sequences(r, &draws, 0, &sb, err), FRL_ERR_RANGE);
    ck_assert_int_eq(frl_replay_sample_sequences(r, &draws, ROWS + 1, &sb, err), FRL_ERR_RANGE);
    frl_ring *plain = make_ring(rt, T, B, W); /* no state: refused, nothing added */
    int64_t filled = r->filled;
    ck_assert_int_eq(frl_replay_add_slot(r, plain, 0, err), FRL_ERR_SIZE);
    ck_assert_int_eq(r->filled, filled);
    frl_ring_destroy(plain);
    frl_replay_destroy(back);
    frl_replay_destroy(r);
    frl_ring_destroy(ring);
    frl_runtime_destroy(rt);
}
END_TEST

/* ---- frame stacks ---- */

enum { STACK_K = 3, STACK_SW = (STACK_K - 1) * W };

/* Block k's ring data as rl/frame_stack.c reads a slot. */
static frl_frame_source stack_source(int k, float (*obs)[T * B * W], float (*boot)[B * W],
                                     uint8_t (*reset)[T * B], float (*s0)[B * STACK_SW])
{
    return (frl_frame_source){.k = STACK_K, .fw = W, .T = T, .B = B, .obs = obs[k],
                              .boot = boot[k], .reset = reset[k], .state0 = s0[k]};
}

/* A replay of stacks of K frames gives every row's x and x' as rl/frame_stack.c builds
 * them from the ring slots it was filled from (episode starts, the frames before the
 * block from its state0, the bootstrap frame), for n = 1, 3 and T + 2 (x' in the next
 * block, or the newest block's bootstrap frame). */
START_TEST(stacks_match_the_ring)
{
    enum { K = STACK_K, SW = STACK_SW };
    frl_runtime *rt = frl_test_runtime(1);
    frl_ring *ring = make_ring(rt, T, B, W);
    ck_assert_int_eq(frl_ring_alloc_state(ring, SW), FRL_OK);
    frl_replay_shape sh = shape_of(3 * T * B, 0, 0);
    sh.stack = K;
    sh.state_w = SW;
    frl_replay *r;
    char err[FRL_ERRMSG_SIZE];
    sh.state_w = W; /* one earlier frame kept where a stack of 3 needs two */
    ck_assert_int_eq(frl_replay_create(&r, rt, &sh, err), FRL_ERR_SIZE);
    ck_assert_msg(strstr(err, "stacks of 3 frames"), "%s", err);
    sh.state_w = SW;
    ck_assert_msg(frl_replay_create(&r, rt, &sh, err) == FRL_OK, "%s", err);
    streams st = {.rng = frl_rng_stream(5, 0), .p_end = 0.2};
    frl_rng draws = frl_rng_stream(6, 0), fill = frl_rng_stream(9, 0);
    /* each block's ring data, kept to rebuild its stacks the ring's way */
    float obs[3][T * B * W], boot[3][B * W], s0[3][B * SW];
    uint8_t reset[3][T * B], term[3][T * B], trunc[3][T * B];
    naive blk[T * B];
    for (int slot = 0; slot < 7; slot++) {
        int k = slot % 3;
        fill_slot(&st, ring, blk);
        for (int i = 0; i < B * SW; i++) /* whatever acting left */
            ring->slot[0].state0[i] = (float)frl_rng_uniform_range(&fill, -5, 5);
        memcpy(obs[k], frl_ring_at(ring, 0, FRL_RING_OBSERVATIONS), sizeof obs[k]);
        memcpy(boot[k], frl_ring_at(ring, 0, FRL_RING_BOOTSTRAP_OBS), sizeof boot[k]);
        memcpy(reset[k], frl_ring_at(ring, 0, FRL_RING_RESET_STEPS), sizeof reset[k]);
        memcpy(term[k], frl_ring_at(ring, 0, FRL_RING_TERMINATED), sizeof term[k]);
        memcpy(trunc[k], frl_ring_at(ring, 0, FRL_RING_TRUNCATED), sizeof trunc[k]);
        memcpy(s0[k], ring->slot[0].state0, sizeof s0[k]);
        ck_assert_int_eq(frl_replay_add_slot(r, ring, 0, err), FRL_OK);
        for (int n_step = 1; n_step <= T + 2; n_step += n_step == 1 ? 2 : T - 1) {
            frl_replay_draw d = {.rows = 256, .n_step = n_step, .gamma = 0.9};
            ck_assert_int_eq(frl_replay_sample(r, &draws, &d, &r->batch, err), FRL_OK);
            for (int o = 0; o < 256; o++) {
                int64_t i = r->batch.index[o];
                int kk = (int)(i / (T * B)), t = (int)(i % (T * B)) / B, b = (int)(i % B);
                float want[K * W];
                frl_frame_source src = stack_source(kk, obs, boot, reset, s0);
                frl_frame_stack_row(&src, t, b, want);
                ck_assert_mem_eq(r->batch.obs + o * K * W, want, sizeof want);
                if (r->batch.terminated[o])
                    continue;
                /* x' is at the step after the n-step walk: n steps on (in the next
                 * block past this one's end, unless it is the newest), or the step
                 * that ended the episode (truncated: the final frame) */
                int t2 = t, k2 = kk;
                for (int j = 0; j < n_step; j++) {
                    if (t2 == T && k2 == k)
                        break;
                    if (t2 == T) {
                        k2 = (k2 + 1) % 3;
                        t2 = 0;
                    }
                    int row = t2++ * B + b;
                    if (term[k2][row] || trunc[k2][row])
                        break;
                }
                src = stack_source(k2, obs, boot, reset, s0);
                frl_frame_stack_row(&src, t2, b, want);
                ck_assert_mem_eq(r->batch.next_obs + o * K * W, want, sizeof want);
            }
        }
    }
    frl_replay_destroy(r);
    frl_ring_destroy(ring);
    frl_runtime_destroy(rt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("replay");
    TCase *tc = tcase_create("replay");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, obs_once_matches_naive);
    tcase_add_test(tc, broken_stream_not_crossed);
    tcase_add_test(tc, broken_stream_ends_sequences);
    tcase_add_test(tc, sum_tree_frequencies);
    tcase_add_test(tc, importance_weights);
    tcase_add_test(tc, prioritized_walk_levels);
    tcase_add_test(tc, pow_pos_accuracy);
    tcase_add_test(tc, priority_updates);
    tcase_add_test(tc, bad_inputs);
    tcase_add_test(tc, memory_formula);
    tcase_add_test(tc, alloc_failure_and_none_after);
    tcase_add_test(tc, save_and_load);
    tcase_add_test(tc, alpha_changed_on_load);
    tcase_add_test(tc, sequences_match_naive);
    tcase_add_test(tc, stacks_match_the_ring);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
