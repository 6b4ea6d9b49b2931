/* OpenAI-ES (Salimans et al., 2017): a Gaussian search distribution around a centre
 * theta, antithetic pairs theta +- sigma eps whose eps are slices of one shared noise
 * table, centred-rank fitness shaping, weight decay, and Adam on the estimated gradient.
 *
 * Pair i of generation g takes the slice of the table at an offset drawn from the
 * stream (seed, g), so a generation's members are a function of the seed, the
 * generation and the centre. As in OpenAI's code, the gradient estimate is
 * sum_i (w(+) - w(-)) eps_i / P (sigma folded into the step size) and Adam minimises
 * -g + weight_decay theta. */
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "evo/evo.h"

enum { NOISE_CHUNK = 1 << 16, GRAD_CHUNK = 1024 };
static const uint64_t NOISE_SALT = 0x6e6f6973655f7462ULL, OFFSET_SALT = 0x6f66667365747321ULL;

size_t frl_es_bytes(const frl_config *cfg, int64_t n)
{
    /* the noise table; Adam's m and v and the gradient [n]; per member half an offset,
     * a weight and an order entry (theta and the ranks are evo.c's) */
    int64_t P = frl_cfg_int(cfg, FRL_KEY_ES_POPULATION);
    return sizeof(float) * (size_t)frl_cfg_int(cfg, FRL_KEY_ES_NOISE_FLOATS) +
           (sizeof(float) * 2 + sizeof(double)) * (size_t)n +
           (sizeof(int64_t) / 2 + sizeof(double) + sizeof(int32_t)) * (size_t)P;
}

static int fill_noise(void *user, int32_t task, int32_t thread)
{
    (void)thread;
    frl_evo *e = user;
    int64_t first = (int64_t)task * NOISE_CHUNK;
    int64_t n = e->es.noise_n - first < NOISE_CHUNK ? e->es.noise_n - first : NOISE_CHUNK;
    frl_evo_normals(e->seed ^ NOISE_SALT, (uint64_t)task, e->es.noise + first, n, 1.0, 0);
    return 0;
}

frl_status frl_es_init(frl_evo *e, const frl_config *cfg)
{
    frl_es *s = &e->es;
    const frl_allocator *al = &e->rt->alloc;
    s->sigma = frl_cfg_float(cfg, FRL_KEY_ES_SIGMA);
    s->lr = frl_cfg_float(cfg, FRL_KEY_ES_LR);
    s->weight_decay = frl_cfg_float(cfg, FRL_KEY_ES_WEIGHT_DECAY);
    s->noise_n = frl_cfg_int(cfg, FRL_KEY_ES_NOISE_FLOATS); /* >= n: evo.c checked */
    s->noise = frl_alloc(al, sizeof(float) * (size_t)s->noise_n, 64);
    s->m = frl_alloc(al, sizeof(float) * (size_t)e->n, 64);
    s->v = frl_alloc(al, sizeof(float) * (size_t)e->n, 64);
    s->grad = frl_alloc(al, sizeof(double) * (size_t)e->n, 64);
    s->offset = frl_alloc(al, sizeof(int64_t) * (size_t)(e->P / 2), 64);
    s->weight = frl_alloc(al, sizeof(double) * (size_t)e->P, 64);
    s->order = frl_alloc(al, sizeof(int32_t) * (size_t)e->P, 64);
    if (!s->noise || !s->m || !s->v || !s->grad || !s->offset || !s->weight || !s->order)
        return frl_fail(e->err, FRL_ERR_NOMEM, "ES: out of memory for a noise table of %lld "
                        "floats (%.1f MB) and %lld parameters", (long long)s->noise_n,
                        (double)s->noise_n * 4e-6, (long long)e->n);
    memset(s->m, 0, sizeof(float) * (size_t)e->n);
    memset(s->v, 0, sizeof(float) * (size_t)e->n);
    frl_es_fill_noise(e);
    return FRL_OK;
}

void frl_es_fill_noise(frl_evo *e)
{
    int32_t chunks = (int32_t)((e->es.noise_n + NOISE_CHUNK - 1) / NOISE_CHUNK);
    frl_pool_run(e->rt->pool, chunks, fill_noise, e, NULL);
}

void frl_es_free(frl_evo *e)
{
    frl_es *s = &e->es;
    const frl_allocator *al = &e->rt->alloc;
    frl_free(al, s->noise);
    frl_free(al, s->m);
    frl_free(al, s->v);
    frl_free(al, s->grad);
    frl_free(al, s->offset);
    frl_free(al, s->weight);
    frl_free(al, s->order);
}

/* Each pair's slice of the table for this generation. */
static void draw_offsets(frl_evo *e)
{
    frl_rng r = frl_rng_stream(e->seed ^ OFFSET_SALT, (uint64_t)e->generation);
    uint64_t span = (uint64_t)(e->es.noise_n - e->n + 1);
    for (int32_t i = 0; i < e->P / 2; i++)
        e->es.offset[i] = (int64_t)(frl_rng_next(&r) % span);
}

typedef struct es_job {
    frl_evo *e;
    float *params;
} es_job;

static int ask_pair(void *user, int32_t i, int32_t thread)
{
    (void)thread;
    es_job *j = user;
    frl_evo *e = j->e;
    const float *eps = e->es.noise + e->es.offset[i];
    float *plus = j->params + (size_t)(2 * i) * (size_t)e->n, *minus = plus + e->n;
    float sigma = (float)e->es.sigma;
    for (int64_t k = 0; k < e->n; k++) {
        float d = sigma * eps[k];
        plus[k] = e->theta[k] + d;
        minus[k] = e->theta[k] - d;
    }
    return 0;
}

void frl_es_ask(frl_evo *e, float *params)
{
    draw_offsets(e);
    es_job j = {e, params};
    frl_pool_run(e->rt->pool, e->P / 2, ask_pair, &j, NULL);
}

/* g[k] for k in a chunk: the pairs in order, so the sum does not depend on threads. */
static int grad_chunk(void *user, int32_t task, int32_t thread)
{
    (void)thread;
    frl_evo *e = user;
    frl_es *s = &e->es;
    int64_t lo = (int64_t)task * GRAD_CHUNK, hi = lo + GRAD_CHUNK < e->n ? lo + GRAD_CHUNK : e->n;
    for (int64_t k = lo; k < hi; k++)
        s->grad[k] = 0;
    for (int32_t i = 0; i < e->P / 2; i++) {
        double c = s->weight[2 * i] - s->weight[2 * i + 1];
        const float *eps = s->noise + s->offset[i];
        for (int64_t k = lo; k < hi; k++)
            s->grad[k] += c * eps[k];
    }
    for (int64_t k = lo; k < hi; k++)
        s->grad[k] /= e->P;
    return 0;
}

/* Adam (beta1 0.9, beta2 0.999, eps 1e-8, OpenAI-ES's) minimising -g + wd theta: the
 * new m, v and theta of element k, as the floats they are kept in. */
static void adam_element(const frl_evo *e, double a, int64_t k, float *m, float *v, float *theta)
{
    const frl_es *s = &e->es;
    double d = -s->grad[k] + s->weight_decay * e->theta[k];
    double mk = 0.9 * s->m[k] + 0.1 * d, vk = 0.999 * s->v[k] + 0.001 * d * d;
    *m = (float)mk;
    *v = (float)vk;
    *theta = (float)(e->theta[k] - a * mk / (sqrt(vk) + 1e-8));
}

/* The step, or FRL_ERR_NONFINITE with nothing changed when a value would leave float's
 * range (a centre of 1e30s, a diverged run): the first pass checks, the second writes
 * the same arithmetic, so a refused generation keeps the optimiser as it was. */
static frl_status adam_step(frl_evo *e)
{
    frl_es *s = &e->es;
    int64_t t = s->adam_t + 1;
    double a = s->lr * sqrt(1.0 - pow(0.999, (double)t)) / (1.0 - pow(0.9, (double)t));
    float m, v, theta;
    for (int64_t k = 0; k < e->n; k++) {
        adam_element(e, a, k, &m, &v, &theta);
        if (!isfinite(m) || !isfinite(v) || !isfinite(theta))
            return frl_fail(e->err, FRL_ERR_NONFINITE, "frl_evo_tell: ES's update of parameter "
                            "%lld is not finite (the centre %g, its gradient %g): the run "
                            "diverged; the optimiser is unchanged", (long long)k,
                            (double)e->theta[k], s->grad[k]);
    }
    for (int64_t k = 0; k < e->n; k++)
        adam_element(e, a, k, &s->m[k], &s->v[k], &e->theta[k]);
    s->adam_t = t;
    return FRL_OK;
}

frl_status frl_es_tell(frl_evo *e, const double *fitness)
{
    frl_es *s = &e->es;
    frl_evo_centred_ranks(fitness, e->P, e->rank, s->order, s->weight);
    int32_t chunks = (int32_t)((e->n + GRAD_CHUNK - 1) / GRAD_CHUNK);
    frl_pool_run(e->rt->pool, chunks, grad_chunk, e, NULL);
    return adam_step(e);
}

void frl_es_sections(const frl_evo *e, frl_section *sec, int32_t *n)
{
    frl_section_add_finite(sec, n, "es.m", FRL_DTYPE_F32, (uint64_t)e->n, e->es.m);
    frl_section_add_finite(sec, n, "es.v", FRL_DTYPE_F32, (uint64_t)e->n, e->es.v);
    frl_section_add(sec, n, "es.adam_t", FRL_DTYPE_I64, 1, &e->es.adam_t);
    /* the table the saved noise offsets index (es.sigma, es.lr and es.weight_decay may
     * change on a resume: they act from the next generation) */
    frl_section_add(sec, n, "es.noise_floats", FRL_DTYPE_I64, 1, &e->es.noise_n);
}

frl_status frl_es_restore(frl_evo *e, const frl_container *c, const float *theta, char *err)
{
    const frl_section *m = frl_container_find(c, "es.m", FRL_DTYPE_F32, e->n, err);
    const frl_section *v = m ? frl_container_find(c, "es.v", FRL_DTYPE_F32, e->n, err) : NULL;
    const frl_section *t = v ? frl_container_find(c, "es.adam_t", FRL_DTYPE_I64, 1, err) : NULL;
    const frl_section *nf =
        t ? frl_container_find(c, "es.noise_floats", FRL_DTYPE_I64, 1, err) : NULL;
    if (!nf)
        return FRL_ERR_FORMAT;
    int64_t noise;
    memcpy(&noise, nf->data, sizeof noise);
    if (noise != e->es.noise_n)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "the run was saved with "
                        "es.noise_floats=%lld and this optimiser has %lld (its members are "
                        "slices of that table: set es.noise_floats as saved)", (long long)noise,
                        (long long)e->es.noise_n);
    int64_t steps;
    memcpy(&steps, t->data, sizeof steps);
    /* As nn's frl_adam_moments_valid (ES keeps an Adam of its own, and evo/ does not
     * depend on nn/): finite moments, second ones >= 0. Adam's bias correction raises
     * beta to the step count: no run takes 2^53 steps. */
    const float *mv = m->data, *vv = v->data;
    int ok = steps >= 0 && steps <= ((int64_t)1 << 53);
    for (int64_t i = 0; i < e->n; i++)
        ok &= isfinite(mv[i]) && isfinite(vv[i]) && vv[i] >= 0;
    if (!ok)
        return frl_fail(err, FRL_ERR_FORMAT, "es.m, es.v or es.adam_t holds a value out of "
                        "range");
    memcpy(e->theta, theta, sizeof(float) * (size_t)e->n);
    memcpy(e->es.m, m->data, sizeof(float) * (size_t)e->n);
    memcpy(e->es.v, v->data, sizeof(float) * (size_t)e->n);
    memcpy(&e->es.adam_t, t->data, sizeof(int64_t));
    return FRL_OK;
}
