// The entry point of libbrain_cuda.so: the backend class the SDK builds the ABI table from (plugin_table.hpp).
#include "backend_session.hpp"
#include "cuda_device.hpp"
#include "cuda_errors.hpp"
#include "cuda_plugin_log.hpp"
#include "cuda_predictor.hpp"
#include "cuda_session.hpp"
#include "host_pinning.hpp"
#include "kernel_compiler.hpp"

#include <brain/plugin_sdk.hpp>
#include <brain/plugin_table.hpp>

namespace brain::cuda {

namespace {

struct CudaBackend {
    static constexpr const char* name = "cuda";
    static constexpr const char* version = "0.1.0";
    static constexpr const char* description =
        "NVIDIA GPUs through the CUDA runtime (static), cuBLAS and NVRTC, built against CUDA " BRAIN_CUDA_TOOLKIT_VERSION;
    using Session = BackendSession;
    using Predictor = CudaPredictor;

    // Having no driver or device is not an error here: device_count says why there are none.
    static void initialize(const brain_host_api&) {
        int runtime_version = 0;
        (void)cudaRuntimeGetVersion(&runtime_version);
        int nvrtc_major = 0, nvrtc_minor = 0;
        check_nvrtc(nvrtcVersion(&nvrtc_major, &nvrtc_minor), "nvrtcVersion");
        log_message(1, "cuda plugin: runtime " + std::to_string(runtime_version) + ", NVRTC " +
                           std::to_string(nvrtc_major) + "." + std::to_string(nvrtc_minor));
    }
    static brain_capabilities capabilities() { return backend_capabilities(); }
    static std::int32_t device_count() { return cuda::device_count(); }
    static brain_device_report probe(std::int32_t device, std::uint64_t budget) { return probe_device(device, budget); }
    static void pin_host_memory(void* memory, std::uint64_t bytes) { cuda::pin_host_memory(memory, bytes); }
    static void unpin_host_memory(void* memory) noexcept { cuda::unpin_host_memory(memory); }
};

} // namespace

brain_capabilities backend_capabilities() noexcept {
    // Every activation, loss and optimizer of ABI 1.0; float32, TF32 products and bf16 mixed precision.
    brain_capabilities caps = sdk::abi_1_0_capabilities();
    caps.precisions = sdk::capability_bit(BRAIN_PRECISION_FLOAT32) | sdk::capability_bit(BRAIN_PRECISION_TF32) |
                      sdk::capability_bit(BRAIN_PRECISION_BF16);
    // Data parallelism over NCCL, opened when a session asks for it (nccl_library.hpp).
    caps.features |= BRAIN_FEATURE_MULTI_DEVICE;
    caps.max_devices = max_data_parallel_devices;
    caps.features |= BRAIN_FEATURE_BATCH_SOURCE; // streamed rows take the staged path (session_data.cpp)
    // The predictor checks its inputs with a kernel per part (cuda_predictor.cpp).
    caps.features |= BRAIN_FEATURE_PREDICT_CHECKS_INPUTS;
    return caps;
}

void log_message(int level, const std::string& message) noexcept {
    sdk::log(level, message);
}

} // namespace brain::cuda

extern "C" BRAIN_PLUGIN_EXPORT const brain_plugin_api* brain_plugin_get_api(void) {
    return brain::sdk::plugin_table<brain::cuda::CudaBackend>();
}
