// CudaSession's set-up (plan, device, kernels, allocation and upload), the epoch's dispatch to the staged, fused
// or graph path, and teardown.
#include "cuda_session.hpp"

#include "cuda_device.hpp"
#include "cuda_plugin_log.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace brain::cuda {

CudaSession::CudaSession(const brain_session_desc& desc, std::size_t replica_rows)
    : m_plan(make_device_plan(desc)), m_allocator(desc.memory_budget_bytes) {
    const auto start = Clock::now();
    const bool replica = replica_rows > 0;
    if (replica) m_plan.batch_rows = std::min(m_plan.batch_rows, replica_rows); // its share's tensors only
    // The budget, before anything touches the device.
    const MemoryLayout layout = plan_memory(m_plan);
    std::uint64_t cublas_workspace = layout.cublas_workspace;

    m_device = desc.device;
    // NVRTC (or the disk cache) works while this thread creates the context: neither needs the other. (A bad
    // device index makes the prefetch a no-op; select_device reports it.)
    const KernelForm form = kernel_form(m_plan.layers);
    KernelPrefetch prefetch(m_device, form);
    const auto checked = Clock::now();
    select_device(m_device);
    check_cuda(cudaFree(nullptr), "creating the CUDA context");
    const auto context = Clock::now();
    check_cuda(cudaDeviceGetAttribute(&m_sm_count, cudaDevAttrMultiProcessorCount, m_device),
               "cudaDeviceGetAttribute");
    m_kernels = &kernels_for_current_device(form);
    const auto kernels = Clock::now();
    m_stream = create_stream();
    m_fused = !replica && layout.resident && choose_fused_epoch(layout.spare);
    // The fused epoch multiplies with its own kernels: no cuBLAS handle, no workspace, no cuBLAS start-up. The
    // mixed-precision path's products are cuBLASLt's.
    if (m_fused)
        cublas_workspace = 0;
    else if (m_plan.mixed())
        m_lt = create_cublas_lt();
    else
        m_cublas = create_cublas();
    m_workspace_bytes = cublas_workspace;
    const auto cublas = Clock::now();
    switch (m_plan.precision) {
    case BRAIN_PRECISION_TF32:
        m_compute = CUBLAS_COMPUTE_32F_FAST_TF32;
        break;
    case BRAIN_PRECISION_BF16: // bf16 operands, float32 accumulation (mixed_epoch.cpp)
    default:
        m_compute = CUBLAS_COMPUTE_32F;
        break;
    }
    const char* graphs = std::getenv("BRAIN_CUDA_GRAPHS");
    m_use_graphs = !replica && !(graphs && std::strcmp(graphs, "0") == 0);
    m_first_epoch = desc.first_epoch;
    m_resident = layout.resident;

    if (m_plan.mixed())
        allocate_mixed_tensors(cublas_workspace);
    else
        allocate_tensors(cublas_workspace);
    upload_data_set(desc);
    if (!m_resident && !m_plan.mixed())
        prepare_staging(layout.spare > cublas_workspace ? layout.spare - cublas_workspace : 0);
    upload_state(desc);
    if (m_fused) prepare_fused_epoch(layout.spare);
    if (m_plan.mixed()) plan_mixed_products();
    const auto end = Clock::now();
    m_counters.add_time(Phase::Setup, end - start);
    m_counters.observe_peak(m_allocator.peak(MemoryKind::Tensor)); // every tensor is allocated at open
    const auto ms = [](Clock::duration d) {
        char text[32];
        std::snprintf(text, sizeof text, "%.1f ms", std::chrono::duration<double, std::milli>(d).count());
        return std::string(text);
    };
    log_message(
        1, "cuda session on device " + std::to_string(m_device) + " (" + m_kernels->architecture + "): tensors " +
               mib(m_allocator.peak(MemoryKind::Tensor)) + ", data set " + (m_resident ? "resident" : "staged") +
               ", cuBLAS workspace " + mib(cublas_workspace) + ", arithmetic: " + arithmetic() +
               (m_mixed_fusion.empty() ? std::string() : " (" + m_mixed_fusion + ")") + ", epoch: " +
               (m_cluster_blocks ? "cluster kernel (" + std::to_string(m_cluster_count) + " x " +
                                       std::to_string(m_cluster_blocks) + " blocks)"
                : m_fused ? "fused kernel (" + std::to_string(m_fused_grid) + " blocks)"
                          : std::string(m_use_graphs ? "CUDA graph" : "direct launches")) +
               "; set-up " + ms(end - start) + ": checks " + ms(checked - start) + ", device and context " +
               ms(context - checked) + ", kernels (waiting for NVRTC or the cache) " + ms(kernels - context) +
               ", stream and cuBLAS " + ms(cublas - kernels) + ", allocation and upload " + ms(end - cublas));
}

CudaSession::~CudaSession() {
    // Let queued work finish before its buffers are freed.
    (void)cudaSetDevice(m_device);
    if (m_stream) (void)cudaStreamSynchronize(m_stream.get());
    if (m_copy_stream) (void)cudaStreamSynchronize(m_copy_stream.get()); // a staged copy left by a failed epoch
    (void)cudaGetLastError();
}

void CudaSession::allocate_tensors(std::uint64_t cublas_workspace) {
    const DevicePlan& plan = m_plan;
    const std::size_t b = plan.batch_rows;
    m_params = m_allocator.allocate(4ull * plan.parameter_count, MemoryKind::Tensor, "the parameters");
    m_grads = m_allocator.allocate(4ull * plan.parameter_count, MemoryKind::Tensor, "the gradients");
    m_state = m_allocator.allocate(4ull * plan.state_count, MemoryKind::Tensor, "the optimizer state");
    m_scalars = m_allocator.allocate(scalar_block_bytes, MemoryKind::Tensor, "the scalar block");
    // Unshuffled resident batches are read in place from the data set; everything else is gathered or staged.
    if (!m_resident || plan.config.shuffle) {
        m_x = m_allocator.allocate(4ull * b * plan.input_width, MemoryKind::Tensor, "the batch inputs");
        m_t = m_allocator.allocate(4ull * b * plan.target_width, MemoryKind::Tensor, "the batch targets");
    }
    for (std::size_t l = 0; l < plan.layers.size(); ++l) {
        const LayerPlan& layer = plan.layers[l];
        const std::uint64_t bytes = 4ull * b * layer.outputs;
        const std::string name = "layer " + std::to_string(l);
        m_z.push_back(m_allocator.allocate(bytes, MemoryKind::Tensor, name + " pre-activations"));
        m_a.push_back(layer.activation == BRAIN_ACT_LINEAR
                          ? DeviceBuffer()
                          : m_allocator.allocate(bytes, MemoryKind::Tensor, name + " activations"));
        m_delta.push_back(m_allocator.allocate(bytes, MemoryKind::Tensor, name + " deltas"));
    }
    m_row_loss = m_allocator.allocate(4ull * b, MemoryKind::Workspace, "the per-row losses");
    m_rates = m_allocator.allocate(4ull * plan.batch_count(), MemoryKind::Workspace, "the steps' learning rates");
    if (cublas_workspace)
        m_workspace = m_allocator.allocate(cublas_workspace, MemoryKind::Workspace, "the cuBLAS workspace");

    if (m_cublas) {
        check_cublas(cublasSetStream(m_cublas.get(), m_stream.get()), "cublasSetStream");
        // After cublasSetStream, which resets it: the workspace comes from our budget, never from cuBLAS's pool.
        check_cublas(cublasSetWorkspace(m_cublas.get(), m_workspace.get(), cublas_workspace), "cublasSetWorkspace");
        check_cublas(cublasSetPointerMode(m_cublas.get(), CUBLAS_POINTER_MODE_DEVICE), "cublasSetPointerMode");
    }
}

void CudaSession::upload_state(const brain_session_desc& desc) {
    const DevicePlan& plan = m_plan;
    cudaStream_t stream = m_stream.get();
    m_result = PinnedBuffer(epoch_records * sizeof(float));
    if (plan.mixed()) {
        upload_mixed_state(desc);
    } else {
        check_cuda(cudaMemcpyAsync(m_params.get(), desc.parameters, 4ull * plan.parameter_count,
                                   cudaMemcpyHostToDevice, stream),
                   "uploading the parameters");
        if (plan.state_count)
            check_cuda(cudaMemcpyAsync(m_state.get(), desc.optimizer_state, 4ull * plan.state_count,
                                       cudaMemcpyHostToDevice, stream),
                       "uploading the optimizer state");
    }
    brain_cuda_scalars scalars{};
    scalars.epoch = desc.first_epoch;
    scalars.step = desc.optimizer_step;
    scalars.bad_loss_batch = BRAIN_CUDA_NO_BAD_BATCH;
    scalars.bad_weight_batch = BRAIN_CUDA_NO_BAD_BATCH;
    scalars.one = 1.0f;
    scalars.zero = 0.0f;
    scalars.decay = 1.0f;
    check_cuda(cudaMemcpyAsync(m_scalars.get(), &scalars, sizeof scalars, cudaMemcpyHostToDevice, stream),
               "uploading the scalar block");
    m_counters.moved_to_device(4ull * (plan.parameter_count + plan.state_count) + sizeof scalars);
    m_host_rates.assign(plan.batch_count(), plan.optimizer.learning_rate);
    upload_rates();
    // The descriptor's pointers are borrowed: the copies must be done before session_open returns.
    check_cuda(cudaStreamSynchronize(stream), "uploading the session's data");
}

void CudaSession::require_usable(const char* operation) const {
    if (!m_failure.empty())
        fail(BRAIN_ERR_INVALID_STATE, std::string("cannot ") + operation + ": this CUDA session failed earlier (" +
                                          m_failure + "); open a new session from the last checkpoint");
}

float CudaSession::train_epoch() {
    float loss = 0.0f;
    std::uint64_t trained = 0;
    train_epochs(1, &loss, trained);
    return loss;
}

void CudaSession::train_epochs(std::uint64_t count, float* losses, std::uint64_t& trained) {
    require_usable("train an epoch");
    check_cuda(cudaSetDevice(m_device), "cudaSetDevice");
    cudaStream_t stream = m_stream.get();
    auto* scalars = static_cast<brain_cuda_scalars*>(m_scalars.get());
    auto* records =
        reinterpret_cast<EpochRecord*>(static_cast<unsigned char*>(m_scalars.get()) + sizeof(brain_cuda_scalars));
    while (trained < count) {
        // Staged epochs wait on the host within the epoch anyway: one at a time.
        const std::uint64_t group = m_resident ? std::min<std::uint64_t>(count - trained, epoch_records) : 1;
        const auto start = Clock::now();
        try {
            for (std::uint64_t i = 0; i < group; ++i) {
                // Rates given for one epoch only give way to the last of them (the ABI's rule), uploaded before
                // the launch; the stream orders the copy after the epoch before.
                if (!m_rates_fresh && !m_rates_uniform) {
                    std::fill(m_host_rates.begin(), m_host_rates.end(), m_host_rates.back());
                    m_rates_uniform = true;
                    upload_rates();
                }
                m_rates_fresh = false;
                if (!m_resident)
                    run_staged_epoch();
                else if (m_fused)
                    run_fused_epoch();
                else if (!m_use_graphs)
                    enqueue_resident_epoch();
                else
                    run_graph_epoch();
                // The next epoch overwrites the scalar block's flags and loss: each epoch keeps its own on the
                // device, and only the losses cross back, in one copy for the group.
                check_cuda(cudaMemcpyAsync(&records[i], &scalars->bad_loss_batch, sizeof(EpochRecord),
                                           cudaMemcpyDeviceToDevice, stream),
                           "keeping the epoch's loss");
            }
            check_cuda(cudaMemcpy2DAsync(m_result.floats(), sizeof(float), &records[0].result, sizeof(EpochRecord),
                                         sizeof(float), group, cudaMemcpyDeviceToHost, stream),
                       "reading the epochs' losses");
            check_cuda(cudaStreamSynchronize(stream), "the epoch");
        } catch (const sdk::Failure& failure) {
            m_failure = failure.what();
            throw;
        }
        m_counters.moved_to_host(group * sizeof(float));
        m_counters.add_time(Phase::Training, Clock::now() - start);
        for (std::uint64_t i = 0; i < group; ++i) {
            const float loss = m_result.floats()[i];
            m_counters.count_batches(m_plan.batch_count());
            if (!std::isfinite(loss)) {
                // The epochs queued after it trained on its non-finite values; the session keeps none of them.
                EpochRecord record{};
                const bool known =
                    cudaMemcpy(&record, &records[i], sizeof record, cudaMemcpyDeviceToHost) == cudaSuccess;
                if (known) m_counters.moved_to_host(sizeof record);
                fail_numerical(loss, known ? &record : nullptr);
            }
            m_counters.count_epoch();
            losses[trained++] = loss;
        }
    }
}

void CudaSession::set_learning_rate(float learning_rate) {
    if (!std::isfinite(learning_rate) || !(learning_rate > 0.0f))
        fail(BRAIN_ERR_INVALID_ARGUMENT,
             "the learning rate must be finite and > 0; got " + std::to_string(learning_rate));
    require_usable("change the learning rate");
    check_cuda(cudaSetDevice(m_device), "cudaSetDevice");
    m_plan.optimizer.learning_rate = learning_rate;
    std::fill(m_host_rates.begin(), m_host_rates.end(), learning_rate);
    m_rates_uniform = true;
    m_rates_fresh = false;
    upload_rates();
}

void CudaSession::set_step_learning_rates(const float* rates, std::uint64_t count) {
    require_usable("take learning rates");
    if (count != m_plan.batch_count())
        fail(BRAIN_ERR_INVALID_ARGUMENT,
             "session_set_step_learning_rates: expected " + std::to_string(m_plan.batch_count()) +
                 " rates (one per batch of the next epoch), got " + std::to_string(count));
    for (std::uint64_t i = 0; i < count; ++i)
        if (!std::isfinite(rates[i]) || !(rates[i] > 0.0f))
            fail(BRAIN_ERR_INVALID_ARGUMENT, "session_set_step_learning_rates: rate " + std::to_string(i) +
                                                 " must be finite and > 0; got " + std::to_string(rates[i]));
    check_cuda(cudaSetDevice(m_device), "cudaSetDevice");
    m_host_rates.assign(rates, rates + count);
    m_rates_uniform = std::all_of(rates, rates + count, [&](float r) { return r == rates[0]; });
    m_rates_fresh = true;
    m_plan.optimizer.learning_rate = rates[count - 1];
    upload_rates();
}

void CudaSession::upload_rates() {
    // From pageable memory: the call returns once the bytes are staged, so the vector may change afterwards; the
    // stream orders the copy before the next epoch's launch.
    const std::uint64_t bytes = 4ull * m_host_rates.size();
    try {
        check_cuda(
            cudaMemcpyAsync(m_rates.get(), m_host_rates.data(), bytes, cudaMemcpyHostToDevice, m_stream.get()),
            "uploading the steps' learning rates");
    } catch (const sdk::Failure& failure) {
        m_failure = failure.what();
        throw;
    }
    m_counters.moved_to_device(bytes);
}

} // namespace brain::cuda
