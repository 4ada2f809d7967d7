// The core's logging service as the CUDA plugin uses it (sdk::log; silent before initialize).
#pragma once

#include <brain/plugin_abi.h>
#include <string>

namespace brain::cuda {

// Log through the core; level 0 trace .. 5 critical. Never throws.
void log_message(int level, const std::string& message) noexcept;

} // namespace brain::cuda
