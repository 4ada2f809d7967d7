// libbrain_naive.so: the ABI surface of the naive backend. brain/plugin_table.hpp builds the function table from
// NaiveBackend below, wrapping every entry in brain::sdk::guard so that nothing but a brain_error ever crosses
// back to the core; the training itself lives in naive_session.cpp.
#include "naive_session.hpp"

#include <brain/dense_math.hpp>
#include <brain/host_probe.hpp>
#include <brain/plugin_abi.h>
#include <brain/plugin_sdk.hpp>
#include <brain/plugin_table.hpp>
#include <string>

#ifndef NAIVE_PLUGIN_VERSION
#define NAIVE_PLUGIN_VERSION "0.0.0"
#endif

namespace {

// The backend's own product on a 2x3 by 3x2 case with a known answer.
bool gemm_check(std::string& notes) {
    const float x[6] = {1, 2, 3, 4, 5, 6};
    const float w[6] = {7, 9, 11, 8, 10, 12}; // W is outputs x inputs: the transpose of B
    const float b[2] = {0, 0};
    const float expected[4] = {58, 64, 139, 154};
    float z[4] = {};
    naive::dense_forward(x, w, b, z, 2, 3, 2);
    for (int i = 0; i < 4; ++i)
        if (z[i] != expected[i]) {
            notes += "the dense product gave " + std::to_string(z[i]) + " instead of " +
                     std::to_string(expected[i]) + ". ";
            return false;
        }
    return true;
}

// The activation code the trainer runs, on values with known results.
bool kernel_check(std::string& notes) {
    const float z[3] = {-1.0f, 0.0f, 2.0f};
    float a[3] = {};
    brain::math::activate_row(BRAIN_ACT_RELU, z, a, 3, 0.0f);
    const bool relu_ok = a[0] == 0.0f && a[1] == 0.0f && a[2] == 2.0f;
    brain::math::activate_row(BRAIN_ACT_SIGMOID, z, a, 3, 0.0f);
    if (!relu_ok || a[1] != 0.5f) {
        notes += "the activation check failed (ReLU or sigmoid(0) = 0.5). ";
        return false;
    }
    return true;
}

struct NaiveBackend {
    static constexpr const char* name = "naive"; // must match the file name libbrain_naive.so
    static constexpr const char* version = NAIVE_PLUGIN_VERSION;
    static constexpr const char* description = "naive single-threaded C++ reference backend (brain SDK example)";
    using Session = naive::Session;

#if BRAIN_ABI_VERSION_MINOR >= 2 // the capabilities entry arrived in ABI 1.2
    static brain_capabilities capabilities() {
        return naive::capabilities();
    }
#endif

    static void initialize(const brain_host_api&) {
        brain::sdk::log(1, "naive plugin " NAIVE_PLUGIN_VERSION " ready");
    }

    static std::int32_t device_count() { return 1; }

    static brain_device_report probe(std::int32_t device, std::uint64_t memory_budget_bytes) {
        if (device != 0)
            brain::sdk::fail(BRAIN_ERR_DEVICE_NOT_FOUND, "the naive backend has one device, 0; got device ", device,
                             ". Use device 0");
        if constexpr (naive::defect == naive::Defect::CrashesInProbe) {
            static volatile int* volatile nowhere = nullptr;
            *nowhere = 1;
        }
        brain_device_report report{};
        brain::sdk::copy_string(report.name, "naive single-threaded host trainer");
        brain::sdk::copy_string(report.revision, "host");
        report.total_memory_mib = brain::sdk::host_total_memory_mib();
        report.free_memory_mib = brain::sdk::host_available_memory_mib();
        std::string notes;
        report.gemm_available = gemm_check(notes);
        report.kernel_available = kernel_check(notes);
        report.allocation_test =
            brain::sdk::host_allocation_test(memory_budget_bytes, report.free_memory_mib, notes);
        brain::sdk::copy_string(report.notes, notes);
#if BRAIN_ABI_VERSION_MINOR >= 2 // the checks' labels arrived in ABI 1.2
        brain::sdk::copy_string(report.gemm_check, "naive dense product, a 2x3 by 3x2 case");
        brain::sdk::copy_string(report.kernel_check, "ReLU and sigmoid of dense_math.hpp");
        brain::sdk::copy_string(report.allocation_check, brain::sdk::host_allocation_label(memory_budget_bytes));
#endif
        return report;
    }
};

} // namespace

extern "C" BRAIN_PLUGIN_EXPORT const brain_plugin_api* brain_plugin_get_api(void) {
    return brain::sdk::plugin_table<NaiveBackend>();
}
