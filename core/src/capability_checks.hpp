// Internal: a plugin's capabilities read from its table, and the up-front refusal of a session that asks for
// something outside them.
#pragma once

#include <brain/network.hpp>
#include <brain/plugin_abi.h>
#include <brain/plugins.hpp>
#include <string>

namespace brain::detail {

// The capabilities a plugin reports through its table (the ABI 1.0 set when it has no capabilities entry). Bits
// for enum values this core does not know are dropped. Throws the plugin's error when the entry fails.
PluginCapabilities read_capabilities(const brain_plugin_api& api, const std::string& plugin);

// Throws Unsupported naming the first activation (and its layer), loss, optimizer or precision of a session of
// `network` that `capabilities` do not list, with the plugin's notes and what to use instead.
void require_capabilities(const PluginCapabilities& capabilities, const std::string& plugin, unsigned abi_minor,
                          const Network& network, Precision precision);

} // namespace brain::detail
