/* The table of config keys, generated from FRL_CONFIG_KEYS (config_keys.h): each row at
 * its enum's index, so frl_key_defs[FRL_KEY_<ID>] is that key. */
#include "core/config.h"

/* A CHOICE key's "a|b|c"; other types have no choices. */
#define FRL_CHOICES_OF_CHOICE(ID) (&(FRL_CHOICES_TEXT(ID))[1])
#define FRL_CHOICES_OF_INT(ID) ""
#define FRL_CHOICES_OF_FLOAT(ID) ""
#define FRL_CHOICES_OF_BOOL(ID) ""
#define FRL_CHOICES_OF_INT_LIST(ID) ""

#define FRL_KEY_ROW(ID, NAME, TYPE, DEFAULT, MIN, MAX, HELP)                                  \
    [FRL_KEY_##ID] = {NAME, FRL_CONFIG_##TYPE, DEFAULT, MIN, MAX, FRL_CHOICES_OF_##TYPE(ID), \
                      HELP},

const frl_key_def frl_key_defs[FRL_KEY_COUNT] = {FRL_CONFIG_KEYS(FRL_KEY_ROW)};
