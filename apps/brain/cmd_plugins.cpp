// brain plugins: where plugins are searched for, and what each found file amounted to.
#include "app_support.hpp"
#include "commands.hpp"

#include <brain/brain.hpp>
#include <brain/plugin_abi.h>
#include <filesystem>
#include <iostream>

namespace brain::app {

namespace {

// What a plugin runs and lacks, and the optional features it offers.
void print_capabilities(const PluginCapabilities& c) {
    std::cout << "    runs:    " << describe(c)
              << (c.declared ? "" : " (assumed: the plugin has no capabilities entry, so the ABI 1.0 set)") << "\n";
    const auto missing = missing_features(c);
    if (!missing.empty()) {
        std::cout << "    lacks:  ";
        for (std::size_t i = 0; i < missing.size(); ++i) std::cout << (i ? ", " : " ") << missing[i];
        if (!c.notes.empty()) std::cout << " (" << c.notes << ")";
        std::cout << "\n";
    }
    const std::pair<std::uint32_t, const char*> features[] = {
        {BRAIN_FEATURE_STEP_LEARNING_RATES, "per-step learning rates"},
        {BRAIN_FEATURE_PREDICT, "prediction on the device"},
        {BRAIN_FEATURE_BATCH_SOURCE, "streamed data sets"},
        {BRAIN_FEATURE_MULTI_DEVICE, "data parallelism"},
        {BRAIN_FEATURE_PREDICT_CHECKS_INPUTS, "input checks on the device"},
    };
    std::string offers;
    for (const auto& [bit, name] : features)
        if (c.offers(bit)) offers += (offers.empty() ? "" : ", ") + std::string(name);
    if (c.max_devices > 1)
        offers += (offers.empty() ? "" : ", ") + str("up to ", c.max_devices, " devices a session");
    if (!offers.empty()) std::cout << "    offers:  " << offers << "\n";
}

int run_plugins() {
    const auto dirs = plugin_search_paths();
    std::cout << "Plugin search path (in order; BRAIN_PLUGIN_PATH first, then beside libbrain_core, then the "
                 "build tree):\n";
    if (dirs.empty()) std::cout << "  (none)\n";
    for (std::size_t i = 0; i < dirs.size(); ++i) {
        std::error_code ec;
        const bool exists = std::filesystem::is_directory(dirs[i], ec);
        std::cout << "  " << i + 1 << ". " << dirs[i].string() << (exists ? "" : "  (does not exist)") << "\n";
    }

    const auto records = discover_plugins();
    std::cout << "\nPlugins found: " << records.size() << "\n";
    if (records.empty())
        std::cout << "  no libbrain_<name>.so in any directory above; build the plugins (they land in the "
                     "build tree's lib/brain/plugins) or set BRAIN_PLUGIN_PATH\n";
    for (const auto& r : records) {
        // The one file each backend name resolves to is marked "used"; train and doctor load exactly that file.
        if (r.selection != PluginRecord::Selection::Used) {
            const bool skipped = r.selection == PluginRecord::Selection::Skipped;
            // A file named libbrain_.so gives no name at all: its file name stands in.
            std::cout << "\n  " << (r.name.empty() ? r.path.filename().string() : r.name)
                      << (skipped ? "  [skipped]" : "  [not used]") << "\n";
            std::cout << "    path:    " << r.path.string() << "\n";
            std::cout << "    reason:  " << r.message << "\n";
            continue;
        }
        std::cout << "\n  " << r.name << (r.ok ? "  [ok]" : "  [failed]") << "  (used for backend " << r.name
                  << ")\n";
        std::cout << "    path:    " << (r.path.empty() ? std::string("(not found)") : r.path.string()) << "\n";
        std::cout << "    stage:   " << to_string(r.stage) << "\n";
        if (r.abi_major != 0 || r.abi_minor != 0)
            std::cout << "    ABI:     " << r.abi_major << "." << r.abi_minor << " (this core speaks "
                      << BRAIN_ABI_VERSION_MAJOR << "." << BRAIN_ABI_VERSION_MINOR << ")\n";
        if (!r.version.empty()) std::cout << "    version: " << r.version << "\n";
        if (!r.description.empty()) std::cout << "    about:   " << r.description << "\n";
        if (!r.ok) {
            std::cout << "    reason:  " << to_string(static_cast<ErrorCode>(r.error_code)) << ": " << r.message
                      << "\n";
            continue;
        }
        if (r.device_count >= 0)
            std::cout << "    devices: " << r.device_count << "\n";
        else
            std::cout << "    devices: unknown"
                      << (r.device_status.empty() ? std::string() : str(" (", r.device_status, ")")) << "\n";
        if (r.device_count == 0 && !r.device_status.empty())
            std::cout << "    why none: " << r.device_status << "\n";
        print_capabilities(r.capabilities);
    }
    return exit_ok;
}

} // namespace

void add_plugins_command(CLI::App& app, int& exit_code) {
    auto* cmd = app.add_subcommand(
        "plugins", "List every directory searched for backend plugins and every plugin file found: which file each "
                   "backend uses (the first regular libbrain_<name>.so on the path), entries skipped (not regular "
                   "files, or names no backend can have) or not used (a later copy), the load stage reached, ok or "
                   "the precise failure, ABI version, the device count or why it has none, and what it runs: "
                   "activations, losses, optimizers and precisions (an ABI 1.0 or 1.1 plugin is taken to run the "
                   "ABI 1.0 set), what it lacks and why.");
    cmd->callback([&exit_code] { exit_code = run_plugins(); });
}

} // namespace brain::app
