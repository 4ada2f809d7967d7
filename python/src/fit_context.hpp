// The FitContext that Python callbacks see. The core's FitContext lives only while its callback runs; Python may
// keep the object it was given (a list of contexts, a closure), so Python gets a reference that the dispatcher
// clears once the callback returns, and any later use raises InvalidState instead of reading a finished run.
#pragma once

#include "bindings.hpp"

namespace brain::python {

// Call `function` with a Python FitContext for `context` that stops being valid when the call returns or raises.
// Needs the GIL.
void call_with_context(const py::handle& function, FitContext& context);

} // namespace brain::python
