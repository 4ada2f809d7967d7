// brain._brain: the extension module behind the Python package brain (python/brain/__init__.py re-exports it).
#include "bindings.hpp"

PYBIND11_MODULE(_brain, m) {
    m.doc() = "brain: dense neural network training with run-time backend plugins (the C++ core's API)";
    m.attr("__version__") = brain::version();
    m.def("version", &brain::version, "The library version, e.g. '0.1.0'.");
    brain::python::bind_errors(m);
    brain::python::bind_types(m);
    brain::python::bind_data(m);
    brain::python::bind_files(m);
    brain::python::bind_schedule(m);
    brain::python::bind_network(m);
    brain::python::bind_metrics(m);
    brain::python::bind_training(m);
    brain::python::bind_callbacks(m);
    brain::python::bind_fit(m);
    brain::python::bind_interop(m);
    brain::python::bind_devices(m);
}
