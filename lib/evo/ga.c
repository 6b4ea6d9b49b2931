/* Deep GA (Such et al., 2017): a genome is a list of seeds; the first makes a starting
 * point around the base parameters (base + init_sigma N(seed 0)) and each further seed
 * a mutation (+ sigma N(seed k)). Truncation selection: the best T members are the
 * next generation's parents, each child a mutation of a parent drawn uniformly, and the
 * best E members go on unmutated, to be evaluated again.
 *
 * Children are made from the parent cache (the parents' parameters copied at tell), so
 * a child costs one mutation, not its whole genome. frl_ga_rebuild replays the seeds
 * with the same float operations, so a genome rebuilt from scratch is bit-identical.
 *
 * The member kept (frl_evo_best) is chosen by the mean of every fitness it received,
 * among members evaluated in three generations or more (carried elites), which
 * is this design's form of Such et al.'s re-evaluation of elite candidates: the
 * candidates are re-evaluated over the next generations' episodes rather than in a
 * separate round, so ask/tell keeps one population of P a generation. */
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "env/values.h"
#include "evo/evo.h"

static const uint64_t GENOME_SALT = 0x67656e6f6d652121ULL, PARENT_SALT = 0x706172656e747321ULL;

static const frl_allocator *al_of(const frl_evo *e)
{
    return &e->rt->alloc;
}

/* Seeds a genome has room for at first (the arrays double as genomes outgrow them). */
enum { FIRST_CAP = 16 };

/* cur, cache and best; per member two genomes of FIRST_CAP seeds, two lengths, the fitness
 * sum and count, order and score (and evo.c's rank); per parent a genome and a length. */
size_t frl_ga_bytes(const frl_config *cfg, int64_t n)
{
    size_t P = (size_t)frl_cfg_int(cfg, FRL_KEY_GA_POPULATION);
    size_t T = (size_t)frl_cfg_int(cfg, FRL_KEY_GA_TRUNCATION);
    T = T < P ? T : P;
    size_t genome = sizeof(uint64_t) * FIRST_CAP;
    return sizeof(float) * (P + T + 1) * (size_t)n +
           P * (2 * genome + 2 * sizeof(int32_t) + sizeof(double) + sizeof(int32_t) +
                sizeof(int32_t) + sizeof(double)) +
           T * (genome + sizeof(int32_t));
}

/* Room for genomes of cap seeds (the arrays are copied over; lengths are kept). */
static frl_status grow(frl_evo *e, int32_t cap)
{
    frl_ga *g = &e->ga;
    size_t P = (size_t)e->P, T = (size_t)g->truncation;
    uint64_t *a = frl_alloc(al_of(e), sizeof(uint64_t) * P * (size_t)cap, 64);
    uint64_t *b = frl_alloc(al_of(e), sizeof(uint64_t) * P * (size_t)cap, 64);
    uint64_t *c = frl_alloc(al_of(e), sizeof(uint64_t) * T * (size_t)cap, 64);
    if (!a || !b || !c) {
        frl_free(al_of(e), a);
        frl_free(al_of(e), b);
        frl_free(al_of(e), c);
        return frl_fail(e->err, FRL_ERR_NOMEM, "GA: out of memory for genomes of %d seeds",
                        (int)cap);
    }
    for (size_t i = 0; g->seeds && i < P; i++)
        memcpy(a + i * (size_t)cap, g->seeds + i * (size_t)g->cap, sizeof(uint64_t) * (size_t)g->len[i]);
    frl_free(al_of(e), g->seeds);
    frl_free(al_of(e), g->next_seeds);
    frl_free(al_of(e), g->parent_seeds);
    g->seeds = a;
    g->next_seeds = b;
    g->parent_seeds = c;
    g->cap = cap;
    return FRL_OK;
}

static uint64_t *genome(const frl_evo *e, int32_t i)
{
    return e->ga.seeds + (size_t)i * (size_t)e->ga.cap;
}

/* The starting point of a genome's first seed. */
static void start_point(const frl_evo *e, uint64_t seed, float *params)
{
    memcpy(params, e->theta, sizeof(float) * (size_t)e->n);
    if (e->ga.init_sigma > 0)
        frl_evo_normals(seed, 0, params, e->n, e->ga.init_sigma, 1);
}

static void mutate(const frl_evo *e, uint64_t seed, float *params)
{
    frl_evo_normals(seed, 0, params, e->n, e->ga.sigma, 1);
}

void frl_ga_rebuild(const frl_evo *e, const uint64_t *seeds, int32_t length, float *params)
{
    start_point(e, seeds[0], params);
    for (int32_t k = 1; k < length; k++)
        mutate(e, seeds[k], params);
}

/* A seed no other genome of the run uses: from the run's seed, the generation the
 * member belongs to and the member. */
static uint64_t new_seed(const frl_evo *e, int64_t generation, int32_t member)
{
    frl_rng r = frl_rng_stream(e->seed ^ GENOME_SALT, (uint64_t)generation);
    r.counter = (uint64_t)member;
    return frl_rng_next(&r);
}

static int first_member(void *user, int32_t i, int32_t thread)
{
    (void)thread;
    frl_evo *e = user;
    start_point(e, genome(e, i)[0], e->ga.cur + (size_t)i * (size_t)e->n);
    return 0;
}

frl_status frl_ga_init(frl_evo *e, const frl_config *cfg)
{
    frl_ga *g = &e->ga;
    size_t P = (size_t)e->P, n = (size_t)e->n;
    g->sigma = frl_cfg_float(cfg, FRL_KEY_GA_SIGMA);
    g->init_sigma = frl_cfg_float(cfg, FRL_KEY_GA_INIT_SIGMA);
    g->truncation = (int32_t)frl_cfg_int(cfg, FRL_KEY_GA_TRUNCATION);
    g->elites = (int32_t)frl_cfg_int(cfg, FRL_KEY_GA_ELITES); /* <= truncation <= P: evo.c */
    g->best_fitness = NAN;
    g->cur = frl_alloc(al_of(e), sizeof(float) * P * n, 64);
    g->cache = frl_alloc(al_of(e), sizeof(float) * (size_t)g->truncation * n, 64);
    g->best = frl_alloc(al_of(e), sizeof(float) * n, 64);
    g->len = frl_alloc(al_of(e), sizeof(int32_t) * P, 64);
    g->next_len = frl_alloc(al_of(e), sizeof(int32_t) * P, 64);
    g->parent_len = frl_alloc(al_of(e), sizeof(int32_t) * (size_t)g->truncation, 64);
    g->acc_sum = frl_alloc(al_of(e), sizeof(double) * P, 64);
    g->acc_count = frl_alloc(al_of(e), sizeof(int32_t) * P, 64);
    g->order = frl_alloc(al_of(e), sizeof(int32_t) * P, 64);
    g->score = frl_alloc(al_of(e), sizeof(double) * P, 64);
    if (!g->cur || !g->cache || !g->best || !g->len || !g->next_len || !g->parent_len ||
        !g->acc_sum || !g->acc_count || !g->order || !g->score)
        return frl_fail(e->err, FRL_ERR_NOMEM, "GA: out of memory for %d members and %d "
                        "parents of %lld parameters (%.1f MB)", (int)P, (int)g->truncation,
                        (long long)n, (double)(P + (size_t)g->truncation) * (double)n * 4e-6);
    memset(g->len, 0, sizeof(int32_t) * P);
    frl_status st = grow(e, FIRST_CAP);
    if (st != FRL_OK)
        return st;
    for (int32_t i = 0; i < e->P; i++) {
        genome(e, i)[0] = new_seed(e, 0, i);
        g->len[i] = 1;
        g->acc_sum[i] = 0;
        g->acc_count[i] = 0;
    }
    memcpy(g->best, e->theta, sizeof(float) * n);
    frl_pool_run(e->rt->pool, e->P, first_member, e, NULL);
    return FRL_OK;
}

void frl_ga_free(frl_evo *e)
{
    frl_ga *g = &e->ga;
    void *p[] = {g->cur, g->cache, g->best, g->seeds, g->next_seeds, g->len, g->next_len,
                 g->parent_seeds, g->parent_len, g->acc_sum, g->acc_count, g->order, g->score};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        frl_free(al_of(e), p[i]);
}

void frl_ga_ask(frl_evo *e, float *params)
{
    memcpy(params, e->ga.cur, sizeof(float) * (size_t)e->P * (size_t)e->n);
}

/* Generations a member must have been evaluated in before it can be kept (while any
 * has): one lucky episode does not make a policy to keep. */
enum { KEPT_EVALUATIONS = 3 };

/* The member to keep: the best mean among those evaluated KEPT_EVALUATIONS times or
 * more, else among the most evaluated. */
static int32_t kept_member(const frl_evo *e)
{
    const frl_ga *g = &e->ga;
    int32_t most = 0;
    for (int32_t i = 0; i < e->P; i++)
        most = g->acc_count[i] > most ? g->acc_count[i] : most;
    int32_t need = most < KEPT_EVALUATIONS ? most : KEPT_EVALUATIONS;
    for (int32_t r = 0; r < e->P; r++)
        if (g->acc_count[g->order[r]] >= need)
            return g->order[r];
    return g->order[0];
}

/* The best T members' parameters and genomes into the parent cache. */
static void cache_parents(frl_evo *e)
{
    frl_ga *g = &e->ga;
    size_t n = (size_t)e->n;
    for (int32_t k = 0; k < g->truncation; k++) {
        int32_t i = g->order[k];
        memcpy(g->cache + (size_t)k * n, g->cur + (size_t)i * n, sizeof(float) * n);
        memcpy(g->parent_seeds + (size_t)k * (size_t)g->cap, genome(e, i),
               sizeof(uint64_t) * (size_t)g->len[i]);
        g->parent_len[k] = g->len[i];
    }
}

/* Member i of the next generation: parent k's genome plus (for a child) one seed. */
static void next_genome(frl_evo *e, int32_t i, int32_t k, int child)
{
    frl_ga *g = &e->ga;
    uint64_t *dst = g->next_seeds + (size_t)i * (size_t)g->cap;
    memcpy(dst, g->parent_seeds + (size_t)k * (size_t)g->cap,
           sizeof(uint64_t) * (size_t)g->parent_len[k]);
    g->next_len[i] = g->parent_len[k];
    if (child)
        dst[g->next_len[i]++] = new_seed(e, e->generation + 1, i);
}

static int32_t parent_of(const frl_evo *e, int32_t i)
{
    if (i < e->ga.elites)
        return i;
    frl_rng r = frl_rng_stream(e->seed ^ PARENT_SALT, (uint64_t)e->generation);
    r.counter = (uint64_t)i;
    return (int32_t)(frl_rng_next(&r) % (uint64_t)e->ga.truncation);
}

static int make_member(void *user, int32_t i, int32_t thread)
{
    (void)thread;
    frl_evo *e = user;
    frl_ga *g = &e->ga;
    float *dst = g->cur + (size_t)i * (size_t)e->n;
    memcpy(dst, g->cache + (size_t)parent_of(e, i) * (size_t)e->n, sizeof(float) * (size_t)e->n);
    if (i >= g->elites)
        mutate(e, g->next_seeds[(size_t)i * (size_t)g->cap + (size_t)g->next_len[i] - 1], dst);
    return 0;
}

/* Elites keep their fitness sums (they are evaluated again); children start afresh. */
static void carry_scores(frl_evo *e)
{
    frl_ga *g = &e->ga;
    for (int32_t i = 0; i < e->P; i++) {
        int32_t src = g->order[i];
        e->rank[i] = i < g->elites ? (frl_evo_rank){g->acc_sum[src], g->acc_count[src]}
                                   : (frl_evo_rank){0, 0};
    }
    for (int32_t i = 0; i < e->P; i++) {
        g->acc_sum[i] = e->rank[i].fitness;
        g->acc_count[i] = e->rank[i].index;
    }
}

/* A member's fitnesses are summed over the generations it is evaluated in (elites again
 * and again): a sum beyond DBL_MAX would rank it as infinite and could not be saved
 * (checkpoints hold finite sums), so the tell that overflows one is refused whole. */
static frl_status check_sums(frl_evo *e, const double *fitness)
{
    const frl_ga *g = &e->ga;
    for (int32_t i = 0; i < e->P; i++)
        if (!isfinite(g->acc_sum[i] + fitness[i]))
            return frl_fail(e->err, FRL_ERR_RANGE, "frl_evo_tell: member %d's fitness sum "
                            "(%g + %g over its evaluations) is beyond a double's range; the "
                            "optimiser is unchanged (scale the fitnesses down)", (int)i,
                            g->acc_sum[i], fitness[i]);
    return FRL_OK;
}

frl_status frl_ga_tell(frl_evo *e, const double *fitness)
{
    frl_ga *g = &e->ga;
    frl_status st = check_sums(e, fitness);
    if (st != FRL_OK)
        return st;
    int32_t longest = 0;
    for (int32_t i = 0; i < e->P; i++)
        longest = g->len[i] > longest ? g->len[i] : longest;
    if (longest + 1 > g->cap) {
        st = grow(e, g->cap * 2);
        if (st != FRL_OK)
            return st;
    }
    for (int32_t i = 0; i < e->P; i++) {
        g->acc_sum[i] += fitness[i];
        g->acc_count[i]++;
        g->score[i] = g->acc_sum[i] / g->acc_count[i];
    }
    frl_evo_sort_desc(g->score, e->P, e->rank, g->order);
    int32_t keep = kept_member(e);
    memcpy(g->best, g->cur + (size_t)keep * (size_t)e->n, sizeof(float) * (size_t)e->n);
    g->best_fitness = g->score[keep];
    cache_parents(e);
    for (int32_t i = 0; i < e->P; i++)
        next_genome(e, i, parent_of(e, i), i >= g->elites);
    frl_pool_run(e->rt->pool, e->P, make_member, e, NULL);
    carry_scores(e);
    uint64_t *t = g->seeds;
    g->seeds = g->next_seeds;
    g->next_seeds = t;
    int32_t *l = g->len;
    g->len = g->next_len;
    g->next_len = l;
    return FRL_OK;
}

/* ---- checkpoints: the genomes' seed lists, not the parameters ---- */

void frl_ga_sections(const frl_evo *e, frl_section *s, int32_t *n)
{
    const frl_ga *g = &e->ga;
    /* The genomes packed end to end (each row of g->seeds has room for cap), into the
     * next generation's scratch, which only a tell writes: the sections stay valid until
     * the next tell, and two saves of one optimiser must not run at once (as no two
     * calls on one handle may). */
    uint64_t *packed = g->next_seeds, total = 0;
    for (int32_t i = 0; i < e->P; i++) {
        memcpy(packed + total, genome(e, i), sizeof(uint64_t) * (size_t)g->len[i]);
        total += (uint64_t)g->len[i];
    }
    frl_section_add(s, n, "ga.length", FRL_DTYPE_I32, (uint64_t)e->P, g->len);
    frl_section_add(s, n, "ga.seeds", FRL_DTYPE_U64, total, packed);
    frl_section_add_finite(s, n, "ga.fitness_sum", FRL_DTYPE_F64, (uint64_t)e->P, g->acc_sum);
    frl_section_add(s, n, "ga.fitness_count", FRL_DTYPE_I32, (uint64_t)e->P, g->acc_count);
    frl_section_add_finite(s, n, "ga.kept", FRL_DTYPE_F32, (uint64_t)e->n, g->best);
    frl_section_add(s, n, "ga.kept_fitness", FRL_DTYPE_F64, 1, &g->best_fitness);
    /* what the seeds mean: a genome is its start and mutations at these scales
     * (ga.truncation and ga.elites may change on a resume: they act from the next tell) */
    frl_section_add(s, n, "ga.sigma", FRL_DTYPE_F64, 1, &g->sigma);
    frl_section_add(s, n, "ga.init_sigma", FRL_DTYPE_F64, 1, &g->init_sigma);
}

/* A saved scale against this optimiser's: the genomes would rebuild to other members. */
static frl_status check_scale(const frl_container *c, const char *key, double have, char *err)
{
    const frl_section *s = frl_container_find(c, key, FRL_DTYPE_F64, 1, err);
    if (!s)
        return FRL_ERR_FORMAT;
    double saved;
    memcpy(&saved, s->data, sizeof saved);
    if (saved == have)
        return FRL_OK;
    return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "the run was saved with %s=%g and this "
                    "optimiser has %g (its genomes' mutations are at that scale: set %s as "
                    "saved)", key, saved, have, key);
}

/* Fitness sums finite and counts in [0, 2^31 - 2] (a tell adds one to each), the kept
 * member finite and its fitness finite or NaN (none kept yet). */
static frl_status check_scores(const frl_evo *e, const double *sum, const int32_t *cnt,
                               const float *kept, double kept_fitness, char *err)
{
    for (int32_t i = 0; i < e->P; i++)
        if (!isfinite(sum[i]) || cnt[i] < 0 || cnt[i] > INT32_MAX - 1)
            return frl_fail(err, FRL_ERR_FORMAT, "GA checkpoint: member %d's fitness sum %g "
                            "or count %d is out of range", (int)i, sum[i], (int)cnt[i]);
    if (frl_find_nonfinite(kept, e->n) >= 0 || isinf(kept_fitness))
        return frl_fail(err, FRL_ERR_FORMAT, "GA checkpoint: the kept member or its fitness "
                        "is not finite");
    return FRL_OK;
}

/* The lengths must be 1.. and add up to the seeds' count. */
static int64_t check_lengths(const frl_evo *e, const int32_t *len, char *err)
{
    int64_t total = 0;
    for (int32_t i = 0; i < e->P; i++) {
        if (len[i] < 1 || len[i] > 1 << 28) {
            frl_fail(err, FRL_ERR_FORMAT, "GA checkpoint: genome %d has length %d", (int)i,
                     (int)len[i]);
            return -1;
        }
        total += len[i];
    }
    return total;
}

static int rebuild_member(void *user, int32_t i, int32_t thread)
{
    (void)thread;
    frl_evo *e = user;
    frl_ga_rebuild(e, genome(e, i), e->ga.len[i], e->ga.cur + (size_t)i * (size_t)e->n);
    return 0;
}

/* Rebuilding after a load shares parents: the members' genomes minus their last seed
 * (their parents') are few, at most the truncation plus the elites' own parents, so
 * each is replayed once and every member is its parent plus one mutation, not its whole
 * genome (P genomes of a thousand seeds take tens of seconds). */
typedef struct shared_rebuild {
    frl_evo *e;
    int32_t parents;
    int32_t *parent_of;   /* [P]: the member's parent's index in params, -1: none */
    int32_t *first;       /* [parents]: a member whose parent it is */
    float *params;        /* [parents x n] */
} shared_rebuild;

static int same_prefix(const frl_evo *e, int32_t i, int32_t j)
{
    int32_t li = e->ga.len[i], lj = e->ga.len[j];
    return li == lj && memcmp(genome(e, i), genome(e, j), sizeof(uint64_t) * (size_t)(li - 1)) == 0;
}

/* Each member's parent among the distinct ones (found by comparing prefixes). */
static void find_parents(shared_rebuild *r)
{
    frl_evo *e = r->e;
    for (int32_t i = 0; i < e->P; i++) {
        r->parent_of[i] = -1;
        if (e->ga.len[i] < 2)
            continue;
        for (int32_t k = 0; k < r->parents && r->parent_of[i] < 0; k++)
            if (same_prefix(e, i, r->first[k]))
                r->parent_of[i] = k;
        if (r->parent_of[i] < 0) {
            r->first[r->parents] = i;
            r->parent_of[i] = r->parents++;
        }
    }
}

static int rebuild_parent(void *user, int32_t k, int32_t thread)
{
    (void)thread;
    shared_rebuild *r = user;
    int32_t i = r->first[k];
    frl_ga_rebuild(r->e, genome(r->e, i), r->e->ga.len[i] - 1, r->params + (size_t)k * (size_t)r->e->n);
    return 0;
}

static int child_of_parent(void *user, int32_t i, int32_t thread)
{
    shared_rebuild *r = user;
    frl_evo *e = r->e;
    float *dst = e->ga.cur + (size_t)i * (size_t)e->n;
    if (r->parent_of[i] < 0)
        return rebuild_member(e, i, thread);
    memcpy(dst, r->params + (size_t)r->parent_of[i] * (size_t)e->n, sizeof(float) * (size_t)e->n);
    mutate(e, genome(e, i)[e->ga.len[i] - 1], dst);
    return 0;
}

/* Every member's parameters from its genome; from scratch when the sharing's arrays do
 * not fit in memory (the same bits either way). */
static void rebuild_all(frl_evo *e)
{
    shared_rebuild r = {.e = e};
    r.parent_of = frl_alloc(al_of(e), sizeof(int32_t) * 2 * (size_t)e->P, 64);
    if (r.parent_of) {
        r.first = r.parent_of + e->P;
        find_parents(&r);
        r.params = frl_alloc(al_of(e), sizeof(float) * ((size_t)r.parents + 1) * (size_t)e->n, 64);
    }
    if (r.params) {
        frl_pool_run(e->rt->pool, r.parents, rebuild_parent, &r, NULL);
        frl_pool_run(e->rt->pool, e->P, child_of_parent, &r, NULL);
    } else {
        frl_pool_run(e->rt->pool, e->P, rebuild_member, e, NULL);
    }
    frl_free(al_of(e), r.params);
    frl_free(al_of(e), r.parent_of);
}

frl_status frl_ga_restore(frl_evo *e, const frl_container *c, const float *theta, char *err)
{
    frl_ga *g = &e->ga;
    const frl_section *len = frl_container_find(c, "ga.length", FRL_DTYPE_I32, e->P, err);
    int64_t total = len ? check_lengths(e, len->data, err) : -1;
    const frl_section *seeds =
        total > 0 ? frl_container_find(c, "ga.seeds", FRL_DTYPE_U64, total, err) : NULL;
    const frl_section *sum =
        seeds ? frl_container_find(c, "ga.fitness_sum", FRL_DTYPE_F64, e->P, err) : NULL;
    const frl_section *cnt =
        sum ? frl_container_find(c, "ga.fitness_count", FRL_DTYPE_I32, e->P, err) : NULL;
    const frl_section *kept = cnt ? frl_container_find(c, "ga.kept", FRL_DTYPE_F32, e->n, err) : NULL;
    const frl_section *kf =
        kept ? frl_container_find(c, "ga.kept_fitness", FRL_DTYPE_F64, 1, err) : NULL;
    if (!kf)
        return FRL_ERR_FORMAT;
    double kept_fitness;
    memcpy(&kept_fitness, kf->data, sizeof kept_fitness);
    frl_status st = check_scale(c, "ga.sigma", g->sigma, err);
    if (st == FRL_OK)
        st = check_scale(c, "ga.init_sigma", g->init_sigma, err);
    if (st == FRL_OK)
        st = check_scores(e, sum->data, cnt->data, kept->data, kept_fitness, err);
    if (st != FRL_OK)
        return st;
    const int32_t *l = len->data;
    int32_t longest = 0;
    for (int32_t i = 0; i < e->P; i++)
        longest = l[i] > longest ? l[i] : longest;
    int32_t cap = g->cap;
    while (cap < longest + 1)
        cap *= 2;
    if (cap != g->cap && grow(e, cap) != FRL_OK)
        return frl_fail(err, FRL_ERR_NOMEM, "%s", e->err);
    memcpy(e->theta, theta, sizeof(float) * (size_t)e->n);
    const uint64_t *src = seeds->data;
    for (int32_t i = 0; i < e->P; i++) {
        memcpy(genome(e, i), src, sizeof(uint64_t) * (size_t)l[i]);
        g->len[i] = l[i];
        src += l[i];
    }
    memcpy(g->acc_sum, sum->data, sizeof(double) * (size_t)e->P);
    memcpy(g->acc_count, cnt->data, sizeof(int32_t) * (size_t)e->P);
    memcpy(g->best, kept->data, sizeof(float) * (size_t)e->n);
    g->best_fitness = kept_fitness;
    rebuild_all(e);
    return FRL_OK;
}
