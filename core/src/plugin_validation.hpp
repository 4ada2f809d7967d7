// Internal: validation of everything a plugin hands the core (its function table, device reports, stats).
// Pure functions over bytes, so the fuzz targets (tests/fuzz) drive them directly.
#pragma once

#include <brain/plugin_abi.h>
#include <brain/plugins.hpp>
#include <brain/stats.hpp>
#include <cstdint>
#include <string>

namespace brain::detail {

// Check a table returned by a plugin's entry symbol and return it zero-extended to this core's size. Throws
// PluginLoadFailed / PluginAbiMismatch with `where` (the plugin and its file) and the stage; fills record's ABI
// version, version and description as they are learnt.
brain_plugin_api validate_plugin_table(const brain_plugin_api* table, const std::string& requested_name,
                                       const std::string& where, PluginRecord& record);

// The most memory a device report may give, in MiB (1 PiB, the core's bound on a memory budget).
constexpr long long k_max_report_memory_mib = 1ll << 30;

// A probe's report as the public type, its text escaped; throws PluginFailure naming the field when a value is
// impossible (memory below -1, above k_max_report_memory_mib, or more free than total).
AcceleratorReport report_from_plugin(const brain_device_report& raw, const std::string& backend,
                                     const std::string& plugin);

// A session's stats as the public type; throws PluginFailure naming the field when a value is impossible (an
// unknown precision; more devices than the `session_devices` the session trains on).
AcceleratorStats stats_from_plugin(const brain_session_stats& raw, const std::string& plugin,
                                   std::uint32_t session_devices);

} // namespace brain::detail
