/* Stands in for a CUDA plugin found on the loader's path whose own dependencies are
 * missing: the symbol below is defined nowhere, so dlopen with RTLD_NOW refuses it. */
void frl_test_missing_dependency(void);

void frl_test_plugin_entry(void);
void frl_test_plugin_entry(void)
{
    frl_test_missing_dependency();
}
