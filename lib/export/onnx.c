/* ONNX export (export.h). A model is protobuf, written here with io/protobuf.h; the
 * field numbers below are onnx.proto's. The graph is built from a handful of standard
 * operators (opset 17, which every runtime engines ship with supports): Gemm for each
 * linear layer (the library keeps weights as [in x out], Gemm's B without a
 * transpose), the activations, and for the heads ArgMax, ReduceMax, ReduceMean and
 * Expand. Names: inputs and outputs as doc/export.md lists them; weights
 * "<network>.<layer>.weight|bias"; intermediate values "<what>_<serial>". */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "export/kind.h"
#include "export/onnx.h"
#include "io/bytes.h"
#include "io/file.h"
#include "io/protobuf.h"
#include "rl/policy_rnn.h"

enum { OPSET = 17, IR_VERSION = 8 };

/* ModelProto, OperatorSetIdProto, StringStringEntryProto */
enum { M_IR = 1, M_PRODUCER = 2, M_PRODUCER_VERSION = 3, M_DOC = 6, M_GRAPH = 7, M_OPSET = 8,
       M_META = 14 };
enum { OPSET_DOMAIN = 1, OPSET_VERSION = 2, KV_KEY = 1, KV_VALUE = 2 };
/* GraphProto, NodeProto, AttributeProto */
enum { G_NODE = 1, G_NAME = 2, G_INIT = 5, G_DOC = 10, G_INPUT = 11, G_OUTPUT = 12 };
enum { N_INPUT = 1, N_OUTPUT = 2, N_NAME = 3, N_OP = 4, N_ATTR = 5 };
enum { A_NAME = 1, A_F = 2, A_I = 3, A_INTS = 8, A_TYPE = 20 };
enum { A_FLOAT = 1, A_INT = 2, A_INTS_TYPE = 7 };
/* TensorProto and its element types */
enum { T_DIMS = 1, T_DTYPE = 2, T_NAME = 8, T_RAW = 9 };
enum { DT_FLOAT = 1, DT_UINT8 = 2, DT_INT64 = 7 };
/* ValueInfoProto, TypeProto, TypeProto.Tensor, TensorShapeProto and its Dimension */
enum { VI_NAME = 1, VI_TYPE = 2, VI_DOC = 3 };
enum { TY_TENSOR = 1, TT_ELEM = 1, TT_SHAPE = 2, SH_DIM = 1, DIM_VALUE = 1, DIM_PARAM = 2 };

typedef struct attr {
    const char *name;
    int type;
    int64_t i;
    float f;
    const int64_t *ints;
    int n;
} attr;

typedef struct graph {
    frl_bytes *b; /* the GraphProto's fields */
    const frl_policy *p;
    int serial;
} graph;

typedef struct vname {
    char s[48];
} vname;

static vname fresh(graph *g, const char *what)
{
    vname v;
    snprintf(v.s, sizeof v.s, "%s_%d", what, g->serial++);
    return v;
}

/* ---- nodes and tensors ---- */

static void put_attr(frl_bytes *b, const attr *a)
{
    size_t m = frl_pb_begin(b);
    frl_pb_string(b, A_NAME, a->name);
    if (a->type == A_FLOAT)
        frl_pb_float(b, A_F, a->f);
    else if (a->type == A_INT)
        frl_pb_varint(b, A_I, (uint64_t)a->i);
    else
        for (int j = 0; j < a->n; j++)
            frl_pb_varint(b, A_INTS, (uint64_t)a->ints[j]);
    frl_pb_varint(b, A_TYPE, (uint64_t)a->type);
    frl_pb_end(b, N_ATTR, m);
}

/* One node with one output, named after it (output names are unique, so are nodes'). */
static void node(graph *g, const char *op, const char *const *in, int nin, const char *out,
                 const attr *attrs, int na)
{
    size_t m = frl_pb_begin(g->b);
    for (int i = 0; i < nin; i++)
        frl_pb_string(g->b, N_INPUT, in[i]);
    frl_pb_string(g->b, N_OUTPUT, out);
    frl_pb_string(g->b, N_NAME, out);
    frl_pb_string(g->b, N_OP, op);
    for (int i = 0; i < na; i++)
        put_attr(g->b, &attrs[i]);
    frl_pb_end(g->b, G_NODE, m);
}

static void node1(graph *g, const char *op, const char *x, const char *out)
{
    node(g, op, &x, 1, out, NULL, 0);
}

static void node2(graph *g, const char *op, const char *x, const char *y, const char *out)
{
    const char *in[2] = {x, y};
    node(g, op, in, 2, out, NULL, 0);
}

static int little_endian(void)
{
    const uint16_t one = 1;
    unsigned char c;
    memcpy(&c, &one, 1);
    return c == 1;
}

/* raw_data is little-endian whatever the host. */
static void put_raw(frl_bytes *b, const void *data, size_t count, size_t elem)
{
    frl_pb_len_key(b, T_RAW, count * elem);
    if (little_endian()) {
        frl_bytes_put(b, data, count * elem);
        return;
    }
    const unsigned char *d = data;
    for (size_t i = 0; i < count; i++) {
        unsigned char v[8];
        for (size_t j = 0; j < elem; j++)
            v[j] = d[i * elem + elem - 1 - j];
        frl_bytes_put(b, v, elem);
    }
}

static void tensor(graph *g, const char *name, int dtype, const int64_t *dims, int nd,
                   const void *data)
{
    size_t count = 1, elem = dtype == DT_INT64 ? 8 : 4;
    size_t m = frl_pb_begin(g->b);
    for (int i = 0; i < nd; i++) {
        frl_pb_varint(g->b, T_DIMS, (uint64_t)dims[i]);
        count *= (size_t)dims[i];
    }
    frl_pb_varint(g->b, T_DTYPE, (uint64_t)dtype);
    frl_pb_string(g->b, T_NAME, name);
    put_raw(g->b, data, count, elem);
    frl_pb_end(g->b, G_INIT, m);
}

static void floats(graph *g, const char *name, int64_t rows, int64_t cols, const float *v)
{
    int64_t dims[2] = {rows, cols};
    tensor(g, name, DT_FLOAT, rows ? dims : dims + 1, rows ? 2 : 1, v);
}

static void scalar(graph *g, const char *name, float v)
{
    tensor(g, name, DT_FLOAT, NULL, 0, &v);
}

static void int64s(graph *g, const char *name, int64_t n, const int64_t *v)
{
    tensor(g, name, DT_INT64, &n, 1, v);
}

/* ---- graph inputs and outputs ---- */

/* A tensor of shape [batch x dims[0] x ... x dims[nd - 1]] (nd 0: [batch]). */
static void value_info_dims(frl_bytes *b, int field, const char *name, int dtype,
                            const int64_t *dims, int nd, const char *doc)
{
    size_t vi = frl_pb_begin(b);
    frl_pb_string(b, VI_NAME, name);
    size_t ty = frl_pb_begin(b);
    size_t tt = frl_pb_begin(b);
    frl_pb_varint(b, TT_ELEM, (uint64_t)dtype);
    size_t sh = frl_pb_begin(b);
    size_t d = frl_pb_begin(b);
    frl_pb_string(b, DIM_PARAM, "batch");
    frl_pb_end(b, SH_DIM, d);
    for (int i = 0; i < nd; i++) {
        d = frl_pb_begin(b);
        frl_pb_varint(b, DIM_VALUE, (uint64_t)dims[i]);
        frl_pb_end(b, SH_DIM, d);
    }
    frl_pb_end(b, TT_SHAPE, sh);
    frl_pb_end(b, TY_TENSOR, tt);
    frl_pb_end(b, VI_TYPE, ty);
    frl_pb_string(b, VI_DOC, doc);
    frl_pb_end(b, field, vi);
}

/* A float or int64 tensor of shape [batch] or [batch x width] (width 0: [batch]). */
static void value_info(frl_bytes *b, int field, const char *name, int dtype, int64_t width,
                       const char *doc)
{
    value_info_dims(b, field, name, dtype, &width, width > 0, doc);
}

/* ---- the acting path ---- */

static const char *act_op(frl_nn_act a)
{
    return a == FRL_NN_TANH ? "Tanh" : a == FRL_NN_RELU ? "Relu" : "Elu";
}

/* An MLP's layers from x; the last output is named out. */
static void mlp(graph *g, const frl_mlp *m, const char *net, const char *x, const char *out)
{
    vname cur;
    snprintf(cur.s, sizeof cur.s, "%s", x);
    for (int32_t l = 0; l < m->layers; l++) {
        char w[64], bias[64];
        snprintf(w, sizeof w, "%s.%d.weight", net, (int)l);
        snprintf(bias, sizeof bias, "%s.%d.bias", net, (int)l);
        floats(g, w, m->width[l], m->width[l + 1], g->p->params + m->off_w[l]);
        floats(g, bias, 0, m->width[l + 1], g->p->params + m->off_b[l]);
        int activated = l + 1 < m->layers || m->activate_last;
        vname y = fresh(g, net);
        const char *dst = activated ? y.s : out;
        const char *in[3] = {cur.s, w, bias};
        node(g, "Gemm", in, 3, dst, NULL, 0);
        if (!activated)
            break;
        vname a = fresh(g, net);
        const char *adst = l + 1 == m->layers ? out : a.s;
        attr alpha = {"alpha", A_FLOAT, 0, 1.0f, NULL, 0};
        node(g, act_op(m->act), (const char *const[]){y.s}, 1, adst, &alpha,
             m->act == FRL_NN_ELU);
        cur = a;
    }
}

/* One layer of the conv stack on NCHW x: Conv with the weights rearranged from the
 * library's wt[kh kw in_c x out_c] to ONNX's [out_c x in_c x kh x kw], then its ReLU. */
static void conv_layer(graph *g, int32_t l, const char *x, vname *y)
{
    const frl_conv2d *c = &g->p->cnn.conv[l];
    const float *wt = g->p->params + c->off_w;
    size_t n = (size_t)c->patch * (size_t)c->out_c;
    float *w = frl_alloc(g->b->alloc, sizeof(float) * (n ? n : 1), 64);
    if (!w) {
        g->b->failed = 1;
        return;
    }
    for (int32_t oc = 0; oc < c->out_c; oc++)
        for (int32_t ic = 0; ic < c->in_c; ic++)
            for (int32_t ky = 0; ky < c->kh; ky++)
                for (int32_t kx = 0; kx < c->kw; kx++)
                    w[(((size_t)oc * (size_t)c->in_c + (size_t)ic) * (size_t)c->kh +
                       (size_t)ky) * (size_t)c->kw + (size_t)kx] =
                        wt[(((size_t)ky * (size_t)c->kw + (size_t)kx) * (size_t)c->in_c +
                            (size_t)ic) * (size_t)c->out_c + (size_t)oc];
    char wn[48], bn[48];
    snprintf(wn, sizeof wn, "conv.%d.weight", (int)l);
    snprintf(bn, sizeof bn, "conv.%d.bias", (int)l);
    int64_t dims[4] = {c->out_c, c->in_c, c->kh, c->kw};
    tensor(g, wn, DT_FLOAT, dims, 4, w);
    frl_free(g->b->alloc, w);
    floats(g, bn, 0, c->out_c, g->p->params + c->off_b);
    int64_t ks[2] = {c->kh, c->kw}, st[2] = {c->stride, c->stride};
    int64_t pads[4] = {c->pad, c->pad, c->pad, c->pad};
    attr a[3] = {{"kernel_shape", A_INTS_TYPE, 0, 0, ks, 2},
                 {"strides", A_INTS_TYPE, 0, 0, st, 2},
                 {"pads", A_INTS_TYPE, 0, 0, pads, 4}};
    vname z = fresh(g, "conv");
    node(g, "Conv", (const char *const[]){x, wn, bn}, 3, z.s, a, 3);
    *y = fresh(g, "conv");
    node1(g, "Relu", z.s, y->s);
}

/* A frame stack's input: the k - 1 earlier frames ("state", uint8 [batch, k-1, H, W, C],
 * oldest first, as the library's act keeps them) and this one joined into k frames;
 * "state_out" is the last k - 1 of them, the next call's state. Scaled as one frame is,
 * then [batch, k, C, H, W] read as NCHW with k C channels, channel j C + c being frame
 * j's channel c: the library's order (nn/cnn.c interleaves a stack the same way). */
static void stacked_nchw(graph *g, const char *scaled_frames, const char *out)
{
    const frl_cnn *n = &g->p->cnn;
    int64_t k = n->frames, c = n->in_c / n->frames;
    int64_t shape[4] = {0, k * c, n->in_h, n->in_w};
    static const int64_t kchw[5] = {0, 1, 4, 2, 3};
    attr perm = {"perm", A_INTS_TYPE, 0, 0, kchw, 5};
    vname t = fresh(g, "obs");
    node(g, "Transpose", (const char *const[]){scaled_frames}, 1, t.s, &perm, 1);
    int64s(g, "obs.stack_shape", 4, shape);
    node2(g, "Reshape", t.s, "obs.stack_shape", out);
}

static void stack_frames(graph *g, vname *frames)
{
    const frl_cnn *n = &g->p->cnn;
    int64_t k = n->frames, one_frame[5] = {0, 1, n->in_h, n->in_w, n->in_c / n->frames};
    int64_t from = 1, axis = 1;
    int64s(g, "obs.frame_shape", 5, one_frame);
    vname f = fresh(g, "obs");
    node2(g, "Reshape", "observation", "obs.frame_shape", f.s);
    *frames = fresh(g, "stack");
    attr ax = {"axis", A_INT, 1, 0, NULL, 0};
    node(g, "Concat", (const char *const[]){"state", f.s}, 2, frames->s, &ax, 1);
    int64s(g, "stack.from", 1, &from);
    int64s(g, "stack.to", 1, &k);
    int64s(g, "stack.axis", 1, &axis);
    node(g, "Slice", (const char *const[]){frames->s, "stack.from", "stack.to", "stack.axis"}, 4,
         "state_out", NULL, 0);
}

/* An image observation through the conv stack: uint8 NHWC in, scaled by 1/255 as the
 * library scales it (one float multiply: the same bits), NCHW for Conv, and back to
 * NHWC before flattening, since the library's features are the NHWC output as it lies. */
static void image_input(graph *g, vname *x)
{
    attr to = {"to", A_INT, DT_FLOAT, 0, NULL, 0};
    vname in = {"observation"}, f = fresh(g, "obs"), s = fresh(g, "obs"), t = fresh(g, "obs");
    if (g->p->stack > 1)
        stack_frames(g, &in);
    node(g, "Cast", (const char *const[]){in.s}, 1, f.s, &to, 1);
    scalar(g, "obs.scale", 1.0f / 255.0f);
    node2(g, "Mul", f.s, "obs.scale", s.s);
    static const int64_t nchw[4] = {0, 3, 1, 2}, nhwc[4] = {0, 2, 3, 1};
    attr perm = {"perm", A_INTS_TYPE, 0, 0, nchw, 4};
    if (g->p->stack > 1)
        stacked_nchw(g, s.s, t.s);
    else
        node(g, "Transpose", (const char *const[]){s.s}, 1, t.s, &perm, 1);
    vname cur = t;
    for (int32_t l = 0; l < g->p->cnn.layers; l++)
        conv_layer(g, l, cur.s, &cur);
    vname back = fresh(g, "conv");
    attr perm2 = {"perm", A_INTS_TYPE, 0, 0, nhwc, 4};
    node(g, "Transpose", (const char *const[]){cur.s}, 1, back.s, &perm2, 1);
    *x = fresh(g, "features");
    attr axis = {"axis", A_INT, 1, 0, NULL, 0};
    node(g, "Flatten", (const char *const[]){back.s}, 1, x->s, &axis, 1);
}

/* (x - mean) * inv_std clipped to [-clip, clip], the normaliser's width values a row
 * (the library's order of operations). */
static void normalised(graph *g, const char *src, int32_t width, vname *x)
{
    const frl_policy *p = g->p;
    floats(g, "obs.mean", 0, width, p->norm.use_mean);
    floats(g, "obs.inv_std", 0, width, p->norm.use_inv_std);
    scalar(g, "obs.clip_low", -p->norm.clip);
    scalar(g, "obs.clip_high", p->norm.clip);
    vname c = fresh(g, "obs"), s = fresh(g, "obs");
    node2(g, "Sub", src, "obs.mean", c.s);
    node2(g, "Mul", c.s, "obs.inv_std", s.s);
    *x = fresh(g, "obs");
    const char *in[3] = {s.s, "obs.clip_low", "obs.clip_high"};
    node(g, "Clip", in, 3, x->s, NULL, 0);
}

/* A mixed observation's networks read the image's features, then its vector (normalised
 * with policy.obs_norm), as frl_policy_encode joins them. */
static void join_vector(graph *g, vname *x)
{
    vname v = {"vector"}, feat = *x;
    if (g->p->obs_norm)
        normalised(g, "vector", g->p->vec_w, &v);
    *x = fresh(g, "joined");
    attr axis = {"axis", A_INT, 1, 0, NULL, 0};
    node(g, "Concat", (const char *const[]){feat.s, v.s}, 2, x->s, &axis, 1);
}

/* What the networks read: the observations, one-hot rows of discrete ones, the
 * normalised and clipped ones, or an image's conv features (joined by a mixed
 * observation's vector). */
static void input(graph *g, vname *x)
{
    const frl_policy *p = g->p;
    snprintf(x->s, sizeof x->s, "observation");
    if (p->cnn.layers) {
        image_input(g, x);
        if (p->vec_w)
            join_vector(g, x);
        return;
    }
    if (p->obs_n) {
        /* Cast truncates and OneHot leaves the row of an index >= n zero but counts a
         * negative one from the end; the library refuses both in act, so such input is
         * the host's error either way (doc/export.md). */
        int64_t flat = -1, depth = p->obs_n;
        float onoff[2] = {0.0f, 1.0f};
        int64s(g, "obs.flat", 1, &flat);
        tensor(g, "obs.depth", DT_INT64, NULL, 0, &depth);
        floats(g, "obs.onoff", 0, 2, onoff);
        vname r = fresh(g, "obs"), i = fresh(g, "obs");
        node2(g, "Reshape", "observation", "obs.flat", r.s);
        attr to = {"to", A_INT, DT_INT64, 0, NULL, 0};
        node(g, "Cast", (const char *const[]){r.s}, 1, i.s, &to, 1);
        *x = fresh(g, "obs");
        const char *in[3] = {i.s, "obs.depth", "obs.onoff"};
        attr axis = {"axis", A_INT, -1, 0, NULL, 0};
        node(g, "OneHot", in, 3, x->s, &axis, 1);
    } else if (p->obs_norm) {
        normalised(g, "observation", p->obs_w, x);
    }
}

static void argmax(graph *g, const char *x, const char *out)
{
    attr a[3] = {{"axis", A_INT, 1, 0, NULL, 0},
                 {"keepdims", A_INT, 0, 0, NULL, 0},
                 {"select_last_index", A_INT, 0, 0, NULL, 0}};
    node(g, "ArgMax", (const char *const[]){x}, 1, out, a, 3);
}

/* value [batch] from a [batch x 1] column. */
static void flatten_value(graph *g, const char *col)
{
    int64_t flat = -1;
    int64s(g, "value.flat", 1, &flat);
    node2(g, "Reshape", col, "value.flat", "value");
}

static void reduce(graph *g, const char *op, const char *x, int keep, const char *out)
{
    int64_t axis = 1;
    attr a[2] = {{"axes", A_INTS_TYPE, 0, 0, &axis, 1}, {"keepdims", A_INT, keep, 0, NULL, 0}};
    node(g, op, (const char *const[]){x}, 1, out, a, 2);
}

/* Q-values: one network, or the dueling trunk with Q = V + A - mean(A). */
static void q_heads(graph *g, const char *x)
{
    const frl_policy *p = g->p;
    if (p->head == FRL_POLICY_HEAD_Q) {
        mlp(g, &p->actor, "q", x, "q");
    } else {
        vname t = fresh(g, "trunk"), a = fresh(g, "advantage"), v = fresh(g, "state_value");
        vname m = fresh(g, "advantage"), c = fresh(g, "advantage");
        mlp(g, &p->trunk, "trunk", x, t.s);
        mlp(g, &p->actor, "advantage", t.s, a.s);
        mlp(g, &p->critic, "state_value", t.s, v.s);
        reduce(g, "ReduceMean", a.s, 1, m.s);
        node2(g, "Sub", a.s, m.s, c.s);
        node2(g, "Add", c.s, v.s, "q");
    }
    reduce(g, "ReduceMax", "q", 0, "value");
    argmax(g, "q", "action");
}

/* The actor's and the critic's heads on their inputs. */
static void heads(graph *g, const char *actor_in, const char *critic_in)
{
    const frl_policy *p = g->p;
    vname v = fresh(g, "critic");
    const char *out = p->discrete ? "logits" : "mean";
    mlp(g, &p->actor, "actor", actor_in, out);
    mlp(g, &p->critic, "critic", critic_in, v.s);
    flatten_value(g, v.s);
    if (p->discrete) {
        argmax(g, "logits", "action");
        return;
    }
    /* The log-std does not depend on the state: broadcast to [batch x n]. */
    floats(g, "log_std.param", 0, p->out_w, p->params + p->log_std_off);
    vname shape = fresh(g, "log_std");
    node1(g, "Shape", "mean", shape.s);
    node2(g, "Expand", "log_std.param", shape.s, "log_std");
    node1(g, "Identity", "mean", "action");
}

static void actor_critic(graph *g, const char *x)
{
    const frl_policy *p = g->p;
    vname t;
    snprintf(t.s, sizeof t.s, "%s", x);
    if (p->shared) {
        t = fresh(g, "trunk");
        mlp(g, &p->trunk, "trunk", x, t.s);
    }
    heads(g, t.s, t.s);
}

/* ---- recurrent policies: one step, the state an input and an output ---- */

/* Columns [from, to) of x. */
static void slice_cols(graph *g, const char *x, int64_t from, int64_t to, const char *out)
{
    vname s = fresh(g, "from"), e = fresh(g, "to"), ax = fresh(g, "axis");
    int64_t one = 1;
    int64s(g, s.s, 1, &from);
    int64s(g, e.s, 1, &to);
    int64s(g, ax.s, 1, &one);
    const char *in[4] = {x, s.s, e.s, ax.s};
    node(g, "Slice", in, 4, out, NULL, 0);
}

/* op(x + y) into out (op NULL: the sum alone). */
static void add_then(graph *g, const char *op, const char *x, const char *y, const char *out)
{
    if (!op) {
        node2(g, "Add", x, y, out);
        return;
    }
    vname t = fresh(g, "sum");
    node2(g, "Add", x, y, t.s);
    node1(g, op, t.s, out);
}

/* Gate j of the G h pre-activations in gx and gh (the GRU keeps them apart for n). */
static void gate_slices(graph *g, const char *x, int64_t h, int64_t j, vname *out)
{
    *out = fresh(g, "gate");
    slice_cols(g, x, j * h, (j + 1) * h, out->s);
}

/* h' = (1 - z) n + z h, with r, z and n as PyTorch's GRU (nn/rnn.h). */
static void gru_cell(graph *g, int64_t h, const char *gx, const char *gh, const char *hp,
                     const char *h_out)
{
    vname xs[3], hs[3], r = fresh(g, "r"), z = fresh(g, "z"), n = fresh(g, "n");
    vname rn = fresh(g, "n"), keep = fresh(g, "z"), a = fresh(g, "h"), b = fresh(g, "h");
    for (int64_t j = 0; j < 3; j++) {
        gate_slices(g, gx, h, j, &xs[j]);
        gate_slices(g, gh, h, j, &hs[j]);
    }
    add_then(g, "Sigmoid", xs[0].s, hs[0].s, r.s);
    add_then(g, "Sigmoid", xs[1].s, hs[1].s, z.s);
    node2(g, "Mul", r.s, hs[2].s, rn.s);
    add_then(g, "Tanh", xs[2].s, rn.s, n.s);
    node2(g, "Sub", "core.one", z.s, keep.s);
    node2(g, "Mul", keep.s, n.s, a.s);
    node2(g, "Mul", z.s, hp, b.s);
    node2(g, "Add", a.s, b.s, h_out);
}

/* c' = f c + i g, h' = o tanh(c'), gates i, f, g, o of gx + gh. */
static void lstm_cell(graph *g, int64_t h, const char *gx, const char *gh, const char *cp,
                      const char *h_out, const char *c_out)
{
    static const char *ops[4] = {"Sigmoid", "Sigmoid", "Tanh", "Sigmoid"};
    vname sum = fresh(g, "gates"), pre[4], act[4], fc = fresh(g, "c"), ig = fresh(g, "c");
    vname tc = fresh(g, "c");
    node2(g, "Add", gx, gh, sum.s);
    for (int64_t j = 0; j < 4; j++) {
        gate_slices(g, sum.s, h, j, &pre[j]);
        act[j] = fresh(g, "gate");
        node1(g, ops[j], pre[j].s, act[j].s);
    }
    node2(g, "Mul", act[1].s, cp, fc.s);
    node2(g, "Mul", act[0].s, act[2].s, ig.s);
    node2(g, "Add", fc.s, ig.s, c_out);
    node1(g, "Tanh", c_out, tc.s);
    node2(g, "Mul", act[3].s, tc.s, h_out);
}

/* Tower i: its encoder, then one core step from its part of "state"; h_out gets h,
 * part its new state (h, or h then c). */
static void tower(graph *g, int32_t i, const char *x, int64_t off, const vname *h,
                  vname *part)
{
    const frl_policy *p = g->p;
    const frl_rnn *r = &p->core[i];
    int64_t hw = r->h, gw = (int64_t)r->gates * hw;
    char net[24], wx[32], wh[32], bx[32], bh[32];
    snprintf(net, sizeof net, "encoder%d", (int)i);
    vname e = fresh(g, net), hp = fresh(g, "h_prev"), gx = fresh(g, "gx"), gh = fresh(g, "gh");
    if (p->enc[i].layers) {
        mlp(g, &p->enc[i], net, x, e.s);
        x = e.s;
    }
    snprintf(wx, sizeof wx, "core%d.wx", (int)i);
    snprintf(wh, sizeof wh, "core%d.wh", (int)i);
    snprintf(bx, sizeof bx, "core%d.bx", (int)i);
    snprintf(bh, sizeof bh, "core%d.bh", (int)i);
    floats(g, wx, r->in, gw, p->params + r->off_wx);
    floats(g, wh, hw, gw, p->params + r->off_wh);
    floats(g, bx, 0, gw, p->params + r->off_bx);
    floats(g, bh, 0, gw, p->params + r->off_bh);
    slice_cols(g, "state", off, off + hw, hp.s);
    node(g, "Gemm", (const char *const[]){x, wx, bx}, 3, gx.s, NULL, 0);
    node(g, "Gemm", (const char *const[]){hp.s, wh, bh}, 3, gh.s, NULL, 0);
    if (r->kind == FRL_RNN_GRU) {
        gru_cell(g, hw, gx.s, gh.s, hp.s, h->s);
        *part = *h;
        return;
    }
    vname cp = fresh(g, "c_prev"), c = fresh(g, "c");
    slice_cols(g, "state", off + hw, off + 2 * hw, cp.s);
    lstm_cell(g, hw, gx.s, gh.s, cp.s, h->s, c.s);
    *part = fresh(g, "state");
    attr axis = {"axis", A_INT, 1, 0, NULL, 0};
    node(g, "Concat", (const char *const[]){h->s, c.s}, 2, part->s, &axis, 1);
}

static void recurrent(graph *g, const char *x)
{
    const frl_policy *p = g->p;
    vname hs[2], parts[2];
    int64_t off = 0;
    int gru = 0;
    for (int32_t i = 0; i < p->towers; i++)
        gru |= p->core[i].kind == FRL_RNN_GRU;
    if (gru) /* the GRU's 1 - z; an LSTM's graph would leave it unused */
        scalar(g, "core.one", 1.0f);
    for (int32_t i = 0; i < p->towers; i++) {
        hs[i] = fresh(g, "core");
        tower(g, i, x, off, &hs[i], &parts[i]);
        off += frl_rnn_state_w(&p->core[i]);
    }
    attr axis = {"axis", A_INT, 1, 0, NULL, 0};
    if (p->towers == 2)
        node(g, "Concat", (const char *const[]){parts[0].s, parts[1].s}, 2, "state_out", &axis,
             1);
    else
        node1(g, "Identity", parts[0].s, "state_out");
    heads(g, hs[0].s, hs[p->towers - 1].s);
}

/* ---- the model ---- */

/* A frame stack's state: [k - 1, H, W, C] bytes after the batch. */
static void stack_dims(const frl_policy *p, int64_t d[4])
{
    d[0] = p->stack - 1;
    memcpy(d + 1, p->obs_space->shape, 3 * sizeof(int64_t));
}

static void graph_io(frl_bytes *b, const frl_policy *p)
{
    int kind = frl_export_kind_of(p);
    int64_t sd[4] = {0};
    if (p->stack > 1)
        stack_dims(p, sd);
    if (p->cnn.layers) {
        const frl_cnn *n = &p->cnn;
        const int64_t shape[3] = {n->in_h, n->in_w, n->in_c / n->frames};
        value_info_dims(b, G_INPUT, "observation", DT_UINT8, shape, 3,
                        "images: height x width x channels bytes (NHWC), as the library's "
                        "image space");
        if (p->vec_w)
            value_info(b, G_INPUT, "vector", DT_FLOAT, p->vec_w,
                       "a mixed observation's vector part");
    } else {
        value_info(b, G_INPUT, "observation", DT_FLOAT, p->obs_w,
                   p->obs_n ? "discrete observation: the index as a float"
                            : "observation rows");
    }
    if (p->stack > 1)
        value_info_dims(b, G_INPUT, "state", DT_UINT8, sd, 4,
                        "the frame stack's earlier frames, oldest first (zeros for a new "
                        "episode), each as the observation");
    else if (p->state_w)
        value_info(b, G_INPUT, "state", DT_FLOAT, p->state_w,
                   "recurrent state before the step (zeros for a new episode)");
    if (kind == FRL_EXPORT_CATEGORICAL) {
        value_info(b, G_OUTPUT, "logits", DT_FLOAT, p->out_w, "categorical logits");
    } else if (kind == FRL_EXPORT_GAUSSIAN) {
        value_info(b, G_OUTPUT, "mean", DT_FLOAT, p->out_w, "Gaussian mean");
        value_info(b, G_OUTPUT, "log_std", DT_FLOAT, p->out_w, "Gaussian log standard deviation");
    } else {
        value_info(b, G_OUTPUT, "q", DT_FLOAT, p->out_w, "Q-value of each action");
    }
    value_info(b, G_OUTPUT, "value", DT_FLOAT, 0,
               kind == FRL_EXPORT_QVALUES ? "largest Q-value" : "state value");
    value_info(b, G_OUTPUT, "action", kind == FRL_EXPORT_GAUSSIAN ? DT_FLOAT : DT_INT64,
               kind == FRL_EXPORT_GAUSSIAN ? p->out_w : 0, "greedy action");
    if (p->stack > 1)
        value_info_dims(b, G_OUTPUT, "state_out", DT_UINT8, sd, 4,
                        "the stack's last k - 1 frames after the step (the next call's state)");
    else if (p->state_w)
        value_info(b, G_OUTPUT, "state_out", DT_FLOAT, p->state_w,
                   "recurrent state after the step (the next call's state)");
}

static void write_graph(frl_bytes *b, const frl_policy *p)
{
    graph g = {b, p, 0};
    size_t m = frl_pb_begin(b);
    frl_pb_string(b, G_NAME, "fastrl_policy");
    vname x;
    input(&g, &x);
    if (p->head != FRL_POLICY_HEAD_ACTOR_CRITIC)
        q_heads(&g, x.s);
    else if (p->towers)
        recurrent(&g, x.s);
    else
        actor_critic(&g, x.s);
    graph_io(b, p);
    frl_pb_string(b, G_DOC,
                  "fastrl policy: greedy action and the distribution's parameters; the host "
                  "samples (doc/export.md)");
    frl_pb_end(b, M_GRAPH, m);
}

static void meta(frl_bytes *b, const char *key, const char *value)
{
    size_t m = frl_pb_begin(b);
    frl_pb_string(b, KV_KEY, key);
    frl_pb_string(b, KV_VALUE, value);
    frl_pb_end(b, M_META, m);
}

/* The action space's bounds, for hosts that clip a sampled Gaussian action. */
static void meta_bounds(frl_bytes *b, const frl_policy *p)
{
    static const char *keys[2] = {"action_low", "action_high"};
    for (int k = 0; k < 2; k++) {
        const float *v = k ? frl_space_high(p->act_space) : frl_space_low(p->act_space);
        frl_bytes text;
        frl_bytes_init(&text, b->alloc);
        for (int32_t i = 0; i < p->out_w; i++)
            frl_bytes_printf(&text, "%s%.9g", i ? "," : "", (double)v[i]);
        frl_bytes_put(&text, "", 1);
        if (text.failed)
            b->failed = 1;
        else
            meta(b, keys[k], (const char *)text.data);
        frl_bytes_free(&text);
    }
}

static void write_model(frl_bytes *b, const frl_policy *p)
{
    static const char *kinds[3] = {"categorical", "gaussian", "q_values"};
    frl_pb_varint(b, M_IR, IR_VERSION);
    frl_pb_string(b, M_PRODUCER, "fastrl");
    frl_pb_string(b, M_PRODUCER_VERSION, frl_version_string());
    size_t m = frl_pb_begin(b);
    frl_pb_string(b, OPSET_DOMAIN, "");
    frl_pb_varint(b, OPSET_VERSION, OPSET);
    frl_pb_end(b, M_OPSET, m);
    write_graph(b, p);
    meta(b, "fastrl.kind", kinds[frl_export_kind_of(p)]);
    if (!p->discrete)
        meta_bounds(b, p);
}

frl_status frl_export_onnx(const frl_policy *p, const char *path, char *err)
{
    const frl_allocator *a = &p->rt->alloc;
    frl_bytes b;
    frl_bytes_init(&b, a);
    write_model(&b, p);
    frl_status st = b.failed ? frl_fail(err, FRL_ERR_NOMEM,
                                        "frl_policy_export: out of memory building the "
                                        "ONNX model (%zu bytes so far)", b.len)
                             : frl_file_replace(a, path, b.data, b.len, "frl_policy_export", err);
    frl_bytes_free(&b);
    return st;
}
