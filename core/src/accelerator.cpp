#include "host_memory.hpp"
#include "plugin_registry.hpp"
#include "plugin_validation.hpp"

#include <algorithm>
#include <brain/accelerator.hpp>
#include <brain/error.hpp>
#include <brain/session_budget.hpp>

namespace brain {

std::optional<AcceleratorReport> accelerator_doctor(const TrainingBackend& backend) {
    // Without a budget the CPU has nothing to probe; with one, its plugin checks that the budget can be allocated.
    if (backend.is_cpu() && backend.memory_budget_mib() == 0) return std::nullopt;
    auto plugin = detail::PluginRegistry::instance().get(backend.plugin_name());
    // Memory the plugin does not fill in reads as unknown (-1), never as a fake 0.
    brain_device_report raw{};
    raw.struct_size = sizeof(raw);
    raw.total_memory_mib = -1;
    raw.free_memory_mib = -1;
    plugin->call("probe", plugin->api().probe, static_cast<std::int32_t>(backend.device()),
                 static_cast<std::uint64_t>(backend.memory_budget_mib() * 1024ull * 1024ull), &raw);
    return detail::report_from_plugin(raw, backend.plugin_name() + ":" + std::to_string(backend.device()),
                                      backend.plugin_name());
}

namespace {

constexpr std::uint64_t k_max_width = 0xFFFFFFFFull; // the plugin ABI's uint32

// Saturating arithmetic that remembers whether it saturated.
struct Sizes {
    bool saturated = false;
    std::uint64_t add(std::uint64_t a, std::uint64_t b) {
        if (a > UINT64_MAX - b) return saturate();
        return a + b;
    }
    std::uint64_t mul(std::uint64_t a, std::uint64_t b) {
        if (a != 0 && b > UINT64_MAX / a) return saturate();
        return a * b;
    }
    std::uint64_t saturate() {
        saturated = true;
        return UINT64_MAX;
    }
};

// The parameter count of a shape, after checking that its layers chain and fit the ABI's widths.
struct ShapeSizes {
    std::uint64_t parameters = 0;
    bool saturated = false;
};

ShapeSizes shape_sizes(const std::vector<LayerSpec>& layers) {
    BRAIN_CHECK_ARG(!layers.empty(), "the network has no layers; describe at least one dense layer");
    Sizes s;
    ShapeSizes out;
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const LayerSpec& l = layers[i];
        BRAIN_CHECK_ARG(l.inputs >= 1 && l.outputs >= 1 && l.inputs <= k_max_width && l.outputs <= k_max_width,
                        "layer ", i, " has ", l.inputs, " inputs and ", l.outputs,
                        " outputs; widths must be in [1, ", k_max_width, "] (the plugin ABI's uint32)");
        BRAIN_CHECK_ARG(to_string(l.activation) != "unknown_activation", "layer ", i, ": unknown activation value ",
                        static_cast<int>(l.activation),
                        "; use one of linear, relu, leaky_relu, sigmoid, tanh, "
                        "softmax, gelu");
        BRAIN_CHECK_ARG(i == 0 || l.inputs == layers[i - 1].outputs, "layer ", i, " takes ", l.inputs,
                        " inputs but layer ", i - 1, " has ", layers[i - 1].outputs, " outputs; layers must chain");
        out.parameters = s.add(out.parameters, s.add(s.mul(l.outputs, l.inputs), l.outputs));
    }
    out.saturated = s.saturated;
    return out;
}

// The SDK's plan of a session of this shape with as much as its estimate reads (the widths and the parameter
// count): the estimate is the SDK's (brain/session_budget.hpp), so the core and every plugin that uses the helper
// agree byte for byte.
sdk::SessionPlan estimate_plan(const std::vector<LayerSpec>& layers, const ShapeSizes& shape) {
    sdk::SessionPlan plan;
    for (const auto& layer : layers) {
        sdk::LayerPlan l;
        l.inputs = layer.inputs;
        l.outputs = layer.outputs;
        l.activation = static_cast<int32_t>(layer.activation);
        plan.layers.push_back(l);
    }
    plan.input_width = layers.front().inputs;
    plan.target_width = layers.back().outputs;
    plan.parameter_count = shape.parameters;
    return plan;
}

// Mixed precision (docs/cuda-plugin.md): each layer's weights and biases start on a 128-value boundary, so that
// every operand of a bf16 product is aligned for the tensor cores.
constexpr std::uint64_t k_bf16_segment = 128;

// The bf16 estimate's two parts: bytes that do not grow with the batch (float32 parameters, gradients and two
// optimizer moments and the bf16 copy, in the padded layout, plus the slack), and bytes per batch row (bf16 inputs,
// float32 targets, each hidden layer's bf16 pre-activations and activations, the output layer's float32 z, a and
// delta, two bf16 delta buffers as wide as the widest layer).
struct Bf16Sizes {
    std::uint64_t parameters = 0; // the padded layout's values
    std::uint64_t fixed = 0;
    std::uint64_t per_row = 0;
    bool saturated = false;
};

Bf16Sizes bf16_sizes(const std::vector<LayerSpec>& layers) {
    const ShapeSizes shape = shape_sizes(layers); // validates the shape
    Sizes s;
    const auto padded = [&](std::uint64_t n) {
        return s.mul(s.add(n, k_bf16_segment - 1) / k_bf16_segment, k_bf16_segment);
    };
    Bf16Sizes out;
    std::uint64_t widest = 0;
    out.per_row = s.add(s.mul(2, layers.front().inputs), s.mul(4, layers.back().outputs));
    for (std::size_t l = 0; l < layers.size(); ++l) {
        const LayerSpec& layer = layers[l];
        out.parameters =
            s.add(out.parameters, s.add(padded(s.mul(layer.outputs, layer.inputs)), padded(layer.outputs)));
        widest = std::max<std::uint64_t>(widest, layer.outputs);
        out.per_row = s.add(out.per_row, s.mul(l + 1 < layers.size() ? 4 : 12, layer.outputs));
    }
    out.per_row = s.add(out.per_row, s.mul(4, widest));
    out.fixed = s.add(s.mul(4 * sizeof(float) + 2, out.parameters), sdk::estimate_slack_bytes);
    out.saturated = shape.saturated || s.saturated;
    return out;
}

} // namespace

std::uint64_t MemoryEstimate::mib() const noexcept {
    constexpr std::uint64_t mib = 1024 * 1024;
    return bytes / mib + (bytes % mib != 0 ? 1 : 0);
}

MemoryEstimate estimate_tensor_memory(const std::vector<LayerSpec>& layers, std::uint64_t batch_size) {
    BRAIN_CHECK_ARG(batch_size > 0, "batch_size is 0; expected at least 1");
    const ShapeSizes shape = shape_sizes(layers);
    MemoryEstimate e;
    e.parameter_count = shape.parameters;
    e.bytes = shape.saturated ? UINT64_MAX : sdk::estimate_tensor_bytes(estimate_plan(layers, shape), batch_size);
    e.saturated = shape.saturated || e.bytes == UINT64_MAX;
    return e;
}

std::uint64_t largest_batch_within(const std::vector<LayerSpec>& layers, std::uint64_t budget_bytes) {
    const ShapeSizes shape = shape_sizes(layers);
    if (shape.saturated) return 0;
    return sdk::estimate_largest_batch(estimate_plan(layers, shape), budget_bytes);
}

std::uint64_t training_host_memory_bytes(const std::vector<LayerSpec>& layers, const Optimizer& optimizer,
                                         std::uint64_t rows, std::uint64_t batch_size, bool standardized,
                                         const TrainingBackend& backend, std::uint32_t network_copies) {
    using detail::saturating_add, detail::saturating_mul;
    const ShapeSizes shape = shape_sizes(layers);
    const std::uint64_t inputs = layers.front().inputs, outputs = layers.back().outputs;
    const std::uint64_t network =
        saturating_mul(saturating_mul(shape.parameters, 1 + optimizer.state_per_parameter()), sizeof(float));
    std::uint64_t total = saturating_mul(network, network_copies);
    if (standardized) total = saturating_add(total, saturating_mul(saturating_mul(rows, inputs), sizeof(float)));
    if (backend.is_cpu()) {
        const std::uint64_t batch = std::max<std::uint64_t>(1, std::min(batch_size, rows));
        total = saturating_add(total, estimate_tensor_memory(layers, batch).bytes);
        total = saturating_add(
            total, saturating_mul(saturating_mul(rows, saturating_add(inputs, outputs)), sizeof(float)));
    }
    return shape.saturated ? UINT64_MAX : total;
}

std::optional<std::uint64_t> host_memory_available_bytes() {
    if (const auto available = detail::host_memory_available()) return available->bytes;
    return std::nullopt;
}

void require_host_memory(std::uint64_t bytes, const std::string& what, const std::string& advice) {
    detail::require_host_memory(bytes, what, advice);
}

std::uint64_t estimate_tensor_memory_bytes(const Network& network, std::size_t batch_size) {
    return estimate_tensor_memory(network.layers(), batch_size).bytes;
}

MemoryEstimate estimate_tensor_memory(const std::vector<LayerSpec>& layers, std::uint64_t batch_size,
                                      Precision precision) {
    BRAIN_CHECK_ARG(to_string(precision) != "unknown_precision", "unknown precision value ",
                    static_cast<int>(precision), "; use Precision::Float32, Tf32 or Bf16");
    if (precision != Precision::Bf16) return estimate_tensor_memory(layers, batch_size);
    BRAIN_CHECK_ARG(batch_size > 0, "batch_size is 0; expected at least 1");
    const Bf16Sizes sizes = bf16_sizes(layers);
    Sizes s;
    MemoryEstimate e;
    e.parameter_count = shape_sizes(layers).parameters;
    e.bytes = s.add(sizes.fixed, s.mul(batch_size, sizes.per_row));
    e.saturated = sizes.saturated || s.saturated;
    if (e.saturated) e.bytes = UINT64_MAX;
    return e;
}

std::uint64_t largest_batch_within(const std::vector<LayerSpec>& layers, std::uint64_t budget_bytes,
                                   Precision precision) {
    if (precision != Precision::Bf16) return largest_batch_within(layers, budget_bytes);
    const Bf16Sizes sizes = bf16_sizes(layers);
    if (sizes.saturated || budget_bytes < sizes.fixed) return 0;
    return (budget_bytes - sizes.fixed) / sizes.per_row;
}

std::uint64_t estimate_tensor_memory_bytes(const Network& network, std::size_t batch_size, Precision precision) {
    return estimate_tensor_memory(network.layers(), batch_size, precision).bytes;
}

std::uint64_t estimate_tensor_memory_mib(const Network& network, std::size_t batch_size, Precision precision) {
    return estimate_tensor_memory(network.layers(), batch_size, precision).mib();
}

std::uint64_t estimate_tensor_memory_mib(const Network& network, std::size_t batch_size) {
    return estimate_tensor_memory(network.layers(), batch_size).mib();
}

std::size_t largest_batch_within(const Network& network, std::uint64_t budget_bytes) {
    return static_cast<std::size_t>(largest_batch_within(network.layers(), budget_bytes));
}

std::size_t largest_batch_within(const Network& network, std::uint64_t budget_bytes, Precision precision) {
    return static_cast<std::size_t>(largest_batch_within(network.layers(), budget_bytes, precision));
}

} // namespace brain
