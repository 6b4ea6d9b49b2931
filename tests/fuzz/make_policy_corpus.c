/* Corpus for the policy-loader fuzz target (fuzz_policy.c), written to DIR:
 *   ok_*      valid files of each format version (1 is the only one): a discrete and a
 *             Gaussian policy, a shared-trunk one with a normaliser, and trainer
 *             checkpoints of PPO, DQN with its replay, ES, GA and R2D2;
 *   format_*  every truncation of one valid file, 200 single-bit flips outside the
 *             version field, and section-level corruptions with correct checksums
 *             (parameter count, a NaN weight, malformed spaces and settings);
 *   any_*     300 flips inside the uncompressed payload, sealed again so the checksums
 *             pass (the loader must not crash; many are still valid files).
 * With a second directory, also each file's payload as the FRL_FUZZ_SEALED libFuzzer
 * target takes it (tests/fuzz/libfuzzer.sh). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt_forge.h"
#include "core/error.h"
#include "io/container.h"

static const char *outdir;
static uint64_t rng_state = 0x1234567;

static uint64_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return rng_state >> 17;
}

static void die(const char *what)
{
    fprintf(stderr, "make_policy_corpus: %s: %s\n", what, frl_last_error());
    exit(1);
}

static void emit(const char *name, const void *data, size_t size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    if (forge_write(path, data, size) != 0)
        die(path);
}

static frl_runtime *rt;

static void save_policy(const char *name, int discrete, const char *settings)
{
    frl_space *os = NULL, *as = NULL;
    int64_t w = 5, aw = 2;
    float lo[2] = {-1, -1}, hi[2] = {1, 1};
    frl_config *cfg = NULL;
    frl_policy *p = NULL;
    if (frl_space_create_box(&os, NULL, 1, &w, NULL, NULL) ||
        (discrete ? frl_space_create_discrete(&as, NULL, 3)
                  : frl_space_create_box(&as, NULL, 1, &aw, lo, hi)) ||
        frl_config_create(&cfg, NULL) || frl_config_parse(cfg, settings) ||
        frl_policy_create(&p, rt, cfg, os, as))
        die("policy");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    if (frl_policy_save(p, path))
        die("save");
    frl_policy_destroy(p);
    frl_config_destroy(cfg);
    frl_space_destroy(os);
    frl_space_destroy(as);
}

static void save_trainer(const char *name, const char *settings)
{
    frl_config *cfg = NULL;
    frl_trainer *t = NULL;
    if (frl_config_create(&cfg, NULL) || frl_config_parse(cfg, settings) ||
        frl_trainer_create(&t, rt, "CartPole-v1", cfg) || frl_trainer_train(t, 64))
        die("trainer");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    if (frl_trainer_save(t, path))
        die("save trainer");
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
}

static unsigned char *read_back(const char *name, size_t *size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    unsigned char *b = forge_read(path, size);
    if (!b)
        die(path);
    return b;
}

static void truncations_and_flips(const unsigned char *b, size_t size)
{
    char name[64];
    for (size_t n = 0; n < size; n++) {
        snprintf(name, sizeof name, "format_trunc_%05zu", n);
        emit(name, b, n);
    }
    unsigned char *copy = malloc(size);
    for (int i = 0; i < 200; i++) {
        memcpy(copy, b, size);
        size_t bit = (size_t)(rnd() % (size * 8));
        copy[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        int version = bit / 8 >= 8 && bit / 8 < 12;
        snprintf(name, sizeof name, "%s_flip_%04d", version ? "any" : "format", i);
        emit(name, copy, size);
    }
    free(copy);
}

static void payload_flips(const unsigned char *file, size_t size)
{
    size_t raw_size;
    unsigned char *raw = forge_unpack(file, size, &raw_size);
    uint32_t nsec = forge_get32(file + 36);
    if (!raw)
        die("unpack");
    char name[64];
    for (int i = 0; i < 300; i++) {
        size_t bit = (size_t)(rnd() % (raw_size * 8));
        raw[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        size_t fsize;
        unsigned char *f = forge_file(raw, raw_size, nsec, &fsize);
        snprintf(name, sizeof name, "any_payload_flip_%04d", i);
        emit(name, f, fsize);
        free(f);
        raw[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    free(raw);
}

/* Rewrite the valid file with one section replaced; CRCs are right, contents are not. */
static void corrupt(const char *src, const char *name, const char *section, frl_dtype t,
                    uint64_t count, const void *data)
{
    char path[4096], err[FRL_ERRMSG_SIZE];
    snprintf(path, sizeof path, "%s/%s", outdir, src);
    frl_container *c;
    if (frl_container_read(&c, path, NULL, err))
        die(err);
    frl_section s[64];
    int32_t n = frl_container_count(c);
    for (int32_t i = 0; i < n; i++) {
        s[i] = *frl_container_at(c, i);
        if (!strcmp(s[i].name, section)) {
            s[i].dtype = t;
            s[i].count = count;
            s[i].data = data;
        }
    }
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    if (frl_container_write(path, NULL, s, n, err))
        die(err);
    frl_container_free(c);
}

static void section_corruptions(void)
{
    static float params[100000];
    static const double bad_space[] = {9, 5, 1, 5};
    static const double huge_space[] = {2, 1e9, 1, 1e9};
    static const double short_box[] = {2, 5, 1, 5, 0, 0};
    /* n and the shape disagree, the bounds fit n: read past them before the loader
     * compared the two (found by libFuzzer over sealed payloads). */
    static const double shape_larger[] = {2, 2, 1, 5, -1, -1, 1, 1};
    static const double shape_smaller[] = {2, 4, 2, 1, 2, -1, -1, -1, -1, 1, 1, 1, 1};
    for (size_t i = 0; i < 100000; i++)
        params[i] = 0.01f;
    size_t n;
    unsigned char *b = read_back("ok_policy_discrete", &n);
    free(b);
    corrupt("ok_policy_discrete", "format_params_short", "policy.params", FRL_DTYPE_F32, 10, params);
    corrupt("ok_policy_discrete", "format_params_long", "policy.params", FRL_DTYPE_F32, 99999, params);
    corrupt("ok_policy_discrete", "format_params_f64", "policy.params", FRL_DTYPE_F64, 10, params);
    corrupt("ok_policy_discrete", "format_space_kind", "policy.obs_space", FRL_DTYPE_F64, 4, bad_space);
    corrupt("ok_policy_discrete", "format_space_huge", "policy.obs_space", FRL_DTYPE_F64, 4, huge_space);
    corrupt("ok_policy_discrete", "format_space_short", "policy.obs_space", FRL_DTYPE_F64, 6, short_box);
    corrupt("ok_policy_discrete", "format_space_shape_larger", "policy.obs_space", FRL_DTYPE_F64, 8,
            shape_larger);
    corrupt("ok_policy_discrete", "format_space_shape_smaller", "policy.obs_space", FRL_DTYPE_F64,
            13, shape_smaller);
    corrupt("ok_policy_discrete", "format_settings_garbage", "policy.settings", FRL_DTYPE_TEXT, 9,
            "no=such x");
    corrupt("ok_policy_discrete", "format_settings_hidden", "policy.settings", FRL_DTYPE_TEXT, 22,
            "policy.hidden=64,64,64");
    /* settings no policy of its spaces can have: a Q head over the box actions (it was
     * FRL_ERR_UNSUPPORTED, a status that says the runtime cannot host a good file) */
    static const char head_q[] = "policy.hidden=12 policy.activation=elu policy.head=q";
    corrupt("ok_policy_gaussian", "format_settings_head_q", "policy.settings", FRL_DTYPE_TEXT,
            sizeof head_q - 1, head_q);
    corrupt("ok_policy_discrete", "format_ids_short", "policy.ids", FRL_DTYPE_U64, 1, params);
    corrupt("ok_policy_discrete", "format_norm_missing", "policy.obsnorm", FRL_DTYPE_F64, 3, params);
}

static void nan_weight(void)
{
    char path[4096], err[FRL_ERRMSG_SIZE];
    snprintf(path, sizeof path, "%s/ok_policy_discrete", outdir);
    frl_container *c;
    if (frl_container_read(&c, path, NULL, err))
        die(err);
    const frl_section *p = frl_container_find(c, "policy.params", FRL_DTYPE_F32, -1, err);
    uint64_t n = p->count;
    float *w = malloc(sizeof(float) * n);
    memcpy(w, p->data, sizeof(float) * n);
    w[n / 2] = NAN;
    frl_container_free(c);
    corrupt("ok_policy_discrete", "format_params_nan", "policy.params", FRL_DTYPE_F32, n, w);
    free(w);
}

/* Every file in outdir that unpacks, as the FRL_FUZZ_SEALED target reads its inputs
 * (a u32 section count, then the uncompressed payload), into dir: libFuzzer's seeds. */
static void write_payloads(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "mkdir -p '%s'", dir);
    DIR *d = system(path) == 0 ? opendir(outdir) : NULL;
    if (!d)
        die(dir);
    for (struct dirent *e; (e = readdir(d));) {
        size_t size, raw_size;
        snprintf(path, sizeof path, "%s/%s", outdir, e->d_name);
        unsigned char *file = e->d_name[0] != '.' ? forge_read(path, &size) : NULL;
        unsigned char *raw = file ? forge_unpack(file, size, &raw_size) : NULL;
        if (raw && raw_size) {
            unsigned char *in = malloc(4 + raw_size);
            if (!in)
                die("payload");
            memcpy(in, file + 36, 4); /* the header's section count */
            memcpy(in + 4, raw, raw_size);
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (forge_write(path, in, 4 + raw_size) != 0)
                die(path);
            free(in);
        }
        free(raw);
        free(file);
    }
    closedir(d);
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: make_policy_corpus DIR [PAYLOAD_DIR]\n");
        return 2;
    }
    outdir = argv[1];
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", outdir);
    if (system(cmd) != 0 || frl_runtime_create(&rt, NULL, NULL, NULL))
        die("setup");
    save_policy("ok_policy_discrete", 1, "policy.hidden=16,8");
    save_policy("ok_policy_gaussian", 0, "policy.hidden=12 policy.activation=elu");
    save_policy("ok_policy_shared_norm", 1, "policy.shared=true policy.obs_norm=true policy.hidden=8,8");
    save_trainer("ok_trainer_cartpole", "train.num_envs=4 train.rollout=8 policy.hidden=8");
    /* A DQN trainer with its replay saved: the replay's sections, for the trainer
     * target (tests/fuzz/libfuzzer.sh), and a Q-policy for this one. */
    save_trainer("ok_trainer_dqn", "train.algo=dqn train.num_envs=2 train.buffer_size=64 "
                 "train.learning_starts=16 train.batch_size=8 train.save_replay=true "
                 "policy.hidden=8");
    /* Neuroevolution's populations (ES's noise table small) and R2D2's sequences. */
    save_trainer("ok_trainer_es", "train.algo=es es.population=4 es.noise_floats=4096 "
                 "policy.hidden=8");
    save_trainer("ok_trainer_ga", "train.algo=ga ga.population=4 ga.elites=1 ga.truncation=2 "
                 "policy.hidden=8");
    save_trainer("ok_trainer_r2d2", "train.algo=r2d2 train.num_envs=2 train.seq_length=8 "
                 "train.seq_overlap=4 train.burn_in=2 train.batch_size=2 train.buffer_size=256 "
                 "train.learning_starts=16 policy.hidden=8 policy.core_size=8");
    size_t n;
    unsigned char *b = read_back("ok_policy_discrete", &n);
    truncations_and_flips(b, n);
    payload_flips(b, n);
    free(b);
    section_corruptions();
    nan_weight();
    if (argc == 3)
        write_payloads(argv[2]);
    frl_runtime_destroy(rt);
    return 0;
}
