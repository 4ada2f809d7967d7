// The entry point of libbrain_cuda.so: the ABI table, each entry wrapped in sdk::guard so no exception crosses.
#include "cuda_device.hpp"
#include "cuda_errors.hpp"
#include "cuda_plugin_log.hpp"
#include "cuda_session.hpp"
#include "kernel_compiler.hpp"

#include <atomic>
#include <brain/plugin_sdk.hpp>

// The opaque session of the ABI is the C++ session.
struct brain_session {
    brain::cuda::CudaSession impl;
};

namespace brain::cuda {

namespace {

std::atomic<const brain_host_api*> g_host{nullptr};

brain_error* initialize(const brain_host_api* host) {
    return sdk::guard([&] {
        if (!host) fail(BRAIN_ERR_INVALID_ARGUMENT, "initialize was given a null host table");
        set_host(host);
        // Having no driver or device is not an error here: device_count says why there are none.
        int runtime_version = 0;
        (void)cudaRuntimeGetVersion(&runtime_version);
        int nvrtc_major = 0, nvrtc_minor = 0;
        check_nvrtc(nvrtcVersion(&nvrtc_major, &nvrtc_minor), "nvrtcVersion");
        log_message(1, "cuda plugin: runtime " + std::to_string(runtime_version) + ", NVRTC " +
                           std::to_string(nvrtc_major) + "." + std::to_string(nvrtc_minor));
    });
}

brain_error* device_count_entry(int32_t* out_count) {
    return sdk::guard([&] {
        if (!out_count) fail(BRAIN_ERR_INVALID_ARGUMENT, "device_count was given a null output pointer");
        *out_count = 0;
        *out_count = device_count();
    });
}

brain_error* probe(int32_t device, uint64_t memory_budget_bytes, brain_device_report* out) {
    return sdk::guard([&] {
        if (!out) fail(BRAIN_ERR_INVALID_ARGUMENT, "probe was given a null report pointer");
        const brain_device_report report = probe_device(device, memory_budget_bytes);
        sdk::write_struct(out, report);
    });
}

brain_error* session_open(const brain_session_desc* desc, brain_session** out_session) {
    return sdk::guard([&] {
        if (!out_session) fail(BRAIN_ERR_INVALID_ARGUMENT, "session_open was given a null output pointer");
        *out_session = nullptr;
        const brain_session_desc d = sdk::read_struct(desc);
        *out_session = new brain_session{CudaSession(d)};
    });
}

brain_error* session_train_epoch(brain_session* session, float* out_loss) {
    return sdk::guard([&] {
        if (!session || !out_loss) fail(BRAIN_ERR_INVALID_ARGUMENT, "session_train_epoch was given a null pointer");
        *out_loss = session->impl.train_epoch();
    });
}

brain_error* session_checkpoint(brain_session* session, float* parameters, uint64_t parameter_count,
                                float* optimizer_state, uint64_t optimizer_state_count, uint64_t* out_step) {
    return sdk::guard([&] {
        if (!session) fail(BRAIN_ERR_INVALID_ARGUMENT, "session_checkpoint was given a null session");
        session->impl.checkpoint(parameters, parameter_count, optimizer_state, optimizer_state_count, out_step);
    });
}

brain_error* session_stats(const brain_session* session, brain_session_stats* out) {
    return sdk::guard([&] {
        if (!session) fail(BRAIN_ERR_INVALID_ARGUMENT, "session_stats was given a null session");
        sdk::write_struct(out, session->impl.stats());
    });
}

brain_error* session_set_learning_rate(brain_session* session, float learning_rate) {
    return sdk::guard([&] {
        if (!session) fail(BRAIN_ERR_INVALID_ARGUMENT, "session_set_learning_rate was given a null session");
        session->impl.set_learning_rate(learning_rate);
    });
}

void session_close(brain_session* session) {
    delete session;
}

const brain_plugin_api g_api = {
    sizeof(brain_plugin_api),
    BRAIN_ABI_VERSION_MAJOR,
    BRAIN_ABI_VERSION_MINOR,
    "cuda",
    "0.1.0",
    "NVIDIA GPUs through the CUDA runtime (static), cuBLAS and NVRTC, built against "
    "CUDA " BRAIN_CUDA_TOOLKIT_VERSION,
    sdk::error_code,
    sdk::error_message,
    sdk::error_destroy,
    initialize,
    device_count_entry,
    probe,
    session_open,
    session_train_epoch,
    session_checkpoint,
    session_stats,
    session_close,
    session_set_learning_rate,
};

} // namespace

void set_host(const brain_host_api* host) noexcept {
    g_host.store(host);
}

void log_message(int level, const std::string& message) noexcept {
    const brain_host_api* host = g_host.load();
    if (host && host->log) host->log(level, message.c_str());
}

} // namespace brain::cuda

extern "C" BRAIN_PLUGIN_EXPORT const brain_plugin_api* brain_plugin_get_api(void) {
    return &brain::cuda::g_api;
}
