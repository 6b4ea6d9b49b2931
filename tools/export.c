/* `fastrl export CHECKPOINT (--onnx FILE | --c PREFIX) [--int8] [--probe]`: write a saved
 * policy (or a trainer checkpoint's) for use without the library (frl_policy_export). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct export_opts {
    const char *path, *out;
    int c, int8, probe;
} export_opts;

static const char usage_text[] =
    "usage: fastrl export CHECKPOINT (--onnx FILE | --c PREFIX) [--int8] [--probe]\n";

static int export_usage(const char *why)
{
    fprintf(stderr, "fastrl export: %s\n%s", why, usage_text);
    return 2;
}

/* 1 when one of the files --c PREFIX writes is the checkpoint being read. */
static int c_output_is_input(const export_opts *o)
{
    static const char *const ends[] = {".c", ".h", "_probe.c"};
    char name[4096];
    for (int i = 0; i < (o->probe ? 3 : 2); i++) {
        int n = snprintf(name, sizeof name, "%s%s", o->out, ends[i]);
        if (n > 0 && (size_t)n < sizeof name && cli_same_file(o->path, name))
            return 1;
    }
    return 0;
}

/* 0, 2 for a usage error (said why), or -1 for --help. */
static int parse_export_args(int argc, char **argv, export_opts *o)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if ((!strcmp(a, "--onnx") || !strcmp(a, "--c")) && has_value) {
            if (o->out)
                return export_usage("give one of --onnx FILE and --c PREFIX");
            o->c = !strcmp(a, "--c");
            o->out = argv[++i];
            int rc = cli_path_value("export", a, o->c ? "PREFIX" : "FILE", o->out);
            if (rc != 0) { /* "--onnx --int8" forgot the file */
                fputs(usage_text, stderr);
                return rc;
            }
        } else if (!strcmp(a, "--int8")) {
            o->int8 = 1;
        } else if (!strcmp(a, "--probe")) {
            o->probe = 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            return -1;
        } else if (a[0] != '-' && !o->path) {
            o->path = a;
        } else {
            fprintf(stderr, "fastrl export: unknown or incomplete option '%s'\n", a);
            return export_usage("see fastrl --help");
        }
    }
    if (!o->path || !o->out)
        return export_usage(o->path ? "name the output: --onnx FILE or --c PREFIX"
                                    : "name the checkpoint to export");
    if ((o->int8 || o->probe) && !o->c)
        return export_usage("--int8 and --probe go with --c PREFIX");
    if (!o->c && cli_same_file(o->path, o->out))
        return export_usage("--onnx names the checkpoint itself, which it would overwrite");
    if (o->c && c_output_is_input(o))
        return export_usage("--c PREFIX would write over the checkpoint itself (PREFIX.c, "
                            "PREFIX.h or PREFIX_probe.c is that file)");
    return 0;
}

static int export_policy(frl_runtime *rt, const export_opts *o)
{
    frl_policy *p;
    frl_config *cfg;
    frl_status st = frl_policy_load(&p, rt, o->path);
    if (st != FRL_OK)
        return cli_fail(o->path, st);
    if ((st = frl_config_create(&cfg, NULL)) != FRL_OK) {
        frl_policy_destroy(p);
        return cli_fail("config", st);
    }
    if ((st = frl_config_set(cfg, "export.format", o->c ? "c" : "onnx")) == FRL_OK &&
        (st = frl_config_set(cfg, "export.weights", o->int8 ? "int8" : "float32")) == FRL_OK &&
        (st = frl_config_set_bool(cfg, "export.probe", o->probe)) == FRL_OK)
        st = frl_policy_export(p, o->out, cfg);
    int rc = st != FRL_OK ? cli_fail(o->out, st) : 0;
    if (rc == 0 && o->c)
        printf("wrote %s.h and %s.c%s%s%s (%lld parameters, %s weights)\n", o->out, o->out,
               o->probe ? " and " : "", o->probe ? o->out : "", o->probe ? "_probe.c" : "",
               (long long)frl_policy_num_parameters(p), o->int8 ? "int8" : "float32");
    else if (rc == 0)
        printf("wrote %s (%lld parameters)\n", o->out, (long long)frl_policy_num_parameters(p));
    frl_config_destroy(cfg);
    frl_policy_destroy(p);
    return rc;
}

int cli_export(int argc, char **argv)
{
    export_opts o = {0};
    int rc = parse_export_args(argc, argv, &o);
    if (rc < 0)
        fputs(usage_text, stdout);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    frl_runtime *rt;
    frl_config *cfg;
    frl_status st = frl_config_create(&cfg, NULL);
    if (st == FRL_OK && (st = frl_config_set_int(cfg, "runtime.threads", 1)) == FRL_OK)
        st = frl_runtime_create(&rt, cfg, NULL, NULL);
    frl_config_destroy(cfg);
    if (st != FRL_OK)
        return cli_fail("runtime", st);
    rc = export_policy(rt, &o);
    frl_runtime_destroy(rt);
    return rc;
}
