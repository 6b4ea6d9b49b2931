/* runtime.device through the public API: the CPU by default; cuda through the plugin
 * or a clear error; auto falling back to the CPU with its reason. A fake plugin (built
 * beside this test) stands in for a GPU; the real plugin, when built, is probed too and
 * on a machine without a GPU must say why it cannot run.
 *
 *   test_device FAKE_PLUGIN [REAL_PLUGIN] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static const char *fake_plugin, *real_plugin;

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
    unsetenv("FAKE_CUDA");
}
END_TEST

/* The real plugin: on a GPU machine it finds the device; elsewhere it says why not. */
START_TEST(real_plugin_probe)
{
    if (!real_plugin || !real_plugin[0]) {
        printf("real_plugin_probe: SKIP: the CUDA plugin is not built in this configuration\n");
        return;
    }
    frl_runtime *rt;
    frl_status st = make("cuda", real_plugin, &rt);
    if (st == FRL_OK) {
        printf("real_plugin_probe: %s\n", frl_runtime_device(rt));
        ck_assert_ptr_nonnull(strstr(frl_runtime_device(rt), "cuda:0 "));
        frl_runtime_destroy(rt);
        return;
    }
    printf("real_plugin_probe: no GPU here: %s\n", frl_last_error());
    ck_assert_int_eq(st, FRL_ERR_UNSUPPORTED);
    ck_assert(strstr(frl_last_error(), "driver") || strstr(frl_last_error(), "device"));
}
END_TEST

int main(int argc, char **argv)
{
    fake_plugin = argc > 1 ? argv[1] : "";
    real_plugin = argc > 2 ? argv[2] : "";
    Suite *s = suite_create("device");
    TCase *tc = tcase_create("device");
    tcase_add_test(tc, cpu_by_default);
    tcase_add_test(tc, missing_plugin);
    tcase_add_test(tc, fake_device);
    tcase_add_test(tc, fake_failures);
    tcase_add_test(tc, real_plugin_probe);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
