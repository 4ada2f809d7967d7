#include "plugin_registry.hpp"
#include "plugin_validation.hpp"

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
} // namespace

std::uint64_t estimate_tensor_memory_bytes(const Network& network, std::size_t batch_size) {
    BRAIN_CHECK_ARG(batch_size > 0, "batch_size is 0; expected at least 1");
    const std::uint64_t params = network.parameter_count();
    return sizeof(float) * (4 * params + batch_floats(network, batch_size)) + k_fixed_slack_bytes;
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

} // namespace brain
