/* frl_policy_export's refusals and failures, in C: NULL and empty arguments, a name
 * that is not a C identifier, non-finite parameters, an unwritable path, a path too
 * long (the same error in both formats), the C options with ONNX, and every
 * allocation failing in turn, each an error with a message that leaves an existing file
 * untouched and leaks nothing; a directory's fsync failing after the renames (fsync is
 * wrapped at link time, tests/meson.build), which leaves the C files a pair; the .h's
 * rename failing after the .c's (rename wrapped too), which leaves a .c that refuses to
 * compile beside the old header; and both formats written identically twice. (Numbers:
 * bindings/python/tests/test_export.py; compiling and running the C export:
 * tests/test_cli_export.sh.) */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fastrl.h"
#include "export/c_source.h"
#include "rl/policy.h"
#include "test_util.h"

/* ---- an allocator that fails from the n-th call on ---- */

typedef struct failing {
    long calls, fail_at, live;
} failing;

static void *f_alloc(void *user, size_t size, size_t align)
{
    failing *f = user;
    if (f->fail_at > 0 && ++f->calls >= f->fail_at)
        return NULL;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1))
        return NULL;
    f->live++;
    return p;
}

static void f_free(void *user, void *p)
{
    failing *f = user;
    if (p)
        f->live--;
    free(p);
}

/* ---- fsync of a directory failing, when armed (-Wl,--wrap=fsync) ---- */

int __real_fsync(int fd);
int __wrap_fsync(int fd);
static int dir_fsync_fails;

int __wrap_fsync(int fd)
{
    struct stat st;
    if (dir_fsync_fails && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        errno = EIO;
        return -1;
    }
    return __real_fsync(fd);
}

/* ---- rename to a path ending in ".h" failing, when armed (-Wl,--wrap=rename) ---- */

static int header_rename_fails;
int __real_rename(const char *from, const char *to);
int __wrap_rename(const char *from, const char *to);

int __wrap_rename(const char *from, const char *to)
{
    size_t n = strlen(to);
    if (header_rename_fails && n > 2 && strcmp(to + n - 2, ".h") == 0) {
        errno = EIO;
        return -1;
    }
    return __real_rename(from, to);
}

/* ---- fixtures ---- */

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "%s", "/tmp/test_export.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static char *path_in(const char *name)
{
    static char buf[4][256];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, 256, "%s/%s", dir, name);
    return p;
}

static int exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* The file's bytes (malloc'd; *size set), NULL if it cannot be read. */
static unsigned char *slurp(const char *path, long *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)*size + 1);
    ck_assert_int_eq((long)fread(b, 1, (size_t)*size, f), *size);
    fclose(f);
    return b;
}

static frl_policy *cartpole_policy(frl_runtime *rt, const char *settings)
{
    frl_env *e;
    frl_policy *p;
    frl_config *cfg = frl_test_settings(settings);
    ck_assert_int_eq(frl_env_create(&e, rt, "CartPole-v1", NULL), FRL_OK);
    ck_assert_int_eq(frl_policy_create(&p, rt, cfg, frl_env_observation_space(e),
                                       frl_env_action_space(e)),
                     FRL_OK);
    frl_env_destroy(e);
    frl_config_destroy(cfg);
    return p;
}

static frl_status export_as(frl_policy *p, const char *path, const char *options)
{
    frl_config *cfg = frl_test_settings(options ? options : "");
    frl_status st = frl_policy_export(p, path, cfg);
    frl_config_destroy(cfg);
    return st;
}

/* ---- tests ---- */

START_TEST(null_and_empty_arguments)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_policy *p = cartpole_policy(rt, "");
    ck_assert_int_eq(frl_policy_export(NULL, "x.onnx", NULL), FRL_ERR_NULL);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "policy is NULL"));
    ck_assert_int_eq(frl_policy_export(p, NULL, NULL), FRL_ERR_NULL);
    ck_assert_int_eq(frl_policy_export(p, "", NULL), FRL_ERR_NULL);
    ck_assert_ptr_nonnull(strstr(frl_policy_last_error(p), "path is empty"));
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
}
END_TEST

START_TEST(names_that_are_not_c_identifiers)
{
    static const char *bad[] = {"9lives", "with-dash", "dot.ted", "", "a b"};
    make_dir();
    frl_runtime *rt = frl_test_runtime(1);
    frl_policy *p = cartpole_policy(rt, "");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char prefix[128];
        snprintf(prefix, sizeof prefix, "%s/%s", dir, bad[i]);
        ck_assert_int_eq(export_as(p, prefix, "export.format=c"), FRL_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_nonnull(strstr(frl_policy_last_error(p), "not a C identifier"));
    }
    /* math.h beside a build's sources would shadow <math.h>: refused by name, in any
     * case (Math.h is math.h on macOS's and Windows' file systems) */
    static const char *headers[] = {"math", "stdio", "time", "stdint", "Math", "STDIO"};
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        ck_assert_int_eq(export_as(p, path_in(headers[i]), "export.format=c"),
                         FRL_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_nonnull(strstr(frl_policy_last_error(p), "C standard header"));
    }
    ck_assert(!exists(path_in("math.h")) && !exists(path_in("math.c")));
    char longname[100];
    memset(longname, 'a', 64);
    longname[64] = '\0';
    ck_assert_int_eq(export_as(p, path_in(longname), "export.format=c"),
                     FRL_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(export_as(p, path_in("_ok_name1"), "export.format=c"), FRL_OK);
    ck_assert(exists(path_in("_ok_name1.c")) && exists(path_in("_ok_name1.h")));
    ck_assert(!exists(path_in("_ok_name1_probe.c")));
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
    remove_dir();
}
END_TEST

START_TEST(non_finite_parameters_are_refused)
{
    make_dir();
    frl_runtime *rt = frl_test_runtime(1);
    frl_policy *p = cartpole_policy(rt, "");
    float keep = p->params[7];
    p->params[7] = NAN;
    ck_assert_int_eq(frl_policy_export(p, path_in("p.onnx"), NULL), FRL_ERR_NONFINITE);
    ck_assert_ptr_nonnull(strstr(frl_policy_last_error(p), "parameter 7"));
    p->params[7] = INFINITY;
    ck_assert_int_eq(export_as(p, path_in("p"), "export.format=c"), FRL_ERR_NONFINITE);
    ck_assert(!exists(path_in("p.onnx")) && !exists(path_in("p.c")));
    /* Nor saved (loading refuses it), and an earlier file stays. */
    ck_assert_int_eq(frl_policy_save(p, path_in("p.frl")), FRL_ERR_NONFINITE);
    ck_assert(!exists(path_in("p.frl")));
    p->params[7] = keep;
    ck_assert_int_eq(frl_policy_export(p, path_in("p.onnx"), NULL), FRL_OK);
    frl_policy_destroy(p);
    /* The normaliser's statistics: a NaN is not written, a negative sum not read. */
    p = cartpole_policy(rt, "policy.obs_norm=true");
    p->norm.mean[0] = NAN;
    ck_assert_int_eq(frl_policy_save(p, path_in("p.frl")), FRL_ERR_NONFINITE);
    ck_assert_ptr_nonnull(strstr(frl_policy_last_error(p), "policy.obsnorm"));
    p->norm.mean[0] = 0;
    p->norm.m2[1] = -5;
    ck_assert_int_eq(frl_policy_save(p, path_in("p.frl")), FRL_OK);
    frl_policy *q = NULL;
    ck_assert_int_eq(frl_policy_load(&q, rt, path_in("p.frl")), FRL_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "policy.obsnorm"));
    ck_assert_ptr_null(q);
    unlink(path_in("p.frl"));
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
    remove_dir();
}
END_TEST

START_TEST(unwritable_path)
{
    frl_runtime *rt = frl_test_runtime(1);
    frl_policy *p = cartpole_policy(rt, "");
    ck_assert_int_eq(frl_policy_export(p, "/nonexistent-dir-frl/p.onnx", NULL), FRL_ERR_IO);
    ck_assert_ptr_nonnull(strstr(frl_policy_last_error(p), "/nonexistent-dir-frl/p.onnx"));
    ck_assert_int_eq(export_as(p, "/nonexistent-dir-frl/p", "export.format=c"), FRL_ERR_IO);
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
}
END_TEST

/* A path too long to write is FRL_ERR_INVALID_ARGUMENT in both formats (the ONNX writer
 * once said FRL_ERR_IO where the C writer said FRL_ERR_INVALID_ARGUMENT), named in the
 * message, before anything is written. */
START_TEST(too_long_a_path_is_refused_alike)
{
    make_dir();
    frl_runtime *rt = frl_test_runtime(1);
    frl_policy *p = cartpole_policy(rt, "");
    static char path[4200];
    int n = snprintf(path, sizeof path, "%s/", dir);
    memset(path + n, 'd', sizeof path - 1 - (size_t)n);
    path[4040] = '\0'; /* past 4096 - 64 bytes: no room for a suffix and a temporary name */
    const char *formats[] = {"export.format=onnx", "export.format=c"};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(export_as(p, path, formats[i]), FRL_ERR_INVALID_ARGUMENT);
        const char *msg = frl_policy_last_error(p);
        ck_assert_msg(strstr(msg, "4040 bytes long") && strstr(msg, dir), "%s", msg);
    }
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
    remove_dir();
}
END_TEST

/* int8 weights and a probe are C options: with export.format=onnx they are refused,
 * naming the key, rather than dropped; nothing is written. */
START_TEST(c_options_with_onnx_are_refused)
{
    make_dir();
    frl_runtime *rt = frl_test_runtime(1);
    frl_policy *p = cartpole_policy(rt, "");
    const char *bad[][2] = {{"export.weights=int8", "export.weights=int8"},
                            {"export.format=onnx export.probe=true", "export.probe=true"}};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(export_as(p, path_in("p.onnx"), bad[i][0]), FRL_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(frl_policy_last_error(p), bad[i][1]), "%s",
                      frl_policy_last_error(p));
        ck_assert(!exists(path_in("p.onnx")));
    }
    ck_assert_int_eq(export_as(p, path_in("p.onnx"), "export.weights=float32 "
                                                       "export.probe=false"), FRL_OK);
    ck_assert_int_eq(export_as(p, path_in("p"), "export.format=c export.weights=int8 "
                                                  "export.probe=true"), FRL_OK);
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
    remove_dir();
}
END_TEST

/* NAME_STACK_BYTES covers act too: a discrete act holds out[NAME_OUT_SIZE] beside
 * what forward puts on the stack (it once counted forward's buffers alone). */
START_TEST(stack_bytes_count_act)
{
    make_dir();
    frl_runtime *rt = frl_test_runtime(1);
    frl_policy *p = cartpole_policy(rt, "");
    ck_assert_int_eq(export_as(p, path_in("stacked"), "export.format=c"), FRL_OK);
    long size;
    char *h = (char *)slurp(path_in("stacked.h"), &size);
    ck_assert_ptr_nonnull(h);
    h[size] = '\0';
    const char *at = strstr(h, "#define STACKED_STACK_BYTES ");
    ck_assert_ptr_nonnull(at);
    size_t bytes = (size_t)strtoull(at + strlen("#define STACKED_STACK_BYTES "), NULL, 10);
    ck_assert_uint_eq(bytes, sizeof(float) * (frl_cgen_stack_floats(p) + (size_t)p->out_w));
    free(h);
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
    remove_dir();
}
END_TEST

/* The generated header's guard is its own: an export named fastrl does not take the
 * library header's FASTRL_H (tests/test_cli_export.sh compiles a program with both). */
START_TEST(header_guard_is_not_the_librarys)
{
    make_dir();
    frl_runtime *rt = frl_test_runtime(1);
    frl_policy *p = cartpole_policy(rt, "");
    ck_assert_int_eq(export_as(p, path_in("fastrl"), "export.format=c"), FRL_OK);
    long size;
    char *h = (char *)slurp(path_in("fastrl.h"), &size);
    ck_assert_ptr_nonnull(h);
    h[size] = '\0';
    ck_assert_ptr_null(strstr(h, "FASTRL_H\n"));
    ck_assert_ptr_nonnull(strstr(h, "#ifndef FASTRL_FASTRL_EXPORT_H\n"));
    free(h);
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
    remove_dir();
}
END_TEST

/* Every allocation the export makes fails in turn: FRL_ERR_NOMEM, the file already at
 * the path unchanged, nothing leaked. */
static void sweep_nomem(const char *options, const char *file, const char *target)
{
    failing f = {0, 0, 0};
    frl_allocator a;
    frl_allocator_init(&a);
    a.alloc = f_alloc;
    a.free = f_free;
    a.user = &f;
    frl_config *cfg = frl_test_settings("runtime.threads=1");
    frl_runtime *rt;
    ck_assert_int_eq(frl_runtime_create(&rt, cfg, &a, NULL), FRL_OK);
    frl_config_destroy(cfg);
    frl_policy *p = cartpole_policy(rt, "policy.obs_norm=true");
    FILE *old = fopen(path_in(file), "wb");
    fputs("the previous export", old);
    fclose(old);
    long live = f.live, n = 1;
    for (;; n++) {
        f.calls = 0;
        f.fail_at = n;
        frl_status st = export_as(p, path_in(target), options);
        f.fail_at = 0;
        ck_assert_int_eq(f.live, live);
        if (st == FRL_OK)
            break;
        ck_assert_int_eq(st, FRL_ERR_NOMEM);
        long size;
        unsigned char *b = slurp(path_in(file), &size);
        ck_assert_ptr_nonnull(b);
        ck_assert_int_eq(size, 19);
        ck_assert(memcmp(b, "the previous export", 19) == 0);
        free(b);
    }
    ck_assert_int_gt(n, 3); /* the sweep did fail some allocations */
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
    ck_assert_int_eq(f.live, 0);
}

START_TEST(allocation_failures)
{
    make_dir();
    sweep_nomem(NULL, "m.onnx", "m.onnx");
    sweep_nomem("export.format=c export.probe=true", "cpol.c", "cpol");
    remove_dir();
}
END_TEST

/* The file's bytes as a string (the test's own files are text). */
static int holds(const char *path, const char *text)
{
    long size;
    char *b = (char *)slurp(path, &size);
    if (!b)
        return 0;
    b[size] = '\0';
    int found = strstr(b, text) != NULL;
    free(b);
    return found;
}

/* The directory's fsync fails after the first rename: the C export reports it, and its
 * files are still a pair, the new .c with the new .h (the .h's staged copy was once
 * deleted after that error, leaving the new .c beside the old .h). */
START_TEST(c_files_stay_a_pair_when_the_directory_sync_fails)
{
    make_dir();
    frl_runtime *rt = frl_test_runtime(1);
    frl_policy *p = cartpole_policy(rt, "");
    const char *names[2] = {"pair.c", "pair.h"};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(path_in(names[i]), "w");
        fputs("the previous export", f);
        fclose(f);
    }
    dir_fsync_fails = 1;
    frl_status st = export_as(p, path_in("pair"), "export.format=c");
    dir_fsync_fails = 0;
    ck_assert_int_eq(st, FRL_ERR_IO);
    ck_assert_msg(strstr(frl_policy_last_error(p), "fsync directory"), "%s",
                  frl_policy_last_error(p));
    ck_assert_msg(holds(path_in("pair.c"), "void pair_forward("), "pair.c is not the new one");
    ck_assert_msg(holds(path_in("pair.h"), "void pair_forward("), "pair.h is not the new one");
    char cmd[160];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -q tmp", dir);
    ck_assert_msg(system(cmd) != 0, "a temporary file is left in %s", dir);
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
    remove_dir();
}
END_TEST

/* Whether cc accepts dir/NAME.c beside dir/NAME.h; its messages go to dir/cc.log. */
static int compiles(const char *name)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cc -std=c99 -fsyntax-only -I'%s' '%s/%s.c' > '%s/cc.log' 2>&1",
             dir, dir, name, dir);
    return system(cmd) == 0;
}

/* The .h's rename fails after the .c's: the error is reported, and the new .c beside the
 * old .h (whose sizes are another policy's) does not compile, naming the cause, where it
 * once compiled against the wrong sizes. Exported again, the pair compiles. */
START_TEST(c_file_refuses_another_exports_header)
{
    make_dir();
    frl_runtime *rt = frl_test_runtime(1);
    frl_policy *old = cartpole_policy(rt, "policy.hidden=8");
    frl_policy *p = cartpole_policy(rt, "policy.hidden=16");
    ck_assert_int_eq(export_as(old, path_in("pol"), "export.format=c"), FRL_OK);
    ck_assert_msg(compiles("pol"), "the first export does not compile");
    header_rename_fails = 1;
    frl_status st = export_as(p, path_in("pol"), "export.format=c");
    header_rename_fails = 0;
    ck_assert_int_eq(st, FRL_ERR_IO);
    ck_assert_msg(holds(path_in("pol.c"), "[16]"), "pol.c is not the new one");
    ck_assert_msg(!compiles("pol"), "the new pol.c compiled beside the old pol.h");
    ck_assert(holds(path_in("cc.log"), "pol.h is not the header exported with pol.c"));
    ck_assert_int_eq(export_as(p, path_in("pol"), "export.format=c"), FRL_OK);
    ck_assert_msg(compiles("pol"), "the repeated export does not compile");
    frl_policy_destroy(old);
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
    remove_dir();
}
END_TEST

START_TEST(written_the_same_twice)
{
    static const char *options[] = {"export.format=onnx", "export.format=c",
                                     "export.format=c export.weights=int8"};
    static const char *files[][2] = {{"a.onnx", "b.onnx"}, {"a.c", "b.c"}, {"a.c", "b.c"}};
    make_dir();
    frl_runtime *rt = frl_test_runtime(1);
    frl_policy *p = cartpole_policy(rt, "policy.shared=true");
    for (int i = 0; i < 3; i++) {
        const char *prefix[2] = {path_in("a"), path_in("b")};
        unsigned char *b[2];
        long size[2];
        for (int k = 0; k < 2; k++) {
            ck_assert_int_eq(export_as(p, i ? prefix[k] : path_in(files[i][k]), options[i]),
                             FRL_OK);
            b[k] = slurp(path_in(files[i][k]), &size[k]);
            ck_assert_ptr_nonnull(b[k]);
        }
        b[0][size[0]] = '\0';
        ck_assert_int_eq(size[0], size[1]);
        /* The C files name their symbols after the prefix: a_ and b_. */
        if (i == 0) {
            ck_assert(memcmp(b[0], b[1], (size_t)size[0]) == 0);
            ck_assert_int_eq(b[0][0], 0x08); /* ModelProto.ir_version */
            ck_assert_int_eq(b[0][1], 8);
        } else {
            ck_assert_ptr_nonnull(strstr((char *)b[0], i == 2 ? "signed char" : "float a_"));
        }
        free(b[0]);
        free(b[1]);
    }
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
    remove_dir();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("export");
    TCase *tc = tcase_create("export");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, null_and_empty_arguments);
    tcase_add_test(tc, names_that_are_not_c_identifiers);
    tcase_add_test(tc, non_finite_parameters_are_refused);
    tcase_add_test(tc, unwritable_path);
    tcase_add_test(tc, too_long_a_path_is_refused_alike);
    tcase_add_test(tc, c_options_with_onnx_are_refused);
    tcase_add_test(tc, header_guard_is_not_the_librarys);
    tcase_add_test(tc, stack_bytes_count_act);
    tcase_add_test(tc, allocation_failures);
    tcase_add_test(tc, c_files_stay_a_pair_when_the_directory_sync_fails);
    tcase_add_test(tc, c_file_refuses_another_exports_header);
    tcase_add_test(tc, written_the_same_twice);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
