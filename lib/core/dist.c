/* See dist.h. The plugin is loaded once per process and stays loaded: MPI, once
 * initialised, lives until the process ends. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fastrl.h"
#include "core/dist.h"
#include "core/dist_api.h"
#include "core/plugin_load.h"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const frl_mpi_plugin *plugin;
static char load_why[FRL_ERRMSG_SIZE]; /* cut in messages after the reason (plugin_load.c) */
static char description[FRL_ERRMSG_SIZE];

static void load(void)
{
    void *h = frl_plugin_open(FRL_MPI_PLUGIN_FILE, "FRL_MPI_PLUGIN",
                              "build with MPI installed (-Dmpi=enabled; scripts/setup.sh "
                              "installs OpenMPI)", load_why, sizeof load_why);
    if (h)
        plugin = frl_plugin_table(h, FRL_MPI_PLUGIN_FILE, "FRL_MPI_PLUGIN",
                                  FRL_MPI_PLUGIN_SYMBOL, FRL_MPI_PLUGIN_ABI, load_why,
                                  sizeof load_why);
    if (h && !plugin)
        dlclose(h);
    if (plugin)
        snprintf(description, sizeof description, "%.200s (%s)", plugin->version(),
                 FRL_MPI_PLUGIN_FILE);
    else
        snprintf(description, sizeof description, "not available: %.230s", load_why);
}

const char *frl_dist_describe(void)
{
    pthread_once(&load_once, load);
    return description;
}

/* ---- the ranks' settings ---- */

/* What every rank must agree on beyond the library version (the header, dist.h): its
 * run, and each setting but the two that may differ per rank (the communicator's
 * handle, the thread count: neither changes a result). */
typedef struct rank_record {
    char arithmetic[48];
    char env[64];
    char obs[FRL_SPACE_DESCRIBE], act[FRL_SPACE_DESCRIBE];
    uint64_t obs_hash, act_hash;  /* kind, shape and bounds: the descriptions omit bounds */
    int64_t num_params;
    uint64_t hash[FRL_KEY_COUNT];
} rank_record;

static uint64_t fnv_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

static const uint64_t fnv_offset = 1469598103934665603ULL;

/* One integer's eight bytes, low first, taken by shifts: the static analyser reads the
 * bytes of a local integer array as garbage. */
static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ULL;
    return h;
}

static uint64_t fnv1a(const char *s, size_t n)
{
    return fnv_bytes(fnv_offset, s, n) | 1; /* 0 marks a key not in the text */
}

/* A space's kind, shape and bounds: what a checkpoint encodes of it. */
static uint64_t space_hash(uint64_t h, const frl_space *s)
{
    h = fnv_u64(h, (uint64_t)s->kind);
    h = fnv_u64(h, (uint64_t)s->n);
    h = fnv_u64(h, (uint64_t)s->rank);
    for (int32_t i = 0; i < s->rank && i < FRL_SPACE_MAX_RANK; i++)
        h = fnv_u64(h, (uint64_t)s->shape[i]);
    if (s->kind == FRL_SPACE_BOX) {
        h = fnv_bytes(h, s->low, sizeof(float) * (size_t)s->n);
        h = fnv_bytes(h, s->high, sizeof(float) * (size_t)s->n);
    }
    for (int i = 0; i < 2; i++)
        if (s->parts[i])
            h = space_hash(h, s->parts[i]);
    return h;
}

static int per_rank_key(const char *key, size_t n)
{
    return (n == 9 && !memcmp(key, "dist.comm", 9)) ||
           (n == 15 && !memcmp(key, "runtime.threads", 15));
}

static void hash_settings(rank_record *r, const char *text)
{
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n'), *eq = strchr(line, '=');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (eq && eq < line + len) {
            char key[96];
            size_t kn = (size_t)(eq - line);
            snprintf(key, sizeof key, "%.*s", (int)kn, line);
            int32_t k = frl_key_find(key);
            if (k >= 0 && !per_rank_key(line, kn))
                r->hash[k] = fnv1a(line, len);
        }
        line += len + (end != NULL);
    }
}

static void fill_record(rank_record *r, const char *text, const frl_dist_run *run)
{
    memset(r, 0, sizeof *r);
    snprintf(r->arithmetic, sizeof r->arithmetic, "%s", run->arithmetic);
    snprintf(r->env, sizeof r->env, "%s", run->env);
    frl_space_describe(run->obs, r->obs, sizeof r->obs);
    frl_space_describe(run->act, r->act, sizeof r->act);
    r->obs_hash = space_hash(fnv_offset, run->obs);
    r->act_hash = space_hash(fnv_offset, run->act);
    r->num_params = run->num_params;
    hash_settings(r, text);
}

/* This rank's line for key k ("train.lr=0.0003"), or "(unset)". */
static void own_line(const char *text, const char *key, char *buf, size_t size)
{
    size_t kn = strlen(key);
    snprintf(buf, size, "%s unset", key);
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line += !!line)
        if (!strncmp(line, key, kn) && line[kn] == '=') {
            snprintf(buf, size, "%.*s", (int)strcspn(line, "\n"), line);
            return;
        }
}

static const char *env_or_host(const char *env)
{
    return env[0] ? env : "a host's vec env";
}

/* Rank p's space (what: "observation") against rank 0's; the descriptions omit bounds. */
static frl_status compare_space(int32_t p, const char *what, const char *have, uint64_t h,
                                const char *want, uint64_t h0, const char *who, char *err)
{
    if (h == h0)
        return FRL_OK;
    return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "%s: rank %d's %s space is %.60s, rank 0's "
                    "%.60s%s: every rank needs the same env", who, (int)p, what, have, want,
                    strcmp(have, want) ? "" : " (their bounds differ)");
}

/* Rank p's run against rank 0's: the arithmetic, the env, its spaces, the policy. */
static frl_status compare_run(int32_t p, const rank_record *r, const rank_record *r0,
                              const char *who, char *err)
{
    if (strcmp(r->arithmetic, r0->arithmetic))
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "%s: rank %d computes with %.40s, "
                        "rank 0 with %.40s: the ranks would drift apart (give every node "
                        "the same FRL_KERNELS, e.g. avx2)", who, (int)p, r->arithmetic,
                        r0->arithmetic);
    if (strcmp(r->env, r0->env))
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "%s: rank %d trains on %.64s, rank 0 on "
                        "%.64s: every rank needs the same env", who, (int)p,
                        env_or_host(r->env), env_or_host(r0->env));
    frl_status st = compare_space(p, "observation", r->obs, r->obs_hash, r0->obs,
                                  r0->obs_hash, who, err);
    if (st == FRL_OK)
        st = compare_space(p, "action", r->act, r->act_hash, r0->act, r0->act_hash, who, err);
    return st;
}

static frl_status compare_records(const frl_dist *d, const rank_record *all, const char *text,
                                  const char *who, char *err)
{
    const rank_record *r0 = &all[0];
    for (int32_t p = 1; p < d->size; p++) {
        const rank_record *r = &all[p];
        frl_status st = compare_run(p, r, r0, who, err);
        if (st != FRL_OK)
            return st;
        for (int32_t k = 0; k < FRL_KEY_COUNT; k++)
            if (r->hash[k] != r0->hash[k]) {
                char mine[160];
                own_line(text, frl_key_defs[k].name, mine, sizeof mine);
                return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "%s: rank %d's %s differs from "
                                "rank 0's (rank %d has %s): every rank needs the same "
                                "settings", who, (int)p, frl_key_defs[k].name, (int)d->rank,
                                mine);
            }
        /* The same settings and spaces make the same network; a difference here is a
         * build's, and the gradients' records would not match. */
        if (r->num_params != r0->num_params)
            return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "%s: rank %d's policy has %lld "
                            "parameters, rank 0's %lld: every rank needs the same network",
                            who, (int)p, (long long)r->num_params, (long long)r0->num_params);
    }
    return FRL_OK;
}

/* The headers first (dist.h): every rank the same version, hence the same record. */
static frl_status check_versions(frl_dist *d, const frl_allocator *al, const char *who,
                                 char *err)
{
    frl_dist_header *all = frl_alloc(al, sizeof *all * ((size_t)d->size + 1), 64);
    if (!all)
        return frl_fail(err, FRL_ERR_NOMEM, "%s: out of memory", who);
    frl_dist_header *mine = &all[d->size];
    memset(mine, 0, sizeof *mine);
    memcpy(mine->magic, FRL_DIST_MAGIC, sizeof FRL_DIST_MAGIC);
    snprintf(mine->version, sizeof mine->version, "%s", frl_version_string());
    mine->record_bytes = sizeof(rank_record);
    frl_status st = frl_dist_allgather(d, mine, sizeof *mine, all, "the library version check "
                                       "at start", err);
    for (int32_t p = 0; p < d->size && st == FRL_OK; p++) {
        const frl_dist_header *h = &all[p];
        if (memcmp(h->magic, FRL_DIST_MAGIC, sizeof FRL_DIST_MAGIC) ||
            !memchr(h->version, '\0', sizeof h->version))
            st = frl_fail(err, FRL_ERR_VERSION, "%s: rank %d sent no libfastrl version: every "
                          "rank needs the same library", who, (int)p);
        else if (strcmp(h->version, mine->version))
            st = frl_fail(err, FRL_ERR_VERSION, "%s: rank %d runs libfastrl %.40s, rank %d "
                          "%.40s: every rank needs the same library", who, (int)p, h->version,
                          (int)d->rank, mine->version);
        else if (h->record_bytes != mine->record_bytes)
            st = frl_fail(err, FRL_ERR_VERSION, "%s: rank %d's libfastrl %.40s sends a %llu-byte "
                          "record, rank %d's %llu bytes: builds of one version that differ (every "
                          "rank needs the same library)", who, (int)p, h->version,
                          (unsigned long long)h->record_bytes, (int)d->rank,
                          (unsigned long long)mine->record_bytes);
    }
    frl_free(al, all);
    return st;
}

static frl_status check_settings(frl_dist *d, const frl_allocator *al, const frl_config *cfg,
                                 const frl_dist_run *run, const char *who, char *err)
{
    enum { TEXT = 64 * 1024 };
    frl_status st = check_versions(d, al, who, err);
    if (st != FRL_OK)
        return st;
    char *text = frl_alloc(al, TEXT, 64);
    rank_record *all = frl_alloc(al, sizeof *all * ((size_t)d->size + 1), 64);
    if (!text || !all)
        st = frl_fail(err, FRL_ERR_NOMEM, "%s: out of memory", who);
    if (st == FRL_OK && (st = frl_config_to_text(cfg, "", text, TEXT)) != FRL_OK)
        st = frl_fail(err, st, "%s: the settings do not fit %d bytes", who, (int)TEXT);
    if (st == FRL_OK) {
        fill_record(&all[d->size], text, run);
        st = frl_dist_allgather(d, &all[d->size], sizeof *all, all, "the settings check at "
                                "start", err);
    }
    if (st == FRL_OK)
        st = compare_records(d, all, text, who, err);
    frl_free(al, text);
    frl_free(al, all);
    return st;
}

/* ---- open, close, all-gather ---- */

frl_status frl_dist_open(frl_dist **out, const frl_allocator *al, const frl_config *cfg,
                         const frl_dist_run *run, const char *who, char *err)
{
    *out = NULL;
    if (frl_cfg_choice(cfg, FRL_KEY_DIST_MODE) == FRL_DIST_MODE_NONE)
        return FRL_OK;
    pthread_once(&load_once, load);
    if (!plugin)
        return frl_fail(err, FRL_ERR_UNSUPPORTED, "%s: dist.mode=ddppo needs the MPI plugin, "
                        "which is not available: %s", who, load_why);
    frl_dist *d = frl_alloc(al, sizeof *d, 64);
    if (!d)
        return frl_fail(err, FRL_ERR_NOMEM, "%s: out of memory", who);
    memset(d, 0, sizeof *d);
    d->mpi = plugin;
    char why[FRL_ERRMSG_SIZE - 80];
    int abort_on_fault = frl_cfg_choice(cfg, FRL_KEY_DIST_ON_FAULT) == FRL_DIST_ON_FAULT_ABORT;
    if (plugin->open(frl_cfg_int(cfg, FRL_KEY_DIST_COMM), frl_cfg_float(cfg, FRL_KEY_DIST_TIMEOUT),
                     abort_on_fault, &d->comm, &d->rank, &d->size, why, sizeof why)) {
        frl_free(al, d);
        return frl_fail(err, FRL_ERR_UNSUPPORTED, "%s: MPI: %s", who, why);
    }
    frl_status st = check_settings(d, al, cfg, run, who, err);
    if (st != FRL_OK) {
        frl_dist_close(d, al);
        return st;
    }
    *out = d;
    return FRL_OK;
}

void frl_dist_close(frl_dist *d, const frl_allocator *al)
{
    if (!d)
        return;
    d->mpi->close(d->comm);
    frl_free(al, d);
}

/* An exchange failed: the job is over (dist.on_fault=return got here). */
static frl_status fault(frl_dist *d, const char *why, char *err)
{
    d->faulted = 1;
    return frl_fail(err, FRL_ERR_IO, "%s", why);
}

static frl_status exchange(frl_dist *d, const void *send, size_t stride, size_t bytes,
                           void *recv, const char *phase, char *err)
{
    char why[FRL_ERRMSG_SIZE - 16];
    if (d->mpi->exchange(d->comm, send, stride, bytes, recv, phase, why, sizeof why))
        return fault(d, why, err);
    d->exchanges++;
    d->bytes += 2 * (int64_t)bytes * (d->size - 1);
    return FRL_OK;
}

frl_status frl_dist_allgather(frl_dist *d, const void *send, size_t bytes, void *recv,
                              const char *phase, char *err)
{
    return exchange(d, send, 0, bytes, recv, phase, err);
}

frl_status frl_dist_alltoall(frl_dist *d, const void *send, size_t bytes, void *recv,
                             const char *phase, char *err)
{
    return exchange(d, send, bytes, bytes, recv, phase, err);
}

/* ---- preemption notices ---- */

frl_status frl_dist_notices_open(frl_dist *d, int64_t round, char *err)
{
    char why[FRL_ERRMSG_SIZE - 16];
    if (d->mpi->notices_open(d->comm, round, why, sizeof why))
        return fault(d, why, err);
    return FRL_OK;
}

frl_status frl_dist_notice_send(frl_dist *d, int64_t round, char *err)
{
    char why[FRL_ERRMSG_SIZE - 16];
    if (d->mpi->notice_send(d->comm, round, why, sizeof why))
        return fault(d, why, err);
    d->bytes += d->size - 1;
    return FRL_OK;
}

int32_t frl_dist_notices_arrived(frl_dist *d)
{
    return d->mpi->notices_arrived(d->comm);
}

frl_status frl_dist_notices_close(frl_dist *d, const char *phase, char *err)
{
    char why[FRL_ERRMSG_SIZE - 16];
    if (d->mpi->notices_close(d->comm, phase, why, sizeof why))
        return fault(d, why, err);
    d->bytes += d->size - 1;
    return FRL_OK;
}
