// The entry point of libbrain_cuda.so: the backend class the SDK builds the ABI table from (plugin_table.hpp).
#include "cuda_device.hpp"
#include "cuda_errors.hpp"
#include "cuda_plugin_log.hpp"
#include "cuda_session.hpp"
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
    using Session = CudaSession;

    // Having no driver or device is not an error here: device_count says why there are none.
    static void initialize(const brain_host_api&) {
        int runtime_version = 0;
        (void)cudaRuntimeGetVersion(&runtime_version);
        int nvrtc_major = 0, nvrtc_minor = 0;
        check_nvrtc(nvrtcVersion(&nvrtc_major, &nvrtc_minor), "nvrtcVersion");
        log_message(1, "cuda plugin: runtime " + std::to_string(runtime_version) + ", NVRTC " +
                           std::to_string(nvrtc_major) + "." + std::to_string(nvrtc_minor));
    }
    // Every activation, loss and optimizer of ABI 1.0 in every precision, and per-step learning rates on both epoch
    // paths.
    static brain_capabilities capabilities() {
        brain_capabilities caps{};
        caps.activations = (1u << (BRAIN_ACT_GELU + 1)) - 1u;
        caps.losses = (1u << (BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY + 1)) - 1u;
        caps.optimizers = (1u << (BRAIN_OPT_ADAMW + 1)) - 1u;
        caps.precisions = (1u << (BRAIN_PRECISION_BF16 + 1)) - 1u;
        caps.features = BRAIN_FEATURE_STEP_LEARNING_RATES;
        caps.max_devices = 1;
        return caps;
    }
    static std::int32_t device_count() { return cuda::device_count(); }
    static brain_device_report probe(std::int32_t device, std::uint64_t budget) { return probe_device(device, budget); }
};

} // namespace

void log_message(int level, const std::string& message) noexcept {
    sdk::log(level, message);
}

} // namespace brain::cuda

extern "C" BRAIN_PLUGIN_EXPORT const brain_plugin_api* brain_plugin_get_api(void) {
    return brain::sdk::plugin_table<brain::cuda::CudaBackend>();
}
