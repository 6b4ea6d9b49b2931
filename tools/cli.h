/* Shared pieces of the fastrl command-line program. */
#ifndef FRL_TOOLS_CLI_H
#define FRL_TOOLS_CLI_H

#include <stdint.h>

#include "fastrl.h"

/* Print "fastrl: <what>: <status name>: <message>" to stderr and return 1. */
int cli_fail(const char *what, frl_status st);

/* The same for an option the library refused (--set, --seed, --threads): returns 2, a
 * usage error. */
int cli_bad_option(const char *what, frl_status st);

/* --set TEXT onto cfg: 0, or 2 (a usage error) after saying why, for TEXT the config
 * refuses and for TEXT that sets nothing (empty or blank, which the config accepts). */
int cli_set(const char *cmd, frl_config *cfg, const char *text);

/* An option's value, strictly: the whole text is one number, without overflow, finite,
 * in [lo, hi]; otherwise "fastrl CMD: OPT: 'TEXT' is not ..." on stderr and 2 (a usage
 * error), before the command has made anything. 0 on success. cli_parse_int also takes
 * whole numbers written as reals (1e6, 2048.0), as train's --steps always has. */
int cli_parse_int(const char *cmd, const char *opt, const char *text, int64_t lo, int64_t hi,
                  int64_t *out);
int cli_parse_real(const char *cmd, const char *opt, const char *text, double lo, double hi,
                   double *out);

/* A path or name option's value (--out DIR, --onnx FILE, --env ENV; what names it):
 * 0, or 2 (a usage error) after saying why: empty (--resume '' read /checkpoint.frl), or
 * an option ("--out --quiet" forgot its value, and made a directory called --quiet; ./--x
 * names a file so called). */
int cli_path_value(const char *cmd, const char *opt, const char *what, const char *text);

/* 1 when both paths name one existing file (links and relative paths included): an
 * output that would overwrite the command's own input. */
int cli_same_file(const char *a, const char *b);

/* 1 when the arguments hold --help or -h: the command's usage goes to stdout, exit 0. */
int cli_asks_help(int argc, char **argv);

double cli_now(void);

/* When main started: `seconds` in train's last line counts from here. */
extern double cli_start;

/* A trainer checkpoint's environment (env, "" for a bare policy file) and its run's
 * settings (*cfg, NULL for a bare policy); prints why and returns non-zero on failure. */
int cli_checkpoint_env(const char *path, char *env, size_t size, frl_config **cfg);

int cli_bench(int argc, char **argv);
int cli_cut(int argc, char **argv);
int cli_train(int argc, char **argv);
int cli_bench_train(int argc, char **argv);
int cli_eval(int argc, char **argv);
int cli_export(int argc, char **argv);
int cli_render(int argc, char **argv);

#endif
