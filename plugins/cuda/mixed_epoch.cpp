// CudaSession's mixed-precision path (precision bf16): the products on the bf16 tensor cores through cuBLASLt with
// float32 accumulation; bf16 storage for the batch's inputs, the hidden layers' activations and every delta;
// float32 master parameters, gradients and optimizer state, and a bf16 copy of the parameters that the optimizer
// kernel rewrites in the same pass as each update. The output layer, its loss and the targets stay float32. Every
// float32 array and the bf16 copy share one padded layout (device_plan.hpp) so that each operand is aligned for the
// tensor cores. The batch's launch sequence is fixed like the float32 cuBLAS path's, so graph_epoch.cpp captures it
// in the same CUDA graph.
#include "bf16_host.hpp"
#include "cuda_session.hpp"

#include <algorithm>
#include <cstring>

namespace brain::cuda {

namespace {

constexpr unsigned threads_per_block = 256;
constexpr unsigned rows_per_warp_block = threads_per_block / 32;

// bf16 is CUDA_R_16BF for cuBLASLt and 2 bytes to the kernels.
using Bf16 = std::uint16_t;

} // namespace

void CudaSession::allocate_mixed_tensors(std::uint64_t cublas_workspace) {
    const DevicePlan& plan = m_plan;
    const std::size_t b = plan.batch_rows, p = plan.padded.count;
    m_params = m_allocator.allocate(4ull * p, MemoryKind::Tensor, "the float32 parameters");
    m_grads = m_allocator.allocate(4ull * p, MemoryKind::Tensor, "the gradients");
    m_state = m_allocator.allocate(4ull * plan.device_state_count(), MemoryKind::Tensor, "the optimizer state");
    m_scalars = m_allocator.allocate(scalar_block_bytes, MemoryKind::Tensor, "the scalar block");
    m_params16 = m_allocator.allocate(2ull * p, MemoryKind::Tensor, "the bf16 copy of the parameters");
    m_x16 = m_allocator.allocate(2ull * b * plan.input_width, MemoryKind::Tensor, "the batch's bf16 inputs");
    m_t = m_allocator.allocate(4ull * b * plan.target_width, MemoryKind::Tensor, "the batch targets");
    const std::size_t layers = plan.layers.size();
    for (std::size_t l = 0; l + 1 < layers; ++l) {
        const std::uint64_t bytes = 2ull * b * plan.layers[l].outputs;
        const std::string name = "layer " + std::to_string(l);
        m_a16.push_back(m_allocator.allocate(bytes, MemoryKind::Tensor, name + " bf16 activations"));
        m_z16.push_back(plan.keeps_pre_activations(l)
                            ? m_allocator.allocate(bytes, MemoryKind::Tensor, name + " bf16 pre-activations")
                            : DeviceBuffer());
    }
    // The output layer in float32, at its own index of the float32 path's per-layer buffers.
    const LayerPlan& head = plan.layers.back();
    const std::uint64_t head_bytes = 4ull * b * head.outputs;
    m_z.resize(layers);
    m_a.resize(layers);
    m_delta.resize(layers);
    m_z.back() = m_allocator.allocate(head_bytes, MemoryKind::Tensor, "the output layer's pre-activations");
    if (head.activation != BRAIN_ACT_LINEAR)
        m_a.back() = m_allocator.allocate(head_bytes, MemoryKind::Tensor, "the output layer's activations");
    m_delta.back() = m_allocator.allocate(head_bytes, MemoryKind::Tensor, "the output layer's deltas");
    for (std::size_t i = 0; i < plan.mixed_delta_buffers(); ++i)
        m_delta16[i] = m_allocator.allocate(2ull * b * plan.widest_layer(), MemoryKind::Tensor, "the bf16 deltas");
    m_row_loss = m_allocator.allocate(4ull * b, MemoryKind::Workspace, "the per-row losses");
    m_rates = m_allocator.allocate(4ull * plan.batch_count(), MemoryKind::Workspace, "the steps' learning rates");
    if (cublas_workspace)
        m_workspace = m_allocator.allocate(cublas_workspace, MemoryKind::Workspace, "the cuBLASLt workspace");
}

void CudaSession::upload_mixed_state(const brain_session_desc& desc) {
    const DevicePlan& plan = m_plan;
    cudaStream_t stream = m_stream.get();
    const std::size_t p = plan.padded.count, flat = plan.parameter_count;
    // The padding is zero in every array, and stays zero: nothing writes it but the optimizer, whose update of a
    // zero parameter with zero gradient and state is zero.
    check_cuda(cudaMemsetAsync(m_params.get(), 0, 4ull * p, stream), "cudaMemsetAsync");
    check_cuda(cudaMemsetAsync(m_grads.get(), 0, 4ull * p, stream), "cudaMemsetAsync");
    check_cuda(cudaMemsetAsync(m_state.get(), 0, 4ull * plan.device_state_count(), stream), "cudaMemsetAsync");
    const auto upload = [&](float* device, const float* host) {
        for (std::size_t l = 0; l < plan.layers.size(); ++l) {
            const LayerPlan& layer = plan.layers[l];
            check_cuda(cudaMemcpyAsync(device + plan.padded.weight_offset[l], host + layer.weight_offset,
                                       4ull * layer.outputs * layer.inputs, cudaMemcpyHostToDevice, stream),
                       "uploading the parameters");
            check_cuda(cudaMemcpyAsync(device + plan.padded.bias_offset[l], host + layer.bias_offset,
                                       4ull * layer.outputs, cudaMemcpyHostToDevice, stream),
                       "uploading the parameters");
        }
    };
    upload(m_params.floats(), desc.parameters);
    // The state is one or two arrays of the parameters' layout (SGD's velocity; Adam's moments).
    for (std::size_t copy = 0; copy * flat < plan.state_count; ++copy)
        upload(m_state.floats() + copy * p, desc.optimizer_state + copy * flat);
    launch(*m_kernels, Kernel::ConvertBf16, dim3(elementwise_blocks(p)), dim3(threads_per_block), stream,
           static_cast<const float*>(m_params.floats()), static_cast<Bf16*>(m_params16.get()),
           static_cast<DeviceU64>(p));
}

void CudaSession::copy_mixed_checkpoint(float* parameters, float* optimizer_state) {
    const DevicePlan& plan = m_plan;
    cudaStream_t stream = m_stream.get();
    const std::size_t p = plan.padded.count, flat = plan.parameter_count;
    const auto download = [&](float* host, const float* device) {
        for (std::size_t l = 0; l < plan.layers.size(); ++l) {
            const LayerPlan& layer = plan.layers[l];
            check_cuda(cudaMemcpyAsync(host + layer.weight_offset, device + plan.padded.weight_offset[l],
                                       4ull * layer.outputs * layer.inputs, cudaMemcpyDeviceToHost, stream),
                       "copying the parameters back");
            check_cuda(cudaMemcpyAsync(host + layer.bias_offset, device + plan.padded.bias_offset[l],
                                       4ull * layer.outputs, cudaMemcpyDeviceToHost, stream),
                       "copying the parameters back");
        }
    };
    download(parameters, m_params.floats());
    for (std::size_t copy = 0; copy * flat < plan.state_count; ++copy)
        download(optimizer_state + copy * flat, m_state.floats() + copy * p);
}

void CudaSession::plan_mixed_products() {
    const DevicePlan& plan = m_plan;
    const std::size_t layers = plan.layers.size();
    auto* params16 = static_cast<Bf16*>(m_params16.get());
    int forward_fused = 0, gradient_fused = 0, through_cublas = 0;
    // A product without an epilogue that cuBLASLt has no algorithm for goes through cublasGemmEx.
    const auto required = [&](std::optional<LtMatmul> matmul, const LtProduct& plain) {
        if (matmul) return std::move(*matmul);
        ++through_cublas;
        return LtMatmul::through_cublas(plain);
    };
    const auto products = [&](std::size_t rows) {
        std::vector<MixedLayer> out(layers);
        const auto delta16 = [&](std::size_t l) { return m_delta16[(layers - 1 - l) % 2].get(); };
        for (std::size_t l = 0; l < layers; ++l) {
            const LayerPlan& layer = plan.layers[l];
            MixedLayer& m = out[l];
            const bool head = l + 1 == layers;
            const std::uint64_t in = layer.inputs, outputs = layer.outputs;
            const Bf16* weights = params16 + plan.padded.weight_offset[l];
            const Bf16* bias16 = params16 + plan.padded.bias_offset[l];
            const void* input = l == 0 ? m_x16.get() : m_a16[l - 1].get();
            // Forward: z (out x rows, column-major) = W (stored in x out) ^T  input (in x rows).
            LtProduct forward;
            forward.transa = CUBLAS_OP_T;
            forward.transb = CUBLAS_OP_N;
            forward.a = {weights, CUDA_R_16BF, in, outputs, static_cast<std::int64_t>(in)};
            forward.b = {input, CUDA_R_16BF, in, rows, static_cast<std::int64_t>(in)};
            const void* z = head ? m_z[l].get() : plan.keeps_pre_activations(l) ? m_z16[l].get() : m_a16[l].get();
            forward.d = {z, head ? CUDA_R_32F : CUDA_R_16BF, outputs, rows, static_cast<std::int64_t>(outputs)};
            std::optional<LtMatmul> chosen;
            if (!head) {
                const bool relu = layer.activation == BRAIN_ACT_RELU;
                LtProduct fused = forward;
                fused.epilogue = relu ? LtEpilogue::ReluBias : LtEpilogue::Bias;
                fused.bias_or_grad = bias16;
                chosen = LtMatmul::plan(m_lt.get(), fused, m_workspace_bytes);
                m.bias_in_forward = chosen.has_value();
                m.activation_in_forward = chosen.has_value() && relu;
                forward_fused += chosen.has_value() ? 1 : 0;
            }
            if (!chosen) chosen = LtMatmul::plan(m_lt.get(), forward, m_workspace_bytes);
            m.forward = required(std::move(chosen), forward);

            // Weight gradient: dW (in x out) = input (in x rows)  delta (stored out x rows) ^T, db in the epilogue.
            LtProduct weight;
            weight.transa = CUBLAS_OP_N;
            weight.transb = CUBLAS_OP_T;
            weight.a = {input, CUDA_R_16BF, in, rows, static_cast<std::int64_t>(in)};
            weight.b = {delta16(l), CUDA_R_16BF, outputs, rows, static_cast<std::int64_t>(outputs)};
            weight.d = {m_grads.floats() + plan.padded.weight_offset[l], CUDA_R_32F, in, outputs,
                        static_cast<std::int64_t>(in)};
            LtProduct with_bias = weight;
            with_bias.epilogue = LtEpilogue::BiasGradB;
            with_bias.bias_or_grad = m_grads.floats() + plan.padded.bias_offset[l];
            chosen = LtMatmul::plan(m_lt.get(), with_bias, m_workspace_bytes);
            m.bias_gradient_in_product = chosen.has_value();
            gradient_fused += chosen.has_value() ? 1 : 0;
            if (!chosen) chosen = LtMatmul::plan(m_lt.get(), weight, m_workspace_bytes);
            m.weight_gradient = required(std::move(chosen), weight);

            if (l == 0) continue;
            // The layer below's delta: (in x rows) = W (in x out)  delta (out x rows).
            LtProduct back;
            back.transa = CUBLAS_OP_N;
            back.transb = CUBLAS_OP_N;
            back.a = {weights, CUDA_R_16BF, in, outputs, static_cast<std::int64_t>(in)};
            back.b = {delta16(l), CUDA_R_16BF, outputs, rows, static_cast<std::int64_t>(outputs)};
            back.d = {delta16(l - 1), CUDA_R_16BF, in, rows, static_cast<std::int64_t>(in)};
            m.input_gradient = required(LtMatmul::plan(m_lt.get(), back, m_workspace_bytes), back);
        }
        return out;
    };
    m_mixed_full = products(plan.batch_rows);
    // The log names the full batches' epilogues.
    m_mixed_fusion = "cuBLASLt epilogues: the bias (and ReLU where the layer has it) in " +
                     std::to_string(forward_fused) + " of " + std::to_string(layers - 1) +
                     " hidden forward products, the bias gradient in " + std::to_string(gradient_fused) + " of " +
                     std::to_string(layers) + " weight-gradient products";
    const std::size_t last_rows = plan.rows % plan.config.batch_size;
    if (plan.rows > plan.batch_rows && last_rows != 0) m_mixed_last = products(last_rows);
    if (through_cublas) {
        // cuBLAS's own bf16 kernels for the products cuBLASLt has none for, on the same stream and workspace.
        m_cublas = create_cublas();
        check_cublas(cublasSetStream(m_cublas.get(), m_stream.get()), "cublasSetStream");
        check_cublas(cublasSetWorkspace(m_cublas.get(), m_workspace.get(), m_workspace_bytes),
                     "cublasSetWorkspace");
        m_mixed_fusion += "; " + std::to_string(through_cublas) + " products through cublasGemmEx";
    }
}

void CudaSession::enqueue_mixed_gather(std::size_t start, unsigned rows) {
    const DevicePlan& plan = m_plan;
    const DeviceU64 count = static_cast<DeviceU64>(rows) * (plan.input_width + plan.target_width);
    // Unshuffled batches are the data set's rows in order: no permutation.
    const auto* perm = plan.config.shuffle ? static_cast<const uint32_t*>(m_perm.get()) : nullptr;
    launch(*m_kernels, Kernel::GatherBatchBf16, dim3(elementwise_blocks(count)), dim3(threads_per_block),
           m_stream.get(), static_cast<Bf16*>(m_x16.get()), m_t.floats(),
           static_cast<const float*>(m_features.floats()), static_cast<const float*>(m_targets.floats()), perm,
           static_cast<DeviceU64>(start), rows, static_cast<unsigned>(plan.input_width),
           static_cast<unsigned>(plan.target_width));
}

void CudaSession::stage_mixed_batch(std::size_t slot, std::uint64_t epoch, std::size_t start, std::size_t rows) {
    const DevicePlan& plan = m_plan;
    const std::size_t in = plan.input_width, out = plan.target_width;
    // The staging buffer holds the batch's float32 targets, then its inputs converted to bf16 here, so that only
    // bf16 inputs cross the bus.
    auto* bytes = reinterpret_cast<unsigned char*>(m_stage[slot].floats());
    auto* ts = reinterpret_cast<float*>(bytes);
    auto* xs = reinterpret_cast<Bf16*>(bytes + 4 * rows * out);
    if (m_source) {
        // Streamed rows arrive as float32: fetched, then converted like gathered ones.
        host_rows(epoch, start, rows, m_fetch_x.data(), m_fetch_t.data());
        for (std::size_t i = 0; i < rows * in; ++i) xs[i] = to_bf16(m_fetch_x[i]);
        std::memcpy(ts, m_fetch_t.data(), rows * out * sizeof(float));
    } else {
        for (std::size_t r = 0; r < rows; ++r) {
            const std::size_t row = plan.row_at(epoch, start + r);
            const float* features = m_host_features.data() + row * in;
            for (std::size_t c = 0; c < in; ++c) xs[r * in + c] = to_bf16(features[c]);
            std::memcpy(ts + r * out, m_host_targets.data() + row * out, out * sizeof(float));
        }
    }
    cudaStream_t stream = m_stream.get();
    check_cuda(cudaMemcpyAsync(m_t.get(), ts, rows * out * sizeof(float), cudaMemcpyHostToDevice, stream),
               "staging a batch's targets");
    check_cuda(cudaMemcpyAsync(m_x16.get(), xs, rows * in * sizeof(Bf16), cudaMemcpyHostToDevice, stream),
               "staging a batch's inputs");
    check_cuda(cudaEventRecord(m_stage_done[slot].get(), stream), "cudaEventRecord");
    m_counters.moved_to_device(rows * (in * sizeof(Bf16) + out * sizeof(float)));
}

void CudaSession::enqueue_mixed_batch(unsigned rows, int batch) {
    const DevicePlan& plan = m_plan;
    const KernelModule& k = *m_kernels;
    cudaStream_t stream = m_stream.get();
    cublasLtHandle_t lt = m_lt.get();
    void* workspace = m_workspace.get();
    const std::vector<MixedLayer>& products =
        rows == plan.batch_rows || m_mixed_last.empty() ? m_mixed_full : m_mixed_last;
    const std::size_t layers = plan.layers.size();
    const auto delta16 = [&](std::size_t l) { return static_cast<Bf16*>(m_delta16[(layers - 1 - l) % 2].get()); };
    auto* params16 = static_cast<Bf16*>(m_params16.get());
    float* params = m_params.floats();
    float* grads = m_grads.floats();

    for (std::size_t l = 0; l < layers; ++l) {
        const LayerPlan& layer = plan.layers[l];
        const MixedLayer& m = products[l];
        m.forward.run(lt, m_cublas.get(), stream, workspace, m_workspace_bytes, "cublasLtMatmul (bf16 forward)");
        if (l + 1 == layers) {
            float* z = m_z[l].floats();
            float* a = m_a[l].get() ? m_a[l].floats() : z;
            launch(k, Kernel::OutputLossBf16, dim3((rows + rows_per_warp_block - 1) / rows_per_warp_block),
                   dim3(threads_per_block), stream, z, a, m_delta[l].floats(), delta16(l),
                   static_cast<const float*>(params + plan.padded.bias_offset[l]),
                   static_cast<const float*>(m_t.floats()), m_row_loss.floats(), rows,
                   static_cast<unsigned>(layer.outputs), static_cast<int>(layer.activation), layer.param,
                   static_cast<int>(plan.loss));
        } else if (!m.activation_in_forward && !(m.bias_in_forward && layer.activation == BRAIN_ACT_LINEAR)) {
            auto* a = static_cast<Bf16*>(m_a16[l].get());
            auto* z = m_z16[l].get() ? static_cast<Bf16*>(m_z16[l].get()) : a;
            const std::uint64_t count = static_cast<std::uint64_t>(rows) * layer.outputs;
            launch(k, Kernel::BiasActivationBf16, dim3(elementwise_blocks(count)), dim3(threads_per_block), stream,
                   z, a,
                   m.bias_in_forward ? nullptr : static_cast<const Bf16*>(params16 + plan.padded.bias_offset[l]),
                   rows, static_cast<unsigned>(layer.outputs), static_cast<int>(layer.activation), layer.param);
        }
    }

    for (std::size_t l = layers; l-- > 0;) {
        const LayerPlan& layer = plan.layers[l];
        const MixedLayer& m = products[l];
        m.weight_gradient.run(lt, m_cublas.get(), stream, workspace, m_workspace_bytes,
                              "cublasLtMatmul (bf16 weight gradient)");
        if (!m.bias_gradient_in_product)
            launch(k, Kernel::ColumnSumsBf16, dim3(static_cast<unsigned>((layer.outputs + 31) / 32)), dim3(32, 8),
                   stream, static_cast<const Bf16*>(delta16(l)), grads + plan.padded.bias_offset[l], rows,
                   static_cast<unsigned>(layer.outputs));
        if (l == 0) continue;
        m.input_gradient.run(lt, m_cublas.get(), stream, workspace, m_workspace_bytes,
                             "cublasLtMatmul (bf16 backward)");
        const LayerPlan& below = plan.layers[l - 1];
        if (below.activation == BRAIN_ACT_LINEAR) continue;
        const auto* a = static_cast<const Bf16*>(m_a16[l - 1].get());
        const auto* z = m_z16[l - 1].get() ? static_cast<const Bf16*>(m_z16[l - 1].get()) : a;
        const DeviceU64 count = static_cast<DeviceU64>(rows) * below.outputs;
        launch(k, Kernel::BackpropActivationBf16, dim3(elementwise_blocks(count)), dim3(threads_per_block), stream,
               delta16(l - 1), z, a, count, static_cast<int>(below.activation), below.param);
    }
    enqueue_optimizer(rows, batch);
}

} // namespace brain::cuda
