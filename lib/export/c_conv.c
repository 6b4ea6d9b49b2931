/* The C export of a convolutional encoder (c_conv.h). The image arrives as the library
 * takes it, its bytes behind the float pointer of an observation row (H x W x C, NHWC;
 * with a frame stack, the earlier frames behind the state pointer as act keeps them);
 * the bytes are scaled by 1/255 as the library scales them (the same float multiply),
 * and each layer is a direct convolution: for every output position and channel, the
 * dot product of the patch (kh rows of kw * in_c contiguous values in NHWC) with that
 * channel's weights, laid out W[out_c x (kh kw in_c)] (the library's wt transposed, so
 * the patch order matches), the bias, then ReLU. Two buffers alternate between layers,
 * the first holding the scaled image. */
#include <stdio.h>

#include "export/c_conv.h"
#include "export/c_weights.h"

static size_t max_size(size_t a, size_t b)
{
    return a > b ? a : b;
}

/* Buffer A holds the scaled image and the outputs of layers 1, 3, ...; B those of
 * layers 0, 2, ... */
static void buffer_sizes(const frl_cnn *n, size_t *a, size_t *b)
{
    *a = frl_cnn_in_floats(n);
    *b = 0;
    for (int32_t l = 0; l < n->layers; l++) {
        size_t out = frl_conv2d_out_size(&n->conv[l]);
        if (l % 2)
            *a = max_size(*a, out);
        else
            *b = max_size(*b, out);
    }
}

size_t frl_cgen_conv_stack_floats(const frl_policy *p)
{
    if (!p->cnn.layers)
        return 0;
    size_t a, b;
    buffer_sizes(&p->cnn, &a, &b);
    return a + b;
}

void frl_cgen_conv_weights(frl_cgen *g)
{
    const frl_cnn *n = &g->p->cnn;
    for (int32_t l = 0; l < n->layers; l++) {
        const frl_conv2d *c = &n->conv[l];
        char what[32];
        snprintf(what, sizeof what, "conv_%d", (int)l);
        frl_cgen_matrix(g, g->p->params + c->off_w, g->p->params + c->off_b, (size_t)c->patch,
                        (size_t)c->out_c, what);
    }
}

void frl_cgen_conv_helper(frl_cgen *g)
{
    const int q = g->int8;
    frl_bytes_printf(g->out,
        "\n/* y = relu(conv(x)): x [ih x iw x ic], y [oh x ow x oc] (NHWC), w [oc x (k k ic)],\n"
        " * k x k kernels, stride st, zero padding pad. */\n"
        "static void %s_conv(const float *restrict x, int ih, int iw, int ic,\n"
        "    const %s *restrict w, %sconst float *restrict b, int oc, int k, int st, int pad,\n"
        "    float *restrict y, int oh, int ow)\n{\n"
        "    int r, c, o, ky, kx, i;\n"
        "    for (r = 0; r < oh; r++)\n        for (c = 0; c < ow; c++)\n"
        "            for (o = 0; o < oc; o++) {\n"
        "                const %s *wo = w + (long)o * k * k * ic;\n"
        "                float sum = 0.0f;\n"
        "                for (ky = 0; ky < k; ky++) {\n"
        "                    int yy = r * st + ky - pad;\n"
        "                    if (yy < 0 || yy >= ih)\n                        continue;\n"
        "                    for (kx = 0; kx < k; kx++) {\n"
        "                        int xx = c * st + kx - pad;\n"
        "                        const float *px;\n                        const %s *pw;\n"
        "                        if (xx < 0 || xx >= iw)\n                            continue;\n"
        "                        px = x + ((long)yy * iw + xx) * ic;\n"
        "                        pw = wo + ((long)ky * k + kx) * ic;\n"
        "                        for (i = 0; i < ic; i++)\n"
        "                            sum += %spw[i] * px[i];\n"
        "                    }\n                }\n"
        "                sum = b[o] + %ssum;\n"
        "                y[((long)r * ow + c) * oc + o] = sum < 0.0f ? 0.0f : sum;\n"
        "            }\n}\n",
        g->name, q ? "signed char" : "float", q ? "const float *restrict s, " : "",
        q ? "signed char" : "float", q ? "signed char" : "float", q ? "(float)" : "",
        q ? "s[o] * " : "");
}

void frl_cgen_conv_locals(frl_cgen *g)
{
    size_t a, b;
    buffer_sizes(&g->p->cnn, &a, &b);
    frl_bytes_printf(g->out, "    float ca[%zu], cb[%zu];\n    const unsigned char *px = "
                             "(const unsigned char *)obs;\n", a, b);
}

/* A frame stack's k frames (state's k - 1 earlier ones, oldest first, then obs) into
 * k c channels a pixel, channel j c + ch being frame j's ch (nn/cnn.c's order), then
 * the state moved on: the oldest frame out, obs's in. */
static void emit_stack_input(frl_cgen *g)
{
    const frl_cnn *n = &g->p->cnn;
    int k = n->frames, c = n->in_c / n->frames, pixels = n->in_h * n->in_w;
    long fb = (long)pixels * c;
    frl_bytes_printf(g->out,
        "    {\n        unsigned char *sb = (unsigned char *)state;\n"
        "        const unsigned char *fr;\n        long q, j, ch;\n"
        "        for (j = 0; j < %d; j++) {\n"
        "            fr = j < %d ? sb + j * %ldL : px;\n"
        "            for (q = 0; q < %d; q++)\n"
        "                for (ch = 0; ch < %d; ch++)\n"
        "                    ca[(q * %d + j) * %d + ch] = (float)fr[q * %d + ch] * (1.0f / 255.0f);\n"
        "        }\n"
        "        for (q = 0; q < %ldL; q++)\n            sb[q] = q < %ldL ? sb[q + %ldL] : px[q - %ldL];\n"
        "    }\n",
        k, k - 1, fb, pixels, c, k, c, c, (long)(k - 1) * fb, (long)(k - 2) * fb, fb,
        (long)(k - 2) * fb);
}

const char *frl_cgen_conv_forward(frl_cgen *g)
{
    const frl_cnn *n = &g->p->cnn;
    const char *nm = g->name;
    if (n->frames > 1)
        emit_stack_input(g);
    else
        frl_bytes_printf(g->out, "    for (o = 0; o < %zu; o++)\n"
                                 "        ca[o] = (float)px[o] * (1.0f / 255.0f);\n",
                         frl_cnn_in_floats(n));
    static const char *bufs[2] = {"ca", "cb"};
    for (int32_t l = 0; l < n->layers; l++) {
        const frl_conv2d *c = &n->conv[l];
        const char *x = bufs[l % 2], *y = bufs[(l + 1) % 2];
        if (g->int8)
            frl_bytes_printf(g->out, "    %s_conv(%s, %d, %d, %d, %s_conv_%d_q, %s_conv_%d_s, "
                                     "%s_conv_%d_b, %d, %d, %d, %d, %s, %d, %d);\n",
                             nm, x, c->in_h, c->in_w, c->in_c, nm, (int)l, nm, (int)l, nm,
                             (int)l, c->out_c, c->kh, c->stride, c->pad, y, c->out_h, c->out_w);
        else
            frl_bytes_printf(g->out, "    %s_conv(%s, %d, %d, %d, %s_conv_%d_w, %s_conv_%d_b, "
                                     "%d, %d, %d, %d, %s, %d, %d);\n",
                             nm, x, c->in_h, c->in_w, c->in_c, nm, (int)l, nm, (int)l,
                             c->out_c, c->kh, c->stride, c->pad, y, c->out_h, c->out_w);
    }
    return bufs[n->layers % 2];
}
