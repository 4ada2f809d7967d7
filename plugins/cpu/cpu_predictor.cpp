#include "cpu_predictor.hpp"

#include "cpu_kernels.hpp"
#include "cpu_session.hpp"

#include <algorithm>
#include <brain/plugin_sdk.hpp>
#include <cstring>
#include <limits>

namespace brain::cpu {

namespace {

using sdk::fail;

// Below ~100k multiply-adds per call, handing rows to other threads costs more than it saves (as in training).
constexpr std::size_t k_split_macs = std::size_t{1} << 17;

} // namespace

CpuPredictor::CpuPredictor(const brain_predictor_desc& desc) {
    if (desc.device != 0) fail(BRAIN_ERR_DEVICE_NOT_FOUND, "the CPU backend has one device, 0; got ", desc.device);
    require_float32(desc.precision, "prediction");
    m_plan = sdk::plan_predictor(desc);
    const sdk::PredictorPlan& plan = m_plan;
    constexpr std::size_t int_max = static_cast<std::size_t>(std::numeric_limits<int>::max());
    if (plan.max_batch_rows > int_max)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "max_batch_rows ", plan.max_batch_rows,
             " exceeds the CPU backend's limit of ", int_max, " rows per call");
    for (std::size_t l = 0; l < plan.layers.size(); ++l) {
        const LayerPlan& layer = plan.layers[l];
        if (layer.inputs > int_max || layer.outputs > int_max)
            fail(BRAIN_ERR_INVALID_ARGUMENT, "layer ", l, " (", layer.inputs, " -> ", layer.outputs,
                 ") is wider than the CPU backend's limit of ", int_max, " units");
        if (l + 1 < plan.layers.size()) m_widest_hidden = std::max(m_widest_hidden, layer.outputs);
        m_widest = std::max(m_widest, layer.outputs);
        m_macs_per_row += layer.inputs * layer.outputs;
    }
    const std::uint64_t needed = bytes_for(plan.max_batch_rows);
    if (plan.budget_bytes != 0 && needed > plan.budget_bytes) {
        const std::size_t lo = sdk::largest_batch_within(plan.budget_bytes, plan.max_batch_rows,
                                                         [&](std::size_t rows) { return bytes_for(rows); });
        fail(BRAIN_ERR_BUDGET_EXCEEDED, "the CPU predictor needs ", needed, " bytes for batches of ",
             plan.max_batch_rows, " rows (", bytes_for(0), " for the parameters) but the memory budget is ",
             plan.budget_bytes, " bytes; ",
             lo > 0 ? "the largest batch that fits is " + std::to_string(lo)
                    : std::string("not even one row fits: raise the budget"));
    }
    m_gemm = std::make_unique<const Gemm>();
    m_params = HostBuffer(plan.parameter_count);
    std::memcpy(m_params.data(), desc.parameters, plan.parameter_count * sizeof(float));
    for (HostBuffer& buffer : m_buffers) buffer = HostBuffer(plan.max_batch_rows * m_widest_hidden);
    m_z = HostBuffer(plan.max_batch_rows * m_widest);
    const bool splits = plan.max_batch_rows * m_macs_per_row >= k_split_macs;
    m_pool = std::make_unique<WorkerPool>(
        splits ? static_cast<unsigned>(std::min<std::size_t>(configured_thread_count(), plan.max_batch_rows)) : 1u);
}

std::uint64_t CpuPredictor::bytes_for(std::size_t rows) const noexcept {
    return tensor_bytes(m_plan.parameter_count) + 2 * tensor_bytes(rows * m_widest_hidden) +
           tensor_bytes(rows * m_widest);
}

void CpuPredictor::run(const float* inputs, std::uint64_t rows, float* outputs) {
    const sdk::PredictorPlan& plan = m_plan;
    if (rows > plan.max_batch_rows)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "predictor_run was given ", rows,
             " rows; this predictor was opened for at most ", plan.max_batch_rows, " (max_batch_rows)");
    if (rows == 0) return;
    const std::size_t n = static_cast<std::size_t>(rows);
    const unsigned parts =
        n * m_macs_per_row < k_split_macs ? 1u : static_cast<unsigned>(std::min<std::size_t>(m_pool->size(), n));
    const float* params = m_params.data();
    // Rows are independent: each part takes its rows through every layer in its own slice of each buffer, which
    // starts at the part's first row times the buffer's widest layer, whatever the layer's width (a slice sized by
    // the layer would overlap another part's slice of a wider layer).
    m_pool->run(parts, [&](unsigned index, unsigned count) {
        const Range r = split_range(n, index, count);
        if (r.empty()) return;
        const float* input = inputs + r.begin * plan.input_width;
        for (std::size_t l = 0; l < plan.layers.size(); ++l) {
            const LayerPlan& layer = plan.layers[l];
            const std::size_t in = layer.inputs, out = layer.outputs;
            float* z = m_z.data() + r.begin * m_widest;
            float* a = l + 1 == plan.layers.size() ? outputs + r.begin * out
                                                   : m_buffers[l % 2].data() + r.begin * m_widest_hidden;
            (*m_gemm)(false, true, static_cast<int>(r.size()), static_cast<int>(out), static_cast<int>(in), input,
                      static_cast<int>(in), params + layer.weight_offset, static_cast<int>(in), z,
                      static_cast<int>(out));
            // The bias and the activation by the same vectorised code as training and the core's predict.
            bias_activation(layer.activation, layer.param, params + layer.bias_offset, z, a, r.size(), out);
            input = a;
        }
    });
    m_gemm->check();
}

} // namespace brain::cpu
