// CudaSession as one device of a data-parallel session: the cuBLAS path's batch, taken apart so that the caller
// sums the gradient across devices between the backward pass and the optimizer step. The kernels are the ones the
// single-device path runs, so one replica with a one-rank sum trains exactly as a single-device session does.
#include "cuda_session.hpp"

#include <cmath>

namespace brain::cuda {

namespace {
constexpr unsigned threads_per_block = 256;
} // namespace

void CudaSession::replica_begin_epoch() {
    require_usable("train an epoch");
    if (!m_resident)
        fail(BRAIN_ERR_INVALID_STATE, "a data-parallel replica needs the data set resident on its device");
    check_cuda(cudaSetDevice(m_device), "cudaSetDevice");
    if (!m_plan.config.shuffle) return;
    launch(*m_kernels, Kernel::ShufflePermutation, dim3(elementwise_blocks(m_plan.rows)), dim3(threads_per_block),
           m_stream.get(), static_cast<uint32_t*>(m_perm.get()), static_cast<DeviceU64>(m_plan.rows),
           static_cast<DeviceU64>(m_plan.config.seed), static_cast<const brain_cuda_scalars*>(m_scalars.get()));
}

void CudaSession::replica_gradients(std::uint64_t position, unsigned rows,
                                    const std::function<void(std::size_t)>& layer_done) {
    const DevicePlan& plan = m_plan;
    cudaStream_t stream = m_stream.get();
    if (rows == 0) {
        // A batch shorter than the device count leaves this device no row: it adds a zero gradient to the sum.
        check_cuda(cudaMemsetAsync(m_grads.get(), 0, 4ull * plan.parameter_count, stream), "clearing the gradient");
        for (std::size_t l = plan.layers.size(); l-- > 0;) layer_done(l);
        return;
    }
    m_layer_done = &layer_done;
    try {
        if (plan.config.shuffle) {
            const DeviceU64 count = static_cast<DeviceU64>(rows) * (plan.input_width + plan.target_width);
            launch(*m_kernels, Kernel::GatherBatch, dim3(elementwise_blocks(count)), dim3(threads_per_block),
                   stream, m_x.floats(), m_t.floats(), static_cast<const float*>(m_features.floats()),
                   static_cast<const float*>(m_targets.floats()), static_cast<const uint32_t*>(m_perm.get()),
                   static_cast<DeviceU64>(position), rows, static_cast<unsigned>(plan.input_width),
                   static_cast<unsigned>(plan.target_width));
            enqueue_gradients(m_x.floats(), m_t.floats(), rows);
        } else {
            enqueue_gradients(m_features.floats() + position * plan.input_width,
                              m_targets.floats() + position * plan.target_width, rows);
        }
    } catch (...) {
        m_layer_done = nullptr;
        throw;
    }
    m_layer_done = nullptr;
}

void CudaSession::replica_step(unsigned rows, int batch) {
    enqueue_optimizer(rows, batch);
}

float* CudaSession::replica_finish_epoch() {
    auto* scalars = static_cast<brain_cuda_scalars*>(m_scalars.get());
    // Each replica divides its share of the loss sum by the epoch's rows: the shares add up to the mean (NaN when a
    // check tripped, which the sum keeps).
    launch(*m_kernels, Kernel::FinishEpoch, dim3(1), dim3(1), m_stream.get(), scalars,
           static_cast<DeviceU64>(m_plan.rows));
    return &scalars->result;
}

void CudaSession::replica_read_loss() {
    auto* scalars = static_cast<brain_cuda_scalars*>(m_scalars.get());
    check_cuda(
        cudaMemcpyAsync(m_result.floats(), &scalars->result, sizeof(float), cudaMemcpyDeviceToHost, m_stream.get()),
        "reading the epoch's loss");
}

float CudaSession::replica_epoch_loss() {
    m_counters.moved_to_host(sizeof(float));
    const float loss = *m_result.floats();
    if (!std::isfinite(loss)) fail_numerical(loss);
    return loss;
}

void CudaSession::replica_count_epoch(std::uint64_t batches, std::chrono::steady_clock::duration time) {
    m_counters.add_time(Phase::Training, time);
    m_counters.count_batches(batches);
    m_counters.count_epoch();
}

} // namespace brain::cuda
