/* runtime.device=cuda with the plugin found only on the loader's path, where it cannot
 * be loaded (tests/plugin_path: an undefined symbol). The refusal must say so with the
 * loader's reason: it used to say the plugin "was not found" and to rebuild with CUDA,
 * hiding the real cause (a missing dependency such as libcudart). */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

START_TEST(unloadable_on_library_path_is_not_missing)
{
    unsetenv("FRL_CUDA_PLUGIN");
    frl_config *cfg;
    frl_runtime *rt = NULL;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "runtime.threads", 1), FRL_OK);
    ck_assert_int_eq(frl_config_set(cfg, "runtime.device", "cuda"), FRL_OK);
    frl_status st = frl_runtime_create(&rt, cfg, NULL, NULL);
    frl_config_destroy(cfg);
    ck_assert_int_eq(st, FRL_ERR_UNSUPPORTED);
    ck_assert_ptr_null(rt);
    const char *e = frl_last_error();
    ck_assert_msg(strstr(e, "cannot be loaded") && strstr(e, "frl_test_missing_dependency"),
                  "message: %s", e);
    ck_assert_msg(!strstr(e, "was not found"), "message: %s", e);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plugin_path");
    TCase *tc = tcase_create("plugin_path");
    tcase_add_test(tc, unloadable_on_library_path_is_not_missing);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
