/* Shared pieces of the fastrl command-line program. */
#ifndef FRL_TOOLS_CLI_H
#define FRL_TOOLS_CLI_H

#include <stdint.h>

#include "fastrl.h"

/* Print "fastrl: <what>: <status name>: <message>" to stderr and return 1. */
int cli_fail(const char *what, frl_status st);

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
