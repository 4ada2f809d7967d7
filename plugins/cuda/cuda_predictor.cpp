// CudaPredictor: the plan and budget, the weights' upload, and a call's parts. A call's rows go through the device
// in parts of up to m_part_rows rows, two input slots alternating: while the device multiplies one part, the copy
// stream moves the next part's rows to the device (from page-locked rows directly; pageable rows are first copied
// into pinned memory by the host), so the host, the bus and the products overlap. The products are cuBLASLt's (bias
// and ReLU in their epilogues where it offers them) in the precision asked for: float32, tf32, or bf16 operands
// with float32 accumulation and a float32 output layer.
#include "cuda_predictor.hpp"

#include "bf16_host.hpp"
#include "cuda_device.hpp"
#include "cuda_plugin_log.hpp"
#include "host_pinning.hpp"
#include "test_hooks.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace brain::cuda {

namespace {

constexpr unsigned threads_per_block = 256;
constexpr unsigned rows_per_warp_block = threads_per_block / 32;
// Cached part shapes: the two slots of the full part, and recent shorter ones.
constexpr std::size_t max_cached_parts = 6;
// The full part's products are timed in up to this many of cuBLASLt's algorithms at set-up; those below
// tune_min_macs multiply-adds keep the heuristics' first, whose time is too short to rank by.
constexpr int tune_candidates = 8;
constexpr std::uint64_t tune_min_macs = std::uint64_t{1} << 24;

using Bf16 = std::uint16_t;

// Rows per part for calls of up to `max_rows` rows: whole calls below 1024 rows, else parts of at least 1024 rows
// and at most four per call. Never decreases as max_rows grows, so the budget's bisection holds.
std::size_t part_rows_for(std::size_t max_rows) {
    return std::min(max_rows, std::max<std::size_t>(1024, (max_rows + 3) / 4));
}

// Device bytes the predictor allocates for parts of `rows` rows, as the allocator charges them.
std::uint64_t device_bytes(const sdk::PredictorPlan& plan, const PaddedLayout& layout, std::size_t widest_hidden,
                           std::size_t rows) {
    const bool bf16 = plan.precision == BRAIN_PRECISION_BF16;
    std::uint64_t total = bf16 ? charged_bytes(2ull * layout.count) + charged_bytes(4ull * plan.output_width)
                               : charged_bytes(4ull * layout.count);
    total += 2 * charged_bytes(4ull * rows * plan.input_width);
    if (bf16) total += charged_bytes(2ull * rows * plan.input_width);
    if (widest_hidden) total += 2 * charged_bytes((bf16 ? 2ull : 4ull) * rows * widest_hidden);
    return total + charged_bytes(4ull * rows * plan.output_width);
}

// Copies `bytes` from the caller's pageable rows into pinned memory on up to four threads: one thread's copy rate
// is below the bus's, and the copy of the next part must keep pace with the device.
void copy_rows(void* destination, const void* source, std::size_t bytes) {
    constexpr std::size_t per_thread_min = std::size_t{8} << 20;
    const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
    const auto threads = static_cast<unsigned>(
        std::min<std::size_t>({4, hardware, std::max<std::size_t>(1, bytes / per_thread_min)}));
    if (threads <= 1) {
        std::memcpy(destination, source, bytes);
        return;
    }
    const std::size_t share = (bytes / threads + 4095) / 4096 * 4096;
    const auto copy_share = [&](unsigned t) {
        const std::size_t begin = std::min(bytes, t * share), end = std::min(bytes, begin + share);
        std::memcpy(static_cast<char*>(destination) + begin, static_cast<const char*>(source) + begin, end - begin);
    };
    std::vector<std::thread> helpers;
    unsigned started = 1;
    try {
        for (; started < threads; ++started) helpers.emplace_back(copy_share, started);
    } catch (const std::system_error&) {
        // No thread to be had: this thread copies the shares that have none.
    }
    copy_share(0);
    for (unsigned t = started; t < threads; ++t) copy_share(t);
    for (std::thread& helper : helpers) helper.join();
}

const char* precision_name(int32_t precision) {
    return precision == BRAIN_PRECISION_TF32 ? "tf32" : precision == BRAIN_PRECISION_BF16 ? "bf16" : "float32";
}

} // namespace

CudaPredictor::CudaPredictor(const brain_predictor_desc& desc)
    : m_plan(sdk::plan_predictor(desc)), m_allocator(desc.memory_budget_bytes) {
    const sdk::PredictorPlan& plan = m_plan;
    // Row counts travel through 32-bit kernel arguments and cuBLASLt's int dimensions.
    constexpr std::size_t int_max = static_cast<std::size_t>(std::numeric_limits<int>::max());
    if (plan.max_batch_rows > int_max)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "max_batch_rows " + std::to_string(plan.max_batch_rows) +
                                             " exceeds the CUDA backend's limit of " + std::to_string(int_max));
    m_layout = padded_layout(plan.layers);
    for (std::size_t l = 0; l + 1 < plan.layers.size(); ++l)
        m_widest_hidden = std::max(m_widest_hidden, plan.layers[l].outputs);
    m_part_rows = part_rows_for(plan.max_batch_rows);
    if (const unsigned parts = test_predict_parts())
        m_part_rows = (plan.max_batch_rows + parts - 1) / parts;
    const bool bf16 = plan.precision == BRAIN_PRECISION_BF16;

    // The budget, before anything touches the device.
    const std::uint64_t needed = device_bytes(plan, m_layout, m_widest_hidden, m_part_rows);
    const std::uint64_t budget = plan.budget_bytes;
    if (budget != 0 && needed > budget) {
        const auto bytes_for = [&](std::size_t rows) {
            return device_bytes(plan, m_layout, m_widest_hidden, part_rows_for(rows));
        };
        const std::size_t lo = sdk::largest_batch_within(budget, plan.max_batch_rows, bytes_for);
        fail(BRAIN_ERR_BUDGET_EXCEEDED,
             "the CUDA predictor needs " + mib(needed) + " of device memory for batches of " +
                 std::to_string(plan.max_batch_rows) + " rows (" + precision_name(plan.precision) +
                 " weights and the rows in flight) but the memory budget is " + mib(budget) + "; " +
                 (lo > 0 ? "the largest batch that fits is " + std::to_string(lo)
                         : "not even one row fits: raise the budget to at least " + mib(bytes_for(1))) +
                 "; nothing was allocated");
    }
    const std::uint64_t spare = budget == 0 ? std::numeric_limits<std::uint64_t>::max() : budget - needed;
    for (std::uint64_t candidate : {32ull << 20, 4ull << 20, 1ull << 20})
        if (candidate <= spare) {
            m_workspace_bytes = candidate;
            break;
        }

    m_device = desc.device;
    // The form a session of this network takes, so that training and predicting in one process compile once.
    const KernelForm form = kernel_form(plan.layers);
    KernelPrefetch prefetch(m_device, form);
    select_device(m_device);
    check_cuda(cudaFree(nullptr), "creating the CUDA context");
    check_cuda(cudaDeviceGetAttribute(&m_sm_count, cudaDevAttrMultiProcessorCount, m_device),
               "cudaDeviceGetAttribute");
    m_kernels = &kernels_for_current_device(form);
    m_compute = create_stream();
    m_copy = create_stream();
    m_lt = create_cublas_lt();
    const char* graphs = std::getenv("BRAIN_CUDA_GRAPHS");
    m_use_graphs = !(graphs && std::strcmp(graphs, "0") == 0);

    const std::size_t r = m_part_rows, in = plan.input_width, out = plan.output_width;
    m_weights = m_allocator.allocate((bf16 ? 2ull : 4ull) * m_layout.count, MemoryKind::Tensor, "the weights");
    if (bf16) m_head_bias = m_allocator.allocate(4ull * out, MemoryKind::Tensor, "the output layer's biases");
    for (DeviceBuffer& x : m_x) x = m_allocator.allocate(4ull * r * in, MemoryKind::Tensor, "a part's inputs");
    if (bf16) m_x16 = m_allocator.allocate(2ull * r * in, MemoryKind::Tensor, "a part's bf16 inputs");
    if (m_widest_hidden)
        for (DeviceBuffer& hidden : m_hidden)
            hidden = m_allocator.allocate((bf16 ? 2ull : 4ull) * r * m_widest_hidden, MemoryKind::Tensor,
                                          "the hidden activations");
    m_y = m_allocator.allocate(4ull * r * out, MemoryKind::Tensor, "a part's outputs");
    if (m_workspace_bytes)
        m_workspace = m_allocator.allocate(m_workspace_bytes, MemoryKind::Workspace, "the cuBLASLt workspace");
    for (PinnedBuffer& stage : m_stage) stage = PinnedBuffer(4ull * r * in);
    m_out = PinnedBuffer(4ull * plan.max_batch_rows * out);
    m_bad = PinnedBuffer(sizeof(unsigned));
    for (Event& event : m_copied) event = create_event();
    for (Event& event : m_consumed) event = create_event();

    // The weights in the padded layout (zeros between layers); a bf16 predictor's converted on the host.
    std::vector<float> padded(m_layout.count, 0.0f);
    for (std::size_t l = 0; l < plan.layers.size(); ++l) {
        const LayerPlan& layer = plan.layers[l];
        std::copy_n(desc.parameters + layer.weight_offset, layer.outputs * layer.inputs,
                    padded.begin() + static_cast<std::ptrdiff_t>(m_layout.weight_offset[l]));
        std::copy_n(desc.parameters + layer.bias_offset, layer.outputs,
                    padded.begin() + static_cast<std::ptrdiff_t>(m_layout.bias_offset[l]));
    }
    cudaStream_t stream = m_compute.get();
    if (bf16) {
        // The host converts, rounding exactly as the kernels do: a float32 copy on the device would take memory
        // that a bf16 predictor's budget does not count.
        std::vector<Bf16> converted(padded.size());
        std::transform(padded.begin(), padded.end(), converted.begin(), [](float v) { return to_bf16(v); });
        check_cuda(cudaMemcpyAsync(m_weights.get(), converted.data(), 2ull * converted.size(),
                                   cudaMemcpyHostToDevice, stream),
                   "uploading the weights");
        const LayerPlan& head = plan.layers.back();
        check_cuda(cudaMemcpyAsync(m_head_bias.get(), desc.parameters + head.bias_offset, 4ull * out,
                                   cudaMemcpyHostToDevice, stream),
                   "uploading the weights");
        check_cuda(cudaStreamSynchronize(stream), "uploading the weights");
    } else {
        check_cuda(
            cudaMemcpyAsync(m_weights.get(), padded.data(), 4ull * padded.size(), cudaMemcpyHostToDevice, stream),
            "uploading the weights");
        check_cuda(cudaStreamSynchronize(stream), "uploading the weights");
    }
    // The full part's products for both slots, planned and timed now so that no call pays for it.
    for (int slot = 0; slot < 2; ++slot) (void)part_for(m_part_rows, slot);
    const std::string tuned = tune_full_part();
    log_message(1, "cuda predictor on device " + std::to_string(m_device) + " (" + m_kernels->architecture +
                       "): " + precision_name(plan.precision) + " products (cuBLASLt), weights " +
                       mib(m_allocator.peak(MemoryKind::Tensor)) + " with the rows in flight, calls of up to " +
                       std::to_string(plan.max_batch_rows) + " rows in parts of " + std::to_string(m_part_rows) +
                       ", workspace " + mib(m_workspace_bytes) + ", " +
                       (m_use_graphs ? "a CUDA graph per repeated part shape" : "direct launches") + tuned);
}

std::string CudaPredictor::tune_full_part() {
    // The products read the slot's inputs and write the activations: zeros in, so that no timing sees NaNs.
    const std::uint64_t values = std::uint64_t{m_part_rows} * m_plan.input_width;
    for (DeviceBuffer& x : m_x)
        check_cuda(cudaMemsetAsync(x.get(), 0, 4 * values, m_compute.get()), "clearing a part's inputs");
    if (m_x16.get())
        check_cuda(cudaMemsetAsync(m_x16.get(), 0, 2 * values, m_compute.get()), "clearing a part's inputs");
    Part& first = part_for(m_part_rows, 0);
    Part& second = part_for(m_part_rows, 1);
    std::string text;
    for (std::size_t l = 0; l < first.forward.size(); ++l) {
        const LtMatmul::Tuning tuning =
            first.forward[l].tune(m_lt.get(), m_compute.get(), m_workspace.get(), m_workspace_bytes);
        if (tuning.offered < 2) continue;
        // The second slot's product has the same shape; its own timing only where its operands' alignment differs.
        if (!second.forward[l].adopt_choice(first.forward[l]))
            (void)second.forward[l].tune(m_lt.get(), m_compute.get(), m_workspace.get(), m_workspace_bytes);
        text += "; layer " + std::to_string(l) + ": algorithm " + std::to_string(tuning.chosen + 1) + " of " +
                std::to_string(tuning.offered) + ", " + std::to_string(tuning.chosen_us) +
                " us against the first's " + std::to_string(tuning.first_us);
    }
    return text.empty() ? text : "; products timed at set-up" + text;
}

CudaPredictor::~CudaPredictor() {
    (void)cudaSetDevice(m_device);
    if (m_compute) (void)cudaStreamSynchronize(m_compute.get());
    if (m_copy) (void)cudaStreamSynchronize(m_copy.get());
    (void)cudaGetLastError();
}

unsigned CudaPredictor::elementwise_blocks(std::uint64_t count) const noexcept {
    const std::uint64_t wanted = (count + threads_per_block - 1) / threads_per_block;
    return static_cast<unsigned>(std::clamp<std::uint64_t>(wanted, 1, static_cast<std::uint64_t>(m_sm_count) * 8));
}

CudaPredictor::Part CudaPredictor::plan_part(std::size_t rows, int slot) {
    const sdk::PredictorPlan& plan = m_plan;
    const bool bf16 = plan.precision == BRAIN_PRECISION_BF16;
    const cudaDataType_t operand = bf16 ? CUDA_R_16BF : CUDA_R_32F;
    const cublasComputeType_t compute =
        plan.precision == BRAIN_PRECISION_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const std::size_t element = bf16 ? 2 : 4;
    const auto* weights = static_cast<const char*>(m_weights.get());
    Part part;
    part.rows = rows;
    part.slot = slot;
    const void* input = bf16 ? m_x16.get() : m_x[slot].get();
    const std::size_t layers = plan.layers.size();
    for (std::size_t l = 0; l < layers; ++l) {
        const LayerPlan& layer = plan.layers[l];
        const bool head = l + 1 == layers;
        const std::uint64_t in = layer.inputs, outputs = layer.outputs;
        void* output = head ? m_y.get() : m_hidden[l % 2].get();
        const int candidates =
            rows == m_part_rows && rows * in * outputs >= tune_min_macs && !test_predict_untuned() ? tune_candidates
                                                                                                   : 1;
        LtProduct product;
        product.transa = CUBLAS_OP_T;
        product.transb = CUBLAS_OP_N;
        product.compute = compute;
        product.a = {weights + element * m_layout.weight_offset[l], operand, in, outputs,
                     static_cast<std::int64_t>(in)};
        product.b = {input, operand, in, rows, static_cast<std::int64_t>(in)};
        product.d = {output, head ? CUDA_R_32F : operand, outputs, rows, static_cast<std::int64_t>(outputs)};
        // The bias in the epilogue of hidden layers that are ReLU, linear, or (bf16) any activation, which a kernel
        // then applies to the rounded sum as training does; the output layer's in float32 by the kernels.
        std::optional<LtMatmul> chosen;
        const bool relu = layer.activation == BRAIN_ACT_RELU;
        if (!head && (bf16 || relu || layer.activation == BRAIN_ACT_LINEAR)) {
            LtProduct fused = product;
            fused.epilogue = relu ? LtEpilogue::ReluBias : LtEpilogue::Bias;
            fused.bias_or_grad = weights + element * m_layout.bias_offset[l];
            chosen = LtMatmul::plan(m_lt.get(), fused, m_workspace_bytes, candidates);
        }
        part.bias_in_product.push_back(chosen.has_value());
        part.activation_in_product.push_back(chosen.has_value() && relu);
        if (!chosen) chosen = LtMatmul::plan(m_lt.get(), product, m_workspace_bytes, candidates);
        if (!chosen) {
            // cuBLAS's own kernels for a product cuBLASLt has none for, on the same stream and workspace.
            chosen = LtMatmul::through_cublas(product);
            if (!m_cublas) {
                m_cublas = create_cublas();
                check_cublas(cublasSetStream(m_cublas.get(), m_compute.get()), "cublasSetStream");
                check_cublas(cublasSetWorkspace(m_cublas.get(), m_workspace.get(), m_workspace_bytes),
                             "cublasSetWorkspace");
            }
        }
        part.forward.push_back(std::move(*chosen));
        input = output;
    }
    return part;
}

CudaPredictor::Part& CudaPredictor::part_for(std::size_t rows, int slot) {
    for (Part& part : m_parts)
        if (part.rows == rows && part.slot == slot) return part;
    if (m_parts.size() >= max_cached_parts) {
        // Drop the oldest shorter shape; the full part's two entries come first and stay.
        const auto oldest = std::find_if(m_parts.begin(), m_parts.end(),
                                         [&](const Part& part) { return part.rows != m_part_rows; });
        if (oldest != m_parts.end()) m_parts.erase(oldest);
    }
    m_parts.push_back(plan_part(rows, slot));
    return m_parts.back();
}

void CudaPredictor::enqueue_part(const Part& part) {
    const sdk::PredictorPlan& plan = m_plan;
    const KernelModule& k = *m_kernels;
    cudaStream_t stream = m_compute.get();
    const bool bf16 = plan.precision == BRAIN_PRECISION_BF16;
    const std::size_t rows = part.rows, layers = plan.layers.size();
    // The inputs' check (BRAIN_FEATURE_PREDICT_CHECKS_INPUTS): one read of the part at the device's bandwidth
    // instead of a pass over every row on the host.
    const DeviceU64 inputs = static_cast<DeviceU64>(rows) * plan.input_width;
    launch(k, Kernel::FlagNonFinite, dim3(elementwise_blocks(inputs)), dim3(threads_per_block), stream,
           static_cast<const float*>(m_x[part.slot].floats()), inputs, static_cast<unsigned*>(m_bad.get()));
    if (bf16) {
        const DeviceU64 count = static_cast<DeviceU64>(rows) * plan.input_width;
        launch(k, Kernel::ConvertBf16, dim3(elementwise_blocks(count)), dim3(threads_per_block), stream,
               static_cast<const float*>(m_x[part.slot].floats()), static_cast<Bf16*>(m_x16.get()), count);
    }
    for (std::size_t l = 0; l < layers; ++l) {
        const LayerPlan& layer = plan.layers[l];
        part.forward[l].run(m_lt.get(), m_cublas.get(), stream, m_workspace.get(), m_workspace_bytes,
                            "cublasLtMatmul (prediction)");
        const auto width = static_cast<unsigned>(layer.outputs);
        const std::uint64_t count = static_cast<std::uint64_t>(rows) * layer.outputs;
        if (l + 1 == layers) {
            // The output layer in float32: bias and activation in place.
            float* y = m_y.floats();
            const float* bias = bf16 ? m_head_bias.floats() : m_weights.floats() + m_layout.bias_offset[l];
            if (layer.activation == BRAIN_ACT_SOFTMAX)
                launch(k, Kernel::BiasSoftmax,
                       dim3((static_cast<unsigned>(rows) + rows_per_warp_block - 1) / rows_per_warp_block),
                       dim3(threads_per_block), stream, y, y, bias, static_cast<unsigned>(rows), width);
            else
                launch(k, Kernel::BiasActivation, dim3(elementwise_blocks(count)), dim3(threads_per_block), stream,
                       y, y, bias, static_cast<unsigned>(rows), width, static_cast<int>(layer.activation),
                       layer.param);
            continue;
        }
        if (part.activation_in_product[l] || (part.bias_in_product[l] && layer.activation == BRAIN_ACT_LINEAR))
            continue;
        if (bf16) {
            auto* h = static_cast<Bf16*>(m_hidden[l % 2].get());
            const auto* bias = part.bias_in_product[l]
                                   ? nullptr
                                   : static_cast<const Bf16*>(m_weights.get()) + m_layout.bias_offset[l];
            launch(k, Kernel::BiasActivationBf16, dim3(elementwise_blocks(count)), dim3(threads_per_block), stream,
                   h, h, bias, static_cast<unsigned>(rows), width, static_cast<int>(layer.activation), layer.param);
        } else {
            float* h = m_hidden[l % 2].floats();
            launch(k, Kernel::BiasActivation, dim3(elementwise_blocks(count)), dim3(threads_per_block), stream, h,
                   h, static_cast<const float*>(m_weights.floats() + m_layout.bias_offset[l]),
                   static_cast<unsigned>(rows), width, static_cast<int>(layer.activation), layer.param);
        }
    }
}

void CudaPredictor::run(const float* inputs, std::uint64_t rows, float* outputs) {
    const sdk::PredictorPlan& plan = m_plan;
    if (rows > plan.max_batch_rows)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "predictor_run was given " + std::to_string(rows) +
                                             " rows; this predictor was opened for at most " +
                                             std::to_string(plan.max_batch_rows) + " (max_batch_rows)");
    if (rows == 0) return;
    Timeline timeline;
    if (test_predict_timeline()) timeline.begin(m_copy.get());
    check_cuda(cudaSetDevice(m_device), "cudaSetDevice");
    const std::size_t in = plan.input_width, out = plan.output_width;
    // No kernel of an earlier call is running (each call ends synchronised), so the host may zero the flag.
    auto* bad = static_cast<volatile unsigned*>(m_bad.get());
    *bad = 0;
    cudaStream_t compute = m_compute.get(), copy = m_copy.get();
    // Page-locked rows (host_memory_pin, as the core's Predictor stages them) need no copy on the host: the copy
    // stream reads them directly, and the host only enqueues.
    const bool page_locked = is_page_locked(inputs, 4 * rows * in);
    std::size_t part_index = 0;
    for (std::size_t start = 0; start < rows; start += m_part_rows, ++part_index) {
        const std::size_t n = std::min<std::size_t>(m_part_rows, rows - start);
        const int slot = static_cast<int>(part_index % 2);
        // The slot's pinned rows and device inputs are free once the part two before was multiplied.
        const float* source = inputs + start * in;
        if (page_locked) {
            if (part_index >= 2)
                check_cuda(cudaStreamWaitEvent(copy, m_consumed[slot].get(), 0), "waiting for a part");
        } else {
            if (part_index >= 2) check_cuda(cudaEventSynchronize(m_consumed[slot].get()), "waiting for a part");
            copy_rows(m_stage[slot].floats(), source, 4 * n * in);
            source = m_stage[slot].floats();
        }
        timeline.mark(copy);
        check_cuda(cudaMemcpyAsync(m_x[slot].get(), source, 4 * n * in, cudaMemcpyHostToDevice, copy),
                   "copying a part's inputs to the device");
        timeline.mark(copy);
        check_cuda(cudaEventRecord(m_copied[slot].get(), copy), "cudaEventRecord");
        check_cuda(cudaStreamWaitEvent(compute, m_copied[slot].get(), 0), "cudaStreamWaitEvent");
        Part& part = part_for(n, slot);
        timeline.mark(compute);
        if (m_use_graphs && n == m_part_rows) {
            if (!part.graph) {
                check_cuda(cudaStreamBeginCapture(compute, cudaStreamCaptureModeThreadLocal),
                           "cudaStreamBeginCapture");
                try {
                    enqueue_part(part);
                } catch (...) {
                    cudaGraph_t broken = nullptr;
                    (void)cudaStreamEndCapture(compute, &broken);
                    if (broken) (void)cudaGraphDestroy(broken);
                    throw;
                }
                cudaGraph_t graph = nullptr;
                check_cuda(cudaStreamEndCapture(compute, &graph), "cudaStreamEndCapture (a prediction part)");
                part.graph = instantiate_graph(graph);
            }
            check_cuda(cudaGraphLaunch(part.graph.get(), compute), "cudaGraphLaunch (a prediction part)");
        } else {
            enqueue_part(part);
        }
        timeline.mark(compute);
        check_cuda(cudaEventRecord(m_consumed[slot].get(), compute), "cudaEventRecord");
        check_cuda(
            cudaMemcpyAsync(m_out.floats() + start * out, m_y.get(), 4 * n * out, cudaMemcpyDeviceToHost, compute),
            "copying a part's outputs back");
    }
    timeline.mark(compute);
    timeline.host_mark();
    check_cuda(cudaStreamSynchronize(compute), "the prediction");
    timeline.host_mark();
    if (*bad)
        fail(BRAIN_ERR_INVALID_DATA, "predictor_run: an input of these " + std::to_string(rows) +
                                         " rows is NaN or infinite; every input must be finite");
    std::memcpy(outputs, m_out.floats(), 4 * rows * out);
    if (timeline.active()) {
        timeline.host_mark();
        log_message(1, timeline.text(m_last_return));
        m_last_return = timeline.last_host_mark();
    }
}

void CudaPredictor::Timeline::begin(cudaStream_t stream) {
    m_host_marks.push_back(std::chrono::steady_clock::now());
    m_events.push_back(create_timing_event());
    check_cuda(cudaEventRecord(m_events.back().get(), stream), "cudaEventRecord");
}

void CudaPredictor::Timeline::host_mark() {
    if (!m_events.empty()) m_host_marks.push_back(std::chrono::steady_clock::now());
}

void CudaPredictor::Timeline::mark(cudaStream_t stream) {
    if (m_events.empty()) return;
    m_events.push_back(create_timing_event());
    check_cuda(cudaEventRecord(m_events.back().get(), stream), "cudaEventRecord");
}

std::string CudaPredictor::Timeline::text(std::chrono::steady_clock::time_point previous_return) const {
    // Marks after the first: per part the copy's start and end, the products' start and end; the outputs' end.
    const auto at = [this](std::size_t i) {
        float ms = 0.0f;
        (void)cudaEventElapsedTime(&ms, m_events[0].get(), m_events[i].get());
        return std::to_string(static_cast<int>(ms * 1000.0f + 0.5f));
    };
    std::string text = "predict timeline (us from the call's start on the device)";
    std::size_t i = 1;
    for (std::size_t part = 0; i + 3 < m_events.size(); ++part, i += 4)
        text += "; part " + std::to_string(part) + " copy " + at(i) + "-" + at(i + 1) + ", products " + at(i + 2) +
                "-" + at(i + 3);
    if (i < m_events.size()) text += "; outputs back by " + at(i);
    // Host marks: entry, all enqueued, synchronised, returned.
    const auto us = [](auto from, auto to) {
        return std::to_string(std::chrono::duration<double, std::micro>(to - from).count());
    };
    if (m_host_marks.size() == 4)
        text +=
            "; host: since the previous call returned " +
            (previous_return.time_since_epoch().count() ? us(previous_return, m_host_marks[0]) : std::string("-")) +
            " us, enqueue " + us(m_host_marks[0], m_host_marks[1]) + ", wait " +
            us(m_host_marks[1], m_host_marks[2]) + ", outputs out " + us(m_host_marks[2], m_host_marks[3]);
    return text;
}

} // namespace brain::cuda
