/* Deliberately broken plugins for the loader tests, one variant per compile definition. Written in C to prove
 * that the ABI needs nothing from C++. */
#include "plugin_error.h"

#include <stdlib.h>
#include <string.h>

static brain_error* initialize(const brain_host_api* host) {
    (void)host;
#ifdef BROKEN_INIT_FAILS
    return make_error(BRAIN_ERR_DRIVER_UNAVAILABLE, "test plugin: initialisation refused on purpose");
#else
    return NULL;
#endif
}
static brain_error* device_count(int32_t* out) {
#ifdef BROKEN_UNKNOWN_CODE
    (void)out;
    return make_error(77, "an error code this core does not know");
#else
    *out = 1;
    return NULL;
#endif
}
static brain_error* probe(int32_t device, uint64_t budget, brain_device_report* out) {
    (void)device; (void)budget; (void)out;
    return make_error(BRAIN_ERR_UNSUPPORTED, "test plugin: probe is not implemented");
}
#ifdef BROKEN_FAKE_SESSION
/* A minimal working session: enough for the core to open, train (a constant loss) and close it. */
struct brain_session {
    int epochs;
};
static struct brain_session g_session;
#endif

static brain_error* session_open(const brain_session_desc* desc, brain_session** out) {
    (void)desc;
#ifdef BROKEN_FAKE_SESSION
    g_session.epochs = 0;
    *out = &g_session;
    return NULL;
#elif defined(BROKEN_NULL_SESSION)
    *out = NULL;
    return NULL;
#else
    (void)out;
    return make_error(BRAIN_ERR_ALLOCATION_FAILED, "test plugin: session_open fails on purpose");
#endif
}
static brain_error* train_epoch(brain_session* s, float* loss) {
#ifdef BROKEN_FAKE_SESSION
    s->epochs += 1;
    *loss = 0.5f;
    return NULL;
#else
    (void)s; (void)loss;
    return make_error(BRAIN_ERR_INVALID_STATE, "test plugin: no session");
#endif
}
static brain_error* checkpoint(brain_session* s, float* p, uint64_t np, float* o, uint64_t no, uint64_t* step) {
    (void)s; (void)p; (void)np; (void)o; (void)no; (void)step;
    return make_error(BRAIN_ERR_INVALID_STATE, "test plugin: no session");
}
static brain_error* stats(const brain_session* s, brain_session_stats* out) {
    (void)s; (void)out;
    return make_error(BRAIN_ERR_INVALID_STATE, "test plugin: no session");
}
static void session_close(brain_session* s) { (void)s; }
#ifdef BROKEN_CAPABILITIES_FAIL
static brain_error* capabilities(brain_capabilities* out) {
    (void)out;
    return make_error(BRAIN_ERR_PLUGIN_FAILURE, "test plugin: capabilities fails on purpose");
}
#endif

#ifndef BROKEN_ABI_MAJOR
#define BROKEN_ABI_MAJOR BRAIN_ABI_VERSION_MAJOR
#endif
#ifndef BROKEN_NAME
#error "BROKEN_NAME must name the backend"
#endif

#ifdef BROKEN_DEPENDENCY
/* Defined in a library the loader cannot find at run time. */
extern int brain_test_missing_dependency(void);
int brain_test_use_dependency(void) { return brain_test_missing_dependency(); }
#endif

#ifdef BROKEN_HALF_PREDICTOR
/* predictor_open without predictor_run and predictor_close: a table the core must refuse at load. */
static brain_error* predictor_open(const brain_predictor_desc* desc, brain_predictor** out) {
    (void)desc;
    (void)out;
    return make_error(BRAIN_ERR_UNSUPPORTED, "test plugin: predictor_open is not implemented");
}
#endif

#ifdef BROKEN_HALF_PIN
/* host_memory_pin without host_memory_unpin: a table the core must refuse at load. */
static brain_error* host_memory_pin(void* memory, uint64_t bytes) {
    (void)memory;
    (void)bytes;
    return make_error(BRAIN_ERR_UNSUPPORTED, "test plugin: host_memory_pin is not implemented");
}
#endif

static const brain_plugin_api k_api = {
    sizeof(brain_plugin_api),
    BROKEN_ABI_MAJOR,
    BRAIN_ABI_VERSION_MINOR,
    BROKEN_NAME,
    "0.0.0-test",
    "deliberately broken test plugin",
    error_code,
    error_message,
    error_destroy,
    initialize,
    device_count,
    probe,
    session_open,
    train_epoch,
    checkpoint,
#ifdef BROKEN_NULL_FUNCTION
    NULL,
#else
    stats,
#endif
    session_close,
#ifdef BROKEN_CAPABILITIES_FAIL
    NULL, /* session_set_learning_rate */
    capabilities,
#endif
#ifdef BROKEN_HALF_PREDICTOR
    .predictor_open = predictor_open,
#endif
#ifdef BROKEN_HALF_PIN
    .host_memory_pin = host_memory_pin,
#endif
};

#ifndef BROKEN_NO_ENTRY
BRAIN_PLUGIN_EXPORT const brain_plugin_api* brain_plugin_get_api(void) {
#ifdef BROKEN_ENTRY_NULL
    return NULL;
#else
    return &k_api;
#endif
}
#else
/* Exported, but under the wrong name. */
BRAIN_PLUGIN_EXPORT const brain_plugin_api* brain_plugin_get_table(void) { return &k_api; }
#endif
