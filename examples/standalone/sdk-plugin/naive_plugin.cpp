// libbrain_naive.so: the ABI surface of the naive backend. Every entry point is wrapped in brain::sdk::guard, so
// nothing but a brain_error ever crosses back to the core; the training itself lives in naive_session.cpp.
#include "naive_session.hpp"

#include <brain/dense_math.hpp>
#include <brain/plugin_abi.h>
#include <brain/plugin_sdk.hpp>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>

#ifndef NAIVE_PLUGIN_VERSION
#define NAIVE_PLUGIN_VERSION "0.0.0"
#endif

// The ABI's opaque session is our C++ session.
struct brain_session final : public naive::Session {
    using Session::Session;
};

namespace {

using brain::sdk::Failure;
using brain::sdk::guard;

const brain_host_api* g_host = nullptr; // core-owned, outlives the plugin

void log_message(int32_t level, const std::string& message) {
    // Read only the fields the host's struct_size covers: an older core may pass a smaller table.
    if (g_host && g_host->struct_size >= offsetof(brain_host_api, log) + sizeof(g_host->log) && g_host->log)
        g_host->log(level, message.c_str());
}

void check_device(int32_t device) {
    if (device != 0)
        throw Failure(BRAIN_ERR_DEVICE_NOT_FOUND, "the naive backend has one device, 0; got device " +
                                                      std::to_string(device) + ". Use device 0");
}

std::int64_t total_memory_mib() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page / (1024 * 1024) : -1;
}

// MemAvailable in MiB, or -1 (unknown, never a fake zero).
std::int64_t free_memory_mib() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    std::int64_t kib = 0;
    while (in >> key >> kib) {
        if (key == "MemAvailable:") return kib / 1024;
        in.ignore(64, '\n');
    }
    return -1;
}

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

// Allocate the whole budget and touch every page, so that overcommit cannot make the answer a lie.
bool allocation_check(std::uint64_t budget, std::int64_t free_mib, std::string& notes) {
    if (budget == 0) return true;
    if (free_mib >= 0 && budget / (1024 * 1024) > static_cast<std::uint64_t>(free_mib)) {
        notes += "the budget exceeds the available host memory. ";
        return false;
    }
    std::unique_ptr<unsigned char, decltype(&std::free)> block(static_cast<unsigned char*>(std::malloc(budget)),
                                                               &std::free);
    if (!block) {
        notes += "allocating the budget of " + std::to_string(budget) + " bytes failed. ";
        return false;
    }
    volatile unsigned char* bytes = block.get();
    for (std::uint64_t i = 0; i < budget; i += 4096) bytes[i] = 1;
    return true;
}

brain_error* initialize(const brain_host_api* host) {
    return guard([&] {
        g_host = host;
        log_message(1, "naive plugin " NAIVE_PLUGIN_VERSION " ready");
    });
}

brain_error* device_count(int32_t* out_count) {
    return guard([&] {
        if (!out_count) throw Failure(BRAIN_ERR_INVALID_ARGUMENT, "device_count was given a null output pointer");
        *out_count = 1;
    });
}

brain_error* probe(int32_t device, uint64_t memory_budget_bytes, brain_device_report* out) {
    return guard([&] {
        check_device(device);
        brain_device_report report{};
        report.struct_size = sizeof(report);
        brain::sdk::copy_string(report.name, "naive single-threaded host trainer");
        brain::sdk::copy_string(report.revision, "host");
        report.total_memory_mib = total_memory_mib();
        report.free_memory_mib = free_memory_mib();
        std::string notes;
        report.gemm_available = gemm_check(notes);
        report.kernel_available = kernel_check(notes);
        report.allocation_test = allocation_check(memory_budget_bytes, report.free_memory_mib, notes);
        brain::sdk::copy_string(report.notes, notes);
        brain::sdk::write_struct(out, report);
    });
}

brain_error* session_open(const brain_session_desc* desc, brain_session** out_session) {
    return guard([&] {
        if (!out_session) throw Failure(BRAIN_ERR_INVALID_ARGUMENT, "session_open was given a null output pointer");
        *out_session = nullptr;
        const brain_session_desc copy = brain::sdk::read_struct(desc);
        *out_session = new brain_session(copy);
    });
}

brain_error* session_train_epoch(brain_session* session, float* out_loss) {
    return guard([&] {
        if (!session || !out_loss)
            throw Failure(BRAIN_ERR_INVALID_ARGUMENT, "train_epoch was given a null pointer");
        *out_loss = session->train_epoch();
    });
}

brain_error* session_checkpoint(brain_session* session, float* parameters, uint64_t parameter_count,
                                float* optimizer_state, uint64_t optimizer_state_count, uint64_t* out_step) {
    return guard([&] {
        if (!session) throw Failure(BRAIN_ERR_INVALID_ARGUMENT, "checkpoint was given a null session");
        session->checkpoint(parameters, parameter_count, optimizer_state, optimizer_state_count, out_step);
    });
}

brain_error* session_stats(const brain_session* session, brain_session_stats* out) {
    return guard([&] {
        if (!session) throw Failure(BRAIN_ERR_INVALID_ARGUMENT, "session_stats was given a null session");
        brain::sdk::write_struct(out, session->stats());
    });
}

void session_close(brain_session* session) {
    delete session;
} // deleting NULL is a no-op, as the ABI asks

} // namespace

extern "C" BRAIN_PLUGIN_EXPORT const brain_plugin_api* brain_plugin_get_api(void) {
    static const brain_plugin_api api = [] {
        brain_plugin_api table{};
        table.struct_size = sizeof(table);
        table.abi_major = BRAIN_ABI_VERSION_MAJOR;
        table.abi_minor = BRAIN_ABI_VERSION_MINOR;
        table.name = "naive"; // must match the file name libbrain_naive.so
        table.version = NAIVE_PLUGIN_VERSION;
        table.description = "naive single-threaded C++ reference backend (brain SDK example)";
        table.error_code = brain::sdk::error_code;
        table.error_message = brain::sdk::error_message;
        table.error_destroy = brain::sdk::error_destroy;
        table.initialize = initialize;
        table.device_count = device_count;
        table.probe = probe;
        table.session_open = session_open;
        table.session_train_epoch = session_train_epoch;
        table.session_checkpoint = session_checkpoint;
        table.session_stats = session_stats;
        table.session_close = session_close;
        return table;
    }();
    return &api;
}
