// How a host that handles signals itself (Python, whose Ctrl-C only sets a flag) ends the library's blocking waits
// on a pipe: waiting for a FIFO's writer, reading from a pipe. When a signal interrupts such a wait the library
// asks the installed check; if it says so, the wait ends with ErrorCode::IoError, else it resumes.
#pragma once

#include <brain/export.hpp>

namespace brain {

// Asked after a signal interrupted a blocking wait, on the waiting thread: true ends the wait.
using InterruptCheck = bool (*)() noexcept;

// Installs `check` for the whole process and returns the one it replaces (nullptr, the default: waits resume).
BRAIN_API InterruptCheck set_interrupt_check(InterruptCheck check) noexcept;

} // namespace brain
