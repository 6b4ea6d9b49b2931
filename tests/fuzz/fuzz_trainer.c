/* libFuzzer target for the trainer's checkpoint loader (frl_trainer_load: settings, env
 * groups, networks, optimiser, normalisers, counters), built by tests/fuzz/libfuzzer.sh.
 * An input is a little-endian u32 section count and an uncompressed payload, sealed
 * here into a valid container (as fuzz_policy's FRL_FUZZ_SEALED) and written to a file,
 * since the loader reads a path. A trainer it accepts must train one more rollout and
 * save. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_forge.h"
#include "fastrl.h"
#include "fuzz_util.h"

#define require(ok, what) fuzz_require((ok), "fuzz_trainer", (what))

static void exercise(frl_trainer *t, const char *path)
{
    const frl_metrics *m = frl_trainer_metrics(t);
    require(m != NULL, "metrics of a loaded trainer");
    frl_status st = frl_trainer_train(t, m->env_steps + 1);
    if (st != FRL_OK && st != FRL_ERR_NONFINITE)
        fprintf(stderr, "fuzz_trainer: %s: %s\n", frl_status_name(st), frl_trainer_last_error(t));
    require(st == FRL_OK || st == FRL_ERR_NONFINITE, "one more rollout");
    /* a diverged run's save is refused as documented (nothing is written): the
     * optimiser's state holds non-finite values */
    frl_status saved = frl_trainer_save(t, path);
    require(saved == FRL_OK || (st == FRL_ERR_NONFINITE && saved == FRL_ERR_NONFINITE),
            "save of a loaded trainer");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t file_size;
    unsigned char *file = size >= 4 ? forge_file(data + 4, size - 4, forge_get32(data),
                                                 &file_size)
                                    : NULL;
    if (!file)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/dev/shm/frl_fuzz_trainer_%d", (int)getpid());
    require(forge_write(path, file, file_size) == 0, "write the input");
    free(file);
    frl_trainer *t = NULL;
    frl_status st = frl_trainer_load(&t, fuzz_runtime(), path, NULL);
    require((st == FRL_OK) == (t != NULL), "*out set exactly on success");
    require(st == FRL_OK || strlen(frl_last_error()) > 0, "a failure has a message");
    if (t)
        exercise(t, path);
    frl_trainer_destroy(t);
    unlink(path);
    return 0;
}
