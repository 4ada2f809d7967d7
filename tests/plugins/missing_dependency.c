/* The library libbrain_baddep.so links against; the test tree deletes nothing but never puts it on any loader
 * path, so dlopen of the plugin fails with the dynamic loader's own message. */
int brain_test_missing_dependency(void) { return 42; }
