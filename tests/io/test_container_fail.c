/* Failures while saving a checkpoint, injected by wrapping write, fsync and rename at
 * link time (-Wl,--wrap=...; the static library's calls go through the wrappers below).
 *
 * For a failing write (at once, after a short write, or write returning 0), fsync of the
 * file, and rename: the save returns FRL_ERR_IO naming the call and errno's text, no
 * temporary file remains, and the previous checkpoint still loads with its old contents.
 * A failing fsync of the directory comes after the rename, so the new file is in place:
 * the save still reports FRL_ERR_IO, and the file at the path is the new one, complete.
 * EINTR and short writes are retried and the save succeeds. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "io/container.h"
#include "test_util.h"

/* ---- the wrappers ----------------------------------------------------------------- */

ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n);
int __real_fsync(int fd);
int __wrap_fsync(int fd);
int __real_rename(const char *from, const char *to);
int __wrap_rename(const char *from, const char *to);

typedef enum mode {
    OFF,
    WRITE_FAIL,        /* the first write fails with err_no */
    WRITE_SHORT_FAIL,  /* the first write is short, the next fails with err_no */
    WRITE_ZERO,        /* write returns 0: no progress */
    WRITE_EINTR,       /* every other write is interrupted */
    WRITE_TINY,        /* every write takes at most 1000 bytes */
    FSYNC_FILE,        /* fsync of a regular file fails */
    FSYNC_DIR,         /* fsync of a directory fails */
    FSYNC_EINTR,       /* each fsync is interrupted once */
    RENAME_FAIL,
} mode;

static mode armed;
static int err_no, writes, fsyncs, renames;

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
    if (armed == OFF)
        return __real_write(fd, buf, n);
    int k = writes++;
    switch (armed) {
    case WRITE_FAIL:
        break;
    case WRITE_SHORT_FAIL:
        if (k == 0)
            return __real_write(fd, buf, n / 2);
        break;
    case WRITE_ZERO:
        return 0;
    case WRITE_EINTR:
        if (k % 2 == 0)
            break;
        return __real_write(fd, buf, n);
    case WRITE_TINY:
        return __real_write(fd, buf, n < 1000 ? n : 1000);
    default:
        return __real_write(fd, buf, n);
    }
    errno = armed == WRITE_EINTR ? EINTR : err_no;
    return -1;
}

int __wrap_fsync(int fd)
{
    struct stat st;
    if (armed == OFF || fstat(fd, &st) != 0)
        return __real_fsync(fd);
    int k = fsyncs++;
    int fail = (armed == FSYNC_FILE && S_ISREG(st.st_mode)) ||
               (armed == FSYNC_DIR && S_ISDIR(st.st_mode)) || (armed == FSYNC_EINTR && k % 2 == 0);
    if (!fail)
        return __real_fsync(fd);
    errno = armed == FSYNC_EINTR ? EINTR : err_no;
    return -1;
}

int __wrap_rename(const char *from, const char *to)
{
    if (armed == OFF)
        return __real_rename(from, to);
    renames++;
    if (armed != RENAME_FAIL)
        return __real_rename(from, to);
    errno = err_no;
    return -1;
}

/* ---- checkpoints: a sequence number and data derived from it ----------------------- */

enum { N = 100000 };
static char dir[256], path[512];

static void save(uint64_t seq, frl_status expect, char *err)
{
    static double data[N];
    for (int i = 0; i < N; i++)
        data[i] = (double)seq * 1e6 + i;
    frl_section s[2];
    memset(s, 0, sizeof s);
    strcpy(s[0].name, "seq");
    s[0].dtype = FRL_DTYPE_U64, s[0].count = 1, s[0].data = &seq;
    strcpy(s[1].name, "data");
    s[1].dtype = FRL_DTYPE_F64, s[1].count = N, s[1].data = data;
    frl_status st = frl_container_write(path, NULL, s, 2, err);
    ck_assert_msg(st == expect, "save %llu: %s (%s)", (unsigned long long)seq,
                  frl_status_name(st), err);
}

static void expect_contents(uint64_t seq)
{
    char err[FRL_ERRMSG_SIZE];
    frl_container *c = NULL;
    ck_assert_msg(frl_container_read(&c, path, NULL, err) == FRL_OK, "%s", err);
    const frl_section *s = frl_container_find(c, "seq", FRL_DTYPE_U64, 1, err);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(*(const uint64_t *)s->data, seq);
    s = frl_container_find(c, "data", FRL_DTYPE_F64, N, err);
    ck_assert_ptr_nonnull(s);
    /* One check after the loop: each ck_assert is a system call in Check's fork mode. */
    const double *d = s->data;
    int i = 0;
    while (i < N && d[i] == (double)seq * 1e6 + i)
        i++;
    ck_assert_msg(i == N, "save %llu: element %d is wrong", (unsigned long long)seq, i);
    frl_container_free(c);
}

/* Everything in dir besides the checkpoint itself. */
static int stray_files(void)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "ckpt");
    closedir(d);
    return n;
}

static void setup(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/frl_container_fail_XXXXXX", t && *t ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/ckpt", dir);
    char err[FRL_ERRMSG_SIZE];
    save(1, FRL_OK, err);
}

static void teardown(void)
{
    unlink(path);
    rmdir(dir);
}

/* ---- tests ------------------------------------------------------------------------ */

typedef struct fail_case {
    mode m;
    int err_no;
    const char *call; /* in the message */
} fail_case;

static const fail_case fails[] = {
    {WRITE_FAIL, ENOSPC, "write"},     {WRITE_FAIL, EIO, "write"},
    {WRITE_SHORT_FAIL, ENOSPC, "write"}, {WRITE_ZERO, ENOSPC, "write"},
    {FSYNC_FILE, EIO, "fsync"},        {RENAME_FAIL, EXDEV, "rename"},
    {RENAME_FAIL, EACCES, "rename"},
};

START_TEST(failure_keeps_old_checkpoint)
{
    const fail_case *f = &fails[_i];
    armed = f->m, err_no = f->err_no, writes = fsyncs = renames = 0;
    char err[FRL_ERRMSG_SIZE];
    save(2, FRL_ERR_IO, err);
    int hit = writes + fsyncs + renames;
    armed = OFF;
    ck_assert_msg(hit > 0, "the wrapper was never called: is --wrap in effect?");
    ck_assert_msg(strstr(err, f->call) && strstr(err, strerror(f->err_no)), "case %d: %s", _i,
                  err);
    ck_assert_str_eq(frl_last_error(), err);
    ck_assert_msg(stray_files() == 0, "case %d: a temporary file was left", _i);
    expect_contents(1);
    /* Disarmed, the next save works. */
    save(3, FRL_OK, err);
    expect_contents(3);
    ck_assert_int_eq(stray_files(), 0);
}
END_TEST

START_TEST(directory_fsync_failure)
{
    armed = FSYNC_DIR, err_no = EIO, fsyncs = 0;
    char err[FRL_ERRMSG_SIZE];
    save(2, FRL_ERR_IO, err);
    armed = OFF;
    ck_assert_int_eq(fsyncs, 2); /* the file, then the directory */
    ck_assert_msg(strstr(err, "fsync directory") && strstr(err, strerror(EIO)) &&
                      strstr(err, "new file is in place"), "%s", err);
    ck_assert_int_eq(stray_files(), 0);
    expect_contents(2);
}
END_TEST

static const mode retried[] = {WRITE_EINTR, WRITE_TINY, FSYNC_EINTR};

START_TEST(interrupted_and_short_calls_are_retried)
{
    armed = retried[_i], writes = fsyncs = 0;
    char err[FRL_ERRMSG_SIZE];
    save(2, FRL_OK, err);
    armed = OFF;
    ck_assert_int_gt(writes + fsyncs, 2);
    ck_assert_int_eq(stray_files(), 0);
    expect_contents(2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("container_fail");
    TCase *tc = tcase_create("container_fail");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, failure_keeps_old_checkpoint, 0, (int)(sizeof fails / sizeof fails[0]));
    tcase_add_test(tc, directory_fsync_failure);
    tcase_add_loop_test(tc, interrupted_and_short_calls_are_retried, 0,
                        (int)(sizeof retried / sizeof retried[0]));
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
