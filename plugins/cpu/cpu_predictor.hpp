// brain::cpu::CpuPredictor: the CPU backend's predictor (ABI 1.2's predictor entries): a copy of the weights and
// the buffers for max_batch_rows rows, allocated at open, and a forward pass that splits rows over the threads.
#pragma once

#include "gemm.hpp"
#include "host_buffer.hpp"
#include "worker_pool.hpp"

#include <brain/plugin_abi.h>
#include <brain/session_plan.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace brain::cpu {

// A CPU predictor (the SDK's Backend::Predictor). Not thread-safe (one predictor_run at a time).
class CpuPredictor {
public:
    // Validate (UNSUPPORTED for a precision other than float32), check the budget before allocating
    // (BUDGET_EXCEEDED names the largest batch that fits) and copy the parameters.
    explicit CpuPredictor(const brain_predictor_desc& desc);
    // Outputs of `rows` (<= max_batch_rows) standardised input rows, after the output activation.
    void run(const float* inputs, std::uint64_t rows, float* outputs);

private:
    // Bytes the predictor allocates for batches of `rows` rows: the parameters, two activation buffers as wide as
    // the widest hidden layer and the pre-activations of the widest layer.
    std::uint64_t bytes_for(std::size_t rows) const noexcept;

    sdk::PredictorPlan m_plan;
    std::unique_ptr<const Gemm> m_gemm; // the products (OpenBLAS, oneDNN)
    std::unique_ptr<WorkerPool> m_pool;
    std::size_t m_widest_hidden = 0;
    std::size_t m_widest = 0;
    std::size_t m_macs_per_row = 0;
    HostBuffer m_params;
    HostBuffer m_buffers[2]; // hidden activations, alternating by layer
    HostBuffer m_z;          // a layer's pre-activations
};

} // namespace brain::cpu
