/* The command line of the C benchmarks, read as the fastrl CLI reads its own: --help or -h
 * prints the usage on stdout and exits 0 (bench_conv once read "--help" as batch 0 and
 * ran); a number is read whole and must lie in its range, else the option, the text and
 * the range go to stderr with the usage, and the program exits 2
 * (tests/test_bench_usage.sh). Header-only, as bench_time.h: each bench is one program. */
#ifndef FRL_BENCH_ARGS_H
#define FRL_BENCH_ARGS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *bench_prog = "bench", *bench_usage_text = "";

/* Names the program and its usage (lines ending in "\n") for the messages below, and
 * answers --help or -h anywhere on the line, before anything runs. */
static inline void bench_args_init(int argc, char **argv, const char *prog, const char *usage)
{
    bench_prog = prog;
    bench_usage_text = usage;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            exit(0);
        }
}

/* A usage error: what was wrong (one line, no newline), then the usage; exit status 2. */
static inline _Noreturn void bench_refuse(const char *why)
{
    fprintf(stderr, "%s: %s\n", bench_prog, why);
    fputs(bench_usage_text, stderr);
    exit(2);
}

/* The value after option argv[i], which must be there. */
static inline const char *bench_value(int argc, char **argv, int i)
{
    char why[256];
    if (i + 1 < argc)
        return argv[i + 1];
    snprintf(why, sizeof why, "%s needs a value", argv[i]);
    bench_refuse(why);
}

/* An unknown option, named. */
static inline _Noreturn void bench_unknown(const char *opt)
{
    char why[256];
    snprintf(why, sizeof why, "unknown option '%s'", opt);
    bench_refuse(why);
}

/* The whole of text as an integer in [lo, hi]: digits, or a real that is a whole number
 * (5e5, as scripts write step counts). */
static inline long long bench_int(const char *opt, const char *text, long long lo,
                                  long long hi)
{
    char *end, why[256];
    errno = 0;
    long long v = strtoll(text, &end, 10);
    int ok = end != text && !*end && !errno;
    if (!ok && !strpbrk(text, "xXpP")) { /* decimal only: strtod reads 0x10 as 16 */
        double d = strtod(text, &end);
        ok = end != text && !*end && d >= -9e15 && d <= 9e15 && d == (double)(long long)d;
        v = ok ? (long long)d : 0;
    }
    if (ok && v >= lo && v <= hi)
        return v;
    snprintf(why, sizeof why, "%s: '%s' is not a whole number in [%lld, %lld]", opt, text, lo,
             hi);
    bench_refuse(why);
}

/* The whole of text as a finite real above lo (above_lo) or at least lo. */
static inline double bench_real(const char *opt, const char *text, double lo, int above_lo)
{
    char *end, why[256];
    double v = strtod(text, &end);
    if (end != text && !*end && v - v == 0 && (above_lo ? v > lo : v >= lo))
        return v;
    snprintf(why, sizeof why, "%s: '%s' is not a finite number %s %g", opt, text,
             above_lo ? ">" : ">=", lo);
    bench_refuse(why);
}

/* A comma-separated list of whole numbers in [lo, hi], at most max of them, into out; the
 * count. */
static inline int bench_list(const char *opt, const char *text, int *out, int max, int lo,
                             int hi)
{
    char why[256], item[64];
    int n = 0;
    for (const char *s = text;; s++) {
        size_t len = strcspn(s, ",");
        if (n == max || len == 0 || len >= sizeof item) {
            snprintf(why, sizeof why, "%s: '%s' is not a list of at most %d whole numbers in "
                     "[%d, %d]", opt, text, max, lo, hi);
            bench_refuse(why);
        }
        memcpy(item, s, len);
        item[len] = 0;
        out[n++] = (int)bench_int(opt, item, lo, hi);
        s += len;
        if (!*s)
            return n;
    }
}

#endif
