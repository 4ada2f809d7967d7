// The CPU backend's ABI surface: the function table, device enumeration and probing. Training lives in
// cpu_session.cpp; every entry point here only validates pointers and forwards inside sdk::guard.
#include "blas_library.hpp"
#include "cpu_kernels.hpp"
#include "cpu_session.hpp"
#include "host_buffer.hpp"
#include "worker_pool.hpp"

#include <brain/plugin_abi.h>
#include <brain/plugin_sdk.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <unistd.h>

#ifndef BRAIN_CPU_PLUGIN_VERSION
#define BRAIN_CPU_PLUGIN_VERSION "0.0.0"
#endif

// The opaque session of the ABI is the C++ session itself.
struct brain_session final : public brain::cpu::CpuSession {
    using CpuSession::CpuSession;
};

namespace brain::cpu {
namespace {

using sdk::Failure;

const brain_host_api* g_host = nullptr;

void log_message(int32_t level, const std::string& message) {
    if (g_host && g_host->struct_size >= offsetof(brain_host_api, log) + sizeof(g_host->log) && g_host->log)
        g_host->log(level, message.c_str());
}

std::string trimmed(std::string text) {
    const auto first = text.find_first_not_of(" \t\n");
    if (first == std::string::npos) return {};
    const auto last = text.find_last_not_of(" \t\n");
    return text.substr(first, last - first + 1);
}

void check_device(int32_t device) {
    if (device != 0)
        throw Failure(BRAIN_ERR_DEVICE_NOT_FOUND,
                      "the CPU backend has one device, 0; got " + std::to_string(device));
}

// The value of "key : value" in /proc/cpuinfo or "Key: value kB" in /proc/meminfo; empty when absent.
std::string proc_field(const char* file, const std::string& key) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        if (trimmed(line.substr(0, colon)) == key) return trimmed(line.substr(colon + 1));
    }
    return {};
}

std::string cpu_model_name() {
    for (const char* key : {"model name", "Model", "Hardware", "cpu model"}) {
        std::string name = proc_field("/proc/cpuinfo", key);
        if (!name.empty()) return name;
    }
    return "unknown CPU";
}

// MemAvailable in MiB, or -1 when the kernel does not report it.
std::int64_t available_memory_mib() {
    const std::string field = proc_field("/proc/meminfo", "MemAvailable");
    if (field.empty()) return -1;
    try {
        return static_cast<std::int64_t>(std::stoull(field) / 1024); // the field is in kB
    } catch (const std::exception&) {
        return -1;
    }
}

std::int64_t total_memory_mib() {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) return -1;
    return static_cast<std::int64_t>(static_cast<unsigned long long>(pages) *
                                     static_cast<unsigned long long>(page_size) / (1024ull * 1024ull));
}

// A real 2x3 by 3x2 product through OpenBLAS against its known answer.
bool gemm_check(std::string& notes) {
    const float a[6] = {1, 2, 3, 4, 5, 6};
    const float b[6] = {7, 8, 9, 10, 11, 12};
    const float expected[4] = {58, 64, 139, 154};
    float c[4] = {-1, -1, -1, -1};
    blas().sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2);
    for (int i = 0; i < 4; ++i) {
        if (c[i] != expected[i]) {
            notes += "OpenBLAS sgemm returned " + std::to_string(c[i]) + " instead of " +
                     std::to_string(expected[i]) + " for element " + std::to_string(i) +
                     " of a 2x3 by 3x2 check product. ";
            return false;
        }
    }
    return true;
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

// Allocate the whole budget and touch every page, so that overcommit cannot make the answer a lie.
bool allocation_check(std::uint64_t budget, std::int64_t available_mib, std::string& notes) {
    if (budget == 0) return true; // the CPU backend runs without a budget: nothing to reserve
    const std::uint64_t budget_mib = (budget + (1u << 20) - 1) >> 20;
    if (available_mib >= 0 && budget_mib > static_cast<std::uint64_t>(available_mib)) {
        notes += "the budget of " + std::to_string(budget_mib) + " MiB exceeds the " +
                 std::to_string(available_mib) +
                 " MiB of available host memory (MemAvailable); lower the budget or free memory. ";
        return false;
    }
    std::unique_ptr<unsigned char, decltype(&std::free)> block(
        static_cast<unsigned char*>(std::malloc(static_cast<std::size_t>(budget))), &std::free);
    if (!block) {
        notes += "allocating the budget of " + std::to_string(budget) + " bytes of host memory failed. ";
        return false;
    }
    const long page = sysconf(_SC_PAGE_SIZE) > 0 ? sysconf(_SC_PAGE_SIZE) : 4096;
    volatile unsigned char* bytes = block.get();
    for (std::uint64_t i = 0; i < budget; i += static_cast<std::uint64_t>(page)) bytes[i] = 1;
    bytes[budget - 1] = 1;
    return true;
}

brain_error* initialize(const brain_host_api* host) {
    return sdk::guard([&] {
        g_host = host;
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
        log_message(1, "cpu plugin: " + lib.summary() + "; sessions train on " +
                           std::to_string(configured_thread_count()) + " thread(s)");
    });
}

brain_error* device_count(int32_t* out_count) {
    return sdk::guard([&] {
        if (!out_count) throw Failure(BRAIN_ERR_INVALID_ARGUMENT, "device_count was given a null output pointer");
        *out_count = 1;
    });
}

brain_error* probe(int32_t device, uint64_t memory_budget_bytes, brain_device_report* out) {
    return sdk::guard([&] {
        if (!out) throw Failure(BRAIN_ERR_INVALID_ARGUMENT, "probe was given a null report pointer");
        check_device(device);
        brain_device_report report{};
        report.struct_size = sizeof(report);
        sdk::copy_string(report.name, cpu_model_name());
        sdk::copy_string(report.revision, "cpu");
        report.total_memory_mib = total_memory_mib();
        report.free_memory_mib = available_memory_mib();
        std::string notes;
        report.gemm_available = gemm_check(notes) ? 1 : 0;
        report.kernel_available = kernel_check(notes) ? 1 : 0;
        report.allocation_test = allocation_check(memory_budget_bytes, report.free_memory_mib, notes) ? 1 : 0;
        sdk::copy_string(report.notes, trimmed(notes));
        sdk::write_struct(out, report);
    });
}

brain_error* session_open(const brain_session_desc* desc, brain_session** out_session) {
    return sdk::guard([&] {
        if (!out_session)
            throw Failure(BRAIN_ERR_INVALID_ARGUMENT, "session_open was given a null output session pointer");
        *out_session = nullptr;
        const brain_session_desc copy = sdk::read_struct(desc);
        *out_session = new brain_session(copy);
    });
}

brain_session* require_session(brain_session* session, const char* operation) {
    if (!session)
        throw Failure(BRAIN_ERR_INVALID_STATE,
                      std::string("cannot ") + operation + " on a null CPU session; open one with session_open");
    return session;
}

brain_error* session_train_epoch(brain_session* session, float* out_loss) {
    return sdk::guard([&] {
        require_session(session, "train an epoch");
        if (!out_loss)
            throw Failure(BRAIN_ERR_INVALID_ARGUMENT, "session_train_epoch was given a null loss pointer");
        *out_loss = session->train_epoch();
    });
}

brain_error* session_checkpoint(brain_session* session, float* parameters, uint64_t parameter_count,
                                float* optimizer_state, uint64_t optimizer_state_count, uint64_t* out_step) {
    return sdk::guard([&] {
        require_session(session, "take a checkpoint");
        session->checkpoint(parameters, parameter_count, optimizer_state, optimizer_state_count, out_step);
    });
}

brain_error* session_stats(const brain_session* session, brain_session_stats* out) {
    return sdk::guard([&] {
        if (!session) throw Failure(BRAIN_ERR_INVALID_STATE, "cannot read statistics of a null CPU session");
        sdk::write_struct(out, session->stats());
    });
}

brain_error* session_set_learning_rate(brain_session* session, float learning_rate) {
    return sdk::guard([&] {
        require_session(session, "change the learning rate");
        session->set_learning_rate(learning_rate);
    });
}

void session_close(brain_session* session) {
    delete session;
}

const brain_plugin_api* plugin_api() {
    static const std::string description = [] {
        try {
            return "reference CPU backend, " + blas().config();
        } catch (const std::exception& e) {
            return std::string("reference CPU backend (OpenBLAS unavailable: ") + e.what() + ")";
        }
    }();
    static const brain_plugin_api api = [] {
        brain_plugin_api table{};
        table.struct_size = sizeof(brain_plugin_api);
        table.abi_major = BRAIN_ABI_VERSION_MAJOR;
        table.abi_minor = BRAIN_ABI_VERSION_MINOR;
        table.name = "cpu";
        table.version = BRAIN_CPU_PLUGIN_VERSION;
        table.description = description.c_str();
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
    return &api;
}

} // namespace
} // namespace brain::cpu

extern "C" BRAIN_PLUGIN_EXPORT const brain_plugin_api* brain_plugin_get_api(void) {
    try {
        return brain::cpu::plugin_api();
    } catch (...) {
        return nullptr; // the ABI's "cannot run at all"
    }
}
