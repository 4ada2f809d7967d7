// A C++ plugin that breaks the ABI's first rule on purpose: one of its entries lets an exception out (THROW_IN
// names which; THROW_INT throws an int instead of a std::runtime_error). The core must turn each into PluginFailure
// naming the plugin and the entry, and carry on; nothing of it may end the process. Everything else works, so that
// the core reaches the entry that throws.
#include <brain/plugin_abi.h>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#ifndef THROW_IN
#error "THROW_IN must name the entry that throws"
#endif
#ifndef THROWING_NAME
#error "THROWING_NAME must name the backend"
#endif

namespace {

// Throws from `entry` when it is the one this variant breaks.
void maybe_throw(const char* entry) {
    if (std::strcmp(entry, THROW_IN) != 0) return;
#ifdef THROW_INT
    throw 42;
#else
    throw std::runtime_error(std::string(entry) + " threw on purpose");
#endif
}

} // namespace

struct brain_error {
    int32_t code;
};

struct brain_session {
    std::uint64_t epochs = 0;
};

namespace {

int32_t error_code(const brain_error* e) {
    return e->code;
}
const char* error_message(const brain_error*) {
    maybe_throw("error_message");
    return "throwing test plugin: an error on purpose";
}
void error_destroy(brain_error* e) {
    delete e;
}

brain_error* initialize(const brain_host_api*) {
    maybe_throw("initialize");
    return nullptr;
}
brain_error* device_count(int32_t* out) {
    maybe_throw("device_count");
    *out = 1;
    // error_message is reached through an error: this variant reports none of its devices, with a reason.
    if (std::strcmp(THROW_IN, "error_message") == 0) return new brain_error{BRAIN_ERR_DRIVER_UNAVAILABLE};
    return nullptr;
}
brain_error* probe(int32_t, uint64_t, brain_device_report* out) {
    maybe_throw("probe");
    std::strcpy(out->name, "throwing device");
    out->total_memory_mib = -1;
    out->free_memory_mib = -1;
    return nullptr;
}
brain_error* capabilities(brain_capabilities* out) {
    maybe_throw("capabilities");
    out->activations = 0x7fu;
    out->losses = 0x7u;
    out->optimizers = 0x7u;
    out->precisions = 1u;
    out->max_devices = 1;
    return nullptr;
}
brain_error* session_open(const brain_session_desc*, brain_session** out) {
    maybe_throw("session_open");
    *out = new brain_session;
    return nullptr;
}
brain_error* train_epoch(brain_session* s, float* loss) {
    maybe_throw("session_train_epoch");
    s->epochs += 1;
    *loss = 0.5f;
    return nullptr;
}
brain_error* checkpoint(brain_session*, float* p, uint64_t np, float* o, uint64_t no, uint64_t* step) {
    maybe_throw("session_checkpoint");
    std::memset(p, 0, np * sizeof(float));
    std::memset(o, 0, no * sizeof(float));
    *step = 0;
    return nullptr;
}
brain_error* stats(const brain_session* s, brain_session_stats* out) {
    maybe_throw("session_stats");
    out->epochs = s->epochs;
    out->devices = 1;
    return nullptr;
}
void session_close(brain_session* s) {
    delete s;
    maybe_throw("session_close");
}

brain_plugin_api g_api;

} // namespace

extern "C" BRAIN_PLUGIN_EXPORT const brain_plugin_api* brain_plugin_get_api(void) {
    maybe_throw("brain_plugin_get_api");
    g_api.struct_size = sizeof g_api;
    g_api.abi_major = BRAIN_ABI_VERSION_MAJOR;
    g_api.abi_minor = BRAIN_ABI_VERSION_MINOR;
    g_api.name = THROWING_NAME;
    g_api.version = "0.0.0-test";
    g_api.description = "throwing test plugin";
    g_api.error_code = error_code;
    g_api.error_message = error_message;
    g_api.error_destroy = error_destroy;
    g_api.initialize = initialize;
    g_api.device_count = device_count;
    g_api.probe = probe;
    g_api.session_open = session_open;
    g_api.session_train_epoch = train_epoch;
    g_api.session_checkpoint = checkpoint;
    g_api.session_stats = stats;
    g_api.session_close = session_close;
    g_api.capabilities = capabilities;
    return &g_api;
}
