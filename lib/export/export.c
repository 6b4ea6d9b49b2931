/* frl_policy_export: the checks both formats share, then the format's writer. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "export/c_export.h"
#include "export/onnx.h"

/* A trained policy's parameters are finite; one that is not would write a file that
 * computes NaN (and C source that does not compile: there is no NaN literal). */
static frl_status check_params(frl_policy *p)
{
    for (size_t i = 0; i < p->num_params; i++)
        if (!isfinite(p->params[i]))
            return frl_fail(p->err, FRL_ERR_NONFINITE,
                            "frl_policy_export: parameter %zu of %zu is not finite; a "
                            "diverged policy cannot be exported", i, p->num_params);
    return FRL_OK;
}

/* The place a policy kind the writers do not cover is refused: recurrent Q-policies
 * (R2D2's); the writers' recurrent cores follow the actor-critic's towers. */
static frl_status check_kind(frl_policy *p)
{
    if (p->towers && p->head != FRL_POLICY_HEAD_ACTOR_CRITIC)
        return frl_fail(p->err, FRL_ERR_UNSUPPORTED,
                        "frl_policy_export: a recurrent Q-policy cannot be exported");
    return FRL_OK;
}

/* Whether name.h is a C11 standard header: an export's header of that name, in a
 * folder on the include path, shadows it (the generated code includes <math.h>). In
 * any case: file systems that ignore case (macOS's, Windows') find Math.h for math.h. */
static int standard_header(const char *name)
{
    static const char *const headers[] = {
        "assert", "complex", "ctype", "errno", "fenv", "float", "inttypes", "iso646",
        "limits", "locale", "math", "setjmp", "signal", "stdalign", "stdarg", "stdatomic",
        "stdbool", "stddef", "stdint", "stdio", "stdlib", "stdnoreturn", "string", "tgmath",
        "threads", "time", "uchar", "wchar", "wctype"};
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++)
        if (!strcasecmp(name, headers[i]))
            return 1;
    return 0;
}

/* The symbol prefix of a C export: the last part of the path, which must be a C
 * identifier (it starts every name the files declare) and not a standard header's. */
static frl_status c_name(frl_policy *p, const char *prefix, char *name, size_t size)
{
    const char *base = strrchr(prefix, '/');
    base = base ? base + 1 : prefix;
    size_t n = strlen(base);
    int ok = n > 0 && n < size && !(base[0] >= '0' && base[0] <= '9');
    for (size_t i = 0; ok && i < n; i++) {
        char c = base[i];
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_';
    }
    if (!ok)
        return frl_fail(p->err, FRL_ERR_INVALID_ARGUMENT,
                        "frl_policy_export: the C export's name '%s' (the last part of '%s') "
                        "is not a C identifier of at most %zu characters: letters, digits "
                        "and '_', not starting with a digit (it prefixes every symbol)",
                        base, prefix, size - 1);
    if (standard_header(base))
        return frl_fail(p->err, FRL_ERR_INVALID_ARGUMENT,
                        "frl_policy_export: the C export's name '%s' would write %s.h, the "
                        "name of a C standard header: a build that adds the export's folder "
                        "to its include path would take it for <%s.h> (choose another name)",
                        base, base, base);
    memcpy(name, base, n + 1);
    return FRL_OK;
}

/* export.weights=int8 and export.probe=true shape the C source alone; an ONNX model
 * has float weights and no probe, so asking for either there is a mistake to report, not
 * a request to drop without a word. */
static frl_status check_onnx_options(frl_policy *p, const frl_config *opts)
{
    const char *key = frl_cfg_choice(opts, FRL_KEY_EXPORT_WEIGHTS) == FRL_EXPORT_WEIGHTS_INT8
                          ? "export.weights=int8"
                      : frl_cfg_bool(opts, FRL_KEY_EXPORT_PROBE) ? "export.probe=true"
                                                                 : NULL;
    if (key)
        return frl_fail(p->err, FRL_ERR_INVALID_ARGUMENT,
                        "frl_policy_export: %s applies to export.format=c only; an ONNX model "
                        "has float32 weights and no probe (unset it, or export.format=c)", key);
    return FRL_OK;
}

/* Both formats write path plus at most "_probe.c" and a temporary suffix (io/file.h);
 * a longer path than this is refused alike by both, before anything is written, rather
 * than failing as FRL_ERR_IO in one format and not the other. The path comes last in the
 * message: cut short, it still says what is wrong. */
enum { EXPORT_PATH_MAX = 4096 - 64 };

static frl_status check_path_length(frl_policy *p, const char *path)
{
    size_t n = strlen(path);
    if (n <= EXPORT_PATH_MAX)
        return FRL_OK;
    return frl_fail(p->err, FRL_ERR_INVALID_ARGUMENT,
                    "frl_policy_export: the path is %zu bytes long, more than %d (room for the "
                    "files' suffixes and temporary names): %s", n, (int)EXPORT_PATH_MAX, path);
}

static frl_status export_c(frl_policy *p, const char *prefix, const frl_config *opts)
{
    char name[64];
    frl_status st = c_name(p, prefix, name, sizeof name);
    if (st != FRL_OK)
        return st;
    int int8 = frl_cfg_choice(opts, FRL_KEY_EXPORT_WEIGHTS) == FRL_EXPORT_WEIGHTS_INT8;
    return frl_export_c(p, prefix, name, int8, frl_cfg_bool(opts, FRL_KEY_EXPORT_PROBE), p->err);
}

FRL_API frl_status frl_policy_export(frl_policy *p, const char *path, const frl_config *options)
{
    if (!p)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_policy_export: policy is NULL");
    if (!path || !path[0])
        return frl_fail(p->err, FRL_ERR_NULL, "frl_policy_export: path is %s",
                        path ? "empty" : "NULL");
    int c_format = frl_cfg_choice(options, FRL_KEY_EXPORT_FORMAT) == FRL_EXPORT_FORMAT_C;
    frl_status st = check_path_length(p, path);
    if (st == FRL_OK && !c_format)
        st = check_onnx_options(p, options);
    if (st == FRL_OK)
        st = check_kind(p);
    if (st == FRL_OK)
        st = check_params(p);
    if (st != FRL_OK)
        return st;
    if (c_format)
        return export_c(p, path, options);
    return frl_export_onnx(p, path, p->err);
}
