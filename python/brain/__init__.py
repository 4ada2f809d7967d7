"""brain: dense neural network training with run-time backend plugins, from Python.

The extension module ``brain._brain`` binds the C++ core (``libbrain_core.so``); the core finds its backend
plugins exactly as it does for a C++ program (``BRAIN_PLUGIN_PATH``, then ``brain/plugins`` beside the core).
``brain.sklearn`` holds scikit-learn estimators built on it.

Arrays: ``brain.Matrix`` is the library's own float32 storage and ``numpy.asarray(matrix)`` views it without a
copy; NumPy arrays given to ``fit``, ``predict`` or ``Dataset`` are read through the buffer protocol and copied
once into the library (converted to C-contiguous float32 first when they are not already). Results come back as
NumPy arrays that view the library's output without a copy.
"""

from . import _brain
from ._brain import *  # noqa: F401,F403  (the whole C++ API: every public name of the extension module)
from ._brain import __version__  # noqa: F401

__all__ = [name for name in dir(_brain) if not name.startswith("_")] + ["__version__"]
