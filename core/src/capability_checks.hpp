// Internal: a plugin's capabilities read from its table, and the up-front refusal of a session that asks for
// something outside them.
#pragma once

#include <brain/backend.hpp>
#include <brain/network.hpp>
#include <brain/plugin_abi.h>
#include <brain/plugins.hpp>
#include <string>
#include <vector>

namespace brain::detail {

// The capabilities a plugin reports through its table (the ABI 1.0 set when it has no capabilities entry). Bits
// for enum values this core does not know are dropped. Throws the plugin's error when the entry fails.
PluginCapabilities read_capabilities(const brain_plugin_api& api, const std::string& plugin);

// Throws Unsupported naming the first activation (and its layer), loss, optimizer or precision of a session of
// `network` that `capabilities` do not list, with the plugin's notes and what to use instead.
void require_capabilities(const PluginCapabilities& capabilities, const std::string& plugin, unsigned abi_minor,
                          const Network& network, Precision precision);

class Plugin;

// Throws Unsupported when the backend asks for several devices or processes and the plugin does not train on them
// (BRAIN_FEATURE_MULTI_DEVICE), or for more devices than its max_devices.
void require_devices(const PluginCapabilities& capabilities, const TrainingBackend& backend);

// Every device the plugin sees, 0..n-1 (cuda:all); the plugin's error when it sees none.
std::vector<int> every_device(Plugin& plugin, const TrainingBackend& backend);

} // namespace brain::detail
