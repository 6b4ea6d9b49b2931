/* A host that owns MPI (doc/distributed.md): it splits MPI_COMM_WORLD into two halves
 * and trains a CartPole policy in each with dist.mode=ddppo over its half's
 * communicator, passed as a Fortran handle in dist.comm (MPI_Comm cannot appear in
 * fastrl.h). The halves run the same settings, so they train the same policy: world
 * rank 0 compares the two saved policies byte for byte. The library duplicates each
 * communicator, so its messages never meet the host's own barrier and broadcast here.
 *
 *   mpirun -np 4 dist_host DIR        (an even number of ranks, 2 or more)
 * Exit status 0 when the halves agree. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fastrl.h>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        frl_status st_ = (call);                                                         \
        if (st_ != FRL_OK) {                                                             \
            fprintf(stderr, "%s failed: %s\n", #call, frl_last_error());                 \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                \
        }                                                                                \
    } while (0)

/* 1 when the files at a and b hold the same bytes. */
static int same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb, ca = 0, cb = 0;
    while (same && ca != EOF) {
        ca = fgetc(fa);
        cb = fgetc(fb);
        same = ca == cb;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

/* Train on the half's communicator; the half's rank 0 saves the policy to path. */
static void train_half(MPI_Comm half, const char *path)
{
    frl_config *cfg;
    frl_runtime *rt;
    frl_trainer *t;
    int rank;
    MPI_Comm_rank(half, &rank);
    CHECK(frl_config_create(&cfg, NULL));
    CHECK(frl_config_set_int(cfg, "runtime.threads", 1));
    CHECK(frl_config_set_int(cfg, "runtime.seed", 7));
    CHECK(frl_config_set(cfg, "dist.mode", "ddppo"));
    CHECK(frl_config_set_int(cfg, "dist.comm", (int64_t)MPI_Comm_c2f(half)));
    CHECK(frl_config_set_int(cfg, "train.num_envs", 4));
    CHECK(frl_runtime_create(&rt, cfg, NULL, NULL));
    CHECK(frl_trainer_create(&t, rt, "CartPole-v1", cfg)); /* collective over half */
    CHECK(frl_trainer_train(t, 16384));
    if (rank == 0)
        CHECK(frl_policy_save(frl_trainer_policy(t), path));
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
    frl_config_destroy(cfg);
}

int main(int argc, char **argv)
{
    int provided, rank, size, agree = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2 || size < 2 || size % 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np N dist_host DIR (N even, 2 or more)\n");
        MPI_Finalize();
        return 2;
    }
    int color = rank < size / 2 ? 0 : 1;
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
    char path[4096], other[4096];
    snprintf(path, sizeof path, "%s/half%d.frl", argv[1], color);
    train_half(half, path);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        snprintf(other, sizeof other, "%s/half1.frl", argv[1]);
        snprintf(path, sizeof path, "%s/half0.frl", argv[1]);
        agree = same_file(path, other);
        printf("the two halves trained %s policies\n", agree ? "the same" : "different");
    }
    MPI_Bcast(&agree, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return agree ? 0 : 1;
}
