/* The replay: blocks of ring slots as env-major records with observations stored once,
 * and the sum and min trees of prioritised sampling, in one arena (see replay.h for the
 * layout). */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "rl/replay.h"
#include "core/pow_pos.h"
#include "rl/sum_tree.h"

/* ---- sizes ---- */

static frl_status check_shape(const frl_replay_shape *s, char *err)
{
    if (!s)
        return frl_fail(err, FRL_ERR_NULL, "replay: shape is NULL");
    if (s->capacity < 1)
        return frl_fail(err, FRL_ERR_RANGE, "replay: capacity %lld < 1", (long long)s->capacity);
    if (s->steps < 1 || s->envs < 1 || s->obs_w < 1 || s->act_w < 1 || s->batch_rows < 0 ||
        s->state_w < 0)
        return frl_fail(err, FRL_ERR_RANGE, "replay: steps %d, envs %d, observation width %d and "
                        "action width %d must be >= 1, batch rows %d and state width %d >= 0",
                        (int)s->steps, (int)s->envs, (int)s->obs_w, (int)s->act_w,
                        (int)s->batch_rows, (int)s->state_w);
    if (s->pixel_words < 0 || s->pixel_words > s->obs_w)
        return frl_fail(err, FRL_ERR_RANGE, "replay: %d pixel words of a %d-float observation",
                        (int)s->pixel_words, (int)s->obs_w);
    if (s->discrete && s->act_w != 1)
        return frl_fail(err, FRL_ERR_RANGE, "replay: a discrete action is 1 wide, not %d",
                        (int)s->act_w);
    if (s->prioritized && !(s->alpha >= 0 && s->alpha <= 1))
        return frl_fail(err, FRL_ERR_RANGE, "replay: alpha %g outside [0, 1]", s->alpha);
    if (s->stack > 1 && (int64_t)s->state_w != (int64_t)(s->stack - 1) * s->obs_w)
        return frl_fail(err, FRL_ERR_SIZE, "replay: stacks of %d frames need the %d earlier "
                        "frames of each block's first row (state width %d), not %d",
                        (int)s->stack, (int)s->stack - 1, (int)((s->stack - 1) * s->obs_w),
                        (int)s->state_w);
    return FRL_OK;
}

/* Floats of a minibatch row's x (or x'): the stack's frames. */
static int32_t row_floats(const frl_replay_shape *s)
{
    return s->stack > 1 ? s->stack * s->obs_w : s->obs_w;
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

/* A record: x, the action, the reward and three flags, rounded up to 8 bytes. */
static double record_bytes(const frl_replay_shape *s)
{
    return ceil((4.0 * s->obs_w + 4.0 * s->act_w + 4 + 3) / 8) * 8;
}

/* Bytes of every array, in double so that a capacity too large for size_t is seen and
 * its size still reported. */
static void array_bytes(const frl_replay_shape *s, double bytes[FRL_REPLAY_ARRAY_COUNT],
                        double *blocks)
{
    double T = s->steps, B = s->envs;
    *blocks = ceil((double)s->capacity / (T * B));
    double C = *blocks * T * B;
    bytes[FRL_REPLAY_ROWS] = *blocks * B * (T + 1) * record_bytes(s);
    double nodes = tree_nodes(C);
    bytes[FRL_REPLAY_SUM_TREE] = s->prioritized ? nodes * 8 : 0;
    bytes[FRL_REPLAY_MIN_TREE] = s->prioritized ? nodes * 4 : 0;
    bytes[FRL_REPLAY_STATES] = *blocks * B * s->state_w * 4;
}

/* The owned minibatch: x, x', actions, reward, discount, weight, terminated, index. */
static double batch_bytes(const frl_replay_shape *s)
{
    double n = s->batch_rows, W = row_floats(s);
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
    size_t n = (size_t)r->shape.batch_rows, W = (size_t)row_floats(&r->shape);
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
    /* A draw touches a dozen lines far apart (the tree's levels, the row's arrays):
     * with 4 KiB pages nearly every one is a TLB miss, with 2 MiB pages the 50 MB of a
     * 1M replay need 25 entries. The default allocator advises large blocks already;
     * a host's allocator may not have. */
    frl_advise_huge_pages(mem, r->arena_bytes);
    r->blocks = (int64_t)blocks;
    r->block_rows = (int64_t)s->steps * s->envs;
    r->capacity = r->blocks * r->block_rows;
    r->inv_block_rows = 1.0 / (double)r->block_rows;
    r->inv_envs = 1.0 / (double)s->envs;
    r->obs_w = s->obs_w;
    r->act_w = s->act_w;
    r->rec_bytes = (size_t)record_bytes(s);
    r->off_action = 4 * (size_t)s->obs_w;
    r->off_reward = r->off_action + 4 * (size_t)s->act_w;
    r->off_flags = r->off_reward + 4;
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

FRL_API frl_status frl_replay_array(frl_replay *r, frl_replay_array_id id, void **data,
                                    size_t *bytes)
{
    if (!r || !data || !bytes)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_replay_array: %s is NULL",
                        !r ? "replay" : !data ? "data" : "bytes");
    if ((unsigned)id >= FRL_REPLAY_ARRAY_COUNT)
        return frl_fail(NULL, FRL_ERR_UNKNOWN_NAME, "frl_replay_array: no array %d (0..%d)",
                        (int)id, FRL_REPLAY_ARRAY_COUNT - 1);
    *data = r->array[id];
    *bytes = r->bytes[id];
    return FRL_OK;
}

FRL_API frl_status frl_replay_get_info(const frl_replay *r, frl_replay_info *info)
{
    if (!r || !info)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_replay_get_info: %s is NULL",
                        r ? "info" : "replay");
    if (info->struct_size < offsetof(frl_replay_info, offset_flags) + sizeof(size_t))
        return frl_fail(NULL, FRL_ERR_SIZE, "frl_replay_get_info: struct_size %zu is smaller "
                        "than 0.3's table (%zu bytes)", info->struct_size,
                        offsetof(frl_replay_info, offset_flags) + sizeof(size_t));
    frl_replay_info v = {
        .struct_size = info->struct_size, .capacity = r->capacity, .blocks = r->blocks,
        .filled = r->filled, .next = r->next, .transitions = r->size,
        .steps = r->shape.steps, .envs = r->shape.envs, .observation_width = r->obs_w,
        .action_width = r->act_w, .state_width = r->shape.state_w,
        .prioritized = r->shape.prioritized, .record_bytes = r->rec_bytes,
        .offset_action = r->off_action, .offset_reward = r->off_reward,
        .offset_flags = r->off_flags};
    size_t n = info->struct_size < sizeof v ? info->struct_size : sizeof v;
    memcpy(info, &v, n);
    return FRL_OK;
}

/* ---- the trees ---- */

/* The sum of a group of FANOUT = 8 children, pairwise (tree_step compares against
 * running sums, which may differ from it by rounding; it takes care of that). */
static double group_sum(const double *c)
{
    return ((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7]));
}

/* The least of 8 children (none is NaN: leaves are p^alpha > 0 or +inf). With SSE2 (every
 * x86-64) as two 4-wide minima and two shuffles in place of a chain of 8 scalar ones: the
 * same value, as min is exact. */
static inline float group_min(const float *c)
{
#if defined(__SSE2__)
    __m128 m = _mm_min_ps(_mm_loadu_ps(c), _mm_loadu_ps(c + 4));
    m = _mm_min_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
    m = _mm_min_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtss_f32(m);
#else
    float lo = c[0];
    for (int j = 1; j < FRL_REPLAY_FANOUT; j++)
        lo = c[j] < lo ? c[j] : lo;
    return lo;
#endif
}

/* Node m of level L (L >= 1) from its FANOUT children m*K.. of level L-1, recomputed
 * from them, not adjusted by a difference, so rounding errors never accumulate. */
static inline __attribute__((always_inline)) void tree_node(frl_replay *r, int L, int64_t m)
{
    double *sum = r->array[FRL_REPLAY_SUM_TREE];
    float *mn = r->array[FRL_REPLAY_MIN_TREE];
    const double *cs = sum + r->tree_off[L - 1] + m * FRL_REPLAY_FANOUT;
    const float *cm = mn + r->tree_off[L - 1] + m * FRL_REPLAY_FANOUT;
    sum[r->tree_off[L] + m] = group_sum(cs);
    mn[r->tree_off[L] + m] = group_min(cm);
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

/* One step down from node m toward u (0 <= u < its total): the child whose span holds
 * u, counted as the running sums of the children that u reaches, compared all at once
 * (no chain of dependent decisions, no branch: the side is a coin flip). A child of
 * zero mass is never taken: its running sum equals the one before, so u reaching that
 * one reaches it too, except past the last child, where rounding (u is the parent's
 * pairwise sum minus what went before) is taken back to the last child with mass. */
static int64_t tree_step(const double *c, int64_t m, double *u)
{
    double s[FRL_REPLAY_FANOUT - 1];
    s[0] = c[0];
    for (int j = 1; j < FRL_REPLAY_FANOUT - 1; j++)
        s[j] = s[j - 1] + c[j];
    double v = *u;
    int64_t k = 0;
    for (int j = 0; j < FRL_REPLAY_FANOUT - 1; j++)
        k += v >= s[j];
    while (k > 0 && c[k] == 0) /* only at k = 7, and only from rounding */
        k--;
    *u = v - (k ? s[k - 1] : 0.0);
    return m * FRL_REPLAY_FANOUT + k;
}

/* How far ahead of its step a draw's group is requested: misses in flight while the
 * steps behind them compute, instead of a burst of requests that stalls on the core's
 * line buffers (32 measured best of 8, 16, 32 and 64 with bench_replay). */
enum { FIND_AHEAD = 32 };

/* The descent from level `from`, where node[o] and u[o] (its offset inside that node)
 * are already known, down to the leaves. */
static void tree_find_all(const frl_replay *r, int from, double *u, int64_t *node, int32_t n)
{
    const double *sum = r->array[FRL_REPLAY_SUM_TREE];
    for (int L = from; L >= 1; L--) {
        const double *level = sum + r->tree_off[L - 1];
        int32_t ahead = n < FIND_AHEAD ? n : FIND_AHEAD;
        for (int32_t o = 0; o < ahead; o++)
            __builtin_prefetch(level + node[o] * FRL_REPLAY_FANOUT);
        for (int32_t o = 0; o < n; o++) {
            if (o + FIND_AHEAD < n)
                __builtin_prefetch(level + node[o + FIND_AHEAD] * FRL_REPLAY_FANOUT);
            node[o] = tree_step(level + node[o] * FRL_REPLAY_FANOUT, node[o], &u[o]);
        }
    }
}

/* The top of the descent for draws in ascending order (a prioritised batch's are: one
 * per equal segment): instead of every draw stepping down through the few nodes near the
 * root, one walk along a level's nodes (a merge with the draws) gives each draw its node
 * there and its offset inside it. At 1M rows and 256 draws that is one walk over 245
 * nodes in place of three steps a draw. The walk's running sum is sequential, the
 * tree's sums pairwise; a draw the rounding carries past the end is given the last node
 * with mass, and the descent below takes care of an offset past that node's own sum. */
typedef struct top_walk {
    const double *c; /* the level's nodes */
    int64_t j, last; /* the node reached; the last with mass */
    double before, end; /* running sums before and after node j */
} top_walk;

/* The level to walk: the lowest holding no more nodes than there are draws. */
static int walk_level(const frl_replay *r, int32_t rows)
{
    int64_t nodes = r->capacity;
    int L = 0;
    while (L < r->tree_top && nodes > rows) {
        nodes = (nodes + FRL_REPLAY_FANOUT - 1) / FRL_REPLAY_FANOUT;
        L++;
    }
    return L;
}

static top_walk walk_start(const frl_replay *r, int L)
{
    const double *c = (const double *)r->array[FRL_REPLAY_SUM_TREE] + r->tree_off[L];
    int64_t last = L < r->tree_top ? r->tree_off[L + 1] - r->tree_off[L] - 1 : 0;
    while (last > 0 && c[last] == 0)
        last--;
    return (top_walk){c, 0, last, 0.0, c[0]};
}

static void walk_draws(top_walk *w, double *u, int64_t *node, int32_t n)
{
    for (int32_t o = 0; o < n; o++) {
        while (w->j < w->last && u[o] >= w->end) {
            w->before = w->end;
            w->end += w->c[++w->j];
        }
        node[o] = w->j;
        u[o] -= w->before;
    }
}

/* ---- records ---- */

/* i / d from a multiplication by inv = 1/d (i < 2^52: off by at most one, corrected):
 * an integer division per row is tens of cycles, a sizeable share of a gather. */
static inline size_t quotient(size_t i, size_t d, double inv)
{
    size_t q = (size_t)((double)i * inv);
    q -= q * d > i;
    q += (q + 1) * d <= i;
    return q;
}

/* The record of row i = k*T*B + t*B + b, (k*B + b)*(T+1) + t, and its step t. */
static inline size_t locate(const frl_replay *r, size_t i, size_t *t)
{
    size_t TB = (size_t)r->block_rows, B = (size_t)r->shape.envs;
    size_t k = quotient(i, TB, r->inv_block_rows), rem = i - k * TB;
    *t = quotient(rem, B, r->inv_envs);
    return (k * B + rem - *t * B) * ((size_t)r->shape.steps + 1) + *t;
}

static inline size_t record_of(const frl_replay *r, size_t i)
{
    size_t t;
    return locate(r, i, &t);
}

static inline const unsigned char *record_at(const frl_replay *r, const unsigned char *rows,
                                             size_t rec)
{
    return rows + rec * r->rec_bytes;
}

/* Row i's reset flag, in the records at rows (the replay's, or a file's). */
static inline int is_reset(const frl_replay *r, const unsigned char *rows, int64_t i)
{
    return record_at(r, rows, record_of(r, (size_t)i))[r->off_flags + 2];
}

/* ---- adding ---- */

/* The slot's rows into block k's records, env by env, and each env's bootstrap
 * observation into its last record (flagged reset: never a transition). */
static void copy_block(frl_replay *r, frl_ring *ring, int32_t slot, int64_t k)
{
    size_t T = (size_t)r->shape.steps, B = (size_t)r->shape.envs, W = (size_t)r->obs_w;
    size_t ab = 4 * (size_t)r->act_w, R = r->rec_bytes;
    const float *obs = frl_ring_at(ring, slot, FRL_RING_OBSERVATIONS);
    const float *boot = frl_ring_at(ring, slot, FRL_RING_BOOTSTRAP_OBS);
    const unsigned char *act = frl_ring_at(ring, slot, FRL_RING_ACTIONS);
    const float *rew = frl_ring_at(ring, slot, FRL_RING_REWARDS);
    const uint8_t *term = frl_ring_at(ring, slot, FRL_RING_TERMINATED);
    const uint8_t *trunc = frl_ring_at(ring, slot, FRL_RING_TRUNCATED);
    const uint8_t *reset = frl_ring_at(ring, slot, FRL_RING_RESET_STEPS);
    unsigned char *blk = (unsigned char *)r->array[FRL_REPLAY_ROWS] + (size_t)k * B * (T + 1) * R;
    for (size_t b = 0; b < B; b++) {
        unsigned char *rec = blk + b * (T + 1) * R;
        for (size_t t = 0; t < T; t++, rec += R) {
            size_t i = t * B + b;
            memcpy(rec, obs + i * W, 4 * W);
            memcpy(rec + r->off_action, act + i * ab, ab);
            memcpy(rec + r->off_reward, rew + i, 4);
            uint8_t flags[3] = {term[i], trunc[i], reset[i]};
            memcpy(rec + r->off_flags, flags, 3);
        }
        memset(rec, 0, R);
        memcpy(rec, boot + b * W, 4 * W);
        rec[r->off_flags + 2] = 1;
    }
}

/* Block k's transition count: its rows that are not reset rows. */
static void index_block_counts(frl_replay *r, int64_t k)
{
    const unsigned char *rows = r->array[FRL_REPLAY_ROWS];
    int32_t n = 0;
    for (int64_t i = k * r->block_rows; i < (k + 1) * r->block_rows; i++)
        n += !is_reset(r, rows, i);
    r->size += n - r->block_size[k];
    r->block_size[k] = n;
}

/* Block k's count, and its leaves: the largest priority seen for each transition, 0
 * for reset rows. */
static void index_block(frl_replay *r, int64_t k)
{
    const unsigned char *rows = r->array[FRL_REPLAY_ROWS];
    index_block_counts(r, k);
    if (!r->shape.prioritized)
        return;
    double p = pow(r->max_priority, r->shape.alpha);
    for (int64_t i = k * r->block_rows; i < (k + 1) * r->block_rows; i++)
        leaf_set(r, i, is_reset(r, rows, i) ? 0.0 : p);
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
    if (r->shape.state_w && (ring->state_w != r->shape.state_w || !ring->slot[slot].state0))
        return frl_fail(err, FRL_ERR_SIZE, "replay: keeps %d floats of state per env, the "
                        "ring's slots %d", (int)r->shape.state_w, (int)ring->state_w);
    int64_t k = r->next;
    copy_block(r, ring, slot, k);
    if (r->shape.state_w)
        memcpy((float *)r->array[FRL_REPLAY_STATES] + (size_t)k * r->shape.envs * r->shape.state_w,
               ring->slot[slot].state0, r->bytes[FRL_REPLAY_STATES] / (size_t)r->blocks);
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
    const unsigned char *rows = r->array[FRL_REPLAY_ROWS];
    uint64_t n = (uint64_t)(r->filled * r->block_rows);
    int64_t i = 0;
    for (int tries = 0; tries < 64; tries++) {
        i = (int64_t)(frl_rng_uniform(rng) * (double)n);
        if (!is_reset(r, rows, i))
            return i;
    }
    while (is_reset(r, rows, i))
        i = (i + 1) % (int64_t)n;
    return i;
}

/* n floats from src to dst. A few floats (a low-dimensional observation, an action)
 * are copied by constant-size moves the compiler inlines: a call to memcpy for them
 * costs more than the copy, and a plain loop is turned back into that call. */
static inline void copy_floats(float *restrict dst, const unsigned char *restrict src, size_t n)
{
    switch (n) {
    case 1: memcpy(dst, src, 4); return;
    case 2: memcpy(dst, src, 8); return;
    case 3: memcpy(dst, src, 12); return;
    case 4: memcpy(dst, src, 16); return;
    case 6: memcpy(dst, src, 24); return;
    case 8: memcpy(dst, src, 32); return;
    default: memcpy(dst, src, 4 * n); return;
    }
}

/* The stack of frames ending at step t of the column whose step 0 is record col (as
 * rl/frame_stack.c builds it from a ring slot): steps t - k + 1 .. t, oldest first,
 * zeros for the steps before the episode of step t began (step u begins one when row
 * u - 1 is a reset row), the steps before 0 from the block's state0 for the column. */
static void stack_row(const frl_replay *r, size_t col, size_t t, float *out)
{
    size_t W = (size_t)r->obs_w, k = (size_t)r->shape.stack, T1 = (size_t)r->shape.steps + 1;
    const unsigned char *rows = r->array[FRL_REPLAY_ROWS];
    const float *s0 = (const float *)r->array[FRL_REPLAY_STATES] +
                      col / T1 * (size_t)r->shape.state_w;
    int ended = 0;
    for (size_t j = 0; j < k; j++) {
        float *dst = out + (k - 1 - j) * W;
        long u = (long)t - (long)j;
        if (j > 0 && u + 1 >= 1)
            ended |= record_at(r, rows, col + (size_t)u)[r->off_flags + 2];
        if (ended)
            memset(dst, 0, sizeof(float) * W);
        else if (u >= 0)
            copy_floats(dst, record_at(r, rows, col + (size_t)u), W);
        else
            memcpy(dst, s0 + (size_t)((long)k - 1 + u) * W, sizeof(float) * W);
    }
}

/* The same env's column in the block after column col's, where the env's stream goes on
 * (a trainer adds its rollouts in order); none (0) after the newest block, whose next
 * block is unwritten or the oldest, nor where the stream broke between the two blocks:
 * a run that goes on after a failed env step resets its envs (the async sampler the
 * failed group's, dropping the others' rollouts in flight, whose envs went on), so the
 * next column does not start from this column's bootstrap observation. Unbroken, both
 * are copies of the same observation, bit for bit; an n-step sum that went on across a
 * break would add another episode's rewards. */
static int next_column(const frl_replay *r, size_t col, size_t *next)
{
    size_t T1 = (size_t)r->shape.steps + 1, per = T1 * (size_t)r->shape.envs, k = col / per;
    if ((int64_t)k == (r->next + r->blocks - 1) % r->blocks)
        return 0;
    size_t n = (k + 1) % (size_t)r->blocks * per + (col - k * per);
    const unsigned char *rows = r->array[FRL_REPLAY_ROWS];
    if (memcmp(record_at(r, rows, col + T1 - 1), record_at(r, rows, n), 4 * (size_t)r->obs_w))
        return 0;
    *next = n;
    return 1;
}

/* Row i's n-step target into batch row o, from its record rec at step t: rewards summed
 * down the env's records until the episode ends or n steps pass. A sum reaching its
 * block's end goes on at step 0 of the env's column in the next block (whose observation
 * is the bootstrap record's), and stops at the newest block's end. x' is the observation
 * of the record after the last step taken. */
static void gather(const frl_replay *r, const frl_replay_draw *d, int64_t i, size_t rec,
                   size_t t, frl_replay_batch *out, int32_t o)
{
    size_t W = (size_t)r->obs_w, A = (size_t)r->act_w, T = (size_t)r->shape.steps;
    const unsigned char *rows = r->array[FRL_REPLAY_ROWS], *x = record_at(r, rows, rec);
    int stacked = r->shape.stack > 1;
    size_t KW = (size_t)row_floats(&r->shape), col = rec - t, R = r->rec_bytes;
    if (stacked)
        stack_row(r, col, t, out->obs + (size_t)o * KW);
    else
        copy_floats(out->obs + (size_t)o * W, x, W);
    copy_floats((float *)out->action + (size_t)o * A, x + r->off_action, A);
    double ret = 0, g = 1;
    uint8_t done = 0;
    const unsigned char *step = x, *end = x + (T - t) * R; /* end: the bootstrap record */
    for (int32_t j = 0; j < d->n_step; j++) {
        if (step == end) {
            if (!next_column(r, col, &col))
                break;
            step = record_at(r, rows, col);
            end = step + T * R;
        }
        float rw;
        memcpy(&rw, step + r->off_reward, 4);
        ret += g * rw;
        g *= d->gamma;
        const uint8_t *f = step + r->off_flags;
        step += R;
        if (f[0] | f[1]) {
            done = f[0];
            break;
        }
    }
    /* step: the record after the last step taken */
    if (stacked)
        stack_row(r, col, T - (size_t)(end - step) / R, out->next_obs + (size_t)o * KW);
    else
        copy_floats(out->next_obs + (size_t)o * W, step, W);
    out->reward[o] = (float)ret;
    out->discount[o] = done ? 0.0f : (float)g;
    out->terminated[o] = done;
    out->index[o] = i;
}

/* Uniform rows, in chunks: a candidate for every row of the chunk first, its record
 * located and its lines requested, so the rows' cache misses overlap instead of
 * following one another; then a candidate that is a reset row (one in ~200) is
 * replaced by a fresh draw (draw_uniform). Each row is still uniform over the
 * transitions and independent of the others; only the order the rng's numbers are
 * used in differs. */
enum { DRAW_CHUNK = 64 };

/* Rows out->index[o0..o0+n) (n <= DRAW_CHUNK) located, their lines requested, then
 * gathered. */
static void gather_chunk(const frl_replay *r, const frl_replay_draw *d, frl_replay_batch *out,
                         int32_t o0, int32_t n)
{
    const unsigned char *recs = r->array[FRL_REPLAY_ROWS];
    size_t rec[DRAW_CHUNK], t[DRAW_CHUNK];
    for (int32_t o = 0; o < n; o++) {
        rec[o] = locate(r, (size_t)out->index[o0 + o], &t[o]);
        const unsigned char *x = record_at(r, recs, rec[o]);
        __builtin_prefetch(x);
        __builtin_prefetch(x + 2 * r->rec_bytes - 1);
    }
    for (int32_t o = 0; o < n; o++)
        gather(r, d, out->index[o0 + o], rec[o], t[o], out, o0 + o);
}

static void sample_uniform(frl_replay *r, frl_rng *rng, const frl_replay_draw *d,
                           frl_replay_batch *out)
{
    const unsigned char *recs = r->array[FRL_REPLAY_ROWS];
    double rows = (double)(r->filled * r->block_rows);
    size_t rec[DRAW_CHUNK], t[DRAW_CHUNK];
    for (int32_t o0 = 0; o0 < d->rows; o0 += DRAW_CHUNK) {
        int32_t n = d->rows - o0 < DRAW_CHUNK ? d->rows - o0 : DRAW_CHUNK;
        for (int32_t o = 0; o < n; o++) {
            int64_t i = (int64_t)(frl_rng_uniform(rng) * rows);
            out->index[o0 + o] = i;
            rec[o] = locate(r, (size_t)i, &t[o]);
            const unsigned char *x = record_at(r, recs, rec[o]);
            __builtin_prefetch(x);
            __builtin_prefetch(x + 2 * r->rec_bytes - 1);
        }
        for (int32_t o = 0; o < n; o++) {
            int64_t i = out->index[o0 + o];
            if (record_at(r, recs, rec[o])[r->off_flags + 2]) {
                i = draw_uniform(r, rng);
                rec[o] = locate(r, (size_t)i, &t[o]);
            }
            gather(r, d, i, rec[o], t[o], out, o0 + o);
            out->weight[o0 + o] = 1.0f;
        }
    }
}

/* Draws descended together (tree_find_all): enough to overlap the misses of a level. */
enum { FIND_CHUNK = 128 };

/* One draw in each of d->rows equal segments of the total, and the weights
 * (N P(i))^-beta over the largest, (N p_min / total)^-beta. */
static void sample_prioritized(frl_replay *r, frl_rng *rng, const frl_replay_draw *d,
                               frl_replay_batch *out)
{
    const double *sum = r->array[FRL_REPLAY_SUM_TREE];
    const float *mn = r->array[FRL_REPLAY_MIN_TREE];
    double total = sum[r->tree_off[r->tree_top]], seg = total / d->rows;
    const int top = walk_level(r, d->rows);
    top_walk walk = walk_start(r, top);
    for (int32_t o0 = 0; o0 < d->rows; o0 += FIND_CHUNK) {
        int32_t n = d->rows - o0 < FIND_CHUNK ? d->rows - o0 : FIND_CHUNK;
        double u[FIND_CHUNK];
        for (int32_t o = 0; o < n; o++) {
            u[o] = (o0 + o + frl_rng_uniform(rng)) * seg;
            u[o] = u[o] < total ? u[o] : total * (1 - 0x1p-52);
        }
        walk_draws(&walk, u, out->index + o0, n);
        tree_find_all(r, top, u, out->index + o0, n);
    }
    for (int32_t o0 = 0; o0 < d->rows; o0 += DRAW_CHUNK)
        gather_chunk(r, d, out, o0, d->rows - o0 < DRAW_CHUNK ? d->rows - o0 : DRAW_CHUNK);
    /* w_i = (N P(i))^-beta / max_w = (p_i / p_min)^-beta in float (core/pow_pos.h: the
     * weight is a float, and its error, two or three ulps, is about the weight's own
     * rounding; the loop vectorises). The ratio is at least 1 (p_min is the least leaf;
     * the max holds it there against rounding) and is held at 2^125, the function's
     * domain: a weight below 2^-125 comes out as that. */
    double p_min = (double)mn[r->tree_off[r->tree_top]];
    float nb = (float)-d->beta;
    float *w = out->weight;
    for (int32_t o = 0; o < d->rows; o++) {
        /* The update that follows a prioritised draw writes these rows' min-tree leaves,
         * which the descent did not read: requested here, one a row beside the work
         * (not in a burst that stalls on the line buffers), they are there by then. */
        __builtin_prefetch(mn + out->index[o], 1);
        double q = sum[out->index[o]] / p_min;
        w[o] = (float)(q > 0x1p125 ? 0x1p125 : q > 1.0 ? q : 1.0);
    }
    for (int32_t o = 0; o < d->rows; o++)
        w[o] = frl_powf_pos(w[o], nb);
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

/* ---- sequences ---- */

/* Sequence q = k*B + b: its T + 1 records are contiguous (the env's column of block k),
 * so a draw reads (T+1)*R bytes in a row; they are split into the batch's arrays. */
/* The T records from rec split into the batch's arrays at step row `row`. Inlined with
 * constant W and A (split_steps_for), the copies are a few moves a step with no size
 * dispatch; that dispatch, per field and step, was most of a draw's time. */
static inline __attribute__((always_inline)) void
split_steps(const frl_replay *r, const unsigned char *rec, size_t T, size_t W, size_t A,
            float *obs, float *act, size_t row, frl_replay_seq_batch *out)
{
    size_t R = r->rec_bytes, oa = r->off_action, orw = r->off_reward, of = r->off_flags;
    for (size_t t = 0; t < T; t++, rec += R) {
        memcpy(obs + t * W, rec, 4 * W);
        memcpy(act + t * A, rec + oa, 4 * A);
        memcpy(out->reward + row + t, rec + orw, 4);
        out->terminated[row + t] = rec[of];
        out->truncated[row + t] = rec[of + 1];
        out->reset[row + t] = rec[of + 2];
    }
}

static void split_steps_for(const frl_replay *r, const unsigned char *rec, size_t T, float *obs,
                            float *act, size_t row, frl_replay_seq_batch *out)
{
    size_t W = (size_t)r->obs_w, A = (size_t)r->act_w;
    if (A == 1 && W == 2)
        split_steps(r, rec, T, 2, 1, obs, act, row, out);
    else if (A == 1 && W == 4)
        split_steps(r, rec, T, 4, 1, obs, act, row, out);
    else if (A == 1 && W == 6)
        split_steps(r, rec, T, 6, 1, obs, act, row, out);
    else if (A == 1 && W == 8)
        split_steps(r, rec, T, 8, 1, obs, act, row, out);
    else
        split_steps(r, rec, T, W, A, obs, act, row, out);
}

static void gather_sequence(const frl_replay *r, int64_t q, frl_replay_seq_batch *out,
                            int32_t o)
{
    size_t T = (size_t)r->shape.steps, W = (size_t)r->obs_w, A = (size_t)r->act_w;
    size_t R = r->rec_bytes, S = (size_t)r->shape.state_w;
    const unsigned char *rec = (const unsigned char *)r->array[FRL_REPLAY_ROWS] +
                               (size_t)q * (T + 1) * R;
    float *obs = out->obs + (size_t)o * (T + 1) * W;
    float *act = (float *)out->action + (size_t)o * T * A;
    split_steps_for(r, rec, T, obs, act, (size_t)o * T, out);
    rec += T * R;
    copy_floats(obs + T * W, rec, W);
    if (S && out->state0)
        copy_floats(out->state0 + (size_t)o * S,
                    (const unsigned char *)((const float *)r->array[FRL_REPLAY_STATES] + (size_t)q * S),
                    S);
    out->index[o] = q;
}

frl_status frl_replay_sample_sequences(frl_replay *r, frl_rng *rng, int32_t rows,
                                       frl_replay_seq_batch *out, char *err)
{
    if (!r || !rng || !out)
        return frl_fail(err, FRL_ERR_NULL, "replay: %s is NULL",
                        !r ? "replay" : !rng ? "rng" : "batch");
    if (rows < 1 || rows > out->rows)
        return frl_fail(err, FRL_ERR_RANGE, "replay: %d sequences into a batch of %d", (int)rows,
                        (int)out->rows);
    if (r->filled < 1)
        return frl_fail(err, FRL_ERR_STATE, "replay: no sequence to sample yet");
    size_t span = ((size_t)r->shape.steps + 1) * r->rec_bytes;
    double n = (double)(r->filled * r->shape.envs);
    for (int32_t o0 = 0; o0 < rows; o0 += DRAW_CHUNK) {
        int32_t m = rows - o0 < DRAW_CHUNK ? rows - o0 : DRAW_CHUNK;
        for (int32_t o = 0; o < m; o++) {
            out->index[o0 + o] = (int64_t)(frl_rng_uniform(rng) * n);
            /* its first lines; the hardware prefetcher follows a sequential read */
            const unsigned char *s = (const unsigned char *)r->array[FRL_REPLAY_ROWS] +
                                     (size_t)out->index[o0 + o] * span;
            __builtin_prefetch(s);
            __builtin_prefetch(s + 64);
        }
        for (int32_t o = 0; o < m; o++) {
            if (o + 1 < m) { /* the next one's lines while this one is split */
                const unsigned char *s = (const unsigned char *)r->array[FRL_REPLAY_ROWS] +
                                         (size_t)out->index[o0 + o + 1] * span;
                for (size_t b = 128; b < span; b += 64)
                    __builtin_prefetch(s + b);
            }
            gather_sequence(r, out->index[o0 + o], out, o0 + o);
        }
    }
    return FRL_OK;
}

/* One block's T records of env b into rows t0.. of the span's column o. */
static void gather_block_column(const frl_replay *r, int64_t k, int32_t b, size_t t0, int32_t o,
                                const frl_replay_span *out)
{
    size_t T = (size_t)r->shape.steps, W = (size_t)r->obs_w, R = r->rec_bytes;
    size_t cols = (size_t)out->cols;
    const unsigned char *rec = (const unsigned char *)r->array[FRL_REPLAY_ROWS] +
                               ((size_t)k * (size_t)r->shape.envs + (size_t)b) * (T + 1) * R;
    for (size_t t = 0; t < T; t++, rec += R) {
        size_t row = (t0 + t) * cols + (size_t)o;
        copy_floats(out->obs + row * W, rec, W);
        memcpy(out->action + row, rec + r->off_action, 4);
        memcpy(out->reward + row, rec + r->off_reward, 4);
        out->terminated[row] = rec[r->off_flags];
        out->truncated[row] = rec[r->off_flags + 1];
        out->reset[row] = rec[r->off_flags + 2];
    }
}

/* Where env b's stream broke between span blocks i and i + 1 (see next_column: a run
 * that went on after a failed step reset its envs), the sequence ends its episode at the
 * join as an autoreset row would: the block's last row becomes a reset row (no target;
 * the recurrent state restarts after it) and the row before it truncated, so n-step sums
 * bootstrap from the last row's observation, the old episode's, instead of summing the
 * fresh episode's rewards. */
static void mark_break(const frl_replay *r, int64_t k, int32_t b, size_t row_end, int32_t o,
                       const frl_replay_span *out)
{
    size_t T1 = (size_t)r->shape.steps + 1, cols = (size_t)out->cols, next;
    size_t col = ((size_t)k * (size_t)r->shape.envs + (size_t)b) * T1;
    if (next_column(r, col, &next))
        return;
    size_t j = (row_end - 1) * cols + (size_t)o;
    out->reset[j] = 1;
    if (row_end >= 2 && !out->terminated[j - cols])
        out->truncated[j - cols] = 1;
}

void frl_replay_gather_span(const frl_replay *r, int64_t last, int32_t b, int32_t n, int32_t o,
                            const frl_replay_span *out)
{
    size_t T = (size_t)r->shape.steps, W = (size_t)r->obs_w, R = r->rec_bytes;
    size_t S = (size_t)r->shape.state_w, cols = (size_t)out->cols;
    int64_t first = ((last - n + 1) % r->blocks + r->blocks) % r->blocks;
    for (int32_t i = 0; i < n; i++)
        gather_block_column(r, (first + i) % r->blocks, b, (size_t)i * T, o, out);
    for (int32_t i = 0; i + 1 < n; i++)
        mark_break(r, (first + i) % r->blocks, b, (size_t)(i + 1) * T, o, out);
    /* the last block's bootstrap record */
    size_t end = (size_t)n * T, row = end * cols + (size_t)o, prev = row - cols;
    size_t boot_rec = ((size_t)last * (size_t)r->shape.envs + (size_t)b) * (T + 1) + T;
    const unsigned char *boot = (const unsigned char *)r->array[FRL_REPLAY_ROWS] + boot_rec * R;
    copy_floats(out->obs + row * W, boot, W);
    out->reset[row] = (uint8_t)(out->terminated[prev] | out->truncated[prev]);
    if (S && out->state0)
        memcpy(out->state0 + (size_t)o * S,
               (const float *)r->array[FRL_REPLAY_STATES] +
                   ((size_t)first * (size_t)r->shape.envs + (size_t)b) * S,
               sizeof(float) * S);
}

/* ---- priorities ---- */

/* Set the leaves of rows index[0..n) to priority^alpha (in order, so a row listed twice
 * keeps its last), then recompute their ancestors one level at a time for all rows at
 * once, each level's lines requested before any is written (as in tree_find_all). All
 * leaves are on level 0, so a level is recomputed only after the whole level below. */
static void tree_set_all(frl_replay *r, const int64_t *index, const float *priority,
                         int32_t n)
{
    float *mn = r->array[FRL_REPLAY_MIN_TREE];
    int64_t node[FIND_CHUNK];
    double pa[FIND_CHUNK];
    /* The min tree's leaves (the draw requested them too) first; p^alpha (core/pow_pos.h:
     * a loop that vectorises, about 15% faster than libm's two calls and the same bits
     * on every machine) is computed while they come. */
    for (int32_t o = 0; o < n; o++)
        __builtin_prefetch(mn + index[o], 1);
    for (int32_t o = 0; o < n; o++)
        pa[o] = frl_pow_pos((double)priority[o], r->shape.alpha);
    for (int32_t o = 0; o < n; o++) {
        leaf_set(r, index[o], pa[o]);
        node[o] = index[o];
    }
    /* Rows drawn by priority come in ascending order, so their ancestors repeat side by
     * side: a node equal to the one before is recomputed once (near the root, 256 rows
     * have a handful of ancestors). */
    for (int L = 1; L <= r->tree_top; L++) {
        int32_t m = 0;
        for (int32_t o = 0; o < n; o++) {
            int64_t up = node[o] / FRL_REPLAY_FANOUT;
            if (m > 0 && node[m - 1] == up)
                continue;
            node[m++] = up;
            /* the sum tree's nodes were read by the draw's descent; the min tree's not */
            __builtin_prefetch(mn + r->tree_off[L] + up, 1);
        }
        n = m;
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
    /* A row is a transition exactly where its leaf is > 0: adding sets resets' leaves to
     * 0 and transitions' to the largest p^alpha seen, updates set p^alpha > 0, and a
     * load refuses a file otherwise. The leaves were read by the draw just before, so
     * checking them costs no trip to the records. */
    const double *leaf = r->array[FRL_REPLAY_SUM_TREE];
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
        if (index[j] < 0 || index[j] >= rows || !(leaf[index[j]] > 0))
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

/* The records as bytes: their layout is the replay's shape, which the trainer's settings
 * in the same file give (and load checks the size against). */
void frl_replay_save(frl_replay *r, frl_section *s, int32_t *n)
{
    frl_section_add(s, n, "replay.rows", FRL_DTYPE_U8, r->bytes[FRL_REPLAY_ROWS],
                    r->array[FRL_REPLAY_ROWS]);
    if (r->shape.state_w)
        frl_section_add(s, n, "replay.states", FRL_DTYPE_F32, r->bytes[FRL_REPLAY_STATES] / 4,
                        r->array[FRL_REPLAY_STATES]);
    /* The exponent the leaves were made with: a run resumed under another one makes
     * them again rather than sampling p^old leaves beside p^new ones. */
    if (r->shape.prioritized)
        frl_section_add(s, n, "replay.alpha", FRL_DTYPE_F64, 1, &r->shape.alpha);
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
    /* Priorities come in as floats, so no run saves one above FLT_MAX; a forged 1e308
     * would make the sum tree's total infinite and the draws degenerate. It starts at 1
     * and only grows: a forged 1e-300 would give new rows leaves the min tree holds as 0. */
    if (!(maxp >= 1) || !(maxp <= FLT_MAX))
        return frl_fail(err, FRL_ERR_FORMAT, "replay.max_priority is %g (need [1, %g])", maxp,
                        (double)FLT_MAX);
    return FRL_OK;
}

/* The leaves of a prioritised replay (NULL otherwise): finite, >= 0, and 0 exactly at
 * reset rows (the file's flags) and unfilled blocks, so the sums sample what they did. */
static frl_status find_priorities(const frl_replay *r, const frl_container *c,
                                  const unsigned char *recs, int64_t filled,
                                  const double **out, char *err)
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
        int live = i < rows && !is_reset(r, recs, i);
        /* p^alpha <= max(p, 1); a transition's is also a float > 0 (p >= the least float,
         * alpha <= 1), as the min tree keeps it: a leaf that rounds to 0 there would make
         * the least p^alpha 0 and every importance weight the floor's */
        if (!(p[i] >= 0 && p[i] <= FLT_MAX) || ((float)p[i] > 0) != live)
            return frl_fail(err, FRL_ERR_FORMAT, "replay.priorities: row %lld is %g (%s)",
                            (long long)i, p[i], live ? "a transition" : "not a transition");
    }
    *out = p;
    return FRL_OK;
}

/* The filled blocks' records of a file: finite observations everywhere (but in an
 * image's bytes, shape.pixel_words, which are pixels whatever they read as), and at each
 * transition (a record not flagged reset) an action of the space (an index below
 * shape.actions, or finite floats) and a finite reward; flags 0 or 1 everywhere. The
 * learners index their outputs by these actions, so a corrupted one would read and write
 * out of bounds. */
static frl_status check_records(const frl_replay *r, const unsigned char *recs, int64_t filled,
                                char *err)
{
    int64_t n = filled * r->shape.envs * ((int64_t)r->shape.steps + 1);
    for (int64_t i = 0; i < n; i++) {
        const unsigned char *x = record_at(r, recs, (size_t)i);
        const char *bad = NULL;
        float f[1];
        for (int32_t j = r->shape.pixel_words; j < r->obs_w && !bad; j++) {
            memcpy(f, x + 4 * (size_t)j, 4);
            bad = isfinite(f[0]) ? NULL : "an observation that is not finite";
        }
        /* the flags are read as given (a terminated 2 would reach a batch as 2) */
        for (int j = 0; j < 3 && !bad; j++)
            bad = x[r->off_flags + (size_t)j] <= 1 ? NULL : "a flag that is not 0 or 1";
        if (!bad && !x[r->off_flags + 2]) {
            int32_t a;
            memcpy(&a, x + r->off_action, 4);
            if (r->shape.discrete && r->shape.actions > 0 && (a < 0 || a >= r->shape.actions))
                bad = "an action outside the action space";
            for (int32_t j = 0; !r->shape.discrete && j < r->act_w && !bad; j++) {
                memcpy(f, x + r->off_action + 4 * (size_t)j, 4);
                bad = isfinite(f[0]) ? NULL : "an action that is not finite";
            }
            memcpy(f, x + r->off_reward, 4);
            bad = bad ? bad : isfinite(f[0]) ? NULL : "a reward that is not finite";
        }
        if (bad)
            return frl_fail(err, FRL_ERR_FORMAT, "replay.rows: record %lld holds %s",
                            (long long)i, bad);
    }
    return FRL_OK;
}

/* A saved replay of another shape than this one, or without the priorities this one
 * keeps: the file is sound, the settings the run continues with (train.buffer_size, the
 * rollout's length, train.prioritized) are not those it was saved with. Said as such,
 * with the way on, rather than as a section of another size than expected. */
static frl_status check_saved_shape(const frl_replay *r, const frl_container *c, char *err)
{
    const frl_section *cur = frl_container_find(c, "replay.cursor", FRL_DTYPE_I64, 3, err);
    const frl_section *rs = cur ? frl_container_find(c, "replay.rows", FRL_DTYPE_U8, -1, err)
                                : NULL;
    if (!rs)
        return FRL_ERR_FORMAT;
    int64_t rows = ((const int64_t *)cur->data)[0];
    if (rows != r->capacity || rs->count != (uint64_t)r->bytes[FRL_REPLAY_ROWS])
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "replay: saved with %lld rows (%llu "
                        "bytes), the settings make %lld (%llu bytes, T %d x B %d): keep "
                        "train.buffer_size and the rollout length as saved, or set "
                        "train.save_replay=false", (long long)rows,
                        (unsigned long long)rs->count, (long long)r->capacity,
                        (unsigned long long)r->bytes[FRL_REPLAY_ROWS], (int)r->shape.steps,
                        (int)r->shape.envs);
    if (r->shape.prioritized &&
        !frl_container_optional(c, "replay.priorities", FRL_DTYPE_F64, -1))
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "replay: saved without priorities, "
                        "and the settings ask for them: keep train.prioritized as saved, or "
                        "set train.save_replay=false");
    return FRL_OK;
}

/* Leaf i of p, made under alpha `from`, as this replay's alpha makes it: from the float
 * priority it came from, by the same power an update takes (frl_pow_pos), so a resumed
 * run holds what it would have had the new alpha been set all along. */
static double leaf_again(const frl_replay *r, const double *p, int64_t i, double from)
{
    if (from == r->shape.alpha || !(p[i] > 0))
        return p[i];
    float q = frl_priority_of_leaf(p[i], from);
    return q > 0 && q <= FLT_MAX ? frl_pow_pos((double)q, r->shape.alpha) : -1.0;
}

/* Every leaf made again must still be a transition's (> 0, a float's power): a forged
 * leaf of 1e30 saved under alpha 0.1 is 1e300 under 1, and the sums would overflow. */
static frl_status check_leaves_again(const frl_replay *r, const double *p, double from,
                                     char *err)
{
    for (int64_t i = 0; p && from != r->shape.alpha && i < r->capacity; i++) {
        double v = leaf_again(r, p, i, from);
        if ((p[i] > 0) != (v > 0) || !(v <= FLT_MAX))
            return frl_fail(err, FRL_ERR_FORMAT, "replay.priorities: row %lld is %g, no "
                            "priority^%g", (long long)i, p[i], from);
    }
    return FRL_OK;
}

/* The checks of a file before anything is read from it: its shape, and the alpha its
 * leaves were made with (*alpha). */
static frl_status check_saved(const frl_replay *r, const frl_container *c, double saved_alpha,
                              double *alpha, char *err)
{
    frl_status st = check_saved_shape(r, c, err);
    if (st != FRL_OK || !r->shape.prioritized) {
        *alpha = r->shape.alpha; /* no leaves to make again */
        return st;
    }
    return frl_saved_alpha(c, "replay.alpha", saved_alpha, r->shape.alpha, alpha, err);
}

frl_status frl_replay_load(frl_replay *r, const frl_container *c, double saved_alpha,
                           char *err)
{
    double from;
    frl_status st = check_saved(r, c, saved_alpha, &from, err);
    if (st != FRL_OK)
        return st;
    const frl_section *rs = frl_container_find(c, "replay.rows", FRL_DTYPE_U8,
                                               (int64_t)r->bytes[FRL_REPLAY_ROWS], err);
    const frl_section *st0 = rs && r->shape.state_w
                                 ? frl_container_find(c, "replay.states", FRL_DTYPE_F32,
                                                      (int64_t)(r->bytes[FRL_REPLAY_STATES] / 4),
                                                      err)
                                 : rs;
    const frl_section *cur = st0 ? frl_container_find(c, "replay.cursor", FRL_DTYPE_I64, 3, err)
                                 : NULL;
    const frl_section *mp = cur ? frl_container_find(c, "replay.max_priority", FRL_DTYPE_F64, 1,
                                                     err) : NULL;
    if (!mp)
        return FRL_ERR_FORMAT;
    const int64_t *k = cur->data;
    st = check_cursor(r, k, *(const double *)mp->data, err);
    if (st != FRL_OK)
        return st;
    if (r->shape.state_w && r->shape.stack <= 1) { /* a stack's are frames: bytes */
        const float *v = st0->data;
        for (size_t j = 0; j < r->bytes[FRL_REPLAY_STATES] / 4; j++)
            if (!isfinite(v[j]))
                return frl_fail(err, FRL_ERR_FORMAT, "replay.states: value %zu is %g", j,
                                (double)v[j]);
    }
    if ((st = check_records(r, rs->data, k[1], err)) != FRL_OK)
        return st;
    const double *prio;
    st = find_priorities(r, c, rs->data, k[1], &prio, err);
    if (st == FRL_OK)
        st = check_leaves_again(r, prio, from, err);
    if (st != FRL_OK)
        return st;
    /* Every check passed: only now is anything written. */
    memcpy(r->array[FRL_REPLAY_ROWS], rs->data, r->bytes[FRL_REPLAY_ROWS]);
    if (r->shape.state_w)
        memcpy(r->array[FRL_REPLAY_STATES], st0->data, r->bytes[FRL_REPLAY_STATES]);
    r->filled = k[1];
    r->next = k[2];
    r->max_priority = *(const double *)mp->data;
    r->size = 0;
    memset(r->block_size, 0, sizeof(int32_t) * (size_t)r->blocks);
    for (int64_t b = 0; b < r->filled; b++)
        index_block_counts(r, b);
    if (prio) {
        double *leaf = r->array[FRL_REPLAY_SUM_TREE];
        for (int64_t i = 0; i < r->capacity; i++)
            leaf[i] = leaf_again(r, prio, i, from);
        build_trees(r);
    }
    return FRL_OK;
}
