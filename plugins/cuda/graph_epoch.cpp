// CudaSession's cuBLAS path: each batch as cuBLAS matrix products and the per-operation kernels
// (kernels/layer_kernels.cu). The epoch index, step count, loss sum and error flags live in the device scalar
// block, never in kernel arguments, so every epoch's launch sequence is the same: captured once as a CUDA graph and
// replayed with one launch per epoch (BRAIN_CUDA_GRAPHS=0 launches directly).
#include "cuda_session.hpp"
#include "test_hooks.hpp"

#include <algorithm>

namespace brain::cuda {

namespace {

constexpr unsigned threads_per_block = 256;
constexpr unsigned rows_per_warp_block = threads_per_block / 32;

// cuBLAS takes int dimensions.
int dim(std::size_t value) {
    return static_cast<int>(value);
}

} // namespace

void CudaSession::run_graph_epoch() {
    cudaStream_t stream = m_stream.get();
    if (!m_graph) {
        check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
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
        m_graph = instantiate_graph(graph);
    }
    check_cuda(cudaGraphLaunch(m_graph.get(), stream), "cudaGraphLaunch (the epoch)");
}

void CudaSession::enqueue_resident_epoch() {
    const DevicePlan& plan = m_plan;
    const KernelModule& k = *m_kernels;
    cudaStream_t stream = m_stream.get();
    auto* scalars = static_cast<brain_cuda_scalars*>(m_scalars.get());
    const std::size_t batch_size = plan.config.batch_size;
    const bool shuffle = plan.config.shuffle != 0;
    if (shuffle)
        launch(k, Kernel::ShufflePermutation, dim3(elementwise_blocks(plan.rows)), dim3(threads_per_block), stream,
               static_cast<uint32_t*>(m_perm.get()), static_cast<DeviceU64>(plan.rows),
               static_cast<DeviceU64>(plan.config.seed), static_cast<const brain_cuda_scalars*>(scalars));
    const std::size_t batches = plan.batch_count();
    for (std::size_t b = 0; b < batches; ++b) {
        const std::size_t start = b * batch_size;
        const auto rows = static_cast<unsigned>(std::min(batch_size, plan.rows - start));
        if (plan.mixed()) {
            enqueue_mixed_gather(start, rows);
            enqueue_mixed_batch(rows, static_cast<int>(b));
        } else if (shuffle) {
            const DeviceU64 count = static_cast<DeviceU64>(rows) * (plan.input_width + plan.target_width);
            launch(k, Kernel::GatherBatch, dim3(elementwise_blocks(count)), dim3(threads_per_block), stream,
                   m_x.floats(), m_t.floats(), static_cast<const float*>(m_features.floats()),
                   static_cast<const float*>(m_targets.floats()), static_cast<const uint32_t*>(m_perm.get()),
                   static_cast<DeviceU64>(start), rows, static_cast<unsigned>(plan.input_width),
                   static_cast<unsigned>(plan.target_width));
            enqueue_batch(m_x.floats(), m_t.floats(), rows, static_cast<int>(b));
        } else {
            enqueue_batch(m_features.floats() + start * plan.input_width,
                          m_targets.floats() + start * plan.target_width, rows, static_cast<int>(b));
        }
    }
    launch(k, Kernel::FinishEpoch, dim3(1), dim3(1), stream, scalars, static_cast<DeviceU64>(plan.rows));
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
            : cublasGemmEx(m_cublas.get(), ta, tb, m, n, k, &scalars->one, a, CUDA_R_32F, lda, b, CUDA_R_32F, ldb,
                           &scalars->zero, c, CUDA_R_32F, ldc, m_compute, CUBLAS_GEMM_DEFAULT);
    check_cublas(status, what);
}

// Row-major tensors seen by column-major cuBLAS: a row-major (r x c) matrix is its column-major transpose.
// Forward  Z (B x out) = X W^T       ->  Z^T = op_T(W^T) X^T:  gemm(T, N, out, B, in, W, in, X, in, Z, out)
// Weights  dW (out x in) = delta^T X ->  dW^T = X^T delta:     gemm(N, T, in, out, B, X, in, delta, out, dW, in)
// Inputs   dX (B x in) = delta W     ->  dX^T = W^T delta^T:   gemm(N, N, in, B, out, W, in, delta, out, dX, in)
void CudaSession::enqueue_batch(const float* x, const float* t, unsigned rows, int batch) {
    enqueue_gradients(x, t, rows);
    enqueue_optimizer(rows, batch);
}

void CudaSession::enqueue_gradients(const float* x, const float* t, unsigned rows) {
    const DevicePlan& plan = m_plan;
    const KernelModule& k = *m_kernels;
    cudaStream_t stream = m_stream.get();
    float* params = m_params.floats();
    float* grads = m_grads.floats();
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
            launch(k, Kernel::OutputLoss, dim3(warp_blocks), dim3(threads_per_block), stream, z, a,
                   m_delta[l].floats(), bias, t, m_row_loss.floats(), rows, static_cast<unsigned>(layer.outputs),
                   static_cast<int>(layer.activation), layer.param, static_cast<int>(plan.loss));
        } else if (layer.activation == BRAIN_ACT_SOFTMAX) {
            launch(k, Kernel::BiasSoftmax, dim3(warp_blocks), dim3(threads_per_block), stream, z, a, bias, rows,
                   static_cast<unsigned>(layer.outputs));
        } else {
            const std::uint64_t count = static_cast<std::uint64_t>(rows) * layer.outputs;
            launch(k, Kernel::BiasActivation, dim3(elementwise_blocks(count)), dim3(threads_per_block), stream, z,
                   a, bias, rows, static_cast<unsigned>(layer.outputs), static_cast<int>(layer.activation),
                   layer.param);
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
        launch(k, Kernel::ColumnSums, dim3(static_cast<unsigned>((layer.outputs + 31) / 32)), dim3(32, 8), stream,
               static_cast<const float*>(delta), grads + layer.bias_offset, rows,
               static_cast<unsigned>(layer.outputs));
        if (m_layer_done) (*m_layer_done)(l);
        if (l == 0) continue;
        const LayerPlan& below = plan.layers[l - 1];
        float* below_delta = m_delta[l - 1].floats();
        gemm(CUBLAS_OP_N, CUBLAS_OP_N, dim(layer.inputs), dim(rows), dim(layer.outputs),
             params + layer.weight_offset, dim(layer.inputs), delta, dim(layer.outputs), below_delta,
             dim(layer.inputs), "cublasGemmEx (backward)");
        const float* bz = m_z[l - 1].floats();
        const float* ba = m_a[l - 1].get() ? m_a[l - 1].floats() : bz;
        if (below.activation == BRAIN_ACT_SOFTMAX) {
            launch(k, Kernel::BackpropSoftmax, dim3(warp_blocks), dim3(threads_per_block), stream, below_delta, ba,
                   rows, static_cast<unsigned>(below.outputs));
        } else if (below.activation != BRAIN_ACT_LINEAR) {
            const DeviceU64 count = static_cast<DeviceU64>(rows) * below.outputs;
            launch(k, Kernel::BackpropActivation, dim3(elementwise_blocks(count)), dim3(threads_per_block), stream,
                   below_delta, bz, ba, count, static_cast<int>(below.activation), below.param);
        }
    }
}

void CudaSession::enqueue_optimizer(unsigned rows, int batch) {
    const DevicePlan& plan = m_plan;
    const KernelModule& k = *m_kernels;
    cudaStream_t stream = m_stream.get();
    auto* scalars = static_cast<brain_cuda_scalars*>(m_scalars.get());
    const brain_optimizer_desc& opt = plan.optimizer;
    launch(k, Kernel::FinishBatch, dim3(1), dim3(threads_per_block), stream, scalars,
           static_cast<const float*>(m_row_loss.floats()), rows, batch, static_cast<const float*>(m_rates.floats()),
           opt.beta1, opt.beta2, opt.weight_decay, static_cast<int>(opt.kind == BRAIN_OPT_ADAMW));
    // Mixed precision: every device parameter of the padded layout (its padding stays zero), and the bf16 copy of
    // each new value written in the same pass.
    const DeviceU64 n = plan.device_parameter_count();
    auto* params16 = static_cast<std::uint16_t*>(m_params16.get());
    const dim3 grid(elementwise_blocks(n));
    if (opt.kind == BRAIN_OPT_SGD) {
        launch(k, Kernel::SgdUpdate, grid, dim3(threads_per_block), stream, m_params.floats(),
               static_cast<const float*>(m_grads.floats()), m_state.floats(), n,
               static_cast<const float*>(m_rates.floats()), opt.momentum, scalars, batch, params16);
    } else {
        launch(k, Kernel::AdamUpdate, grid, dim3(threads_per_block), stream, m_params.floats(),
               static_cast<const float*>(m_grads.floats()), m_state.floats(), m_state.floats() + n, n, opt.beta1,
               opt.beta2, opt.epsilon, scalars, batch, params16);
    }
}

} // namespace brain::cuda
