// LearningRateSchedule, PlateauOptions, ScheduleState and MonitorMode: the learning rate of every optimizer step.
#include "bindings.hpp"

#include <pybind11/stl.h>

#include <string>

namespace brain::python {

template <>
MonitorMode parse_enum_name<MonitorMode>(std::string_view text) {
    try {
        return parse_monitor_mode(text);
    } catch (const Error& e) {
        throw Error(e.code(), std::string("brain.MonitorMode: ") + e.what());
    }
}

void bind_schedule(py::module_& m) {
    py::enum_<MonitorMode> monitor_mode(m, "MonitorMode",
                                        "Which way a monitored quantity improves (Auto: by its name).");
    monitor_mode.value("Auto", MonitorMode::Auto).value("Min", MonitorMode::Min).value("Max", MonitorMode::Max);
    // Also from a name, as an argument or attribute takes one (NamedEnumCaster, bindings.hpp).
    monitor_mode.def(py::init([](const std::string& text) { return parse_enum_name<MonitorMode>(text); }),
                     py::arg("name"), "The mode with this name: 'auto', 'min' or 'max' (case-insensitive).");

    py::class_<PlateauOptions>(m, "PlateauOptions", "Reduce-on-plateau's parameters (PyTorch's ReduceLROnPlateau).")
        .def(py::init([](float factor, std::uint32_t patience, float threshold, std::uint32_t cooldown, float min_rate,
                         std::string monitor, MonitorMode mode) {
                 return PlateauOptions{factor, patience, threshold, cooldown, min_rate, std::move(monitor), mode};
             }),
             py::kw_only(), py::arg("factor") = 0.1f, py::arg("patience") = 10, py::arg("threshold") = 1e-4f,
             py::arg("cooldown") = 0, py::arg("min_rate") = 0.0f, py::arg("monitor") = "",
             py::arg("mode") = MonitorMode::Auto)
        .def_readwrite("factor", &PlateauOptions::factor)
        .def_readwrite("patience", &PlateauOptions::patience)
        .def_readwrite("threshold", &PlateauOptions::threshold)
        .def_readwrite("cooldown", &PlateauOptions::cooldown)
        .def_readwrite("min_rate", &PlateauOptions::min_rate)
        .def_readwrite("monitor", &PlateauOptions::monitor)
        .def_readwrite("mode", &PlateauOptions::mode);

    py::class_<ScheduleState>(m, "ScheduleState", "Where a running schedule is (saved in resumable checkpoints).")
        .def(py::init<>())
        .def_readwrite("base_rate", &ScheduleState::base_rate)
        .def_readwrite("steps_per_epoch", &ScheduleState::steps_per_epoch)
        .def_readwrite("horizon_epochs", &ScheduleState::horizon_epochs)
        .def_readwrite("epochs_done", &ScheduleState::epochs_done)
        .def_readwrite("plateau_rate", &ScheduleState::plateau_rate)
        .def_readwrite("plateau_best", &ScheduleState::plateau_best)
        .def_readwrite("plateau_has_best", &ScheduleState::plateau_has_best)
        .def_readwrite("plateau_bad_epochs", &ScheduleState::plateau_bad_epochs)
        .def_readwrite("plateau_cooldown", &ScheduleState::plateau_cooldown);

    py::class_<LearningRateSchedule> schedule(
        m, "LearningRateSchedule",
        "The learning rate of every optimizer step: constant, step, exponential, cosine (with warm-up), one-cycle or "
        "reduce-on-plateau; LearningRateSchedule.parse('cosine:warmup=1,min=1e-5') reads the CLI's text form.");
    py::enum_<LearningRateSchedule::Kind>(schedule, "Kind")
        .value("Constant", LearningRateSchedule::Kind::Constant)
        .value("Step", LearningRateSchedule::Kind::Step)
        .value("Exponential", LearningRateSchedule::Kind::Exponential)
        .value("Cosine", LearningRateSchedule::Kind::Cosine)
        .value("OneCycle", LearningRateSchedule::Kind::OneCycle)
        .value("ReduceOnPlateau", LearningRateSchedule::Kind::ReduceOnPlateau);
    schedule.def(py::init<>(), "The optimizer's rate throughout.")
        .def_static("constant", &LearningRateSchedule::constant, py::arg("warmup_epochs") = 0.0f)
        .def_static("step", &LearningRateSchedule::step, py::arg("every_epochs"), py::arg("gamma") = 0.1f,
                    py::arg("warmup_epochs") = 0.0f)
        .def_static("exponential", &LearningRateSchedule::exponential, py::arg("gamma"),
                    py::arg("warmup_epochs") = 0.0f)
        .def_static("cosine", &LearningRateSchedule::cosine, py::arg("warmup_epochs") = 0.0f,
                    py::arg("min_rate") = 0.0f, py::arg("epochs") = 0)
        .def_static("one_cycle", &LearningRateSchedule::one_cycle, py::arg("pct_start") = 0.3f,
                    py::arg("div_factor") = 25.0f, py::arg("final_div_factor") = 1e4f, py::arg("epochs") = 0)
        .def_static("reduce_on_plateau", &LearningRateSchedule::reduce_on_plateau,
                    py::arg("options") = PlateauOptions{})
        .def_static("parse", &LearningRateSchedule::parse, py::arg("text"))
        .def("to_string", &LearningRateSchedule::to_string)
        .def("__str__", &LearningRateSchedule::to_string)
        .def("__repr__", [](const LearningRateSchedule& s) { return "LearningRateSchedule('" + s.to_string() + "')"; })
        .def_property_readonly("kind", &LearningRateSchedule::kind)
        .def_property_readonly("plateau", &LearningRateSchedule::plateau)
        .def_property_readonly("monitors", &LearningRateSchedule::monitors)
        .def("start", &LearningRateSchedule::start, py::arg("base_rate"), py::arg("steps_per_epoch"),
             py::arg("run_epochs"))
        .def_property_readonly("started", &LearningRateSchedule::started)
        .def("varies_within_epoch", &LearningRateSchedule::varies_within_epoch)
        .def("rate_at", &LearningRateSchedule::rate_at, py::arg("step"))
        .def("next_epoch_rates", &LearningRateSchedule::next_epoch_rates)
        .def("observe", &LearningRateSchedule::observe, py::arg("value"))
        .def("finish_epoch", &LearningRateSchedule::finish_epoch)
        .def_property_readonly("state", &LearningRateSchedule::state)
        .def("restore", &LearningRateSchedule::restore, py::arg("state"))
        .def_property_readonly("warmup_epochs", &LearningRateSchedule::warmup_epochs)
        .def_property_readonly("every_epochs", &LearningRateSchedule::every_epochs)
        .def_property_readonly("gamma", &LearningRateSchedule::gamma)
        .def_property_readonly("min_rate", &LearningRateSchedule::min_rate)
        .def_property_readonly("epochs", &LearningRateSchedule::epochs)
        .def_property_readonly("pct_start", &LearningRateSchedule::pct_start)
        .def_property_readonly("div_factor", &LearningRateSchedule::div_factor)
        .def_property_readonly("final_div_factor", &LearningRateSchedule::final_div_factor)
        .def(py::pickle([](const LearningRateSchedule& s) { return s.to_string(); },
                        [](const std::string& text) { return LearningRateSchedule::parse(text); }));
}

} // namespace brain::python
