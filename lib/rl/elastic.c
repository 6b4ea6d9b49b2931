/* Elastic policies: the shape, gathering a sub-policy's parameters, scattering its
 * gradient back, reordering units by importance, and cutting a plain policy out. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/init.h"
#include "rl/elastic.h"

/* ---- shape ---- */

static frl_status check_policy(const frl_policy *p, char *err)
{
    const char *why = NULL;
    if (p->towers)
        why = "a recurrent core (policy.core)";
    else if (p->cnn.layers)
        why = "a convolutional encoder (policy.encoder)";
    else if (p->head != FRL_POLICY_HEAD_ACTOR_CRITIC)
        why = "a Q-head (policy.head)";
    else if (p->shared)
        why = "a shared trunk (policy.shared=true)";
    else if (p->obs_n)
        why = "discrete observations";
    else if (p->actor.layers < 2)
        why = "no hidden layer (policy.hidden is empty)";
    if (why)
        return frl_fail(err, FRL_ERR_UNSUPPORTED,
                        "elastic policies (elastic.widths) are MLP actor-critics with separate "
                        "actor and critic networks; this policy has %s", why);
    return FRL_OK;
}

static int cmp_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The choice set: elastic.widths sorted, duplicates dropped. */
static frl_status read_choices(frl_elastic *e, const frl_config *cfg, char *err)
{
    frl_int_list w = frl_cfg_list(cfg, FRL_KEY_ELASTIC_WIDTHS);
    if (w.n < 1 || w.n > FRL_ELASTIC_MAX_CHOICES)
        return frl_fail(err, FRL_ERR_RANGE, "elastic.widths: give 1 to %d widths, got %d",
                        FRL_ELASTIC_MAX_CHOICES, (int)w.n);
    int32_t v[FRL_ELASTIC_MAX_CHOICES];
    for (int32_t i = 0; i < w.n; i++)
        v[i] = (int32_t)w.v[i];
    qsort(v, (size_t)w.n, sizeof v[0], cmp_int32);
    e->n_choices = 0;
    for (int32_t i = 0; i < w.n; i++)
        if (e->n_choices == 0 || v[i] != e->choices[e->n_choices - 1])
            e->choices[e->n_choices++] = v[i];
    /* Each layer takes the choices below its width: one narrower than the narrowest
     * choice could take none, so the choice set was meant for wider layers. */
    for (int32_t i = 0; i < e->depth; i++)
        if (e->choices[0] > e->hidden[i])
            return frl_fail(err, FRL_ERR_RANGE,
                            "elastic.widths: the narrowest choice, %d, is wider than hidden "
                            "layer %d (%d units), so no choice fits that layer: give a width "
                            "of at most %d units, or widen the layer (policy.hidden)",
                            (int)e->choices[0], (int)i, (int)e->hidden[i], (int)e->hidden[i]);
    return FRL_OK;
}

static void layout_heads(frl_elastic *e)
{
    size_t off = 0;
    for (int32_t n = 0; n < 2; n++) {
        int32_t out = n == 0 ? e->out_w : 1;
        for (int32_t d = 1; d < e->depth; d++) {
            e->head_w[n][d] = off;
            off += (size_t)e->hidden[d - 1] * (size_t)out;
            e->head_b[n][d] = off;
            off += (size_t)out;
        }
    }
    e->num_heads = off;
}

frl_status frl_elastic_init(frl_elastic *e, const frl_policy *p, const frl_config *cfg,
                            char *err)
{
    memset(e, 0, sizeof *e);
    frl_status st = check_policy(p, err);
    if (st != FRL_OK)
        return st;
    e->depth = p->actor.layers - 1;
    for (int32_t i = 0; i < e->depth; i++)
        e->hidden[i] = p->actor.width[i + 1];
    e->in_w = p->in_w;
    e->out_w = p->out_w;
    e->act = p->actor.act;
    e->log_std = !p->discrete;
    if ((st = read_choices(e, cfg, err)) != FRL_OK)
        return st;
    layout_heads(e);
    return FRL_OK;
}

int32_t frl_elastic_layer_choices(const frl_elastic *e, int32_t layer, int32_t *out)
{
    int32_t n = 0;
    for (int32_t c = 0; c < e->n_choices; c++)
        if (e->choices[c] < e->hidden[layer])
            out[n++] = e->choices[c];
    out[n++] = e->hidden[layer];
    return n;
}

size_t frl_elastic_init_work(const frl_elastic *e)
{
    size_t most = 1;
    for (int32_t i = 0; i < e->depth; i++) {
        size_t w = (size_t)e->hidden[i] * (size_t)(e->out_w > 1 ? e->out_w : 1);
        most = w > most ? w : most;
    }
    return most;
}

void frl_elastic_init_heads(const frl_elastic *e, float *heads, uint64_t seed, double *work)
{
    memset(heads, 0, sizeof(float) * e->num_heads);
    frl_rng r = frl_rng_stream(seed, 0x656c617374696300ULL);
    for (int32_t n = 0; n < 2; n++)
        for (int32_t d = 1; d < e->depth; d++)
            frl_init_orthogonal(heads + e->head_w[n][d], e->hidden[d - 1], n == 0 ? e->out_w : 1,
                                n == 0 ? 0.01 : 1.0, &r, work);
}

/* ---- architectures ---- */

void frl_elastic_full(const frl_elastic *e, frl_elastic_arch *a)
{
    memset(a, 0, sizeof *a);
    a->depth = e->depth;
    for (int32_t i = 0; i < e->depth; i++)
        a->width[i] = e->hidden[i];
}

frl_status frl_elastic_check(const frl_elastic *e, const frl_elastic_arch *a, char *err)
{
    if (a->depth < 1 || a->depth > e->depth)
        return frl_fail(err, FRL_ERR_RANGE,
                        "elastic architecture: depth %d is not one of 1..%d (the policy's "
                        "hidden layers)", (int)a->depth, (int)e->depth);
    for (int32_t i = 0; i < a->depth; i++) {
        int32_t c[FRL_ELASTIC_MAX_CHOICES + 1];
        int32_t n = frl_elastic_layer_choices(e, i, c), ok = 0;
        for (int32_t j = 0; j < n; j++)
            ok |= c[j] == a->width[i];
        if (!ok) {
            char list[160];
            size_t at = 0;
            for (int32_t j = 0; j < n && at < sizeof list; j++)
                at += (size_t)snprintf(list + at, sizeof list - at, "%s%d", j ? "," : "",
                                       (int)c[j]);
            return frl_fail(err, FRL_ERR_RANGE,
                            "elastic architecture: width %d for hidden layer %d is not a "
                            "choice (layer %d takes %s)", (int)a->width[i], (int)i, (int)i,
                            list);
        }
    }
    return FRL_OK;
}

void frl_elastic_arch_text(const frl_elastic_arch *a, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = 0;
    for (int32_t i = 0; i < a->depth && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%d", i ? "," : "", (int)a->width[i]);
}

frl_status frl_elastic_arch_scan(const char *text, frl_elastic_arch *a, char *err)
{
    memset(a, 0, sizeof *a);
    for (const char *s = text;; s++) {
        /* Each element is digits: "", "8," and "8,,8" name no width where one is due. */
        char *end = NULL;
        long v = *s >= '0' && *s <= '9' ? strtol(s, &end, 10) : 0;
        if (!end || (*end && *end != ',') || a->depth >= FRL_MLP_MAX_LAYERS - 1 ||
            v < 1 || v > 1 << 20)
            return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                            "elastic architecture \"%s\": write the kept widths, one per "
                            "kept hidden layer, e.g. \"32,16\"", text);
        a->width[a->depth++] = (int32_t)v;
        if (!*end)
            return FRL_OK;
        s = end; /* the comma; the next element follows it */
    }
}

frl_status frl_elastic_arch_parse(const frl_elastic *e, const char *text, frl_elastic_arch *a,
                                  char *err)
{
    frl_status st = frl_elastic_arch_scan(text, a, err);
    return st != FRL_OK ? st : frl_elastic_check(e, a, err);
}

int64_t frl_elastic_count_depth(const frl_elastic *e, int32_t d)
{
    int64_t n = 1;
    int32_t c[FRL_ELASTIC_MAX_CHOICES + 1];
    for (int32_t i = 0; i < d; i++)
        n *= frl_elastic_layer_choices(e, i, c);
    return n;
}

int64_t frl_elastic_count(const frl_elastic *e)
{
    int64_t n = 0;
    for (int32_t d = 1; d <= e->depth; d++)
        n += frl_elastic_count_depth(e, d);
    return n;
}

void frl_elastic_nth(const frl_elastic *e, int64_t i, frl_elastic_arch *a)
{
    memset(a, 0, sizeof *a);
    int32_t d = 1;
    while (d < e->depth && i >= frl_elastic_count_depth(e, d))
        i -= frl_elastic_count_depth(e, d++);
    a->depth = d;
    for (int32_t l = 0; l < d; l++) {
        int32_t c[FRL_ELASTIC_MAX_CHOICES + 1];
        int32_t n = frl_elastic_layer_choices(e, l, c);
        a->width[l] = c[i % n];
        i /= n;
    }
}

size_t frl_elastic_sub_layout(const frl_elastic *e, const frl_elastic_arch *a, frl_mlp *actor,
                              frl_mlp *critic)
{
    frl_mlp_init(actor, e->in_w, a->width, a->depth, e->out_w, e->act, 0);
    frl_mlp_init(critic, e->in_w, a->width, a->depth, 1, e->act, actor->num_params);
    return actor->num_params + critic->num_params + (e->log_std ? (size_t)e->out_w : 0);
}

/* ---- gather and scatter ---- */

/* The leading rows x cols of a [src_rows x src_cols] matrix to or from a dense one:
 * dir 0 copies src into dst, dir 1 adds dst into src (the gradient's way back). */
static void move_block(float *big, int32_t big_cols, float *small, int32_t rows, int32_t cols,
                       int dir)
{
    for (int32_t r = 0; r < rows; r++) {
        float *b = big + (size_t)r * (size_t)big_cols, *s = small + (size_t)r * (size_t)cols;
        if (dir == 0)
            memcpy(s, b, sizeof(float) * (size_t)cols);
        else
            for (int32_t c = 0; c < cols; c++)
                b[c] += s[c];
    }
}

/* One network's layers between the full vector (and head block) and the sub's. */
static void move_net(const frl_elastic *e, const frl_mlp *full, const frl_mlp *sub, int32_t net,
                     int32_t depth, float *big, float *heads, float *small, int dir)
{
    for (int32_t l = 0; l <= depth; l++) {
        int32_t rows = sub->width[l], cols = sub->width[l + 1];
        float *w, *b;
        int32_t big_cols;
        if (l < depth || depth == e->depth) {
            w = big + full->off_w[l];
            b = big + full->off_b[l];
            big_cols = full->width[l + 1];
        } else { /* the output of a shallower sub-policy: the head of its depth */
            w = heads + e->head_w[net][depth];
            b = heads + e->head_b[net][depth];
            big_cols = cols;
        }
        move_block(w, big_cols, small + sub->off_w[l], rows, cols, dir);
        move_block(b, cols, small + sub->off_b[l], 1, cols, dir);
    }
}

void frl_elastic_gather(const frl_elastic *e, const frl_policy *p, const frl_elastic_arch *a,
                        const float *full, const float *heads, float *sub)
{
    frl_mlp sa, sc;
    size_t n = frl_elastic_sub_layout(e, a, &sa, &sc);
    /* move_net reads through non-const pointers only in the scatter direction. */
    move_net(e, &p->actor, &sa, 0, a->depth, (float *)full, (float *)heads, sub, 0);
    move_net(e, &p->critic, &sc, 1, a->depth, (float *)full, (float *)heads, sub, 0);
    if (e->log_std)
        memcpy(sub + n - (size_t)e->out_w, full + p->log_std_off, sizeof(float) * (size_t)e->out_w);
}

void frl_elastic_scatter_add(const frl_elastic *e, const frl_policy *p,
                             const frl_elastic_arch *a, const float *g_sub, float *g_full,
                             float *g_heads)
{
    frl_mlp sa, sc;
    frl_elastic_sub_layout(e, a, &sa, &sc);
    move_net(e, &p->actor, &sa, 0, a->depth, g_full, g_heads, (float *)g_sub, 1);
    move_net(e, &p->critic, &sc, 1, a->depth, g_full, g_heads, (float *)g_sub, 1);
}

/* ---- reordering by importance ---- */

size_t frl_elastic_reorder_work(const frl_elastic *e)
{
    int32_t most = e->in_w > e->out_w ? e->in_w : e->out_w;
    for (int32_t i = 0; i < e->depth; i++)
        most = e->hidden[i] > most ? e->hidden[i] : most;
    /* a matrix's row of copies, the order (ints in floats' room) and the importances */
    return (size_t)most * 3;
}

/* Importance of hidden layer l's units: the L1 norm of the weights leaving each (the
 * next layer's rows, the next layer being the network's output after the last). */
static void importance(const frl_mlp *m, const float *params, int32_t l, float *imp)
{
    int32_t units = m->width[l + 1], next = m->width[l + 2];
    const float *w = params + m->off_w[l + 1];
    for (int32_t j = 0; j < units; j++) {
        double s = 0;
        for (int32_t c = 0; c < next; c++)
            s += fabs((double)w[(size_t)j * (size_t)next + (size_t)c]);
        imp[j] = (float)s;
    }
}

/* The order of units by importance, largest first; ties keep their order. */
static void rank_units(const float *imp, int32_t n, int32_t *order)
{
    for (int32_t i = 0; i < n; i++)
        order[i] = i;
    for (int32_t i = 1; i < n; i++) { /* insertion sort: stable, n is a layer's width */
        int32_t v = order[i], j = i;
        while (j > 0 && imp[order[j - 1]] < imp[v]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
}

/* Permute the columns of a [rows x cols] matrix: new column j = old column order[j]. */
static void permute_cols(float *m, int32_t rows, int32_t cols, const int32_t *order, float *tmp)
{
    for (int32_t r = 0; r < rows; r++) {
        float *row = m + (size_t)r * (size_t)cols;
        for (int32_t j = 0; j < cols; j++)
            tmp[j] = row[order[j]];
        memcpy(row, tmp, sizeof(float) * (size_t)cols);
    }
}

/* Permute the rows of a [rows x cols] matrix, one column at a time through tmp. */
static void permute_rows(float *m, int32_t rows, int32_t cols, const int32_t *order, float *tmp)
{
    for (int32_t c = 0; c < cols; c++) {
        for (int32_t j = 0; j < rows; j++)
            tmp[j] = m[(size_t)order[j] * (size_t)cols + (size_t)c];
        for (int32_t j = 0; j < rows; j++)
            m[(size_t)j * (size_t)cols + (size_t)c] = tmp[j];
    }
}

/* Apply hidden layer l's order to one vector laid out like the parameters (its own
 * units' weights and bias, the next layer's rows) and one like the head block (the
 * head of depth l + 1 reads layer l). */
static void permute_layer(const frl_elastic *e, const frl_mlp *m, int32_t net, int32_t l,
                          const int32_t *order, float *full, float *heads, float *tmp)
{
    int32_t in = m->width[l], units = m->width[l + 1], next = m->width[l + 2];
    if (full) {
        permute_cols(full + m->off_w[l], in, units, order, tmp);
        permute_cols(full + m->off_b[l], 1, units, order, tmp);
        permute_rows(full + m->off_w[l + 1], units, next, order, tmp);
    }
    if (heads && l + 1 < e->depth)
        permute_rows(heads + e->head_w[net][l + 1], units, net == 0 ? e->out_w : 1, order, tmp);
}

void frl_elastic_reorder(const frl_elastic *e, const frl_policy *p, float *full, float *heads,
                         float *const *full_like, int32_t n_full_like,
                         float *const *heads_like, int32_t n_heads_like, float *work)
{
    size_t most = frl_elastic_reorder_work(e) / 3;
    float *tmp = work, *imp = work + most;
    int32_t *order = (int32_t *)(void *)(work + 2 * most);
    for (int32_t net = 0; net < 2; net++) {
        const frl_mlp *m = net == 0 ? &p->actor : &p->critic;
        for (int32_t l = 0; l < e->depth; l++) {
            importance(m, full, l, imp);
            rank_units(imp, m->width[l + 1], order);
            permute_layer(e, m, net, l, order, full, heads, tmp);
            for (int32_t i = 0; i < n_full_like; i++)
                permute_layer(e, m, net, l, order, full_like[i], NULL, tmp);
            for (int32_t i = 0; i < n_heads_like; i++)
                permute_layer(e, m, net, l, order, NULL, heads_like[i], tmp);
        }
    }
}

/* ---- cutting ---- */

/* The thread's last message into err, copied first (frl_fail writes the same buffer). */
static frl_status fail_copied(char *err, frl_status st, const char *prefix)
{
    char msg[FRL_ERRMSG_SIZE];
    snprintf(msg, sizeof msg, "%s", frl_last_error());
    if (prefix)
        return frl_fail(err, st, "%s: %s", prefix, msg);
    return frl_fail(err, st, "%s", msg);
}

static frl_status cut_settings(const frl_policy *p, const frl_elastic_arch *a, frl_config **cfg,
                               char *err)
{
    frl_status st = frl_config_create(cfg, &p->rt->alloc);
    if (st != FRL_OK)
        return frl_fail(err, st, "cutting a sub-policy: out of memory");
    frl_config_overlay(*cfg, p->cfg);
    char hidden[128];
    frl_elastic_arch_text(a, hidden, sizeof hidden);
    if ((st = frl_config_set(*cfg, "policy.hidden", hidden)) != FRL_OK ||
        (st = frl_config_unset(*cfg, "elastic.widths")) != FRL_OK)
        return fail_copied(err, st, "cutting a sub-policy: settings");
    return FRL_OK;
}

static void copy_norm(frl_obsnorm *dst, const frl_obsnorm *src)
{
    size_t w = (size_t)src->width;
    dst->count = src->count;
    memcpy(dst->mean, src->mean, 2 * sizeof(double) * w);      /* mean, m2 */
    memcpy(dst->use_mean, src->use_mean, 2 * sizeof(float) * w); /* frozen copy */
}

frl_status frl_elastic_cut(const frl_elastic *e, const frl_policy *p, const float *heads,
                           const frl_elastic_arch *a, frl_policy **out, char *err)
{
    *out = NULL;
    frl_status st = frl_elastic_check(e, a, err);
    frl_config *cfg = NULL;
    if (st == FRL_OK)
        st = cut_settings(p, a, &cfg, err);
    frl_policy *c = NULL;
    if (st == FRL_OK &&
        (st = frl_policy_create_seeded(&c, p->rt, cfg, p->obs_space, p->act_space, p->seed,
                                       "cutting a sub-policy")) != FRL_OK)
        fail_copied(err, st, NULL);
    frl_config_destroy(cfg);
    if (st != FRL_OK)
        return st;
    frl_elastic_gather(e, p, a, p->params, heads, c->params);
    copy_norm(&c->norm, &p->norm);
    c->version = p->version;
    *out = c;
    return FRL_OK;
}
