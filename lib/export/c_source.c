/* C99 source export (export.h): NAME.h declares the act and forward functions, NAME.c
 * holds the weights as static const arrays and the code, which needs <math.h> and
 * nothing else, allocates nothing and keeps no state (so any number of threads may call
 * it). Weights are written row by row, W[out x in], so each output is one contiguous
 * dot product; float32 values are printed with 9 significant digits, which gives back
 * the same float. With int8 weights each output row has a float scale (its largest
 * |w| / 127) and the sum of q * x is scaled once. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "export/export.h"
#include "io/bytes.h"
#include "io/file.h"

typedef struct gen {
    frl_bytes *c;         /* NAME.c */
    const frl_policy *p;
    const char *name;
    int int8;
} gen;

/* ---- weights ---- */

static void float_array(gen *g, const char *storage, const char *what, const float *v, size_t n)
{
    frl_bytes_printf(g->c, "%sconst float %s_%s[%zu] = {", storage, g->name, what, n);
    for (size_t i = 0; i < n; i++)
        frl_bytes_printf(g->c, "%s%.9ef", i % 6 ? ", " : (i ? ",\n    " : "\n    "),
                         (double)v[i]);
    frl_bytes_printf(g->c, "\n};\n");
}

/* An int8 row's scale: its largest |w| / 127 (1 for a row of zeros). */
static float row_scale(const float *wt, size_t in, size_t out, size_t o)
{
    float amax = 0.0f;
    for (size_t i = 0; i < in; i++)
        amax = fmaxf(amax, fabsf(wt[i * out + o]));
    return amax > 0.0f ? amax / 127.0f : 1.0f;
}

static void int8_weights(gen *g, const float *wt, size_t in, size_t out, const char *what)
{
    frl_bytes_printf(g->c, "static const signed char %s_%s_q[%zu] = {", g->name, what, in * out);
    for (size_t o = 0; o < out; o++) {
        float s = row_scale(wt, in, out, o);
        for (size_t i = 0; i < in; i++) {
            long q = lrintf(wt[i * out + o] / s);
            q = q > 127 ? 127 : (q < -127 ? -127 : q);
            size_t k = o * in + i;
            frl_bytes_printf(g->c, "%s%ld", k % 16 ? ", " : (k ? ",\n    " : "\n    "), q);
        }
    }
    frl_bytes_printf(g->c, "\n};\nstatic const float %s_%s_s[%zu] = {", g->name, what, out);
    for (size_t o = 0; o < out; o++)
        frl_bytes_printf(g->c, "%s%.9ef", o % 6 ? ", " : (o ? ",\n    " : "\n    "),
                         (double)row_scale(wt, in, out, o));
    frl_bytes_printf(g->c, "\n};\n");
}

/* Layer l's W[out x in] from the library's wt[in x out], as floats or int8 and scales,
 * and its bias. */
static void layer_weights(gen *g, const frl_mlp *m, int32_t l, const char *net)
{
    const float *wt = g->p->params + m->off_w[l];
    size_t in = (size_t)m->width[l], out = (size_t)m->width[l + 1];
    char what[80];
    snprintf(what, sizeof what, "%s_%d", net, (int)l);
    if (g->int8) {
        int8_weights(g, wt, in, out, what);
    } else {
        frl_bytes_printf(g->c, "static const float %s_%s_w[%zu] = {", g->name, what, in * out);
        for (size_t k = 0; k < in * out; k++)
            frl_bytes_printf(g->c, "%s%.9ef", k % 6 ? ", " : (k ? ",\n    " : "\n    "),
                             (double)wt[(k % in) * out + k / in]);
        frl_bytes_printf(g->c, "\n};\n");
    }
    snprintf(what, sizeof what, "%s_%d_b", net, (int)l);
    float_array(g, "static ", what, g->p->params + m->off_b[l], out);
}

static void mlp_weights(gen *g, const frl_mlp *m, const char *net)
{
    for (int32_t l = 0; l < m->layers; l++)
        layer_weights(g, m, l, net);
}

/* ---- helpers the networks call (only those used, since unused static functions would
 * fail -Werror) ---- */

static void emit_helpers(gen *g)
{
    const frl_policy *p = g->p;
    const char *n = g->name;
    if (g->int8)
        frl_bytes_printf(g->c,
            "\n/* y[o] = b[o] + s[o] * sum_i q[o in + i] x[i] */\n"
            "static void %s_linear(int in, int out, const signed char *q, const float *s,\n"
            "    const float *b, const float *x, float *y)\n{\n"
            "    int o, i;\n    for (o = 0; o < out; o++) {\n"
            "        const signed char *row = q + (long)o * in;\n        float acc = 0.0f;\n"
            "        for (i = 0; i < in; i++)\n            acc += (float)row[i] * x[i];\n"
            "        y[o] = b[o] + s[o] * acc;\n    }\n}\n", n);
    else
        frl_bytes_printf(g->c,
            "\n/* y[o] = b[o] + sum_i w[o in + i] x[i] */\n"
            "static void %s_linear(int in, int out, const float *w, const float *b,\n"
            "    const float *x, float *y)\n{\n"
            "    int o, i;\n    for (o = 0; o < out; o++) {\n"
            "        const float *row = w + (long)o * in;\n        float acc = b[o];\n"
            "        for (i = 0; i < in; i++)\n            acc += row[i] * x[i];\n"
            "        y[o] = acc;\n    }\n}\n", n);
    if (p->obs_n)
        frl_bytes_printf(g->c,
            "\n/* A discrete observation's index, or -1 when it is not an integer in [0, n):\n"
            " * the first layer then adds no weight column (the library's one-hot row). */\n"
            "static int %s_index(float v, int n)\n{\n    int i;\n"
            "    if (!(v >= 0.0f && v < (float)n))\n        return -1;\n"
            "    i = (int)v;\n    return (float)i == v ? i : -1;\n}\n", n);
    static const char *bodies[FRL_NN_ELU + 1] = {
        [FRL_NN_TANH] = "v[i] = tanhf(v[i]);",
        [FRL_NN_RELU] = "v[i] = v[i] < 0.0f ? 0.0f : v[i];",
        [FRL_NN_ELU] = "v[i] = v[i] > 0.0f ? v[i] : expm1f(v[i]);",
    };
    frl_nn_act act = frl_policy_activation(p->cfg);
    frl_bytes_printf(g->c, "\nstatic void %s_activate(float *v, int n)\n{\n    int i;\n"
                           "    for (i = 0; i < n; i++)\n        %s\n}\n", n, bodies[act]);
}

/* ---- the forward function ---- */

/* The statements of one network from `in` (the one-hot index when onehot) into `out`,
 * alternating the work buffers a and b. */
static void emit_mlp(gen *g, const frl_mlp *m, const char *net, const char *in, int onehot,
                     const char *out)
{
    static const char *bufs[2] = {"a", "b"};
    const char *cur = in, *n = g->name;
    for (int32_t l = 0; l < m->layers; l++) {
        const char *dst = l + 1 == m->layers ? out : bufs[l % 2];
        int w_in = m->width[l], w_out = m->width[l + 1];
        if (l == 0 && onehot) {
            /* The product with a one-hot row is a column of W. */
            frl_bytes_printf(g->c, "    for (o = 0; o < %d; o++)\n        %s[o] = %s_%s_0_b[o]"
                                   " + (idx < 0 ? 0.0f : ", w_out, dst, n, net);
            if (g->int8)
                frl_bytes_printf(g->c, "%s_%s_0_s[o] * (float)%s_%s_0_q[o * %d + idx]);\n", n,
                                 net, n, net, w_in);
            else
                frl_bytes_printf(g->c, "%s_%s_0_w[o * %d + idx]);\n", n, net, w_in);
        } else if (g->int8) {
            frl_bytes_printf(g->c, "    %s_linear(%d, %d, %s_%s_%d_q, %s_%s_%d_s, %s_%s_%d_b, %s, "
                                   "%s);\n", n, w_in, w_out, n, net, (int)l, n, net, (int)l, n,
                             net, (int)l, cur, dst);
        } else {
            frl_bytes_printf(g->c, "    %s_linear(%d, %d, %s_%s_%d_w, %s_%s_%d_b, %s, %s);\n", n,
                             w_in, w_out, n, net, (int)l, n, net, (int)l, cur, dst);
        }
        if (l + 1 < m->layers || m->activate_last)
            frl_bytes_printf(g->c, "    %s_activate(%s, %d);\n", n, dst, w_out);
        cur = dst;
    }
}

static int32_t widest(const frl_policy *p)
{
    const frl_mlp *nets[3] = {&p->trunk, &p->actor, &p->critic};
    int32_t w = 1;
    for (int i = 0; i < 3; i++)
        for (int32_t l = 1; l <= nets[i]->layers; l++)
            w = nets[i]->width[l] > w ? nets[i]->width[l] : w;
    return w;
}

/* The input: obs, or the normalised and clipped copy xn, or the index idx. */
static const char *emit_input(gen *g)
{
    const frl_policy *p = g->p;
    if (p->obs_n) {
        frl_bytes_printf(g->c, "    int idx = %s_index(obs[0], %d);\n", g->name, (int)p->obs_n);
        return "";
    }
    if (!p->obs_norm)
        return "obs";
    frl_bytes_printf(g->c,
        "    for (o = 0; o < %d; o++) {\n"
        "        float v = (obs[o] - %s_obs_mean[o]) * %s_obs_inv_std[o];\n"
        "        xn[o] = v > %.9ef ? %.9ef : (v < %.9ef ? %.9ef : v);\n    }\n",
        (int)p->obs_w, g->name, g->name, (double)p->norm.clip, (double)p->norm.clip,
        (double)-p->norm.clip, (double)-p->norm.clip);
    return "xn";
}

static void emit_q_value(gen *g)
{
    frl_bytes_printf(g->c, "    if (value) {\n        float m = out[0];\n"
                           "        for (o = 1; o < %d; o++)\n"
                           "            m = out[o] > m ? out[o] : m;\n"
                           "        *value = m;\n    }\n", (int)g->p->out_w);
}

static void emit_forward(gen *g)
{
    const frl_policy *p = g->p;
    int32_t w = widest(p);
    frl_bytes_printf(g->c, "\nvoid %s_forward(const float *obs, float *out, float *value)\n{\n"
                           "    float a[%d], b[%d];\n", g->name, (int)w, (int)w);
    if (p->obs_norm && !p->obs_n)
        frl_bytes_printf(g->c, "    float xn[%d];\n", (int)p->obs_w);
    if (p->shared)
        frl_bytes_printf(g->c, "    float t[%d];\n", (int)frl_mlp_out(&p->trunk));
    frl_bytes_printf(g->c, "    float v[1];\n    int o = 0;\n");
    const char *x = emit_input(g);
    int onehot = p->obs_n > 0;
    if (p->shared) {
        emit_mlp(g, &p->trunk, "trunk", x, onehot, "t");
        x = "t";
        onehot = 0;
    }
    if (p->head == FRL_POLICY_HEAD_Q) {
        emit_mlp(g, &p->actor, "q", x, onehot, "out");
        emit_q_value(g);
    } else if (p->head == FRL_POLICY_HEAD_DUELING_Q) {
        emit_mlp(g, &p->actor, "advantage", x, onehot, "out");
        emit_mlp(g, &p->critic, "state_value", x, onehot, "v");
        frl_bytes_printf(g->c, "    {\n        double mean = 0.0;\n        float shift;\n"
                               "        for (o = 0; o < %d; o++)\n            mean += out[o];\n"
                               "        shift = v[0] - (float)(mean / %d);\n"
                               "        for (o = 0; o < %d; o++)\n            out[o] += shift;\n"
                               "    }\n", (int)p->out_w, (int)p->out_w, (int)p->out_w);
        emit_q_value(g);
    } else {
        emit_mlp(g, &p->actor, "actor", x, onehot, "out");
        frl_bytes_printf(g->c, "    if (value) {\n");
        emit_mlp(g, &p->critic, "critic", x, onehot, "v");
        frl_bytes_printf(g->c, "        *value = v[0];\n    }\n");
    }
    frl_bytes_printf(g->c, "    (void)a;\n    (void)b;\n    (void)v;\n    (void)o;\n}\n");
}

static void emit_act(gen *g)
{
    if (frl_export_kind_of(g->p) == FRL_EXPORT_GAUSSIAN) {
        frl_bytes_printf(g->c, "\nvoid %s_act(const float *obs, float *action)\n{\n"
                               "    %s_forward(obs, action, 0);\n}\n", g->name, g->name);
        return;
    }
    frl_bytes_printf(g->c, "\nint %s_act(const float *obs)\n{\n    float out[%d];\n"
                           "    int o, best = 0;\n    %s_forward(obs, out, 0);\n"
                           "    for (o = 1; o < %d; o++)\n"
                           "        best = out[o] > out[best] ? o : best;\n    return best;\n}\n",
                     g->name, (int)g->p->out_w, g->name, (int)g->p->out_w);
}

static void emit_source(gen *g)
{
    const frl_policy *p = g->p;
    frl_bytes_printf(g->c, "/* %s: a fastrl %s policy as C99, written by frl_policy_export "
                           "(fastrl %s, %s weights).\n * Needs <math.h> only; see %s.h. */\n"
                           "#include <math.h>\n\n#include \"%s.h\"\n\n",
                     g->name, frl_export_kind_of(p) == FRL_EXPORT_GAUSSIAN ? "Gaussian"
                     : frl_export_kind_of(p) == FRL_EXPORT_QVALUES ? "Q-value" : "categorical",
                     frl_version_string(), g->int8 ? "int8" : "float32", g->name, g->name);
    if (p->obs_norm && !p->obs_n) {
        float_array(g, "static ", "obs_mean", p->norm.use_mean, (size_t)p->obs_w);
        float_array(g, "static ", "obs_inv_std", p->norm.use_inv_std, (size_t)p->obs_w);
    }
    if (p->shared)
        mlp_weights(g, &p->trunk, "trunk");
    int q = p->head != FRL_POLICY_HEAD_ACTOR_CRITIC;
    mlp_weights(g, &p->actor, p->head == FRL_POLICY_HEAD_DUELING_Q ? "advantage" : q ? "q"
                                                                                 : "actor");
    if (p->head != FRL_POLICY_HEAD_Q)
        mlp_weights(g, &p->critic, q ? "state_value" : "critic");
    if (frl_export_kind_of(p) == FRL_EXPORT_GAUSSIAN) {
        frl_bytes_printf(g->c, "\n");
        float_array(g, "", "log_std", p->params + p->log_std_off, (size_t)p->out_w);
    }
    emit_helpers(g);
    emit_forward(g);
    emit_act(g);
}

/* ---- the header and the probe ---- */

static void upper(const char *s, char *out, size_t size)
{
    size_t i = 0;
    for (; s[i] && i + 1 < size; i++)
        out[i] = (char)(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 'a' + 'A' : s[i]);
    out[i] = '\0';
}

static void emit_header(frl_bytes *h, const frl_policy *p, const char *name, int int8)
{
    char up[64];
    upper(name, up, sizeof up);
    int kind = frl_export_kind_of(p);
    static const char *outs[3] = {"the categorical logits", "the Gaussian means",
                                  "the Q-value of each action"};
    frl_bytes_printf(h,
        "/* %s: a fastrl policy as C99 (fastrl %s, %s weights), written by\n"
        " * frl_policy_export. No dependency beyond <math.h>, no allocation, no state: the\n"
        " * functions may run on any number of threads at once. doc/export.md in fastrl\n"
        " * explains the outputs and how to sample from them. */\n"
        "#ifndef %s_H\n#define %s_H\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
        name, frl_version_string(), int8 ? "int8" : "float32", up, up);
    frl_bytes_printf(h, "/* Floats of one observation%s. */\n#define %s_OBS_SIZE %d\n",
                     p->obs_n ? " (discrete: its index, as a float)" : "", up, (int)p->obs_w);
    frl_bytes_printf(h, "/* Floats of forward's out: %s. */\n#define %s_OUT_SIZE %d\n", outs[kind],
                     up, (int)p->out_w);
    frl_bytes_printf(h, "/* Stack bytes forward uses at most (its work buffers). */\n"
                        "#define %s_STACK_BYTES %zu\n\n", up,
                     sizeof(float) * (size_t)(2 * widest(p) + p->obs_w + 2 +
                                              (p->shared ? frl_mlp_out(&p->trunk) : 0)));
    frl_bytes_printf(h,
        "/* One observation obs[%s_OBS_SIZE] to out[%s_OUT_SIZE] (%s) and, when value is\n"
        " * not NULL, *value (%s). */\n"
        "void %s_forward(const float *obs, float *out, float *value);\n\n",
        up, up, outs[kind], kind == FRL_EXPORT_QVALUES ? "the largest Q-value"
                                                       : "the critic's state value", name);
    if (kind == FRL_EXPORT_GAUSSIAN)
        frl_bytes_printf(h,
            "/* The greedy action, the Gaussian's mean, into action[%s_OUT_SIZE] (not\n"
            " * clipped to the action space's bounds). */\n"
            "void %s_act(const float *obs, float *action);\n\n"
            "/* The Gaussian's log standard deviations (they do not depend on the state): a\n"
            " * host that samples draws mean + exp(log_std) * N(0, 1). */\n"
            "extern const float %s_log_std[%s_OUT_SIZE];\n", up, name, name, up);
    else
        frl_bytes_printf(h,
            "/* The greedy action: the index of the largest output (the first on ties). */\n"
            "int %s_act(const float *obs);\n", name);
    frl_bytes_printf(h, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
}

static void emit_probe(frl_bytes *b, const frl_policy *p, const char *name)
{
    char up[64];
    upper(name, up, sizeof up);
    int gauss = frl_export_kind_of(p) == FRL_EXPORT_GAUSSIAN;
    frl_bytes_printf(b,
        "/* Latency probe of %s_act, written by frl_policy_export: build it with the\n"
        " * target's compiler and flags, e.g. cc -O2 -std=c99 %s_probe.c %s.c -lm, and run it\n"
        " * there. It times calls for at least half a second of CPU time (clock()). */\n"
        "#include <stdio.h>\n#include <time.h>\n\n#include \"%s.h\"\n\n"
        "int main(void)\n{\n    float obs[%s_OBS_SIZE];\n", name, name, name, name, up);
    if (gauss)
        frl_bytes_printf(b, "    float action[%s_OUT_SIZE];\n", up);
    frl_bytes_printf(b,
        "    volatile float sink = 0.0f;\n    long calls = 0, k;\n    clock_t t0, t;\n"
        "    double s;\n    int i;\n"
        "    for (i = 0; i < %s_OBS_SIZE; i++)\n        obs[i] = %s;\n"
        "    t0 = clock();\n    do {\n        for (k = 0; k < 1000; k++) {\n", up,
        p->obs_n ? "0.0f" : "0.01f * (float)(i + 1)");
    if (!p->obs_n)
        frl_bytes_printf(b, "            obs[0] = (k & 1) ? 0.01f : -0.01f;\n");
    if (gauss)
        frl_bytes_printf(b, "            %s_act(obs, action);\n            sink += action[0];\n",
                         name);
    else
        frl_bytes_printf(b, "            sink += (float)%s_act(obs);\n", name);
    frl_bytes_printf(b,
        "        }\n        calls += 1000;\n        t = clock();\n"
        "    } while (t - t0 < CLOCKS_PER_SEC / 2);\n"
        "    s = (double)(t - t0) / CLOCKS_PER_SEC;\n"
        "    printf(\"%s_act: %%.1f ns per call (%%ld calls in %%.2f s of CPU time)\\n\",\n"
        "           1e9 * s / (double)calls, calls, s);\n    (void)sink;\n    return 0;\n}\n",
        name);
}

/* prefix + suffix into a path of the caller's size. */
static frl_status path_of(char *out, size_t size, const char *prefix, const char *suffix,
                          char *err)
{
    if ((size_t)snprintf(out, size, "%s%s", prefix, suffix) >= size)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                        "frl_policy_export: the path '%s%s' is longer than %zu bytes", prefix,
                        suffix, size - 1);
    return FRL_OK;
}

static frl_status write_one(const frl_allocator *a, const char *prefix, const char *suffix,
                            const frl_bytes *b, char *err)
{
    char path[4096];
    frl_status st = path_of(path, sizeof path, prefix, suffix, err);
    if (st == FRL_OK && b->failed)
        st = frl_fail(err, FRL_ERR_NOMEM, "frl_policy_export: out of memory writing %s", path);
    if (st == FRL_OK)
        st = frl_file_replace(a, path, b->data, b->len, "frl_policy_export", err);
    return st;
}

frl_status frl_export_c(const frl_policy *p, const char *prefix, const char *name, int int8,
                        int probe, char *err)
{
    const frl_allocator *a = &p->rt->alloc;
    frl_bytes h, c, pr;
    frl_bytes_init(&h, a);
    frl_bytes_init(&c, a);
    frl_bytes_init(&pr, a);
    gen g = {&c, p, name, int8};
    emit_header(&h, p, name, int8);
    emit_source(&g);
    if (probe)
        emit_probe(&pr, p, name);
    /* The source first: a header never stands beside a stale or missing source. */
    frl_status st = write_one(a, prefix, ".c", &c, err);
    if (st == FRL_OK)
        st = write_one(a, prefix, ".h", &h, err);
    if (st == FRL_OK && probe)
        st = write_one(a, prefix, "_probe.c", &pr, err);
    frl_bytes_free(&h);
    frl_bytes_free(&c);
    frl_bytes_free(&pr);
    return st;
}
