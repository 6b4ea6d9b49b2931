/* Progressive shrinking: the distillation phase after each PPO update (see the header). */
#include <math.h>
#include <string.h>

#include "algo/elastic_distill.h"
#include "core/rng.h"

/* One architecture's forward and backward over a minibatch, in buffers of its own. */
struct frl_elastic_task {
    frl_elastic_arch arch;
    float *sub, *g_sub;       /* its parameters and gradient, laid out as a plain policy */
    float *acts_a, *acts_c;   /* the actor's and the critic's stored activations */
    float *dy, *scratch;      /* backward buffers [M x widest] */
    double kl;                /* KL to the teacher summed over the shard's rows */
};

enum { STAGE_FULL, STAGE_DEPTH, STAGE_WIDTH };

/* Each architecture's minibatch is cut into this many row shards, each a task: the full
 * policy's pass costs far more than a narrow one's, and one task for it left the other
 * thread idle (2 threads: the distillation phase took about as long as PPO's update).
 * A constant, so the reduction order, and the bits, do not depend on the thread count. */
enum { SHARDS = 2 };

/* ---- allocation ---- */

static int alloc_task(frl_elastic_task *t, const frl_allocator *al, const frl_policy *p,
                      int32_t M)
{
    size_t widest = (size_t)(p->actor.max_width > p->critic.max_width ? p->actor.max_width
                                                                     : p->critic.max_width);
    t->sub = frl_alloc(al, sizeof(float) * p->num_params, 64);
    t->g_sub = frl_alloc(al, sizeof(float) * p->num_params, 64);
    t->acts_a = frl_alloc(al, sizeof(float) * (size_t)M * (size_t)p->actor.act_width, 64);
    t->acts_c = frl_alloc(al, sizeof(float) * (size_t)M * (size_t)p->critic.act_width, 64);
    t->dy = frl_alloc(al, sizeof(float) * (size_t)M * widest, 64);
    t->scratch = frl_alloc(al, sizeof(float) * (size_t)M * widest, 64);
    return t->sub && t->g_sub && t->acts_a && t->acts_c && t->dy && t->scratch;
}

static void free_task(frl_elastic_task *t, const frl_allocator *al)
{
    frl_free(al, t->sub);
    frl_free(al, t->g_sub);
    frl_free(al, t->acts_a);
    frl_free(al, t->acts_c);
    frl_free(al, t->dy);
    frl_free(al, t->scratch);
}

static int alloc_arrays(frl_elastic_learner *l, const frl_allocator *al)
{
    const frl_policy *p = l->ppo->p;
    size_t np = p->num_params, nh = l->e.num_heads ? l->e.num_heads : 1, N = (size_t)l->ppo->N;
    l->heads = frl_alloc(al, sizeof(float) * nh, 64);
    l->g_full = frl_alloc(al, sizeof(float) * np, 64);
    l->g_heads = frl_alloc(al, sizeof(float) * nh, 64);
    l->adam_full.m = frl_alloc(al, sizeof(float) * 2 * np, 64);
    l->adam_heads.m = frl_alloc(al, sizeof(float) * 2 * nh, 64);
    l->teacher_out = frl_alloc(al, sizeof(float) * N * (size_t)p->out_w, 64);
    l->teacher_value = frl_alloc(al, sizeof(float) * N, 64);
    l->obs = frl_alloc(al, sizeof(float) * (size_t)l->M * (size_t)p->obs_w, 64);
    l->xn = frl_alloc(al, sizeof(float) * (size_t)l->M * (size_t)p->in_w, 64);
    l->rows = frl_alloc(al, sizeof(int32_t) * N, 64);
    l->work = frl_alloc(al, sizeof(float) * frl_elastic_reorder_work(&l->e), 64);
    l->tasks = frl_alloc(al, sizeof(frl_elastic_task) * (size_t)l->n_archs * SHARDS, 64);
    l->teach_ws = frl_alloc(al, sizeof(float) * frl_policy_pass_floats(p, l->M, 0), 64);
    if (!l->heads || !l->g_full || !l->g_heads || !l->adam_full.m || !l->adam_heads.m ||
        !l->teacher_out || !l->teacher_value || !l->obs || !l->xn || !l->rows || !l->work ||
        !l->tasks || !l->teach_ws)
        return 0;
    memset(l->tasks, 0, sizeof(frl_elastic_task) * (size_t)l->n_archs * SHARDS);
    memset(l->adam_full.m, 0, sizeof(float) * 2 * np);
    memset(l->adam_heads.m, 0, sizeof(float) * 2 * nh);
    l->adam_full.v = l->adam_full.m + np;
    l->adam_heads.v = l->adam_heads.m + nh;
    for (int32_t i = 0; i < l->n_archs * SHARDS; i++)
        if (!alloc_task(&l->tasks[i], al, p, (l->M + SHARDS - 1) / SHARDS))
            return 0;
    return 1;
}

static void read_settings(frl_elastic_learner *l, const frl_config *cfg)
{
    l->subnets = (int32_t)frl_cfg_int(cfg, FRL_KEY_ELASTIC_SUBNETS);
    l->epochs = (int32_t)frl_cfg_int(cfg, FRL_KEY_ELASTIC_EPOCHS);
    l->minibatches = (int32_t)frl_cfg_int(cfg, FRL_KEY_ELASTIC_MINIBATCHES);
    if (l->minibatches == 0) /* minibatches of 64 rows: many small steps distil best */
        l->minibatches = l->ppo->N / 64 > 1 ? l->ppo->N / 64 : 1;
    l->full_fraction = frl_cfg_float(cfg, FRL_KEY_ELASTIC_FULL_FRACTION);
    l->depth_fraction = frl_cfg_float(cfg, FRL_KEY_ELASTIC_DEPTH_FRACTION);
    l->n_archs = l->subnets + 1;
    l->M = (l->ppo->N + l->minibatches - 1) / l->minibatches;
    frl_adam *a[2] = {&l->adam_full, &l->adam_heads};
    for (int32_t i = 0; i < 2; i++) {
        a[i]->beta1 = 0.9;
        a[i]->beta2 = 0.999;
        a[i]->eps = l->ppo->s.adam_eps;
    }
}

frl_status frl_elastic_learner_create(frl_elastic_learner **out, frl_ppo *ppo,
                                      const frl_config *cfg, char *err)
{
    const frl_allocator *al = &ppo->rt->alloc;
    *out = NULL;
    frl_elastic_learner *l = frl_alloc(al, sizeof *l, 64);
    if (!l)
        return frl_fail(err, FRL_ERR_NOMEM, "elastic learner: out of memory");
    memset(l, 0, sizeof *l);
    l->ppo = ppo;
    frl_status st = frl_elastic_init(&l->e, ppo->p, cfg, err);
    if (st == FRL_OK) {
        read_settings(l, cfg);
        if (!alloc_arrays(l, al))
            st = frl_fail(err, FRL_ERR_NOMEM, "elastic learner: out of memory");
    }
    double *work = st == FRL_OK ? frl_alloc(al, sizeof(double) * frl_elastic_init_work(&l->e), 64)
                                : NULL;
    if (st == FRL_OK && !work)
        st = frl_fail(err, FRL_ERR_NOMEM, "elastic learner: out of memory");
    if (st != FRL_OK) {
        frl_elastic_learner_destroy(l, al);
        return st;
    }
    frl_elastic_init_heads(&l->e, l->heads, ppo->p->seed, work);
    frl_free(al, work);
    *out = l;
    return FRL_OK;
}

void frl_elastic_learner_destroy(frl_elastic_learner *l, const frl_allocator *al)
{
    if (!l)
        return;
    for (int32_t i = 0; l->tasks && i < l->n_archs * SHARDS; i++)
        free_task(&l->tasks[i], al);
    float *arrays[] = {l->heads, l->g_full, l->g_heads, l->adam_full.m, l->adam_heads.m,
                       l->teacher_out, l->teacher_value, l->obs, l->xn, l->work, l->teach_ws};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        frl_free(al, arrays[i]);
    frl_free(al, l->rows);
    frl_free(al, l->tasks);
    frl_free(al, l);
}

/* ---- stages and architectures ---- */

static int32_t stage_of(const frl_elastic_learner *l, int64_t update, int64_t updates)
{
    double f = updates > 0 ? (double)update / (double)updates : 1.0;
    if (f < l->full_fraction)
        return STAGE_FULL;
    return f < l->full_fraction + l->depth_fraction ? STAGE_DEPTH : STAGE_WIDTH;
}

/* The narrowest architecture of a stage: depth 1, and in the width stage the smallest
 * choice. */
static void smallest(const frl_elastic *e, int32_t stage, frl_elastic_arch *a)
{
    frl_elastic_full(e, a);
    a->depth = 1;
    if (stage == STAGE_WIDTH) {
        int32_t c[FRL_ELASTIC_MAX_CHOICES + 1];
        frl_elastic_layer_choices(e, 0, c);
        a->width[0] = c[0];
    }
}

static void draw_arch(const frl_elastic *e, int32_t stage, frl_rng *r, frl_elastic_arch *a)
{
    frl_elastic_full(e, a);
    a->depth = 1 + (int32_t)(frl_rng_uniform(r) * (double)e->depth);
    for (int32_t i = 0; stage == STAGE_WIDTH && i < a->depth; i++) {
        int32_t c[FRL_ELASTIC_MAX_CHOICES + 1];
        int32_t n = frl_elastic_layer_choices(e, i, c);
        a->width[i] = c[(int32_t)(frl_rng_uniform(r) * (double)n)];
    }
}

/* Architecture 0 is the full policy (the anchor), 1 the stage's narrowest, the rest
 * drawn; each is set in all its shards' tasks. */
static void choose_archs(frl_elastic_learner *l, int32_t stage, frl_rng *r)
{
    for (int32_t i = 0; i < l->n_archs; i++) {
        frl_elastic_arch *a = &l->tasks[i * SHARDS].arch;
        if (i == 0)
            frl_elastic_full(&l->e, a);
        else if (i == 1)
            smallest(&l->e, stage, a);
        else
            draw_arch(&l->e, stage, r, a);
        for (int32_t k = 1; k < SHARDS; k++)
            l->tasks[i * SHARDS + k].arch = *a;
    }
}

/* ---- the phase ---- */

/* The full policy's outputs over the slot's rows, as it is after PPO's update. */
static void teach(frl_elastic_learner *l, const float *obs)
{
    const frl_policy *p = l->ppo->p;
    for (int32_t first = 0; first < l->ppo->N; first += l->M) {
        int32_t rows = l->ppo->N - first < l->M ? l->ppo->N - first : l->M;
        frl_pass f;
        frl_policy_pass_layout(p, rows, 0, l->teach_ws, &f);
        f.norm = &p->norm;
        frl_policy_forward(p, p->params, rows, obs + (size_t)first * (size_t)p->obs_w, &f);
        memcpy(l->teacher_out + (size_t)first * (size_t)p->out_w, f.out,
               sizeof(float) * (size_t)rows * (size_t)p->out_w);
        memcpy(l->teacher_value + first, f.value, sizeof(float) * (size_t)rows);
    }
}

/* dL/d(outputs) of one row's KL(teacher || student); returns the KL. */
static double kl_grad(const frl_policy *p, const float *t, const float *s, float *d, float scale)
{
    int32_t n = p->out_w;
    if (!p->discrete) { /* Gaussians sharing the log-stds: the means' squared distance */
        double kl = 0;
        for (int32_t j = 0; j < n; j++) {
            double inv_var = exp(-2.0 * (double)p->params[p->log_std_off + (size_t)j]);
            double diff = (double)s[j] - (double)t[j];
            kl += 0.5 * diff * diff * inv_var;
            d[j] = (float)(diff * inv_var) * scale;
        }
        return kl;
    }
    double mt = t[0], ms = s[0];
    for (int32_t j = 1; j < n; j++) {
        mt = t[j] > mt ? t[j] : mt;
        ms = s[j] > ms ? s[j] : ms;
    }
    double zt = 0, zs = 0;
    for (int32_t j = 0; j < n; j++) {
        zt += exp((double)t[j] - mt);
        zs += exp((double)s[j] - ms);
    }
    double kl = 0;
    for (int32_t j = 0; j < n; j++) {
        double lpt = (double)t[j] - mt - log(zt), lps = (double)s[j] - ms - log(zs);
        double pt = exp(lpt);
        kl += pt * (lpt - lps);
        d[j] = (float)((exp(lps) - pt) * scale);
    }
    return kl;
}

/* One shard of one architecture's rows: forward, the distillation gradient, backward
 * into its g_sub. */
static int distill_task(void *user, int32_t task, int32_t thread)
{
    (void)thread;
    frl_elastic_learner *l = user;
    frl_elastic_task *t = &l->tasks[task];
    const frl_policy *p = l->ppo->p;
    frl_mlp sa, sc;
    frl_elastic_sub_layout(&l->e, &t->arch, &sa, &sc);
    frl_elastic_gather(&l->e, p, &t->arch, p->params, l->heads, t->sub);
    int32_t part = task % SHARDS;
    int32_t first = l->mb_rows * part / SHARDS, rows = l->mb_rows * (part + 1) / SHARDS - first;
    const int32_t *mb = l->mb + first;
    const float *in = l->in + (size_t)first * (size_t)p->in_w;
    float scale = 1.0f / ((float)l->mb_rows * (float)l->n_archs);
    double kl = 0;
    float *out = rows > 0 ? frl_mlp_forward(&sa, p->k, t->sub, rows, in, t->acts_a) : NULL;
    for (int32_t r = 0; r < rows; r++) {
        size_t at = (size_t)mb[r] * (size_t)p->out_w, o = (size_t)r * (size_t)p->out_w;
        kl += kl_grad(p, l->teacher_out + at, out + o, t->dy + o, scale);
    }
    t->kl = kl;
    if (rows == 0) { /* a minibatch of one row: this shard adds nothing */
        memset(t->g_sub, 0, sizeof(float) * (sa.num_params + sc.num_params));
        return 0;
    }
    frl_mlp_backward(&sa, p->k, t->sub, NULL, t->g_sub, 0, rows, in, t->acts_a, t->dy,
                     t->scratch, NULL);
    float *v = frl_mlp_forward(&sc, p->k, t->sub, rows, in, t->acts_c);
    float vf = (float)l->ppo->s.vf_coef * scale;
    for (int32_t r = 0; r < rows; r++)
        t->dy[r] = vf * (v[r] - l->teacher_value[mb[r]]);
    frl_mlp_backward(&sc, p->k, t->sub, NULL, t->g_sub, 0, rows, in, t->acts_c, t->dy,
                     t->scratch, NULL);
    return 0;
}

/* The minibatch's rows gathered and normalised as acting saw them. */
static void gather_input(frl_elastic_learner *l, const float *obs)
{
    const frl_policy *p = l->ppo->p;
    size_t w = (size_t)p->obs_w;
    for (int32_t r = 0; r < l->mb_rows; r++)
        memcpy(l->obs + (size_t)r * w, obs + (size_t)l->mb[r] * w, sizeof(float) * w);
    l->in = frl_policy_input(p, &p->norm, l->mb_rows, l->obs, l->xn);
}

/* Adam over part of the vectors: elementwise, so the parts give the same bits as one
 * call; on two threads they halve a step that, at minibatches of 64 rows, was a third
 * of the phase's time. The last part takes the head block too. */
enum { ADAM_PARTS = 4 };

static int adam_task(void *user, int32_t part, int32_t thread)
{
    (void)thread;
    frl_elastic_learner *l = user;
    frl_policy *p = l->ppo->p;
    size_t n = p->num_params, lo = n * (size_t)part / ADAM_PARTS;
    size_t hi = n * (size_t)(part + 1) / ADAM_PARTS;
    frl_adam_update(&l->adam_full, p->k, p->params, l->g_full, lo, hi, l->step_lr,
                    l->step_scale);
    if (part == ADAM_PARTS - 1)
        frl_adam_update(&l->adam_heads, p->k, l->heads, l->g_heads, 0, l->e.num_heads,
                        l->step_lr, l->step_scale);
    return 0;
}

static void step(frl_elastic_learner *l, double lr)
{
    frl_policy *p = l->ppo->p;
    memset(l->g_full, 0, sizeof(float) * p->num_params);
    memset(l->g_heads, 0, sizeof(float) * l->e.num_heads);
    for (int32_t i = 0; i < l->n_archs * SHARDS; i++) /* in task order: the same bits on
                                                        * any pool */
        frl_elastic_scatter_add(&l->e, p, &l->tasks[i].arch, l->tasks[i].g_sub, l->g_full,
                                l->g_heads);
    double n1 = frl_grad_norm(p->k, l->g_full, p->num_params);
    double n2 = frl_grad_norm(p->k, l->g_heads, l->e.num_heads);
    float scale = frl_clip_scale(sqrt(n1 * n1 + n2 * n2), l->ppo->s.max_grad_norm);
    frl_adam_begin(&l->adam_full);
    frl_adam_begin(&l->adam_heads);
    l->step_lr = lr;
    l->step_scale = scale;
    int32_t failed = 0;
    frl_pool_run(l->ppo->rt->pool, ADAM_PARTS, adam_task, l, &failed);
}

/* The rows the PPO update trained on (autoreset rows excluded). */
static int32_t valid_rows(frl_elastic_learner *l)
{
    int32_t n = 0;
    for (int32_t i = 0; i < l->ppo->N; i++)
        if (l->ppo->valid[i])
            l->rows[n++] = i;
    return n;
}

static void shuffle(int32_t *v, int32_t n, frl_rng *r)
{
    for (int32_t i = n - 1; i > 0; i--) {
        int32_t j = (int32_t)(frl_rng_uniform(r) * (double)(i + 1));
        int32_t t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* Entering an elastic stage: units by importance, in the parameters and in both
 * optimisers' moments (PPO's and this phase's). */
static void begin_stage(frl_elastic_learner *l, int32_t stage)
{
    frl_ppo *ppo = l->ppo;
    float *const full_like[] = {ppo->adam.m, ppo->adam.v, l->adam_full.m, l->adam_full.v};
    float *const heads_like[] = {l->adam_heads.m, l->adam_heads.v};
    frl_elastic_reorder(&l->e, ppo->p, ppo->p->params, l->heads, full_like, 4, heads_like, 2,
                        l->work);
    static const char *names[] = {"full", "elastic depth", "elastic depth and width"};
    frl_log(ppo->rt, FRL_LOG_INFO, "elastic: the %s stage begins (units reordered by "
            "importance)", names[stage]);
    l->stage = stage;
}

frl_status frl_elastic_learner_learn(frl_elastic_learner *l, int32_t slot, int64_t update_index,
                                     int64_t num_updates, uint64_t seed, char *err)
{
    int32_t stage = stage_of(l, update_index, num_updates);
    if (stage == STAGE_FULL)
        return FRL_OK;
    if (stage > l->stage)
        begin_stage(l, stage);
    const float *obs = frl_ring_at(l->ppo->ring, slot, FRL_RING_OBSERVATIONS);
    int32_t n = valid_rows(l);
    if (n == 0) /* a rollout of autoreset rows only: nothing to distil */
        return FRL_OK;
    teach(l, obs);
    const frl_ppo_settings *s = &l->ppo->s;
    double lr = s->lr * (s->anneal_lr && num_updates > 0
                             ? 1.0 - (double)update_index / (double)num_updates : 1.0);
    frl_rng r = frl_rng_stream(seed, 0x6f66610000000000ULL + (uint64_t)update_index);
    for (int32_t ep = 0; ep < l->epochs; ep++) {
        shuffle(l->rows, n, &r);
        for (int32_t m = 0; m < l->minibatches; m++) {
            int32_t first = (int32_t)((int64_t)n * m / l->minibatches);
            int32_t last = (int32_t)((int64_t)n * (m + 1) / l->minibatches);
            if (last <= first)
                continue;
            l->mb = l->rows + first;
            l->mb_rows = last - first;
            gather_input(l, obs);
            choose_archs(l, stage, &r);
            int32_t failed = 0;
            frl_pool_run(l->ppo->rt->pool, l->n_archs * SHARDS, distill_task, l, &failed);
            step(l, lr);
        }
    }
    l->kl_full = l->kl_smallest = 0;
    for (int32_t k = 0; k < SHARDS; k++) {
        l->kl_full += l->tasks[k].kl / l->mb_rows;
        l->kl_smallest += l->tasks[SHARDS + k].kl / l->mb_rows;
    }
    return FRL_OK;
}

/* ---- checkpoints ---- */

void frl_elastic_learner_save(frl_elastic_learner *l, frl_section *s, int32_t *n)
{
    size_t np = l->ppo->p->num_params, nh = l->e.num_heads;
    l->saved[0] = l->stage;
    l->saved[1] = l->adam_full.t;
    frl_section_add_finite(s, n, "elastic.heads", FRL_DTYPE_F32, nh, l->heads);
    frl_section_add_finite(s, n, "elastic.adam", FRL_DTYPE_F32, 2 * np, l->adam_full.m);
    frl_section_add_finite(s, n, "elastic.adam_heads", FRL_DTYPE_F32, 2 * nh, l->adam_heads.m);
    frl_section_add(s, n, "elastic.state", FRL_DTYPE_I64, 2, l->saved);
}

frl_status frl_elastic_learner_load(frl_elastic_learner *l, const frl_container *c, char *err)
{
    int64_t np = (int64_t)l->ppo->p->num_params, nh = (int64_t)l->e.num_heads;
    const frl_section *h = frl_container_find(c, "elastic.heads", FRL_DTYPE_F32, nh, err);
    const frl_section *a = h ? frl_container_find(c, "elastic.adam", FRL_DTYPE_F32, 2 * np, err)
                             : NULL;
    const frl_section *ah =
        a ? frl_container_find(c, "elastic.adam_heads", FRL_DTYPE_F32, 2 * nh, err) : NULL;
    const frl_section *st = ah ? frl_container_find(c, "elastic.state", FRL_DTYPE_I64, 2, err)
                               : NULL;
    if (!st)
        return FRL_ERR_FORMAT;
    const int64_t *v = st->data;
    /* No run takes 2^53 steps (the trainer's counters are held to it too); a forged
     * count beyond would overflow Adam's step arithmetic at the first update. */
    if (v[0] < STAGE_FULL || v[0] > STAGE_WIDTH || v[1] < 0 || v[1] > ((int64_t)1 << 53))
        return frl_fail(err, FRL_ERR_FORMAT, "elastic.state: stage %lld, step %lld out of range",
                        (long long)v[0], (long long)v[1]);
    /* The heads are parameters like policy.params, which loading refuses non-finite:
     * a NaN head cut into a sub-policy would act NaN at that depth. */
    for (int64_t i = 0; i < nh; i++)
        if (!isfinite(((const float *)h->data)[i]))
            return frl_fail(err, FRL_ERR_FORMAT, "elastic.heads holds a non-finite value "
                            "(at %lld)", (long long)i);
    if (!frl_adam_moments_valid(a->data, (const float *)a->data + np, (size_t)np) ||
        !frl_adam_moments_valid(ah->data, (const float *)ah->data + nh, (size_t)nh))
        return frl_fail(err, FRL_ERR_FORMAT, "elastic.adam or elastic.adam_heads holds a moment "
                        "out of range");
    memcpy(l->heads, h->data, sizeof(float) * (size_t)nh);
    memcpy(l->adam_full.m, a->data, sizeof(float) * 2 * (size_t)np);
    memcpy(l->adam_heads.m, ah->data, sizeof(float) * 2 * (size_t)nh);
    l->stage = (int32_t)v[0];
    l->adam_full.t = l->adam_heads.t = v[1];
    return FRL_OK;
}
