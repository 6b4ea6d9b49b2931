/* The C export's files (c_export.h): NAME.h, which declares what NAME.c defines
 * (c_source.c), and the optional latency probe NAME_probe.c. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "export/c_export.h"
#include "export/c_source.h"
#include "export/kind.h"
#include "io/crc32c.h"
#include "io/file.h"

static void upper(const char *s, char *out, size_t size)
{
    size_t i = 0;
    for (; s[i] && i + 1 < size; i++)
        out[i] = (char)(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 'a' + 'A' : s[i]);
    out[i] = '\0';
}

static const char *outputs_text(int kind)
{
    static const char *outs[3] = {"the categorical logits", "the Gaussian means",
                                  "the Q-value of each action"};
    return outs[kind];
}

static void header_sizes(frl_cgen *g, const char *up)
{
    const frl_policy *p = g->p;
    frl_bytes_printf(g->out, "/* Floats of one observation%s. */\n#define %s_OBS_SIZE %d\n",
                     p->obs_n ? " (discrete: its index, as a float)"
                     : p->vec_w ? " (a mixed row, as fastrl's: the image's height x width x\n"
                                  " * channels bytes, NHWC, behind the float pointer, 4 a float,"
                                  "\n * then the vector's floats at _VECTOR_AT below)"
                     : p->cnn.layers ? " (an image: its height x width x channels bytes, "
                                       "NHWC,\n * behind the float pointer, 4 a float, as "
                                       "fastrl's image rows)" : "",
                     up, (int)p->obs_w);
    if (p->vec_w)
        frl_bytes_printf(g->out, "/* Where the vector part starts in obs, and its floats. */\n"
                                 "#define %s_VECTOR_AT %d\n#define %s_VECTOR_SIZE %d\n",
                         up, (int)p->vec_at, up, (int)p->vec_w);
    frl_bytes_printf(g->out, "/* Floats of forward's out: %s. */\n#define %s_OUT_SIZE %d\n",
                     outputs_text(frl_export_kind_of(p)), up, (int)p->out_w);
    if (p->towers)
        frl_bytes_printf(g->out,
            "/* Floats of recurrent state per agent: each core's h%s, the actor's core\n"
            " * first. Zeros start an episode; forward and act replace it in place. */\n"
            "#define %s_STATE_SIZE %d\n", p->core[0].kind == FRL_RNN_LSTM ? " then c" : "",
            up, (int)p->state_w);
    if (p->stack > 1)
        frl_bytes_printf(g->out,
            "/* Floats of frame-stack state per agent: the %d earlier frames, oldest first,\n"
            " * their bytes behind the floats as obs's (fastrl's act keeps the same state).\n"
            " * Zeros start an episode; forward and act replace it in place (the oldest frame\n"
            " * out, obs's in). */\n#define %s_FRAMES %d\n#define %s_STATE_SIZE %d\n",
            (int)p->stack - 1, up, (int)p->stack, up, (int)p->state_w);
    /* act's own out[] array is counted: a discrete act holds it beside forward's */
    size_t act_floats = frl_export_kind_of(p) == FRL_EXPORT_GAUSSIAN ? 0 : (size_t)p->out_w;
    frl_bytes_printf(g->out, "/* Stack bytes of forward's and act's buffers; their call frames\n"
                             " * (spills, saved registers) take a few hundred more. */\n"
                             "#define %s_STACK_BYTES %zu\n\n", up,
                     sizeof(float) * (frl_cgen_stack_floats(p) + act_floats));
}

static void header_functions(frl_cgen *g, const char *up)
{
    const frl_policy *p = g->p;
    const char *n = g->name, *st = frl_cgen_stateful(p) ? "float *state, " : "";
    int kind = frl_export_kind_of(p);
    frl_bytes_printf(g->out,
        "/* One observation obs[%s_OBS_SIZE]%s to out[%s_OUT_SIZE] (%s)\n"
        " * and, when value is not NULL, *value (%s). */\n"
        "void %s_forward(const float *obs, %sfloat *out, float *value);\n\n",
        up, frl_cgen_stateful(p) ? " and the agent's state" : "", up, outputs_text(kind),
        kind == FRL_EXPORT_QVALUES ? "the largest Q-value" : "the critic's state value", n,
        st);
    if (kind == FRL_EXPORT_GAUSSIAN)
        frl_bytes_printf(g->out,
            "/* The greedy action, the Gaussian's mean, into action[%s_OUT_SIZE] (not\n"
            " * clipped to the action space's bounds). */\n"
            "void %s_act(const float *obs, %sfloat *action);\n\n"
            "/* The Gaussian's log standard deviations (they do not depend on the state): a\n"
            " * host that samples draws mean + exp(log_std) * N(0, 1). */\n"
            "extern const float %s_log_std[%s_OUT_SIZE];\n", up, n, st, n, up);
    else
        frl_bytes_printf(g->out,
            "/* The greedy action: the index of the largest output (the first on ties). */\n"
            "int %s_act(const float *obs%s);\n", n,
            frl_cgen_stateful(p) ? ", float *state" : "");
}

/* The include guard is NAME_FASTRL_EXPORT_H, not NAME_H: an export named fastrl would
 * otherwise share FASTRL_H with the library's own header, and a program including both
 * would silently lose the second. */
static void emit_header(frl_cgen *g, uint32_t id)
{
    char up[64];
    upper(g->name, up, sizeof up);
    frl_bytes_printf(g->out,
        "/* %s: a fastrl policy as C99 (fastrl %s, %s weights), written by\n"
        " * frl_policy_export. No dependency beyond <math.h>, no allocation, no state of its\n"
        " * own: the functions may run on any number of threads at once. doc/export.md in\n"
        " * fastrl explains the outputs and how to sample from them. */\n"
        "#ifndef %s_FASTRL_EXPORT_H\n#define %s_FASTRL_EXPORT_H\n\n"
        "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
        g->name, frl_version_string(), g->int8 ? "int8" : "float32", up, up);
    frl_bytes_printf(g->out, "/* Ties this header to the NAME.c written with it. */\n"
                             "#define %s_EXPORT_ID 0x%08xUL\n", up, (unsigned)id);
    header_sizes(g, up);
    header_functions(g, up);
    frl_bytes_printf(g->out, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
}

/* The files are renamed one after another, so a failure between two renames (a full
 * disk, a file made read-only) leaves the new .c beside the old .h, whose sizes would
 * then be wrong without a word. The .c refuses to compile beside any header but its own:
 * its ID is the CRC-32C of the .c's code and weights, which the header repeats. */
static void append_id_check(frl_cgen *g, uint32_t id)
{
    char up[64];
    upper(g->name, up, sizeof up);
    frl_bytes_printf(g->out,
        "\n#if !defined(%s_EXPORT_ID) || %s_EXPORT_ID != 0x%08xUL\n"
        "#error \"%s.h is not the header exported with %s.c: export the policy again\"\n"
        "#endif\n", up, up, (unsigned)id, g->name, g->name);
}

static void probe_call(frl_cgen *g)
{
    int st = frl_cgen_stateful(g->p);
    const char *n = g->name, *sa = st ? "state, " : "";
    if (frl_export_kind_of(g->p) == FRL_EXPORT_GAUSSIAN)
        frl_bytes_printf(g->out, "            %s_act(obs, %saction);\n"
                                 "            sink += action[0];\n", n, sa);
    else
        frl_bytes_printf(g->out, "            int a = %s_act(obs%s%s);\n"
                                 "            sink += (float)a;\n", n,
                         st ? ", " : "", st ? "state" : "");
}

static void emit_probe(frl_cgen *g)
{
    char up[64];
    const frl_policy *p = g->p;
    const char *n = g->name;
    upper(n, up, sizeof up);
    frl_bytes_printf(g->out,
        "/* Latency probe of %s_act, written by frl_policy_export: build it with the\n"
        " * target's compiler and flags, e.g. cc -O2 -std=c99 %s_probe.c %s.c -lm, and run it\n"
        " * there. It times calls for at least half a second of CPU time (clock()). */\n"
        "#include <stdio.h>\n#include <time.h>\n\n#include \"%s.h\"\n\n"
        "int main(void)\n{\n    float obs[%s_OBS_SIZE];\n", n, n, n, n, up);
    if (frl_export_kind_of(p) == FRL_EXPORT_GAUSSIAN)
        frl_bytes_printf(g->out, "    float action[%s_OUT_SIZE];\n", up);
    if (frl_cgen_stateful(p))
        frl_bytes_printf(g->out, "    float state[%s_STATE_SIZE] = {0};\n", up);
    frl_bytes_printf(g->out,
        "    volatile float sink = 0.0f;\n    long calls = 0, k;\n    clock_t t0, t;\n"
        "    double s;\n    int i;\n"
        "    for (i = 0; i < %s_OBS_SIZE; i++)\n        obs[i] = %s;\n"
        "    t0 = clock();\n    do {\n        for (k = 0; k < 1000; k++) {\n", up,
        p->obs_n ? "0.0f" : "0.01f * (float)(i + 1)");
    if (!p->obs_n)
        frl_bytes_printf(g->out, "            obs[0] = (k & 1) ? 0.01f : -0.01f;\n");
    probe_call(g);
    frl_bytes_printf(g->out,
        "        }\n        calls += 1000;\n        t = clock();\n"
        "    } while (t - t0 < CLOCKS_PER_SEC / 2);\n"
        "    s = (double)(t - t0) / CLOCKS_PER_SEC;\n"
        "    printf(\"%s_act: %%.1f ns per call (%%ld calls in %%.2f s of CPU time)\\n\",\n"
        "           1e9 * s / (double)calls, calls, s);\n    (void)sink;\n    return 0;\n}\n",
        n);
}

enum { PATH_ROOM = 4096 + 48, FILES = 3 };

typedef struct staged {
    char path[FILES][PATH_ROOM], tmp[FILES][PATH_ROOM];
    int n;
} staged;

/* Write b under a temporary name beside prefix + suffix. */
static frl_status stage(staged *s, const char *prefix, const char *suffix, const frl_bytes *b,
                        char *err)
{
    char *path = s->path[s->n];
    if ((size_t)snprintf(path, PATH_ROOM - 48, "%s%s", prefix, suffix) >= PATH_ROOM - 48)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                        "frl_policy_export: the path '%s%s' is longer than %d bytes", prefix,
                        suffix, PATH_ROOM - 49);
    if (b->failed)
        return frl_fail(err, FRL_ERR_NOMEM, "frl_policy_export: out of memory writing %s", path);
    char target[PATH_MAX]; /* a file behind a symbolic link is replaced, the link kept */
    const char *t = frl_file_target(path, target);
    if (t != path && strlen(t) < PATH_ROOM - 48)
        memmove(path, t, strlen(t) + 1);
    frl_status st = frl_file_stage(path, b->data, b->len, "frl_policy_export", s->tmp[s->n],
                                   PATH_ROOM, err);
    s->n += st == FRL_OK;
    return st;
}

/* The staged files renamed over their paths (those after a failed rename removed), then
 * each one's directory synced; the first error is the one reported. The directories are
 * synced after every rename: a sync's error once came between the .c's rename and the
 * .h's, and the .h's staged copy was removed, leaving the new .c beside the old .h. */
static frl_status commit_all(staged *s, char *err)
{
    frl_status st = FRL_OK;
    int renamed = 0;
    for (int i = 0; i < s->n; i++)
        if (st != FRL_OK)
            unlink(s->tmp[i]);
        else if ((st = frl_file_rename(s->tmp[i], s->path[i], "frl_policy_export", err)) ==
                 FRL_OK)
            renamed++;
    for (int i = 0; i < renamed; i++) {
        char why[FRL_ERRMSG_SIZE];
        frl_status sync = frl_file_sync_dir(s->path[i], "frl_policy_export", why);
        if (sync != FRL_OK && st == FRL_OK)
            st = frl_fail_msg(err, sync, why);
    }
    /* this thread's error is the one reported, not a later sync's */
    return st == FRL_OK ? st : frl_fail_msg(NULL, st, err);
}

/* Every file staged, then all renamed: a failure before the renames changes nothing. */
static frl_status write_files(const frl_allocator *a, const frl_bytes *files, int n,
                              const char *prefix, char *err)
{
    static const char *suffix[FILES] = {".c", ".h", "_probe.c"};
    staged *s = frl_alloc(a, sizeof *s, 64); /* 25 KB: not on a host thread's stack */
    if (!s)
        return frl_fail(err, FRL_ERR_NOMEM, "frl_policy_export: out of memory");
    s->n = 0;
    frl_status st = FRL_OK;
    for (int i = 0; i < n && st == FRL_OK; i++)
        st = stage(s, prefix, suffix[i], &files[i], err);
    if (st == FRL_OK)
        st = commit_all(s, err);
    else
        for (int i = 0; i < s->n; i++)
            unlink(s->tmp[i]);
    frl_free(a, s);
    return st;
}

frl_status frl_export_c(const frl_policy *p, const char *prefix, const char *name, int int8,
                        int probe, char *err)
{
    frl_bytes files[FILES];
    for (int i = 0; i < FILES; i++)
        frl_bytes_init(&files[i], &p->rt->alloc);
    frl_cgen gc = {&files[0], p, name, int8}, gh = {&files[1], p, name, int8};
    frl_cgen gp = {&files[2], p, name, int8};
    frl_cgen_source(&gc);
    uint32_t id = frl_crc32c(0, files[0].data, files[0].failed ? 0 : files[0].len);
    append_id_check(&gc, id);
    emit_header(&gh, id);
    if (probe)
        emit_probe(&gp);
    frl_status st = write_files(&p->rt->alloc, files, probe ? 3 : 2, prefix, err);
    for (int i = 0; i < FILES; i++)
        frl_bytes_free(&files[i]);
    return st;
}
