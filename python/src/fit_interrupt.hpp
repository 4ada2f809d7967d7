// Ctrl-C during fit: a KeyboardInterrupt seen between epochs (by a signal check or a Python callback) is kept
// here and training stops after the epoch; fit raises it once the network holds that epoch's weights.
#pragma once

#include "bindings.hpp"

#include <memory>

namespace brain::python {

// Keep `error` and stop training if it is a KeyboardInterrupt raised during the fit running on this thread; false
// (the caller rethrows) for any other error or outside fit. Needs the GIL.
bool capture_interrupt(py::error_already_set& error, FitContext& context);

} // namespace brain::python
