// Library version.
#pragma once

#include <brain/export.hpp>

namespace brain {
// The library version, e.g. "0.1.0".
BRAIN_API const char* version() noexcept;
} // namespace brain
