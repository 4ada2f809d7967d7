// The checks of the plugin itself, made through its function table: it loads with a complete table, states what it
// runs, its name resolves to this file, it has a device, and its doctor probe really runs its checks.
#include "checks.hpp"

#include <brain/backend_capabilities.hpp>
#include <brain/plugins.hpp>
#include <filesystem>

namespace brain::conformance {

namespace {

std::string load_check(KitContext& kit) {
    const PluginRecord& r = kit.plugin().record;
    kit.fact("plugin", r.name);
    kit.fact("path", r.path.string());
    require(r.ok, "the plugin loaded but is not ready: " + r.message);
    require(r.abi_major == BRAIN_ABI_VERSION_MAJOR, "ABI major " + std::to_string(r.abi_major) +
                                                        " differs from the core's " +
                                                        std::to_string(BRAIN_ABI_VERSION_MAJOR));
    require(!r.version.empty(), "brain_plugin_api::version is empty; set it to the plugin's version string");
    require(!r.description.empty(),
            "brain_plugin_api::description is empty; say in one line what the backend is built on");
    return r.name + " " + r.version + ", ABI " + std::to_string(r.abi_major) + "." + std::to_string(r.abi_minor) +
           " (core " + std::to_string(BRAIN_ABI_VERSION_MAJOR) + "." + std::to_string(BRAIN_ABI_VERSION_MINOR) +
           "): " + r.description;
}

// The names of the bits of `mask` outside `allowed`, by `name_of`.
template <class NameOf>
std::string bits_named(std::uint32_t mask, std::uint32_t allowed, NameOf&& name_of) {
    std::string out;
    for (int bit = 0; bit < 32; ++bit)
        if ((mask >> bit & 1u) && !(allowed >> bit & 1u))
            out += (out.empty() ? "" : ", ") + std::string(name_of(bit));
    return out;
}

std::string capabilities_check(KitContext& kit) {
    const PluginUnderTest& plugin = kit.plugin();
    const PluginCapabilities& c = plugin.record.capabilities;
    kit.fact("capabilities", describe(c));
    for (const std::string& missing : missing_features(c)) kit.fact("unsupported", missing);
    if (!c.declared)
        return "no capabilities entry (ABI " + std::to_string(plugin.record.abi_major) + "." +
               std::to_string(plugin.record.abi_minor) + "): taken to run the ABI 1.0 set, " + describe(c);

    // The raw answer, before the core drops what it does not know.
    brain_capabilities raw{};
    raw.struct_size = sizeof(raw);
    const RawOutcome outcome = take(*plugin.api, plugin.api->capabilities(&raw));
    require(outcome.ok, "capabilities failed: " + describe(outcome));
    const auto unknown = [](int bit) { return "bit " + std::to_string(bit); };
    const std::string stray = bits_named(raw.activations, sdk::abi_1_0_activations, unknown) +
                              bits_named(raw.losses, sdk::abi_1_0_losses, unknown) +
                              bits_named(raw.optimizers, sdk::abi_1_0_optimizers, unknown) +
                              bits_named(raw.precisions, sdk::all_precisions, unknown);
    require(stray.empty(), "the capabilities set bits that name no activation, loss, optimizer or precision of the "
                           "ABI (" +
                               stray + "); set only (1u << value) of the enums' values");
    const std::string lacking = bits_named(sdk::mandatory_activations, raw.activations, sdk::activation_name) +
                                bits_named(sdk::mandatory_losses, raw.losses, sdk::loss_name) +
                                bits_named(sdk::mandatory_optimizers, raw.optimizers, sdk::optimizer_name) +
                                bits_named(sdk::mandatory_precisions, raw.precisions, sdk::precision_name);
    require(lacking.empty(), "the plugin declares that it does not run " + lacking +
                                 ", which every backend must run (the mandatory set: linear, relu and tanh "
                                 "layers, mean_squared_error, sgd and adam, float32 products)");
    const bool gaps = (raw.activations & sdk::abi_1_0_activations) != sdk::abi_1_0_activations ||
                      (raw.losses & sdk::abi_1_0_losses) != sdk::abi_1_0_losses ||
                      (raw.optimizers & sdk::abi_1_0_optimizers) != sdk::abi_1_0_optimizers;
    require(!gaps || raw.notes[0] != '\0',
            "the plugin declares that it does not run some activations, losses or optimizers but its notes are "
            "empty; say why in brain_capabilities.notes, in the user's terms");
    require(raw.max_devices >= 1, "max_devices is 0; a session trains on at least one device");
    std::string detail = describe(c);
    if (!c.notes.empty()) detail += " (notes: " + c.notes + ")";
    return detail;
}

std::string resolve_check(KitContext& kit) {
    // Sessions find the backend by name: the kit must test the file they will load.
    const PluginRecord& record = kit.plugin().record;
    const PluginRecord found = load_plugin(record.name);
    std::error_code ec;
    require(std::filesystem::equivalent(found.path, record.path, ec),
            "backend \"" + record.name + "\" resolves to " + found.path.string() +
                " on the plugin search path, not to " + record.path.string() +
                "; put its directory first in BRAIN_PLUGIN_PATH (brain-conformance does)");
    return "TrainingBackend::plugin(\"" + record.name + "\", ...) finds " + record.path.string();
}

std::string devices_check(KitContext& kit) {
    const brain_plugin_api& api = *kit.plugin().api;
    const int device = kit.options().device;
    std::int32_t count = 0;
    const RawOutcome outcome = take(api, api.device_count(&count));
    require(outcome.ok, "device_count failed: " + describe(outcome) +
                            (is_abi_code(outcome.code) ? "; the kit needs a device to test on" : ""));
    require(count >= 1, "device_count reported " + std::to_string(count) +
                            " devices without an error; report why there are none with an error instead");
    require(device < count, "device " + std::to_string(device) + " was asked for but only " +
                                std::to_string(count) + " exist; pass --device 0.." + std::to_string(count - 1));
    return std::to_string(count) + " device(s); testing device " + std::to_string(device);
}

std::string doctor_check(KitContext& kit) {
    const brain_plugin_api& api = *kit.plugin().api;
    const ConformanceOptions& options = kit.options();
    brain_device_report raw{};
    raw.struct_size = sizeof(raw);
    const RawOutcome outcome = take(api, api.probe(options.device, options.budget_mib * 1024ull * 1024ull, &raw));
    require(outcome.ok, "probe failed: " + describe(outcome));
    raw.name[sizeof(raw.name) - 1] = '\0';
    raw.revision[sizeof(raw.revision) - 1] = '\0';
    raw.notes[sizeof(raw.notes) - 1] = '\0';
    raw.gemm_check[sizeof(raw.gemm_check) - 1] = '\0';
    raw.kernel_check[sizeof(raw.kernel_check) - 1] = '\0';
    raw.allocation_check[sizeof(raw.allocation_check) - 1] = '\0';
    const std::string notes = raw.notes[0] ? std::string(" (notes: ") + raw.notes + ")" : "";
    require(raw.name[0] != '\0', "the report has an empty device name");
    require(raw.total_memory_mib > 0, "total_memory_mib is " + std::to_string(raw.total_memory_mib) +
                                          "; report the device's memory (-1 only when truly unknown)");
    require(raw.gemm_available, "gemm_available is false" + notes);
    require(raw.kernel_available, "kernel_available is false" + notes);
    require(raw.allocation_test,
            "allocation_test is false under a budget of " + std::to_string(options.budget_mib) + " MiB" + notes);
    const auto label = [](const char* text) { return text[0] ? std::string(text) : std::string("unnamed"); };
    return std::string(raw.name) + " (" + raw.revision + "), " + std::to_string(raw.total_memory_mib) +
           " MiB total, " + (raw.free_memory_mib >= 0 ? std::to_string(raw.free_memory_mib) : "unknown") +
           " MiB free; passed: GEMM (" + label(raw.gemm_check) + "), kernel (" + label(raw.kernel_check) +
           "), allocation (" + label(raw.allocation_check) + ")";
}

// The value of the first fact named `key`, or "".
std::string fact_of(const CheckOutcome& outcome, const std::string& key) {
    for (const auto& [k, v] : outcome.facts)
        if (k == key) return v;
    return {};
}

} // namespace

bool run_plugin_checks(CheckTable& table, ConformanceReport& report) {
    const CheckOutcome load = table.run("load", load_check);
    if (!fact_of(load, "plugin").empty()) report.plugin = fact_of(load, "plugin");
    if (!fact_of(load, "path").empty()) report.path = fact_of(load, "path");
    if (!load.passed) {
        table.skip_rest("the plugin did not load");
        return false;
    }
    const CheckOutcome caps = table.run("capabilities", capabilities_check);
    report.capabilities = fact_of(caps, "capabilities");
    for (const auto& [key, value] : caps.facts)
        if (key == "unsupported") report.unsupported.push_back(value);
    const bool resolved = table.run("resolve", resolve_check).passed;
    const CheckOutcome devices = table.run("devices", devices_check);
    if (!devices.passed) {
        table.skip_rest("no usable device (see devices)");
        return false;
    }
    table.run("doctor", doctor_check);
    if (!resolved) {
        table.skip_rest("sessions would load a different file (see resolve)");
        return false;
    }
    return true;
}

} // namespace brain::conformance
