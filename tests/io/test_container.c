/* The checkpoint container: round trips, lookups, argument checks, and a reader that
 * rejects every damaged or foreign file with the right status and a clear message.
 *
 * Truncations and bit flips are parsed from exact-size malloc'd copies, so ASan sees
 * any read past the end. Internal API; links the static library. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_forge.h"
#include "core/error.h"
#include "io/container.h"
#include "test_util.h"

/* ---- scratch directory ------------------------------------------------------------ */

static char dir[256];
static char path[512];

static void make_dir(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/frl_container_XXXXXX", t && *t ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/ckpt", dir);
}

/* Names in dir other than "ckpt"; *tmp_count of them start "ckpt.tmp.". */
static int dir_extra(int *tmp_count)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int extra = 0;
    *tmp_count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, "ckpt"))
            continue;
        extra++;
        *tmp_count += strncmp(e->d_name, "ckpt.tmp.", 9) == 0;
    }
    closedir(d);
    return extra;
}

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[600];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (rmdir(p) != 0)
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

/* ---- sample data ------------------------------------------------------------------ */

static uint8_t u8v[300];
static int32_t i32v[7] = {0, 1, -1, 2147483647, -2147483647 - 1, 42, -42};
static int64_t i64v[3] = {INT64_MAX, INT64_MIN, -5};
static uint64_t u64v[2] = {UINT64_MAX, 0x0123456789abcdefu};
static float f32v[5];
static double f64v[5];
static const char text[] = "h\xc3\xa9llo, checkpoint";

/* Every dtype, each also as an empty section (NULL data), and a 39-byte name. */
static int sample_sections(frl_section *s)
{
    for (int i = 0; i < 300; i++)
        u8v[i] = (uint8_t)(i * 7);
    float f[5] = {1.5f, -0.0f, 1e-30f, INFINITY, NAN};
    double d[5] = {3.141592653589793, -1e300, 5e-324, -INFINITY, NAN};
    memcpy(f32v, f, sizeof f);
    memcpy(f64v, d, sizeof d);
    struct { const char *name; frl_dtype t; uint64_t n; const void *p; } v[] = {
        {"u8", FRL_DTYPE_U8, 300, u8v},        {"i32", FRL_DTYPE_I32, 7, i32v},
        {"i64", FRL_DTYPE_I64, 3, i64v},       {"u64", FRL_DTYPE_U64, 2, u64v},
        {"f32", FRL_DTYPE_F32, 5, f32v},       {"f64", FRL_DTYPE_F64, 5, f64v},
        {"text", FRL_DTYPE_TEXT, sizeof text - 1, text},
        {"empty_u8", FRL_DTYPE_U8, 0, NULL},   {"empty_i32", FRL_DTYPE_I32, 0, NULL},
        {"empty_i64", FRL_DTYPE_I64, 0, NULL}, {"empty_u64", FRL_DTYPE_U64, 0, NULL},
        {"empty_f32", FRL_DTYPE_F32, 0, NULL}, {"empty_f64", FRL_DTYPE_F64, 0, NULL},
        {"empty_text", FRL_DTYPE_TEXT, 0, NULL},
        {"a_name_of_exactly_thirty_nine_bytes_xyz", FRL_DTYPE_U8, 1, u8v},
    };
    int n = (int)(sizeof v / sizeof v[0]);
    for (int i = 0; i < n; i++) {
        memset(&s[i], 0, sizeof s[i]);
        snprintf(s[i].name, sizeof s[i].name, "%s", v[i].name);
        s[i].dtype = v[i].t;
        s[i].count = v[i].n;
        s[i].data = v[i].p;
    }
    return n;
}

static size_t elem_size(frl_dtype t)
{
    if (t == FRL_DTYPE_U8 || t == FRL_DTYPE_TEXT)
        return 1;
    return t == FRL_DTYPE_I32 || t == FRL_DTYPE_F32 ? 4 : 8;
}

static void check_same(const frl_container *c, const frl_section *s, int n)
{
    ck_assert_int_eq(frl_container_count(c), n);
    for (int i = 0; i < n; i++) {
        const frl_section *r = frl_container_at(c, i);
        ck_assert_ptr_nonnull(r);
        ck_assert_str_eq(r->name, s[i].name);
        ck_assert_int_eq(r->dtype, s[i].dtype);
        ck_assert_uint_eq(r->count, s[i].count);
        ck_assert_uint_eq((uintptr_t)r->data % 64, 0);
        if (s[i].count)
            ck_assert(memcmp(r->data, s[i].data, s[i].count * elem_size(s[i].dtype)) == 0);
    }
    ck_assert_ptr_null(frl_container_at(c, n));
    ck_assert_ptr_null(frl_container_at(c, -1));
}

/* A small valid file's bytes (malloc'd). */
static unsigned char *small_file(size_t *size)
{
    frl_section s[3];
    memset(s, 0, sizeof s);
    static const double w[4] = {0.25, -1, 2, 1e-9};
    static const uint64_t step[1] = {1234};
    strcpy(s[0].name, "weights");
    s[0].dtype = FRL_DTYPE_F64, s[0].count = 4, s[0].data = w;
    strcpy(s[1].name, "step");
    s[1].dtype = FRL_DTYPE_U64, s[1].count = 1, s[1].data = step;
    strcpy(s[2].name, "note");
    s[2].dtype = FRL_DTYPE_TEXT, s[2].count = 5, s[2].data = "hello";
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_container_write(path, NULL, s, 3, err), FRL_OK);
    unsigned char *b = forge_read(path, size);
    ck_assert_ptr_nonnull(b);
    return b;
}

/* Parse an exact-size copy; the status, with the message in err. */
static frl_status parse_copy(const unsigned char *b, size_t n, char *err)
{
    unsigned char *copy = malloc(n ? n : 1);
    memcpy(copy, b, n);
    frl_container *c = (frl_container *)(void *)copy; /* must be overwritten */
    err[0] = 0;
    frl_status st = frl_container_parse(&c, n ? copy : NULL, n, NULL, err);
    if (st == FRL_OK)
        frl_container_free(c);
    else
        ck_assert_ptr_null(c);
    free(copy);
    return st;
}

/* ---- tests ------------------------------------------------------------------------ */

START_TEST(round_trip_every_dtype)
{
    make_dir();
    frl_section s[16];
    int n = sample_sections(s);
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_container_write(path, NULL, s, n, err), FRL_OK);
    frl_container *c = NULL;
    ck_assert_msg(frl_container_read(&c, path, NULL, err) == FRL_OK, "%s", err);
    check_same(c, s, n);
    frl_container_free(c);

    /* The same bytes from memory. */
    size_t size;
    unsigned char *b = forge_read(path, &size);
    ck_assert_int_eq(frl_container_parse(&c, b, size, NULL, err), FRL_OK);
    check_same(c, s, n);
    frl_container_free(c);
    free(b);

    /* Overwriting works and leaves no temporary file; zero sections is a valid file. */
    ck_assert_int_eq(frl_container_write(path, NULL, NULL, 0, err), FRL_OK);
    ck_assert_int_eq(frl_container_read(&c, path, NULL, err), FRL_OK);
    ck_assert_int_eq(frl_container_count(c), 0);
    frl_container_free(c);
    int tmp;
    ck_assert_int_eq(dir_extra(&tmp), 0);
    remove_dir();
}
END_TEST

START_TEST(find_by_name_dtype_count)
{
    make_dir();
    frl_section s[16];
    int n = sample_sections(s);
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_container_write(path, NULL, s, n, err), FRL_OK);
    frl_container *c = NULL;
    ck_assert_int_eq(frl_container_read(&c, path, NULL, err), FRL_OK);

    const frl_section *f = frl_container_find(c, "f32", FRL_DTYPE_F32, 5, err);
    ck_assert_ptr_nonnull(f);
    ck_assert(memcmp(f->data, f32v, sizeof f32v) == 0);
    ck_assert_ptr_eq(frl_container_find(c, "f32", FRL_DTYPE_F32, -1, err), f);
    ck_assert_ptr_nonnull(frl_container_find(c, "empty_text", FRL_DTYPE_TEXT, 0, err));

    ck_assert_ptr_null(frl_container_find(c, "missing", FRL_DTYPE_F32, 5, err));
    ck_assert_msg(strstr(err, "no section \"missing\"") && strstr(err, path), "%s", err);
    ck_assert_ptr_null(frl_container_find(c, "f32", FRL_DTYPE_F64, 5, err));
    ck_assert_msg(strstr(err, "\"f32\" is f32, expected f64") != NULL, "%s", err);
    ck_assert_ptr_null(frl_container_find(c, "f32", FRL_DTYPE_F32, 6, err));
    ck_assert_msg(strstr(err, "\"f32\" has 5 elements, expected 6") != NULL, "%s", err);
    ck_assert_str_eq(frl_last_error(), err);
    ck_assert_ptr_null(frl_container_find(NULL, "f32", FRL_DTYPE_F32, 5, err));
    frl_container_free(c);
    remove_dir();
}
END_TEST

/* Each bad argument: its status, its message, and no file (nor temporary) created. */
START_TEST(write_rejects_bad_sections)
{
    make_dir();
    frl_section s[2];
    memset(s, 0, sizeof s);
    static const int32_t v[2] = {1, 2};
    strcpy(s[0].name, "a");
    s[0].dtype = FRL_DTYPE_I32, s[0].count = 2, s[0].data = v;
    s[1] = s[0];
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_container_write(path, NULL, s, 2, err), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "two sections are named \"a\"") != NULL, "%s", err);
    strcpy(s[1].name, "b");
    s[1].dtype = (frl_dtype)99;
    ck_assert_int_eq(frl_container_write(path, NULL, s, 2, err), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "unknown dtype 99") != NULL, "%s", err);
    s[1].dtype = FRL_DTYPE_I32;
    s[1].data = NULL;
    ck_assert_int_eq(frl_container_write(path, NULL, s, 2, err), FRL_ERR_NULL);
    s[1].data = v;
    memset(s[1].name, 'x', sizeof s[1].name); /* no NUL */
    ck_assert_int_eq(frl_container_write(path, NULL, s, 2, err), FRL_ERR_INVALID_ARGUMENT);
    s[1].name[0] = 0;
    ck_assert_int_eq(frl_container_write(path, NULL, s, 2, err), FRL_ERR_INVALID_ARGUMENT);
    strcpy(s[1].name, "b");
    s[1].count = UINT64_MAX / 2; /* count * 4 overflows */
    ck_assert_int_eq(frl_container_write(path, NULL, s, 2, err), FRL_ERR_SIZE);
    s[1].count = (FRL_CONTAINER_MAX_PAYLOAD / 4) + 1;
    ck_assert_int_eq(frl_container_write(path, NULL, s, 2, err), FRL_ERR_SIZE);
    ck_assert_int_eq(frl_container_write(path, NULL, s, -1, err), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(frl_container_write(NULL, NULL, s, 1, err), FRL_ERR_NULL);
    /* a folder that does not exist: the message names the file asked for, not only the
     * temporary one it could not open */
    ck_assert_int_eq(frl_container_write("/nonexistent-dir/x.frl", NULL, s, 1, err), FRL_ERR_IO);
    ck_assert_msg(strstr(err, "(writing /nonexistent-dir/x.frl)") != NULL, "%s", err);
    ck_assert_int_eq(access(path, F_OK), -1);
    int tmp;
    ck_assert_int_eq(dir_extra(&tmp), 0);
    remove_dir();
}
END_TEST

static off_t file_size_of(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? st.st_size : -1;
}

/* A section added as finite refuses NaN and infinity, in float and double, and an
 * existing file stays; the same values in a plain section are written. */
START_TEST(finite_sections_refuse_nan)
{
    make_dir();
    static const float good[3] = {1, 2, 3};
    float f[3] = {1, 2, 3};
    double d[2] = {0.5, 0.25};
    frl_section s[3];
    int32_t n = 0;
    frl_section_add_finite(s, &n, "good", FRL_DTYPE_F32, 3, good);
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(frl_container_write(path, NULL, s, n, err), FRL_OK);
    off_t before = file_size_of(path);
    n = 0;
    frl_section_add_finite(s, &n, "f", FRL_DTYPE_F32, 3, f);
    frl_section_add_finite(s, &n, "d", FRL_DTYPE_F64, 2, d);
    f[2] = INFINITY;
    ck_assert_int_eq(frl_container_write(path, NULL, s, n, err), FRL_ERR_NONFINITE);
    ck_assert_msg(strstr(err, "\"f\"") && strstr(err, "element 2 of 3"), "%s", err);
    f[2] = 3;
    d[1] = NAN;
    ck_assert_int_eq(frl_container_write(path, NULL, s, n, err), FRL_ERR_NONFINITE);
    ck_assert_msg(strstr(err, "\"d\"") && strstr(err, "element 1 of 2"), "%s", err);
    ck_assert_int_eq(file_size_of(path), before);
    frl_section_add(s, &n, "plain", FRL_DTYPE_F64, 2, d); /* NaN allowed: not flagged */
    s[1].finite = 0;
    ck_assert_int_eq(frl_container_write(path, NULL, s, n, err), FRL_OK);
    remove(path);
    remove_dir();
}
END_TEST

START_TEST(every_truncation_fails)
{
    make_dir();
    size_t size;
    unsigned char *b = small_file(&size);
    char err[FRL_ERRMSG_SIZE];
    for (size_t n = 0; n < size; n++) {
        frl_status st = parse_copy(b, n, err);
        ck_assert_msg(st == FRL_ERR_FORMAT, "length %zu: %s (%s)", n, frl_status_name(st), err);
        ck_assert_msg(strlen(err) > 10, "length %zu: message \"%s\"", n, err);
        /* And through the file reader. */
        ck_assert_int_eq(forge_write(path, b, n), 0);
        frl_container *c = NULL;
        st = frl_container_read(&c, path, NULL, err);
        ck_assert_msg(st == FRL_ERR_FORMAT || st == FRL_ERR_IO, "length %zu: %s", n, err);
        ck_assert_ptr_null(c);
        ck_assert_msg(strstr(err, path) != NULL, "length %zu: \"%s\" lacks the path", n, err);
    }
    ck_assert_int_eq(parse_copy(b, size, err), FRL_OK);
    /* A byte too many is not accepted either. */
    unsigned char *longer = malloc(size + 1);
    memcpy(longer, b, size);
    longer[size] = 0;
    ck_assert_int_eq(parse_copy(longer, size + 1, err), FRL_ERR_FORMAT);
    free(longer);
    free(b);
    remove_dir();
}
END_TEST

/* CRC32C catches every single-bit error, so every flip must fail. A flip in the version
 * field can read as a newer version instead. */
START_TEST(every_bit_flip_fails)
{
    make_dir();
    size_t size;
    unsigned char *b = small_file(&size);
    char err[FRL_ERRMSG_SIZE];
    for (size_t bit = 0; bit < size * 8; bit++) {
        b[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        frl_status st = parse_copy(b, size, err);
        b[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        int version_byte = bit / 8 >= 8 && bit / 8 < 12;
        ck_assert_msg(st == FRL_ERR_FORMAT || (version_byte && st == FRL_ERR_VERSION),
                      "bit %zu: %s (%s)", bit, frl_status_name(st), err);
    }
    free(b);
    remove_dir();
}
END_TEST

static void expect_foreign(const void *bytes, size_t n, const char *what)
{
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(forge_write(path, bytes, n), 0);
    frl_container *c = NULL;
    frl_status st = frl_container_read(&c, path, NULL, err);
    ck_assert_msg(st == FRL_ERR_FORMAT, "%s: %s", what, frl_status_name(st));
    ck_assert_msg(strstr(err, "not a fastrl checkpoint") && strstr(err, path), "%s: %s", what,
                  err);
    ck_assert_int_eq(parse_copy(bytes, n, err), FRL_ERR_FORMAT);
    ck_assert_msg(strstr(err, "not a fastrl checkpoint") != NULL, "%s: %s", what, err);
}

START_TEST(foreign_files)
{
    make_dir();
    static const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0,
                                        13, 'I', 'H', 'D', 'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 2};
    expect_foreign(png, sizeof png, "PNG");
    expect_foreign("", 0, "empty file");
    expect_foreign("hello, world\n", 13, "a text file");
    static char zeros[4096];
    expect_foreign(zeros, sizeof zeros, "zeros");
    remove_dir();
}
END_TEST

START_TEST(short_prefix_of_magic_is_truncated)
{
    /* "FAST" is a prefix of the magic; the message then says truncated, not foreign. */
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(parse_copy((const unsigned char *)"FASTRLCK", 8, err), FRL_ERR_FORMAT);
    ck_assert_msg(strstr(err, "truncated") != NULL, "%s", err);
}
END_TEST

START_TEST(newer_version)
{
    make_dir();
    size_t size;
    unsigned char *b = small_file(&size);
    char err[FRL_ERRMSG_SIZE];
    forge_put32(b + 8, 2);
    forge_seal_header(b);
    ck_assert_int_eq(parse_copy(b, size, err), FRL_ERR_VERSION);
    ck_assert_msg(strstr(err, "version 2") != NULL, "%s", err);
    ck_assert_int_eq(forge_write(path, b, size), 0);
    frl_container *c = NULL;
    ck_assert_int_eq(frl_container_read(&c, path, NULL, err), FRL_ERR_VERSION);
    ck_assert_msg(strstr(err, "corrupted") == NULL, "%s", err); /* its checksum holds */
    /* A newer version may move the CRC, so the version is checked before it; the
     * message says the header may be corrupted instead (a flipped version bit). */
    forge_put32(b + 8, 7);
    ck_assert_int_eq(parse_copy(b, size, err), FRL_ERR_VERSION);
    ck_assert_msg(strstr(err, "or the header is corrupted") != NULL, "%s", err);
    forge_put32(b + 8, 0);
    forge_seal_header(b);
    ck_assert_int_eq(parse_copy(b, size, err), FRL_ERR_FORMAT);
    free(b);
    remove_dir();
}
END_TEST

START_TEST(missing_file_and_directory)
{
    make_dir();
    char err[FRL_ERRMSG_SIZE];
    frl_container *c = NULL;
    ck_assert_int_eq(frl_container_read(&c, path, NULL, err), FRL_ERR_IO);
    ck_assert_msg(strstr(err, path) && strstr(err, strerror(ENOENT)), "%s", err);
    ck_assert_int_eq(frl_container_read(&c, dir, NULL, err), FRL_ERR_IO);
    ck_assert_msg(strstr(err, "not a regular file") != NULL, "%s", err);
    /* Writing into a missing directory names the temporary file and the errno text. */
    char bad[600];
    snprintf(bad, sizeof bad, "%s/no/such/dir/ckpt", dir);
    ck_assert_int_eq(frl_container_write(bad, NULL, NULL, 0, err), FRL_ERR_IO);
    ck_assert_msg(strstr(err, "open") && strstr(err, bad) && strstr(err, strerror(ENOENT)), "%s",
                  err);
    remove_dir();
}
END_TEST

/* An empty path is refused before anything is written: it once wrote and synced the
 * whole file as ".tmp.<pid>.<n>" in the working directory, then failed in rename with
 * "rename .tmp.<pid>.<n> to : No such file or directory". */
START_TEST(empty_path_is_refused)
{
    make_dir();
    char cwd[512], err[FRL_ERRMSG_SIZE];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir(dir), 0);
    frl_section s[16];
    int n = sample_sections(s);
    ck_assert_int_eq(frl_container_write("", NULL, s, n, err), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "the path is empty") != NULL, "%s", err);
    frl_container *c = NULL;
    ck_assert_int_eq(frl_container_read(&c, "", NULL, err), FRL_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "the path is empty") != NULL, "%s", err);
    ck_assert_ptr_null(c);
    ck_assert_int_eq(chdir(cwd), 0);
    int tmps;
    ck_assert_int_eq(dir_extra(&tmps), 0);
    remove_dir();
}
END_TEST

/* Well-formed CRCs around malformed sections: the section parser's own checks. */
static void expect_malformed(const unsigned char *raw, size_t raw_size, uint32_t n,
                             const char *needle)
{
    size_t size;
    unsigned char *f = forge_file(raw, raw_size, n, &size);
    ck_assert_ptr_nonnull(f);
    char err[FRL_ERRMSG_SIZE];
    frl_status st = parse_copy(f, size, err);
    ck_assert_msg(st == FRL_ERR_FORMAT && strstr(err, needle), "want \"%s\": %s %s", needle,
                  frl_status_name(st), err);
    free(f);
}

START_TEST(malformed_sections)
{
    unsigned char raw[320];
    memset(raw, 0, sizeof raw);
    forge_section(raw, "a", FRL_DTYPE_F64, 8, 64);
    forge_section(raw + 128, "b", FRL_DTYPE_U8, 64, 192);
    size_t ok;
    unsigned char *f = forge_file(raw, 256, 2, &ok);
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(parse_copy(f, ok, err), FRL_OK);
    free(f);

    forge_section(raw + 128, "b", FRL_DTYPE_U8, 64, 200);
    expect_malformed(raw, 256, 2, "misaligned");
    forge_section(raw + 128, "b", FRL_DTYPE_U8, 64, 64); /* overlaps a's data */
    expect_malformed(raw, 256, 2, "out of order");
    forge_section(raw + 128, "b", FRL_DTYPE_U8, 65, 192);
    expect_malformed(raw, 256, 2, "run past");
    forge_section(raw + 128, "b", FRL_DTYPE_F64, UINT64_MAX / 4, 192); /* * 8 wraps */
    expect_malformed(raw, 256, 2, "run past");
    forge_section(raw + 128, "a", FRL_DTYPE_U8, 64, 192);
    expect_malformed(raw, 256, 2, "two sections are named \"a\"");
    forge_section(raw + 128, "b", 0, 64, 192);
    expect_malformed(raw, 256, 2, "unknown dtype 0");
    forge_section(raw + 128, "", FRL_DTYPE_U8, 64, 192);
    expect_malformed(raw, 256, 2, "empty or not NUL-terminated");
    forge_section(raw + 128, "b", FRL_DTYPE_U8, 64, 192);
    memset(raw + 128, 'n', 40);
    expect_malformed(raw, 256, 2, "empty or not NUL-terminated");
    forge_section(raw + 128, "b", FRL_DTYPE_U8, 10, 192); /* leaves unused bytes */
    expect_malformed(raw, 320, 2, "sections end");
    forge_section(raw + 128, "b", FRL_DTYPE_U8, 64, 192);
    expect_malformed(raw, 256, 3, "header runs past");
    expect_malformed(raw, 256, 5, "cannot fit");
}
END_TEST

START_TEST(stray_temporary_files_are_harmless)
{
    make_dir();
    size_t size;
    unsigned char *b = small_file(&size);
    char tmp[600], err[FRL_ERRMSG_SIZE];
    /* What a killed save leaves: a partial file under a name with another pid. */
    snprintf(tmp, sizeof tmp, "%s.tmp.99999.0", path);
    ck_assert_int_eq(forge_write(tmp, b, size / 2), 0);
    frl_container *c = NULL;
    ck_assert_int_eq(frl_container_read(&c, path, NULL, err), FRL_OK);
    frl_container_free(c);
    free(b);
    b = small_file(&size); /* saving again is not disturbed either */
    ck_assert_int_eq(frl_container_read(&c, path, NULL, err), FRL_OK);
    frl_container_free(c);
    free(b);
    remove_dir();
}
END_TEST

/* The next temporary name frl_container_write will use: a save into a missing folder
 * fails naming it (PATH.tmp.<pid>.<serial>), and the serial counts on by one. */
static void next_tmp_name(char *tmp, size_t size)
{ /* (the name without its salt: the prefix a save of the old scheme took) */
    char missing[600], err[FRL_ERRMSG_SIZE];
    snprintf(missing, sizeof missing, "%s/no/such/ckpt", dir);
    ck_assert_int_eq(frl_container_write(missing, NULL, NULL, 0, err), FRL_ERR_IO);
    const char *at = strstr(err, ".tmp.");
    ck_assert_msg(at != NULL, "%s", err);
    long pid = 0;
    unsigned serial = 0;
    ck_assert_int_eq(sscanf(at, ".tmp.%ld.%u", &pid, &serial), 2);
    snprintf(tmp, size, "%s.tmp.%ld.%u", path, pid, serial + 1);
}

/* What lies under a temporary name (another writer's file: one of the same pid in
 * another container on a shared volume; or a link planted in a shared folder) is never
 * written through nor removed: the save takes a name of its own (a random salt after
 * the pid and serial), the file a link there points to keeps its bytes, and the link
 * stays (the save unlinked the name it predicted, deleting the other writer's file). */
START_TEST(files_at_temporary_names_are_left_alone)
{
    make_dir();
    char victim[600], tmp[600], err[FRL_ERRMSG_SIZE];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    ck_assert_int_eq(forge_write(victim, (const unsigned char *)"keep", 4), 0);
    next_tmp_name(tmp, sizeof tmp);
    ck_assert_int_eq(symlink(victim, tmp), 0);
    frl_section s[16];
    int n = sample_sections(s);
    ck_assert_msg(frl_container_write(path, NULL, s, n, err) == FRL_OK, "%s", err);
    size_t size;
    unsigned char *b = forge_read(victim, &size);
    ck_assert_int_eq(size, 4);
    ck_assert(memcmp(b, "keep", 4) == 0);
    free(b);
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISREG(st.st_mode)); /* the file itself, not the planted link */
    frl_container *c = NULL;
    ck_assert_msg(frl_container_read(&c, path, NULL, err) == FRL_OK, "%s", err);
    check_same(c, s, n);
    frl_container_free(c);
    char target[600] = "";
    ck_assert_int_gt(readlink(tmp, target, sizeof target - 1), 0);
    ck_assert_str_eq(target, victim);
    int tmps;
    ck_assert_int_eq(dir_extra(&tmps), 2); /* the victim and the planted link alone */
    ck_assert_int_eq(tmps, 1);
    ck_assert_int_eq(unlink(tmp), 0);
    ck_assert_int_eq(unlink(victim), 0);
    remove_dir();
}
END_TEST

/* A checkpoint path that is a symbolic link (runs/latest -> runs/42/ckpt, say): a save
 * replaces the file it points to, atomically beside it, and the link stays a link. */
START_TEST(saving_through_a_symbolic_link_keeps_it)
{
    make_dir();
    char real[600], err[FRL_ERRMSG_SIZE];
    snprintf(real, sizeof real, "%s/real", dir);
    ck_assert_int_eq(frl_container_write(real, NULL, NULL, 0, err), FRL_OK);
    ck_assert_int_eq(symlink("real", path), 0);
    size_t size;
    free(small_file(&size)); /* written through path, the link */
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert_msg(S_ISLNK(st.st_mode), "the link was replaced by a file");
    frl_container *c = NULL;
    ck_assert_int_eq(frl_container_read(&c, real, NULL, err), FRL_OK);
    ck_assert_int_eq(frl_container_count(c), 3); /* the target holds the new file */
    frl_container_free(c);
    remove_dir();
}
END_TEST

/* Replacing a file keeps its permission bits: a checkpoint made private (0600) stays
 * private after the next save, and one made group-readable stays so; a new file gets
 * the umask's usual bits. The special bits are not carried over. */
START_TEST(saving_keeps_the_permissions)
{
    make_dir();
    char err[FRL_ERRMSG_SIZE];
    mode_t old = umask(022);
    ck_assert_int_eq(frl_container_write(path, NULL, NULL, 0, err), FRL_OK);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0644);
    const mode_t modes[] = {0600, 0640, 0604};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(chmod(path, modes[i]), 0);
        size_t size;
        free(small_file(&size));
        ck_assert_int_eq(stat(path, &st), 0);
        ck_assert_msg((st.st_mode & 0777) == modes[i], "mode %o became %o after a save",
                      (unsigned)modes[i], (unsigned)(st.st_mode & 0777));
    }
    /* ...but not a setuid, setgid or sticky bit: the new bytes are another file's */
    ck_assert_int_eq(chmod(path, 06644), 0);
    size_t size;
    free(small_file(&size));
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_msg((st.st_mode & 07777) == 0644, "mode 6644 became %o after a save",
                  (unsigned)(st.st_mode & 07777));
    umask(old);
    remove_dir();
}
END_TEST

/* A path that holds a FIFO or a directory (a device node alike, which as root a rename
 * would replace) is refused before anything is written, and stays what it was. */
START_TEST(special_files_are_not_replaced)
{
    make_dir();
    char err[FRL_ERRMSG_SIZE];
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_int_eq(frl_container_write(path, NULL, NULL, 0, err), FRL_ERR_IO);
    ck_assert_msg(strstr(err, "not a regular file"), "%s", err);
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISFIFO(st.st_mode));
    unlink(path);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_int_eq(frl_container_write(path, NULL, NULL, 0, err), FRL_ERR_IO);
    ck_assert_msg(strstr(err, "a directory"), "%s", err);
    int tmp;
    dir_extra(&tmp);
    ck_assert_int_eq(tmp, 0); /* no temporary file left either */
    remove_dir();
}
END_TEST

/* ---- allocation failure ------------------------------------------------------------ */

static long calls, fail_at, live;
static int sticky;

static void *count_alloc(void *user, size_t size, size_t align)
{
    (void)user;
    long n = ++calls;
    if (fail_at > 0 && (n == fail_at || (sticky && n > fail_at)))
        return NULL;
    ck_assert(align && (align & (align - 1)) == 0 && align <= 4096);
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1))
        return NULL;
    live++;
    return p;
}

static void count_free(void *user, void *p)
{
    (void)user;
    ck_assert_ptr_nonnull(p);
    live--;
    free(p);
}

static frl_status run_armed(frl_allocator *a, int write, long at, char *err)
{
    frl_section s[16];
    int n = sample_sections(s);
    calls = 0, live = 0, fail_at = at;
    frl_status st;
    if (write) {
        st = frl_container_write(path, a, s, n, err);
    } else {
        frl_container *c = NULL;
        st = frl_container_read(&c, path, a, err);
        if (st == FRL_OK)
            check_same(c, s, n);
        frl_container_free(c);
    }
    fail_at = 0;
    return st;
}

START_TEST(allocation_failure)
{
    make_dir();
    frl_allocator a;
    frl_allocator_init(&a);
    a.alloc = count_alloc;
    a.free = count_free;
    char err[FRL_ERRMSG_SIZE];
    for (int write = 1; write >= 0; write--) {
        ck_assert_int_eq(run_armed(&a, write, 0, err), FRL_OK);
        long k = calls;
        ck_assert_int_eq(live, 0);
        ck_assert_int_gt(k, 1);
        for (sticky = 0; sticky <= 1; sticky++)
            for (long at = 1; at <= k; at++) {
                frl_status st = run_armed(&a, write, at, err);
                ck_assert_msg(st == FRL_ERR_NOMEM, "%s, allocation %ld of %ld: %s (%s)",
                              write ? "write" : "read", at, k, frl_status_name(st), err);
                ck_assert_msg(live == 0, "%ld allocations leaked", live);
                ck_assert_msg(strstr(err, "out of memory") != NULL, "%s", err);
            }
        sticky = 0;
        int tmp;
        ck_assert_int_eq(dir_extra(&tmp), 0); /* a failed write leaves no temporary */
    }
    ck_assert_int_eq(run_armed(&a, 0, 0, err), FRL_OK); /* the file is still the good one */
    remove_dir();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("container");
    TCase *tc = tcase_create("container");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, round_trip_every_dtype);
    tcase_add_test(tc, find_by_name_dtype_count);
    tcase_add_test(tc, write_rejects_bad_sections);
    tcase_add_test(tc, finite_sections_refuse_nan);
    tcase_add_test(tc, every_truncation_fails);
    tcase_add_test(tc, every_bit_flip_fails);
    tcase_add_test(tc, foreign_files);
    tcase_add_test(tc, short_prefix_of_magic_is_truncated);
    tcase_add_test(tc, newer_version);
    tcase_add_test(tc, missing_file_and_directory);
    tcase_add_test(tc, empty_path_is_refused);
    tcase_add_test(tc, malformed_sections);
    tcase_add_test(tc, stray_temporary_files_are_harmless);
    tcase_add_test(tc, files_at_temporary_names_are_left_alone);
    tcase_add_test(tc, saving_through_a_symbolic_link_keeps_it);
    tcase_add_test(tc, saving_keeps_the_permissions);
    tcase_add_test(tc, special_files_are_not_replaced);
    tcase_add_test(tc, allocation_failure);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
