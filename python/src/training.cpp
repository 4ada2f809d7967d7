// Training from Python: Network.fit / fit_with_backend, FitReport, Checkpoint, AcceleratorStats and
// TrainingSession. The GIL is released while the backend works; between epochs it is taken back to run Python's
// signal handlers, so Ctrl-C (KeyboardInterrupt) stops training after the epoch in progress, with the network
// holding the weights of the last epoch that completed.
#include "bindings.hpp"

#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>

namespace brain::python {
namespace {

// Record `data`'s metadata in `network` as Network::fit does: a data set without standardisation leaves the
// network's own in place.
void adopt_metadata(Network& network, const Dataset& data) {
    if (data.standardization() || !network.standardization()) {
        network.adopt_dataset_metadata(data);
        return;
    }
    Dataset metadata = data.slice(0, data.size() ? 1 : 0);
    metadata.set_standardization(network.standardization());
    network.adopt_dataset_metadata(metadata);
}

// True when a Python signal handler raised (KeyboardInterrupt for Ctrl-C); the exception stays set.
bool python_signal_raised() {
    py::gil_scoped_acquire acquire;
    return PyErr_CheckSignals() != 0;
}

// Network::fit_with_backend, epoch by epoch on one session, checking Python's signals between epochs. On an
// interrupt the network keeps the weights of the last completed epoch and the signal's exception is raised.
FitReport fit_interruptible(Network& network, const Dataset& data, const TrainConfig& config,
                            const TrainingBackend& backend, const Dataset* validation) {
    if (config.epochs == 0) throw Error(ErrorCode::InvalidArgument, "epochs is 0; expected at least 1");
    Network trained = network;
    FitReport report;
    bool interrupted = false;
    {
        py::gil_scoped_release release;
        TrainingSession session(trained, data, config, backend);
        report.epoch_losses.reserve(config.epochs);
        for (std::uint32_t epoch = 0; epoch < config.epochs && !interrupted; ++epoch) {
            report.epoch_losses.push_back(session.train_epoch());
            if (validation) {
                Network snapshot = trained;
                snapshot.restore_checkpoint(session.checkpoint());
                adopt_metadata(snapshot, data);
                report.validation_losses.push_back(snapshot.evaluate(*validation).loss);
            }
            interrupted = python_signal_raised();
        }
        trained.restore_checkpoint(session.checkpoint());
        report.stats = session.stats();
    }
    adopt_metadata(trained, data);
    network = std::move(trained);
    if (interrupted) throw py::error_already_set();
    return report;
}

std::optional<Dataset> optional_dataset(const py::handle& validation, const char* what) {
    if (validation.is_none()) return std::nullopt;
    if (py::isinstance<py::tuple>(validation) && py::len(validation) == 2) {
        auto pair = validation.cast<py::tuple>();
        return to_dataset(pair[0], pair[1], what);
    }
    return to_dataset(validation, py::none(), what);
}

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
        .def_readonly("stats", &FitReport::stats);

    auto network = py::reinterpret_borrow<py::class_<Network>>(m.attr("Network"));
    network.def(
        "fit",
        [](Network& n, const py::handle& data, const py::handle& targets, std::optional<TrainConfig> config,
           const py::handle& validation) {
            const Dataset d = to_dataset(data, targets, "fit");
            const auto v = optional_dataset(validation, "fit: validation");
            return fit_interruptible(n, d, config_or_default(config), TrainingBackend::cpu(), v ? &*v : nullptr);
        },
        py::arg("data"), py::arg("targets") = py::none(), py::kw_only(), py::arg("config") = py::none(),
        py::arg("validation") = py::none(),
        "Train on the CPU plugin: fit_with_backend(data, targets, backend=TrainingBackend.cpu()).");
    network.def(
        "fit_with_backend",
        [](Network& n, const py::handle& data, const py::handle& targets, std::optional<TrainConfig> config,
           const TrainingBackend& backend, const py::handle& validation) {
            const Dataset d = to_dataset(data, targets, "fit_with_backend");
            const auto v = optional_dataset(validation, "fit_with_backend: validation");
            return fit_interruptible(n, d, config_or_default(config), backend, v ? &*v : nullptr);
        },
        py::arg("data"), py::arg("targets") = py::none(), py::kw_only(), py::arg("config") = py::none(),
        py::arg("backend"), py::arg("validation") = py::none(),
        "Train on `backend` (data: a Dataset, or features with targets; validation: a Dataset or a (features, "
        "targets) pair). The GIL is released while the backend trains. The weights change only when the run "
        "succeeds or is interrupted (Ctrl-C: after the epoch in progress, keeping that epoch's weights, then "
        "KeyboardInterrupt). Never falls back to another backend.");

    py::class_<TrainingSession>(m, "TrainingSession",
                                "A training run held open on one backend (device context, weights and data "
                                "resident across epochs). Use as a context manager to release the device promptly.")
        .def(py::init([](const Network& n, const py::handle& data, const py::handle& targets,
                         std::optional<TrainConfig> config, std::optional<TrainingBackend> backend) {
                 const TrainConfig c = config_or_default(config);
                 const TrainingBackend b = backend ? *backend : TrainingBackend::cpu();
                 if (py::isinstance<StreamingDataset>(data) && targets.is_none()) {
                     const auto& streamed = data.cast<const StreamingDataset&>();
                     py::gil_scoped_release release;
                     return std::make_unique<TrainingSession>(n, streamed, c, b);
                 }
                 const Dataset d = to_dataset(data, targets, "TrainingSession");
                 py::gil_scoped_release release;
                 return std::make_unique<TrainingSession>(n, d, c, b);
             }),
             py::arg("network"), py::arg("data"), py::arg("targets") = py::none(), py::kw_only(),
             py::arg("config") = py::none(), py::arg("backend") = py::none(),
             "Open a session: loads the backend's plugin, checks the budget before allocating, uploads the data (a "
             "Dataset or features with targets), or streams it from disk batch by batch (a StreamingDataset).")
        .def("train_epoch", &TrainingSession::train_epoch, py::call_guard<py::gil_scoped_release>(),
             "Train one epoch on the device; returns its mean loss.")
        .def("set_learning_rate", &TrainingSession::set_learning_rate, py::arg("learning_rate"),
             py::call_guard<py::gil_scoped_release>(), "Use this rate from the next optimizer step on.")
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
