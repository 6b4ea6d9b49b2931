/* TensorBoard event files.
 *
 *   test_tfevents           Check suite: argument errors, the file name, and the TFRecord
 *                           framing (lengths and masked CRCs) of what is written, across
 *                           the writer's buffer boundary.
 *   test_tfevents --write DIR
 *                           writes the scalars that tests/io/check_tfevents.py verifies
 *                           with TensorBoard's own reader, and prints the file's path and
 *                           then one "tag<TAB>step<TAB>wall_time<TAB>value" line per
 *                           scalar (numbers in C99 hex, so nothing is lost). */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include "ckpt_forge.h"
#include "core/error.h"
#include "io/crc32c.h"
#include "io/tfevents.h"
#include "test_util.h"

typedef struct scalar {
    const char *tag;
    int64_t step;
    double wall_time;
    float value;
} scalar;

static char long_tag[201];

/* The scalars the TensorBoard check expects; tags, steps and values chosen for the
 * encoding's edge cases (negative and huge steps, tiny, negative and special values). */
static int fixed_scalars(scalar *s)
{
    memset(long_tag, 't', 200);
    long_tag[200] = 0;
    const scalar v[] = {
        {"loss", 0, 1700000000.5, 1.0f},
        {"loss", 1, 1700000000.75, -2.5f},
        {"loss", 2, 1700000001.0, 1e-30f},
        {"loss", 3, 1700000001.25, -1e-30f},
        {"reward/mean", 10, 1700000002.0, 3.4028235e38f},
        {"reward/mean", 20, 1700000002.125, -0.0f},
        {"reward/mean", 30, 1700000002.25, 1e-45f},
        {"reward/mean", 1000000000000, 1700000003.0, 0.1f},
        {"negative step", -3, 1700000004.0, -123.456f},
        {"nan", 5, 1700000005.0, NAN},
        {long_tag, 7, 1700000006.0, 42.0f},
    };
    int n = (int)(sizeof v / sizeof v[0]);
    memcpy(s, v, sizeof v);
    return n;
}

/* ---- --write mode ----------------------------------------------------------------- */

static int write_mode(const char *dir)
{
    scalar s[16];
    int n = fixed_scalars(s);
    char err[FRL_ERRMSG_SIZE];
    frl_tfevents *w = NULL;
    if (frl_tfevents_open(&w, dir, NULL, err) != FRL_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    printf("%s\n", frl_tfevents_path(w));
    for (int i = 0; i < n; i++) {
        if (frl_tfevents_scalar(w, s[i].tag, s[i].step, s[i].wall_time, s[i].value, err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        printf("%s\t%lld\t%a\t%a\n", s[i].tag, (long long)s[i].step, s[i].wall_time,
               (double)s[i].value);
    }
    /* Enough more to cross the writer's 64 KiB buffer several times. */
    for (int i = 0; i < 3000; i++) {
        double t = 1700001000.0 + i / 8.0;
        float v = (float)i * -0.5f;
        if (frl_tfevents_scalar(w, "many", i, t, v, err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        printf("many\t%d\t%a\t%a\n", i, t, (double)v);
    }
    frl_status st = frl_tfevents_flush(w, err);
    frl_tfevents_close(w);
    if (st != FRL_OK)
        fprintf(stderr, "%s\n", err);
    return st != FRL_OK;
}

/* ---- Check suite ------------------------------------------------------------------ */

static char dir[256];

static void make_dir(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/frl_tfevents_XXXXXX", t && *t ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

START_TEST(bad_arguments)
{
    make_dir();
    char err[FRL_ERRMSG_SIZE], missing[400];
    frl_tfevents *w = NULL;
    snprintf(missing, sizeof missing, "%s/no/such/dir", dir);
    ck_assert_int_eq(frl_tfevents_open(&w, missing, NULL, err), FRL_ERR_IO);
    ck_assert_ptr_null(w);
    ck_assert_msg(strstr(err, missing) && strstr(err, strerror(ENOENT)), "%s", err);
    ck_assert_int_eq(frl_tfevents_open(&w, NULL, NULL, err), FRL_ERR_NULL);

    ck_assert_int_eq(frl_tfevents_open(&w, dir, NULL, err), FRL_OK);
    char tag[202];
    memset(tag, 'x', 201);
    tag[201] = 0;
    ck_assert_int_eq(frl_tfevents_scalar(w, tag, 0, 0, 1, err), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "200") != NULL, "%s", err);
    tag[200] = 0;
    ck_assert_int_eq(frl_tfevents_scalar(w, tag, 0, 0, 1, err), FRL_OK);
    ck_assert_int_eq(frl_tfevents_scalar(w, "", 0, 0, 1, err), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(frl_tfevents_scalar(w, NULL, 0, 0, 1, err), FRL_ERR_NULL);
    ck_assert_int_eq(frl_tfevents_scalar(NULL, "a", 0, 0, 1, err), FRL_ERR_NULL);
    ck_assert_int_eq(frl_tfevents_flush(w, err), FRL_OK);
    unlink(frl_tfevents_path(w));
    frl_tfevents_close(w);
    rmdir(dir);
}
END_TEST

/* Walk the records: every length and masked CRC must match; the count of records. */
static int check_records(const unsigned char *b, size_t size)
{
    size_t pos = 0;
    int n = 0;
    while (pos < size) {
        ck_assert_uint_ge(size - pos, 12);
        uint64_t len = forge_get64(b + pos);
        ck_assert_uint_eq(forge_get32(b + pos + 8), frl_crc32c_mask(frl_crc32c(0, b + pos, 8)));
        ck_assert_uint_ge(size - pos - 12, len + 4);
        ck_assert_uint_eq(forge_get32(b + pos + 12 + len),
                          frl_crc32c_mask(frl_crc32c(0, b + pos + 12, len)));
        pos += 12 + len + 4;
        n++;
    }
    return n;
}

START_TEST(records_are_framed)
{
    make_dir();
    char err[FRL_ERRMSG_SIZE];
    frl_tfevents *w = NULL;
    ck_assert_int_eq(frl_tfevents_open(&w, dir, NULL, err), FRL_OK);
    const char *p = frl_tfevents_path(w);
    ck_assert_msg(strncmp(p, dir, strlen(dir)) == 0 && strstr(p, "/events.out.tfevents."), "%s", p);
    for (int i = 0; i < 5000; i++)
        ck_assert_int_eq(frl_tfevents_scalar(w, "x/y", i - 10, i * 0.5, (float)i, err), FRL_OK);
    ck_assert_int_eq(frl_tfevents_flush(w, err), FRL_OK);
    size_t size;
    unsigned char *b = forge_read(p, &size);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(check_records(b, size), 5001);
    /* The first record is the version event. */
    ck_assert(memmem(b, 64, "brain.Event:2", 13) != NULL);
    free(b);
    unlink(p);
    frl_tfevents_close(w);

    /* Two writers opened at once get different files. */
    frl_tfevents *a = NULL, *c = NULL;
    ck_assert_int_eq(frl_tfevents_open(&a, dir, NULL, err), FRL_OK);
    ck_assert_int_eq(frl_tfevents_open(&c, dir, NULL, err), FRL_OK);
    ck_assert_str_ne(frl_tfevents_path(a), frl_tfevents_path(c));
    unlink(frl_tfevents_path(a));
    unlink(frl_tfevents_path(c));
    frl_tfevents_close(a);
    frl_tfevents_close(c);
    rmdir(dir);
}
END_TEST

/* A flush the file system cuts short (here the file size limit: EFBIG, as a full disk's
 * ENOSPC) fails, and the torn record is cut off: the records written after it are read
 * (TensorBoard's reader stops at a torn record, so none of them were). */
START_TEST(a_failed_flush_leaves_whole_records)
{
    make_dir();
    char err[FRL_ERRMSG_SIZE];
    frl_tfevents *w = NULL;
    ck_assert_int_eq(frl_tfevents_open(&w, dir, NULL, err), FRL_OK);
    const char *p = frl_tfevents_path(w);
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(frl_tfevents_scalar(w, "x", i, i, (float)i, err), FRL_OK);
    ck_assert_int_eq(frl_tfevents_flush(w, err), FRL_OK);
    size_t before;
    free(forge_read(p, &before));
    signal(SIGXFSZ, SIG_IGN); /* a write past the limit is then EFBIG, not a signal */
    struct rlimit old, lim;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = before + 100; /* a few of the next records fit, one is cut */
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(frl_tfevents_scalar(w, "x", 100 + i, i, (float)i, err), FRL_OK);
    frl_status st = frl_tfevents_flush(w, err);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    ck_assert_int_eq(st, FRL_ERR_IO);
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(frl_tfevents_scalar(w, "x", 200 + i, i, (float)i, err), FRL_OK);
    ck_assert_int_eq(frl_tfevents_flush(w, err), FRL_OK);
    size_t size;
    unsigned char *b = forge_read(p, &size);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(check_records(b, size), 1 + 100 + 10); /* the failed flush's: none */
    free(b);
    unlink(p);
    frl_tfevents_close(w);
    /* An open whose first record cannot be written leaves no empty event file. */
    lim.rlim_cur = 0;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    frl_tfevents *x = NULL;
    st = frl_tfevents_open(&x, dir, NULL, err);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    ck_assert_int_eq(st, FRL_ERR_IO);
    ck_assert_ptr_null(x);
    ck_assert_msg(rmdir(dir) == 0, "the directory is not empty: %s", strerror(errno));
}
END_TEST

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write") == 0)
        return write_mode(argv[2]);
    Suite *s = suite_create("tfevents");
    TCase *tc = tcase_create("tfevents");
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, records_are_framed);
    tcase_add_test(tc, a_failed_flush_leaves_whole_records);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
