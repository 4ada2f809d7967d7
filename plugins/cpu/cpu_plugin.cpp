// The CPU backend's ABI surface: the backend class the SDK builds the function table from, and the probe's real
// checks. Training lives in cpu_session.cpp.
#include "blas_library.hpp"
#include "cpu_kernels.hpp"
#include "cpu_predictor.hpp"
#include "cpu_session.hpp"
#include "gemm.hpp"
#include "worker_pool.hpp"

#include <brain/backend_capabilities.hpp>
#include <brain/host_probe.hpp>
#include <brain/plugin_abi.h>
#include <brain/plugin_sdk.hpp>
#include <brain/plugin_table.hpp>
#include <cmath>
#include <cstdlib>
#include <string>

#ifndef BRAIN_CPU_PLUGIN_VERSION
#define BRAIN_CPU_PLUGIN_VERSION "0.0.0"
#endif

namespace brain::cpu {
namespace {

using sdk::Failure;

std::string cpu_model_name() {
    for (const char* key : {"model name", "Model", "Hardware", "cpu model"}) {
        std::string name = sdk::proc_field("/proc/cpuinfo", key);
        if (!name.empty()) return name;
    }
    return "unknown CPU";
}

// A real 2x3 by 3x2 product through each library the sessions use against its known answer.
bool gemm_check(std::string& notes) {
    const float a[6] = {1, 2, 3, 4, 5, 6};
    const float b[6] = {7, 8, 9, 10, 11, 12};
    const float expected[4] = {58, 64, 139, 154};
    const auto compare = [&](const float* c, const char* library) {
        for (int i = 0; i < 4; ++i)
            if (c[i] != expected[i]) {
                notes += std::string(library) + " sgemm returned " + std::to_string(c[i]) + " instead of " +
                         std::to_string(expected[i]) + " for element " + std::to_string(i) +
                         " of a 2x3 by 3x2 check product. ";
                return false;
            }
        return true;
    };
    float c[4] = {-1, -1, -1, -1};
    blas().sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2);
    bool ok = compare(c, "OpenBLAS");
    GemmChoice choice = GemmChoice::Auto;
    try {
        choice = gemm_choice();
    } catch (const Failure& e) {
        notes += std::string(e.what()) + ". ";
        return false;
    }
    const OnednnLibrary& dnnl = onednn();
    if (dnnl.available() && choice != GemmChoice::OpenBlas) {
        float d[4] = {-1, -1, -1, -1};
        const int status = dnnl.gemm(false, false, 2, 2, 3, a, 3, b, 2, d, 2);
        if (status != 0) {
            notes += "oneDNN sgemm failed (dnnl_status_t " + std::to_string(status) +
                     ") on a 2x3 by 3x2 check product. ";
            ok = false;
        } else {
            ok = compare(d, "oneDNN") && ok;
        }
    }
    return ok;
}

// The element-wise training kernels on values with known results (relu, sigmoid, the Adam update).
bool kernel_check(std::string& notes) {
    float z[4] = {-1.5f, 0.5f, -0.25f, 2.0f};
    float a[4] = {};
    const float bias[2] = {0.5f, -0.5f};
    bias_activation(BRAIN_ACT_RELU, 0.0f, bias, z, a, 2, 2); // z = {-1, 0, 0.25, 1.5}
    const float relu_expected[4] = {0.0f, 0.0f, 0.25f, 1.5f};
    for (int i = 0; i < 4; ++i)
        if (a[i] != relu_expected[i]) {
            notes += "the fused bias + ReLU kernel gave " + std::to_string(a[i]) + " instead of " +
                     std::to_string(relu_expected[i]) + ". ";
            return false;
        }
    float zs[2] = {0.0f, 0.0f};
    float s[2] = {};
    const float zero_bias[2] = {0.0f, 0.0f};
    bias_activation(BRAIN_ACT_SIGMOID, 0.0f, zero_bias, zs, s, 1, 2);
    if (s[0] != 0.5f || s[1] != 0.5f) {
        notes += "the sigmoid kernel gave " + std::to_string(s[0]) + " for sigmoid(0) instead of 0.5. ";
        return false;
    }
    // First Adam step with g = 1: m = 0.1, v = 0.001, corrected 1 and 1, so p moves by lr / (1 + eps).
    float p = 1.0f, g = 1.0f, m = 0.0f, v = 0.0f;
    adam_step(&p, &g, &m, &v, 1, make_adam_step(0.5f, 0.9f, 0.999f, 0.0f, 0.0f, false, 1));
    if (std::fabs(p - 0.5f) > 1e-6f) {
        notes += "the Adam kernel moved a parameter from 1 to " + std::to_string(p) + " instead of 0.5. ";
        return false;
    }
    return true;
}

struct CpuBackend {
    static constexpr const char* name = "cpu";
    static constexpr const char* version = BRAIN_CPU_PLUGIN_VERSION;
    using Session = CpuSession;
    using Predictor = CpuPredictor;

    static std::string description() {
        try {
            return "reference CPU backend, " + blas().config() + "; " + gemm_summary();
        } catch (const std::exception& e) {
            return std::string("reference CPU backend (OpenBLAS unavailable: ") + e.what() + ")";
        }
    }

    static void initialize(const brain_host_api&) {
        const BlasLibrary& lib = blas();
        if (const char* text = std::getenv("BRAIN_CPU_THREADS"); text && *text) {
            char* end = nullptr;
            const long threads = std::strtol(text, &end, 10);
            if (*end != '\0' || threads < 1 || threads > 4096)
                throw Failure(BRAIN_ERR_INVALID_ARGUMENT,
                              std::string("BRAIN_CPU_THREADS must be a whole number from 1 to 4096; got '") + text +
                                  "': fix or unset it (OPENBLAS_NUM_THREADS is honoured when it is unset)");
        }
        // Sessions split every product across their own threads (worker_pool.hpp), each calling OpenBLAS
        // single-threaded: cheaper than OpenBLAS's hand-off on the batch-sized products of dense training.
        lib.set_num_threads(1);
        sdk::log(1, "cpu plugin: " + lib.summary() + "; " + gemm_summary() + "; sessions train on " +
                        std::to_string(configured_thread_count()) + " thread(s)");
    }

    // Every activation, loss and optimizer; float32 products only.
    static brain_capabilities capabilities() {
        brain_capabilities caps = sdk::abi_1_0_capabilities();
        caps.features |= BRAIN_FEATURE_BATCH_SOURCE; // streamed rows: the session fetches each batch
        sdk::copy_string(caps.notes, "matrix products in float32 only: TF32 and BF16 are tensor-core modes of the "
                                     "cuda backend");
        return caps;
    }

    static std::int32_t device_count() { return 1; }

    static brain_device_report probe(std::int32_t device, std::uint64_t memory_budget_bytes) {
        if (device != 0)
            throw Failure(BRAIN_ERR_DEVICE_NOT_FOUND,
                          "the CPU backend has one device, 0; got " + std::to_string(device));
        brain_device_report report{};
        sdk::copy_string(report.name, cpu_model_name());
        sdk::copy_string(report.revision, "cpu");
        report.total_memory_mib = sdk::host_total_memory_mib();
        report.free_memory_mib = sdk::host_available_memory_mib();
        std::string notes;
        report.gemm_available = gemm_check(notes) ? 1 : 0;
        report.kernel_available = kernel_check(notes) ? 1 : 0;
        report.allocation_test =
            sdk::host_allocation_test(memory_budget_bytes, report.free_memory_mib, notes) ? 1 : 0;
        sdk::copy_string(report.notes, sdk::trimmed(notes));
        sdk::copy_string(report.gemm_check, onednn().available()
                                                ? "OpenBLAS and oneDNN sgemm, a 2x3 by 3x2 product each"
                                                : "OpenBLAS sgemm, a 2x3 by 3x2 product");
        sdk::copy_string(report.kernel_check, "bias + ReLU, sigmoid and Adam kernels");
        sdk::copy_string(report.allocation_check, sdk::host_allocation_label(memory_budget_bytes));
        return report;
    }
};

} // namespace
} // namespace brain::cpu

extern "C" BRAIN_PLUGIN_EXPORT const brain_plugin_api* brain_plugin_get_api(void) {
    return brain::sdk::plugin_table<brain::cpu::CpuBackend>();
}
