// Plugin discovery: where brain looks for backends and what it found (brain plugins).
#pragma once

#include <brain/export.hpp>
#include <brain/plugin_abi.h>
#include <brain/types.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace brain {

// The stage a plugin load reached; a failure names the stage it failed at.
enum class PluginStage { Search, Open, Symbol, Abi, Initialize, Devices, Ready };
BRAIN_API std::string_view to_string(PluginStage stage) noexcept;

// What a plugin runs: its capabilities entry (ABI 1.2), or, for a plugin built before it, the ABI 1.0 set (every
// activation, loss and optimizer; float32 products; no features). Sessions asking for anything else are refused
// with Unsupported naming the feature before the plugin is called.
struct PluginCapabilities {
    bool declared = false;         // the plugin has a capabilities entry; false: the ABI 1.0 set is assumed
    std::uint32_t activations = 0; // bit (1 << Activation) for every activation it runs
    std::uint32_t losses = 0;      // bit (1 << Loss)
    std::uint32_t optimizers = 0;  // bit (1 << Optimizer::Kind)
    std::uint32_t precisions = 0;  // bit (1 << Precision)
    std::uint32_t features = 0;    // BRAIN_FEATURE_* bits (plugin_abi.h)
    std::uint32_t max_devices = 1; // devices one session can train on together
    std::string notes;             // the plugin's own words on what it lacks; empty when nothing is

    bool runs(Activation a) const noexcept { return (activations >> static_cast<unsigned>(a)) & 1u; }
    bool runs(Loss l) const noexcept { return (losses >> static_cast<unsigned>(l)) & 1u; }
    bool runs(Optimizer::Kind k) const noexcept { return (optimizers >> static_cast<unsigned>(k)) & 1u; }
    bool runs(Precision p) const noexcept { return (precisions >> static_cast<unsigned>(p)) & 1u; }
    bool offers(std::uint32_t feature_bit) const noexcept { return (features & feature_bit) == feature_bit; }
};

// One line per kind: "activations: linear, relu, ...; losses: ...; optimizers: ...; precisions: float32".
BRAIN_API std::string describe(const PluginCapabilities& capabilities);
// The names of what the plugin does not run, as to_string spells them ("gelu", "bf16"), activations first.
BRAIN_API std::vector<std::string> missing_features(const PluginCapabilities& capabilities);

// The record of one plugin load attempt, kept for `brain plugins` and for errors.
struct PluginRecord {
    std::string name;           // backend name
    std::filesystem::path path; // the file tried (empty if not found)
    PluginStage stage = PluginStage::Search;
    bool ok = false;     // loaded and initialised
    int error_code = 0;  // brain::ErrorCode value when !ok (or when device_count failed)
    std::string message; // the precise reason (loader text, versions, plugin message)
    std::string version; // plugin version when loaded
    std::string description;
    unsigned abi_major = 0;
    unsigned abi_minor = 0;
    int device_count = -1;     // -1: unknown or failed
    std::string device_status; // why device_count failed, if it did
    // Which file a backend name resolves to: the first regular file libbrain_<name>.so on the search path (a
    // symbolic link to one counts). Entries of that name that are not regular files (a directory, a dangling or
    // looping link) are skipped; regular files after the chosen one are shadowed and never loaded.
    enum class Selection { Used, Skipped, Shadowed };
    Selection selection = Selection::Used;
    PluginCapabilities capabilities; // what it runs, read at load
};

// Directories searched, in order: each entry of BRAIN_PLUGIN_PATH (colon-separated), then brain/plugins beside
// libbrain_core.so, then the build tree's plugin directory. The current directory is never searched. With
// BRAIN_PLUGIN_PATH_ONLY=1 only BRAIN_PLUGIN_PATH is searched (hermetic deployments and tests).
BRAIN_API std::vector<std::filesystem::path> plugin_search_paths();

// Every libbrain_*.so entry on the search path, each with its Selection: the used file of each name is loaded
// (if not yet loaded) and reported, skipped and shadowed entries say why they are not used (message). Never
// throws for a broken plugin (its record says why). load_plugin and every backend pick the same files.
BRAIN_API std::vector<PluginRecord> discover_plugins();

// Load the plugin for backend `name` and report it (throws PluginNotFound / PluginLoadFailed /
// PluginAbiMismatch with file, stage and reason).
BRAIN_API PluginRecord load_plugin(const std::string& name);

// The backend name of a plugin file: libbrain_<name>.so -> <name>; empty if the file is not named like a plugin.
BRAIN_API std::string plugin_name_from_file(const std::filesystem::path& file);

// What backend `name` runs (loading its plugin if needed). Throws like load_plugin.
BRAIN_API PluginCapabilities plugin_capabilities(const std::string& name);

// Load a plugin from an explicit file (the conformance kit). Throws like load_plugin.
BRAIN_API PluginRecord load_plugin_file(const std::filesystem::path& path);

// The function table of the plugin that load_plugin or load_plugin_file loaded from record.path, zero-extended to
// this core's struct size (entries the plugin lacks are null); valid until the process exits. For tools that call
// a plugin directly, such as the conformance kit; applications use TrainingBackend. Throws PluginNotFound when no
// plugin was loaded from that file.
BRAIN_API const brain_plugin_api& plugin_api(const PluginRecord& record);

} // namespace brain
