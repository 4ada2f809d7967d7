// Training from Python: FitReport, Checkpoint, AcceleratorStats and TrainingSession (fit itself is in fit.cpp).
// The GIL is released while the backend works; a session being opened holds its network's shared lock meanwhile
// (object_lock.hpp).
#include "bindings.hpp"
#include "object_lock.hpp"

#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>

namespace brain::python {
namespace {

TrainConfig config_or_default(const std::optional<TrainConfig>& config) { return config ? *config : TrainConfig{}; }

} // namespace

void bind_training(py::module_& m) {
    py::class_<AcceleratorStats>(m, "AcceleratorStats", "What a TrainingSession did, measured by the backend.")
        .def_readonly("peak_allocated_bytes", &AcceleratorStats::peak_allocated_bytes)
        .def_readonly("setup_time", &AcceleratorStats::setup_time)
        .def_readonly("training_time", &AcceleratorStats::training_time)
        .def_readonly("checkpoint_time", &AcceleratorStats::checkpoint_time)
        .def_readonly("epochs", &AcceleratorStats::epochs)
        .def_readonly("batches", &AcceleratorStats::batches)
        .def_readonly("host_to_device_bytes", &AcceleratorStats::host_to_device_bytes)
        .def_readonly("device_to_host_bytes", &AcceleratorStats::device_to_host_bytes)
        .def_readonly("dataset_resident", &AcceleratorStats::dataset_resident)
        .def_readonly("precision", &AcceleratorStats::precision)
        .def_readonly("dataset_bytes", &AcceleratorStats::dataset_bytes)
        .def_readonly("workspace_bytes", &AcceleratorStats::workspace_bytes)
        .def_readonly("budget_bytes", &AcceleratorStats::budget_bytes)
        .def_readonly("arithmetic", &AcceleratorStats::arithmetic)
        .def_readonly("devices", &AcceleratorStats::devices, "Devices the session trains on in this process.")
        .def_readonly("allreduce_bytes", &AcceleratorStats::allreduce_bytes)
        .def_readonly("allreduce_time", &AcceleratorStats::allreduce_time)
        .def("to_json", [](const AcceleratorStats& s) { return to_json(s); }, "One-line JSON (times in seconds).")
        .def("__repr__", [](const AcceleratorStats& s) { return to_json(s); });

    py::class_<Checkpoint>(m, "Checkpoint", "Host copy of a session's weights and optimizer state.")
        .def_readonly("parameters", &Checkpoint::parameters)
        .def_readonly("optimizer_state", &Checkpoint::optimizer_state)
        .def_readonly("optimizer_step", &Checkpoint::optimizer_step)
        .def_readonly("epochs_trained", &Checkpoint::epochs_trained);

    py::class_<FitReport>(m, "FitReport", "What fit / fit_with_backend did.")
        .def_readonly("epoch_losses", &FitReport::epoch_losses)
        .def_readonly("validation_losses", &FitReport::validation_losses)
        .def_readonly("stats", &FitReport::stats)
        .def_readonly("learning_rates", &FitReport::learning_rates, "Per epoch: the rate of its last step.")
        .def_readonly("schedule", &FitReport::schedule, "The schedule and its state after the run (to continue it).")
        .def_readonly("stop_reason", &FitReport::stop_reason, "Why a callback stopped training; empty if none did.")
        .def_readonly("restored_epoch", &FitReport::restored_epoch,
                      "The epoch whose weights the network ends with, when a callback restored an earlier one.")
        .def_readonly("weight_copies", &FitReport::weight_copies);

    py::class_<TrainingSession>(m, "TrainingSession",
                                "A training run held open on one backend (device context, weights and data "
                                "resident across epochs). Use as a context manager to release the device promptly.")
        .def(py::init([](const Network& n, const py::handle& data, const py::handle& targets,
                         std::optional<TrainConfig> config, std::optional<TrainingBackend> backend) {
                 const TrainConfig c = config_or_default(config);
                 const TrainingBackend b = backend ? *backend : TrainingBackend::cpu();
                 if (py::isinstance<StreamingDataset>(data) && targets.is_none()) {
                     // A copy taken with the GIL (every writer of a StreamingDataset holds it): the session copies
                     // the data set while it opens without the GIL, and another thread may change this one.
                     const auto streamed = data.cast<StreamingDataset>();
                     const SharedObjectLock lock(&n);
                     return std::make_unique<TrainingSession>(n, streamed, c, b);
                 }
                 const Dataset d = to_dataset(data, targets, "TrainingSession");
                 const SharedObjectLock lock(&n);
                 return std::make_unique<TrainingSession>(n, d, c, b);
             }),
             py::arg("network"), py::arg("data"), py::arg("targets") = py::none(), py::kw_only(),
             py::arg("config") = py::none(), py::arg("backend") = py::none(),
             "Open a session: loads the backend's plugin, checks the budget before allocating, uploads the data (a "
             "Dataset or features with targets), or streams it from disk batch by batch (a StreamingDataset).")
        .def("train_epoch", &TrainingSession::train_epoch, py::call_guard<py::gil_scoped_release>(),
             "Train one epoch on the device; returns its mean loss.")
        .def("train_epochs", &TrainingSession::train_epochs, py::arg("count"),
             py::call_guard<py::gil_scoped_release>(),
             "Train `count` epochs as that many train_epoch calls would, in one call (a GPU queues them back to "
             "back); returns their losses.")
        .def("set_learning_rate", &TrainingSession::set_learning_rate, py::arg("learning_rate"),
             py::call_guard<py::gil_scoped_release>(), "Use this rate from the next optimizer step on.")
        .def(
            "set_step_learning_rates",
            [](TrainingSession& s, std::vector<float> rates) {
                py::gil_scoped_release release;
                s.set_step_learning_rates(rates);
            },
            py::arg("rates"), "Rates for the next epoch's optimizer steps, one per batch.")
        .def_property_readonly("supports_step_learning_rates", &TrainingSession::supports_step_learning_rates)
        .def("set_schedule", &TrainingSession::set_schedule, py::arg("schedule"),
             "Follow a LearningRateSchedule from the next epoch on.")
        .def_property_readonly("schedule", &TrainingSession::schedule)
        .def("report_metric", &TrainingSession::report_metric, py::arg("value"),
             "The monitored value of the epoch just trained (reduce-on-plateau).")
        .def_property_readonly("learning_rate", &TrainingSession::learning_rate)
        .def_property_readonly("batches_per_epoch", &TrainingSession::batches_per_epoch)
        .def("checkpoint", &TrainingSession::checkpoint, py::call_guard<py::gil_scoped_release>(),
             "Copy weights and optimizer state to the host (Network.restore_checkpoint adopts them).")
        .def("stats", &TrainingSession::stats, "What the session did so far, measured by the backend.")
        .def("device_stats", &TrainingSession::device_stats, "The same per device of this process.")
        .def_property_readonly("backend", &TrainingSession::backend)
        .def("close", &TrainingSession::close, "Release the device resources; idempotent.")
        .def_property_readonly("is_open", &TrainingSession::is_open)
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](TrainingSession& s, const py::args&) { s.close(); });
}

} // namespace brain::python
