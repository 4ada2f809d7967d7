// Internal: validation of everything a plugin hands the core (its function table, device reports, stats).
// Pure functions over bytes, so the fuzz targets (tests/fuzz) drive them directly.
#pragma once

#include <brain/plugin_abi.h>
#include <brain/plugins.hpp>
#include <brain/stats.hpp>

#include <string>

namespace brain::detail {

// Check a table returned by a plugin's entry symbol and return it zero-extended to this core's size. Throws
// PluginLoadFailed / PluginAbiMismatch with `where` (the plugin and its file) and the stage; fills record's ABI
// version, version and description as they are learnt.
brain_plugin_api validate_plugin_table(const brain_plugin_api* table, const std::string& requested_name,
                                       const std::string& where, PluginRecord& record);

// A probe's report as the public type; throws PluginFailure naming the field when a value is impossible.
AcceleratorReport report_from_plugin(const brain_device_report& raw, const std::string& backend,
                                     const std::string& plugin);

// A session's stats as the public type; throws PluginFailure naming the field when a value is impossible.
AcceleratorStats stats_from_plugin(const brain_session_stats& raw, const std::string& plugin);

} // namespace brain::detail
