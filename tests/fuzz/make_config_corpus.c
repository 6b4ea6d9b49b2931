/* Corpus for the settings-parser fuzz target (fuzz_config.c), written to DIR:
 *   ok_*        each key with its default value as text, all of them in one text
 *               (spaces, tabs and newlines between pairs), and a few spellings the
 *               parser documents ("1e6" and "0x10" for ints, lists);
 *   parse_*     malformed pairs (no '=', an empty value, a number with junk after it);
 *   unknown_*   a key that does not exist, a choice that does not exist;
 *   range_*     ints and floats outside their keys' ranges;
 *   nonfinite_* nan and inf for float keys;
 *   any_*       every truncation of the all-keys text, 300 byte changes to it, and
 *               each key given each of a set of edge-case values (the parser must not
 *               crash, and must either accept a text or leave the config as it was). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastrl.h"

static const char *outdir;
static uint64_t rng_state = 0x2545F491;

static uint64_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return rng_state >> 17;
}

static void emit(const char *name, const char *text, size_t size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(text, 1, size, f) != size || fclose(f) != 0) {
        fprintf(stderr, "make_config_corpus: cannot write %s\n", path);
        exit(1);
    }
}

static void emit_text(const char *name, const char *text) { emit(name, text, strlen(text)); }

/* Every key's default value as text, separated by space, tab and newline in turn. */
static size_t all_defaults(char *buf, size_t size)
{
    static const char seps[] = " \t\n";
    size_t n = 0;
    int i = 0;
    for (const char *k = frl_config_next(NULL); k; k = frl_config_next(k), i++) {
        char v[512];
        if (frl_config_get_text(NULL, k, v, sizeof v) != FRL_OK || !strcmp(v, "none"))
            continue; /* optional keys read "none" until set: not a value to set */
        char one[700], name[64];
        snprintf(one, sizeof one, "%s=%s", k, v);
        snprintf(name, sizeof name, "ok_key_%03d", i);
        emit_text(name, one);
        n += (size_t)snprintf(buf + n, size - n, "%s%c", one, seps[i % 3]);
        if (n >= size) {
            fprintf(stderr, "make_config_corpus: the defaults do not fit %zu bytes\n", size);
            exit(1);
        }
    }
    return n;
}

static void truncations_and_changes(const char *all, size_t n)
{
    char name[64];
    for (size_t k = 0; k < n; k++) {
        snprintf(name, sizeof name, "any_trunc_%05zu", k);
        emit(name, all, k);
    }
    char *b = malloc(n);
    static const char bytes[] = "=,. \t\n0123456789-+eExXabcnaif\x01\xff";
    for (int k = 0; b && k < 300; k++) {
        memcpy(b, all, n);
        for (int c = 0; c < 1 + k % 4; c++)
            b[rnd() % n] = bytes[rnd() % (sizeof bytes - 1)];
        snprintf(name, sizeof name, "any_change_%03d", k);
        emit(name, b, n);
    }
    free(b);
}

/* Each key with each edge value: many are errors, some valid; none may crash. */
static void edge_values(void)
{
    static const char *const values[] = {
        "", "-", "+", "0", "-0", "1e999", "-1e999", "nan", "inf", "-inf", "0x", "0x10",
        "1e6", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
        "1.5", "1,", ",1", "1,,2", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20",
        "true", "yes", "TRUE", "none", "=", "1=2", "4e-310",
        "1000000000000000000000000000000000000000000000000000000000000000000000000000000"};
    int i = 0;
    for (const char *k = frl_config_next(NULL); k; k = frl_config_next(k), i++)
        for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
            char text[700], name[64];
            snprintf(text, sizeof text, "%s=%s", k, values[v]);
            snprintf(name, sizeof name, "any_edge_%03d_%02zu", i, v);
            emit_text(name, text);
        }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_config_corpus DIR\n");
        return 2;
    }
    outdir = argv[1];
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", outdir);
    if (system(cmd) != 0)
        return 1;
    static char all[1 << 16];
    size_t n = all_defaults(all, sizeof all);
    emit("ok_all", all, n);
    emit_text("ok_int_spellings", "train.num_envs=0x10 train.rollout=1e2 runtime.seed=-0");
    emit_text("ok_list", "policy.hidden=256,128,64");
    emit_text("ok_empty", "");
    emit_text("ok_blank", " \t\n\n ");
    emit_text("parse_no_equals", "train.lr");
    emit_text("parse_empty_value", "train.lr=");
    emit_text("parse_junk", "train.num_envs=12abc");
    emit_text("parse_list_gap", "policy.hidden=64,,64");
    emit_text("unknown_key", "train.no_such_key=1");
    emit_text("unknown_choice", "train.algo=no_such_algo");
    emit_text("range_int", "train.num_envs=-5");
    emit_text("range_float", "train.gamma=2.5");
    emit_text("nonfinite_nan", "train.lr=nan");
    emit_text("nonfinite_inf", "train.lr=inf");
    truncations_and_changes(all, n);
    edge_values();
    return 0;
}
