/* Saving and loading policies through the checkpoint container. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "env/vec_env.h"
#include "rl/policy_io.h"

/* [kind, n, rank, shape..., low..., high...] as doubles (infinities survive); an image
 * has no bounds, its shape being height, width and channels; a mixed space (rank 0) is
 * followed by its image's values and then its box's. */
static size_t space_values(const frl_space *s)
{
    if (s->kind == FRL_SPACE_MIXED)
        return 3 + space_values(s->parts[0]) + space_values(s->parts[1]);
    return 3 + (size_t)s->rank + (s->kind == FRL_SPACE_BOX ? 2 * (size_t)s->n : 0);
}

static void encode_space(const frl_space *s, double *v)
{
    if (s->kind == FRL_SPACE_MIXED) {
        v[0] = s->kind;
        v[1] = (double)s->n;
        v[2] = 0;
        encode_space(s->parts[0], v + 3);
        encode_space(s->parts[1], v + 3 + space_values(s->parts[0]));
        return;
    }
    v[0] = s->kind;
    v[1] = (double)s->n;
    v[2] = s->rank;
    for (int32_t i = 0; i < s->rank; i++)
        v[3 + i] = (double)s->shape[i];
    for (int64_t i = 0; s->kind == FRL_SPACE_BOX && i < s->n; i++) {
        v[3 + s->rank + i] = s->low[i];
        v[3 + s->rank + s->n + i] = s->high[i];
    }
}

/* A Gaussian head's log-stds. Training does not clamp them, so the bound is set by where
 * acting stays finite, not by any task: within +-80, exp(log_std) is a normal float
 * (e^-80 > FLT_MIN) and times any normal draw (|z| < 8.6) stays far below FLT_MAX, while
 * from about 86 on the draws overflow to inf. A std of e^80 or e^-80 is no task's action
 * scale, so only a forged file or a long-diverged run is refused. */
#define LOG_STD_MAX 80.0

/* The first finite log-std outside the bound, or -1 (NaN and inf are the non-finite
 * checks' to report). */
static int32_t bad_log_std(const frl_policy *p, const float *params)
{
    for (int32_t i = 0; !p->discrete && i < p->out_w; i++) {
        float v = params[p->log_std_off + (size_t)i];
        if (isfinite(v) && fabsf(v) > LOG_STD_MAX)
            return i;
    }
    return -1;
}

int32_t frl_policy_bad_log_std(const frl_policy *p)
{
    return bad_log_std(p, p->params);
}

static frl_status check_log_std(const frl_policy *p, const float *params, char *err)
{
    int32_t i = bad_log_std(p, params);
    if (i < 0)
        return FRL_OK;
    return frl_fail(err, FRL_ERR_FORMAT, "policy.params: log_std[%d] is %g, outside [-%g, %g]",
                    (int)i, (double)params[p->log_std_off + (size_t)i], LOG_STD_MAX,
                    LOG_STD_MAX);
}

frl_status frl_policy_blob_make(const frl_policy *p, frl_policy_blob *b, frl_section *s,
                                int32_t *n, char *err)
{
    memset(b, 0, sizeof *b);
    /* Loading refuses these, so a drifted run must not replace a good file with one. */
    int32_t bad = bad_log_std(p, p->params);
    if (bad >= 0)
        return frl_fail(err, FRL_ERR_RANGE, "the policy's log_std[%d] is %g, outside [-%g, %g]: "
                        "loading would refuse the file, so nothing is written", (int)bad,
                        (double)p->params[p->log_std_off + (size_t)bad], LOG_STD_MAX,
                        LOG_STD_MAX);
    b->alloc = &p->rt->alloc;
    size_t w = (size_t)p->obs_w, no = space_values(p->obs_space), na = space_values(p->act_space);
    b->obs_space = frl_alloc(b->alloc, sizeof(double) * (no + na + 1 + 2 * w), 64);
    if (!b->obs_space)
        return frl_fail(err, FRL_ERR_NOMEM, "out of memory encoding the policy");
    b->act_space = b->obs_space + no;
    b->norm = b->act_space + na;
    frl_status st = frl_config_to_text(p->cfg, "policy.", b->settings, sizeof b->settings);
    if (st != FRL_OK)
        return frl_fail_msg(err, st, frl_last_error());
    encode_space(p->obs_space, b->obs_space);
    encode_space(p->act_space, b->act_space);
    b->norm[0] = p->norm.count;
    memcpy(b->norm + 1, p->norm.mean, sizeof(double) * w);
    memcpy(b->norm + 1 + w, p->norm.m2, sizeof(double) * w);
    b->ids[0] = p->seed;
    b->ids[1] = p->version;
    b->epsilon = atomic_load(&((frl_policy *)p)->epsilon);
    frl_section_add(s, n, "policy.settings", FRL_DTYPE_TEXT, strlen(b->settings), b->settings);
    frl_section_add(s, n, "policy.obs_space", FRL_DTYPE_F64, no, b->obs_space);
    frl_section_add(s, n, "policy.act_space", FRL_DTYPE_F64, na, b->act_space);
    /* Loading refuses non-finite weights and statistics, so the writer refuses them too:
     * a diverged policy must not replace a good file (the write is an atomic rename). */
    frl_section_add_finite(s, n, "policy.params", FRL_DTYPE_F32, p->num_params, p->params);
    frl_section_add_finite(s, n, "policy.obsnorm", FRL_DTYPE_F64, 1 + 2 * w, b->norm);
    frl_section_add(s, n, "policy.ids", FRL_DTYPE_U64, 2, b->ids);
    frl_section_add(s, n, "policy.epsilon", FRL_DTYPE_F64, 1, &b->epsilon);
    return FRL_OK;
}

void frl_policy_blob_free(frl_policy_blob *b)
{
    if (b->alloc)
        frl_free(b->alloc, b->obs_space);
    b->obs_space = NULL;
}

FRL_API frl_status frl_policy_save(const frl_policy *p, const char *path)
{
    if (!p || !path)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_policy_save: %s is NULL", p ? "path" : "policy");
    frl_policy_blob b;
    frl_section s[FRL_POLICY_SECTIONS + 1];
    int32_t n = 0;
    /* A save may run beside acts on other threads (both only read the policy): the
     * failure reaches the policy's message under its lock, not written directly. */
    frl_section_add(s, &n, "kind", FRL_DTYPE_TEXT, 6, "policy");
    frl_status st = frl_policy_blob_make(p, &b, s, &n, NULL);
    if (st == FRL_OK)
        st = frl_container_write(path, &p->rt->alloc, s, n, NULL);
    frl_policy_blob_free(&b);
    return st == FRL_OK ? st : frl_policy_keep_failure((frl_policy *)p, st);
}

/* ---- loading ---- */

/* A box's n lows then n highs, as doubles: each an infinity (an unbounded side) or a
 * value that is a finite float, low <= high, and no side empty (a low of +inf or a high
 * of -inf), so the float bounds the space keeps are the saved ones. */
static frl_status check_box_bounds(const char *name, const double *lh, int64_t n, char *err)
{
    for (int64_t i = 0; i < n; i++) {
        double lo = lh[i], hi = lh[n + i];
        int fits = (isinf(lo) || fabs(lo) <= FLT_MAX) && (isinf(hi) || fabs(hi) <= FLT_MAX);
        if (!fits || !(lo <= hi) || lo == INFINITY || hi == -INFINITY)
            return frl_fail(err, FRL_ERR_FORMAT, "section %s: element %lld of the box has "
                            "low %g and high %g (need finite floats or infinities, low <= "
                            "high, and neither low +inf nor high -inf)", name, (long long)i,
                            lo, hi);
    }
    return FRL_OK;
}

static frl_status decode_image(const char *name, const double *v, uint64_t count, int64_t n,
                               const frl_allocator *al, frl_space **out, char *err)
{
    int ok = count == 6 && v[2] == 3;
    for (int i = 3; ok && i < 6; i++)
        ok = v[i] >= 1 && v[i] <= (double)(1 << 24) && v[i] == floor(v[i]);
    if (!ok || v[3] * v[4] * v[5] != (double)n)
        return frl_fail(err, FRL_ERR_FORMAT, "section %s: malformed image space", name);
    frl_status st = frl_space_create_image(out, al, (int32_t)v[3], (int32_t)v[4], (int32_t)v[5]);
    if (st != FRL_OK) /* the allocator's failure is no corruption: NOMEM stays NOMEM */
        return frl_fail_msg(err, st == FRL_ERR_NOMEM ? st : FRL_ERR_FORMAT, frl_last_error());
    return FRL_OK;
}

static frl_status decode_values(const char *name, const double *v, uint64_t count,
                                const frl_allocator *al, frl_space **out, char *err);

/* A mixed space's image (always 6 values) and then its box; its n must be theirs. */
static frl_status decode_mixed(const char *name, const double *v, uint64_t count, int64_t n,
                               const frl_allocator *al, frl_space **out, char *err)
{
    frl_space *im = NULL, *box = NULL;
    if (count < 3 + 6 + 3 || v[2] != 0 || v[3] != FRL_SPACE_IMAGE || v[9] != FRL_SPACE_BOX)
        return frl_fail(err, FRL_ERR_FORMAT, "section %s: malformed mixed space", name);
    frl_status st = decode_values(name, v + 3, 6, al, &im, err);
    if (st == FRL_OK)
        st = decode_values(name, v + 9, count - 9, al, &box, err);
    if (st == FRL_OK && im->n + 4 * box->n != n)
        st = frl_fail(err, FRL_ERR_FORMAT, "section %s: malformed mixed space", name);
    if (st == FRL_OK && frl_space_create_mixed(out, al, im, box) != FRL_OK)
        st = frl_fail_msg(err, FRL_ERR_NOMEM, frl_last_error());
    frl_space_destroy(im);
    frl_space_destroy(box);
    return st;
}

frl_status frl_policy_space_decode(const frl_section *sec, const frl_allocator *al,
                                   frl_space **out, char *err)
{
    return decode_values(sec->name, sec->data, sec->count, al, out, err);
}

static frl_status decode_values(const char *name, const double *v, uint64_t count,
                                const frl_allocator *al, frl_space **out, char *err)
{
    if (count < 3 ||
        (v[0] != FRL_SPACE_DISCRETE && v[0] != FRL_SPACE_BOX && v[0] != FRL_SPACE_IMAGE &&
         v[0] != FRL_SPACE_MIXED) ||
        !(v[1] >= 1 && v[1] <= (double)(1 << 26)) || v[1] != floor(v[1]) ||
        !(v[2] >= 0 && v[2] <= 8) || v[2] != floor(v[2]))
        return frl_fail(err, FRL_ERR_FORMAT, "section %s: malformed space", name);
    int64_t n = (int64_t)v[1];
    int32_t rank = (int32_t)v[2];
    if (v[0] == FRL_SPACE_DISCRETE && n > (1 << 24))
        return frl_fail(err, FRL_ERR_FORMAT, "section %s: malformed space", name);
    if (v[0] == FRL_SPACE_DISCRETE) {
        frl_status st = frl_space_create_discrete(out, al, n); /* only NOMEM can fail */
        return st == FRL_OK ? st : frl_fail_msg(err, st, frl_last_error());
    }
    if (v[0] == FRL_SPACE_IMAGE)
        return decode_image(name, v, count, n, al, out, err);
    if (v[0] == FRL_SPACE_MIXED)
        return decode_mixed(name, v, count, n, al, out, err);
    if (count != 3 + (uint64_t)rank + 2 * (uint64_t)n || rank < 1)
        return frl_fail(err, FRL_ERR_FORMAT, "section %s: malformed box space", name);
    int64_t shape[8];
    double product = 1;
    for (int32_t i = 0; i < rank; i++) {
        if (!(v[3 + i] >= 1 && v[3 + i] <= 2147483648.0)) /* before the cast */
            return frl_fail(err, FRL_ERR_FORMAT, "section %s: malformed box space", name);
        shape[i] = (int64_t)v[3 + i];
        product *= v[3 + i];
    }
    /* The bounds below are n pairs; a shape of more elements would have
     * frl_space_create_box read past them. */
    if (product != (double)n)
        return frl_fail(err, FRL_ERR_FORMAT, "section %s: a box space of %lld elements with "
                        "a shape of %.0f", name, (long long)n, product);
    frl_status st = check_box_bounds(name, v + 3 + rank, n, err);
    if (st != FRL_OK)
        return st;
    float *lh = frl_alloc(al, sizeof(float) * 2 * (size_t)n, 64);
    if (!lh)
        return frl_fail(err, FRL_ERR_NOMEM, "out of memory decoding a space");
    for (int64_t i = 0; i < 2 * n; i++)
        lh[i] = (float)v[3 + rank + i];
    st = frl_space_create_box(out, al, rank, shape, lh, lh + n);
    frl_free(al, lh);
    if (st != FRL_OK) /* the allocator's failure is no corruption: NOMEM stays NOMEM */
        return frl_fail_msg(err, st == FRL_ERR_NOMEM ? st : FRL_ERR_FORMAT, frl_last_error());
    return FRL_OK;
}

static frl_status decode_settings(const frl_section *sec, const frl_allocator *al,
                                  frl_config **cfg, char *err)
{
    char text[FRL_SETTINGS_MAX];
    if (sec->count >= sizeof text)
        return frl_fail(err, FRL_ERR_FORMAT, "policy settings are too long");
    /* the parse would stop at a NUL and drop the keys after it, unsaid */
    if (memchr(sec->data, '\0', sec->count))
        return frl_fail(err, FRL_ERR_FORMAT, "policy.settings holds a NUL byte");
    memcpy(text, sec->data, sec->count);
    text[sec->count] = '\0';
    frl_status st = frl_config_create(cfg, al);
    if (st != FRL_OK) /* its message is the thread's: err is what the caller reports */
        return frl_fail_msg(err, st, frl_last_error());
    if ((st = frl_config_parse(*cfg, text)) != FRL_OK)
        return frl_fail(err, FRL_ERR_FORMAT, "policy settings: %s", frl_config_last_error(*cfg));
    return st;
}

typedef struct loaded {
    frl_config *cfg;
    frl_space *obs, *act;
} loaded;

static void loaded_free(loaded *l)
{
    frl_config_destroy(l->cfg);
    frl_space_destroy(l->obs);
    frl_space_destroy(l->act);
}

/* The normaliser's count, means and sums of squared deviations as saved: a count and
 * sums that are finite and not negative, finite means, and a frozen float copy that
 * acting can use (apply gives NaN with a mean of inf or a 1/std of 0). */
static frl_status check_obsnorm(const double *v, int32_t w, char *err)
{
    if (!isfinite(v[0]) || v[0] < 0)
        return frl_fail(err, FRL_ERR_FORMAT, "policy.obsnorm holds a count out of range (not "
                        "finite, or negative)");
    for (int32_t i = 0; i < w; i++)
        if (!isfinite(v[1 + i]) || !isfinite(v[1 + w + i]) || v[1 + w + i] < 0)
            return frl_fail(err, FRL_ERR_FORMAT, "policy.obsnorm holds a mean or sum of "
                            "squares out of range (not finite, or negative) at element %d",
                            (int)i);
    int32_t bad = frl_obsnorm_unfreezable(v[0], v + 1, v + 1 + w, w);
    if (bad >= 0)
        return frl_fail(err, FRL_ERR_FORMAT, "policy.obsnorm element %d: its mean %g or "
                        "variance does not fit a float (the mean must be within FLT_MAX, "
                        "1/std finite and above 0)", (int)bad, v[1 + bad]);
    return FRL_OK;
}

frl_status frl_policy_restore_state(frl_policy *p, const frl_container *c, char *err)
{
    const frl_section *par = frl_container_find(c, "policy.params", FRL_DTYPE_F32,
                                                (int64_t)p->num_params, err);
    const frl_section *nrm = frl_container_find(c, "policy.obsnorm", FRL_DTYPE_F64,
                                                1 + 2 * (int64_t)p->obs_w, err);
    const frl_section *ids = frl_container_find(c, "policy.ids", FRL_DTYPE_U64, 2, err);
    if (!par || !nrm || !ids)
        return FRL_ERR_FORMAT;
    if (frl_find_nonfinite(par->data, (int64_t)p->num_params) >= 0)
        return frl_fail(err, FRL_ERR_FORMAT, "policy.params holds a non-finite value");
    const double *nv = nrm->data;
    frl_status st = check_log_std(p, par->data, err);
    if (st == FRL_OK)
        st = check_obsnorm(nv, p->obs_w, err);
    if (st != FRL_OK)
        return st;
    memcpy(p->params, par->data, sizeof(float) * p->num_params);
    p->norm.count = nv[0];
    memcpy(p->norm.mean, nv + 1, sizeof(double) * (size_t)p->obs_w);
    memcpy(p->norm.m2, nv + 1 + p->obs_w, sizeof(double) * (size_t)p->obs_w);
    frl_obsnorm_freeze(&p->norm);
    p->seed = ((const uint64_t *)ids->data)[0];
    p->version = ((const uint64_t *)ids->data)[1];
    p->dev_version = ~(uint64_t)0; /* a device copy, if any, is stale */
    p->dev_norm_stale = 1;
    return FRL_OK;
}

static int has_section(const frl_container *c, const char *name)
{
    for (int32_t i = 0; i < frl_container_count(c); i++)
        if (strcmp(frl_container_at(c, i)->name, name) == 0)
            return 1;
    return 0;
}

/* The saved acting epsilon, if the file has one; older files act with policy.epsilon,
 * as the settings already made it. A trainer's resume leaves it to the learner (DQN
 * restores its schedule's from dqn.epsilon). */
static frl_status restore_epsilon(frl_policy *p, const frl_container *c, char *err)
{
    const frl_section *e = frl_container_find(c, "policy.epsilon", FRL_DTYPE_F64, 1, err);
    if (!e)
        return has_section(c, "policy.epsilon") ? FRL_ERR_FORMAT : FRL_OK;
    double eps = *(const double *)e->data;
    if (!(eps >= 0 && eps <= 1))
        return frl_fail(err, FRL_ERR_FORMAT, "policy.epsilon is %g, outside [0, 1]", eps);
    atomic_store(&p->epsilon, eps);
    return FRL_OK;
}

static frl_status restore_loaded(frl_policy *p, const frl_container *c, char *err)
{
    frl_status st = frl_policy_restore_state(p, c, err);
    return st == FRL_OK ? restore_epsilon(p, c, err) : st;
}

frl_status frl_policy_from_container(frl_policy **out, frl_runtime *rt,
                                     const frl_container *c, char *err)
{
    loaded l = {0};
    const frl_section *set = frl_container_find(c, "policy.settings", FRL_DTYPE_TEXT, -1, err);
    const frl_section *os = frl_container_find(c, "policy.obs_space", FRL_DTYPE_F64, -1, err);
    const frl_section *as = frl_container_find(c, "policy.act_space", FRL_DTYPE_F64, -1, err);
    const frl_section *ids = frl_container_find(c, "policy.ids", FRL_DTYPE_U64, 2, err);
    const frl_section *par = frl_container_find(c, "policy.params", FRL_DTYPE_F32, -1, err);
    if (!set || !os || !as || !ids || !par)
        return FRL_ERR_FORMAT;
    frl_status st = decode_settings(set, &rt->alloc, &l.cfg, err);
    if (st == FRL_OK)
        st = frl_policy_space_decode(os, &rt->alloc, &l.obs, err);
    if (st == FRL_OK)
        st = frl_policy_space_decode(as, &rt->alloc, &l.act, err);
    if (st == FRL_OK) {
        st = frl_policy_create_checked(out, rt, l.cfg, l.obs, l.act,
                                       ((const uint64_t *)ids->data)[0], (int64_t)par->count,
                                       "frl_policy_load");
        /* what the runtime cannot give (memory, a device, a space the device does not
         * take yet) is not the file's fault: its own status, not FRL_ERR_FORMAT */
        int runtime_side = st == FRL_ERR_NOMEM || st == FRL_ERR_UNSUPPORTED ||
                           st == FRL_ERR_DEVICE;
        if (st != FRL_OK)
            st = frl_fail_msg(err, runtime_side ? st : FRL_ERR_FORMAT, frl_last_error());
    }
    if (st == FRL_OK && (st = restore_loaded(*out, c, err)) != FRL_OK) {
        frl_policy_destroy(*out);
        *out = NULL;
    }
    loaded_free(&l);
    return st;
}

FRL_API frl_status frl_policy_load(frl_policy **out, frl_runtime *rt, const char *path)
{
    if (out)
        *out = NULL;
    if (!out || !rt || !path)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_policy_load: %s is NULL",
                        !out ? "out" : !rt ? "runtime" : "path");
    char err[FRL_ERRMSG_SIZE];
    frl_container *c;
    frl_status st = frl_container_read(&c, path, &rt->alloc, err);
    if (st != FRL_OK) /* the reader's message names the path, but not this call */
        return frl_fail(NULL, st, "frl_policy_load: %s", err);
    st = frl_policy_from_container(out, rt, c, err);
    frl_container_free(c);
    return st == FRL_OK ? st : frl_fail(NULL, st, "frl_policy_load: %s: %s", path, err);
}
