/* Crash safety: a child process saves checkpoints (4 MiB, contents derived from a
 * sequence number) in a loop to one path; the parent SIGKILLs it at random moments,
 * spread over a save's duration. After every kill the file at the path must load and
 * hold one complete save: its sequence number and the data pattern that goes with it,
 * never older than the last one seen. While the child runs, the parent also reads the
 * file concurrently, which must always succeed (the rename replaces it atomically).
 *
 * A kill in mid-save leaves the child's PATH.tmp.<pid>.<n> behind; that is expected
 * (nothing can clean up after SIGKILL) and must not affect loading or later saves. The
 * test counts them, then removes them. FRL_KILL_SEED=n repeats a run. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "io/container.h"
#include "test_util.h"

/* N u64 = 4 MiB. Under TSan (the writer and loader run 5-10 times slower there, and a
 * forked child has no threads to watch) 8 kills; 20 elsewhere. */
enum { N = 512 * 1024, KILLS = FRL_TEST_TSAN ? 8 : 20 };

static char dir[256], path[512];

static uint64_t pattern(uint64_t seq, uint64_t i)
{
    uint64_t z = seq * 0x9e3779b97f4a7c15u + i; /* splitmix64: incompressible, per save */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static frl_status save(uint64_t seq, uint64_t *data, char *err)
{
    for (uint64_t i = 0; i < N; i++)
        data[i] = pattern(seq, i);
    char tag[32];
    snprintf(tag, sizeof tag, "save %llu", (unsigned long long)seq);
    frl_section s[3];
    memset(s, 0, sizeof s);
    strcpy(s[0].name, "seq");
    s[0].dtype = FRL_DTYPE_U64, s[0].count = 1, s[0].data = &seq;
    strcpy(s[1].name, "data");
    s[1].dtype = FRL_DTYPE_U64, s[1].count = N, s[1].data = data;
    strcpy(s[2].name, "tag");
    s[2].dtype = FRL_DTYPE_TEXT, s[2].count = strlen(tag), s[2].data = tag;
    return frl_container_write(path, NULL, s, 3, err);
}

/* Load and verify the file; its sequence number. */
static uint64_t load(void)
{
    char err[FRL_ERRMSG_SIZE], tag[32];
    frl_container *c = NULL;
    ck_assert_msg(frl_container_read(&c, path, NULL, err) == FRL_OK, "load: %s", err);
    const frl_section *s = frl_container_find(c, "seq", FRL_DTYPE_U64, 1, err);
    ck_assert_msg(s != NULL, "%s", err);
    uint64_t seq = *(const uint64_t *)s->data;
    s = frl_container_find(c, "data", FRL_DTYPE_U64, N, err);
    ck_assert_msg(s != NULL, "%s", err);
    /* One check after the loop: each ck_assert is a system call in Check's fork mode. */
    const uint64_t *d = s->data;
    uint64_t i = 0;
    while (i < N && d[i] == pattern(seq, i))
        i++;
    ck_assert_msg(i == N, "save %llu: element %llu is wrong", (unsigned long long)seq,
                  (unsigned long long)i);
    snprintf(tag, sizeof tag, "save %llu", (unsigned long long)seq);
    s = frl_container_find(c, "tag", FRL_DTYPE_TEXT, (int64_t)strlen(tag), err);
    ck_assert_msg(s && memcmp(s->data, tag, strlen(tag)) == 0, "tag of save %llu",
                  (unsigned long long)seq);
    frl_container_free(c);
    return seq;
}

/* The child: save seq, seq + 1, ... until killed (or, as a safety net, 60 s pass). */
static void child(uint64_t seq, uint64_t *data)
{
    char err[FRL_ERRMSG_SIZE];
    time_t end = time(NULL) + 60;
    while (time(NULL) < end) {
        if (save(seq++, data, err) != FRL_OK) {
            fprintf(stderr, "child: %s\n", err);
            _exit(1);
        }
    }
    _exit(0);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sleep_seconds(double s)
{
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&t, &t) != 0)
        ;
}

/* Remove the temporary files killed children left; how many there were. */
static int remove_strays(void)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    char p[600];
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "ckpt.tmp.", 9) != 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
        n++;
    }
    closedir(d);
    return n;
}

START_TEST(sigkill_leaves_a_complete_checkpoint)
{
    const char *t = getenv("TMPDIR"), *seed_env = getenv("FRL_KILL_SEED");
    snprintf(dir, sizeof dir, "%s/frl_container_kill_XXXXXX", t && *t ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/ckpt", dir);
    unsigned seed = seed_env ? (unsigned)strtoul(seed_env, NULL, 10) : (unsigned)time(NULL);
    srand(seed);

    uint64_t *data = malloc(N * sizeof *data);
    ck_assert_ptr_nonnull(data);
    char err[FRL_ERRMSG_SIZE];
    double t0 = now();
    for (uint64_t s = 1; s <= 3; s++)
        ck_assert_msg(save(s, data, err) == FRL_OK, "%s", err);
    double save_time = (now() - t0) / 3;
    uint64_t last = load(), progress = 0;

    int strays = 0;
    for (int k = 0; k < KILLS; k++) {
        uint64_t start = (uint64_t)(k + 1) * 1000000; /* each child's saves are distinct */
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
            child(start, data);
        /* Delays from 0 to 4 saves, so kills land in every phase of a save. */
        double delay = save_time * 4 * (rand() / (RAND_MAX + 1.0));
        sleep_seconds(delay);
        uint64_t during = load(); /* concurrent with the child's saves */
        ck_assert_uint_ge(during, last);
        kill(pid, SIGKILL);
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFSIGNALED(status), "child exited (%d) before the kill", status);
        uint64_t seq = load();
        ck_assert_msg(seq >= during, "kill %d: save %llu is older than %llu", k,
                      (unsigned long long)seq, (unsigned long long)during);
        progress += seq != last;
        last = seq;
        strays += remove_strays();
    }
    printf("seed %u: %d kills, save time %.1f ms, %llu kills after new saves, "
           "%d temporary files left by killed saves\n", seed, KILLS, save_time * 1e3,
           (unsigned long long)progress, strays);
    ck_assert_msg(progress > 0, "no save completed between kills: the test proved nothing");
    ck_assert_msg(save(7, data, err) == FRL_OK, "%s", err);
    ck_assert_uint_eq(load(), 7);
    free(data);
    unlink(path);
    rmdir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("container_kill");
    TCase *tc = tcase_create("container_kill");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, sigkill_leaves_a_complete_checkpoint);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
