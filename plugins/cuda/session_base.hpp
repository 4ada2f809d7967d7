// brain::cuda::SessionBase: what session_open's session does, whether one device trains (CudaSession) or several
// do (DataParallelSession); BackendSession opens one or the other and forwards the ABI's calls to it.
#pragma once

#include <brain/plugin_abi.h>
#include <cstdint>

namespace brain::cuda {

class SessionBase {
public:
    SessionBase() = default;
    virtual ~SessionBase() = default;
    SessionBase(const SessionBase&) = delete;
    SessionBase& operator=(const SessionBase&) = delete;

    // One epoch; returns the sample-weighted mean loss. NUMERICAL on NaN/inf.
    virtual float train_epoch() = 0;
    // `count` epochs in one call (ABI 1.4), each loss written to losses[trained++] as its epoch is known to be
    // done; by default one train_epoch after another.
    virtual void train_epochs(std::uint64_t count, float* losses, std::uint64_t& trained) {
        while (trained < count) {
            const float loss = train_epoch();
            losses[trained++] = loss;
        }
    }
    // Use `learning_rate` from the next optimizer step on.
    virtual void set_learning_rate(float learning_rate) = 0;
    // The rates of the next epoch's steps, one per batch (ABI 1.2); afterwards the last one stays in effect.
    virtual void set_step_learning_rates(const float* rates, std::uint64_t count) = 0;
    // Copy parameters, optimizer state and the step count to the host.
    virtual void checkpoint(float* parameters, std::uint64_t parameter_count, float* optimizer_state,
                            std::uint64_t optimizer_state_count, std::uint64_t* out_step) = 0;
    // Measured figures of the session, over all of this process's devices.
    virtual brain_session_stats stats() const noexcept = 0;
    // Stats of device `index` of this process's devices; a one-device session has only index 0.
    virtual brain_session_stats device_stats(std::uint32_t index) const;
};

} // namespace brain::cuda
