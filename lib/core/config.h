/* Internal view of frl_config: a fixed table of known keys (config_keys.c) and,
 * per config, which keys are set and their values. No allocation after create. */
#ifndef FRL_CORE_CONFIG_H
#define FRL_CORE_CONFIG_H

#include <stdint.h>

#include "core/error.h"

typedef struct frl_key_def {
    const char *name;
    frl_config_type type;
    const char *default_text;
    double def;          /* default: the number, the bool (0/1) or the choice index */
    double min, max;     /* INT and FLOAT */
    const char *choices; /* CHOICE: "a|b|c" */
    const char *help;
} frl_key_def;

extern const frl_key_def frl_key_defs[];
extern const int32_t frl_key_count;

enum { FRL_LIST_MAX = 8 };

typedef struct frl_int_list {
    int32_t n;
    int32_t v[FRL_LIST_MAX];
} frl_int_list;

typedef union frl_value {
    int64_t i;
    double f;
    frl_int_list list; /* INT_LIST */
} frl_value;

/* Index of key in frl_key_defs, or -1. */
int32_t frl_key_find(const char *key);

/* Read a key known to exist with the right type; cfg may be NULL (defaults). For use
 * by the library after validation, so they cannot fail. */
int64_t frl_config_int(const frl_config *cfg, const char *key);
double frl_config_float(const frl_config *cfg, const char *key);
frl_int_list frl_config_list(const frl_config *cfg, const char *key);

/* "key=value\n" for every key starting with prefix, as set on cfg or its default;
 * optional keys (default "none") only when set. FRL_ERR_SIZE if buf is too small. */
frl_status frl_config_to_text(const frl_config *cfg, const char *prefix, char *buf, size_t size);

/* Set on dst every key that src sets (src's values win). */
void frl_config_overlay(frl_config *dst, const frl_config *src);

#endif
