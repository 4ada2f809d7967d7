// brain::cuda::BackendSession: what session_open returns. One device trains on a CudaSession; several devices, or
// several processes, on a DataParallelSession when data parallelism pays (decide_data_parallel; the debug log says
// which and why).
#pragma once

#include "cuda_session.hpp"
#include "data_parallel_session.hpp"

#include <memory>

namespace brain::cuda {

class BackendSession {
public:
    explicit BackendSession(const brain_session_desc& desc);

    float train_epoch() { return m_session->train_epoch(); }
    void train_epochs(std::uint64_t count, float* losses, std::uint64_t& trained) {
        m_session->train_epochs(count, losses, trained);
    }
    void set_learning_rate(float learning_rate) { m_session->set_learning_rate(learning_rate); }
    void set_step_learning_rates(const float* rates, std::uint64_t count) {
        m_session->set_step_learning_rates(rates, count);
    }
    void checkpoint(float* parameters, std::uint64_t parameter_count, float* optimizer_state,
                    std::uint64_t optimizer_state_count, std::uint64_t* out_step) {
        m_session->checkpoint(parameters, parameter_count, optimizer_state, optimizer_state_count, out_step);
    }
    brain_session_stats stats() const noexcept { return m_session->stats(); }
    brain_session_stats device_stats(std::uint32_t index) const { return m_session->device_stats(index); }

private:
    std::unique_ptr<SessionBase> m_session; // a CudaSession or a DataParallelSession
};

} // namespace brain::cuda
