/* The library's number text under a host locale with a decimal comma: a game engine or
 * GUI that calls setlocale(LC_ALL, "") in Germany. Settings given as "0.0005" are read,
 * and settings, metrics and exported files come out byte for byte as in the C locale,
 * so files move between machines and programs.
 *
 * The comma locale is de_DE.UTF-8, made with localedef in a temporary folder (LOCPATH)
 * where the system has not installed it; without localedef or glibc's locale sources it
 * prints why and exits 77 (SKIP). */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fastrl.h"
#include "test_util.h"

#define EXIT_SKIP 77
#define COMMA_LOCALE "de_DE.UTF-8"

static char work[] = "/tmp/frl_test_locale_XXXXXX";

/* 1 when LC_NUMERIC is now a locale whose decimal point is a comma. */
static int use_comma_locale(void)
{
    if (!setlocale(LC_NUMERIC, COMMA_LOCALE)) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "localedef -i de_DE -f UTF-8 %s/" COMMA_LOCALE
                 " >/dev/null 2>&1", work);
        if (system(cmd) != 0)
            return 0;
        setenv("LOCPATH", work, 1);
        if (!setlocale(LC_NUMERIC, COMMA_LOCALE))
            return 0;
    }
    return strcmp(localeconv()->decimal_point, ",") == 0;
}

static char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static void same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = read_file(a, &na), *y = read_file(b, &nb);
    ck_assert_msg(na == nb && memcmp(x, y, na) == 0, "%s and %s differ", a, b);
    free(x);
    free(y);
}

/* The first fields of metrics.csv's last row (the rest are timings) and its field
 * count. */
static int last_row(const char *dir, char *head, size_t size)
{
    char path[512];
    size_t n;
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    char *text = read_file(path, &n);
    while (n > 0 && text[n - 1] == '\n')
        text[--n] = '\0';
    const char *row = strrchr(text, '\n') ? strrchr(text, '\n') + 1 : text;
    int fields = 1, commas = 0;
    size_t k = 0;
    for (const char *p = row; *p; p++) {
        fields += *p == ',';
        commas += *p == ',';
        if (commas < 5 && k + 1 < size)
            head[k++] = *p;
    }
    head[k] = '\0';
    free(text);
    return fields;
}

/* A short run with a float setting given as text, its outputs in work/tag, its policy
 * exported as C and ONNX there. */
static void run(const char *tag)
{
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/%s", work, tag);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg = frl_test_settings("train.lr=0.0005 train.num_envs=4 train.rollout=32 "
                                        "train.ent_coef=0.0125");
    frl_trainer *t = NULL;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_msg(frl_trainer_set_output(t, dir) == FRL_OK, "%s", frl_trainer_last_error(t));
    ck_assert_int_eq(frl_trainer_train(t, 512), FRL_OK);
    frl_config *c_out = frl_test_settings("export.format=c");
    snprintf(path, sizeof path, "%s/policy", dir);
    ck_assert_msg(frl_policy_export(frl_trainer_policy(t), path, c_out) == FRL_OK, "%s",
                  frl_policy_last_error(frl_trainer_policy(t)));
    snprintf(path, sizeof path, "%s/policy.onnx", dir);
    ck_assert_int_eq(frl_policy_export(frl_trainer_policy(t), path, NULL), FRL_OK);
    frl_trainer_destroy(t);
    frl_config_destroy(c_out);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
}

START_TEST(test_settings_read_and_written)
{
    frl_config *cfg;
    char buf[64];
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_set(cfg, "train.lr", "0.0005"), FRL_OK);
    double lr = 0;
    ck_assert_int_eq(frl_config_get_float(cfg, "train.lr", &lr), FRL_OK);
    ck_assert(lr == 0.0005);
    ck_assert_int_eq(frl_config_get_text(cfg, "train.lr", buf, sizeof buf), FRL_OK);
    ck_assert_msg(strchr(buf, '.') && !strchr(buf, ','), "train.lr as text: %s", buf);
    /* the comma form stays an error, as in the C locale */
    ck_assert_int_eq(frl_config_set(cfg, "train.lr", "0,0005"), FRL_ERR_PARSE);
    /* a message quotes numbers as the user must type them: "0.5", not "0,5" */
    ck_assert_int_eq(frl_config_set(cfg, "train.gamma", "1.5"), FRL_ERR_RANGE);
    const char *msg = frl_config_last_error(cfg);
    ck_assert_msg(strstr(msg, "1.5") && !strstr(msg, "1,5"), "message: %s", msg);
    frl_config_destroy(cfg);
    /* the host's locale is left as it was */
    ck_assert_str_eq(localeconv()->decimal_point, ",");
}
END_TEST

START_TEST(test_files_as_in_the_c_locale)
{
    char a[600], b[600], head_c[256], head_comma[256];
    setlocale(LC_NUMERIC, "C");
    run("c");
    ck_assert(use_comma_locale());
    run("comma");
    const char *names[] = {"settings.txt", "policy.c", "policy.h", "policy.onnx"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(a, sizeof a, "%s/c/%s", work, names[i]);
        snprintf(b, sizeof b, "%s/comma/%s", work, names[i]);
        same_file(a, b);
    }
    snprintf(a, sizeof a, "%s/c", work);
    snprintf(b, sizeof b, "%s/comma", work);
    int fields = last_row(a, head_c, sizeof head_c);
    ck_assert_int_eq(last_row(b, head_comma, sizeof head_comma), fields);
    ck_assert_str_eq(head_comma, head_c);
    ck_assert_str_eq(localeconv()->decimal_point, ",");
}
END_TEST

/* The runtime's log lines are text for people and log files, and numbers in them are
 * written as in the C locale like every other text the library makes (the trainer's
 * ring line, "0.2 MiB", was written "0,2 MiB" under the comma locale). */
static void keep_ring_line(void *user, frl_log_level level, const char *message)
{
    (void)level;
    if (strncmp(message, "ring: ", 6) == 0)
        snprintf(user, 512, "%s", message);
}

START_TEST(test_log_lines_as_in_the_c_locale)
{
    ck_assert(use_comma_locale());
    char line[512] = "";
    frl_logger lg;
    frl_logger_init(&lg);
    lg.log = keep_ring_line;
    lg.user = line;
    lg.max_level = FRL_LOG_INFO;
    frl_config *rcfg = frl_test_settings("runtime.threads=1");
    frl_runtime *rt = NULL;
    ck_assert_int_eq(frl_runtime_create(&rt, rcfg, NULL, &lg), FRL_OK);
    frl_trainer *t = NULL;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", NULL), FRL_OK);
    const char *mib = strstr(line, " MiB");
    ck_assert_msg(mib != NULL, "no ring line logged: \"%s\"", line);
    ck_assert_msg(mib - line >= 2 && mib[-2] == '.', "ring line: \"%s\"", line);
    frl_trainer_destroy(t);
    frl_runtime_destroy(rt);
    frl_config_destroy(rcfg);
}
END_TEST

int main(void)
{
    if (!mkdtemp(work))
        return EXIT_FAILURE;
    if (!use_comma_locale()) {
        printf("locale: SKIP: no locale with a decimal comma (%s is not installed, and "
               "localedef could not make it)\n", COMMA_LOCALE);
        return EXIT_SKIP;
    }
    Suite *s = suite_create("locale");
    TCase *tc = tcase_create("comma");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_settings_read_and_written);
    tcase_add_test(tc, test_files_as_in_the_c_locale);
    tcase_add_test(tc, test_log_lines_as_in_the_c_locale);
    suite_add_tcase(s, tc);
    int rc = frl_test_run(s);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", work);
    if (system(cmd) != 0)
        printf("locale: could not remove %s\n", work);
    return rc;
}
