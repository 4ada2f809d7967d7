// CudaSession's reports back to the host: the checkpoint (the only copy of the weights back), the session's stats,
// and the diagnosis of a diverged epoch (which batch's loss or update first stopped being finite).
#include "cuda_session.hpp"

#include <string>

namespace brain::cuda {

void CudaSession::fail_numerical(float loss, const EpochRecord* record) {
    // The error path may read more than the loss: which batch tripped first.
    EpochRecord scalars{};
    bool known = record != nullptr;
    if (record) {
        scalars = *record;
    } else {
        brain_cuda_scalars block{};
        known = cudaMemcpy(&block, m_scalars.get(), sizeof block, cudaMemcpyDeviceToHost) == cudaSuccess;
        if (known) m_counters.moved_to_host(sizeof block);
        scalars = EpochRecord{block.bad_loss_batch, block.bad_weight_batch, block.result};
    }
    const std::uint64_t epoch = m_first_epoch + m_counters.epochs();
    const std::string where = "epoch " + std::to_string(epoch) + " (0-based, counting earlier epochs)";
    const std::string total = " of " + std::to_string(m_plan.batch_count());
    std::string what;
    if (known && scalars.bad_weight_batch != BRAIN_CUDA_NO_BAD_BATCH &&
        scalars.bad_weight_batch < scalars.bad_loss_batch)
        what = "a parameter became NaN or infinite in the update of batch " +
               std::to_string(scalars.bad_weight_batch) + total;
    else if (known && scalars.bad_loss_batch != BRAIN_CUDA_NO_BAD_BATCH)
        what = "the loss of batch " + std::to_string(scalars.bad_loss_batch) + total + " was NaN or infinite";
    else
        what = "the epoch's mean loss was " + std::to_string(loss);
    m_failure = "training diverged in " + where + ": " + what;
    m_counters.count_epoch();
    fail(BRAIN_ERR_NUMERICAL, m_failure +
                                  "; the weights of the last checkpoint are kept: lower the learning rate "
                                  "(now " +
                                  std::to_string(m_plan.optimizer.learning_rate) +
                                  ") or check the data for extreme values");
}

void CudaSession::checkpoint(float* parameters, std::uint64_t parameter_count, float* optimizer_state,
                             std::uint64_t optimizer_state_count, std::uint64_t* out_step) {
    require_usable("take a checkpoint");
    if (parameter_count != m_plan.parameter_count || optimizer_state_count != m_plan.state_count)
        fail(BRAIN_ERR_INVALID_ARGUMENT,
             "checkpoint buffers hold " + std::to_string(parameter_count) + " parameters and " +
                 std::to_string(optimizer_state_count) + " state values; the session has " +
                 std::to_string(m_plan.parameter_count) + " and " + std::to_string(m_plan.state_count));
    if (!parameters || (optimizer_state_count && !optimizer_state) || !out_step)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "a checkpoint output pointer is null");
    const auto start = Clock::now();
    check_cuda(cudaSetDevice(m_device), "cudaSetDevice");
    cudaStream_t stream = m_stream.get();
    auto* scalars = static_cast<brain_cuda_scalars*>(m_scalars.get());
    std::uint64_t step = 0;
    if (m_plan.mixed()) {
        copy_mixed_checkpoint(parameters, optimizer_state);
    } else {
        check_cuda(
            cudaMemcpyAsync(parameters, m_params.get(), 4ull * parameter_count, cudaMemcpyDeviceToHost, stream),
            "copying the parameters back");
        if (optimizer_state_count)
            check_cuda(cudaMemcpyAsync(optimizer_state, m_state.get(), 4ull * optimizer_state_count,
                                       cudaMemcpyDeviceToHost, stream),
                       "copying the optimizer state back");
    }
    check_cuda(cudaMemcpyAsync(&step, &scalars->step, sizeof step, cudaMemcpyDeviceToHost, stream),
               "copying the step count back");
    check_cuda(cudaStreamSynchronize(stream), "the checkpoint copy");
    *out_step = step;
    m_counters.moved_to_host(4ull * (parameter_count + optimizer_state_count) + sizeof step);
    m_counters.add_time(Phase::Checkpoint, Clock::now() - start);
}

brain_session_stats CudaSession::stats() const noexcept {
    sdk::SessionFacts facts;
    facts.dataset_resident = m_resident;
    facts.precision = m_plan.precision;
    facts.dataset_bytes = m_allocator.peak(MemoryKind::Dataset);
    facts.workspace_bytes = m_allocator.peak(MemoryKind::Workspace);
    facts.budget_bytes = m_plan.budget_bytes;
    facts.arithmetic = arithmetic();
    brain_session_stats out = m_counters.stats(facts);
    out.devices = 1;
    return out;
}

std::string CudaSession::arithmetic() const {
    if (m_cluster_blocks)
        return m_cluster_global_grad_floats ? "float32 (cluster epoch kernel, global gradient shares)"
                                            : "float32 (cluster epoch kernel)";
    if (m_fused) return "float32 (fused epoch kernel)";
    switch (m_plan.precision) {
    case BRAIN_PRECISION_TF32:
        return "tf32 products, float32 storage (cuBLAS)";
    case BRAIN_PRECISION_BF16:
        return "bf16 mixed, float32 master weights (cuBLASLt)";
    default:
        return "float32 (cuBLAS)";
    }
}

} // namespace brain::cuda
