"""brain: dense neural network training with run-time backend plugins, from Python.

The extension module ``brain._brain`` binds the C++ core (``libbrain_core.so``); the core finds its backend
plugins exactly as it does for a C++ program (``BRAIN_PLUGIN_PATH``, then ``brain/plugins`` beside the core).
``brain.sklearn`` holds scikit-learn estimators built on it.

Arrays: ``brain.Matrix`` is the library's own float32 storage and ``numpy.asarray(matrix)`` views it without a
copy; NumPy arrays given to ``fit``, ``predict`` or ``Dataset`` are read through the buffer protocol and copied
once into the library (converted to C-contiguous float32 first when they are not already). Results come back as
NumPy arrays that view the library's output without a copy.
"""

from ._brain import (  # noqa: F401  (the public API, re-exported)
    AcceleratorReport,
    AcceleratorStats,
    Activation,
    Checkpoint,
    Dataset,
    Error,
    ErrorCode,
    Evaluation,
    FitReport,
    InputLimits,
    LayerSpec,
    Loss,
    Matrix,
    Network,
    NetworkBuilder,
    Optimizer,
    OptimizerKind,
    PluginCapabilities,
    PluginRecord,
    PluginStage,
    Precision,
    Predictor,
    Standardization,
    TrainConfig,
    TrainingBackend,
    TrainingSession,
    __version__,
    accelerator_doctor,
    estimate_tensor_memory_bytes,
    estimate_tensor_memory_mib,
    largest_batch_within,
    load,
    load_plugin,
    plugin_capabilities,
    plugin_search_paths,
    plugins,
    save,
    version,
)
from . import _brain

# One exception class per brain::ErrorCode (brain.PluginNotFound, brain.BudgetExceeded, ...), each a brain.Error.
for _code in ErrorCode.__members__:
    globals()[_code] = getattr(_brain, _code)
del _code

__all__ = [name for name in dir(_brain) if not name.startswith("_")] + ["__version__"]
