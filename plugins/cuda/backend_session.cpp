// The choice between one device and data parallelism (backend_session.hpp), and the device stats of a one-device
// session.
#include "backend_session.hpp"

#include "cuda_plugin_log.hpp"

#include <cstdlib>

namespace brain::cuda {

BackendSession::BackendSession(const brain_session_desc& desc) {
    const std::vector<int> devices = requested_devices(desc);
    const DataParallelPolicy policy = parse_data_parallel_policy(std::getenv("BRAIN_CUDA_DATA_PARALLEL"));
    const int world = desc.world_size > 1 ? desc.world_size : 1;
    bool parallel = false;
    if (devices.size() > 1 || world > 1 || policy == DataParallelPolicy::Always) {
        const DataParallelDecision decision = decide_data_parallel(
            policy, static_cast<std::uint32_t>(devices.size()), world, fused_shape(make_device_plan(desc)));
        log_message(1, "cuda session: " + decision.reason);
        parallel = decision.parallel;
    }
    if (parallel) {
        m_session = std::make_unique<DataParallelSession>(desc, devices);
        return;
    }
    brain_session_desc single = desc;
    single.device = devices.front();
    m_session = std::make_unique<CudaSession>(single);
}

brain_session_stats SessionBase::device_stats(std::uint32_t index) const {
    if (index != 0)
        fail(BRAIN_ERR_INVALID_ARGUMENT,
             "device index " + std::to_string(index) + " is outside this session's one device");
    return stats();
}

} // namespace brain::cuda
