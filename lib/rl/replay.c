/* The replay: blocks of ring slots with observations stored once, and the sum and min
 * trees of prioritised sampling, in one arena (see replay.h for the layout). */
#include <math.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#if defined(MADV_HUGEPAGE) && !defined(MADV_COLLAPSE)
#define MADV_COLLAPSE 25 /* Linux 6.1's value; older kernels refuse it (EINVAL) */
#endif
#endif

#include "rl/replay.h"

/* ---- sizes ---- */

static frl_status check_shape(const frl_replay_shape *s, char *err)
{
    if (!s)
        return frl_fail(err, FRL_ERR_NULL, "replay: shape is NULL");
    if (s->capacity < 1)
        return frl_fail(err, FRL_ERR_RANGE, "replay: capacity %lld < 1", (long long)s->capacity);
    if (s->steps < 1 || s->envs < 1 || s->obs_w < 1 || s->act_w < 1 || s->batch_rows < 0)
        return frl_fail(err, FRL_ERR_RANGE, "replay: steps %d, envs %d, observation width %d and "
                        "action width %d must be >= 1, batch rows %d >= 0", (int)s->steps,
                        (int)s->envs, (int)s->obs_w, (int)s->act_w, (int)s->batch_rows);
    if (s->discrete && s->act_w != 1)
        return frl_fail(err, FRL_ERR_RANGE, "replay: a discrete action is 1 wide, not %d",
                        (int)s->act_w);
    if (s->prioritized && !(s->alpha >= 0 && s->alpha <= 1))
        return frl_fail(err, FRL_ERR_RANGE, "replay: alpha %g outside [0, 1]", s->alpha);
    return FRL_OK;
}

/* Nodes of a tree over C leaves with FRL_REPLAY_FANOUT children per node: each level
 * (the leaves first) rounded up to whole groups of siblings, up to the one root. */
static double tree_nodes(double C)
{
    double total = 0, n = C;
    for (;;) {
        total += ceil(n / FRL_REPLAY_FANOUT) * FRL_REPLAY_FANOUT;
        if (n <= 1)
            return total;
        n = ceil(n / FRL_REPLAY_FANOUT);
    }
}

/* Bytes of every array, in double so that a capacity too large for size_t is seen and
 * its size still reported. */
static void array_bytes(const frl_replay_shape *s, double bytes[FRL_REPLAY_ARRAY_COUNT],
                        double *blocks)
{
    double T = s->steps, B = s->envs, W = s->obs_w;
    *blocks = ceil((double)s->capacity / (T * B));
    double C = *blocks * T * B;
    bytes[FRL_REPLAY_OBSERVATIONS] = *blocks * (T + 1) * B * W * 4;
    bytes[FRL_REPLAY_ACTIONS] = C * 4 * (s->discrete ? 1 : s->act_w);
    bytes[FRL_REPLAY_REWARDS] = C * 4;
    bytes[FRL_REPLAY_TERMINATED] = C;
    bytes[FRL_REPLAY_TRUNCATED] = C;
    bytes[FRL_REPLAY_RESET_STEPS] = C;
    double nodes = tree_nodes(C);
    bytes[FRL_REPLAY_SUM_TREE] = s->prioritized ? nodes * 8 : 0;
    bytes[FRL_REPLAY_MIN_TREE] = s->prioritized ? nodes * 4 : 0;
}

/* The owned minibatch: x, x', actions, reward, discount, weight, terminated, index. */
static double batch_bytes(const frl_replay_shape *s)
{
    double n = s->batch_rows, W = s->obs_w;
    double per = 8 * W + 4 * s->act_w + 4 + 4 + 4 + 1 + 8;
    return n * per + 8 * 64;
}

/* Everything in the arena: the arrays, the per-block counts and the batch, each array
 * on its own cache line. */
static double arena_bytes(const frl_replay_shape *s, double bytes[FRL_REPLAY_ARRAY_COUNT],
                          double *blocks)
{
    array_bytes(s, bytes, blocks);
    double total = 0;
    for (int i = 0; i < FRL_REPLAY_ARRAY_COUNT; i++)
        total += ceil(bytes[i] / FRL_CACHE_LINE) * FRL_CACHE_LINE;
    return total + ceil(*blocks * 4 / FRL_CACHE_LINE) * FRL_CACHE_LINE + batch_bytes(s);
}

/* The arena stays far below SIZE_MAX (2^52: doubles count it exactly). */
static const double MAX_ARENA = 4503599627370496.0;

frl_status frl_replay_memory_size(const frl_replay_shape *s, size_t *bytes, char *err)
{
    if (!bytes)
        return frl_fail(err, FRL_ERR_NULL, "frl_replay_memory_size: bytes is NULL");
    frl_status st = check_shape(s, err);
    if (st != FRL_OK)
        return st;
    double b[FRL_REPLAY_ARRAY_COUNT], blocks;
    double total = arena_bytes(s, b, &blocks) + sizeof(frl_replay);
    if (total > MAX_ARENA)
        return frl_fail(err, FRL_ERR_SIZE, "replay: %lld transitions need %.0f bytes, more "
                        "than can be allocated", (long long)s->capacity, total);
    *bytes = (size_t)total;
    return FRL_OK;
}

/* ---- create ---- */

/* The next `bytes` of the arena, and p moved past them to the next cache line. */
static void *take(unsigned char **p, size_t bytes)
{
    void *q = *p;
    *p += frl_align_up(bytes, FRL_CACHE_LINE);
    return q;
}

static void carve(frl_replay *r, const double b[FRL_REPLAY_ARRAY_COUNT])
{
    unsigned char *p = r->arena;
    for (int i = 0; i < FRL_REPLAY_ARRAY_COUNT; i++) {
        r->bytes[i] = (size_t)b[i];
        r->array[i] = r->bytes[i] ? p : NULL;
        take(&p, r->bytes[i]);
    }
    r->block_size = take(&p, sizeof(int32_t) * (size_t)r->blocks);
    size_t n = (size_t)r->shape.batch_rows, W = (size_t)r->obs_w;
    if (!n)
        return;
    frl_replay_batch *o = &r->batch;
    o->rows = (int32_t)n;
    o->index = take(&p, 8 * n);
    o->obs = take(&p, 4 * n * W);
    o->next_obs = take(&p, 4 * n * W);
    o->action = take(&p, 4 * n * (size_t)r->act_w);
    o->reward = take(&p, 4 * n);
    o->discount = take(&p, 4 * n);
    o->weight = take(&p, 4 * n);
    o->terminated = take(&p, n);
}

/* Where each level of the trees starts (tree_nodes' order): leaves at 0, the root the
 * one node of the last level. */
static void tree_levels(frl_replay *r)
{
    const int64_t K = FRL_REPLAY_FANOUT;
    int64_t off = 0, n = r->capacity;
    for (int L = 0;; L++) {
        r->tree_off[L] = off;
        off += (n + K - 1) / K * K;
        if (n <= 1) {
            r->tree_top = L;
            return;
        }
        n = (n + K - 1) / K;
    }
}

/* Empty trees: sums 0, minima +inf, so rows without a transition are never drawn. */
static void clear_trees(frl_replay *r)
{
    float *mn = r->array[FRL_REPLAY_MIN_TREE];
    if (!mn)
        return;
    memset(r->array[FRL_REPLAY_SUM_TREE], 0, r->bytes[FRL_REPLAY_SUM_TREE]);
    for (size_t j = 0; j < r->bytes[FRL_REPLAY_MIN_TREE] / 4; j++)
        mn[j] = INFINITY;
}

/* Ask Linux for 2 MiB pages under the arena's whole 2 MiB stretches, now (collapse)
 * and for later faults. A draw touches a dozen lines far apart (the tree's levels, the
 * row's arrays), each on its own 4 KiB page: with 4 KiB pages nearly every one is a TLB
 * miss and a page walk, with 2 MiB pages the 50 MB of a 1M replay need 25 entries.
 * Advice only: where it is refused (another OS, THP off) nothing changes. */
static void advise_huge_pages(void *arena, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t a = ((uintptr_t)arena + huge - 1) & ~(huge - 1);
    uintptr_t e = ((uintptr_t)arena + bytes) & ~(huge - 1);
    if (e <= a)
        return;
    (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
#if defined(MADV_COLLAPSE)
    (void)madvise((void *)a, e - a, MADV_COLLAPSE);
#endif
#else
    (void)arena;
    (void)bytes;
#endif
}

frl_status frl_replay_create(frl_replay **out, frl_runtime *rt, const frl_replay_shape *s,
                             char *err)
{
    if (out)
        *out = NULL;
    if (!out || !rt)
        return frl_fail(err, FRL_ERR_NULL, "replay: %s is NULL", out ? "runtime" : "out");
    size_t total;
    frl_status st = frl_replay_memory_size(s, &total, err);
    if (st != FRL_OK)
        return st;
    double b[FRL_REPLAY_ARRAY_COUNT], blocks;
    double arena = arena_bytes(s, b, &blocks);
    frl_replay *r = frl_alloc(&rt->alloc, sizeof *r, FRL_CACHE_LINE);
    void *mem = r ? frl_alloc(&rt->alloc, (size_t)arena, 4096) : NULL;
    if (!mem) {
        frl_free(&rt->alloc, r);
        return frl_fail(err, FRL_ERR_NOMEM, "replay: out of memory for %lld transitions "
                        "(%zu bytes)", (long long)s->capacity, total);
    }
    r->rt = rt;
    r->shape = *s;
    r->arena = mem;
    r->arena_bytes = (size_t)arena;
    advise_huge_pages(mem, r->arena_bytes);
    r->blocks = (int64_t)blocks;
    r->block_rows = (int64_t)s->steps * s->envs;
    r->capacity = r->blocks * r->block_rows;
    r->obs_w = s->obs_w;
    r->act_w = s->act_w;
    r->max_priority = 1.0;
    carve(r, b);
    tree_levels(r);
    clear_trees(r);
    *out = r;
    return FRL_OK;
}

void frl_replay_destroy(frl_replay *r)
{
    if (!r)
        return;
    frl_free(&r->rt->alloc, r->arena);
    frl_free(&r->rt->alloc, r);
}

frl_status frl_replay_array(frl_replay *r, frl_replay_array_id id, void **data, size_t *bytes,
                            char *err)
{
    if (!r || !data || !bytes)
        return frl_fail(err, FRL_ERR_NULL, "frl_replay_array: %s is NULL",
                        !r ? "replay" : !data ? "data" : "bytes");
    if ((unsigned)id >= FRL_REPLAY_ARRAY_COUNT)
        return frl_fail(err, FRL_ERR_RANGE, "frl_replay_array: no array %d (0..%d)", (int)id,
                        FRL_REPLAY_ARRAY_COUNT - 1);
    *data = r->array[id];
    *bytes = r->bytes[id];
    return FRL_OK;
}

/* ---- the trees ---- */

/* The sum of a group of FANOUT = 8 children, pairwise: the order tree_step adds in, so
 * a node's total is exactly the sum its descent compares against. */
static double group_sum(const double *c)
{
    return ((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7]));
}

/* Node m of level L (L >= 1) from its FANOUT children m*K.. of level L-1, recomputed
 * from them, not adjusted by a difference, so rounding errors never accumulate. */
static void tree_node(frl_replay *r, int L, int64_t m)
{
    double *sum = r->array[FRL_REPLAY_SUM_TREE];
    float *mn = r->array[FRL_REPLAY_MIN_TREE];
    const double *cs = sum + r->tree_off[L - 1] + m * FRL_REPLAY_FANOUT;
    const float *cm = mn + r->tree_off[L - 1] + m * FRL_REPLAY_FANOUT;
    float lo = INFINITY;
    for (int c = 0; c < FRL_REPLAY_FANOUT; c++)
        lo = cm[c] < lo ? cm[c] : lo;
    sum[r->tree_off[L] + m] = group_sum(cs);
    mn[r->tree_off[L] + m] = lo;
}

static void leaf_set(frl_replay *r, int64_t row, double p_alpha)
{
    ((double *)r->array[FRL_REPLAY_SUM_TREE])[row] = p_alpha;
    ((float *)r->array[FRL_REPLAY_MIN_TREE])[row] = p_alpha > 0 ? (float)p_alpha : INFINITY;
}

/* The ancestors of leaves lo..hi (inclusive), level by level: O(hi - lo) plus the
 * levels, for a whole block or the whole tree at once. */
static void tree_fix_range(frl_replay *r, int64_t lo, int64_t hi)
{
    for (int L = 1; L <= r->tree_top; L++) {
        lo /= FRL_REPLAY_FANOUT;
        hi /= FRL_REPLAY_FANOUT;
        for (int64_t m = lo; m <= hi; m++)
            tree_node(r, L, m);
    }
}

/* Toward the right half (left's mass l, right's r) when u is past the left half and the
 * right half has mass, so rounding at a boundary cannot enter a part of zero mass. */
static int64_t go_right(double *u, double l, double r)
{
    int64_t right = (*u >= l) & (r > 0);
    *u -= l * (double)right;
    return right;
}

/* One step down from node m toward u (0 <= u < its total): the child whose span holds
 * u, found as a binary descent inside the group (halves, pairs, one), without a
 * branch: the side is a coin flip, so a branch would mispredict half the time, and
 * that cost more than the cache misses. */
static int64_t tree_step(const double *c, int64_t m, double *u)
{
    double pair[4] = {c[0] + c[1], c[2] + c[3], c[4] + c[5], c[6] + c[7]};
    int64_t k = 4 * go_right(u, pair[0] + pair[1], pair[2] + pair[3]);
    k += 2 * go_right(u, pair[k / 2], pair[k / 2 + 1]);
    k += go_right(u, c[k], c[k + 1]);
    return m * FRL_REPLAY_FANOUT + k;
}

/* The rows whose cumulative priority spans hold u[0..n) (each 0 <= u < total), into
 * node[]: all n descents move one level at a time, and each one's next group of
 * children (one cache line of FANOUT doubles) is requested before any is read, so the
 * n cache misses of a level overlap instead of following one another. */
static void tree_find_all(const frl_replay *r, double *u, int64_t *node, int32_t n)
{
    const double *sum = r->array[FRL_REPLAY_SUM_TREE];
    for (int32_t o = 0; o < n; o++)
        node[o] = 0;
    for (int L = r->tree_top; L >= 1; L--) {
        const double *level = sum + r->tree_off[L - 1];
        for (int32_t o = 0; o < n; o++)
            __builtin_prefetch(level + node[o] * FRL_REPLAY_FANOUT);
        for (int32_t o = 0; o < n; o++)
            node[o] = tree_step(level + node[o] * FRL_REPLAY_FANOUT, node[o], &u[o]);
    }
}

/* ---- adding ---- */

static void copy_block(frl_replay *r, frl_ring *ring, int32_t slot, int64_t k)
{
    size_t TB = (size_t)r->block_rows, B = (size_t)r->shape.envs, W = (size_t)r->obs_w;
    size_t row0 = (size_t)k * TB, ab = 4 * (size_t)r->act_w;
    float *obs = (float *)r->array[FRL_REPLAY_OBSERVATIONS] + (size_t)k * (TB + B) * W;
    memcpy(obs, frl_ring_at(ring, slot, FRL_RING_OBSERVATIONS), 4 * TB * W);
    memcpy(obs + TB * W, frl_ring_at(ring, slot, FRL_RING_BOOTSTRAP_OBS), 4 * B * W);
    memcpy((unsigned char *)r->array[FRL_REPLAY_ACTIONS] + row0 * ab,
           frl_ring_at(ring, slot, FRL_RING_ACTIONS), TB * ab);
    memcpy((float *)r->array[FRL_REPLAY_REWARDS] + row0,
           frl_ring_at(ring, slot, FRL_RING_REWARDS), 4 * TB);
    memcpy((uint8_t *)r->array[FRL_REPLAY_TERMINATED] + row0,
           frl_ring_at(ring, slot, FRL_RING_TERMINATED), TB);
    memcpy((uint8_t *)r->array[FRL_REPLAY_TRUNCATED] + row0,
           frl_ring_at(ring, slot, FRL_RING_TRUNCATED), TB);
    memcpy((uint8_t *)r->array[FRL_REPLAY_RESET_STEPS] + row0,
           frl_ring_at(ring, slot, FRL_RING_RESET_STEPS), TB);
}

/* Block k's transition count, and its leaves: the largest priority seen for each
 * transition, 0 for reset rows. */
static void index_block_counts(frl_replay *r, int64_t k)
{
    const uint8_t *reset = (const uint8_t *)r->array[FRL_REPLAY_RESET_STEPS] + k * r->block_rows;
    int32_t n = 0;
    for (int64_t i = 0; i < r->block_rows; i++)
        n += !reset[i];
    r->size += n - r->block_size[k];
    r->block_size[k] = n;
}

static void index_block(frl_replay *r, int64_t k)
{
    const uint8_t *reset = (const uint8_t *)r->array[FRL_REPLAY_RESET_STEPS] + k * r->block_rows;
    index_block_counts(r, k);
    if (!r->shape.prioritized)
        return;
    double p = pow(r->max_priority, r->shape.alpha);
    for (int64_t i = 0; i < r->block_rows; i++)
        leaf_set(r, k * r->block_rows + i, reset[i] ? 0.0 : p);
    tree_fix_range(r, k * r->block_rows, (k + 1) * r->block_rows - 1);
}

frl_status frl_replay_add_slot(frl_replay *r, frl_ring *ring, int32_t slot, char *err)
{
    if (!r || !ring)
        return frl_fail(err, FRL_ERR_NULL, "replay: %s is NULL", r ? "ring" : "replay");
    if (ring->steps != r->shape.steps || ring->envs != r->shape.envs ||
        ring->obs_w != r->obs_w || ring->act_w != r->act_w)
        return frl_fail(err, FRL_ERR_SIZE, "replay: a ring of %d x %d steps (widths %d, %d) "
                        "into a replay of %d x %d (widths %d, %d)", (int)ring->steps,
                        (int)ring->envs, (int)ring->obs_w, (int)ring->act_w,
                        (int)r->shape.steps, (int)r->shape.envs, (int)r->obs_w, (int)r->act_w);
    if (slot < 0 || slot >= ring->slots)
        return frl_fail(err, FRL_ERR_RANGE, "replay: slot %d outside 0..%d", (int)slot,
                        (int)ring->slots - 1);
    int64_t k = r->next;
    copy_block(r, ring, slot, k);
    index_block(r, k);
    r->next = (k + 1) % r->blocks;
    r->filled += r->filled < r->blocks;
    return FRL_OK;
}

/* ---- sampling ---- */

static frl_status check_draw(const frl_replay *r, const frl_replay_draw *d,
                             const frl_replay_batch *o, char *err)
{
    if (!d || !o)
        return frl_fail(err, FRL_ERR_NULL, "replay: %s is NULL", d ? "batch" : "draw");
    if (d->rows < 1 || d->rows > o->rows)
        return frl_fail(err, FRL_ERR_RANGE, "replay: %d rows into a batch of %d", (int)d->rows,
                        (int)o->rows);
    if (d->n_step < 1 || !(d->gamma >= 0 && d->gamma <= 1))
        return frl_fail(err, FRL_ERR_RANGE, "replay: n_step %d must be >= 1 and gamma %g in "
                        "[0, 1]", (int)d->n_step, d->gamma);
    if (d->prioritized && !r->shape.prioritized)
        return frl_fail(err, FRL_ERR_STATE, "replay: prioritised draw from a replay made "
                        "without priorities");
    if (d->prioritized && !(d->beta >= 0 && d->beta <= 1))
        return frl_fail(err, FRL_ERR_RANGE, "replay: beta %g outside [0, 1]", d->beta);
    if (r->size < 1)
        return frl_fail(err, FRL_ERR_STATE, "replay: no transition to sample yet");
    return FRL_OK;
}

/* A uniform transition: rows are drawn until one is not a reset row. Reset rows are
 * one per finished episode, so a few draws do; after 64 misses the next transition
 * after the last draw is taken (there is one, size > 0) so the loop is bounded. */
static int64_t draw_uniform(const frl_replay *r, frl_rng *rng)
{
    const uint8_t *reset = r->array[FRL_REPLAY_RESET_STEPS];
    uint64_t rows = (uint64_t)(r->filled * r->block_rows);
    int64_t i = 0;
    for (int tries = 0; tries < 64; tries++) {
        i = (int64_t)(frl_rng_uniform(rng) * (double)rows);
        if (!reset[i])
            return i;
    }
    while (reset[i])
        i = (i + 1) % (int64_t)rows;
    return i;
}

/* Ask for the lines row i's 1-step gather reads. */
static void prefetch_row(const frl_replay *r, int64_t i)
{
    size_t W = (size_t)r->obs_w, B = (size_t)r->shape.envs, TB = (size_t)r->block_rows;
    size_t k = (size_t)i / TB, row = (size_t)i % TB;
    const float *x = (const float *)r->array[FRL_REPLAY_OBSERVATIONS] + (k * (TB + B) + row) * W;
    __builtin_prefetch(x);
    __builtin_prefetch(x + B * W);
    __builtin_prefetch((const int32_t *)r->array[FRL_REPLAY_ACTIONS] + (size_t)i * r->act_w);
    __builtin_prefetch((const float *)r->array[FRL_REPLAY_REWARDS] + i);
    __builtin_prefetch((const uint8_t *)r->array[FRL_REPLAY_TERMINATED] + i);
    __builtin_prefetch((const uint8_t *)r->array[FRL_REPLAY_TRUNCATED] + i);
}

/* Row i's n-step target into batch row o: rewards summed down its env column until the
 * episode ends, n steps pass or the block's bootstrap row is reached. x' is always the
 * observation B rows after the last step taken. */
static void gather(const frl_replay *r, const frl_replay_draw *d, int64_t i,
                   frl_replay_batch *out, int32_t o)
{
    size_t W = (size_t)r->obs_w, B = (size_t)r->shape.envs, TB = (size_t)r->block_rows;
    size_t k = (size_t)i / TB, row = (size_t)i % TB, t = row / B;
    const float *obs = (const float *)r->array[FRL_REPLAY_OBSERVATIONS] + k * (TB + B) * W;
    const float *rew = (const float *)r->array[FRL_REPLAY_REWARDS] + k * TB;
    const uint8_t *term = (const uint8_t *)r->array[FRL_REPLAY_TERMINATED] + k * TB;
    const uint8_t *trunc = (const uint8_t *)r->array[FRL_REPLAY_TRUNCATED] + k * TB;
    size_t ab = 4 * (size_t)r->act_w;
    memcpy(out->obs + (size_t)o * W, obs + row * W, 4 * W);
    memcpy((unsigned char *)out->action + (size_t)o * ab,
           (const unsigned char *)r->array[FRL_REPLAY_ACTIONS] + (size_t)i * ab, ab);
    double ret = 0, g = 1;
    size_t last = row, steps = (size_t)d->n_step, T = (size_t)r->shape.steps;
    uint8_t done = 0;
    for (size_t j = 0; j < steps && t + j < T; j++) {
        last = row + j * B;
        ret += g * rew[last];
        g *= d->gamma;
        if (term[last] || trunc[last]) {
            done = term[last];
            break;
        }
    }
    memcpy(out->next_obs + (size_t)o * W, obs + (last + B) * W, 4 * W);
    out->reward[o] = (float)ret;
    out->discount[o] = done ? 0.0f : (float)g;
    out->terminated[o] = done;
    out->index[o] = i;
}

/* Uniform rows: a candidate for every row first, with every line its gather and its
 * reset flag need requested, so the rows' cache misses overlap instead of following one
 * another; then a candidate that is a reset row (one in ~200) is replaced by a fresh
 * draw (draw_uniform). Each row is still uniform over the transitions and independent
 * of the others; only the order the rng's numbers are used in differs. */
static void sample_uniform(frl_replay *r, frl_rng *rng, const frl_replay_draw *d,
                           frl_replay_batch *out)
{
    const uint8_t *reset = r->array[FRL_REPLAY_RESET_STEPS];
    double rows = (double)(r->filled * r->block_rows);
    for (int32_t o = 0; o < d->rows; o++) {
        out->index[o] = (int64_t)(frl_rng_uniform(rng) * rows);
        __builtin_prefetch(reset + out->index[o]);
        prefetch_row(r, out->index[o]);
    }
    for (int32_t o = 0; o < d->rows; o++) {
        if (reset[out->index[o]])
            out->index[o] = draw_uniform(r, rng);
        gather(r, d, out->index[o], out, o);
        out->weight[o] = 1.0f;
    }
}

/* Draws descended together (tree_find_all): enough to overlap the misses of a level. */
enum { FIND_CHUNK = 128 };

/* One draw in each of d->rows equal segments of the total, and the weights
 * (N P(i))^-beta over the largest, (N p_min / total)^-beta, both in double. */
static void sample_prioritized(frl_replay *r, frl_rng *rng, const frl_replay_draw *d,
                               frl_replay_batch *out)
{
    const double *sum = r->array[FRL_REPLAY_SUM_TREE];
    const float *mn = r->array[FRL_REPLAY_MIN_TREE];
    double total = sum[r->tree_off[r->tree_top]], seg = total / d->rows, N = (double)r->size;
    double max_w = pow(N * (double)mn[r->tree_off[r->tree_top]] / total, -d->beta);
    for (int32_t o0 = 0; o0 < d->rows; o0 += FIND_CHUNK) {
        int32_t n = d->rows - o0 < FIND_CHUNK ? d->rows - o0 : FIND_CHUNK;
        double u[FIND_CHUNK];
        for (int32_t o = 0; o < n; o++) {
            u[o] = (o0 + o + frl_rng_uniform(rng)) * seg;
            u[o] = u[o] < total ? u[o] : total * (1 - 0x1p-52);
        }
        tree_find_all(r, u, out->index + o0, n);
    }
    for (int32_t o = 0; o < d->rows; o++)
        prefetch_row(r, out->index[o]);
    for (int32_t o = 0; o < d->rows; o++) {
        int64_t i = out->index[o];
        gather(r, d, i, out, o);
        out->weight[o] = (float)(pow(N * sum[i] / total, -d->beta) / max_w);
    }
}

frl_status frl_replay_sample(frl_replay *r, frl_rng *rng, const frl_replay_draw *d,
                             frl_replay_batch *out, char *err)
{
    if (!r || !rng)
        return frl_fail(err, FRL_ERR_NULL, "replay: %s is NULL", r ? "rng" : "replay");
    frl_status st = check_draw(r, d, out, err);
    if (st != FRL_OK)
        return st;
    if (d->prioritized) {
        sample_prioritized(r, rng, d, out);
        return FRL_OK;
    }
    sample_uniform(r, rng, d, out);
    return FRL_OK;
}

/* ---- priorities ---- */

/* Set the leaves of rows index[0..n) to priority^alpha (in order, so a row listed twice
 * keeps its last), then recompute their ancestors one level at a time for all rows at
 * once, each level's lines requested before any is written (as in tree_find_all). All
 * leaves are on level 0, so a level is recomputed only after the whole level below. */
static void tree_set_all(frl_replay *r, const int64_t *index, const float *priority,
                         int32_t n)
{
    double *sum = r->array[FRL_REPLAY_SUM_TREE];
    float *mn = r->array[FRL_REPLAY_MIN_TREE];
    int64_t node[FIND_CHUNK];
    for (int32_t o = 0; o < n; o++) {
        leaf_set(r, index[o], pow(priority[o], r->shape.alpha));
        node[o] = index[o];
    }
    for (int L = 1; L <= r->tree_top; L++) {
        for (int32_t o = 0; o < n; o++) {
            node[o] /= FRL_REPLAY_FANOUT;
            __builtin_prefetch(sum + r->tree_off[L] + node[o], 1);
            __builtin_prefetch(mn + r->tree_off[L] + node[o], 1);
        }
        for (int32_t o = 0; o < n; o++)
            tree_node(r, L, node[o]);
    }
}

frl_status frl_replay_update(frl_replay *r, const int64_t *index, const float *priority,
                             int32_t n, char *err)
{
    if (!r || !index || !priority)
        return frl_fail(err, FRL_ERR_NULL, "replay: %s is NULL",
                        !r ? "replay" : index ? "priority" : "index");
    if (!r->shape.prioritized)
        return frl_fail(err, FRL_ERR_STATE, "replay: made without priorities");
    const uint8_t *reset = r->array[FRL_REPLAY_RESET_STEPS];
    int64_t rows = r->filled * r->block_rows;
    /* Check all first, so a bad one changes nothing. */
    for (int32_t j = 0; j < n; j++) {
        if (!isfinite(priority[j]))
            return frl_fail(err, FRL_ERR_NONFINITE, "replay: priority %d of transition %lld "
                            "is %g", (int)j, (long long)index[j], (double)priority[j]);
        if (!(priority[j] > 0))
            return frl_fail(err, FRL_ERR_RANGE, "replay: priority %d of transition %lld is %g, "
                            "not > 0 (add a small epsilon to |TD error|)", (int)j,
                            (long long)index[j], (double)priority[j]);
        if (index[j] < 0 || index[j] >= rows || reset[index[j]])
            return frl_fail(err, FRL_ERR_RANGE, "replay: index %d is %lld, not a transition",
                            (int)j, (long long)index[j]);
    }
    for (int32_t j = 0; j < n; j++)
        if (priority[j] > r->max_priority)
            r->max_priority = priority[j];
    for (int32_t j0 = 0; j0 < n; j0 += FIND_CHUNK)
        tree_set_all(r, index + j0, priority + j0, n - j0 < FIND_CHUNK ? n - j0 : FIND_CHUNK);
    return FRL_OK;
}

/* ---- checkpoints ---- */

/* The data arrays' sections, in array order; save and load share the one table. */
enum { DATA_ARRAYS = 6 };
static const char *const section_name[DATA_ARRAYS] = {
    "replay.observations", "replay.actions", "replay.rewards",
    "replay.terminated", "replay.truncated", "replay.reset_steps"};
static const size_t section_elem[DATA_ARRAYS] = {4, 4, 4, 1, 1, 1};

static frl_dtype section_type(const frl_replay *r, int a)
{
    if (a == FRL_REPLAY_ACTIONS)
        return r->shape.discrete ? FRL_DTYPE_I32 : FRL_DTYPE_F32;
    return section_elem[a] == 1 ? FRL_DTYPE_U8 : FRL_DTYPE_F32;
}

void frl_replay_save(frl_replay *r, frl_section *s, int32_t *n)
{
    for (int a = 0; a < DATA_ARRAYS; a++)
        frl_section_add(s, n, section_name[a], section_type(r, a), r->bytes[a] / section_elem[a],
                        r->array[a]);
    /* The cursor is copied into the handle so the section can point at it while the
     * file is written. */
    r->cursor[0] = r->capacity;
    r->cursor[1] = r->filled;
    r->cursor[2] = r->next;
    frl_section_add(s, n, "replay.cursor", FRL_DTYPE_I64, 3, r->cursor);
    frl_section_add(s, n, "replay.max_priority", FRL_DTYPE_F64, 1, &r->max_priority);
    if (r->shape.prioritized)
        frl_section_add(s, n, "replay.priorities", FRL_DTYPE_F64, (uint64_t)r->capacity,
                        (const double *)r->array[FRL_REPLAY_SUM_TREE]);
}

/* Internal nodes from the leaves, bottom up: O(C) instead of C walks to the root. */
static void build_trees(frl_replay *r)
{
    double *sum = r->array[FRL_REPLAY_SUM_TREE];
    for (int64_t i = 0; i < r->capacity; i++)
        leaf_set(r, i, sum[i]);
    tree_fix_range(r, 0, r->capacity - 1);
}

static frl_status check_cursor(const frl_replay *r, const int64_t *c, double maxp, char *err)
{
    if (c[0] != r->capacity)
        return frl_fail(err, FRL_ERR_FORMAT, "replay.cursor: a replay of %lld rows, this one "
                        "has %lld", (long long)c[0], (long long)r->capacity);
    if (c[1] < 0 || c[1] > r->blocks || c[2] < 0 || c[2] >= r->blocks ||
        (c[1] < r->blocks && c[2] != c[1]))
        return frl_fail(err, FRL_ERR_FORMAT, "replay.cursor: %lld blocks filled, next %lld: "
                        "inconsistent with %lld blocks", (long long)c[1], (long long)c[2],
                        (long long)r->blocks);
    if (!(maxp > 0) || !isfinite(maxp))
        return frl_fail(err, FRL_ERR_FORMAT, "replay.max_priority is %g", maxp);
    return FRL_OK;
}

/* The leaves of a prioritised replay (NULL otherwise): finite, >= 0, and 0 exactly at
 * reset rows (the file's flags) and unfilled blocks, so the sums sample what they did. */
static frl_status find_priorities(const frl_replay *r, const frl_container *c,
                                  const uint8_t *reset, int64_t filled, const double **out,
                                  char *err)
{
    *out = NULL;
    if (!r->shape.prioritized)
        return FRL_OK;
    const frl_section *s = frl_container_find(c, "replay.priorities", FRL_DTYPE_F64,
                                              r->capacity, err);
    if (!s)
        return FRL_ERR_FORMAT;
    const double *p = s->data;
    int64_t rows = filled * r->block_rows;
    for (int64_t i = 0; i < r->capacity; i++) {
        int live = i < rows && !reset[i];
        if (!isfinite(p[i]) || p[i] < 0 || (p[i] > 0) != live)
            return frl_fail(err, FRL_ERR_FORMAT, "replay.priorities: row %lld is %g (%s)",
                            (long long)i, p[i], live ? "a transition" : "not a transition");
    }
    *out = p;
    return FRL_OK;
}

frl_status frl_replay_load(frl_replay *r, const frl_container *c, char *err)
{
    const frl_section *sec[DATA_ARRAYS];
    for (int a = 0; a < DATA_ARRAYS; a++)
        if (!(sec[a] = frl_container_find(c, section_name[a], section_type(r, a),
                                          (int64_t)(r->bytes[a] / section_elem[a]), err)))
            return FRL_ERR_FORMAT;
    const frl_section *cur = frl_container_find(c, "replay.cursor", FRL_DTYPE_I64, 3, err);
    const frl_section *mp = cur ? frl_container_find(c, "replay.max_priority", FRL_DTYPE_F64, 1,
                                                     err) : NULL;
    if (!mp)
        return FRL_ERR_FORMAT;
    const int64_t *k = cur->data;
    frl_status st = check_cursor(r, k, *(const double *)mp->data, err);
    if (st != FRL_OK)
        return st;
    const double *prio;
    st = find_priorities(r, c, sec[FRL_REPLAY_RESET_STEPS]->data, k[1], &prio, err);
    if (st != FRL_OK)
        return st;
    /* Every check passed: only now is anything written. */
    for (int a = 0; a < DATA_ARRAYS; a++)
        memcpy(r->array[a], sec[a]->data, r->bytes[a]);
    r->filled = k[1];
    r->next = k[2];
    r->max_priority = *(const double *)mp->data;
    r->size = 0;
    memset(r->block_size, 0, sizeof(int32_t) * (size_t)r->blocks);
    for (int64_t b = 0; b < r->filled; b++)
        index_block_counts(r, b);
    if (prio) {
        memcpy((double *)r->array[FRL_REPLAY_SUM_TREE], prio,
               8 * (size_t)r->capacity);
        build_trees(r);
    }
    return FRL_OK;
}
