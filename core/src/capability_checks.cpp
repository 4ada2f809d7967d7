// What a plugin runs, as the core reads it and holds sessions to it.
#include "capability_checks.hpp"

#include "plugin_registry.hpp"
#include "plugin_text.hpp"

#include <brain/error.hpp>

namespace brain {

namespace {

constexpr Activation k_activations[] = {Activation::Linear,  Activation::Relu, Activation::LeakyRelu,
                                        Activation::Sigmoid, Activation::Tanh, Activation::Softmax,
                                        Activation::Gelu};
constexpr Loss k_losses[] = {Loss::MeanSquaredError, Loss::BinaryCrossEntropy, Loss::CategoricalCrossEntropy};
constexpr Optimizer::Kind k_optimizers[] = {Optimizer::Kind::Sgd, Optimizer::Kind::Adam, Optimizer::Kind::AdamW};
constexpr Precision k_precisions[] = {Precision::Float32, Precision::Tf32, Precision::Bf16};

// Bits of every value of an enumeration this core knows.
template <class E, std::size_t N>
constexpr std::uint32_t known_bits(const E (&values)[N]) {
    std::uint32_t bits = 0;
    for (E v : values) bits |= 1u << static_cast<unsigned>(v);
    return bits;
}

// "linear, relu" for the values of `values` that `runs` accepts ("none" when it accepts none).
template <class E, std::size_t N, class Runs>
std::string list(const E (&values)[N], Runs&& runs, bool running) {
    std::string out;
    for (E v : values)
        if (runs(v) == running) out += (out.empty() ? "" : ", ") + std::string(to_string(v));
    return out.empty() ? "none" : out;
}

} // namespace

std::string describe(const PluginCapabilities& c) {
    auto runs = [&c](auto v) { return c.runs(v); };
    std::string out =
        "activations: " + list(k_activations, runs, true) + "; losses: " + list(k_losses, runs, true) +
        "; optimizers: " + list(k_optimizers, runs, true) + "; precisions: " + list(k_precisions, runs, true);
    return out;
}

std::vector<std::string> missing_features(const PluginCapabilities& c) {
    std::vector<std::string> out;
    auto add = [&](const auto& values) {
        for (auto v : values)
            if (!c.runs(v)) out.emplace_back(to_string(v));
    };
    add(k_activations);
    add(k_losses);
    add(k_optimizers);
    add(k_precisions);
    return out;
}

PluginCapabilities plugin_capabilities(const std::string& name) {
    return detail::PluginRegistry::instance().get(name)->record().capabilities;
}

namespace detail {

PluginCapabilities read_capabilities(const brain_plugin_api& api, const std::string& plugin) {
    PluginCapabilities out;
    if (!api.capabilities) {
        // ABI 1.0 and 1.1 plugins, and 1.2 plugins without the entry: the 1.0 set, float32, no features.
        out.activations = known_bits(k_activations);
        out.losses = known_bits(k_losses);
        out.optimizers = known_bits(k_optimizers);
        out.precisions = 1u << static_cast<unsigned>(Precision::Float32);
        return out;
    }
    brain_capabilities raw{};
    raw.struct_size = sizeof(raw);
    throw_plugin_error(api, plugin, guarded_call(plugin, "capabilities", [&] { return api.capabilities(&raw); }));
    out.declared = true;
    out.activations = raw.activations & known_bits(k_activations);
    out.losses = raw.losses & known_bits(k_losses);
    out.optimizers = raw.optimizers & known_bits(k_optimizers);
    out.precisions = raw.precisions & known_bits(k_precisions);
    // A feature served by entries counts only when the table has them: a bit alone offers nothing the core can
    // call.
    out.features = raw.features;
    if (!api.session_set_step_learning_rates) out.features &= ~BRAIN_FEATURE_STEP_LEARNING_RATES;
    if (!api.predictor_open) out.features &= ~(BRAIN_FEATURE_PREDICT | BRAIN_FEATURE_PREDICT_CHECKS_INPUTS);
    out.max_devices = raw.max_devices == 0 ? 1 : raw.max_devices;
    out.notes = plugin_array_text(raw.notes);
    return out;
}

void require_capabilities(const PluginCapabilities& c, const std::string& plugin, unsigned abi_minor,
                          const Network& network, Precision precision) {
    const std::string who = "backend \"" + plugin + "\"";
    const std::string why =
        !c.declared
            ? " (its plugin, built against ABI 1." + std::to_string(abi_minor) +
                  ", has no capabilities entry, so it is taken to run the ABI 1.0 set with float32 products)"
        : c.notes.empty() ? std::string()
                          : " (the plugin says: " + c.notes + ")";
    auto runs = [&c](auto v) { return c.runs(v); };
    const std::string where = " (brain plugins shows them)";
    const auto& layers = network.layers();
    for (std::size_t l = 0; l < layers.size(); ++l)
        BRAIN_CHECK(c.runs(layers[l].activation), ErrorCode::Unsupported, who, " does not run the ",
                    to_string(layers[l].activation), " activation of layer ", l, why, "; it runs ",
                    list(k_activations, runs, true), ". Use one of those, or a backend whose capabilities list ",
                    to_string(layers[l].activation), where);
    BRAIN_CHECK(c.runs(network.loss()), ErrorCode::Unsupported, who, " does not run the ",
                to_string(network.loss()), " loss", why, "; it runs ", list(k_losses, runs, true),
                ". Use one of those, or a backend whose capabilities list ", to_string(network.loss()), where);
    const Optimizer::Kind kind = network.optimizer().kind;
    BRAIN_CHECK(c.runs(kind), ErrorCode::Unsupported, who, " does not run the ", to_string(kind), " optimizer", why,
                "; it runs ", list(k_optimizers, runs, true),
                ". Use one of those, or a backend whose capabilities list ", to_string(kind), where);
    BRAIN_CHECK(c.runs(precision), ErrorCode::Unsupported, who, " does not compute in ", to_string(precision), why,
                "; it computes in ", list(k_precisions, runs, true),
                ". Use float32 (Precision::Float32; --precision float32 in the brain command), or a backend whose "
                "capabilities list ",
                to_string(precision), where);
}

void require_devices(const PluginCapabilities& c, const TrainingBackend& backend) {
    const std::size_t devices = backend.devices().size();
    if (devices <= 1 && backend.world_size() <= 1) return;
    // The plugin's notes are about what it computes, not about devices: they are left out here.
    BRAIN_CHECK(
        c.features & BRAIN_FEATURE_MULTI_DEVICE, ErrorCode::Unsupported, "backend \"", backend.plugin_name(),
        "\" trains on one device in one process, and ", backend.describe(), " asks for ",
        devices > 1 ? std::to_string(devices) + " devices" : std::to_string(backend.world_size()) + " processes",
        "; give it one device, or use a backend with data parallelism (cuda)");
    BRAIN_CHECK(devices <= c.max_devices, ErrorCode::Unsupported, "backend \"", backend.plugin_name(),
                "\" trains on at most ", c.max_devices, " devices per process, and ", backend.describe(), " lists ",
                devices, "; list fewer devices, or spread them over processes (--world-size)");
}

std::vector<int> every_device(Plugin& plugin, const TrainingBackend& backend) {
    const int count = plugin.device_count();
    BRAIN_CHECK(count > 0, ErrorCode::DeviceNotFound, "backend ", backend.describe(),
                " asks for every device, and the ", backend.plugin_name(),
                " plugin sees none; run brain doctor --backend ", backend.plugin_name(), ":0 to see why");
    std::vector<int> out;
    for (int i = 0; i < count; ++i) out.push_back(i);
    return out;
}

} // namespace detail

} // namespace brain
