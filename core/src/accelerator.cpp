#include "plugin_registry.hpp"
#include "plugin_validation.hpp"

#include <brain/accelerator.hpp>
#include <brain/error.hpp>
#include <brain/session_budget.hpp>

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

// The SDK's plan of a session of `network` with as much as its estimate reads: the layer widths, the data widths
// and the parameter count. The estimate is the SDK's (brain/session_budget.hpp), so the core and every plugin that
// uses the helper agree byte for byte.
sdk::SessionPlan estimate_plan(const Network& network) {
    sdk::SessionPlan plan;
    for (const auto& layer : network.layers()) {
        sdk::LayerPlan l;
        l.inputs = layer.inputs;
        l.outputs = layer.outputs;
        l.activation = static_cast<int32_t>(layer.activation);
        plan.layers.push_back(l);
    }
    plan.input_width = network.input_size();
    plan.target_width = network.output_size();
    plan.parameter_count = network.parameter_count();
    return plan;
}

} // namespace

std::uint64_t estimate_tensor_memory_bytes(const Network& network, std::size_t batch_size) {
    BRAIN_CHECK_ARG(batch_size > 0, "batch_size is 0; expected at least 1");
    return sdk::estimate_tensor_bytes(estimate_plan(network), batch_size);
}

std::uint64_t estimate_tensor_memory_mib(const Network& network, std::size_t batch_size) {
    constexpr std::uint64_t mib = 1024 * 1024;
    return (estimate_tensor_memory_bytes(network, batch_size) + mib - 1) / mib;
}

std::size_t largest_batch_within(const Network& network, std::uint64_t budget_bytes) {
    return sdk::estimate_largest_batch(estimate_plan(network), budget_bytes);
}

} // namespace brain
