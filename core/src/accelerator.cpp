#include "plugin_registry.hpp"
#include "plugin_validation.hpp"

#include <algorithm>
#include <brain/accelerator.hpp>
#include <brain/error.hpp>

namespace brain {

std::optional<AcceleratorReport> accelerator_doctor(const TrainingBackend& backend) {
    if (backend.is_cpu()) return std::nullopt;
    auto plugin = detail::PluginRegistry::instance().get(backend.plugin_name());
    brain_device_report raw{};
    raw.struct_size = sizeof(raw);
    plugin->check(plugin->api().probe(backend.device(), backend.memory_budget_mib() * 1024ull * 1024ull, &raw));
    return detail::report_from_plugin(raw, backend.plugin_name() + ":" + std::to_string(backend.device()),
                                      backend.plugin_name());
}

namespace {
constexpr std::uint64_t k_fixed_slack_bytes = 64 * 1024;

std::uint64_t batch_floats(const Network& network, std::uint64_t batch) {
    std::uint64_t per_row = network.input_size() + network.output_size();
    for (const auto& layer : network.layers()) per_row += 3 * layer.outputs; // z, a, delta
    return batch * per_row;
}

// Mixed precision (docs/cuda-plugin.md): each layer's weights and biases start on a 128-value boundary, so that
// every operand of a bf16 product is aligned for the tensor cores.
constexpr std::uint64_t k_bf16_segment = 128;

std::uint64_t padded(std::uint64_t count) {
    return (count + k_bf16_segment - 1) / k_bf16_segment * k_bf16_segment;
}

// Bytes that do not grow with the batch: float32 parameters, gradients and two optimizer moments, and the bf16 copy
// of the parameters, all in the padded layout; plus the fixed slack.
std::uint64_t bf16_fixed_bytes(const Network& network) {
    std::uint64_t params = 0;
    for (const auto& layer : network.layers())
        params += padded(static_cast<std::uint64_t>(layer.outputs) * layer.inputs) + padded(layer.outputs);
    return (4 * sizeof(float) + 2) * params + k_fixed_slack_bytes;
}

// Bytes per batch row in mixed precision.
std::uint64_t bf16_row_bytes(const Network& network) {
    const auto& layers = network.layers();
    std::uint64_t widest = 0, bytes = 2 * network.input_size() + 4 * network.output_size();
    for (std::size_t l = 0; l < layers.size(); ++l) {
        widest = std::max<std::uint64_t>(widest, layers[l].outputs);
        bytes += l + 1 < layers.size() ? 4 * layers[l].outputs : 12 * layers[l].outputs; // bf16 z, a; or float32
    }
    return bytes + 4 * widest; // two bf16 delta buffers
}
} // namespace

std::uint64_t estimate_tensor_memory_bytes(const Network& network, std::size_t batch_size) {
    BRAIN_CHECK_ARG(batch_size > 0, "batch_size is 0; expected at least 1");
    const std::uint64_t params = network.parameter_count();
    return sizeof(float) * (4 * params + batch_floats(network, batch_size)) + k_fixed_slack_bytes;
}

std::uint64_t estimate_tensor_memory_bytes(const Network& network, std::size_t batch_size, Precision precision) {
    if (precision != Precision::Bf16) return estimate_tensor_memory_bytes(network, batch_size);
    BRAIN_CHECK_ARG(batch_size > 0, "batch_size is 0; expected at least 1");
    return bf16_fixed_bytes(network) + bf16_row_bytes(network) * batch_size;
}

std::uint64_t estimate_tensor_memory_mib(const Network& network, std::size_t batch_size, Precision precision) {
    constexpr std::uint64_t mib = 1024 * 1024;
    return (estimate_tensor_memory_bytes(network, batch_size, precision) + mib - 1) / mib;
}

std::uint64_t estimate_tensor_memory_mib(const Network& network, std::size_t batch_size) {
    constexpr std::uint64_t mib = 1024 * 1024;
    return (estimate_tensor_memory_bytes(network, batch_size) + mib - 1) / mib;
}

std::size_t largest_batch_within(const Network& network, std::uint64_t budget_bytes) {
    const std::uint64_t fixed = sizeof(float) * 4 * network.parameter_count() + k_fixed_slack_bytes;
    if (budget_bytes < fixed) return 0;
    const std::uint64_t per_row = sizeof(float) * batch_floats(network, 1);
    return static_cast<std::size_t>((budget_bytes - fixed) / per_row);
}

std::size_t largest_batch_within(const Network& network, std::uint64_t budget_bytes, Precision precision) {
    if (precision != Precision::Bf16) return largest_batch_within(network, budget_bytes);
    const std::uint64_t fixed = bf16_fixed_bytes(network);
    if (budget_bytes < fixed) return 0;
    return static_cast<std::size_t>((budget_bytes - fixed) / bf16_row_bytes(network));
}

} // namespace brain
