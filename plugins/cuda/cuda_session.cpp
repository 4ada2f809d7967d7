#include "cuda_session.hpp"

#include "cuda_device.hpp"
#include "cuda_plugin_log.hpp"
#include "device_scalars.h"
#include "fault_injection.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace brain::cuda {

namespace {

using Clock = std::chrono::steady_clock;
using u64 = unsigned long long; // the kernels' 64-bit parameter type

constexpr unsigned threads_per_block = 256;
constexpr unsigned rows_per_warp_block = threads_per_block / 32;
constexpr unsigned fused_threads = 256; // BRAIN_FUSED_THREADS in kernels/brain_fused_gemm.cu
// The auto choice of the fused epoch (fused_epoch_pays): no layer wider than this, and at most this many
// multiply-adds per optimizer step.
constexpr std::size_t fused_max_width = 1024;
constexpr double fused_max_multiply_adds = 3.0e8;

std::string mib(std::uint64_t bytes) {
    char text[64];
    std::snprintf(text, sizeof text, "%llu bytes (%.2f MiB)", static_cast<unsigned long long>(bytes),
                  static_cast<double>(bytes) / (1024.0 * 1024.0));
    return text;
}

[[noreturn]] void invalid(const std::string& message) {
    fail(BRAIN_ERR_INVALID_ARGUMENT, message);
}

// cuBLAS takes int dimensions.
int dim(std::size_t value) {
    return static_cast<int>(value);
}

// Whether the fused epoch kernel is expected to beat the cuBLAS path for this plan (BRAIN_CUDA_FUSED unset).
bool fused_epoch_pays(const sdk::SessionPlan& plan) {
    // The fused kernel multiplies with plain FP32 FMAs from shared memory, several times slower than cuBLAS per
    // FLOP, but saves a launch gap per operation. It pays while a step's arithmetic is small: x1024 (2.5e8
    // multiply-adds per step) is the largest measured config it wins (1.44x the graph path, with the loss check
    // passing; docs/performance.md); wide (6.5e10) is far on cuBLAS's side and excluded by its width anyway.
    std::size_t widest = 0;
    double multiply_adds = 0.0;
    for (const LayerPlan& layer : plan.layers) {
        widest = std::max({widest, layer.inputs, layer.outputs});
        multiply_adds += 3.0 * static_cast<double>(layer.inputs) * static_cast<double>(layer.outputs);
    }
    multiply_adds *= static_cast<double>(plan.batch_rows);
    return widest <= fused_max_width && multiply_adds <= fused_max_multiply_adds;
}

} // namespace

// ---------------------------------------------------------------------------------------------------------------
// Plan

std::uint64_t SessionPlan::tensor_bytes(std::size_t b) const noexcept {
    std::uint64_t total = 2 * charged_bytes(4ull * parameter_count) + charged_bytes(4ull * state_count) +
                          charged_bytes(sizeof(brain_cuda_scalars)) + charged_bytes(4ull * b * input_width) +
                          charged_bytes(4ull * b * target_width);
    for (const LayerPlan& layer : layers) {
        const std::uint64_t buffer = charged_bytes(4ull * b * layer.outputs);
        total += (layer.activation == BRAIN_ACT_LINEAR ? 2 : 3) * buffer;
    }
    return total;
}

std::uint64_t SessionPlan::scratch_bytes(std::size_t b) const noexcept {
    return charged_bytes(4ull * b);
}

std::uint64_t SessionPlan::dataset_bytes() const noexcept {
    std::uint64_t total = charged_bytes(4ull * rows * input_width) + charged_bytes(4ull * rows * target_width);
    if (config.shuffle) total += charged_bytes(4ull * rows);
    return total;
}

SessionPlan make_session_plan(const brain_session_desc& desc) {
    SessionPlan plan{sdk::plan_session(desc)};
    // Row indices travel through 32-bit kernel arguments (the shuffle, gathers and staging).
    if (plan.rows > std::numeric_limits<uint32_t>::max())
        invalid("the data set has " + std::to_string(plan.rows) + " rows; the CUDA backend supports at most " +
                std::to_string(std::numeric_limits<uint32_t>::max()));
    return plan;
}

// ---------------------------------------------------------------------------------------------------------------
// Session

CudaSession::CudaSession(const brain_session_desc& desc)
    : m_plan(make_session_plan(desc)), m_allocator(desc.memory_budget_bytes) {
    const auto start = Clock::now();
    const SessionPlan& plan = m_plan;
    const std::uint64_t budget = plan.budget_bytes;

    // The budget, before anything touches the device: the tensors and the kernels' scratch must fit.
    const std::uint64_t needed = plan.tensor_bytes(plan.batch_rows) + plan.scratch_bytes(plan.batch_rows);
    if (budget != 0 && needed > budget) {
        std::size_t lo = 0, hi = plan.batch_rows; // largest b with tensor+scratch(b) <= budget
        while (lo < hi) {
            const std::size_t mid = lo + (hi - lo + 1) / 2;
            if (plan.tensor_bytes(mid) + plan.scratch_bytes(mid) <= budget)
                lo = mid;
            else
                hi = mid - 1;
        }
        fail(BRAIN_ERR_BUDGET_EXCEEDED, "the CUDA session needs " + mib(needed) +
                                            " of device memory for batch size " + std::to_string(plan.batch_rows) +
                                            " (parameters, gradients, optimizer state and batch tensors) but "
                                            "the memory budget is " +
                                            mib(budget) + "; " +
                                            (lo > 0 ? "the largest batch size that fits is " + std::to_string(lo)
                                                    : "not even batch size 1 fits: raise the budget to at least " +
                                                          mib(plan.tensor_bytes(1) + plan.scratch_bytes(1))) +
                                            "; nothing was allocated");
    }
    std::uint64_t left = budget == 0 ? std::numeric_limits<std::uint64_t>::max() : budget - needed;
    const bool resident = plan.dataset_bytes() <= left;
    if (resident) left -= plan.dataset_bytes();
    // cuBLAS's recommended workspace on Hopper is 32 MiB; take less when the budget is tight, none if need be.
    std::uint64_t cublas_workspace = 0;
    for (std::uint64_t candidate : {32ull << 20, 4ull << 20, 1ull << 20})
        if (candidate <= left) {
            cublas_workspace = candidate;
            break;
        }

    m_device = desc.device;
    // NVRTC (or the disk cache) works while this thread creates the context: neither needs the other. (A bad
    // device index makes the prefetch a no-op; select_device reports it.)
    KernelPrefetch prefetch(m_device);
    const auto checked = Clock::now();
    select_device(m_device);
    check_cuda(cudaFree(nullptr), "creating the CUDA context");
    const auto context = Clock::now();
    check_cuda(cudaDeviceGetAttribute(&m_sm_count, cudaDevAttrMultiProcessorCount, m_device),
               "cudaDeviceGetAttribute");
    m_kernels = &kernels_for_current_device();
    const auto kernels = Clock::now();
    m_stream.emplace();
    m_fused = resident && choose_fused_epoch();
    // The fused epoch multiplies with its own kernels: no cuBLAS handle, no workspace, no cuBLAS start-up.
    if (m_fused)
        cublas_workspace = 0;
    else
        m_cublas.emplace();
    const auto cublas = Clock::now();
    switch (plan.precision) {
    case BRAIN_PRECISION_TF32:
        m_compute = CUBLAS_COMPUTE_32F_FAST_TF32;
        break;
    case BRAIN_PRECISION_BF16:
        m_compute = CUBLAS_COMPUTE_32F_FAST_16BF;
        break;
    default:
        m_compute = CUBLAS_COMPUTE_32F;
        break;
    }
    const char* graphs = std::getenv("BRAIN_CUDA_GRAPHS");
    m_use_graphs = !(graphs && std::strcmp(graphs, "0") == 0);
    m_first_epoch = desc.first_epoch;

    allocate_and_upload(desc, resident, cublas_workspace);
    if (m_fused) prepare_fused_epoch(left);
    const auto end = Clock::now();
    m_setup_time = std::chrono::duration_cast<std::chrono::nanoseconds>(end - start);
    const auto ms = [](Clock::duration d) {
        char text[32];
        std::snprintf(text, sizeof text, "%.1f ms", std::chrono::duration<double, std::milli>(d).count());
        return std::string(text);
    };
    log_message(
        1, "cuda session on device " + std::to_string(m_device) + " (" + m_kernels->architecture + "): tensors " +
               mib(m_allocator.peak(MemoryKind::Tensor)) + ", data set " + (m_resident ? "resident" : "staged") +
               ", cuBLAS workspace " + mib(cublas_workspace) + ", epoch: " +
               (m_fused ? "fused kernel (" + std::to_string(m_fused_grid) + " blocks)"
                        : std::string(m_use_graphs ? "CUDA graph" : "direct launches")) +
               "; set-up " + ms(end - start) + ": checks " + ms(checked - start) + ", device and context " +
               ms(context - checked) + ", kernels (waiting for NVRTC or the cache) " + ms(kernels - context) +
               ", stream and cuBLAS " + ms(cublas - kernels) + ", allocation and upload " + ms(end - cublas));
}

// ---------------------------------------------------------------------------------------------------------------
// The fused epoch (kernels/brain_fused_mlp.cu)

bool CudaSession::choose_fused_epoch() {
    const SessionPlan& plan = m_plan;
    const char* setting = std::getenv("BRAIN_CUDA_FUSED");
    const std::string mode = setting ? setting : "auto";
    if (mode == "0") return false;
    // TF32 and BF16 are tensor-core precisions, which only the cuBLAS path has.
    if (plan.precision != BRAIN_PRECISION_FLOAT32 || plan.layers.size() > BRAIN_FUSED_MAX_LAYERS ||
        plan.config.batch_size > BRAIN_FUSED_MAX_BATCH)
        return false;
    int cooperative = 0;
    check_cuda(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, m_device),
               "cudaDeviceGetAttribute");
    int per_sm = 0;
    check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                   &per_sm, reinterpret_cast<const void*>(m_kernels->fused_epoch), fused_threads, 0),
               "cudaOccupancyMaxActiveBlocksPerMultiprocessor (the fused epoch)");
    if (!cooperative || per_sm < 1) {
        log_message(2, "cuda session: the fused epoch kernel cannot run on this device (cooperative launch " +
                           std::string(cooperative ? "supported" : "unsupported") + ", " + std::to_string(per_sm) +
                           " resident blocks per SM); using the cuBLAS path");
        return false;
    }
    // One block per SM: more blocks made the barriers dearer and the steps slower (docs/performance.md).
    m_fused_grid = static_cast<unsigned>(m_sm_count);
    if (mode == "1") return true;
    return fused_epoch_pays(plan);
}

void CudaSession::prepare_fused_epoch(std::uint64_t spare_bytes) {
    const SessionPlan& plan = m_plan;
    brain_fused_epoch_args& a = m_fused_args;
    a = brain_fused_epoch_args{};
    for (std::size_t l = 0; l < plan.layers.size(); ++l) {
        const LayerPlan& layer = plan.layers[l];
        brain_fused_layer& f = a.layers[l];
        f.z = m_z[l].floats();
        f.a = m_a[l].get() ? m_a[l].floats() : f.z;
        f.delta = m_delta[l].floats();
        f.weight_offset = layer.weight_offset;
        f.bias_offset = layer.bias_offset;
        f.inputs = static_cast<uint32_t>(layer.inputs);
        f.outputs = static_cast<uint32_t>(layer.outputs);
        f.activation = layer.activation;
        f.param = layer.param;
    }
    a.params = m_params.floats();
    a.grads = m_grads.floats();
    a.state_m = m_state.floats();
    a.state_v = plan.optimizer.kind == BRAIN_OPT_SGD ? nullptr : m_state.floats() + plan.parameter_count;
    a.features = m_features.floats();
    a.targets = m_targets.floats();
    a.perm = plan.config.shuffle ? static_cast<uint32_t*>(m_perm.get()) : nullptr;
    a.row_loss = m_row_loss.floats();
    a.scalars = static_cast<brain_cuda_scalars*>(m_scalars.get());
    a.rows = plan.rows;
    a.seed = plan.config.seed;
    a.parameter_count = plan.parameter_count;
    a.layer_count = static_cast<uint32_t>(plan.layers.size());
    a.batch_size = static_cast<uint32_t>(plan.config.batch_size);
    a.loss = plan.loss;
    a.optimizer = plan.optimizer.kind;
    a.beta1 = plan.optimizer.beta1;
    a.beta2 = plan.optimizer.beta2;
    a.epsilon = plan.optimizer.epsilon;
    a.weight_decay = plan.optimizer.weight_decay;
    a.momentum = plan.optimizer.momentum;
    // A narrow head whose gradient fits a warp's slice of shared memory: the loss phase also does the head's
    // backward pass, given room for each block's share of the head's gradient (kernel: fused_output_and_loss),
    // which saves a phase and its grid barrier per step. Workspace, taken only where the budget has room for it;
    // without it the kernel runs the head's backward phase as before.
    const LayerPlan& head = plan.layers.back();
    const std::uint64_t head_floats = head.outputs * (head.inputs + 1);
    const std::uint64_t head_bytes = 4ull * m_fused_grid * head_floats;
    if (plan.layers.size() >= 2 && head.outputs <= BRAIN_FUSED_HEAD_WIDTH &&
        head_floats <= BRAIN_FUSED_HEAD_SLICE && charged_bytes(head_bytes) <= spare_bytes) {
        m_fused_head =
            m_allocator.allocate(head_bytes, MemoryKind::Workspace, "the fused epoch's head gradient shares");
        a.head_partial = m_fused_head.floats();
    }
    if (const char* profile = std::getenv("BRAIN_CUDA_FUSED_PROFILE");
        profile && std::strcmp(profile, "1") == 0 && batch_count() > 1) {
        m_fused_profile = m_allocator.allocate(8ull * BRAIN_FUSED_PROFILE_TOTAL, MemoryKind::Workspace,
                                               "the fused epoch's profile");
        check_cuda(cudaMemset(m_fused_profile.get(), 0, 8ull * BRAIN_FUSED_PROFILE_TOTAL), "cudaMemset");
        a.profile = static_cast<uint64_t*>(m_fused_profile.get());
    }
}

// BRAIN_CUDA_FUSED_PROFILE=1: log how long each phase of the epoch's second step took (tuning only); with the
// kernel's BRAIN_FUSED_PROFILE_EPOCH=1 also the epoch's time line, against `host_us`, the host's time from the
// launch to the end of the epoch.
void CudaSession::log_fused_profile(double host_us) {
    std::vector<std::uint64_t> all(BRAIN_FUSED_PROFILE_TOTAL);
    if (cudaMemcpy(all.data(), m_fused_profile.get(), 8 * all.size(), cudaMemcpyDeviceToHost) != cudaSuccess)
        return;
    const std::uint64_t* stamps = all.data();
    const std::uint64_t* epoch = stamps + BRAIN_FUSED_PROFILE_SLOTS; // entry, exit, then each step's start
    const std::size_t steps = batch_count();
    if (epoch[0] != 0 && epoch[1] > epoch[0] && steps >= 4 && steps <= BRAIN_FUSED_PROFILE_STEPS) {
        // Steps 2.. but the last (step 1 holds the profile's two empty barriers; the last ends with the epoch's
        // end), each from its start to the next one's.
        std::vector<double> later;
        for (std::size_t b = 2; b + 1 < steps; ++b) later.push_back((epoch[3 + b] - epoch[2 + b]) / 1000.0);
        std::sort(later.begin(), later.end());
        double sum = 0;
        for (double v : later) sum += v;
        char text[512];
        std::snprintf(text, sizeof text,
                      "fused epoch time line (microseconds): host, launch to the kernel's end %.2f, kernel (block "
                      "0, entry to exit) %.2f, entry to step 0 %.2f, step 0 %.2f, steps 2..%zu mean %.2f min %.2f "
                      "median %.2f max %.2f, last step to exit %.2f",
                      host_us, (epoch[1] - epoch[0]) / 1000.0, (epoch[2] - epoch[0]) / 1000.0,
                      (epoch[3] - epoch[2]) / 1000.0, steps - 2, sum / later.size(), later.front(),
                      later[later.size() / 2], later.back(), (epoch[1] - epoch[1 + steps]) / 1000.0);
        log_message(1, text);
    }
    const std::size_t layers = m_plan.layers.size();
    std::string text =
        "fused epoch profile (microseconds, step 2): barrier " + std::to_string((stamps[2] - stamps[0]) / 2000.0);
    std::size_t slot = 2;
    for (std::size_t l = 0; l < layers; ++l, ++slot)
        text += ", forward " + std::to_string(l) + " " + std::to_string((stamps[slot + 1] - stamps[slot]) / 1000.0);
    text += ", loss " + std::to_string((stamps[slot + 1] - stamps[slot]) / 1000.0);
    ++slot;
    for (std::size_t l = layers; l-- > 0; ++slot)
        text +=
            ", backward " + std::to_string(l) + " " + std::to_string((stamps[slot + 1] - stamps[slot]) / 1000.0);
    text += "; step " + std::to_string((stamps[slot] - stamps[2]) / 1000.0);
    log_message(1, text);
}

void CudaSession::launch_fused_epoch() {
    brain_fused_epoch_args args = m_fused_args;
    // The one argument that changes during a session (set_learning_rate).
    args.learning_rate = m_plan.optimizer.learning_rate;
    void* params[] = {&args};
    check_cuda(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(m_kernels->fused_epoch),
                                           dim3(m_fused_grid), dim3(fused_threads), params, 0, m_stream->get()),
               "cudaLaunchCooperativeKernel (the fused epoch)");
}

CudaSession::~CudaSession() {
    // Let queued work finish before its buffers are freed.
    (void)cudaSetDevice(m_device);
    if (m_stream) (void)cudaStreamSynchronize(m_stream->get());
    (void)cudaGetLastError();
}

void CudaSession::allocate_and_upload(const brain_session_desc& desc, bool resident,
                                      std::uint64_t cublas_workspace) {
    const SessionPlan& plan = m_plan;
    const std::size_t b = plan.batch_rows;
    cudaStream_t stream = m_stream->get();
    m_resident = resident;

    m_params = m_allocator.allocate(4ull * plan.parameter_count, MemoryKind::Tensor, "the parameters");
    m_grads = m_allocator.allocate(4ull * plan.parameter_count, MemoryKind::Tensor, "the gradients");
    m_state = m_allocator.allocate(4ull * plan.state_count, MemoryKind::Tensor, "the optimizer state");
    m_scalars = m_allocator.allocate(sizeof(brain_cuda_scalars), MemoryKind::Tensor, "the scalar block");
    // Unshuffled resident batches are read in place from the data set; everything else is gathered or staged.
    if (!resident || plan.config.shuffle) {
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
    if (cublas_workspace)
        m_workspace = m_allocator.allocate(cublas_workspace, MemoryKind::Workspace, "the cuBLAS workspace");

    if (m_cublas) {
        check_cublas(cublasSetStream(m_cublas->get(), stream), "cublasSetStream");
        // After cublasSetStream, which resets it: the workspace comes from our budget, never from cuBLAS's pool.
        check_cublas(cublasSetWorkspace(m_cublas->get(), m_workspace.get(), cublas_workspace),
                     "cublasSetWorkspace");
        check_cublas(cublasSetPointerMode(m_cublas->get(), CUBLAS_POINTER_MODE_DEVICE), "cublasSetPointerMode");
    }

    const brain_dataset_view data = sdk::read_struct(desc.dataset);
    const std::uint64_t feature_bytes = 4ull * plan.rows * plan.input_width;
    const std::uint64_t target_bytes = 4ull * plan.rows * plan.target_width;
    if (resident) {
        m_features = m_allocator.allocate(feature_bytes, MemoryKind::Dataset, "the data set's features");
        m_targets = m_allocator.allocate(target_bytes, MemoryKind::Dataset, "the data set's targets");
        if (plan.config.shuffle)
            m_perm = m_allocator.allocate(4ull * plan.rows, MemoryKind::Dataset, "the epoch's batch order");
        check_cuda(cudaMemcpyAsync(m_features.get(), data.features, feature_bytes, cudaMemcpyHostToDevice, stream),
                   "uploading the data set");
        check_cuda(cudaMemcpyAsync(m_targets.get(), data.targets, target_bytes, cudaMemcpyHostToDevice, stream),
                   "uploading the data set");
        m_host_to_device += feature_bytes + target_bytes;
    } else {
        // The view is borrowed for session_open only: keep a host copy to stage from.
        m_host_features.assign(data.features, data.features + plan.rows * plan.input_width);
        m_host_targets.assign(data.targets, data.targets + plan.rows * plan.target_width);
        const std::size_t stage_bytes = 4ull * b * (plan.input_width + plan.target_width);
        for (PinnedBuffer& stage : m_stage) stage = PinnedBuffer(stage_bytes);
        m_stage_done.resize(2);
    }
    m_result = PinnedBuffer(sizeof(float));

    check_cuda(cudaMemcpyAsync(m_params.get(), desc.parameters, 4ull * plan.parameter_count, cudaMemcpyHostToDevice,
                               stream),
               "uploading the parameters");
    if (plan.state_count)
        check_cuda(cudaMemcpyAsync(m_state.get(), desc.optimizer_state, 4ull * plan.state_count,
                                   cudaMemcpyHostToDevice, stream),
                   "uploading the optimizer state");
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
    m_host_to_device += 4ull * (plan.parameter_count + plan.state_count) + sizeof scalars;
    // The descriptor's pointers are borrowed: the copies must be done before session_open returns.
    check_cuda(cudaStreamSynchronize(stream), "uploading the session's data");
}

void CudaSession::require_usable(const char* operation) const {
    if (!m_failure.empty())
        fail(BRAIN_ERR_INVALID_STATE, std::string("cannot ") + operation + ": this CUDA session failed earlier (" +
                                          m_failure + "); open a new session from the last checkpoint");
}

std::size_t CudaSession::batch_count() const noexcept {
    return (m_plan.rows + m_plan.config.batch_size - 1) / m_plan.config.batch_size;
}

unsigned CudaSession::elementwise_blocks(std::uint64_t count) const noexcept {
    const std::uint64_t wanted = (count + threads_per_block - 1) / threads_per_block;
    return static_cast<unsigned>(std::clamp<std::uint64_t>(wanted, 1, static_cast<std::uint64_t>(m_sm_count) * 8));
}

void CudaSession::gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* a, int lda,
                       const float* b, int ldb, float* c, int ldc, const char* what) {
    const auto* scalars = static_cast<const brain_cuda_scalars*>(m_scalars.get());
    const cublasStatus_t status =
        inject_fault(Fault::Gemm)
            ? CUBLAS_STATUS_EXECUTION_FAILED
            : cublasGemmEx(m_cublas->get(), ta, tb, m, n, k, &scalars->one, a, CUDA_R_32F, lda, b, CUDA_R_32F, ldb,
                           &scalars->zero, c, CUDA_R_32F, ldc, m_compute, CUBLAS_GEMM_DEFAULT);
    check_cublas(status, what);
}

// Row-major tensors seen by column-major cuBLAS: a row-major (r x c) matrix is its column-major transpose.
// Forward  Z (B x out) = X W^T          ->  Z^T = op_T(W^T) X^T:   gemm(T, N, out, B, in, W, in, X, in, Z, out)
// Weights  dW (out x in) = delta^T X    ->  dW^T = X^T delta:      gemm(N, T, in, out, B, X, in, delta, out, dW,
// in) Inputs   dX (B x in) = delta W        ->  dX^T = W^T delta^T:    gemm(N, N, in, B, out, W, in, delta, out,
// dX, in)
void CudaSession::enqueue_batch(const float* x, const float* t, unsigned rows, int batch) {
    const SessionPlan& plan = m_plan;
    const KernelModule& k = *m_kernels;
    cudaStream_t stream = m_stream->get();
    float* params = m_params.floats();
    float* grads = m_grads.floats();
    auto* scalars = static_cast<brain_cuda_scalars*>(m_scalars.get());
    const std::size_t layer_count = plan.layers.size();
    const unsigned warp_blocks = (rows + rows_per_warp_block - 1) / rows_per_warp_block;

    const float* input = x;
    for (std::size_t l = 0; l < layer_count; ++l) {
        const LayerPlan& layer = plan.layers[l];
        float* z = m_z[l].floats();
        float* a = m_a[l].get() ? m_a[l].floats() : z;
        const float* bias = params + layer.bias_offset;
        gemm(CUBLAS_OP_T, CUBLAS_OP_N, dim(layer.outputs), dim(rows), dim(layer.inputs),
             params + layer.weight_offset, dim(layer.inputs), input, dim(layer.inputs), z, dim(layer.outputs),
             "cublasGemmEx (forward)");
        if (l + 1 == layer_count) {
            launch(k.output_loss, dim3(warp_blocks), dim3(threads_per_block), stream, "brain_output_loss", z, a,
                   m_delta[l].floats(), bias, t, m_row_loss.floats(), rows, static_cast<unsigned>(layer.outputs),
                   static_cast<int>(layer.activation), layer.param, static_cast<int>(plan.loss));
        } else if (layer.activation == BRAIN_ACT_SOFTMAX) {
            launch(k.bias_softmax, dim3(warp_blocks), dim3(threads_per_block), stream, "brain_bias_softmax", z, a,
                   bias, rows, static_cast<unsigned>(layer.outputs));
        } else {
            const std::uint64_t count = static_cast<std::uint64_t>(rows) * layer.outputs;
            launch(k.bias_activation, dim3(elementwise_blocks(count)), dim3(threads_per_block), stream,
                   "brain_bias_activation", z, a, bias, rows, static_cast<unsigned>(layer.outputs),
                   static_cast<int>(layer.activation), layer.param);
        }
        input = a;
    }

    for (std::size_t l = layer_count; l-- > 0;) {
        const LayerPlan& layer = plan.layers[l];
        const float* prev = l == 0 ? x : (m_a[l - 1].get() ? m_a[l - 1].floats() : m_z[l - 1].floats());
        float* delta = m_delta[l].floats();
        gemm(CUBLAS_OP_N, CUBLAS_OP_T, dim(layer.inputs), dim(layer.outputs), dim(rows), prev, dim(layer.inputs),
             delta, dim(layer.outputs), grads + layer.weight_offset, dim(layer.inputs),
             "cublasGemmEx (weight gradient)");
        launch(k.column_sums, dim3(static_cast<unsigned>((layer.outputs + 31) / 32)), dim3(32, 8), stream,
               "brain_column_sums", static_cast<const float*>(delta), grads + layer.bias_offset, rows,
               static_cast<unsigned>(layer.outputs));
        if (l == 0) continue;
        const LayerPlan& below = plan.layers[l - 1];
        float* below_delta = m_delta[l - 1].floats();
        gemm(CUBLAS_OP_N, CUBLAS_OP_N, dim(layer.inputs), dim(rows), dim(layer.outputs),
             params + layer.weight_offset, dim(layer.inputs), delta, dim(layer.outputs), below_delta,
             dim(layer.inputs), "cublasGemmEx (backward)");
        const float* bz = m_z[l - 1].floats();
        const float* ba = m_a[l - 1].get() ? m_a[l - 1].floats() : bz;
        if (below.activation == BRAIN_ACT_SOFTMAX) {
            launch(k.backprop_softmax, dim3(warp_blocks), dim3(threads_per_block), stream, "brain_backprop_softmax",
                   below_delta, ba, rows, static_cast<unsigned>(below.outputs));
        } else if (below.activation != BRAIN_ACT_LINEAR) {
            const u64 count = static_cast<u64>(rows) * below.outputs;
            launch(k.backprop_activation, dim3(elementwise_blocks(count)), dim3(threads_per_block), stream,
                   "brain_backprop_activation", below_delta, bz, ba, count, static_cast<int>(below.activation),
                   below.param);
        }
    }

    const brain_optimizer_desc& opt = plan.optimizer;
    launch(k.finish_batch, dim3(1), dim3(threads_per_block), stream, "brain_finish_batch", scalars,
           static_cast<const float*>(m_row_loss.floats()), rows, batch, opt.learning_rate, opt.beta1, opt.beta2,
           opt.weight_decay, static_cast<int>(opt.kind == BRAIN_OPT_ADAMW));
    const u64 n = plan.parameter_count;
    const dim3 grid(elementwise_blocks(n));
    if (opt.kind == BRAIN_OPT_SGD) {
        launch(k.sgd_update, grid, dim3(threads_per_block), stream, "brain_sgd_update", params,
               static_cast<const float*>(grads), m_state.floats(), n, opt.learning_rate, opt.momentum, scalars,
               batch);
    } else {
        launch(k.adam_update, grid, dim3(threads_per_block), stream, "brain_adam_update", params,
               static_cast<const float*>(grads), m_state.floats(), m_state.floats() + plan.parameter_count, n,
               opt.beta1, opt.beta2, opt.epsilon, scalars, batch);
    }
}

void CudaSession::enqueue_resident_epoch() {
    const SessionPlan& plan = m_plan;
    const KernelModule& k = *m_kernels;
    cudaStream_t stream = m_stream->get();
    auto* scalars = static_cast<brain_cuda_scalars*>(m_scalars.get());
    const std::size_t batch_size = plan.config.batch_size;
    const bool shuffle = plan.config.shuffle != 0;
    if (shuffle)
        launch(k.shuffle_permutation, dim3(elementwise_blocks(plan.rows)), dim3(threads_per_block), stream,
               "brain_shuffle_permutation", static_cast<uint32_t*>(m_perm.get()), static_cast<u64>(plan.rows),
               static_cast<u64>(plan.config.seed), static_cast<const brain_cuda_scalars*>(scalars));
    const std::size_t batches = batch_count();
    for (std::size_t b = 0; b < batches; ++b) {
        const std::size_t start = b * batch_size;
        const auto rows = static_cast<unsigned>(std::min(batch_size, plan.rows - start));
        if (shuffle) {
            const u64 count = static_cast<u64>(rows) * (plan.input_width + plan.target_width);
            launch(k.gather_batch, dim3(elementwise_blocks(count)), dim3(threads_per_block), stream,
                   "brain_gather_batch", m_x.floats(), m_t.floats(), static_cast<const float*>(m_features.floats()),
                   static_cast<const float*>(m_targets.floats()), static_cast<const uint32_t*>(m_perm.get()),
                   static_cast<u64>(start), rows, static_cast<unsigned>(plan.input_width),
                   static_cast<unsigned>(plan.target_width));
            enqueue_batch(m_x.floats(), m_t.floats(), rows, static_cast<int>(b));
        } else {
            enqueue_batch(m_features.floats() + start * plan.input_width,
                          m_targets.floats() + start * plan.target_width, rows, static_cast<int>(b));
        }
    }
    launch(k.finish_epoch, dim3(1), dim3(1), stream, "brain_finish_epoch", scalars, static_cast<u64>(plan.rows));
}

void CudaSession::run_staged_epoch() {
    const SessionPlan& plan = m_plan;
    cudaStream_t stream = m_stream->get();
    const std::size_t batch_size = plan.config.batch_size;
    const std::uint64_t epoch = m_first_epoch + m_epochs;
    const std::size_t in = plan.input_width, out = plan.target_width;
    const std::size_t batches = batch_count();
    for (std::size_t b = 0; b < batches; ++b) {
        const std::size_t start = b * batch_size;
        const std::size_t rows = std::min(batch_size, plan.rows - start);
        const std::size_t slot = b % 2;
        // The copy that last read this staging buffer (two batches ago) must be done before it is refilled;
        // this wait is the only host synchronisation inside a staged epoch.
        if (b >= 2) check_cuda(cudaEventSynchronize(m_stage_done[slot].get()), "waiting for a staging copy");
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
        m_host_to_device += rows * (in + out) * sizeof(float);
        enqueue_batch(m_x.floats(), m_t.floats(), static_cast<unsigned>(rows), static_cast<int>(b));
    }
    launch(m_kernels->finish_epoch, dim3(1), dim3(1), stream, "brain_finish_epoch",
           static_cast<brain_cuda_scalars*>(m_scalars.get()), static_cast<u64>(plan.rows));
}

float CudaSession::train_epoch() {
    require_usable("train an epoch");
    const auto start = Clock::now();
    check_cuda(cudaSetDevice(m_device), "cudaSetDevice");
    cudaStream_t stream = m_stream->get();
    try {
        if (!m_resident) {
            run_staged_epoch();
        } else if (m_fused) {
            const auto launched = Clock::now();
            launch_fused_epoch();
            if (m_fused_profile.get()) {
                check_cuda(cudaStreamSynchronize(stream), "the epoch");
                log_fused_profile(std::chrono::duration<double, std::micro>(Clock::now() - launched).count());
            }
        } else if (!m_use_graphs) {
            enqueue_resident_epoch();
        } else {
            if (!m_graph.ready()) {
                // The epoch's launches never change (epoch and step live on the device), so one capture serves
                // every later epoch.
                check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
                           "cudaStreamBeginCapture");
                try {
                    enqueue_resident_epoch();
                } catch (...) {
                    cudaGraph_t broken = nullptr;
                    (void)cudaStreamEndCapture(stream, &broken);
                    if (broken) (void)cudaGraphDestroy(broken);
                    throw;
                }
                cudaGraph_t graph = nullptr;
                check_cuda(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture (the epoch)");
                m_graph.adopt(graph);
            }
            check_cuda(cudaGraphLaunch(m_graph.get(), stream), "cudaGraphLaunch (the epoch)");
        }
        auto* scalars = static_cast<brain_cuda_scalars*>(m_scalars.get());
        check_cuda(
            cudaMemcpyAsync(m_result.floats(), &scalars->result, sizeof(float), cudaMemcpyDeviceToHost, stream),
            "reading the epoch's loss");
        check_cuda(cudaStreamSynchronize(stream), "the epoch");
    } catch (const sdk::Failure& failure) {
        m_failure = failure.what();
        throw;
    }
    m_device_to_host += sizeof(float);
    const float loss = *m_result.floats();
    m_training_time += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start);
    m_batches += batch_count();
    if (!std::isfinite(loss)) fail_numerical(loss);
    ++m_epochs;
    return loss;
}

void CudaSession::fail_numerical(float loss) {
    // The error path may read more than the loss: which batch tripped first.
    brain_cuda_scalars scalars{};
    const bool known = cudaMemcpy(&scalars, m_scalars.get(), sizeof scalars, cudaMemcpyDeviceToHost) == cudaSuccess;
    if (known) m_device_to_host += sizeof scalars;
    const std::uint64_t epoch = m_first_epoch + m_epochs;
    const std::string where = "epoch " + std::to_string(epoch) + " (0-based, counting earlier epochs)";
    const std::string total = " of " + std::to_string(batch_count());
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
    ++m_epochs;
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
        invalid("checkpoint buffers hold " + std::to_string(parameter_count) + " parameters and " +
                std::to_string(optimizer_state_count) + " state values; the session has " +
                std::to_string(m_plan.parameter_count) + " and " + std::to_string(m_plan.state_count));
    if (!parameters || (optimizer_state_count && !optimizer_state) || !out_step)
        invalid("a checkpoint output pointer is null");
    const auto start = Clock::now();
    check_cuda(cudaSetDevice(m_device), "cudaSetDevice");
    cudaStream_t stream = m_stream->get();
    auto* scalars = static_cast<brain_cuda_scalars*>(m_scalars.get());
    std::uint64_t step = 0;
    check_cuda(cudaMemcpyAsync(parameters, m_params.get(), 4ull * parameter_count, cudaMemcpyDeviceToHost, stream),
               "copying the parameters back");
    if (optimizer_state_count)
        check_cuda(cudaMemcpyAsync(optimizer_state, m_state.get(), 4ull * optimizer_state_count,
                                   cudaMemcpyDeviceToHost, stream),
                   "copying the optimizer state back");
    check_cuda(cudaMemcpyAsync(&step, &scalars->step, sizeof step, cudaMemcpyDeviceToHost, stream),
               "copying the step count back");
    check_cuda(cudaStreamSynchronize(stream), "the checkpoint copy");
    *out_step = step;
    m_device_to_host += 4ull * (parameter_count + optimizer_state_count) + sizeof step;
    m_checkpoint_time += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start);
}

brain_session_stats CudaSession::stats() const noexcept {
    brain_session_stats s{};
    s.struct_size = sizeof s;
    s.peak_allocated_bytes = m_allocator.peak(MemoryKind::Tensor);
    s.setup_time_ns = static_cast<uint64_t>(m_setup_time.count());
    s.training_time_ns = static_cast<uint64_t>(m_training_time.count());
    s.checkpoint_time_ns = static_cast<uint64_t>(m_checkpoint_time.count());
    s.epochs = m_epochs;
    s.batches = m_batches;
    s.host_to_device_bytes = m_host_to_device;
    s.device_to_host_bytes = m_device_to_host;
    s.dataset_resident = m_resident ? 1 : 0;
    s.precision = m_plan.precision;
    s.dataset_bytes = m_allocator.peak(MemoryKind::Dataset);
    s.workspace_bytes = m_allocator.peak(MemoryKind::Workspace);
    s.budget_bytes = m_plan.budget_bytes;
    return s;
}

void CudaSession::set_learning_rate(float learning_rate) {
    if (!std::isfinite(learning_rate) || !(learning_rate > 0.0f))
        fail(BRAIN_ERR_INVALID_ARGUMENT,
             "the learning rate must be finite and > 0; got " + std::to_string(learning_rate));
    m_plan.optimizer.learning_rate = learning_rate;
    // The rate is a kernel argument baked into the captured epoch; the next epoch captures a new graph.
    m_graph.reset();
}

} // namespace brain::cuda
