/* What the fuzz targets share: an invariant check that aborts (so libFuzzer and the
 * corpus driver both see the failure) and one single-threaded runtime for all inputs. */
#ifndef FRL_TESTS_FUZZ_UTIL_H
#define FRL_TESTS_FUZZ_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "fastrl.h"

static inline void fuzz_require(int ok, const char *target, const char *what)
{
    if (!ok) {
        fprintf(stderr, "%s: invariant broken: %s\n", target, what);
        abort();
    }
}

/* Created on first use and kept for the process: creating one per input would spend
 * the fuzzing time on thread pools. */
static inline frl_runtime *fuzz_runtime(void)
{
    static frl_runtime *rt;
    if (!rt) {
        frl_config *cfg = NULL;
        fuzz_require(frl_config_create(&cfg, NULL) == FRL_OK &&
                         frl_config_set_int(cfg, "runtime.threads", 1) == FRL_OK &&
                         frl_runtime_create(&rt, cfg, NULL, NULL) == FRL_OK,
                     "fuzz", "a one-thread runtime");
        frl_config_destroy(cfg);
    }
    return rt;
}

#endif
