// The core's logging service as the CUDA plugin uses it (set at initialize; silent before).
#pragma once

#include <brain/plugin_abi.h>
#include <string>

namespace brain::cuda {

// Remember the core's services (initialize).
void set_host(const brain_host_api* host) noexcept;
// Log through the core; level 0 trace .. 5 critical. Never throws.
void log_message(int level, const std::string& message) noexcept;

} // namespace brain::cuda
