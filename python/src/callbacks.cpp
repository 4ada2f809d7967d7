// Callbacks: FitContext, the Callback base that Python classes extend, EarlyStopping and ModelCheckpoint. fit runs
// without the GIL; every call into Python code takes it back first. A KeyboardInterrupt raised in a callback stops
// training after the epoch (FitContext.stop_training) instead of abandoning the run, so the network keeps that
// epoch's weights; fit raises it once training has ended. Python sees a FitContext only through FitContextRef,
// which its dispatcher clears when the callback returns (fit_context.hpp). TrainingCheckpoint.save releases the GIL
// and holds the checkpoint's shared lock; its setters take the exclusive lock (object_lock.hpp).
#include "bindings.hpp"
#include "fit_context.hpp"
#include "fit_interrupt.hpp"
#include "object_lock.hpp"

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <memory>
#include <string>

namespace brain::python {
namespace {

// brain.FitContext: the core's context while its callback runs, nothing afterwards. Python methods check it with
// the GIL held; those that release the GIL also hold the reference's shared lock, which clear() takes exclusively,
// so a context is never cleared under a call that another thread made through it.
class FitContextRef {
public:
    // Valid until clear(): the dispatcher's call is all the core's context lives for.
    explicit FitContextRef(FitContext& context) : m_context(&context), m_epoch(context.epoch()) {}

    // The context, or InvalidState naming `what` once the callback has returned.
    FitContext& get(const char* what) const {
        if (m_context) return *m_context;
        throw Error(ErrorCode::InvalidState,
                    std::string("FitContext.") + what + ": this FitContext belonged to epoch " +
                        std::to_string(m_epoch) +
                        "'s callback, which has returned, and is no longer valid; read what you need during the "
                        "callback (e.g. context.network() returns a copy that stays valid)");
    }
    // Called with the GIL held once the callback has returned (or raised).
    void clear() {
        const ExclusiveObjectLock lock(this);
        m_context = nullptr;
    }

private:
    FitContext* m_context; // the core's context; null once its callback has returned
    std::uint64_t m_epoch; // the epoch the context was made for, named in the error afterwards
};

// Clears a FitContextRef when the callback returns, normally or by an exception.
class ClearOnExit {
public:
    // Clears `ref` at the end of the caller's scope, however it ends.
    explicit ClearOnExit(FitContextRef& ref) noexcept : m_ref(ref) {}
    ClearOnExit(const ClearOnExit&) = delete;
    ClearOnExit& operator=(const ClearOnExit&) = delete;
    ~ClearOnExit() { m_ref.clear(); }

private:
    FitContextRef& m_ref; // owned by the Python object the dispatcher holds until after this guard
};

// A Callback whose hooks may be Python methods. The GIL is taken before Python is looked up or called.
class PyCallback : public Callback {
public:
    using Callback::Callback;

    void on_train_begin(FitContext& context) override { dispatch("on_train_begin", context); }
    void on_epoch_end(FitContext& context) override { dispatch("on_epoch_end", context); }
    void on_train_end(FitContext& context) override { dispatch("on_train_end", context); }

    std::string state_key() const override {
        py::gil_scoped_acquire gil;
        PYBIND11_OVERRIDE(std::string, Callback, state_key, );
    }
    CallbackState save_state() const override {
        py::gil_scoped_acquire gil;
        PYBIND11_OVERRIDE(CallbackState, Callback, save_state, );
    }
    void restore_state(const CallbackState& state) override {
        py::gil_scoped_acquire gil;
        PYBIND11_OVERRIDE(void, Callback, restore_state, state);
    }

private:
    void dispatch(const char* name, FitContext& context) {
        py::gil_scoped_acquire gil;
        py::function override = py::get_override(static_cast<const Callback*>(this), name);
        if (!override) return;
        try {
            call_with_context(override, context);
        } catch (py::error_already_set& error) {
            if (!capture_interrupt(error, context)) throw;
        }
    }
};

// The lock of a TrainingCheckpoint (object_lock.hpp): its network's. checkpoint.network is a reference into the
// checkpoint, and Network's own writers (set_parameters, fit, restore_checkpoint, ...) lock it by its address, so
// save, which reads the network with the rest, excludes them as well as the checkpoint's setters.
const void* checkpoint_lock(const TrainingCheckpoint& c) noexcept {
    return &c.network;
}

// A field of TrainingCheckpoint read as def_readwrite reads it (a reference into the checkpoint for class types,
// a copy otherwise) and written under the checkpoint's exclusive lock: save may be reading it without the GIL.
template <class T>
void def_checkpoint_field(py::class_<TrainingCheckpoint>& cls, const char* name, T TrainingCheckpoint::*field) {
    cls.def_property(
        name, [field](const TrainingCheckpoint& c) -> const T& { return c.*field; },
        [field](TrainingCheckpoint& c, T value) {
            const ExclusiveObjectLock lock(checkpoint_lock(c));
            c.*field = std::move(value);
        });
}

} // namespace

void call_with_context(const py::handle& function, FitContext& context) {
    const py::object handle = py::cast(FitContextRef(context));
    const ClearOnExit clear(handle.cast<FitContextRef&>());
    function(handle);
}

void bind_callbacks(py::module_& m) {
    py::class_<CallbackState>(m, "CallbackState", "A callback's state in a resumable checkpoint.")
        .def(py::init<>())
        .def_readwrite("integers", &CallbackState::integers)
        .def_readwrite("floats", &CallbackState::floats);

    py::class_<FitContextRef>(m, "FitContext",
                              "What a callback sees during fit; valid only during the callback's call (later use "
                              "raises brain.InvalidState).")
        .def_property_readonly("epoch", [](const FitContextRef& c) { return c.get("epoch").epoch(); })
        .def_property_readonly("last_epoch",
                               [](const FitContextRef& c) { return c.get("last_epoch").last_epoch(); })
        .def_property_readonly("loss", [](const FitContextRef& c) { return c.get("loss").loss(); })
        .def_property_readonly(
            "validation",
            [](const FitContextRef& c) -> std::optional<Evaluation> { return c.get("validation").validation(); },
            "A copy of the validation set's evaluation after the epoch; None without a validation set.")
        .def_property_readonly("learning_rate",
                               [](const FitContextRef& c) { return c.get("learning_rate").learning_rate(); })
        .def(
            "monitored",
            [](const FitContextRef& c, const std::string& name) { return c.get("monitored").monitored(name); },
            py::arg("name"), "'loss', 'val_loss' or 'val_<metric>'; None when this run has no such value.")
        .def(
            "require_monitor",
            [](const FitContextRef& c, const std::string& name, const std::string& who) {
                c.get("require_monitor").require_monitor(name, who);
            },
            py::arg("name"), py::arg("who"))
        .def("default_monitor", [](const FitContextRef& c) { return c.get("default_monitor").default_monitor(); })
        .def(
            "network",
            [](const FitContextRef& c) {
                FitContext& context = c.get("network");
                const SharedObjectLock lock(&c);
                return Network(context.network());
            },
            "A copy of the network after this epoch (weights copied from the backend once per epoch).")
        .def(
            "stop_training",
            [](const FitContextRef& c, std::string reason) {
                c.get("stop_training").stop_training(std::move(reason));
            },
            py::arg("reason"), "Stop after this epoch.")
        .def_property_readonly("stop_requested",
                               [](const FitContextRef& c) { return c.get("stop_requested").stop_requested(); })
        .def(
            "restore_weights",
            [](const FitContextRef& c, const Checkpoint& weights, std::uint64_t epoch) {
                c.get("restore_weights").restore_weights(weights, epoch);
            },
            py::arg("weights"), py::arg("epoch"))
        .def(
            "save_checkpoint",
            [](const FitContextRef& c, const std::filesystem::path& path,
               std::vector<std::filesystem::path> inputs) {
                FitContext& context = c.get("save_checkpoint");
                const SharedObjectLock lock(&c);
                context.save_checkpoint(path, std::move(inputs));
            },
            py::arg("path"), py::arg("inputs") = std::vector<std::filesystem::path>{},
            "Write a resumable checkpoint of the run after this epoch.");

    py::class_<Callback, PyCallback, std::shared_ptr<Callback>>(
        m, "Callback",
        "A hook into fit: subclass it and override on_train_begin, on_epoch_end or on_train_end (each takes a "
        "FitContext); state_key, save_state and restore_state keep its state in resumable checkpoints.")
        .def(py::init<>())
        .def(
            "on_train_begin",
            [](Callback& callback, const FitContextRef& c) { callback.on_train_begin(c.get("on_train_begin")); },
            py::arg("context"))
        .def(
            "on_epoch_end",
            [](Callback& callback, const FitContextRef& c) { callback.on_epoch_end(c.get("on_epoch_end")); },
            py::arg("context"))
        .def(
            "on_train_end",
            [](Callback& callback, const FitContextRef& c) { callback.on_train_end(c.get("on_train_end")); },
            py::arg("context"))
        .def("state_key", &Callback::state_key)
        .def("save_state", &Callback::save_state)
        .def("restore_state", &Callback::restore_state, py::arg("state"));

    py::class_<EarlyStoppingOptions>(m, "EarlyStoppingOptions", "EarlyStopping's settings (Keras's).")
        .def(py::init<>())
        .def_readwrite("monitor", &EarlyStoppingOptions::monitor)
        .def_readwrite("mode", &EarlyStoppingOptions::mode)
        .def_readwrite("patience", &EarlyStoppingOptions::patience)
        .def_readwrite("min_delta", &EarlyStoppingOptions::min_delta)
        .def_readwrite("restore_best_weights", &EarlyStoppingOptions::restore_best_weights)
        .def_readwrite("start_from_epoch", &EarlyStoppingOptions::start_from_epoch);

    py::class_<EarlyStopping, Callback, std::shared_ptr<EarlyStopping>>(
        m, "EarlyStopping",
        "Stops training when the monitored quantity has not improved for `patience` epochs and, by default, ends "
        "with the best epoch's weights.")
        .def(py::init([](std::string monitor, MonitorMode mode, std::uint32_t patience, double min_delta,
                         bool restore_best_weights, std::uint32_t start_from_epoch) {
                 return std::make_shared<EarlyStopping>(EarlyStoppingOptions{
                     std::move(monitor), mode, patience, min_delta, restore_best_weights, start_from_epoch});
             }),
             py::kw_only(), py::arg("monitor") = "", py::arg("mode") = MonitorMode::Auto, py::arg("patience") = 0,
             py::arg("min_delta") = 0.0, py::arg("restore_best_weights") = true, py::arg("start_from_epoch") = 0)
        .def_property_readonly("options", &EarlyStopping::options)
        .def_property_readonly("monitor", &EarlyStopping::monitor)
        .def_property_readonly("best_epoch", &EarlyStopping::best_epoch)
        .def_property_readonly("best_value", &EarlyStopping::best_value)
        .def_property_readonly("stopped_epoch", &EarlyStopping::stopped_epoch)
        .def_property_readonly("restored_epoch", &EarlyStopping::restored_epoch);

    py::class_<ModelCheckpointOptions>(m, "ModelCheckpointOptions", "ModelCheckpoint's settings (Keras's).")
        .def(py::init<>())
        .def_readwrite("path", &ModelCheckpointOptions::path)
        .def_readwrite("every_epochs", &ModelCheckpointOptions::every_epochs)
        .def_readwrite("save_best_only", &ModelCheckpointOptions::save_best_only)
        .def_readwrite("monitor", &ModelCheckpointOptions::monitor)
        .def_readwrite("mode", &ModelCheckpointOptions::mode)
        .def_readwrite("resumable", &ModelCheckpointOptions::resumable)
        .def_readwrite("inputs", &ModelCheckpointOptions::inputs);

    py::class_<ModelCheckpoint, Callback, std::shared_ptr<ModelCheckpoint>>(
        m, "ModelCheckpoint",
        "Writes the run (a resumable checkpoint) or the model file at a cadence or on improvement, atomically; "
        "'{epoch}' in the path is replaced by the epoch number.")
        .def(py::init([](std::filesystem::path path, std::uint32_t every_epochs, bool save_best_only,
                         std::string monitor, MonitorMode mode, bool resumable,
                         std::vector<std::filesystem::path> inputs) {
                 return std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{
                     std::move(path), every_epochs, save_best_only, std::move(monitor), mode, resumable,
                     std::move(inputs)});
             }),
             py::arg("path"), py::kw_only(), py::arg("every_epochs") = 1, py::arg("save_best_only") = false,
             py::arg("monitor") = "", py::arg("mode") = MonitorMode::Auto, py::arg("resumable") = true,
             py::arg("inputs") = std::vector<std::filesystem::path>{})
        .def_property_readonly("options", &ModelCheckpoint::options)
        .def("path_for", &ModelCheckpoint::path_for, py::arg("epoch"))
        .def_property_readonly("written", &ModelCheckpoint::written);

    py::class_<TrainingCheckpoint> checkpoint(
        m, "TrainingCheckpoint",
        "A training run saved so that it continues exactly (fit(..., resume=checkpoint)).");
    checkpoint.def(py::init<Network>(), py::arg("network"));
    def_checkpoint_field(checkpoint, "network", &TrainingCheckpoint::network);
    def_checkpoint_field(checkpoint, "config", &TrainingCheckpoint::config);
    def_checkpoint_field(checkpoint, "run_epochs", &TrainingCheckpoint::run_epochs);
    def_checkpoint_field(checkpoint, "schedule", &TrainingCheckpoint::schedule);
    def_checkpoint_field(checkpoint, "callbacks", &TrainingCheckpoint::callbacks);
    def_checkpoint_field(checkpoint, "losses", &TrainingCheckpoint::losses);
    def_checkpoint_field(checkpoint, "validation_losses", &TrainingCheckpoint::validation_losses);
    def_checkpoint_field(checkpoint, "learning_rates", &TrainingCheckpoint::learning_rates);
    def_checkpoint_field(checkpoint, "data_rows", &TrainingCheckpoint::data_rows);
    def_checkpoint_field(checkpoint, "data_fingerprint", &TrainingCheckpoint::data_fingerprint);
    def_checkpoint_field(checkpoint, "notes", &TrainingCheckpoint::notes);
    checkpoint.def_property_readonly("epochs_trained", &TrainingCheckpoint::epochs_trained)
        .def("remaining", &TrainingCheckpoint::remaining, "The config with the epochs left of the run.")
        .def("to_json_string", &TrainingCheckpoint::to_json_string)
        .def_static("from_json_string", &TrainingCheckpoint::from_json_string, py::arg("text"),
                    py::arg("origin") = "<string>")
        .def(
            "save",
            [](const TrainingCheckpoint& c, const std::filesystem::path& path,
               const std::vector<std::filesystem::path>& inputs) {
                const SharedObjectLock lock(checkpoint_lock(c));
                c.save(path, inputs);
            },
            py::arg("path"), py::arg("inputs") = std::vector<std::filesystem::path>{},
            "Write the checkpoint as JSON, whole or not at all, never over `inputs`. The GIL is released; another "
            "thread's change to the checkpoint or its network waits until it is written.")
        .def_static(
            "load",
            [](const std::filesystem::path& path, std::optional<InputLimits> limits) {
                py::gil_scoped_release release;
                return TrainingCheckpoint::load(path, limits ? *limits : InputLimits{});
            },
            py::arg("path"), py::arg("limits") = py::none());
    m.def("data_fingerprint", &data_fingerprint, py::arg("data"),
          "FNV-1a over a data set's raw features and targets (a resumed run checks its rows with it).");
}

} // namespace brain::python
