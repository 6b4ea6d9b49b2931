/* A trainer's place among MPI ranks (dist.mode): the MPI plugin, loaded on first use
 * (core/dist_api.h), a communicator, and the exchanges the distributed modes need (an
 * all-gather, an all-to-all, preemption notices), each with a timeout. dist.mode=none
 * opens nothing and needs no MPI. */
#ifndef FRL_CORE_DIST_H
#define FRL_CORE_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "core/alloc.h"
#include "core/config.h"
#include "core/error.h"
#include "core/space.h"

typedef struct frl_dist {
    const struct frl_mpi_plugin *mpi;
    struct frl_mpi_comm *comm;
    int32_t rank, size;
    int64_t exchanges;          /* all-gathers so far */
    int64_t bytes;              /* bytes this rank sent and received in them */
    int faulted;                /* an exchange failed (dist.on_fault=return): the job is over */
} frl_dist;

/* What a rank trains beyond its settings, which every rank must share: ranks on other
 * envs or spaces would exchange records of other sizes or, worse, of the same size and
 * another meaning. */
typedef struct frl_dist_run {
    const char *arithmetic;       /* what decides the bits beyond the settings: the
                                   * network kernels' table ("the avx2 kernels") */
    const char *env;              /* the env's name; "" for a host's vec env */
    const frl_space *obs, *act;   /* the policy's spaces */
    int64_t num_params;           /* the policy's parameter count */
} frl_dist_run;

/* The first message between the ranks. Its layout never changes (ranks of any two
 * versions exchange it whole), so that mixed versions are named as such rather than
 * failing on a record of another size: a tag, the library version and the size of the
 * record that follows. */
typedef struct frl_dist_header {
    char magic[8];                /* FRL_DIST_MAGIC */
    char version[48];             /* frl_version_string() */
    uint64_t record_bytes;
} frl_dist_header;
#define FRL_DIST_MAGIC "frldist"

/* *out = NULL under dist.mode=none; else the plugin's communicator of dist.comm, with
 * the ranks' library versions, settings and run (above) checked equal: a difference
 * fails on every rank, naming the first rank that differs from rank 0 and what differs.
 * FRL_ERR_UNSUPPORTED with the reason when the plugin cannot be loaded. */
frl_status frl_dist_open(frl_dist **out, const frl_allocator *al, const frl_config *cfg,
                         const frl_dist_run *run, const char *who, char *err);
void frl_dist_close(frl_dist *d, const frl_allocator *al);

/* Every rank's bytes of send into recv ([size][bytes], rank order); phase names what
 * the ranks were doing, for the message when one does not answer (FRL_ERR_IO). */
frl_status frl_dist_allgather(frl_dist *d, const void *send, size_t bytes, void *recv,
                              const char *phase, char *err);

/* Preemption notices of a round (dist.preempt; dist_api.h): open before collecting,
 * send once this rank has finished, arrived counts the others' so far, close waits for
 * all (FRL_ERR_IO naming the silent ranks after the timeout). */
frl_status frl_dist_notices_open(frl_dist *d, int64_t round, char *err);
frl_status frl_dist_notice_send(frl_dist *d, int64_t round, char *err);
int32_t frl_dist_notices_arrived(frl_dist *d);
frl_status frl_dist_notices_close(frl_dist *d, const char *phase, char *err);

/* Block p of send ([size][bytes]) to rank p, and every rank's block for this one into
 * recv ([size][bytes], rank order); errors as frl_dist_allgather. */
frl_status frl_dist_alltoall(frl_dist *d, const void *send, size_t bytes, void *recv,
                             const char *phase, char *err);

/* "Open MPI v4.1.4 (libfastrl-mpi.so.0)" or "not available: why", for `fastrl info`. */
const char *frl_dist_describe(void);

#endif
