/* The interface between libfastrl and its MPI plugin (libfastrl-mpi.so.0), which the core
 * loads with dlopen the first time a trainer asks for a distributed mode (dist.mode). The
 * core links nothing of MPI: MPI_Comm's type differs between MPI implementations, so it
 * never appears in fastrl.h, and a host without MPI runs as before. Internal: both sides
 * are built from this tree and the ABI number guards against a plugin from another build.
 *
 * Calls return 0 (or a pointer) on success, else nonzero with a sentence in why. */
#ifndef FRL_CORE_DIST_API_H
#define FRL_CORE_DIST_API_H

#include <stddef.h>
#include <stdint.h>

#define FRL_MPI_PLUGIN_ABI 3u
#define FRL_MPI_PLUGIN_SYMBOL "frl_mpi_plugin_get"
#define FRL_MPI_PLUGIN_FILE "libfastrl-mpi.so.0"

/* A communicator of the plugin's: a duplicate of the host's (so the library's messages
 * never meet the host's), and the fault state. */
typedef struct frl_mpi_comm frl_mpi_comm;

typedef struct frl_mpi_plugin {
    uint32_t abi;
    /* The MPI library's own description ("Open MPI v4.1.4, ..."), first line. */
    const char *(*version)(void);
    /* fcomm: a Fortran handle (MPI_Comm_c2f) of the host's communicator, or -1 for
     * MPI_COMM_WORLD, initialising MPI (MPI_THREAD_SERIALIZED) when the host has not;
     * MPI initialised here is finalised when the process exits, unless a fault ended the
     * job. Collective over the communicator's ranks. */
    int (*open)(int64_t fcomm, double timeout_s, int abort_on_fault, frl_mpi_comm **out,
                int32_t *rank, int32_t *size, char *why, size_t why_size);
    /* Blocks of `bytes` bytes between all ranks: rank p receives send + p * send_stride
     * from every rank (send_stride 0: the same block to all, an all-gather; bytes: an
     * all-to-all), into recv ([size][bytes], in rank order, this rank's own included),
     * with non-blocking messages polled until they arrive or timeout_s passes. On a
     * timeout or an MPI error why names the ranks that did not answer and the phase;
     * then, with abort_on_fault, the message goes to stderr and MPI_Abort ends the job;
     * otherwise this call and every later one on the communicator fail. */
    int (*exchange)(frl_mpi_comm *c, const void *send, size_t send_stride, size_t bytes,
                    void *recv, const char *phase, char *why, size_t why_size);
    /* Notices of a round (DD-PPO's preemption: "this rank finished its rollout"), on a
     * communicator of their own: open posts a receive from every peer; send tells every
     * peer; arrived counts the peers' notices so far without waiting; close waits for
     * all of them and for its own sends, within the timeout (a fault as allgather's). */
    int (*notices_open)(frl_mpi_comm *c, int64_t round, char *why, size_t why_size);
    int (*notice_send)(frl_mpi_comm *c, int64_t round, char *why, size_t why_size);
    int32_t (*notices_arrived)(frl_mpi_comm *c);
    int (*notices_close)(frl_mpi_comm *c, const char *phase, char *why, size_t why_size);
    void (*close)(frl_mpi_comm *c);
} frl_mpi_plugin;

#endif
