// brain._brain: the extension module behind the Python package brain (python/brain/__init__.py re-exports it).
#include "bindings.hpp"

namespace {

namespace py = pybind11;

// copy.copy and copy.deepcopy of a bound value type: its C++ copy, which owns all it holds, so that a copy is
// already deep (without these, copy.deepcopy(config) raised "cannot pickle").
template <class T>
void def_value_copy(py::module_& m, const char* name) {
    auto cls = py::reinterpret_borrow<py::class_<T>>(m.attr(name));
    cls.def(
        "__copy__", [](const T& value) { return T(value); }, "A copy of this object.");
    cls.def(
        "__deepcopy__", [](const T& value, const py::dict&) { return T(value); }, py::arg("memo"),
        "A copy of this object (it holds no Python objects, so a copy is deep).");
}

} // namespace

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
    def_value_copy<brain::Matrix>(m, "Matrix");
    def_value_copy<brain::Standardization>(m, "Standardization");
    def_value_copy<brain::Dataset>(m, "Dataset");
    def_value_copy<brain::InputLimits>(m, "InputLimits");
    def_value_copy<brain::StreamOptions>(m, "StreamOptions");
    def_value_copy<brain::Optimizer>(m, "Optimizer");
    def_value_copy<brain::TrainConfig>(m, "TrainConfig");
    def_value_copy<brain::LayerSpec>(m, "LayerSpec");
    def_value_copy<brain::PlateauOptions>(m, "PlateauOptions");
    def_value_copy<brain::ScheduleState>(m, "ScheduleState");
    def_value_copy<brain::EarlyStoppingOptions>(m, "EarlyStoppingOptions");
    def_value_copy<brain::ModelCheckpointOptions>(m, "ModelCheckpointOptions");
    def_value_copy<brain::Evaluation>(m, "Evaluation");
    def_value_copy<brain::ClassScores>(m, "ClassScores");
    def_value_copy<brain::ClassificationMetrics>(m, "ClassificationMetrics");
    def_value_copy<brain::RegressionMetrics>(m, "RegressionMetrics");
    def_value_copy<brain::FitReport>(m, "FitReport");
    def_value_copy<brain::AcceleratorStats>(m, "AcceleratorStats");
    def_value_copy<brain::Checkpoint>(m, "Checkpoint");
    def_value_copy<brain::TrainingCheckpoint>(m, "TrainingCheckpoint");
}
