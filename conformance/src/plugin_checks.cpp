// The checks of the plugin itself, made through its function table: it loads with a complete table, its name
// resolves to this file, it has a device, and its doctor probe really runs its checks.
#include "checks.hpp"

#include <brain/plugins.hpp>
#include <filesystem>

namespace brain::conformance {

bool run_plugin_checks(CheckTable& table, ConformanceReport& report, const ConformanceOptions& options,
                       const std::function<PluginRecord()>& load, PluginUnderTest& plugin) {
    const bool loaded = table.run("load", [&] {
        plugin.record = load();
        plugin.api = &plugin_api(plugin.record);
        const PluginRecord& r = plugin.record;
        report.plugin = r.name;
        report.path = r.path;
        require(r.ok, "the plugin loaded but is not ready: " + r.message);
        require(r.abi_major == BRAIN_ABI_VERSION_MAJOR, "ABI major " + std::to_string(r.abi_major) +
                                                            " differs from the core's " +
                                                            std::to_string(BRAIN_ABI_VERSION_MAJOR));
        require(!r.version.empty(), "brain_plugin_api::version is empty; set it to the plugin's version string");
        require(!r.description.empty(),
                "brain_plugin_api::description is empty; say in one line what the backend is built on");
        return r.name + " " + r.version + ", ABI " + std::to_string(r.abi_major) + "." +
               std::to_string(r.abi_minor) + " (core " + std::to_string(BRAIN_ABI_VERSION_MAJOR) + "." +
               std::to_string(BRAIN_ABI_VERSION_MINOR) + "): " + r.description;
    });
    if (!loaded) {
        table.skip_rest("the plugin did not load");
        return false;
    }
    const brain_plugin_api& api = *plugin.api;
    const std::string& name = plugin.record.name;

    const bool resolved = table.run("resolve", [&] {
        // Sessions find the backend by name: the kit must test the file they will load.
        const PluginRecord found = load_plugin(name);
        std::error_code ec;
        require(std::filesystem::equivalent(found.path, report.path, ec),
                "backend \"" + name + "\" resolves to " + found.path.string() +
                    " on the plugin search path, not to " + report.path.string() +
                    "; put its directory first in BRAIN_PLUGIN_PATH (brain-conformance does)");
        return "TrainingBackend::plugin(\"" + name + "\", ...) finds " + report.path.string();
    });

    std::int32_t count = 0;
    const bool has_device = table.run("devices", [&] {
        const RawOutcome outcome = take(api, api.device_count(&count));
        require(outcome.ok, "device_count failed: " + describe(outcome) +
                                (is_abi_code(outcome.code) ? "; the kit needs a device to test on" : ""));
        require(count >= 1, "device_count reported " + std::to_string(count) +
                                " devices without an error; report why there are none with an error instead");
        require(options.device < count, "device " + std::to_string(options.device) + " was asked for but only " +
                                            std::to_string(count) + " exist; pass --device 0.." +
                                            std::to_string(count - 1));
        return std::to_string(count) + " device(s); testing device " + std::to_string(options.device);
    });
    if (!has_device) {
        table.skip_rest("no usable device");
        return false;
    }

    const std::uint64_t budget_bytes = options.budget_mib * 1024ull * 1024ull;
    table.run("doctor", [&] {
        brain_device_report raw{};
        raw.struct_size = sizeof(raw);
        const RawOutcome outcome = take(api, api.probe(options.device, budget_bytes, &raw));
        require(outcome.ok, "probe failed: " + describe(outcome));
        raw.name[sizeof(raw.name) - 1] = '\0';
        raw.revision[sizeof(raw.revision) - 1] = '\0';
        raw.notes[sizeof(raw.notes) - 1] = '\0';
        const std::string notes = raw.notes[0] ? std::string(" (notes: ") + raw.notes + ")" : "";
        require(raw.name[0] != '\0', "the report has an empty device name");
        require(raw.total_memory_mib > 0, "total_memory_mib is " + std::to_string(raw.total_memory_mib) +
                                              "; report the device's memory (-1 only when truly unknown)");
        require(raw.gemm_available, "gemm_available is false" + notes);
        require(raw.kernel_available, "kernel_available is false" + notes);
        require(raw.allocation_test, "allocation_test is false under a budget of " +
                                         std::to_string(options.budget_mib) + " MiB" + notes);
        return std::string(raw.name) + " (" + raw.revision + "), " + std::to_string(raw.total_memory_mib) +
               " MiB total, " + (raw.free_memory_mib >= 0 ? std::to_string(raw.free_memory_mib) : "unknown") +
               " MiB free; GEMM, kernel and allocation checks passed";
    });

    if (!resolved) {
        table.skip_rest("sessions would load a different file (see resolve)");
        return false;
    }
    return true;
}

} // namespace brain::conformance
