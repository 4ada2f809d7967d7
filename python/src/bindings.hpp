// The pieces of the extension module brain._brain: one bind_* function per area of the public API.
#pragma once

#include <brain/brain.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

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
// A NumPy array viewing `data` (owned by `owner`) as rows x cols, without a copy.
py::array_t<float> view_array(const float* data, std::size_t rows, std::size_t cols, const py::handle& owner);
// A Dataset from a brain.Dataset or from (features, targets) array-likes.
Dataset to_dataset(const py::handle& data, const py::handle& targets, const char* what);

} // namespace brain::python
