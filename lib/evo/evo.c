/* frl_evo: the ask/tell handle over ES and GA, the built-in loop, and saving. */
#include <math.h>
#include <string.h>

#include "env/values.h"
#include "evo/evo.h"

/* No run tells 2^53 generations; a forged count near INT64_MAX would overflow the next
 * tell's (and GA's new seeds' generation + 1). */
#define MAX_GENERATION ((int64_t)1 << 53)

static int is_es(const frl_evo *e)
{
    return e->algo == FRL_TRAIN_ALGO_ES;
}

static frl_status check_algo(const frl_config *cfg, const char *who)
{
    int32_t algo = frl_cfg_choice(cfg, FRL_KEY_TRAIN_ALGO);
    if (algo == FRL_TRAIN_ALGO_ES || algo == FRL_TRAIN_ALGO_GA)
        return FRL_OK;
    char buf[32];
    return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "%s: train.algo is %s; an ask/tell "
                    "optimiser is train.algo=es or train.algo=ga", who,
                    frl_cfg_choice_text(cfg, FRL_KEY_TRAIN_ALGO, buf, sizeof buf));
}

static int32_t population_of(const frl_config *cfg)
{
    return (int32_t)frl_cfg_int(cfg, frl_cfg_choice(cfg, FRL_KEY_TRAIN_ALGO) == FRL_TRAIN_ALGO_ES
                                         ? FRL_KEY_ES_POPULATION
                                         : FRL_KEY_GA_POPULATION);
}

/* What create refuses in the settings and the size, before anything is allocated. */
static frl_status check_shape(const frl_config *cfg, int64_t num_params, const char *who)
{
    frl_status st = check_algo(cfg, who);
    if (st != FRL_OK)
        return st;
    if (num_params < 1 || num_params > ((int64_t)1 << 40))
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: num_params %lld is outside [1, 2^40]", who,
                        (long long)num_params);
    int32_t P = population_of(cfg);
    int es = frl_cfg_choice(cfg, FRL_KEY_TRAIN_ALGO) == FRL_TRAIN_ALGO_ES;
    if (es && P % 2)
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: es.population %d must be even (antithetic "
                        "pairs)", who, (int)P);
    int64_t noise = frl_cfg_int(cfg, FRL_KEY_ES_NOISE_FLOATS);
    if (es && noise < num_params)
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: es.noise_floats %lld is smaller than the "
                        "%lld parameters: a perturbation is a slice of the table", who,
                        (long long)noise, (long long)num_params);
    int64_t T = frl_cfg_int(cfg, FRL_KEY_GA_TRUNCATION), E = frl_cfg_int(cfg, FRL_KEY_GA_ELITES);
    if (!es && (T > P || E > T))
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: need ga.elites (%lld) <= ga.truncation "
                        "(%lld) <= ga.population (%d)", who, (long long)E, (long long)T, (int)P);
    if ((double)P * (double)num_params * 4.0 >= (double)(SIZE_MAX / 4))
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: %d members of %lld parameters do not fit in "
                        "memory", who, (int)P, (long long)num_params);
    return FRL_OK;
}

FRL_API frl_status frl_evo_memory_size(const frl_config *cfg, int64_t num_params, size_t *bytes)
{
    static const char who[] = "frl_evo_memory_size";
    if (!bytes)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: bytes is NULL", who);
    /* a failed call leaves *bytes as it was (api.md's rule for every output) */
    frl_status st = check_shape(cfg, num_params, who);
    if (st != FRL_OK)
        return st;
    size_t own = sizeof(float) * (size_t)num_params + sizeof(frl_evo) +
                 sizeof(frl_evo_rank) * (size_t)population_of(cfg);
    *bytes = own + (frl_cfg_choice(cfg, FRL_KEY_TRAIN_ALGO) == FRL_TRAIN_ALGO_ES
                        ? frl_es_bytes(cfg, num_params)
                        : frl_ga_bytes(cfg, num_params));
    return FRL_OK;
}

FRL_API void frl_evo_destroy(frl_evo *e)
{
    if (!e)
        return;
    if (is_es(e))
        frl_es_free(e);
    else
        frl_ga_free(e);
    frl_free(&e->rt->alloc, e->rank);
    frl_free(&e->rt->alloc, e->theta);
    frl_free(&e->rt->alloc, e);
}

static frl_status check_create(frl_evo **out, frl_runtime *rt, const frl_config *cfg,
                               int64_t num_params, const float *initial, const char *who)
{
    if (out)
        *out = NULL;
    if (!out || !rt || !initial)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: %s is NULL", who,
                        !out ? "out" : !rt ? "runtime" : "initial");
    frl_status st = check_shape(cfg, num_params, who);
    if (st != FRL_OK)
        return st;
    int64_t bad = frl_find_nonfinite(initial, num_params);
    if (bad >= 0)
        return frl_fail(NULL, FRL_ERR_NONFINITE, "%s: initial[%lld] is not finite", who,
                        (long long)bad);
    return FRL_OK;
}

FRL_API frl_status frl_evo_create(frl_evo **out, frl_runtime *rt, const frl_config *cfg,
                                  int64_t num_params, const float *initial)
{
    static const char who[] = "frl_evo_create";
    frl_status st = check_create(out, rt, cfg, num_params, initial, who);
    if (st != FRL_OK)
        return st;
    frl_evo *e = frl_alloc(&rt->alloc, sizeof *e, 64);
    if (!e)
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory", who);
    memset(e, 0, sizeof *e);
    e->rt = rt;
    e->algo = frl_cfg_choice(cfg, FRL_KEY_TRAIN_ALGO);
    e->P = population_of(cfg);
    e->n = num_params;
    e->seed = frl_runtime_seed(rt) + (uint64_t)frl_cfg_int(cfg, FRL_KEY_TRAIN_SEED_OFFSET);
    e->last_fitness[0] = e->last_fitness[1] = NAN;
    e->theta = frl_alloc(&rt->alloc, sizeof(float) * (size_t)num_params, 64);
    e->rank = frl_alloc(&rt->alloc, sizeof(frl_evo_rank) * (size_t)e->P, 64);
    if (!e->theta || !e->rank) {
        frl_evo_destroy(e);
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory for %lld parameters", who,
                        (long long)num_params);
    }
    memcpy(e->theta, initial, sizeof(float) * (size_t)num_params);
    st = is_es(e) ? frl_es_init(e, cfg) : frl_ga_init(e, cfg);
    if (st != FRL_OK) {
        frl_fail(NULL, st, "%s: %s", who, e->err);
        frl_evo_destroy(e);
        return st;
    }
    *out = e;
    return FRL_OK;
}

FRL_API int32_t frl_evo_population(const frl_evo *e)
{
    return e ? e->P : 0;
}

FRL_API int64_t frl_evo_num_parameters(const frl_evo *e)
{
    return e ? e->n : 0;
}

FRL_API int64_t frl_evo_generation(const frl_evo *e)
{
    return e ? e->generation : 0;
}

FRL_API const char *frl_evo_last_error(const frl_evo *e)
{
    return e ? e->err : "frl_evo_last_error: evo is NULL";
}

static frl_status check_count(frl_evo *e, int64_t count, int64_t want, const char *who,
                              const char *what)
{
    if (count == want)
        return FRL_OK;
    return frl_fail(e->err, FRL_ERR_SIZE, "%s: %s is %lld; it must be %lld", who, what,
                    (long long)count, (long long)want);
}

/* From inside frl_evo_run's fitness callback, a call that moves the generation would
 * leave the loop telling fitnesses for members that are no longer the ones asked. */
static frl_status check_not_in_fitness(frl_evo *e, const char *who)
{
    if (!e->in_fitness)
        return FRL_OK;
    return frl_fail(e->err, FRL_ERR_STATE, "%s: called from frl_evo_run's fitness callback on "
                    "the same optimiser (generation %lld); nothing was done", who,
                    (long long)e->generation);
}

FRL_API frl_status frl_evo_ask(frl_evo *e, float *params, int64_t count)
{
    static const char who[] = "frl_evo_ask";
    if (!e || !params)
        return frl_fail(e ? e->err : NULL, FRL_ERR_NULL, "%s: %s is NULL", who,
                        !e ? "evo" : "params");
    frl_status st = check_not_in_fitness(e, who);
    if (st != FRL_OK)
        return st;
    st = check_count(e, count, (int64_t)e->P * e->n, who, "count (floats)");
    if (st != FRL_OK)
        return frl_fail_msg(NULL, st, e->err);
    if (is_es(e))
        frl_es_ask(e, params);
    else
        frl_ga_ask(e, params);
    e->asked = 1;
    return FRL_OK;
}

static void fitness_stats(frl_evo *e, const double *f)
{
    double sum = 0, best = f[0];
    for (int32_t i = 0; i < e->P; i++) {
        sum += f[i];
        best = f[i] > best ? f[i] : best;
    }
    e->last_fitness[0] = sum / e->P;
    if (!isfinite(sum)) { /* finite fitnesses near DBL_MAX: their mean is finite */
        e->last_fitness[0] = 0;
        for (int32_t i = 0; i < e->P; i++)
            e->last_fitness[0] += f[i] / e->P;
    }
    e->last_fitness[1] = best;
}

FRL_API frl_status frl_evo_tell(frl_evo *e, const double *fitness, int32_t count)
{
    static const char who[] = "frl_evo_tell";
    if (!e || !fitness)
        return frl_fail(e ? e->err : NULL, FRL_ERR_NULL, "%s: %s is NULL", who,
                        !e ? "evo" : "fitness");
    frl_status st = check_not_in_fitness(e, who);
    if (st != FRL_OK)
        return st;
    st = check_count(e, count, e->P, who, "count");
    if (st != FRL_OK)
        return frl_fail_msg(NULL, st, e->err);
    if (!e->asked)
        return frl_fail(e->err, FRL_ERR_STATE, "%s: generation %lld was not asked for yet "
                        "(call frl_evo_ask first)", who, (long long)e->generation);
    for (int32_t i = 0; i < e->P; i++)
        if (!isfinite(fitness[i]))
            return frl_fail(e->err, FRL_ERR_NONFINITE, "%s: fitness[%d] is not finite; the "
                            "optimiser is unchanged", who, (int)i);
    st = is_es(e) ? frl_es_tell(e, fitness) : frl_ga_tell(e, fitness);
    if (st != FRL_OK)
        return frl_fail_msg(NULL, st, e->err);
    fitness_stats(e, fitness);
    e->generation++;
    e->asked = 0;
    return FRL_OK;
}

FRL_API frl_status frl_evo_best(const frl_evo *e, float *params, int64_t count, double *fitness)
{
    static const char who[] = "frl_evo_best";
    if (!e || !params) /* a failed call leaves *fitness as it was */
        return frl_fail(NULL, FRL_ERR_NULL, "%s: %s is NULL", who, !e ? "evo" : "params");
    if (count != e->n)
        return frl_fail(NULL, FRL_ERR_SIZE, "%s: count is %lld; it must be %lld", who,
                        (long long)count, (long long)e->n);
    memcpy(params, is_es(e) ? e->theta : e->ga.best, sizeof(float) * (size_t)e->n);
    if (fitness)
        *fitness = is_es(e) ? e->last_fitness[0] : e->ga.best_fitness;
    return FRL_OK;
}

FRL_API frl_status frl_evo_genome(const frl_evo *e, int32_t member, uint64_t *seeds,
                                  int32_t capacity, int32_t *length)
{
    static const char who[] = "frl_evo_genome";
    if (!e || !length)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: %s is NULL", who, !e ? "evo" : "length");
    if (is_es(e))
        return frl_fail(NULL, FRL_ERR_UNSUPPORTED, "%s: ES members have no genomes (train.algo=ga "
                        "has)", who);
    if (member < 0 || member >= e->P)
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: member %d is outside [0, %d)", who,
                        (int)member, (int)e->P);
    int32_t len = e->ga.len[member];
    *length = len;
    if (!seeds)
        return FRL_OK;
    if (capacity < len)
        return frl_fail(NULL, FRL_ERR_SIZE, "%s: capacity %d is less than the genome's %d seeds",
                        who, (int)capacity, (int)len);
    memcpy(seeds, e->ga.seeds + (size_t)member * (size_t)e->ga.cap, sizeof(uint64_t) * (size_t)len);
    return FRL_OK;
}

FRL_API frl_status frl_evo_rebuild(const frl_evo *e, const uint64_t *seeds, int32_t length,
                                   float *params, int64_t count)
{
    static const char who[] = "frl_evo_rebuild";
    if (!e || !seeds || !params)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: %s is NULL", who,
                        !e ? "evo" : !seeds ? "seeds" : "params");
    if (is_es(e))
        return frl_fail(NULL, FRL_ERR_UNSUPPORTED, "%s: ES members have no genomes", who);
    if (length < 1 || count != e->n)
        return frl_fail(NULL, length < 1 ? FRL_ERR_RANGE : FRL_ERR_SIZE, "%s: length %d (>= 1) "
                        "or count %lld (%lld) is wrong", who, (int)length, (long long)count,
                        (long long)e->n);
    frl_ga_rebuild(e, seeds, length, params);
    return FRL_OK;
}

FRL_API frl_status frl_evo_run(frl_evo *e, frl_fitness_fn fitness, void *user,
                               int64_t generations)
{
    static const char who[] = "frl_evo_run";
    if (!e)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: evo is NULL", who);
    if (!fitness)
        return frl_fail(e->err, FRL_ERR_NULL, "%s: fitness is NULL", who);
    if (e->in_fitness)
        return check_not_in_fitness(e, who);
    if (generations < 0)
        return frl_fail(e->err, FRL_ERR_RANGE, "%s: generations %lld < 0", who,
                        (long long)generations);
    size_t floats = (size_t)e->P * (size_t)e->n;
    float *params = frl_alloc(&e->rt->alloc, sizeof(float) * floats, 64);
    double *f = frl_alloc(&e->rt->alloc, sizeof(double) * (size_t)e->P, 64);
    frl_status st = params && f ? FRL_OK
                                : frl_fail(e->err, FRL_ERR_NOMEM, "%s: out of memory", who);
    for (int64_t g = 0; st == FRL_OK && g < generations; g++) {
        st = frl_evo_ask(e, params, (int64_t)floats);
        for (int32_t i = 0; i < e->P; i++)
            f[i] = NAN; /* a member the callback skips is a non-finite fitness, refused */
        e->in_fitness = 1;
        int rc = st == FRL_OK ? fitness(user, params, e->P, e->n, f) : 0;
        e->in_fitness = 0;
        if (rc != 0)
            st = frl_fail(e->err, FRL_ERR_CALLBACK, "%s: the fitness callback returned %d at "
                          "generation %lld", who, rc, (long long)e->generation);
        if (st == FRL_OK)
            st = frl_evo_tell(e, f, e->P);
    }
    frl_free(&e->rt->alloc, params);
    frl_free(&e->rt->alloc, f);
    if (st != FRL_OK)
        frl_fail_msg(NULL, st, e->err);
    return st;
}

/* ---- saving ---- */

void frl_evo_sections(const frl_evo *e, frl_section *s, int32_t *n, int64_t *meta)
{
    /* meta: the algorithm, P, n, the generation, the seed */
    meta[0] = e->algo;
    meta[1] = e->P;
    meta[2] = e->n;
    meta[3] = e->generation;
    meta[4] = (int64_t)e->seed;
    frl_section_add(s, n, "evo.meta", FRL_DTYPE_I64, 5, meta);
    frl_section_add_finite(s, n, "evo.theta", FRL_DTYPE_F32, (uint64_t)e->n, e->theta);
    frl_section_add(s, n, "evo.fitness", FRL_DTYPE_F64, 2, e->last_fitness);
    if (is_es(e))
        frl_es_sections(e, s, n);
    else
        frl_ga_sections(e, s, n);
}

frl_status frl_evo_restore(frl_evo *e, const frl_container *c, int adopt_seed, char *err)
{
    const frl_section *meta = frl_container_find(c, "evo.meta", FRL_DTYPE_I64, 5, err);
    if (!meta)
        return FRL_ERR_FORMAT;
    /* The saved shape first: another optimiser's file is a size mismatch, not a corrupt
     * one (its sections would not have this one's sizes). */
    const int64_t *m = meta->data;
    if (m[0] != e->algo || m[1] != e->P || m[2] != e->n)
        return frl_fail(err, FRL_ERR_SIZE, "the saved optimiser is %s with %lld members of %lld "
                        "parameters; this one is %s with %d of %lld",
                        m[0] == FRL_TRAIN_ALGO_ES ? "ES" : "GA", (long long)m[1], (long long)m[2],
                        is_es(e) ? "ES" : "GA", (int)e->P, (long long)e->n);
    const frl_section *theta = frl_container_find(c, "evo.theta", FRL_DTYPE_F32, e->n, err);
    const frl_section *fit =
        theta ? frl_container_find(c, "evo.fitness", FRL_DTYPE_F64, 2, err) : NULL;
    if (!fit)
        return FRL_ERR_FORMAT;
    if (frl_find_nonfinite(theta->data, e->n) >= 0)
        return frl_fail(err, FRL_ERR_FORMAT, "evo.theta holds a value that is not finite");
    /* A tell's mean and best of finite fitnesses are finite (NaN before the first): an
     * infinity would be ES's kept fitness, reaching any train.target_return at once. */
    double last[2];
    memcpy(last, fit->data, sizeof last);
    if (m[3] < 0 || m[3] > MAX_GENERATION || isinf(last[0]) || isinf(last[1]))
        return frl_fail(err, FRL_ERR_FORMAT, "evo.meta's generation %lld is outside "
                        "[0, 2^53] or evo.fitness (%g, %g) holds an infinity",
                        (long long)m[3], last[0], last[1]);
    if ((uint64_t)m[4] != e->seed && !adopt_seed)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "the saved optimiser's seed %llu differs "
                        "from this one's %llu (the runtime's seed plus train.seed_offset)",
                        (unsigned long long)m[4], (unsigned long long)e->seed);
    frl_status st = is_es(e) ? frl_es_restore(e, c, theta->data, err)
                             : frl_ga_restore(e, c, theta->data, err);
    if (st != FRL_OK)
        return st;
    e->generation = m[3];
    memcpy(e->last_fitness, last, sizeof e->last_fitness);
    e->asked = 0;
    if ((uint64_t)m[4] != e->seed) {
        e->seed = (uint64_t)m[4];
        if (is_es(e))
            frl_es_fill_noise(e);
    }
    return FRL_OK;
}

FRL_API frl_status frl_evo_save(const frl_evo *e, const char *path)
{
    if (!e || !path)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_evo_save: %s is NULL", !e ? "evo" : "path");
    frl_section s[FRL_EVO_MAX_SECTIONS];
    int32_t n = 0;
    int64_t meta[5];
    frl_evo_sections(e, s, &n, meta);
    char why[FRL_ERRMSG_SIZE];
    frl_status st = frl_container_write(path, &e->rt->alloc, s, n, why);
    if (st != FRL_OK)
        frl_fail(NULL, st, "frl_evo_save: %s", why);
    return st;
}

FRL_API frl_status frl_evo_load(frl_evo *e, const char *path)
{
    if (!e || !path)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_evo_load: %s is NULL", !e ? "evo" : "path");
    if (e->in_fitness)
        return check_not_in_fitness(e, "frl_evo_load");
    frl_container *c = NULL;
    char why[FRL_ERRMSG_SIZE];
    frl_status st = frl_container_read(&c, path, &e->rt->alloc, why);
    if (st == FRL_OK)
        st = frl_evo_restore(e, c, 0, why);
    frl_container_free(c);
    if (st != FRL_OK)
        frl_fail(e->err, st, "frl_evo_load: %s: %s", path, why);
    return st;
}
