// The Metal backend's ABI surface. This build has no Metal implementation: the plugin loads and initialises
// (so `brain plugins` lists it), and every device operation reports BRAIN_ERR_FEATURE_DISABLED with the
// chapter's MetalFeatureDisabled message, naming the system it runs on and what to use instead.
#include <brain/backend_capabilities.hpp>
#include <brain/plugin_abi.h>
#include <brain/plugin_sdk.hpp>
#include <brain/plugin_table.hpp>
#include <cstdint>
#include <string>
#include <sys/utsname.h>

#ifndef BRAIN_METAL_PLUGIN_VERSION
#define BRAIN_METAL_PLUGIN_VERSION "0.0.0"
#endif

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

struct MetalBackend {
    static constexpr const char* name = "metal";
    static constexpr const char* version = BRAIN_METAL_PLUGIN_VERSION;
    static constexpr const char* description =
        "Metal backend (Apple systems only; this build reports MetalFeatureDisabled)";

    // What the Metal backend is defined to run (the ABI 1.0 set, float32), as a plugin without a device still
    // states: having no device here is device_count's answer (MetalFeatureDisabled), not a missing feature.
    static brain_capabilities capabilities() { return sdk::abi_1_0_capabilities(); }

    // Having no device is not an error at load time: device_count and probe say why there is none.
    static std::int32_t device_count() { feature_disabled(); }
    static brain_device_report probe(std::int32_t, std::uint64_t) { feature_disabled(); }

    // No session ever opens: the constructor refuses, so no other member can be reached.
    struct Session {
        explicit Session(const brain_session_desc&) { feature_disabled(); }
        float train_epoch() { feature_disabled(); }
        void checkpoint(float*, std::uint64_t, float*, std::uint64_t, std::uint64_t*) { feature_disabled(); }
        brain_session_stats stats() const { feature_disabled(); }
    };
};

} // namespace
} // namespace brain::metal

extern "C" BRAIN_PLUGIN_EXPORT const brain_plugin_api* brain_plugin_get_api(void) {
    return brain::sdk::plugin_table<brain::metal::MetalBackend>();
}
