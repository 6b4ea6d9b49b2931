/* The C export's weight arrays (c_weights.h): float32 printed with 9 significant digits
 * (which gives back the same float), or int8 with a float scale per output row (its
 * largest |w| / 127; the sum of q * x is scaled once). */
#include <math.h>
#include <stdio.h>

#include "export/c_weights.h"

void frl_cgen_float_array(frl_cgen *g, const char *storage, const char *what, const float *v,
                          size_t n)
{
    frl_bytes_printf(g->out, "%sconst float %s_%s[%zu] = {", storage, g->name, what, n);
    for (size_t i = 0; i < n; i++)
        frl_bytes_printf(g->out, "%s%.9ef", i % 6 ? ", " : (i ? ",\n    " : "\n    "),
                         (double)v[i]);
    frl_bytes_printf(g->out, "\n};\n");
}

/* An int8 row's scale: its largest |w| / 127 (1 for a row of zeros). */
static float row_scale(const float *wt, size_t in, size_t out, size_t o)
{
    float amax = 0.0f;
    for (size_t i = 0; i < in; i++)
        amax = fmaxf(amax, fabsf(wt[i * out + o]));
    return amax > 0.0f ? amax / 127.0f : 1.0f;
}

static void int8_matrix(frl_cgen *g, const float *wt, size_t in, size_t out, const char *what)
{
    frl_bytes_printf(g->out, "static const signed char %s_%s_q[%zu] = {", g->name, what,
                     in * out);
    for (size_t o = 0; o < out; o++) {
        float s = row_scale(wt, in, out, o);
        for (size_t i = 0; i < in; i++) {
            long q = lrintf(wt[i * out + o] / s);
            q = q > 127 ? 127 : (q < -127 ? -127 : q);
            size_t k = o * in + i;
            frl_bytes_printf(g->out, "%s%ld", k % 16 ? ", " : (k ? ",\n    " : "\n    "), q);
        }
    }
    frl_bytes_printf(g->out, "\n};\nstatic const float %s_%s_s[%zu] = {", g->name, what, out);
    for (size_t o = 0; o < out; o++)
        frl_bytes_printf(g->out, "%s%.9ef", o % 6 ? ", " : (o ? ",\n    " : "\n    "),
                         (double)row_scale(wt, in, out, o));
    frl_bytes_printf(g->out, "\n};\n");
}

/* W[out x in] from the library's wt[in x out] (as floats, or int8 and scales), and the
 * bias: NAME_what_w (or _q and _s) and NAME_what_b. */
void frl_cgen_matrix(frl_cgen *g, const float *wt, const float *bias, size_t in, size_t out,
                   const char *what)
{
    char b[80];
    if (g->int8) {
        int8_matrix(g, wt, in, out, what);
    } else {
        frl_bytes_printf(g->out, "static const float %s_%s_w[%zu] = {", g->name, what, in * out);
        for (size_t k = 0; k < in * out; k++)
            frl_bytes_printf(g->out, "%s%.9ef", k % 6 ? ", " : (k ? ",\n    " : "\n    "),
                             (double)wt[(k % in) * out + k / in]);
        frl_bytes_printf(g->out, "\n};\n");
    }
    snprintf(b, sizeof b, "%s_b", what);
    frl_cgen_float_array(g, "static ", b, bias, out);
}

