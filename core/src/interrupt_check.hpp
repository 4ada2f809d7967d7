// Internal: asking the host's InterruptCheck (brain/interrupt.hpp) after a signal interrupted a blocking wait.
#pragma once

#include <brain/interrupt.hpp>

namespace brain::detail {

// Whether the installed check asks for the interrupted wait to end (false when none is installed).
bool interrupt_requested() noexcept;

} // namespace brain::detail
