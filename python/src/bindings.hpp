// The pieces of the extension module brain._brain: one bind_* function per area of the public API.
#pragma once

#include <brain/brain.hpp>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <string>
#include <string_view>

namespace brain::python {

namespace py = pybind11;

// brain.Error and its subclasses, and the translator from brain::Error to them.
void bind_errors(py::module_& m);
// Activation, Loss, Precision, Optimizer, TrainConfig, TrainingBackend.
void bind_types(py::module_& m);
// Matrix (buffer protocol), Standardization, Dataset.
void bind_data(py::module_& m);
// NetworkBuilder, LayerSpec, Network (predict, evaluate, save/load), Evaluation, Predictor.
void bind_network(py::module_& m);
// FitReport, Checkpoint, AcceleratorStats, TrainingSession.
void bind_training(py::module_& m);
// Dataset.from_npy / from_npz / save_npz, load_npy, save_npy, StreamOptions, StreamingDataset (after bind_data).
void bind_files(py::module_& m);
// LearningRateSchedule, PlateauOptions, ScheduleState, MonitorMode.
void bind_schedule(py::module_& m);
// ClassScores, ClassificationMetrics, RegressionMetrics and Evaluation's metrics (after bind_network).
void bind_metrics(py::module_& m);
// Callback (extensible from Python), FitContext, EarlyStopping, ModelCheckpoint, TrainingCheckpoint.
void bind_callbacks(py::module_& m);
// Network.fit / fit_with_backend with FitOptions (after bind_callbacks and bind_schedule).
void bind_fit(py::module_& m);
// Network.save_onnx / load_onnx, save_safetensors / load_safetensors, set_optimizer.
void bind_interop(py::module_& m);
// accelerator_doctor, AcceleratorReport, the memory estimates, plugins and their load records.
void bind_devices(py::module_& m);

// The enumerations a method takes (Activation, Loss, Precision, Optimizer::Kind, MonitorMode) also take their
// names as str wherever they are expected, as arguments and as attributes: parse_enum_name<E> reads one by the
// library's rules (case-insensitive; "relu", "LeakyRelu", "mse", "bf16", "adamw", "min"). An unknown name is
// brain::Error InvalidArgument (brain.InvalidArgument, a ValueError) naming the enumeration, the name given and
// the accepted names; any other type is pybind11's TypeError, as before. Defined beside each enumeration's binding.
template <class E>
E parse_enum_name(std::string_view text);
template <>
Activation parse_enum_name<Activation>(std::string_view text);
template <>
Loss parse_enum_name<Loss>(std::string_view text);
template <>
Precision parse_enum_name<Precision>(std::string_view text);
template <>
Optimizer::Kind parse_enum_name<Optimizer::Kind>(std::string_view text);
template <>
MonitorMode parse_enum_name<MonitorMode>(std::string_view text);

// The argument caster of those enumerations: a member as pybind11's own caster takes it, else (when conversions
// are allowed) a str through parse_enum_name, which raises for an unknown name rather than trying the next
// overload. pybind11 calls an overloaded function's overloads without conversions first, so an overload taking a
// str is still chosen for a str; overloads that differ only in which of these enumerations they take must be one
// function (PluginCapabilities.runs) or the first would raise for the others' names.
template <class E>
class NamedEnumCaster : public py::detail::type_caster_base<E> {
public:
    bool load(py::handle src, bool convert) {
        if (py::detail::type_caster_base<E>::load(src, convert)) return true;
        if (!convert || !py::isinstance<py::str>(src)) return false;
        m_named = parse_enum_name<E>(src.cast<std::string>());
        this->value = &m_named;
        return true;
    }

private:
    E m_named{}; // the value named by a str; the base's value points here
};

} // namespace brain::python

namespace pybind11::detail {
template <>
class type_caster<brain::Activation> : public brain::python::NamedEnumCaster<brain::Activation> {};
template <>
class type_caster<brain::Loss> : public brain::python::NamedEnumCaster<brain::Loss> {};
template <>
class type_caster<brain::Precision> : public brain::python::NamedEnumCaster<brain::Precision> {};
template <>
class type_caster<brain::Optimizer::Kind> : public brain::python::NamedEnumCaster<brain::Optimizer::Kind> {};
template <>
class type_caster<brain::MonitorMode> : public brain::python::NamedEnumCaster<brain::MonitorMode> {};
} // namespace pybind11::detail

namespace brain::python {

// `obj` as a Matrix: a brain.Matrix is copied by value; any other array-like is read through the buffer protocol,
// converted once to C-contiguous float32 if it is not already, and copied once into the Matrix's own storage.
// A 1-D array is one column when `vector_is_column`, else one row. `what` names the argument in errors.
Matrix to_matrix(const py::handle& obj, const char* what, bool vector_is_column);
// A matrix argument read in place, without a copy, when it is a brain.Matrix or a C-contiguous float32 array
// (through the buffer protocol); any other array-like is converted once, as to_matrix converts it. The viewed
// memory belongs to the Python object, which the caller's arguments (and this object) keep alive.
class MatrixArg {
public:
    MatrixArg(const py::handle& obj, const char* what, bool vector_is_column);
    MatrixView get() const noexcept { return m_view; }
    // Whether the view is the object's own memory (a brain.Matrix, or an array that needed no conversion).
    bool in_place() const noexcept { return m_in_place; }

private:
    py::object m_array; // the array viewed (the object itself, or its one conversion), held while it is read
    MatrixView m_view;
    bool m_in_place = true;
};
// A NumPy array viewing the matrix's storage without a copy; the array owns the matrix.
py::array_t<float> to_array(Matrix&& matrix);
// A NumPy array viewing `data` (owned by `owner`) as rows x cols, without a copy; read-only unless `writeable`.
py::array_t<float> view_array(const float* data, std::size_t rows, std::size_t cols, const py::handle& owner,
                              bool writeable = true);
// What `obj` is, for an error message: its type, and its dtype when it has one ("a numpy.ndarray of dtype <U1").
std::string describe(const py::handle& obj);
// A Dataset from a brain.Dataset or from (features, targets) array-likes.
Dataset to_dataset(const py::handle& data, const py::handle& targets, const char* what);

} // namespace brain::python
