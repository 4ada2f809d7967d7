// accelerator_doctor, the memory estimates, and plugin discovery with its load records. Probing and discovery
// release the GIL: they may initialise a driver or open files.
#include "bindings.hpp"

#include <optional>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>
#include <string>

namespace brain::python {
namespace {

// The value of E named `name`, or none when it names no member of E.
template <class E>
std::optional<E> try_parse(const std::string& name) {
    try {
        return parse_enum_name<E>(name);
    } catch (const Error&) {
        return std::nullopt;
    }
}

// ", A, B, C": the member names of a Python enumeration.
std::string member_names(const py::handle& type) {
    std::string out;
    for (const auto& item : type.attr("__members__").cast<py::dict>()) out += ", " + item.first.cast<std::string>();
    return out;
}

} // namespace

void bind_devices(py::module_& m) {
    py::class_<AcceleratorReport>(m, "AcceleratorReport", "What accelerator_doctor found.")
        .def_readonly("backend", &AcceleratorReport::backend)
        .def_readonly("name", &AcceleratorReport::name)
        .def_readonly("revision", &AcceleratorReport::revision)
        .def_readonly("total_memory_mib", &AcceleratorReport::total_memory_mib)
        .def_readonly("free_memory_mib", &AcceleratorReport::free_memory_mib)
        .def_readonly("gemm_available", &AcceleratorReport::gemm_available)
        .def_readonly("kernel_available", &AcceleratorReport::kernel_available)
        .def_readonly("allocation_test", &AcceleratorReport::allocation_test)
        .def_readonly("notes", &AcceleratorReport::notes)
        .def_readonly("gemm_check", &AcceleratorReport::gemm_check)
        .def_readonly("kernel_check", &AcceleratorReport::kernel_check)
        .def_readonly("allocation_check", &AcceleratorReport::allocation_check)
        .def("__str__", [](const AcceleratorReport& r) {
            std::ostringstream out;
            out << r;
            return out.str();
        });
    m.def("accelerator_doctor", &accelerator_doctor, py::arg("backend"), py::call_guard<py::gil_scoped_release>(),
          "Probe the backend's device under its budget (None for the CPU without a budget); raises the plugin's "
          "error (e.g. brain.DriverUnavailable) when the device cannot be probed at all.");
    m.def("estimate_tensor_memory_mib",
          py::overload_cast<const Network&, std::size_t, Precision>(&estimate_tensor_memory_mib), py::arg("network"),
          py::arg("batch_size"), py::arg("precision") = Precision::Float32,
          "Upper bound, in MiB, of the tensors a training session allocates for this network and batch size.");
    m.def("estimate_tensor_memory_bytes",
          py::overload_cast<const Network&, std::size_t, Precision>(&estimate_tensor_memory_bytes),
          py::arg("network"), py::arg("batch_size"), py::arg("precision") = Precision::Float32,
          "The same bound in bytes.");
    m.def("largest_batch_within", py::overload_cast<const Network&, std::uint64_t>(&largest_batch_within),
          py::arg("network"), py::arg("budget_bytes"), "The largest batch size whose estimate fits the budget.");

    py::enum_<PluginStage>(m, "PluginStage", "The stage a plugin load reached.")
        .value("Search", PluginStage::Search)
        .value("Open", PluginStage::Open)
        .value("Symbol", PluginStage::Symbol)
        .value("Abi", PluginStage::Abi)
        .value("Initialize", PluginStage::Initialize)
        .value("Devices", PluginStage::Devices)
        .value("Ready", PluginStage::Ready);

    py::class_<PluginCapabilities>(m, "PluginCapabilities", "What a plugin runs.")
        .def_readonly("declared", &PluginCapabilities::declared)
        .def_readonly("activations", &PluginCapabilities::activations)
        .def_readonly("losses", &PluginCapabilities::losses)
        .def_readonly("optimizers", &PluginCapabilities::optimizers)
        .def_readonly("precisions", &PluginCapabilities::precisions)
        .def_readonly("features", &PluginCapabilities::features)
        .def_readonly("max_devices", &PluginCapabilities::max_devices)
        .def_readonly("notes", &PluginCapabilities::notes)
        // A name first: pybind11 tries overloads without conversions first, so every str comes here, and an
        // unknown name is refused naming the four enumerations' members rather than by the first one's caster.
        .def(
            "runs",
            [](const PluginCapabilities& c, const std::string& name) {
                if (const auto a = try_parse<Activation>(name)) return c.runs(*a);
                if (const auto l = try_parse<Loss>(name)) return c.runs(*l);
                if (const auto k = try_parse<Optimizer::Kind>(name)) return c.runs(*k);
                if (const auto p = try_parse<Precision>(name)) return c.runs(*p);
                const std::string members =
                    member_names(py::type::of<Activation>()) + member_names(py::type::of<Loss>()) +
                    member_names(py::type::of<Optimizer::Kind>()) + member_names(py::type::of<Precision>());
                throw Error(ErrorCode::InvalidArgument,
                            "PluginCapabilities.runs: " + quote_excerpt(name) +
                                " names no activation, loss, optimizer or precision; accepted names: " +
                                members.substr(2) + " (case-insensitive; brain's own spellings too, e.g. 'mse')");
            },
            py::arg("name"), "Whether the plugin runs the activation, loss, optimizer or precision of this name.")
        .def("runs", py::overload_cast<Activation>(&PluginCapabilities::runs, py::const_), py::arg("activation"))
        .def("runs", py::overload_cast<Loss>(&PluginCapabilities::runs, py::const_), py::arg("loss"))
        .def("runs", py::overload_cast<Optimizer::Kind>(&PluginCapabilities::runs, py::const_), py::arg("kind"))
        .def("runs", py::overload_cast<Precision>(&PluginCapabilities::runs, py::const_), py::arg("precision"))
        .def("missing_features", [](const PluginCapabilities& c) { return missing_features(c); })
        .def("__str__", [](const PluginCapabilities& c) { return describe(c); });

    py::class_<PluginRecord> record(m, "PluginRecord", "The record of one plugin load attempt.");
    py::enum_<PluginRecord::Selection>(record, "Selection")
        .value("Used", PluginRecord::Selection::Used)
        .value("Skipped", PluginRecord::Selection::Skipped)
        .value("Shadowed", PluginRecord::Selection::Shadowed);
    record.def_readonly("name", &PluginRecord::name)
        .def_readonly("path", &PluginRecord::path)
        .def_readonly("stage", &PluginRecord::stage)
        .def_readonly("ok", &PluginRecord::ok)
        .def_readonly("error_code", &PluginRecord::error_code)
        .def_readonly("message", &PluginRecord::message)
        .def_readonly("version", &PluginRecord::version)
        .def_readonly("description", &PluginRecord::description)
        .def_readonly("abi_major", &PluginRecord::abi_major)
        .def_readonly("abi_minor", &PluginRecord::abi_minor)
        .def_readonly("device_count", &PluginRecord::device_count)
        .def_readonly("device_status", &PluginRecord::device_status)
        .def_readonly("selection", &PluginRecord::selection)
        .def_readonly("capabilities", &PluginRecord::capabilities)
        .def("__repr__", [](const PluginRecord& r) {
            return "PluginRecord(name='" + r.name + "', ok=" + (r.ok ? "True" : "False") + ", stage=" +
                   std::string(to_string(r.stage)) + ", path='" + r.path.string() + "')";
        });

    m.def("plugins", &discover_plugins, py::call_guard<py::gil_scoped_release>(),
          "Every libbrain_*.so on the plugin search path with its load record (never raises for a broken one).");
    m.def("plugin_search_paths", &plugin_search_paths, "The directories searched for plugins, in order.");
    m.def("load_plugin", &load_plugin, py::arg("name"), py::call_guard<py::gil_scoped_release>(),
          "Load the plugin for backend `name` and return its record (raises brain.PluginNotFound etc.).");
    m.def("plugin_capabilities", &plugin_capabilities, py::arg("name"), py::call_guard<py::gil_scoped_release>(),
          "What backend `name` runs (loading its plugin if needed).");
}

} // namespace brain::python
