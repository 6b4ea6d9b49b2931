/* NAME.c of the C export (c_source.h): the weights as static const arrays (c_weights.h)
 * and the code, which needs <math.h> and nothing else, allocates nothing and keeps no
 * state (so any number of threads may call it). Matrices are written row by row,
 * W[out x in], so each output is one contiguous dot product. Only the helpers a policy
 * uses are written, since an unused static function fails -Werror. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "export/c_conv.h"
#include "export/c_source.h"
#include "export/c_weights.h"
#include "export/kind.h"
#include "rl/policy_rnn.h"

/* ---- weights ---- */

static void mlp_weights(frl_cgen *g, const frl_mlp *m, const char *net)
{
    for (int32_t l = 0; l < m->layers; l++) {
        char what[64];
        snprintf(what, sizeof what, "%s_%d", net, (int)l);
        frl_cgen_matrix(g, g->p->params + m->off_w[l], g->p->params + m->off_b[l],
               (size_t)m->width[l], (size_t)m->width[l + 1], what);
    }
}

static void core_weights(frl_cgen *g, int32_t i)
{
    const frl_rnn *r = &g->p->core[i];
    const float *w = g->p->params;
    size_t gw = (size_t)r->gates * (size_t)r->h;
    char what[32];
    snprintf(what, sizeof what, "core%d_x", (int)i);
    frl_cgen_matrix(g, w + r->off_wx, w + r->off_bx, (size_t)r->in, gw, what);
    snprintf(what, sizeof what, "core%d_h", (int)i);
    frl_cgen_matrix(g, w + r->off_wh, w + r->off_bh, (size_t)r->h, gw, what);
}

/* ---- what the policy has ---- */

/* Its MLPs (encoders, trunk, heads), in the order the forward function runs them;
 * names[i] is the weights' name of nets[i]. */
static int32_t networks(const frl_policy *p, const frl_mlp **nets, const char **names)
{
    static const char *enc_names[2] = {"encoder0", "encoder1"};
    int32_t k = 0;
    for (int32_t i = 0; i < p->towers; i++)
        if (p->enc[i].layers) {
            names[k] = enc_names[i];
            nets[k++] = &p->enc[i];
        }
    if (p->shared && !p->towers) {
        names[k] = "trunk";
        nets[k++] = &p->trunk;
    }
    int q = p->head != FRL_POLICY_HEAD_ACTOR_CRITIC;
    names[k] = p->head == FRL_POLICY_HEAD_DUELING_Q ? "advantage" : q ? "q" : "actor";
    nets[k++] = &p->actor;
    if (p->head != FRL_POLICY_HEAD_Q) {
        names[k] = q ? "state_value" : "critic";
        nets[k++] = &p->critic;
    }
    return k;
}

/* Which networks read the input itself (a discrete observation's one-hot row). */
static int reads_input(const frl_policy *p, const frl_mlp *m)
{
    if (p->towers)
        return m == &p->enc[0] || m == &p->enc[1];
    return p->shared ? m == &p->trunk : 1;
}

/* Whether any layer is activated, and whether any product is more than the column a
 * one-hot observation picks. */
static void needs(const frl_policy *p, int *activate, int *product)
{
    const frl_mlp *nets[5];
    const char *names[5];
    int32_t k = networks(p, nets, names);
    *activate = 0;
    *product = p->towers > 0; /* a core's recurrent product */
    for (int32_t i = 0; i < k; i++)
        for (int32_t l = 0; l < nets[i]->layers; l++) {
            *activate |= l + 1 < nets[i]->layers || nets[i]->activate_last;
            *product |= !(l == 0 && p->obs_n && reads_input(p, nets[i]));
        }
}

static int32_t widest(const frl_policy *p)
{
    const frl_mlp *nets[5];
    const char *names[5];
    int32_t k = networks(p, nets, names), w = 1;
    for (int32_t i = 0; i < k; i++)
        for (int32_t l = 1; l <= nets[i]->layers; l++)
            w = nets[i]->width[l] > w ? nets[i]->width[l] : w;
    return w;
}

/* The gates' pre-activations of the widest core (G h), 0 without one. */
static int32_t core_gates(const frl_policy *p)
{
    int32_t w = 0;
    for (int32_t i = 0; i < p->towers; i++)
        w = p->core[i].gates * p->core[i].h > w ? p->core[i].gates * p->core[i].h : w;
    return w;
}

static int32_t encoded(const frl_policy *p)
{
    int32_t w = 0;
    for (int32_t i = 0; i < p->towers; i++)
        if (p->enc[i].layers && frl_mlp_out(&p->enc[i]) > w)
            w = frl_mlp_out(&p->enc[i]);
    return w;
}

size_t frl_cgen_stack_floats(const frl_policy *p)
{
    size_t trunk = p->shared && !p->towers ? (size_t)frl_mlp_out(&p->trunk) : 0;
    size_t xn = p->obs_norm && !p->obs_n && !p->cnn.layers ? (size_t)p->obs_w : 0;
    size_t join = p->vec_w ? (size_t)(p->cnn.out_w + p->vec_w) : 0;
    return 2 * (size_t)widest(p) + xn + join + 2 + trunk + 2 * (size_t)core_gates(p) +
           (size_t)encoded(p) + frl_cgen_conv_stack_floats(p);
}

/* ---- helpers ---- */

/* The dot products keep eight partial sums, added pairwise at the end: a fixed order
 * written in the source, so the result is the same on every strict-IEEE compiler, and
 * one that vectorises at -O2 without -ffast-math (2.6x faster than one running sum for
 * a 64x64 policy with gcc -O2 on x86-64). restrict: the arrays never overlap. */
static void emit_linear(frl_cgen *g)
{
    const int q = g->int8;
    frl_bytes_printf(g->out,
        "\n/* y[o] = b[o] + %ssum_i w[o in + i] x[i], the sum as eight partial sums */\n"
        "static void %s_linear(int in, int out, const %s *restrict w, %s"
        "const float *restrict b,\n    const float *restrict x, float *restrict y)\n{\n"
        "    int o, i, j;\n    for (o = 0; o < out; o++) {\n"
        "        const %s *row = w + (long)o * in;\n"
        "        float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, sum;\n"
        "        for (i = 0; i + 8 <= in; i += 8)\n            for (j = 0; j < 8; j++)\n"
        "                acc[j] += %srow[i + j] * x[i + j];\n"
        "        sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) +\n"
        "              ((acc[4] + acc[5]) + (acc[6] + acc[7]));\n"
        "        for (; i < in; i++)\n            sum += %srow[i] * x[i];\n"
        "        y[o] = b[o] + %ssum;\n    }\n}\n",
        q ? "s[o] * " : "", g->name, q ? "signed char" : "float",
        q ? "const float *restrict s,\n    " : "", q ? "signed char" : "float",
        q ? "(float)" : "", q ? "(float)" : "", q ? "s[o] * " : "");
}

static void emit_helpers(frl_cgen *g)
{
    const frl_policy *p = g->p;
    const char *n = g->name;
    int activate, product;
    needs(p, &activate, &product);
    if (product)
        emit_linear(g);
    if (p->cnn.layers)
        frl_cgen_conv_helper(g);
    if (p->obs_n)
        frl_bytes_printf(g->out,
            "\n/* A discrete observation's index, or -1 when it is not an integer in [0, n):\n"
            " * the first layer then adds no weight column (the library's one-hot row). */\n"
            "static int %s_index(float v, int n)\n{\n    int i;\n"
            "    if (!(v >= 0.0f && v < (float)n))\n        return -1;\n"
            "    i = (int)v;\n    return v > (float)i ? -1 : i;\n}\n", n);
    if (p->towers)
        frl_bytes_printf(g->out,
            "\nstatic float %s_sigmoid(float x)\n{\n"
            "    float e = expf(x < 0.0f ? x : -x);\n"
            "    return x < 0.0f ? e / (1.0f + e) : 1.0f / (1.0f + e);\n}\n", n);
    static const char *bodies[FRL_NN_ELU + 1] = {
        [FRL_NN_TANH] = "v[i] = tanhf(v[i]);",
        [FRL_NN_RELU] = "v[i] = v[i] < 0.0f ? 0.0f : v[i];",
        [FRL_NN_ELU] = "v[i] = v[i] > 0.0f ? v[i] : expm1f(v[i]);",
    };
    if (activate)
        frl_bytes_printf(g->out, "\nstatic void %s_activate(float *v, int n)\n{\n    int i;\n"
                                 "    for (i = 0; i < n; i++)\n        %s\n}\n",
                         n, bodies[frl_policy_activation(p->cfg)]);
}

/* ---- the forward function ---- */

/* dst = W src + b for the matrix NAME_what, or its column idx when onehot. */
static void emit_product(frl_cgen *g, const char *what, int w_in, int w_out, const char *src,
                         int onehot, const char *dst)
{
    const char *n = g->name;
    if (onehot) {
        /* The product with a one-hot row is a column of W. */
        frl_bytes_printf(g->out, "    for (o = 0; o < %d; o++)\n        %s[o] = %s_%s_b[o] + "
                                 "(idx < 0 ? 0.0f : ", w_out, dst, n, what);
        if (g->int8)
            frl_bytes_printf(g->out, "%s_%s_s[o] * (float)%s_%s_q[o * %d + idx]);\n", n, what, n,
                             what, w_in);
        else
            frl_bytes_printf(g->out, "%s_%s_w[o * %d + idx]);\n", n, what, w_in);
    } else if (g->int8) {
        frl_bytes_printf(g->out, "    %s_linear(%d, %d, %s_%s_q, %s_%s_s, %s_%s_b, %s, %s);\n",
                         n, w_in, w_out, n, what, n, what, n, what, src, dst);
    } else {
        frl_bytes_printf(g->out, "    %s_linear(%d, %d, %s_%s_w, %s_%s_b, %s, %s);\n", n, w_in,
                         w_out, n, what, n, what, src, dst);
    }
}

/* One network from `in` (the one-hot index when onehot) into `out`, alternating the
 * work buffers a and b. */
static void emit_mlp(frl_cgen *g, const frl_mlp *m, const char *net, const char *in,
                     int onehot, const char *out)
{
    static const char *bufs[2] = {"a", "b"};
    const char *cur = in;
    for (int32_t l = 0; l < m->layers; l++) {
        char what[64];
        snprintf(what, sizeof what, "%s_%d", net, (int)l);
        const char *dst = l + 1 == m->layers ? out : bufs[l % 2];
        emit_product(g, what, m->width[l], m->width[l + 1], cur, l == 0 && onehot, dst);
        if (l + 1 < m->layers || m->activate_last)
            frl_bytes_printf(g->out, "    %s_activate(%s, %d);\n", g->name, dst,
                             m->width[l + 1]);
        cur = dst;
    }
}

/* The input: obs, or the normalised and clipped copy xn, or the index idx. */
/* A mixed row's networks read the image's features (in feat), then the vector that
 * follows the image's bytes in obs (normalised with policy.obs_norm), as
 * frl_policy_encode joins them: into xj. */
static const char *emit_join(frl_cgen *g, const char *feat)
{
    const frl_policy *p = g->p;
    int32_t fw = p->cnn.out_w;
    frl_bytes_printf(g->out, "    for (o = 0; o < %d; o++)\n        xj[o] = %s[o];\n", (int)fw,
                     feat);
    if (!p->obs_norm) {
        frl_bytes_printf(g->out, "    for (o = 0; o < %d; o++)\n        xj[%d + o] = obs[%d + o];\n",
                         (int)p->vec_w, (int)fw, (int)p->vec_at);
        return "xj";
    }
    frl_bytes_printf(g->out,
        "    for (o = 0; o < %d; o++) {\n"
        "        float z = (obs[%d + o] - %s_obs_mean[o]) * %s_obs_inv_std[o];\n"
        "        xj[%d + o] = z > %.9ef ? %.9ef : (z < %.9ef ? %.9ef : z);\n    }\n",
        (int)p->vec_w, (int)p->vec_at, g->name, g->name, (int)fw, (double)p->norm.clip,
        (double)p->norm.clip, (double)-p->norm.clip, (double)-p->norm.clip);
    return "xj";
}

static const char *emit_input(frl_cgen *g)
{
    const frl_policy *p = g->p;
    if (p->cnn.layers) {
        const char *feat = frl_cgen_conv_forward(g);
        return p->vec_w ? emit_join(g, feat) : feat;
    }
    if (p->obs_n) {
        frl_bytes_printf(g->out, "    int idx = %s_index(obs[0], %d);\n", g->name, (int)p->obs_n);
        return "";
    }
    if (!p->obs_norm)
        return "obs";
    frl_bytes_printf(g->out,
        "    for (o = 0; o < %d; o++) {\n"
        "        float z = (obs[o] - %s_obs_mean[o]) * %s_obs_inv_std[o];\n"
        "        xn[o] = z > %.9ef ? %.9ef : (z < %.9ef ? %.9ef : z);\n    }\n",
        (int)p->obs_w, g->name, g->name, (double)p->norm.clip, (double)p->norm.clip,
        (double)-p->norm.clip, (double)-p->norm.clip);
    return "xn";
}

static void emit_q_value(frl_cgen *g)
{
    frl_bytes_printf(g->out, "    if (value) {\n        float m = out[0];\n"
                             "        for (o = 1; o < %d; o++)\n"
                             "            m = out[o] > m ? out[o] : m;\n"
                             "        *value = m;\n    }\n", (int)g->p->out_w);
}

/* Tower i's step: the encoder, both products, then the gates update the state row s in
 * place (h, and c after it for an LSTM), as nn/rnn.h's GRU and LSTM. */
static void emit_tower(frl_cgen *g, int32_t i, const char *x, int onehot, size_t off)
{
    const frl_policy *p = g->p;
    const frl_rnn *r = &p->core[i];
    const char *n = g->name;
    char what[32], net[24], s[48];
    snprintf(net, sizeof net, "encoder%d", (int)i);
    snprintf(s, sizeof s, "state + %zu", off);
    if (p->enc[i].layers) {
        emit_mlp(g, &p->enc[i], net, x, onehot, "e");
        x = "e";
        onehot = 0;
    }
    snprintf(what, sizeof what, "core%d_x", (int)i);
    emit_product(g, what, r->in, r->gates * r->h, x, onehot, "gx");
    snprintf(what, sizeof what, "core%d_h", (int)i);
    emit_product(g, what, r->h, r->gates * r->h, s, 0, "gh");
    int h = r->h;
    if (r->kind == FRL_RNN_GRU)
        frl_bytes_printf(g->out,
            "    for (o = 0; o < %d; o++) {\n"
            "        float r = %s_sigmoid(gx[o] + gh[o]);\n"
            "        float z = %s_sigmoid(gx[%d + o] + gh[%d + o]);\n"
            "        float c = tanhf(gx[%d + o] + r * gh[%d + o]);\n"
            "        state[%zu + o] = (1.0f - z) * c + z * state[%zu + o];\n    }\n",
            h, n, n, h, h, 2 * h, 2 * h, off, off);
    else
        frl_bytes_printf(g->out,
            "    for (o = 0; o < %d; o++) {\n"
            "        float ig = %s_sigmoid(gx[o] + gh[o]);\n"
            "        float fg = %s_sigmoid(gx[%d + o] + gh[%d + o]);\n"
            "        float gg = tanhf(gx[%d + o] + gh[%d + o]);\n"
            "        float og = %s_sigmoid(gx[%d + o] + gh[%d + o]);\n"
            "        float c = fg * state[%zu + o] + ig * gg;\n"
            "        state[%zu + o] = c;\n        state[%zu + o] = og * tanhf(c);\n    }\n",
            h, n, n, h, h, 2 * h, 2 * h, n, 3 * h, 3 * h, off + (size_t)h, off + (size_t)h, off);
}

/* Heads on the towers' h (the first h floats of each tower's state). */
static void emit_recurrent(frl_cgen *g, const char *x, int onehot)
{
    const frl_policy *p = g->p;
    size_t off[2] = {0, (size_t)frl_rnn_state_w(&p->core[0])};
    char hs[2][48];
    for (int32_t i = 0; i < p->towers; i++) {
        emit_tower(g, i, x, onehot, off[i]);
        snprintf(hs[i], sizeof hs[i], "state + %zu", off[i]);
    }
    emit_mlp(g, &p->actor, "actor", hs[0], 0, "out");
    frl_bytes_printf(g->out, "    if (value) {\n");
    emit_mlp(g, &p->critic, "critic", hs[p->towers - 1], 0, "v");
    frl_bytes_printf(g->out, "        *value = v[0];\n    }\n");
}

static void emit_dueling(frl_cgen *g, const char *x, int onehot)
{
    int n = (int)g->p->out_w;
    emit_mlp(g, &g->p->actor, "advantage", x, onehot, "out");
    emit_mlp(g, &g->p->critic, "state_value", x, onehot, "v");
    frl_bytes_printf(g->out, "    {\n        double mean = 0.0;\n        float shift;\n"
                             "        for (o = 0; o < %d; o++)\n"
                             "            mean += (double)out[o];\n"
                             "        shift = v[0] - (float)(mean / %d);\n"
                             "        for (o = 0; o < %d; o++)\n            out[o] += shift;\n"
                             "    }\n", n, n, n);
    emit_q_value(g);
}

static void emit_locals(frl_cgen *g)
{
    const frl_policy *p = g->p;
    int32_t w = widest(p);
    frl_bytes_printf(g->out, "    float a[%d], b[%d];\n", (int)w, (int)w);
    if (p->obs_norm && !p->obs_n && !p->cnn.layers)
        frl_bytes_printf(g->out, "    float xn[%d];\n", (int)p->obs_w);
    if (p->vec_w)
        frl_bytes_printf(g->out, "    float xj[%d];\n", (int)(p->cnn.out_w + p->vec_w));
    if (p->shared && !p->towers)
        frl_bytes_printf(g->out, "    float t[%d];\n", (int)frl_mlp_out(&p->trunk));
    if (p->towers)
        frl_bytes_printf(g->out, "    float gx[%d], gh[%d];\n", (int)core_gates(p),
                         (int)core_gates(p));
    if (encoded(p))
        frl_bytes_printf(g->out, "    float e[%d];\n", (int)encoded(p));
    if (p->cnn.layers)
        frl_cgen_conv_locals(g);
    frl_bytes_printf(g->out, "    float v[1];\n    int o = 0;\n");
}

static void emit_forward(frl_cgen *g)
{
    const frl_policy *p = g->p;
    frl_bytes_printf(g->out, "\nvoid %s_forward(const float *obs, %sfloat *out, float *value)\n{\n",
                     g->name, frl_cgen_stateful(p) ? "float *state, " : "");
    emit_locals(g);
    const char *x = emit_input(g);
    int onehot = p->obs_n > 0;
    if (p->shared && !p->towers) {
        emit_mlp(g, &p->trunk, "trunk", x, onehot, "t");
        x = "t";
        onehot = 0;
    }
    if (p->towers) {
        emit_recurrent(g, x, onehot);
    } else if (p->head == FRL_POLICY_HEAD_Q) {
        emit_mlp(g, &p->actor, "q", x, onehot, "out");
        emit_q_value(g);
    } else if (p->head == FRL_POLICY_HEAD_DUELING_Q) {
        emit_dueling(g, x, onehot);
    } else {
        emit_mlp(g, &p->actor, "actor", x, onehot, "out");
        /* The critic at the body's own indentation (a one-hot product's loop inside an
         * `if` block read as misleading indentation to gcc's -Wall). */
        frl_bytes_printf(g->out, "    if (!value)\n        return;\n");
        emit_mlp(g, &p->critic, "critic", x, onehot, "v");
        frl_bytes_printf(g->out, "    *value = v[0];\n");
    }
    frl_bytes_printf(g->out, "    (void)a;\n    (void)b;\n    (void)v;\n    (void)o;\n}\n");
}

static void emit_act(frl_cgen *g)
{
    int stateful = frl_cgen_stateful(g->p);
    const char *n = g->name, *st = stateful ? "float *state, " : "";
    const char *sa = stateful ? "state, " : "";
    if (frl_export_kind_of(g->p) == FRL_EXPORT_GAUSSIAN) {
        frl_bytes_printf(g->out, "\nvoid %s_act(const float *obs, %sfloat *action)\n{\n"
                                 "    %s_forward(obs, %saction, 0);\n}\n", n, st, n, sa);
        return;
    }
    frl_bytes_printf(g->out, "\nint %s_act(const float *obs%s%s)\n{\n    float out[%d];\n"
                             "    int o, best = 0;\n    %s_forward(obs, %sout, 0);\n"
                             "    for (o = 1; o < %d; o++)\n"
                             "        best = out[o] > out[best] ? o : best;\n    return best;\n}\n",
                     n, stateful ? ", " : "", stateful ? "float *state" : "",
                     (int)g->p->out_w, n, sa, (int)g->p->out_w);
}

static void emit_weights(frl_cgen *g)
{
    const frl_policy *p = g->p;
    const frl_mlp *nets[5];
    const char *names[5];
    int32_t k = networks(p, nets, names);
    if (p->obs_norm && !p->obs_n) { /* a mixed row's normaliser covers its vector */
        size_t w = (size_t)(p->vec_w ? p->vec_w : p->obs_w);
        frl_cgen_float_array(g, "static ", "obs_mean", p->norm.use_mean, w);
        frl_cgen_float_array(g, "static ", "obs_inv_std", p->norm.use_inv_std, w);
    }
    if (p->cnn.layers)
        frl_cgen_conv_weights(g);
    for (int32_t i = 0; i < p->towers; i++)
        core_weights(g, i);
    for (int32_t i = 0; i < k; i++)
        mlp_weights(g, nets[i], names[i]);
    if (frl_export_kind_of(p) == FRL_EXPORT_GAUSSIAN)
        frl_cgen_float_array(g, "", "log_std", p->params + p->log_std_off, (size_t)p->out_w);
}

void frl_cgen_source(frl_cgen *g)
{
    const frl_policy *p = g->p;
    static const char *kinds[3] = {"categorical", "Gaussian", "Q-value"};
    frl_bytes_printf(g->out, "/* %s: a fastrl %s%s policy as C99, written by "
                             "frl_policy_export (fastrl %s,\n * %s weights). Needs <math.h> "
                             "only; see %s.h. */\n#include <math.h>\n\n#include \"%s.h\"\n\n",
                     g->name, kinds[frl_export_kind_of(p)], p->towers ? " recurrent" : "",
                     frl_version_string(), g->int8 ? "int8" : "float32", g->name, g->name);
    emit_weights(g);
    emit_helpers(g);
    emit_forward(g);
    emit_act(g);
}
