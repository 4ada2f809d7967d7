// CudaSession's fused epochs: whether a session takes the fused epoch kernel (kernels/fused_epoch.cu), its
// arguments and workspace, and its cooperative launch.
#include "cuda_plugin_log.hpp"
#include "cuda_session.hpp"
#include "row_share_plan.hpp"
#include "test_hooks.hpp"

#include <algorithm>
#include <cstdlib>

namespace brain::cuda {

namespace {

constexpr unsigned fused_threads = 256; // BRAIN_FUSED_THREADS in kernels/fused_gemm.cuh
// The auto choice of the fused epoch (fused_epoch_pays): no layer wider than this, and at most this many
// multiply-adds per optimizer step.
constexpr std::size_t fused_max_width = 1024;
constexpr double fused_max_multiply_adds = 3.0e8;

} // namespace

// Whether the fused epoch kernel is expected to beat the cuBLAS path for this plan (BRAIN_CUDA_FUSED unset).
bool fused_epoch_pays(const sdk::SessionPlan& plan) {
    // The fused kernel multiplies with plain FP32 FMAs from shared memory, several times slower than cuBLAS per
    // FLOP, but saves a launch gap per operation. It pays while a step's arithmetic is small: x1024 (2.5e8
    // multiply-adds per step) is the largest measured config it wins (docs/performance.md); wide (6.5e10) is far on
    // cuBLAS's side and excluded by its width anyway.
    std::size_t widest = 0;
    double multiply_adds = 0.0;
    for (const LayerPlan& layer : plan.layers) {
        widest = std::max({widest, layer.inputs, layer.outputs});
        multiply_adds += 3.0 * static_cast<double>(layer.inputs) * static_cast<double>(layer.outputs);
    }
    multiply_adds *= static_cast<double>(plan.batch_rows);
    return widest <= fused_max_width && multiply_adds <= fused_max_multiply_adds;
}

namespace {

// Whether a kernel can run cooperatively at one block of fused_threads per SM on this device.
bool cooperative_fits(cudaKernel_t kernel, const char* what) {
    int per_sm = 0;
    check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reinterpret_cast<const void*>(kernel),
                                                             fused_threads, 0),
               what);
    return per_sm >= 1;
}

} // namespace

bool CudaSession::choose_fused_epoch() {
    const DevicePlan& plan = m_plan;
    const char* setting = std::getenv("BRAIN_CUDA_FUSED");
    const std::string mode = setting ? setting : "auto";
    if (mode == "0") return false;
    if (plan.layers.size() > BRAIN_FUSED_MAX_LAYERS || plan.config.batch_size > BRAIN_FUSED_MAX_BATCH) return false;
    // TF32 and BF16 are tensor-core precisions, which only the cuBLAS path has: the path changes, never the
    // arithmetic, and the log says so where the fused kernel would have run.
    if (plan.precision != BRAIN_PRECISION_FLOAT32) {
        if (mode != "auto" || fused_epoch_pays(plan))
            log_message(1, std::string("cuda session: precision ") +
                               (plan.precision == BRAIN_PRECISION_TF32 ? "tf32" : "bf16") +
                               " runs on the tensor cores through cuBLAS; the fused epoch kernel computes "
                               "in float32 only, so this session takes the cuBLAS path");
        return false;
    }
    int cooperative = 0;
    check_cuda(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, m_device),
               "cudaDeviceGetAttribute");
    const bool fits =
        cooperative && cooperative_fits((*m_kernels)[Kernel::FusedEpoch],
                                        "cudaOccupancyMaxActiveBlocksPerMultiprocessor (the fused epoch)");
    if (!fits) {
        log_message(2, "cuda session: the fused epoch kernel cannot run on this device (cooperative launch " +
                           std::string(cooperative ? "supported, but not one block per SM" : "unsupported") +
                           "); using the cuBLAS path");
        return false;
    }
    // One block per SM: more blocks make the barriers dearer and the steps slower (docs/performance.md).
    m_fused_grid = static_cast<unsigned>(m_sm_count);
    // BRAIN_CUDA_FUSED=1 forces the fused epoch kernel; unset, it is taken where it is expected to be the faster.
    return mode == "1" || fused_epoch_pays(plan);
}

void CudaSession::prepare_fused_epoch(std::uint64_t spare_bytes) {
    const DevicePlan& plan = m_plan;
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
    a.rates = m_rates.floats(); // the epoch's rate per step (set_learning_rate and set_step_learning_rates fill it)
    // A narrow head whose gradient fits a warp's slice of shared memory: the loss phase also does the head's
    // backward pass, given room for each block's share of the head's gradient (kernel: fused_output_and_loss),
    // which saves a phase and its grid barrier per step. Workspace, taken only where the budget has room for it;
    // without it the kernel runs the head's backward phase of its own.
    const LayerPlan& head = plan.layers.back();
    const std::uint64_t head_floats = head.outputs * (head.inputs + 1);
    const std::uint64_t head_bytes = 4ull * m_fused_grid * head_floats;
    if (plan.layers.size() >= 2 && head.outputs <= BRAIN_FUSED_HEAD_WIDTH &&
        head_floats <= BRAIN_FUSED_HEAD_SLICE && charged_bytes(head_bytes) <= spare_bytes &&
        !test_withhold_head_shares()) {
        m_fused_head =
            m_allocator.allocate(head_bytes, MemoryKind::Workspace, "the fused epoch's head gradient shares");
        a.head_partial = m_fused_head.floats();
        spare_bytes -= charged_bytes(head_bytes);
    }
    // Layers whose weight gradient sums many rows go to row shares (row_share_plan.hpp) in the kernel built for
    // them, given room for the workspace: two buffers of shares, one written by a phase while the next reads the
    // other.
    const RowSharePlan shares = plan_row_shares(plan.layers, plan.config.batch_size, a.head_partial != nullptr);
    m_fused_kernel = Kernel::FusedEpoch;
    if (shares.layers != 0 && charged_bytes(shares.bytes) <= spare_bytes &&
        cooperative_fits((*m_kernels)[Kernel::FusedEpochShares],
                         "cudaOccupancyMaxActiveBlocksPerMultiprocessor (the fused epoch with row shares)")) {
        m_fused_kernel = Kernel::FusedEpochShares;
        m_fused_shares = m_allocator.allocate(shares.bytes, MemoryKind::Workspace,
                                              "the fused epoch's weight gradient row shares");
        a.row_shares = m_fused_shares.floats();
        a.row_share_layers = shares.layers;
        a.row_share_width = static_cast<uint32_t>(shares.width);
        std::string layers;
        for (std::size_t l = 0; l < plan.layers.size(); ++l)
            if ((shares.layers >> l) & 1u) layers += (layers.empty() ? "" : ", ") + std::to_string(l);
        log_message(1, "cuda session: the fused epoch kernel sums the weight gradients of layers " + layers +
                           " in row shares");
    }
    if (test_fused_profile_requested() && plan.batch_count() > 1) {
        constexpr std::uint64_t bytes = 8ull * BRAIN_FUSED_PROFILE_SLOTS;
        m_fused_profile = m_allocator.allocate(bytes, MemoryKind::Workspace, "the fused epoch's profile");
        check_cuda(cudaMemset(m_fused_profile.get(), 0, bytes), "cudaMemset");
        a.profile = static_cast<uint64_t*>(m_fused_profile.get());
    }
}

void CudaSession::run_fused_epoch() {
    brain_fused_epoch_args args = m_fused_args;
    void* params[] = {&args};
    check_cuda(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>((*m_kernels)[m_fused_kernel]),
                                           dim3(m_fused_grid), dim3(fused_threads), params, 0, m_stream.get()),
               "cudaLaunchCooperativeKernel (the fused epoch)");
    if (m_fused_profile.get()) {
        check_cuda(cudaStreamSynchronize(m_stream.get()), "the epoch");
        std::uint64_t stamps[BRAIN_FUSED_PROFILE_SLOTS];
        if (cudaMemcpy(stamps, m_fused_profile.get(), sizeof stamps, cudaMemcpyDeviceToHost) == cudaSuccess)
            log_message(1, fused_profile_text(stamps, m_plan.layers.size()));
    }
}

} // namespace brain::cuda
