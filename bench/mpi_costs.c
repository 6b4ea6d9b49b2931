/* What a collective costs on this machine's MPI, for doc/distributed.md's model of
 * dist.mode=ddppo (bench/ddppo.py runs it under mpirun with 2 and 4 ranks):
 *   - ping-pong between ranks 0 and 1: half the round trip of an 8-byte message;
 *   - for each size given (bytes): the library's all-gather (the MPI plugin's, as the
 *     trainer calls it: one record from every rank to every rank, polled), its
 *     reduction by slices (an all-to-all of size / N bytes a peer, then an all-gather of
 *     size / N: what the trainer does from 3 ranks, without the sums), and
 *     MPI_Allreduce of as many floats, the collective a non-deterministic data-parallel
 *     learner would use.
 * Each figure is the median of --reps runs, after 10 unmeasured ones.
 *
 *   mpirun -np N bench_mpi_costs [--reps 200] BYTES...
 * Prints, from rank 0, "ranks N", "pingpong_us X", then "size B allgather_us X
 * sliced_us Z allreduce_us Y" per size. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"
#include "core/dist_api.h"

const frl_mpi_plugin *frl_mpi_plugin_get(void);

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static double pingpong_us(int rank, int reps, double *t)
{
    char buf[8] = {0};
    for (int i = -10; i < reps; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
        if (i >= 0)
            t[i] = (MPI_Wtime() - t0) * 1e6 / 2;
    }
    return median(t, reps);
}

/* The library's all-gather of bytes, or (sliced) its reduction by slices without the
 * sums: an all-to-all of bytes / size a peer, then an all-gather of as much. */
static double exchange_us(const frl_mpi_plugin *pl, frl_mpi_comm *c, size_t bytes, int size,
                          int sliced, int reps, double *t)
{
    size_t part = sliced ? (bytes / (size_t)size + 15) / 16 * 16 : bytes;
    char *send = calloc((size_t)size, part), *recv = calloc((size_t)size, part), why[256];
    for (int i = -10; i < reps; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if ((sliced && pl->exchange(c, send, part, part, recv, "bench", why, sizeof why)) ||
            pl->exchange(c, send, 0, part, recv, "bench", why, sizeof why)) {
            fprintf(stderr, "exchange: %s\n", why);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (i >= 0)
            t[i] = (MPI_Wtime() - t0) * 1e6;
    }
    free(send);
    free(recv);
    return median(t, reps);
}

static double allreduce_us(size_t bytes, int reps, double *t)
{
    int n = (int)(bytes / sizeof(float));
    float *a = calloc((size_t)n, sizeof *a), *b = calloc((size_t)n, sizeof *b);
    for (int i = -10; i < reps; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Allreduce(a, b, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        if (i >= 0)
            t[i] = (MPI_Wtime() - t0) * 1e6;
    }
    free(a);
    free(b);
    return median(t, reps);
}

int main(int argc, char **argv)
{
    int provided, rank, size, reps = 200, first = 1;
    /* The command line before MPI starts: --help and a usage error need no ranks. */
    bench_args_init(argc, argv, "bench_mpi_costs",
                    "usage: mpirun -np N (N >= 2) bench_mpi_costs [--reps 200] BYTES...\n");
    if (argc > 1 && !strcmp(argv[1], "--reps")) {
        reps = (int)bench_int(argv[1], bench_value(argc, argv, 1), 1, 1 << 20);
        first = 3;
    }
    for (int i = first; i < argc; i++)
        bench_int("BYTES", argv[i], 1, 1 << 30);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np N (N >= 2) bench_mpi_costs [--reps R] BYTES...\n");
        MPI_Finalize();
        return 2;
    }
    const frl_mpi_plugin *pl = frl_mpi_plugin_get();
    frl_mpi_comm *c;
    int32_t r32, s32;
    char why[256];
    if (pl->open(-1, 60.0, 1, &c, &r32, &s32, why, sizeof why)) {
        fprintf(stderr, "open: %s\n", why);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double *t = calloc((size_t)reps, sizeof *t);
    double pp = pingpong_us(rank, reps, t);
    if (rank == 0)
        printf("ranks %d\npingpong_us %.3f\n", size, pp);
    for (int i = first; i < argc; i++) {
        size_t bytes = (size_t)bench_int("BYTES", argv[i], 1, 1 << 30);
        double ag = exchange_us(pl, c, bytes, size, 0, reps, t);
        double sl = exchange_us(pl, c, bytes, size, 1, reps, t);
        double ar = allreduce_us(bytes, reps, t);
        if (rank == 0)
            printf("size %zu allgather_us %.3f sliced_us %.3f allreduce_us %.3f\n", bytes, ag,
                   sl, ar);
    }
    fflush(stdout);
    free(t);
    pl->close(c);
    MPI_Finalize();
    return 0;
}
