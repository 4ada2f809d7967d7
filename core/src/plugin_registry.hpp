// Internal: a loaded plugin (never unloaded) and the registry that finds and loads plugins.
#pragma once

#include <brain/error.hpp>
#include <brain/plugin_abi.h>
#include <brain/plugins.hpp>
#include <cstdint>
#include <cxxabi.h>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace brain::detail {

// The most devices a plugin may report from device_count: more than any one host holds.
constexpr std::int32_t k_max_plugin_devices = 4096;

// Throw PluginFailure naming `plugin` and its `entry` for the exception in flight, which left the plugin. Call only
// from a catch block.
[[noreturn]] void throw_escaped_exception(const std::string& plugin, const char* entry);

// Log, as a warning naming `plugin` and its `entry`, the exception in flight. Call only from a catch block.
void log_escaped_exception(const std::string& plugin, const char* entry) noexcept;

// The result of `call`, one call into `entry` of plugin `plugin`. An exception leaving the plugin breaks the ABI;
// it becomes PluginFailure here, so that it neither ends the process nor reaches the caller as something else.
template <class Call>
auto guarded_call(const std::string& plugin, const char* entry, Call&& call) -> decltype(call()) {
    try {
        return call();
    } catch (abi::__forced_unwind&) {
        throw; // thread cancellation must unwind on
    } catch (...) {
        throw_escaped_exception(plugin, entry);
    }
}

// Throw the brain::Error carried by a plugin error (released through the plugin's own error_destroy); no-op
// for nullptr. `plugin` names the plugin when its code is not one this core knows.
void throw_plugin_error(const brain_plugin_api& api, const std::string& plugin, brain_error* error);

// One loaded and initialised plugin. Its library stays loaded until the process exits (the registry keeps every
// library it opened): objects a plugin created may outlive any owner.
class Plugin {
public:
    Plugin(const brain_plugin_api& api, PluginRecord record);
    // The function table, zero-extended to this core's struct size (fields the plugin lacks are null).
    const brain_plugin_api& api() const noexcept { return m_api; }
    const PluginRecord& record() const noexcept { return m_record; }
    const std::string& name() const noexcept { return m_record.name; }
    // Throw the brain::Error carried by a plugin error (and release it); no-op for nullptr.
    void check(brain_error* error) const { throw_plugin_error(m_api, m_record.name, error); }
    // Call the fallible entry `fn` (named `entry`); throw its error, or PluginFailure for an exception it let out.
    template <class... Params, class... Args>
    void call(const char* entry, brain_error* (*fn)(Params...), Args&&... args) const {
        check(guarded_call(m_record.name, entry, [&] { return fn(std::forward<Args>(args)...); }));
    }
    // Call an entry that never fails (session_close, predictor_close, host_memory_unpin); an exception is logged.
    template <class... Params, class... Args>
    void release(const char* entry, void (*fn)(Params...), Args&&... args) const noexcept {
        try {
            fn(std::forward<Args>(args)...);
        } catch (...) {
            log_escaped_exception(m_record.name, entry);
        }
    }
    // The plugin's device count; PluginFailure for its error or a count outside 0..k_max_plugin_devices.
    int device_count() const;

private:
    brain_plugin_api m_api{};
    PluginRecord m_record;
};

// Finds plugins on the search path and loads each at most once. Thread-safe. Never unloads.
class PluginRegistry {
public:
    static PluginRegistry& instance();
    // The plugin for backend `name`, loading it on first use; throws with file, stage and reason.
    std::shared_ptr<Plugin> get(const std::string& name);
    // The plugin in an explicit file (conformance kit).
    std::shared_ptr<Plugin> get_file(const std::filesystem::path& path);
    // The plugin already loaded from `path`, or nullptr.
    std::shared_ptr<Plugin> loaded(const std::filesystem::path& path);
    // Every libbrain_*.so on the search path, loaded where possible, with device counts.
    std::vector<PluginRecord> discover();

private:
    static std::string key_of(const std::filesystem::path& path);
    std::shared_ptr<Plugin> load_locked(const std::string& name, const std::filesystem::path& path);
    std::shared_ptr<Plugin> open_locked(const std::string& name, const std::filesystem::path& path,
                                        PluginRecord& record);
    std::mutex m_mutex;
    std::map<std::string, std::shared_ptr<Plugin>> m_by_path; // canonical path -> loaded plugin
    std::map<std::string, PluginRecord> m_failures;           // canonical path -> last failed attempt
    std::set<std::string> m_warned;                           // skipped entries already reported in a warning
};

} // namespace brain::detail
