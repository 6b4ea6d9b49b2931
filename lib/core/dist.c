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
static char load_why[FRL_ERRMSG_SIZE - 120];
static char description[FRL_ERRMSG_SIZE];

static void load(void)
{
    void *h = frl_plugin_open(FRL_MPI_PLUGIN_FILE, "FRL_MPI_PLUGIN",
                              "build with MPI installed (-Dmpi=enabled; scripts/setup.sh "
                              "installs OpenMPI)", load_why, sizeof load_why);
    if (h)
        plugin = frl_plugin_table(h, FRL_MPI_PLUGIN_FILE, FRL_MPI_PLUGIN_SYMBOL,
                                  FRL_MPI_PLUGIN_ABI, load_why, sizeof load_why);
    if (h && !plugin)
        dlclose(h);
    if (plugin)
        snprintf(description, sizeof description, "%.200s (%s)", plugin->version(),
                 FRL_MPI_PLUGIN_FILE);
    else
        snprintf(description, sizeof description, "not available: %s", load_why);
}

const char *frl_dist_describe(void)
{
    pthread_once(&load_once, load);
    return description;
}

/* ---- the ranks' settings ---- */

/* What every rank must agree on: the library, and each setting but the two that may
 * differ per rank (the communicator's handle, the thread count: neither changes a
 * result). */
typedef struct rank_record {
    char version[48];
    char arithmetic[48];
    uint64_t hash[FRL_KEY_COUNT];
} rank_record;

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h | 1; /* 0 marks a key not in the text */
}

static int per_rank_key(const char *key, size_t n)
{
    return (n == 9 && !memcmp(key, "dist.comm", 9)) ||
           (n == 15 && !memcmp(key, "runtime.threads", 15));
}

static void fill_record(rank_record *r, const char *text, const char *arithmetic)
{
    memset(r, 0, sizeof *r);
    snprintf(r->version, sizeof r->version, "%s", frl_version_string());
    snprintf(r->arithmetic, sizeof r->arithmetic, "%s", arithmetic);
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

static frl_status compare_records(const frl_dist *d, const rank_record *all, const char *text,
                                  const char *who, char *err)
{
    const rank_record *r0 = &all[0];
    for (int32_t p = 1; p < d->size; p++) {
        const rank_record *r = &all[p];
        if (strcmp(r->version, r0->version))
            return frl_fail(err, FRL_ERR_VERSION, "%s: rank %d runs libfastrl %.40s, rank 0 "
                            "%.40s: every rank needs the same library", who, (int)p,
                            r->version, r0->version);
        if (strcmp(r->arithmetic, r0->arithmetic))
            return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "%s: rank %d computes with %.40s, "
                            "rank 0 with %.40s: the ranks would drift apart (give every node "
                            "the same FRL_KERNELS, e.g. avx2)", who, (int)p, r->arithmetic,
                            r0->arithmetic);
        for (int32_t k = 0; k < FRL_KEY_COUNT; k++)
            if (r->hash[k] != r0->hash[k]) {
                char mine[160];
                own_line(text, frl_key_defs[k].name, mine, sizeof mine);
                return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "%s: rank %d's %s differs from "
                                "rank 0's (rank %d has %s): every rank needs the same "
                                "settings", who, (int)p, frl_key_defs[k].name, (int)d->rank,
                                mine);
            }
    }
    return FRL_OK;
}

static frl_status check_settings(frl_dist *d, const frl_allocator *al, const frl_config *cfg,
                                 const char *arithmetic, const char *who, char *err)
{
    enum { TEXT = 64 * 1024 };
    char *text = frl_alloc(al, TEXT, 64);
    rank_record *all = frl_alloc(al, sizeof *all * ((size_t)d->size + 1), 64);
    frl_status st = text && all ? FRL_OK : frl_fail(err, FRL_ERR_NOMEM, "%s: out of memory", who);
    if (st == FRL_OK && (st = frl_config_to_text(cfg, "", text, TEXT)) != FRL_OK)
        st = frl_fail(err, st, "%s: the settings do not fit %d bytes", who, (int)TEXT);
    if (st == FRL_OK) {
        fill_record(&all[d->size], text, arithmetic);
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
                         const char *arithmetic, const char *who, char *err)
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
    frl_status st = check_settings(d, al, cfg, arithmetic, who, err);
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
