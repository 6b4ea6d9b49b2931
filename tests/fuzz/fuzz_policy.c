/* Fuzz target for the policy loader: everything frl_policy_load does after reading
 * the file (sections to settings, spaces, parameters, normaliser), on a buffer. A
 * policy it accepts must act without error on a finite observation, and export as ONNX
 * and as C or say why not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/runtime.h"
#include "fuzz_policy.h"
#include "fuzz_util.h"
#include "io/container.h"
#include "rl/policy_io.h"

#define require(ok, what) fuzz_require((ok), "fuzz_policy", (what))

/* Act once on zeros; an accepted policy must manage it, or say FRL_ERR_NONFINITE: finite
 * weights as large as 1e34 may overflow a layer, which act refuses (api.md), and the
 * loader takes any finite weight. Image policies are a few 10K values wide. */
static void exercise(frl_policy *p)
{
    int64_t w = frl_space_n(frl_policy_observation_space(p));
    int64_t a = frl_space_n(frl_policy_action_space(p));
    require(w >= 1 && w <= (1 << 22) && a >= 1 && a <= 65536, "space sizes");
    int64_t sw = frl_policy_state_size(p);
    require(sw >= 0 && sw <= 1 << 20, "state size");
    float *obs = calloc((size_t)w, sizeof(float)), *act = calloc((size_t)a, sizeof(float));
    float *state = calloc((size_t)sw + 1, sizeof(float)); /* a core's, or a frame stack's */
    float lp, v;
    frl_act_args args;
    frl_act_args_init(&args);
    args.observation_width = w;
    args.action_width = frl_space_width(frl_policy_action_space(p));
    args.batch = 1;
    args.observations = obs;
    args.actions = act;
    args.log_probs = &lp;
    args.values = &v;
    args.state = state;
    args.state_width = sw;
    require(obs && act && state, "memory for acting");
    frl_status st = frl_policy_act(p, &args);
    require(st == FRL_OK || st == FRL_ERR_NONFINITE, "act on a loaded policy");
    free(obs);
    free(act);
    free(state);
}

/* Export it as ONNX and as C (into TMPDIR, removed after): the exporters walk the same
 * loaded layout; a policy they cannot take must be refused with a message. */
static void export_both(frl_policy *p)
{
    const char *tmp = getenv("TMPDIR");
    char path[512], file[600];
    snprintf(path, sizeof path, "%s/frl_fuzz_export_%d", tmp && *tmp ? tmp : "/tmp",
             (int)getpid());
    frl_config *opt = NULL;
    require(frl_config_create(&opt, NULL) == FRL_OK, "config");
    frl_status st = frl_policy_export(p, path, NULL);
    require(st == FRL_OK || strlen(frl_last_error()) > 0, "an ONNX export failure has a message");
    unlink(path);
    require(frl_config_set(opt, "export.format", "c") == FRL_OK, "export.format=c");
    st = frl_policy_export(p, path, opt);
    require(st == FRL_OK || strlen(frl_last_error()) > 0, "a C export failure has a message");
    snprintf(file, sizeof file, "%s.h", path);
    unlink(file);
    snprintf(file, sizeof file, "%s.c", path);
    unlink(file);
    frl_config_destroy(opt);
}

int frl_fuzz_policy_one(const uint8_t *data, size_t size)
{
    char err[FRL_ERRMSG_SIZE];
    frl_container *c = NULL;
    frl_status st = frl_container_parse(&c, data, size, NULL, err);
    if (st != FRL_OK)
        return st;
    frl_policy *p = NULL;
    st = frl_policy_from_container(&p, fuzz_runtime(), c, err);
    frl_container_free(c);
    require((st == FRL_OK) == (p != NULL), "*out set exactly on success");
    require(st == FRL_OK || st == FRL_ERR_FORMAT || st == FRL_ERR_NOMEM, "status");
    require(st == FRL_OK || strlen(err) > 0, "a failure has a message");
    if (p) {
        exercise(p);
        export_both(p);
    }
    frl_policy_destroy(p);
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifdef FRL_FUZZ_SEALED
/* libFuzzer's mutations of a whole file almost never get past zstd and the two
 * checksums. Built with FRL_FUZZ_SEALED (tests/fuzz/libfuzzer.sh), an input is a
 * little-endian u32 section count and an uncompressed payload, sealed here into a valid
 * container, so the mutations reach the sections. */
#include "ckpt_forge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t file_size;
    unsigned char *file = size >= 4 ? forge_file(data + 4, size - 4, forge_get32(data),
                                                 &file_size)
                                    : NULL;
    if (file)
        frl_fuzz_policy_one(file, file_size);
    free(file);
    return 0;
}
#else
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    frl_fuzz_policy_one(data, size);
    return 0;
}
#endif
