/* Probes of dist.mode=ddppo under `mpirun -np 2` (tests/test_dist_checks.sh): what only
 * a program that drives the two ranks apart can show. Each mode prints "PROBE ..." lines
 * that the script matches, then ends the job with MPI_Abort (after a fault the library
 * leaves MPI_Finalize undone: it would wait for the missing rank).
 *
 *   dist_probe MODE        (FRL_MPI_PLUGIN names the plugin: this program links the
 *                           static library, so the plugin is not beside it)
 * MODE:
 *   sizes       the ranks exchange blocks of different sizes: each names the other's size
 *   version     rank 1 speaks for another library version: rank 0 names it
 *   late        rank 1 comes to the trainer's creation after dist.timeout (on_fault=return):
 *               rank 0's failed creation leaves no memory that rank 1's late arrival
 *               writes into (blocks of every small size, allocated after it, stay intact)
 *   late_abort  the same with dist.on_fault=abort: rank 0 ends the job with MPI_Abort
 *   save_fault  rank 1 trains alone until the timeout (on_fault=return): its save fails
 *   seeds       each rank's runtime has its own runtime.seed (a host seeding by rank),
 *               the trainers' settings the same: the creation fails on both ranks
 *   bad_comm    dist.comm names no communicator (MPI initialised): the creation fails
 *               with the reason on both ranks, not MPI's fatal error handler
 *   save_running  another thread saves while frl_trainer_train runs (mid-update): every
 *               rank refuses, rank 1 (which writes nothing) as rank 0
 *   finalized   the host finalises MPI, then destroys its trainer: the process goes on
 *               (the job ends with exit, not MPI_Abort, in this mode)
 *   comma       LC_NUMERIC is de_DE.UTF-8 (LOCPATH may hold it), dist.timeout=0.5: rank 1
 *               trains alone until the timeout; its message says "0.5 s", not "0,5 s" */
#include <dlfcn.h>
#include <locale.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fastrl.h"
#include "core/dist.h"
#include "core/dist_api.h"
#include "trainer/trainer_state.h"

static int rank;

/* A trainer of dist.mode=ddppo; rt_seed: the runtime's runtime.seed (NULL: the default),
 * comm: dist.comm (NULL: the default). */
static frl_trainer *trainer_on(const char *timeout, const char *on_fault, const char *rt_seed,
                               const char *comm, frl_status *st)
{
    frl_config *cfg = NULL, *rt_cfg = NULL;
    frl_runtime *rt = NULL;
    frl_trainer *t = NULL;
    frl_config_create(&cfg, NULL);
    frl_config_set(cfg, "dist.mode", "ddppo");
    frl_config_set(cfg, "dist.timeout", timeout);
    frl_config_set(cfg, "dist.on_fault", on_fault);
    frl_config_set(cfg, "train.num_envs", "4");
    frl_config_set(cfg, "runtime.threads", "1");
    if (comm)
        frl_config_set(cfg, "dist.comm", comm);
    frl_config_create(&rt_cfg, NULL);
    if (rt_seed)
        frl_config_set(rt_cfg, "runtime.seed", rt_seed);
    frl_runtime_create(&rt, rt_cfg, NULL, NULL);
    *st = frl_trainer_create(&t, rt, "CartPole-v1", cfg);
    frl_config_destroy(cfg);
    frl_config_destroy(rt_cfg);
    return t;
}

static frl_trainer *trainer(const char *timeout, const char *on_fault, frl_status *st)
{
    return trainer_on(timeout, on_fault, NULL, NULL, st);
}

/* Runtimes seeded by rank: the ranks' policies would start apart, then take the same
 * summed gradients, training different policies with no error. */
static void seeds(void)
{
    frl_status st;
    frl_trainer *t = trainer_on("5", "return", rank ? "7" : "3", NULL, &st);
    printf("PROBE rank %d: seeds: status %d: %s\n", rank, (int)st,
           t ? "accepted" : frl_last_error());
}

/* A Fortran handle of no communicator: OpenMPI's MPI_Comm_f2c gives NULL, not
 * MPI_COMM_NULL, and duplicating it ran MPI's fatal error handler. */
static void bad_comm(void)
{
    frl_status st;
    frl_trainer *t = trainer_on("5", "return", NULL, "1000", &st);
    printf("PROBE rank %d: bad_comm: status %d: %s\n", rank, (int)st,
           t ? "accepted" : frl_last_error());
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

enum { BLOCKS = 80, STEP = 16, FILL = 0xAB };

/* Rank 0, after its creation failed: blocks of every size class up to 1280 bytes (one
 * takes the freed chunk of any size), then rank 1's creation, then the blocks checked. */
static void late_rank0(void)
{
    unsigned char *blk[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) {
        blk[i] = malloc((size_t)(i + 1) * STEP);
        memset(blk[i], FILL, (size_t)(i + 1) * STEP);
    }
    int token = 0;
    MPI_Recv(&token, 1, MPI_INT, 1, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int changed = 0;
    for (int i = 0; i < BLOCKS; i++)
        for (size_t k = 0; k < (size_t)(i + 1) * STEP; k++)
            if (blk[i][k] != FILL) {
                changed++;
                break;
            }
    printf("PROBE rank 0: %d blocks changed after rank 1's late creation\n", changed);
}

static void late(const char *on_fault)
{
    if (rank == 1)
        sleep(3);
    frl_status st;
    frl_trainer *t = trainer("1", on_fault, &st);
    printf("PROBE rank %d: creation status %d: %s\n", rank, (int)st,
           t ? "ok" : frl_last_error());
    fflush(stdout);
    if (rank == 0) {
        late_rank0();
    } else {
        int token = 1;
        MPI_Send(&token, 1, MPI_INT, 0, 77, MPI_COMM_WORLD);
    }
}

/* Rank 1 trains while rank 0 waits for its word: rank 1's exchange times out. */
static void save_fault(void)
{
    frl_status st;
    frl_trainer *t = trainer("1", "return", &st);
    if (!t) {
        printf("PROBE rank %d: no trainer: %s\n", rank, frl_last_error());
        return;
    }
    int token = 0;
    if (rank == 0) {
        MPI_Recv(&token, 1, MPI_INT, 1, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return;
    }
    st = frl_trainer_train(t, 1 << 20);
    printf("PROBE rank 1: train status %d\n", (int)st);
    st = frl_trainer_save(t, "/nonexistent-dir/never.frl");
    printf("PROBE rank 1: save status %d (%s); the trainer's message: %s\n", (int)st,
           frl_status_name(st), frl_trainer_last_error(t));
    MPI_Send(&token, 1, MPI_INT, 0, 78, MPI_COMM_WORLD);
}

typedef struct saver {
    frl_trainer *t;
    frl_status st;
} saver;

/* As soon as the train call runs: its budget check or first rollout, mid-update. */
static void *save_mid_train(void *arg)
{
    saver *s = arg;
    while (!atomic_load(&s->t->running))
        sched_yield();
    s->st = frl_trainer_save(s->t, "/nonexistent-dir/never.frl");
    return NULL;
}

/* Rank 1 returned FRL_OK (it writes nothing) where rank 0 refused the save. */
static void save_running(void)
{
    frl_status st;
    frl_trainer *t = trainer("20", "return", &st);
    if (!t) {
        printf("PROBE rank %d: no trainer: %s\n", rank, frl_last_error());
        return;
    }
    saver s = {t, FRL_OK};
    pthread_t th;
    pthread_create(&th, NULL, save_mid_train, &s);
    st = frl_trainer_train(t, 1 << 14);
    pthread_join(th, NULL);
    printf("PROBE rank %d: save while training: status %d (%s); train status %d\n", rank,
           (int)s.st, frl_status_name(s.st), (int)st);
}

/* The plugin writes its messages: a host in a decimal-comma locale read "within 0,5 s"
 * where it had typed dist.timeout=0.5. */
static void comma(void)
{
    const char *loc = setlocale(LC_NUMERIC, "de_DE.UTF-8");
    printf("PROBE rank %d: comma: locale %s, decimal point '%s'\n", rank,
           loc ? loc : "(none)", localeconv()->decimal_point);
    frl_status st;
    frl_trainer *t = trainer("0.5", "return", &st);
    if (!t) {
        printf("PROBE rank %d: no trainer: %s\n", rank, frl_last_error());
        return;
    }
    int token = 0;
    if (rank == 0) {
        MPI_Recv(&token, 1, MPI_INT, 1, 79, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return;
    }
    st = frl_trainer_train(t, 1 << 20);
    printf("PROBE rank 1: comma: train status %d: %s\n", (int)st, frl_trainer_last_error(t));
    MPI_Send(&token, 1, MPI_INT, 0, 79, MPI_COMM_WORLD);
}

/* MPI_Finalize before frl_trainer_destroy: the destroy made MPI calls after it, which
 * end the process. */
static void finalized(void)
{
    frl_status st;
    frl_trainer *t = trainer("5", "return", &st);
    if (!t) {
        printf("PROBE rank %d: no trainer: %s\n", rank, frl_last_error());
        return;
    }
    MPI_Finalize();
    frl_trainer_destroy(t);
    printf("PROBE rank %d: destroyed after MPI_Finalize\n", rank);
    exit(0);
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
    else if (!strcmp(mode, "late"))
        late("return");
    else if (!strcmp(mode, "late_abort"))
        late("abort");
    else if (!strcmp(mode, "save_fault"))
        save_fault();
    else if (!strcmp(mode, "seeds"))
        seeds();
    else if (!strcmp(mode, "bad_comm"))
        bad_comm();
    else if (!strcmp(mode, "save_running"))
        save_running();
    else if (!strcmp(mode, "finalized"))
        finalized();
    else if (!strcmp(mode, "comma"))
        comma();
    else
        printf("PROBE: unknown mode '%s'\n", mode);
    printf("PROBE rank %d: done\n", rank);
    sleep(1); /* the other rank's lines first */
    MPI_Abort(MPI_COMM_WORLD, 0);
    return 0;
}
