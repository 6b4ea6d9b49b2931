/* runtime.device through the public API: the CPU by default; cuda through the plugin
 * or a clear error; auto falling back to the CPU with its reason. A fake plugin (built
 * beside this test) stands in for a GPU. With --real-plugin the program is another
 * test (device_real_plugin): it probes the real plugin alone, and where no GPU (or no
 * plugin: WHY_NOT_BUILT says why) can answer, it prints why and exits 77, which meson
 * reports as SKIP, so that a pass always means a GPU was found.
 *
 *   test_device FAKE_PLUGIN
 *   test_device --real-plugin WHY_NOT_BUILT [REAL_PLUGIN] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static const char *fake_plugin;

/* meson counts this exit status as a skip. */
#define EXIT_SKIP 77

/* A runtime for runtime.device=choice with FRL_CUDA_PLUGIN=plugin (NULL: unset); the
 * status is returned and *out is the runtime or NULL. */
static frl_status make(const char *choice, const char *plugin, frl_runtime **out)
{
    if (plugin)
        setenv("FRL_CUDA_PLUGIN", plugin, 1);
    else
        unsetenv("FRL_CUDA_PLUGIN");
    frl_config *cfg;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "runtime.threads", 1), FRL_OK);
    ck_assert_int_eq(frl_config_set(cfg, "runtime.device", choice), FRL_OK);
    frl_status st = frl_runtime_create(out, cfg, NULL, NULL);
    frl_config_destroy(cfg);
    ck_assert(st == FRL_OK ? *out != NULL : *out == NULL);
    return st;
}

START_TEST(cpu_by_default)
{
    frl_runtime *rt = frl_test_runtime(1);
    ck_assert_str_eq(frl_runtime_device(rt), "cpu");
    ck_assert_str_eq(frl_runtime_device_note(rt), "");
    frl_runtime_destroy(rt);
    ck_assert_str_eq(frl_runtime_device_note(NULL), "");
    ck_assert_ptr_nonnull(strstr(frl_runtime_device(NULL), "NULL"));
}
END_TEST

START_TEST(missing_plugin)
{
    frl_runtime *rt;
    ck_assert_int_eq(make("cuda", "/nonexistent/libfastrl-cuda.so.0", &rt), FRL_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "runtime.device=cuda"));
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "cannot be loaded"));
    ck_assert_int_eq(make("auto", "/nonexistent/libfastrl-cuda.so.0", &rt), FRL_OK);
    ck_assert_str_eq(frl_runtime_device(rt), "cpu");
    ck_assert_ptr_nonnull(strstr(frl_runtime_device_note(rt), "cannot be loaded"));
    frl_runtime_destroy(rt);
    /* A library that is not the plugin. */
    ck_assert_int_eq(make("cuda", "libm.so.6", &rt), FRL_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "has no frl_cuda_plugin_get"));
    /* named as the file that was opened, not as the plugin it is not */
    ck_assert_msg(strstr(frl_last_error(), "libm.so.6 (FRL_CUDA_PLUGIN) has no") != NULL, "%s",
                  frl_last_error());
}
END_TEST

START_TEST(fake_device)
{
    frl_runtime *rt;
    setenv("FAKE_CUDA", "ok", 1);
    unsetenv("FAKE_CUDA_CAPS");
    ck_assert_int_eq(make("cuda", fake_plugin, &rt), FRL_OK);
    ck_assert_str_eq(frl_runtime_device(rt), "cuda:0 Fake GPU 0 (cc 9.0, 80 GiB; 2 devices)");
    /* Networks go to the device; a plugin that cannot hold them fails their creation
     * with its reason instead of quietly using the CPU. */
    frl_trainer *t;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", NULL), FRL_ERR_DEVICE);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "runs no networks"));
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "cuda:0 Fake GPU 0"));
    frl_runtime_destroy(rt);
    /* auto takes the GPU only when the plugin can run the work. */
    ck_assert_int_eq(make("auto", fake_plugin, &rt), FRL_OK);
    ck_assert_str_eq(frl_runtime_device(rt), "cpu");
    ck_assert_ptr_nonnull(strstr(frl_runtime_device_note(rt), "no GPU learner yet"));
    frl_runtime_destroy(rt);
    setenv("FAKE_CUDA_CAPS", "3", 1);
    ck_assert_int_eq(make("auto", fake_plugin, &rt), FRL_OK);
    ck_assert_ptr_nonnull(strstr(frl_runtime_device(rt), "cuda:0"));
    frl_runtime_destroy(rt);
    unsetenv("FAKE_CUDA_CAPS");
}
END_TEST

/* A trainer of train.num_envs envs on runtime rt: its creation's status, and with
 * FRL_OK one update trained (on the CPU: the fake plugin runs nothing). */
static frl_status trainer_of(frl_runtime *rt, int32_t envs)
{
    frl_config *cfg;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "train.num_envs", envs), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "train.rollout", 8), FRL_OK);
    frl_trainer *t = NULL;
    frl_status st = frl_trainer_create(&t, rt, "CartPole-v1", cfg);
    frl_config_destroy(cfg);
    if (st == FRL_OK)
        ck_assert_msg(frl_trainer_train(t, 8 * envs) == FRL_OK, "%s", frl_trainer_last_error(t));
    frl_trainer_destroy(t);
    return st;
}

/* auto means the fastest place that works: networks, or a learner, that the device has
 * no memory for stay on the CPU there, as cuda refuses them with the plugin's reason.
 * (16 envs on one thread: auto's rule would take the device.) */
START_TEST(auto_keeps_what_the_device_cannot_hold)
{
    frl_runtime *rt;
    setenv("FAKE_CUDA", "ok", 1);
    setenv("FAKE_CUDA_CAPS", "3", 1);
    ck_assert_int_eq(make("auto", fake_plugin, &rt), FRL_OK);
    ck_assert_ptr_nonnull(strstr(frl_runtime_device(rt), "cuda:0"));
    ck_assert_msg(trainer_of(rt, 16) == FRL_OK, "no model: %s", frl_last_error());
    setenv("FAKE_CUDA_MODELS", "1", 1);
    ck_assert_msg(trainer_of(rt, 16) == FRL_OK, "no learner: %s", frl_last_error());
    frl_runtime_destroy(rt);
    ck_assert_int_eq(make("cuda", fake_plugin, &rt), FRL_OK);
    ck_assert_int_eq(trainer_of(rt, 16), FRL_ERR_DEVICE);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "no memory for a learner"));
    unsetenv("FAKE_CUDA_MODELS");
    ck_assert_int_eq(trainer_of(rt, 16), FRL_ERR_DEVICE);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "runs no networks"));
    frl_runtime_destroy(rt);
    unsetenv("FAKE_CUDA_CAPS");
    unsetenv("FAKE_CUDA");
}
END_TEST

START_TEST(fake_failures)
{
    frl_runtime *rt;
    setenv("FAKE_CUDA", "nodevice", 1);
    ck_assert_int_eq(make("cuda", fake_plugin, &rt), FRL_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "sees no device"));
    ck_assert_int_eq(make("auto", fake_plugin, &rt), FRL_OK);
    ck_assert_ptr_nonnull(strstr(frl_runtime_device_note(rt), "sees no device"));
    frl_runtime_destroy(rt);
    setenv("FAKE_CUDA", "badabi", 1);
    ck_assert_int_eq(make("cuda", fake_plugin, &rt), FRL_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(frl_last_error(), "plugin ABI 99"));
    /* The entry point is there and returns NULL: not the same as a missing symbol. */
    setenv("FAKE_CUDA", "notable", 1);
    ck_assert_int_eq(make("cuda", fake_plugin, &rt), FRL_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(frl_last_error(), "returned no table"), "%s", frl_last_error());
    unsetenv("FAKE_CUDA");
}
END_TEST

/* The plugin ran: it must have named device 0. */
static int check_gpu_found(frl_runtime *rt)
{
    const char *dev = frl_runtime_device(rt);
    const int ok = strncmp(dev, "cuda:0 ", 7) == 0;
    printf("device_real_plugin: %s: %s\n", ok ? "PASS" : "FAIL, not cuda:0", dev);
    frl_runtime_destroy(rt);
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* No GPU here: the refusal must be FRL_ERR_UNSUPPORTED with no runtime, and its reason
 * (after "runtime.device=cuda: ") the driver's answer to the plugin's probe. A plugin
 * of this build that cannot be loaded, or speaks another ABI, fails: it is broken
 * whether or not a GPU is here. */
static int check_no_gpu_reason(frl_status st, frl_runtime *rt)
{
    static const char prefix[] = "runtime.device=cuda: ";
    const char *err = frl_last_error(), *at = strstr(err, prefix);
    const char *why = at ? at + sizeof prefix - 1 : "";
    if (st != FRL_ERR_UNSUPPORTED || rt != NULL ||
        !(strstr(why, "driver") || strstr(why, "cudaGetDeviceCount"))) {
        printf("device_real_plugin: FAIL: %s, runtime %p, \"%s\" (want FRL_ERR_UNSUPPORTED, "
               "no runtime, and the driver's reason)\n",
               frl_status_name(st), (void *)rt, err);
        frl_runtime_destroy(rt);
        return EXIT_FAILURE;
    }
    printf("device_real_plugin: SKIP: no GPU here: %s\n", err);
    return EXIT_SKIP;
}

/* The real plugin, with plain checks: this runs outside a Check suite, whose runner
 * cannot report a skip. On a GPU machine it must find the device (0: pass); elsewhere
 * runtime.device=cuda must fail with FRL_ERR_UNSUPPORTED and the driver's reason,
 * printed for the log (77: skip); anything else fails (1). */
static int probe_real_plugin(const char *plugin, const char *why_not_built)
{
    if (!plugin) {
        printf("device_real_plugin: SKIP: the CUDA plugin is not built (%s)\n", why_not_built);
        return EXIT_SKIP;
    }
    setenv("FRL_CUDA_PLUGIN", plugin, 1);
    frl_config *cfg = NULL;
    frl_runtime *rt = NULL;
    if (frl_config_create(&cfg, NULL) != FRL_OK ||
        frl_config_set_int(cfg, "runtime.threads", 1) != FRL_OK ||
        frl_config_set(cfg, "runtime.device", "cuda") != FRL_OK) {
        printf("device_real_plugin: FAIL: config: %s\n", frl_last_error());
        frl_config_destroy(cfg);
        return EXIT_FAILURE;
    }
    const frl_status st = frl_runtime_create(&rt, cfg, NULL, NULL);
    frl_config_destroy(cfg);
    return st == FRL_OK ? check_gpu_found(rt) : check_no_gpu_reason(st, rt);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--real-plugin") == 0)
        return probe_real_plugin(argc > 3 ? argv[3] : NULL, argv[2]);
    fake_plugin = argc > 1 ? argv[1] : "";
    Suite *s = suite_create("device");
    TCase *tc = tcase_create("device");
    tcase_add_test(tc, cpu_by_default);
    tcase_add_test(tc, missing_plugin);
    tcase_add_test(tc, fake_device);
    tcase_add_test(tc, fake_failures);
    tcase_add_test(tc, auto_keeps_what_the_device_cannot_hold);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
