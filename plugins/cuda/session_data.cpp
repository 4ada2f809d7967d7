// CudaSession's data set: uploaded once when it fits the budget (the epoch paths then gather batches on the
// device), else kept on the host (or pulled from the core's batch source, for a streamed data set) and staged batch
// by batch: the host gathers batch b + 1 into a pinned buffer while the device trains batch b, and its copy runs on
// a copy stream into the other device slot, so neither the gather nor the copy waits for the step.
#include "cuda_plugin_log.hpp"
#include "cuda_session.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace brain::cuda {

void CudaSession::upload_data_set(const brain_session_desc& desc) {
    const DevicePlan& plan = m_plan;
    cudaStream_t stream = m_stream.get();
    const std::uint64_t feature_bytes = 4ull * plan.rows * plan.input_width;
    const std::uint64_t target_bytes = 4ull * plan.rows * plan.target_width;
    m_source = plan.batch_source;
    if (m_resident) {
        const brain_dataset_view data = sdk::read_struct(desc.dataset);
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
        // The view is borrowed for session_open only: keep a host copy to stage from (a streamed data set has
        // none: its rows are fetched batch by batch).
        if (!m_source) {
            const brain_dataset_view data = sdk::read_struct(desc.dataset);
            m_host_features.assign(data.features, data.features + plan.rows * plan.input_width);
            m_host_targets.assign(data.targets, data.targets + plan.rows * plan.target_width);
        } else if (plan.mixed()) {
            m_fetch_x.resize(plan.batch_rows * plan.input_width);
            m_fetch_t.resize(plan.batch_rows * plan.target_width);
        }
        const std::size_t stage_bytes = 4ull * plan.batch_rows * (plan.input_width + plan.target_width);
        for (PinnedBuffer& stage : m_stage) stage = PinnedBuffer(stage_bytes);
        for (Event& done : m_stage_done) done = create_event();
    }
}

void CudaSession::prepare_staging(std::uint64_t spare_bytes) {
    const DevicePlan& plan = m_plan;
    const std::uint64_t x_bytes = 4ull * plan.batch_rows * plan.input_width;
    const std::uint64_t t_bytes = 4ull * plan.batch_rows * plan.target_width;
    // Allocations are rounded up to 256 bytes; one page of slack keeps the check on the safe side.
    // BRAIN_CUDA_STAGE_OVERLAP=0 keeps one slot, for measuring what the overlap gains (tools/perf/staged-compare).
    const char* overlap = std::getenv("BRAIN_CUDA_STAGE_OVERLAP");
    if (overlap && std::strcmp(overlap, "0") == 0) return;
    if (x_bytes + t_bytes + 8192 > spare_bytes) {
        log_message(1, "cuda session: the budget leaves no room for a second staging slot; staged copies do not "
                       "overlap the steps");
        return;
    }
    m_x2 = m_allocator.allocate(x_bytes, MemoryKind::Workspace, "the second staged batch's inputs");
    m_t2 = m_allocator.allocate(t_bytes, MemoryKind::Workspace, "the second staged batch's targets");
    m_copy_stream = create_stream();
    for (Event& consumed : m_slot_consumed) consumed = create_event();
}

void CudaSession::host_rows(std::uint64_t epoch, std::size_t start, std::size_t rows, float* x, float* t) {
    const DevicePlan& plan = m_plan;
    const std::size_t in = plan.input_width, out = plan.target_width;
    if (m_source) {
        // The core's rows for these positions, in its own batch order, already standardised.
        char message[512] = "";
        const int32_t status = m_source->fetch(m_source->context, epoch, start, static_cast<uint32_t>(rows), x, t,
                                               message, sizeof message);
        if (status != BRAIN_OK)
            fail(static_cast<brain_status>(status),
                 "epoch " + std::to_string(epoch) + ": reading rows " + std::to_string(start) + " to " +
                     std::to_string(start + rows - 1) + " from the streamed data set failed: " + message);
        return;
    }
    for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t row = plan.row_at(epoch, start + r);
        std::memcpy(x + r * in, m_host_features.data() + row * in, in * sizeof(float));
        std::memcpy(t + r * out, m_host_targets.data() + row * out, out * sizeof(float));
    }
}

void CudaSession::run_staged_epoch() {
    const DevicePlan& plan = m_plan;
    cudaStream_t stream = m_stream.get();
    const std::size_t batch_size = plan.config.batch_size;
    const std::uint64_t epoch = m_first_epoch + m_counters.epochs();
    const std::size_t in = plan.input_width, out = plan.target_width;
    const std::size_t batches = plan.batch_count();
    const bool overlap = m_copy_stream.get() != nullptr;
    // The copy stream first waits for whatever the compute stream queued before this epoch.
    if (overlap) {
        check_cuda(cudaEventRecord(m_slot_consumed[0].get(), stream), "cudaEventRecord");
        check_cuda(cudaEventRecord(m_slot_consumed[1].get(), stream), "cudaEventRecord");
    }
    for (std::size_t b = 0; b < batches; ++b) {
        const std::size_t start = b * batch_size;
        const std::size_t rows = std::min(batch_size, plan.rows - start);
        const std::size_t slot = b % 2;
        // The copy that last read this pinned buffer (two batches ago) must be done before it is refilled; this
        // wait is the only host synchronisation inside a staged epoch, and it returns at once while the host
        // gathers no faster than the device trains.
        if (b >= 2) check_cuda(cudaEventSynchronize(m_stage_done[slot].get()), "waiting for a staging copy");
        if (plan.mixed()) {
            stage_mixed_batch(slot, epoch, start, rows);
            enqueue_mixed_batch(static_cast<unsigned>(rows), static_cast<int>(b));
            continue;
        }
        float* xs = m_stage[slot].floats();
        float* ts = xs + rows * in;
        host_rows(epoch, start, rows, xs, ts);
        const std::size_t x_bytes = rows * in * sizeof(float), t_bytes = rows * out * sizeof(float);
        if (!overlap) {
            check_cuda(cudaMemcpyAsync(m_x.get(), xs, x_bytes, cudaMemcpyHostToDevice, stream),
                       "staging a batch's inputs");
            check_cuda(cudaMemcpyAsync(m_t.get(), ts, t_bytes, cudaMemcpyHostToDevice, stream),
                       "staging a batch's targets");
            check_cuda(cudaEventRecord(m_stage_done[slot].get(), stream), "cudaEventRecord");
            m_counters.moved_to_device(x_bytes + t_bytes);
            enqueue_batch(m_x.floats(), m_t.floats(), static_cast<unsigned>(rows), static_cast<int>(b));
            continue;
        }
        // Batch b's copy into device slot b % 2 waits only for the step that last read that slot (batch b - 2),
        // so it runs while batch b - 1 trains; the step waits for its copy.
        cudaStream_t copy = m_copy_stream.get();
        float* dx = slot == 0 ? m_x.floats() : m_x2.floats();
        float* dt = slot == 0 ? m_t.floats() : m_t2.floats();
        check_cuda(cudaStreamWaitEvent(copy, m_slot_consumed[slot].get(), 0), "cudaStreamWaitEvent");
        check_cuda(cudaMemcpyAsync(dx, xs, x_bytes, cudaMemcpyHostToDevice, copy), "staging a batch's inputs");
        check_cuda(cudaMemcpyAsync(dt, ts, t_bytes, cudaMemcpyHostToDevice, copy), "staging a batch's targets");
        check_cuda(cudaEventRecord(m_stage_done[slot].get(), copy), "cudaEventRecord");
        check_cuda(cudaStreamWaitEvent(stream, m_stage_done[slot].get(), 0), "cudaStreamWaitEvent");
        m_counters.moved_to_device(x_bytes + t_bytes);
        enqueue_batch(dx, dt, static_cast<unsigned>(rows), static_cast<int>(b));
        check_cuda(cudaEventRecord(m_slot_consumed[slot].get(), stream), "cudaEventRecord");
    }
    launch(*m_kernels, Kernel::FinishEpoch, dim3(1), dim3(1), stream,
           static_cast<brain_cuda_scalars*>(m_scalars.get()), static_cast<DeviceU64>(plan.rows));
}

} // namespace brain::cuda
