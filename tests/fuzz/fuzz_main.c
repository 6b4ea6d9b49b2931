/* Standalone driver for the fuzz target: runs it on every file named on the command
 * line or found in a directory named there, each from an exact-size heap copy (so ASan
 * catches a read one byte past the input).
 *
 * Corpus files from make_corpus carry the expected outcome in their name: ok_* must
 * parse, format_* must fail with FRL_ERR_FORMAT, version_* with FRL_ERR_VERSION,
 * parse_*, unknown_*, range_* and nonfinite_* (the settings' corpus) with FRL_ERR_PARSE,
 * FRL_ERR_UNKNOWN_NAME, FRL_ERR_RANGE and FRL_ERR_NONFINITE; any_*
 * (and files from elsewhere, e.g. a libFuzzer corpus) only must not crash. Exit status
 * 1 if an expectation failed. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fastrl.h"
#include "fuzz_config.h"
#include "fuzz_container.h"
#include "fuzz_policy.h"

/* Which target this driver runs: the container reader (default), the policy loader or
 * the settings parser. */
#ifndef FRL_FUZZ_ONE
#define FRL_FUZZ_ONE frl_fuzz_container_one
#endif

static int files, failures, outcomes[32];

/* The outcome a corpus file's name promises: its prefix, or none (1: anything). */
static int expected(const char *name)
{
    static const struct {
        const char *prefix;
        int status;
    } promises[] = {
        {"ok_", FRL_OK},
        {"format_", FRL_ERR_FORMAT},
        {"version_", FRL_ERR_VERSION},
        {"parse_", FRL_ERR_PARSE},
        {"unknown_", FRL_ERR_UNKNOWN_NAME},
        {"range_", FRL_ERR_RANGE},
        {"nonfinite_", FRL_ERR_NONFINITE},
    };
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    for (size_t i = 0; i < sizeof promises / sizeof promises[0]; i++)
        if (!strncmp(base, promises[i].prefix, strlen(promises[i].prefix)))
            return promises[i].status;
    return 1;
}

static void run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        failures++;
        return;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    size_t got = buf && n > 0 ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!buf || got != (size_t)(n > 0 ? n : 0)) {
        fprintf(stderr, "cannot read %s\n", path);
        failures++;
        free(buf);
        return;
    }
    int st = FRL_FUZZ_ONE(buf, got);
    free(buf);
    files++;
    outcomes[-st & 31]++;
    int want = expected(path);
    if (want != 1 && st != want) {
        fprintf(stderr, "%s: got %s, expected %s: %s\n", path, frl_status_name(st),
                frl_status_name(want), frl_last_error());
        failures++;
    }
}

static void run_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        run_file(path);
        return;
    }
    struct dirent **list;
    int n = scandir(path, &list, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        if (list[i]->d_name[0] != '.') {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", path, list[i]->d_name);
            run_path(p);
        }
        free(list[i]);
    }
    free(list);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++)
        run_path(argv[i]);
    printf("%d inputs:", files);
    for (int s = 0; s < 32; s++)
        if (outcomes[s])
            printf(" %s %d", frl_status_name(-s), outcomes[s]);
    printf("; %d failed expectations\n", failures);
    return failures || files == 0 ? 1 : 0;
}
