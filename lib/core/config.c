/* frl_config: typed, validated settings over the fixed key table. */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/c_numeric.h"
#include "core/config.h"

struct frl_config {
    frl_allocator alloc;
    uint8_t set[FRL_KEY_COUNT];
    frl_value values[FRL_KEY_COUNT];
    char err[FRL_ERRMSG_SIZE];
};

int32_t frl_key_find(const char *key)
{
    for (int32_t i = 0; i < FRL_KEY_COUNT; i++)
        if (strcmp(frl_key_defs[i].name, key) == 0)
            return i;
    return -1;
}

/* Append name to the ", "-separated list in buf, or " ..." once it would not fit. */
static void list_add(char *buf, size_t size, const char *name)
{
    size_t used = strlen(buf);
    if (used >= 4 && strcmp(buf + used - 4, " ...") == 0)
        return;
    if (used + strlen(name) + 6 >= size) {
        snprintf(buf + used, size - used, " ...");
        return;
    }
    snprintf(buf + used, size - used, "%s%s", used ? ", " : "", name);
}

/* The keys sharing key's namespace ("runtime."), or else the namespaces themselves. */
static void list_similar_keys(const char *key, char *buf, size_t size)
{
    const char *dot = strchr(key, '.');
    size_t prefix = dot ? (size_t)(dot - key) + 1 : 0;
    buf[0] = '\0';
    for (int32_t i = 0; prefix && i < FRL_KEY_COUNT; i++)
        if (strncmp(frl_key_defs[i].name, key, prefix) == 0)
            list_add(buf, size, frl_key_defs[i].name);
    if (buf[0])
        return;
    for (int32_t i = 0; i < FRL_KEY_COUNT; i++) {
        const char *name = frl_key_defs[i].name;
        size_t ns = strcspn(name, ".");
        if (i > 0 && strncmp(name, frl_key_defs[i - 1].name, ns + 1) == 0)
            continue; /* a namespace's keys are one run: one entry per namespace */
        char space[64];
        snprintf(space, sizeof space, "%.*s.*", (int)ns, name);
        list_add(buf, size, space);
    }
}

/* The keys whose last component is key's ("threads" -> "runtime.threads"; "lr" -> "es.lr
 * or train.lr": all of them, since the first alone sent a PPO user to ES's) into buf;
 * 0 if there are none. */
static int same_leaf(const char *key, char *buf, size_t size)
{
    const char *leaf = strrchr(key, '.'), *hits[FRL_KEY_COUNT];
    leaf = leaf ? leaf + 1 : key;
    int n = 0;
    for (int32_t i = 0; i < FRL_KEY_COUNT; i++) {
        const char *dot = strrchr(frl_key_defs[i].name, '.');
        if (dot && strcmp(dot + 1, leaf) == 0)
            hits[n++] = frl_key_defs[i].name;
    }
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s%s", i == 0 ? "" : i + 1 < n ? ", " : " or ",
                 hits[i]);
    }
    return n;
}

/* a's characters appear in b in order ("lr" in "learning_rate"). */
static int is_subsequence(const char *a, const char *b)
{
    for (; *a && *b; b++)
        if (*a == *b)
            a++;
    return *a == '\0';
}

/* A key of key's namespace whose last component abbreviates key's or is abbreviated by
 * it ("train.learning_rate" -> "train.lr", "train.ent" -> "train.ent_coef"), the closest
 * in length; or NULL. */
static const char *abbreviation_of(const char *key)
{
    const char *dot = strchr(key, '.'), *best = NULL;
    if (!dot || strlen(dot + 1) < 2)
        return NULL;
    size_t ns = (size_t)(dot - key) + 1, leaf_len = strlen(dot + 1), best_gap = (size_t)-1;
    for (int32_t i = 0; i < FRL_KEY_COUNT; i++) {
        const char *name = frl_key_defs[i].name;
        if (strncmp(name, key, ns) != 0 || strchr(name + ns, '.'))
            continue;
        const char *leaf = name + ns;
        size_t len = strlen(leaf), gap = len > leaf_len ? len - leaf_len : leaf_len - len;
        if ((is_subsequence(leaf, dot + 1) || is_subsequence(dot + 1, leaf)) && gap < best_gap) {
            best = name;
            best_gap = gap;
        }
    }
    return best;
}

static frl_status unknown_key(char *err, const char *key)
{
    char guesses[160];
    const char *guess = same_leaf(key, guesses, sizeof guesses) ? guesses : abbreviation_of(key);
    if (guess)
        return frl_fail(err, FRL_ERR_UNKNOWN_NAME, "unknown config key '%s' (did you mean %s?)",
                        key, guess);
    char names[160];
    list_similar_keys(key, names, sizeof names);
    return frl_fail(err, FRL_ERR_UNKNOWN_NAME,
                    "unknown config key '%s' (valid keys: %s; `fastrl config --list` shows all)",
                    key, names);
}

static frl_status check_range(char *err, const frl_key_def *d, double v)
{
    if (isnan(v) || isinf(v))
        return frl_fail(err, FRL_ERR_NONFINITE, "config key '%s': value must be finite", d->name);
    if (v < d->min || v > d->max)
        return frl_fail(err, FRL_ERR_RANGE, "config key '%s': %.17g is outside [%.17g, %.17g]",
                        d->name, v, d->min, d->max);
    return FRL_OK;
}

/* who: the public call, named in the NULL key's message as its other arguments are */
static frl_status lookup(char *err, const char *who, const char *key, int32_t *index)
{
    if (!key)
        return frl_fail(err, FRL_ERR_NULL, "%s: key is NULL", who);
    *index = frl_key_find(key);
    return *index < 0 ? unknown_key(err, key) : FRL_OK;
}

FRL_API frl_status frl_config_create(frl_config **out, const frl_allocator *alloc)
{
    if (!out)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_config_create: out is NULL");
    *out = NULL;
    frl_allocator a;
    frl_status ast = frl_allocator_copy(&a, alloc, "frl_config_create");
    if (ast != FRL_OK)
        return ast;
    frl_config *cfg = frl_alloc(&a, sizeof *cfg, FRL_CACHE_LINE);
    if (!cfg)
        return frl_fail(NULL, FRL_ERR_NOMEM, "frl_config_create: out of memory (%zu bytes)",
                        sizeof *cfg);
    cfg->alloc = a;
    *out = cfg;
    return FRL_OK;
}

FRL_API void frl_config_destroy(frl_config *cfg)
{
    if (cfg) {
        frl_allocator a = cfg->alloc;
        frl_free(&a, cfg);
    }
}

FRL_API frl_status frl_config_clone(frl_config **out, const frl_config *cfg)
{
    if (out)
        *out = NULL;
    if (!out || !cfg)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_config_clone: %s is NULL", out ? "cfg" : "out");
    frl_status st = frl_config_create(out, &cfg->alloc);
    if (st == FRL_OK) {
        memcpy((*out)->set, cfg->set, sizeof cfg->set);
        memcpy((*out)->values, cfg->values, sizeof cfg->values);
    }
    return st;
}

/* v (and iv, exact, for an INT key) checked against key d's range, as the member of
 * d's type. */
static frl_status number_value(char *err, const frl_key_def *d, double v, int64_t iv,
                               frl_value *out)
{
    frl_status st = check_range(err, d, v);
    if (st != FRL_OK)
        return st;
    /* Integers are also checked exactly: a double cannot tell 2^53 from 2^53 + 1. */
    if (d->type == FRL_CONFIG_INT && (iv < (int64_t)d->min || iv > (int64_t)d->max))
        return frl_fail(err, FRL_ERR_RANGE, "config key '%s': %lld is outside [%.17g, %.17g]",
                        d->name, (long long)iv, d->min, d->max);
    if (d->type == FRL_CONFIG_INT)
        out->i = iv;
    else
        out->f = v;
    return FRL_OK;
}

/* Keep v as key k's value if st is FRL_OK; returns st. */
static frl_status store(frl_config *cfg, int32_t k, frl_status st, frl_value v)
{
    if (st == FRL_OK) {
        cfg->values[k] = v;
        cfg->set[k] = 1;
    }
    return st;
}

/* A FLOAT key whose default is "none" is unset until given a value (a CHOICE's "none",
 * as policy.core's, is one of its choices). */
static int is_optional(const frl_key_def *d)
{
    return d->type == FRL_CONFIG_FLOAT && strcmp(d->default_text, "none") == 0;
}

static frl_status type_error(char *err, const frl_key_def *d, const char *used)
{
    static const char *const names[] = {"?", "int", "float", "bool", "choice", "int list"};
    return frl_fail(err, FRL_ERR_TYPE, "config key '%s' is of type %s, not %s", d->name,
                    names[d->type], used);
}

FRL_API frl_status frl_config_set_int(frl_config *cfg, const char *key, int64_t value)
{
    if (!cfg)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_config_set_int: cfg is NULL");
    int32_t k;
    frl_status st = lookup(cfg->err, "frl_config_set_int", key, &k);
    if (st != FRL_OK)
        return st;
    const frl_key_def *d = &frl_key_defs[k];
    if (d->type != FRL_CONFIG_INT && d->type != FRL_CONFIG_FLOAT)
        return type_error(cfg->err, d, "int");
    frl_value v;
    return store(cfg, k, number_value(cfg->err, d, (double)value, value, &v), v);
}

frl_status frl_cfg_set_int(frl_config *cfg, frl_key k, int64_t value)
{
    assert((unsigned)k < FRL_KEY_COUNT && frl_key_defs[k].type == FRL_CONFIG_INT);
    frl_value v;
    frl_status st = number_value(cfg->err, &frl_key_defs[k], (double)value, value, &v);
    return store(cfg, (int32_t)k, st, v);
}

FRL_API frl_status frl_config_set_float(frl_config *cfg, const char *key, double value)
{
    if (!cfg)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_config_set_float: cfg is NULL");
    int32_t k;
    frl_status st = lookup(cfg->err, "frl_config_set_float", key, &k);
    if (st != FRL_OK)
        return st;
    const frl_key_def *d = &frl_key_defs[k];
    if (d->type != FRL_CONFIG_FLOAT)
        return type_error(cfg->err, d, "float");
    frl_value v;
    return store(cfg, k, number_value(cfg->err, d, value, 0, &v), v);
}

FRL_API frl_status frl_config_set_bool(frl_config *cfg, const char *key, int value)
{
    if (!cfg)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_config_set_bool: cfg is NULL");
    int32_t k;
    frl_status st = lookup(cfg->err, "frl_config_set_bool", key, &k);
    if (st != FRL_OK)
        return st;
    if (frl_key_defs[k].type != FRL_CONFIG_BOOL)
        return type_error(cfg->err, &frl_key_defs[k], "bool");
    cfg->values[k].i = value != 0;
    cfg->set[k] = 1;
    return FRL_OK;
}

static int parse_bool(const char *text, int64_t *out)
{
    static const char *const yes[] = {"true", "1", "yes", "on"};
    static const char *const no[] = {"false", "0", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(text, yes[i]) == 0)
            return *out = 1, 0;
        if (strcasecmp(text, no[i]) == 0)
            return *out = 0, 0;
    }
    return -1;
}

/* Index of text in "a|b|c", or -1. */
static int64_t choice_index(const char *choices, const char *text)
{
    size_t len = strlen(text);
    int64_t index = 0;
    for (const char *p = choices; *p; index++) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && strncmp(p, text, n) == 0)
            return index;
        p += n + (bar ? 1 : 0);
    }
    return -1;
}

/* m * 10^e, when it is a whole number that fits in a uint64, into *out; else -1. */
static int scale_exactly(uint64_t m, long e, uint64_t *out)
{
    for (; e < 0 && m != 0; e++) {
        if (m % 10 != 0)
            return -1; /* a fraction is left: 1.5, 4503599627370497.5 */
        m /= 10;
    }
    for (; e > 0 && m != 0; e--) {
        if (m > UINT64_MAX / 10)
            return -1;
        m *= 10;
    }
    *out = m;
    return 0;
}

/* An exponent ("e-3") at *p, if any, added to *e and read past. */
static int read_exponent(const char **p, long *e)
{
    if (**p != 'e' && **p != 'E')
        return 0;
    /* strtol would skip white space after the 'e': only a sign or a digit may follow */
    const char *x = *p + 1 + ((*p)[1] == '-' || (*p)[1] == '+');
    if (!isdigit((unsigned char)*x))
        return -1;
    char *end;
    errno = 0;
    long x10 = strtol(*p + 1, &end, 10);
    if (errno || x10 > 1000 || x10 < -1000)
        return -1; /* no whole number in int64's range but 0, which needs no exponent */
    *e += x10;
    *p = end;
    return 0;
}

/* The decimal real text ("1e6", "2048.0", "-1.5e3") as the whole number it is, read
 * digit by digit: strtod would round first, turning 4503599627370497.5 into a whole
 * number and 9007199254740993.0 into another one, and 1e-400 into 0. -1 when text is
 * not exactly a whole number in int64's range. */
static int exact_decimal(const char *text, int64_t *out)
{
    const char *p = text + (*text == '-' || *text == '+');
    uint64_t m = 0;
    long e = 0, zeros = 0; /* zeros: not yet multiplied in, so trailing ones cannot overflow */
    int digits = 0, dot = 0;
    for (; isdigit((unsigned char)*p) || (*p == '.' && !dot); p++) {
        if (*p == '.') {
            dot = 1;
            continue;
        }
        digits++;
        e -= dot;
        if (*p == '0') {
            zeros++;
        } else if (scale_exactly(m, zeros + 1, &m) != 0 || m > UINT64_MAX - 9) {
            return -1;
        } else {
            m += (uint64_t)(*p - '0');
            zeros = 0;
        }
    }
    uint64_t v;
    if (!digits || read_exponent(&p, &e) != 0 || *p || scale_exactly(m, e + zeros, &v) != 0)
        return -1;
    int neg = *text == '-';
    if (v > (uint64_t)INT64_MAX + (uint64_t)neg)
        return -1;
    *out = neg ? -(int64_t)(v - 1) - 1 : (int64_t)v; /* v may be 2^63 */
    return 0;
}

/* 1 when text is a decimal number (strtod reads all of it, and it holds no letter but an
 * exponent's e) past int64 in magnitude: out of every int key's range, which is what it
 * is said to be, rather than "not an integer"; -1 otherwise. */
static int beyond_int64(const char *text)
{
    if (strspn(text, "0123456789+-.eE") != strlen(text))
        return -1; /* "inf", "nan" and hex floats are not integers at all */
    char *end;
    double v = frl_strtod_c(text, &end); /* ERANGE's HUGE_VAL (1e400) is past it too */
    return end != text && *end == '\0' && fabs(v) >= 0x1p63 ? 1 : -1;
}

int frl_parse_int_text(const char *text, int64_t *out)
{
    if (!*text || isspace((unsigned char)text[0]))
        return -1;
    char *end;
    errno = 0;
    const char *digits = text + (*text == '-' || *text == '+');
    int hex = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
    long long v = strtoll(text, &end, hex ? 16 : 10);
    if (*end == '\0' && errno == 0) {
        *out = v;
        return 0;
    }
    if (hex)
        return *end == '\0' && errno == ERANGE ? 1 : -1;
    return exact_decimal(text, out) == 0 ? 0 : beyond_int64(text);
}

/* As frl_parse_int_text: 0, -1 (not an integer) or 1 (beyond int64). */
static int parse_int(const char *text, int64_t *out, double *as_double)
{
    int r = frl_parse_int_text(text, out);
    if (r == 0)
        *as_double = (double)*out;
    return r;
}

static frl_status range_error(char *err, const frl_key_def *d, const char *text)
{
    return frl_fail(err, FRL_ERR_RANGE, "config key '%s': %s is outside [%.17g, %.17g]",
                    d->name, text, d->min, d->max);
}

static frl_status parse_error(char *err, const frl_key_def *d, const char *text)
{
    /* by frl_config_type: INT, FLOAT, BOOL, CHOICE, INT_LIST */
    static const char *const what[] = {"?", "an integer", "a number", "true or false",
                                       "one of ", "a list of integers (\"64,64\")"};
    return frl_fail(err, FRL_ERR_PARSE, "config key '%s': cannot parse '%s' as %s%s", d->name,
                    text, what[d->type], d->type == FRL_CONFIG_CHOICE ? d->choices : "");
}

/* "64,64" (or "") into a list whose values are checked against the key's range. */
static frl_status parse_list(char *err, const frl_key_def *d, const char *text, frl_int_list *out)
{
    frl_int_list l = {0, {0}};
    for (const char *p = text; *p;) {
        /* room for what a scalar int key reads (leading zeros, a number beyond int64, which
         * is a range error there too); longer is no integer anyone means */
        char item[128];
        size_t len = strcspn(p, ",");
        if (len >= sizeof item)
            return frl_fail(err, FRL_ERR_PARSE, "config key '%s': an item of '%.40s...' is "
                            "longer than %d characters", d->name, p, (int)sizeof item - 1);
        if (len == 0 || l.n == FRL_LIST_MAX)
            return frl_fail(err, FRL_ERR_PARSE,
                            "config key '%s': '%s' is not a list of at most %d integers "
                            "separated by commas",
                            d->name, text, FRL_LIST_MAX);
        memcpy(item, p, len);
        item[len] = '\0';
        if (isspace((unsigned char)item[0]))
            return parse_error(err, d, text);
        int64_t iv;
        double dv;
        int r = parse_int(item, &iv, &dv);
        if (r > 0)
            return range_error(err, d, item);
        if (r != 0)
            return parse_error(err, d, text);
        if (iv < (int64_t)d->min || iv > (int64_t)d->max)
            return frl_fail(err, FRL_ERR_RANGE, "config key '%s': %lld is outside [%.17g, %.17g]",
                            d->name, (long long)iv, d->min, d->max);
        l.v[l.n++] = (int32_t)iv;
        p += len;
        if (*p == ',' && *++p == '\0')
            return parse_error(err, d, text);
    }
    *out = l;
    return FRL_OK;
}

/* text as a number for the INT or FLOAT key d. */
static frl_status parse_number(char *err, const frl_key_def *d, const char *text, frl_value *out)
{
    char *end;
    errno = 0;
    double dv = frl_strtod_c(text, &end); /* "0.5" in any host locale */
    /* "1e400" is a finite number, too large for a double: out of every key's range */
    if (*text && *end == '\0' && isinf(dv) && errno == ERANGE)
        return range_error(err, d, text);
    /* "1e-400" is not zero, but reads as 0, which is another setting for several keys
     * (train.max_grad_norm=0: no clipping): said as too small rather than taken as 0 (an
     * int key's "1e-400" is no integer, a parse error below) */
    if (d->type == FRL_CONFIG_FLOAT && *text && *end == '\0' && dv == 0 && errno == ERANGE)
        return frl_fail(err, FRL_ERR_RANGE, "config key '%s': %s is too small for a double "
                        "(it would read as 0)", d->name, text);
    if (!isfinite(dv) && *end == '\0')
        return frl_fail(err, FRL_ERR_NONFINITE, "config key '%s': value must be finite", d->name);
    int64_t iv = 0;
    int bad = d->type == FRL_CONFIG_INT ? parse_int(text, &iv, &dv) : !*text || *end;
    /* an int key's 99999999999999999999999 is a number, too large: said as the range */
    if (bad > 0 && d->type == FRL_CONFIG_INT)
        return range_error(err, d, text);
    if (bad)
        return parse_error(err, d, text);
    return number_value(err, d, dv, iv, out);
}

/* text as a value of key d, checked ("none" for an optional key is the caller's): what
 * frl_config_set stores, and how the defaults are read from the table. */
static frl_status parse_value(char *err, const frl_key_def *d, const char *text, frl_value *out)
{
    memset(out, 0, sizeof *out);
    /* strtod would skip leading spaces and read "nan": both are rejected clearly. */
    if (isspace((unsigned char)text[0]))
        return parse_error(err, d, text);
    switch (d->type) {
    case FRL_CONFIG_INT:
    case FRL_CONFIG_FLOAT: return parse_number(err, d, text, out);
    case FRL_CONFIG_BOOL:
        return parse_bool(text, &out->i) == 0 ? FRL_OK : parse_error(err, d, text);
    case FRL_CONFIG_CHOICE:
        out->i = choice_index(d->choices, text);
        if (out->i >= 0)
            return FRL_OK;
        return frl_fail(err, FRL_ERR_UNKNOWN_NAME, "config key '%s': '%s' is not one of %s",
                        d->name, text, d->choices);
    case FRL_CONFIG_INT_LIST: return parse_list(err, d, text, &out->list);
    }
    return frl_fail(err, FRL_ERR_INTERNAL, "config key '%s' has no type", d->name);
}

FRL_API frl_status frl_config_set(frl_config *cfg, const char *key, const char *text)
{
    if (!cfg || !text)
        return frl_fail(cfg ? cfg->err : NULL, FRL_ERR_NULL, "frl_config_set: %s is NULL",
                        cfg ? "text" : "cfg");
    int32_t k;
    frl_status st = lookup(cfg->err, "frl_config_set", key, &k);
    if (st != FRL_OK)
        return st;
    /* Optional keys (default "none") go back to unset when given "none". */
    if (is_optional(&frl_key_defs[k]) && strcmp(text, "none") == 0) {
        cfg->set[k] = 0;
        return FRL_OK;
    }
    frl_value v;
    return store(cfg, k, parse_value(cfg->err, &frl_key_defs[k], text, &v), v);
}

/* Apply one "key=value" token of length len. */
static frl_status apply_pair(frl_config *cfg, const char *tok, size_t len)
{
    char pair[256];
    if (len >= sizeof pair)
        return frl_fail(cfg->err, FRL_ERR_PARSE, "config: setting '%.40s...' is too long", tok);
    memcpy(pair, tok, len);
    pair[len] = '\0';
    char *eq = strchr(pair, '=');
    if (!eq || eq == pair)
        return frl_fail(cfg->err, FRL_ERR_PARSE, "config: '%s' is not of the form key=value",
                        pair);
    *eq = '\0';
    return frl_config_set(cfg, pair, eq + 1);
}

FRL_API frl_status frl_config_parse(frl_config *cfg, const char *text)
{
    if (!cfg || !text)
        return frl_fail(cfg ? cfg->err : NULL, FRL_ERR_NULL, "frl_config_parse: %s is NULL",
                        cfg ? "text" : "cfg");
    /* All or nothing: apply to a scratch copy of the values, keep it only if all parse. */
    uint8_t set[FRL_KEY_COUNT];
    frl_value values[FRL_KEY_COUNT];
    memcpy(set, cfg->set, sizeof set);
    memcpy(values, cfg->values, sizeof values);
    const char *ws = " \t\r\n";
    for (const char *p = text + strspn(text, ws); *p; p += strspn(p, ws)) {
        size_t len = strcspn(p, ws);
        frl_status st = apply_pair(cfg, p, len);
        if (st != FRL_OK) {
            memcpy(cfg->set, set, sizeof set);
            memcpy(cfg->values, values, sizeof values);
            return st;
        }
        p += len;
    }
    return FRL_OK;
}

FRL_API frl_status frl_config_unset(frl_config *cfg, const char *key)
{
    if (!cfg)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_config_unset: cfg is NULL");
    int32_t k;
    frl_status st = lookup(cfg->err, "frl_config_unset", key, &k);
    if (st == FRL_OK)
        cfg->set[k] = 0;
    return st;
}

/* The defaults as values, parsed once from the table's text by frl_config_set's parser:
 * the text is their one written form, so what describe shows is what a read gets
 * (test_config_keys checks that every default parses). Optional keys stay zero. */
static frl_value default_values[FRL_KEY_COUNT];
static pthread_once_t defaults_once = PTHREAD_ONCE_INIT;

static void parse_defaults(void)
{
    for (int32_t k = 0; k < FRL_KEY_COUNT; k++)
        if (!is_optional(&frl_key_defs[k]))
            (void)parse_value(NULL, &frl_key_defs[k], frl_key_defs[k].default_text,
                              &default_values[k]);
}

static frl_value value_of(const frl_config *cfg, int32_t k)
{
    if (cfg && cfg->set[k])
        return cfg->values[k];
    pthread_once(&defaults_once, parse_defaults);
    return default_values[k];
}

/* Look up key for the getter who; errors go to the thread's last error only (cfg is const). */
static frl_status get_def(const char *who, const char *key, const void *out,
                          frl_config_type want, int32_t *k)
{
    if (!out)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: out is NULL", who);
    frl_status st = lookup(NULL, who, key, k);
    if (st != FRL_OK)
        return st;
    frl_config_type have = frl_key_defs[*k].type;
    int ok = have == want || (want == FRL_CONFIG_FLOAT && have == FRL_CONFIG_INT) ||
             (want == FRL_CONFIG_INT && have == FRL_CONFIG_CHOICE);
    static const char *const names[] = {"?", "int", "float", "bool", "choice", "int list"};
    return ok ? FRL_OK : type_error(NULL, &frl_key_defs[*k], names[want]);
}

FRL_API frl_status frl_config_get_int(const frl_config *cfg, const char *key, int64_t *out)
{
    int32_t k;
    frl_status st = get_def("frl_config_get_int", key, out, FRL_CONFIG_INT, &k);
    if (st == FRL_OK)
        *out = value_of(cfg, k).i;
    return st;
}

FRL_API frl_status frl_config_get_float(const frl_config *cfg, const char *key, double *out)
{
    int32_t k;
    frl_status st = get_def("frl_config_get_float", key, out, FRL_CONFIG_FLOAT, &k);
    if (st != FRL_OK)
        return st;
    frl_value v = value_of(cfg, k);
    *out = frl_key_defs[k].type == FRL_CONFIG_INT ? (double)v.i : v.f;
    return FRL_OK;
}

FRL_API frl_status frl_config_get_bool(const frl_config *cfg, const char *key, int *out)
{
    int32_t k;
    frl_status st = get_def("frl_config_get_bool", key, out, FRL_CONFIG_BOOL, &k);
    if (st == FRL_OK)
        *out = (int)value_of(cfg, k).i;
    return st;
}

FRL_API frl_status frl_config_get_int_list(const frl_config *cfg, const char *key,
                                           int64_t *out, int32_t capacity, int32_t *count)
{
    int32_t k;
    if (!count)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_config_get_int_list: count is NULL");
    frl_status st = get_def("frl_config_get_int_list", key, out, FRL_CONFIG_INT_LIST, &k);
    if (st != FRL_OK)
        return st;
    frl_int_list l = value_of(cfg, k).list;
    *count = l.n;
    if (l.n > capacity)
        return frl_fail(NULL, FRL_ERR_SIZE, "config key '%s' holds %d values, capacity is %d",
                        key, (int)l.n, (int)capacity);
    for (int32_t i = 0; i < l.n; i++)
        out[i] = l.v[i];
    return FRL_OK;
}

static int format_list(const frl_int_list *l, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s", "");
    for (int32_t i = 0; i < l->n && n >= 0; i++) {
        size_t used = (size_t)n < size ? (size_t)n : size;
        int m = snprintf(buf + used, size - used, "%s%d", i ? "," : "", (int)l->v[i]);
        n = m < 0 ? m : n + m;
    }
    return n;
}

/* Copy the n-th choice of "a|b|c" into buf. */
static int copy_choice(const char *choices, int64_t n, char *buf, size_t size)
{
    const char *p = choices;
    for (; n > 0 && p; n--) {
        p = strchr(p, '|');
        p = p ? p + 1 : NULL;
    }
    size_t len = p ? strcspn(p, "|") : 0;
    return snprintf(buf, size, "%.*s", (int)len, p ? p : "");
}

FRL_API frl_status frl_config_get_text(const frl_config *cfg, const char *key, char *buf,
                                       size_t size)
{
    int32_t k;
    if (!buf)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_config_get_text: buf is NULL");
    if (size == 0)
        return frl_fail(NULL, FRL_ERR_SIZE, "config key '%s': buffer size is 0",
                        key ? key : "(null)");
    frl_status st = lookup(NULL, "frl_config_get_text", key, &k);
    if (st != FRL_OK)
        return st;
    const frl_key_def *d = &frl_key_defs[k];
    frl_value v = value_of(cfg, k);
    int n = 0;
    switch (d->type) {
    case FRL_CONFIG_INT: n = snprintf(buf, size, "%lld", (long long)v.i); break;
    case FRL_CONFIG_FLOAT: n = frl_snprintf_c(buf, size, "%.17g", v.f); break;
    case FRL_CONFIG_BOOL: n = snprintf(buf, size, "%s", v.i ? "true" : "false"); break;
    case FRL_CONFIG_CHOICE: n = copy_choice(d->choices, v.i, buf, size); break;
    case FRL_CONFIG_INT_LIST: n = format_list(&v.list, buf, size); break;
    }
    if (n < 0 || (size_t)n >= size)
        return frl_fail(NULL, FRL_ERR_SIZE, "config key '%s': value needs %d bytes, buffer has %zu",
                        key, n + 1, size);
    return FRL_OK;
}

FRL_API int frl_config_is_set(const frl_config *cfg, const char *key)
{
    int32_t k = key ? frl_key_find(key) : -1;
    return cfg && k >= 0 && cfg->set[k];
}

FRL_API const char *frl_config_next(const char *key)
{
    if (!key)
        return frl_key_defs[0].name;
    int32_t k = frl_key_find(key);
    return (k >= 0 && k + 1 < FRL_KEY_COUNT) ? frl_key_defs[k + 1].name : NULL;
}

FRL_API frl_status frl_config_describe(const char *key, frl_config_key_info *info)
{
    int32_t k;
    if (!info)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_config_describe: info is NULL");
    if (info->struct_size < offsetof(frl_config_key_info, help) + sizeof(const char *))
        return frl_fail(NULL, FRL_ERR_VERSION,
                        "frl_config_describe: info->struct_size %zu is too small (set it to "
                        "sizeof(frl_config_key_info))",
                        info->struct_size);
    frl_status st = lookup(NULL, "frl_config_describe", key, &k);
    if (st != FRL_OK)
        return st;
    const frl_key_def *d = &frl_key_defs[k];
    info->name = d->name;
    info->type = d->type;
    info->default_text = d->default_text;
    info->min = d->min;
    info->max = d->max;
    info->choices = d->choices;
    info->help = d->help;
    return FRL_OK;
}

FRL_API const char *frl_config_last_error(const frl_config *cfg)
{
    return cfg ? cfg->err : "frl_config_last_error: cfg is NULL";
}

/* Key k's value, read as type `as`. Reading a key as another type would read another
 * member of the union: a bug of the caller's, which the assertion stops the first time
 * a test runs that read. */
static frl_value read_as(const frl_config *cfg, frl_key k, frl_config_type as)
{
    assert((unsigned)k < FRL_KEY_COUNT && frl_key_defs[k].type == as);
    (void)as;
    return value_of(cfg, (int32_t)k);
}

int64_t frl_cfg_int(const frl_config *cfg, frl_key k)
{
    return read_as(cfg, k, FRL_CONFIG_INT).i;
}

double frl_cfg_float(const frl_config *cfg, frl_key k)
{
    return read_as(cfg, k, FRL_CONFIG_FLOAT).f;
}

int frl_cfg_bool(const frl_config *cfg, frl_key k)
{
    return read_as(cfg, k, FRL_CONFIG_BOOL).i != 0;
}

int32_t frl_cfg_choice(const frl_config *cfg, frl_key k)
{
    return (int32_t)read_as(cfg, k, FRL_CONFIG_CHOICE).i;
}

const char *frl_cfg_choice_text(const frl_config *cfg, frl_key k, char *buf, size_t size)
{
    copy_choice(frl_key_defs[k].choices, read_as(cfg, k, FRL_CONFIG_CHOICE).i, buf, size);
    return buf;
}

frl_int_list frl_cfg_list(const frl_config *cfg, frl_key k)
{
    return read_as(cfg, k, FRL_CONFIG_INT_LIST).list;
}

int frl_cfg_is_set(const frl_config *cfg, frl_key k)
{
    return cfg && cfg->set[k];
}

void frl_config_overlay(frl_config *dst, const frl_config *src)
{
    for (int32_t k = 0; src && k < FRL_KEY_COUNT; k++)
        if (src->set[k]) {
            dst->values[k] = src->values[k];
            dst->set[k] = 1;
        }
}

/* Keys that came after the first file readers, which refuse a key they do not know: a
 * file (policy, checkpoint, settings.txt) carries them only when they differ from their
 * default, so files that do not use them stay readable by those readers. */
static int omitted_at_default(int32_t k, const char *value)
{
    static const frl_key newer[] = {FRL_KEY_ENV_MEMORY_CUES, FRL_KEY_ENV_MEMORY_DELAY,
                                    FRL_KEY_POLICY_CORE, FRL_KEY_POLICY_CORE_KEEP_BIAS,
                                    FRL_KEY_POLICY_CORE_SIZE, FRL_KEY_POLICY_CONV_CHANNELS,
                                    FRL_KEY_POLICY_ENCODER, FRL_KEY_POLICY_FRAME_STACK,
                                    FRL_KEY_TRAIN_BPTT};
    for (size_t i = 0; i < sizeof newer / sizeof newer[0]; i++)
        if ((int32_t)newer[i] == k)
            return strcmp(value, frl_key_defs[k].default_text) == 0;
    return 0;
}

frl_status frl_config_to_text(const frl_config *cfg, const char *prefix, char *buf, size_t size)
{
    size_t used = 0, plen = strlen(prefix);
    buf[0] = '\0';
    for (int32_t k = 0; k < FRL_KEY_COUNT; k++) {
        const frl_key_def *d = &frl_key_defs[k];
        if (strncmp(d->name, prefix, plen) != 0 || (is_optional(d) && !(cfg && cfg->set[k])))
            continue;
        char value[256];
        frl_status st = frl_config_get_text(cfg, d->name, value, sizeof value);
        if (st != FRL_OK)
            return st;
        if (omitted_at_default(k, value))
            continue;
        int n = snprintf(buf + used, size - used, "%s=%s\n", d->name, value);
        if (n < 0 || (size_t)n >= size - used)
            return frl_fail(NULL, FRL_ERR_SIZE, "settings text exceeds %zu bytes", size);
        used += (size_t)n;
    }
    return FRL_OK;
}
