/* Probes of dist.mode=ddppo under `mpirun -np 2` (tests/test_dist_checks.sh): what only
 * a program that drives the two ranks apart can show. Each mode prints "PROBE ..." lines
 * that the script matches, then ends the job with MPI_Abort (after a fault the library
 * leaves MPI_Finalize undone: it would wait for the missing rank).
 *
 *   dist_probe MODE        (FRL_MPI_PLUGIN names the plugin: this program links the
 *                           static library, so the plugin is not beside it)
 * MODE:
 *   sizes       the ranks exchange blocks of different sizes: each names the other's size
 *   version     rank 1 speaks for another library version: rank 0 names it */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fastrl.h"
#include "core/dist.h"
#include "core/dist_api.h"
#include "trainer/trainer_state.h"

static int rank;

static frl_trainer *trainer(const char *timeout, const char *on_fault, frl_status *st)
{
    frl_config *cfg = NULL;
    frl_runtime *rt = NULL;
    frl_trainer *t = NULL;
    frl_config_create(&cfg, NULL);
    frl_config_set(cfg, "dist.mode", "ddppo");
    frl_config_set(cfg, "dist.timeout", timeout);
    frl_config_set(cfg, "dist.on_fault", on_fault);
    frl_config_set(cfg, "train.num_envs", "4");
    frl_config_set(cfg, "runtime.threads", "1");
    frl_runtime_create(&rt, NULL, NULL, NULL);
    *st = frl_trainer_create(&t, rt, "CartPole-v1", cfg);
    frl_config_destroy(cfg);
    return t;
}

/* Rank 0 sends 16 bytes and expects 16, rank 1 sends 8 and expects 8. */
static void sizes(void)
{
    frl_status st;
    frl_trainer *t = trainer("5", "return", &st);
    if (!t) {
        printf("PROBE rank %d: no trainer: %s\n", rank, frl_last_error());
        return;
    }
    char send[16] = {0}, recv[32], err[FRL_ERRMSG_SIZE] = "";
    size_t bytes = rank == 0 ? 16 : 8;
    st = frl_dist_allgather(t->dist, send, bytes, recv, "the size probe", err);
    printf("PROBE rank %d: status %d: %s\n", rank, (int)st, st == FRL_OK ? "accepted" : err);
}

/* Rank 1: the plugin opened as frl_dist_open does, then a header from libfastrl 0.0.1. */
static void fake_old_rank(void)
{
    void *h = dlopen(getenv("FRL_MPI_PLUGIN"), RTLD_NOW);
    const frl_mpi_plugin *(*get)(void) = NULL;
    void *sym = h ? dlsym(h, FRL_MPI_PLUGIN_SYMBOL) : NULL;
    memcpy(&get, &sym, sizeof get);
    frl_mpi_comm *c = NULL;
    int32_t r, n;
    char why[256];
    if (!get || get()->open(-1, 5, 0, &c, &r, &n, why, sizeof why)) {
        printf("PROBE rank 1: no plugin\n");
        return;
    }
    frl_dist_header mine = {FRL_DIST_MAGIC, "0.0.1", 12345}, all[2];
    get()->exchange(c, &mine, 0, sizeof mine, all, "the fake header", why, sizeof why);
}

static void version(void)
{
    if (rank == 1) {
        fake_old_rank();
        return;
    }
    frl_status st;
    frl_trainer *t = trainer("5", "return", &st);
    printf("PROBE rank 0: status %d: %s\n", (int)st, t ? "accepted" : frl_last_error());
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "sizes"))
        sizes();
    else if (!strcmp(mode, "version"))
        version();
    else
        printf("PROBE: unknown mode '%s'\n", mode);
    printf("PROBE rank %d: done\n", rank);
    sleep(1); /* the other rank's lines first */
    MPI_Abort(MPI_COMM_WORLD, 0);
    return 0;
}
