/* Fuzz target for the settings parser: frl_config_parse on any text. Invariants:
 * - it succeeds or fails with one of the documented statuses and a message;
 * - a failed parse leaves the config as it was (all or nothing);
 * - an accepted text written back (frl_config_to_text) parses again to the same
 *   settings, and every key set reads back through frl_config_get_text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "fuzz_config.h"
#include "fuzz_util.h"

#define require(ok, what) fuzz_require((ok), "fuzz_config", (what))

enum { TEXT = 64 * 1024 };

static int documented(frl_status st)
{
    return st == FRL_OK || st == FRL_ERR_PARSE || st == FRL_ERR_UNKNOWN_NAME ||
           st == FRL_ERR_RANGE || st == FRL_ERR_NONFINITE || st == FRL_ERR_INVALID_ARGUMENT ||
           st == FRL_ERR_SIZE || st == FRL_ERR_NULL;
}

/* Every key that is set reads back as text. */
static void read_back(const frl_config *cfg)
{
    char buf[4096];
    for (const char *k = frl_config_next(NULL); k; k = frl_config_next(k))
        if (frl_config_is_set(cfg, k))
            require(frl_config_get_text(cfg, k, buf, sizeof buf) == FRL_OK,
                    "get_text of a set key");
}

/* cfg written out and parsed into a fresh config writes out the same again. */
static void round_trip(const frl_config *cfg, char *a, char *b)
{
    require(frl_config_to_text(cfg, "", a, TEXT) == FRL_OK, "to_text of an accepted config");
    frl_config *again = NULL;
    require(frl_config_create(&again, NULL) == FRL_OK, "create");
    require(frl_config_parse(again, a) == FRL_OK, "the written text parses");
    require(frl_config_to_text(again, "", b, TEXT) == FRL_OK, "to_text again");
    require(strcmp(a, b) == 0, "the round trip writes the same text");
    frl_config_destroy(again);
}

int frl_fuzz_config_one(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), *a = malloc(TEXT), *b = malloc(TEXT);
    require(text && a && b, "test memory");
    memcpy(text, data, size);
    text[size] = '\0'; /* the API takes C strings: an embedded NUL ends the text early */
    frl_config *cfg = NULL;
    require(frl_config_create(&cfg, NULL) == FRL_OK, "create");
    /* A setting made before, which a failed parse must leave alone. */
    require(frl_config_parse(cfg, "train.lr=0.001 policy.hidden=32,32") == FRL_OK, "seed");
    require(frl_config_to_text(cfg, "", a, TEXT) == FRL_OK, "to_text");
    frl_status st = frl_config_parse(cfg, text);
    require(documented(st), "a documented status");
    require(st == FRL_OK || strlen(frl_config_last_error(cfg)) > 0, "a failure has a message");
    if (st != FRL_OK) {
        require(frl_config_to_text(cfg, "", b, TEXT) == FRL_OK, "to_text after a failure");
        require(strcmp(a, b) == 0, "a failed parse changes nothing");
    } else {
        read_back(cfg);
        round_trip(cfg, a, b);
    }
    frl_config_destroy(cfg);
    free(text);
    free(a);
    free(b);
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    frl_fuzz_config_one(data, size);
    return 0;
}
