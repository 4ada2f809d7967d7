// CudaSession's data set: uploaded once when it fits the budget (the epoch paths then gather batches on the
// device), else kept on the host and staged batch by batch through two pinned buffers.
#include "cuda_session.hpp"

#include <algorithm>
#include <cstring>

namespace brain::cuda {

void CudaSession::upload_data_set(const brain_session_desc& desc) {
    const DevicePlan& plan = m_plan;
    cudaStream_t stream = m_stream.get();
    const brain_dataset_view data = sdk::read_struct(desc.dataset);
    const std::uint64_t feature_bytes = 4ull * plan.rows * plan.input_width;
    const std::uint64_t target_bytes = 4ull * plan.rows * plan.target_width;
    if (m_resident) {
        m_features = m_allocator.allocate(feature_bytes, MemoryKind::Dataset, "the data set's features");
        m_targets = m_allocator.allocate(target_bytes, MemoryKind::Dataset, "the data set's targets");
        if (plan.config.shuffle)
            m_perm = m_allocator.allocate(4ull * plan.rows, MemoryKind::Dataset, "the epoch's batch order");
        check_cuda(cudaMemcpyAsync(m_features.get(), data.features, feature_bytes, cudaMemcpyHostToDevice, stream),
                   "uploading the data set");
        check_cuda(cudaMemcpyAsync(m_targets.get(), data.targets, target_bytes, cudaMemcpyHostToDevice, stream),
                   "uploading the data set");
        m_counters.moved_to_device(feature_bytes + target_bytes);
    } else {
        // The view is borrowed for session_open only: keep a host copy to stage from.
        m_host_features.assign(data.features, data.features + plan.rows * plan.input_width);
        m_host_targets.assign(data.targets, data.targets + plan.rows * plan.target_width);
        const std::size_t stage_bytes = 4ull * plan.batch_rows * (plan.input_width + plan.target_width);
        for (PinnedBuffer& stage : m_stage) stage = PinnedBuffer(stage_bytes);
        for (Event& done : m_stage_done) done = create_event();
    }
}

void CudaSession::run_staged_epoch() {
    const DevicePlan& plan = m_plan;
    cudaStream_t stream = m_stream.get();
    const std::size_t batch_size = plan.config.batch_size;
    const std::uint64_t epoch = m_first_epoch + m_counters.epochs();
    const std::size_t in = plan.input_width, out = plan.target_width;
    const std::size_t batches = plan.batch_count();
    for (std::size_t b = 0; b < batches; ++b) {
        const std::size_t start = b * batch_size;
        const std::size_t rows = std::min(batch_size, plan.rows - start);
        const std::size_t slot = b % 2;
        // The copy that last read this staging buffer (two batches ago) must be done before it is refilled;
        // this wait is the only host synchronisation inside a staged epoch.
        if (b >= 2) check_cuda(cudaEventSynchronize(m_stage_done[slot].get()), "waiting for a staging copy");
        if (plan.mixed()) {
            stage_mixed_batch(slot, epoch, start, rows);
            enqueue_mixed_batch(static_cast<unsigned>(rows), static_cast<int>(b));
            continue;
        }
        float* xs = m_stage[slot].floats();
        float* ts = xs + rows * in;
        for (std::size_t r = 0; r < rows; ++r) {
            const std::size_t p = start + r;
            const std::size_t row =
                plan.config.shuffle
                    ? static_cast<std::size_t>(brain_shuffle_index(plan.config.seed, epoch, plan.rows, p))
                    : p;
            std::memcpy(xs + r * in, m_host_features.data() + row * in, in * sizeof(float));
            std::memcpy(ts + r * out, m_host_targets.data() + row * out, out * sizeof(float));
        }
        check_cuda(cudaMemcpyAsync(m_x.get(), xs, rows * in * sizeof(float), cudaMemcpyHostToDevice, stream),
                   "staging a batch's inputs");
        check_cuda(cudaMemcpyAsync(m_t.get(), ts, rows * out * sizeof(float), cudaMemcpyHostToDevice, stream),
                   "staging a batch's targets");
        check_cuda(cudaEventRecord(m_stage_done[slot].get(), stream), "cudaEventRecord");
        m_counters.moved_to_device(rows * (in + out) * sizeof(float));
        enqueue_batch(m_x.floats(), m_t.floats(), static_cast<unsigned>(rows), static_cast<int>(b));
    }
    launch(*m_kernels, Kernel::FinishEpoch, dim3(1), dim3(1), stream,
           static_cast<brain_cuda_scalars*>(m_scalars.get()), static_cast<DeviceU64>(plan.rows));
}

} // namespace brain::cuda
