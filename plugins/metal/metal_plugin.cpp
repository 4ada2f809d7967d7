// The Metal backend's ABI surface. This build has no Metal implementation: the plugin loads and initialises
// (so `brain plugins` lists it), and every device operation reports BRAIN_ERR_FEATURE_DISABLED with the
// chapter's MetalFeatureDisabled message, naming the system it runs on and what to use instead.
#include <brain/plugin_abi.h>
#include <brain/plugin_sdk.hpp>
#include <string>
#include <sys/utsname.h>

#ifndef BRAIN_METAL_PLUGIN_VERSION
#define BRAIN_METAL_PLUGIN_VERSION "0.0.0"
#endif

// No session can ever be opened; the type exists only so the table's signatures are complete.
struct brain_session {};

namespace brain::metal {
namespace {

using sdk::Failure;

// "Linux x86_64", from the running kernel rather than the build machine.
std::string system_description() {
    utsname name{};
    if (uname(&name) != 0) return "an unknown system";
    return std::string(name.sysname) + " " + name.machine;
}

[[noreturn]] void feature_disabled() {
#if defined(__APPLE__)
    throw Failure(BRAIN_ERR_FEATURE_DISABLED,
                  "MetalFeatureDisabled: this build of the Metal plugin was compiled without a Metal "
                  "implementation (" +
                      system_description() +
                      ") — use TrainingBackend::cpu() here, or a build of brain with the Metal backend");
#else
    throw Failure(BRAIN_ERR_FEATURE_DISABLED,
                  "MetalFeatureDisabled: the Metal backend exists only on Apple systems (macOS, Apple silicon); "
                  "this is " +
                      system_description() + " — use TrainingBackend::cpu() or cuda(...) here");
#endif
}

[[noreturn]] void no_session(const char* operation) {
    throw Failure(BRAIN_ERR_INVALID_STATE, std::string("cannot ") + operation +
                                               ": no Metal session exists (session_open reports "
                                               "MetalFeatureDisabled on this system)");
}

brain_error* initialize(const brain_host_api*) {
    return nullptr; // having no device is not an error at load time
}

brain_error* device_count(int32_t* out_count) {
    return sdk::guard([&] {
        if (out_count) *out_count = 0;
        feature_disabled();
    });
}

brain_error* probe(int32_t, uint64_t, brain_device_report*) {
    return sdk::guard([] { feature_disabled(); });
}

brain_error* session_open(const brain_session_desc*, brain_session** out_session) {
    return sdk::guard([&] {
        if (out_session) *out_session = nullptr;
        feature_disabled();
    });
}

brain_error* session_train_epoch(brain_session*, float*) {
    return sdk::guard([] { no_session("train an epoch"); });
}

brain_error* session_checkpoint(brain_session*, float*, uint64_t, float*, uint64_t, uint64_t*) {
    return sdk::guard([] { no_session("take a checkpoint"); });
}

brain_error* session_stats(const brain_session*, brain_session_stats*) {
    return sdk::guard([] { no_session("read session statistics"); });
}

brain_error* session_set_learning_rate(brain_session*, float) {
    return sdk::guard([] { no_session("change the learning rate"); });
}

void session_close(brain_session*) {}

const brain_plugin_api api = [] {
    brain_plugin_api table{};
    table.struct_size = sizeof(brain_plugin_api);
    table.abi_major = BRAIN_ABI_VERSION_MAJOR;
    table.abi_minor = BRAIN_ABI_VERSION_MINOR;
    table.name = "metal";
    table.version = BRAIN_METAL_PLUGIN_VERSION;
    table.description = "Metal backend (Apple systems only; this build reports MetalFeatureDisabled)";
    table.error_code = &sdk::error_code;
    table.error_message = &sdk::error_message;
    table.error_destroy = &sdk::error_destroy;
    table.initialize = &initialize;
    table.device_count = &device_count;
    table.probe = &probe;
    table.session_open = &session_open;
    table.session_train_epoch = &session_train_epoch;
    table.session_checkpoint = &session_checkpoint;
    table.session_stats = &session_stats;
    table.session_close = &session_close;
    table.session_set_learning_rate = &session_set_learning_rate;
    return table;
}();

} // namespace
} // namespace brain::metal

extern "C" BRAIN_PLUGIN_EXPORT const brain_plugin_api* brain_plugin_get_api(void) {
    return &brain::metal::api;
}
