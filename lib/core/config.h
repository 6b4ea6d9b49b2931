/* Internal view of frl_config: a fixed table of known keys (config_keys.h, one list
 * for the table, the key enum and the choice enums) and, per config, which keys are set
 * and their values. No allocation after create. */
#ifndef FRL_CORE_CONFIG_H
#define FRL_CORE_CONFIG_H

#include <stdint.h>

#include "core/config_keys.h"
#include "core/error.h"

typedef struct frl_key_def {
    const char *name;
    frl_config_type type;
    const char *default_text; /* the one written form of the default ("none": unset) */
    double min, max;          /* INT and FLOAT, and INT_LIST items */
    const char *choices;      /* CHOICE: "a|b|c" */
    const char *help;
} frl_key_def;

extern const frl_key_def frl_key_defs[FRL_KEY_COUNT];

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

/* text as an int64, exactly: decimal digits with an optional sign, hex digits after
 * "0x", or a decimal real that is exactly a whole number ("1e6", "2048.0"), read digit
 * by digit rather than rounded through a double. No white space. 0; -1 when text is none
 * of these; 1 when it is a decimal or hex number beyond int64 (out of every int key's
 * range, and said so: FRL_ERR_RANGE). The config's int keys and the CLI's options. */
int frl_parse_int_text(const char *text, int64_t *out);

/* Index of key in frl_key_defs, or -1. */
int32_t frl_key_find(const char *key);

/* The library's reads, by key: cfg may be NULL (defaults). They cannot fail, since the
 * key exists and a set value was validated; reading a key as another type than its
 * own is a bug, caught by an assertion. */
int64_t frl_cfg_int(const frl_config *cfg, frl_key k);     /* INT */
double frl_cfg_float(const frl_config *cfg, frl_key k);    /* FLOAT, or INT as a double */
int frl_cfg_bool(const frl_config *cfg, frl_key k);        /* BOOL: 0 or 1 */
int32_t frl_cfg_choice(const frl_config *cfg, frl_key k);  /* CHOICE: FRL_<ID>_<NAME> */
/* CHOICE: the choice's text into buf (returned), for messages. */
const char *frl_cfg_choice_text(const frl_config *cfg, frl_key k, char *buf, size_t size);
frl_int_list frl_cfg_list(const frl_config *cfg, frl_key k); /* INT_LIST */
int frl_cfg_is_set(const frl_config *cfg, frl_key k);
/* Set an INT key; the range is checked as by frl_config_set_int. */
frl_status frl_cfg_set_int(frl_config *cfg, frl_key k, int64_t value);

/* "key=value\n" for every key starting with prefix, as set on cfg or its default;
 * optional keys (default "none") only when set. FRL_ERR_SIZE if buf is too small. */
frl_status frl_config_to_text(const frl_config *cfg, const char *prefix, char *buf, size_t size);

/* Set on dst every key that src sets (src's values win). */
void frl_config_overlay(frl_config *dst, const frl_config *src);

#endif
