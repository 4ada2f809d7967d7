// Network.fit / fit_with_backend: the data, a TrainConfig, and FitOptions' validation set, learning-rate schedule,
// callbacks, per-epoch hook and run to resume. The core trains with the GIL released; after every epoch the hook
// takes it back to run Python's signal handlers, so Ctrl-C stops training after that epoch with the network holding
// its weights (the core's stop_training path), and fit then raises KeyboardInterrupt.
#include "bindings.hpp"
#include "fit_context.hpp"
#include "fit_interrupt.hpp"
#include "object_lock.hpp"

#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>

namespace brain::python {
namespace {

// The interrupt kept for the fit running on this thread (null outside fit).
thread_local std::unique_ptr<py::error_already_set>* t_interrupt = nullptr;

std::optional<Dataset> optional_dataset(const py::handle& validation, const char* what) {
    if (validation.is_none()) return std::nullopt;
    // A (features, targets) pair as Python spells one: a tuple or a list (neither is a Dataset nor an array).
    if ((py::isinstance<py::tuple>(validation) || py::isinstance<py::list>(validation)) &&
        py::len(validation) == 2) {
        const auto pair = py::reinterpret_borrow<py::sequence>(validation);
        return to_dataset(pair[0], pair[1], what);
    }
    if (py::isinstance<Dataset>(validation)) return validation.cast<Dataset>();
    std::string found = describe(validation);
    if ((py::isinstance<py::tuple>(validation) || py::isinstance<py::list>(validation))) {
        const std::size_t items = py::len(validation);
        found += " of " + std::to_string(items) + (items == 1 ? " item" : " items");
    }
    throw Error(ErrorCode::InvalidArgument,
                std::string(what) +
                    ": validation must be a brain.Dataset or a (features, targets) pair, "
                    "e.g. validation=(x_val, y_val); found " +
                    found);
}

struct FitArgs {
    py::object validation;
    std::optional<LearningRateSchedule> schedule;
    std::vector<std::shared_ptr<Callback>> callbacks;
    py::object on_epoch_end;
    const TrainingCheckpoint* resume = nullptr;
    std::map<std::string, std::string> checkpoint_notes;
};

FitReport run_fit(Network& network, const py::handle& data, const py::handle& targets,
                  const std::optional<TrainConfig>& config, const TrainingBackend& backend, FitArgs args,
                  const char* what) {
    const Dataset d = to_dataset(data, targets, what);
    const auto validation = optional_dataset(args.validation, what);
    FitOptions options;
    options.validation = validation ? &*validation : nullptr;
    options.schedule = std::move(args.schedule);
    options.callbacks = std::move(args.callbacks);
    // The run to resume is read while the backend trains, without the GIL: a copy taken with the GIL held (which
    // every writer of a TrainingCheckpoint holds), so another thread may change or save the original meanwhile.
    std::optional<TrainingCheckpoint> resume;
    if (args.resume) resume.emplace(*args.resume);
    options.resume = resume ? &*resume : nullptr;
    options.checkpoint_notes = std::move(args.checkpoint_notes);
    const py::object& hook = args.on_epoch_end;
    options.on_epoch_end = [&hook](FitContext& context) {
        py::gil_scoped_acquire gil;
        try {
            if (!hook.is_none()) call_with_context(hook, context);
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        } catch (py::error_already_set& error) {
            if (!capture_interrupt(error, context)) throw;
        }
    };
    std::unique_ptr<py::error_already_set> interrupt;
    t_interrupt = &interrupt;
    // Trained on a copy (taken with the GIL held, which every writer holds) while other threads may read the
    // network.
    Network trained = network;
    FitReport report;
    try {
        py::gil_scoped_release release;
        report = trained.fit_with_backend(d, config ? *config : TrainConfig{}, backend, options);
    } catch (...) {
        t_interrupt = nullptr;
        throw;
    }
    t_interrupt = nullptr;
    {
        // Other threads may be reading the network without the GIL (predict, save_onnx): they see the old
        // weights or the new ones, never freed ones.
        const ExclusiveObjectLock lock(&network);
        network = std::move(trained);
    }
    if (interrupt) {
        interrupt->restore();
        throw py::error_already_set();
    }
    return report;
}

} // namespace

bool capture_interrupt(py::error_already_set& error, FitContext& context) {
    if (!t_interrupt || !error.matches(PyExc_KeyboardInterrupt)) return false;
    if (!*t_interrupt) *t_interrupt = std::make_unique<py::error_already_set>(std::move(error));
    context.stop_training("KeyboardInterrupt");
    return true;
}

void bind_fit(py::module_& m) {
    auto network = py::reinterpret_borrow<py::class_<Network>>(m.attr("Network"));
    const char* doc =
        "Train on `backend` (fit: the CPU plugin). data: a Dataset, or features with targets; validation: a "
        "Dataset or a (features, targets) pair; schedule: a LearningRateSchedule; callbacks: Callback objects "
        "(EarlyStopping, ModelCheckpoint, or Python subclasses); on_epoch_end: a function of a FitContext; resume: "
        "a TrainingCheckpoint to continue. The GIL is released while the backend trains. The weights change only "
        "when the run succeeds or is interrupted (Ctrl-C: after the epoch in progress, keeping that epoch's weights, "
        "then KeyboardInterrupt). Never falls back to another backend.";
    network.def(
        "fit",
        [](Network& n, const py::handle& data, const py::handle& targets, std::optional<TrainConfig> config,
           py::object validation, std::optional<LearningRateSchedule> schedule,
           std::vector<std::shared_ptr<Callback>> callbacks, py::object on_epoch_end,
           const TrainingCheckpoint* resume, std::map<std::string, std::string> notes) {
            return run_fit(n, data, targets, config, TrainingBackend::cpu(),
                           {std::move(validation), std::move(schedule), std::move(callbacks), std::move(on_epoch_end),
                            resume, std::move(notes)},
                           "fit");
        },
        py::arg("data"), py::arg("targets") = py::none(), py::kw_only(), py::arg("config") = py::none(),
        py::arg("validation") = py::none(), py::arg("schedule") = py::none(),
        py::arg("callbacks") = std::vector<std::shared_ptr<Callback>>{}, py::arg("on_epoch_end") = py::none(),
        py::arg("resume") = nullptr, py::arg("checkpoint_notes") = std::map<std::string, std::string>{}, doc);
    network.def(
        "fit_with_backend",
        [](Network& n, const py::handle& data, const py::handle& targets, std::optional<TrainConfig> config,
           const TrainingBackend& backend, py::object validation, std::optional<LearningRateSchedule> schedule,
           std::vector<std::shared_ptr<Callback>> callbacks, py::object on_epoch_end,
           const TrainingCheckpoint* resume, std::map<std::string, std::string> notes) {
            return run_fit(n, data, targets, config, backend,
                           {std::move(validation), std::move(schedule), std::move(callbacks), std::move(on_epoch_end),
                            resume, std::move(notes)},
                           "fit_with_backend");
        },
        py::arg("data"), py::arg("targets") = py::none(), py::kw_only(), py::arg("config") = py::none(),
        py::arg("backend"), py::arg("validation") = py::none(), py::arg("schedule") = py::none(),
        py::arg("callbacks") = std::vector<std::shared_ptr<Callback>>{}, py::arg("on_epoch_end") = py::none(),
        py::arg("resume") = nullptr, py::arg("checkpoint_notes") = std::map<std::string, std::string>{}, doc);
}

} // namespace brain::python
