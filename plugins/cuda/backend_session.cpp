// The choice between one device and data parallelism (backend_session.hpp).
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
        m_parallel = std::make_unique<DataParallelSession>(desc, devices);
        return;
    }
    brain_session_desc single = desc;
    single.device = devices.front();
    m_single = std::make_unique<CudaSession>(single);
}

float BackendSession::train_epoch() {
    return m_parallel ? m_parallel->train_epoch() : m_single->train_epoch();
}

void BackendSession::set_learning_rate(float learning_rate) {
    if (m_parallel)
        m_parallel->set_learning_rate(learning_rate);
    else
        m_single->set_learning_rate(learning_rate);
}

void BackendSession::set_step_learning_rates(const float* rates, std::uint64_t count) {
    if (m_parallel)
        m_parallel->set_step_learning_rates(rates, count);
    else
        m_single->set_step_learning_rates(rates, count);
}

void BackendSession::checkpoint(float* parameters, std::uint64_t parameter_count, float* optimizer_state,
                                std::uint64_t optimizer_state_count, std::uint64_t* out_step) {
    if (m_parallel)
        m_parallel->checkpoint(parameters, parameter_count, optimizer_state, optimizer_state_count, out_step);
    else
        m_single->checkpoint(parameters, parameter_count, optimizer_state, optimizer_state_count, out_step);
}

brain_session_stats BackendSession::stats() const noexcept {
    if (m_parallel) return m_parallel->stats();
    brain_session_stats out = m_single->stats();
    out.devices = 1;
    return out;
}

brain_session_stats BackendSession::device_stats(std::uint32_t index) const {
    if (m_parallel) return m_parallel->device_stats(index);
    if (index != 0)
        fail(BRAIN_ERR_INVALID_ARGUMENT,
             "device index " + std::to_string(index) + " is outside this session's one device");
    return stats();
}

} // namespace brain::cuda
