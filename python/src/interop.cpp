// Models in and out of other frameworks: ONNX (save_onnx / load_onnx) and safetensors in PyTorch's nn.Sequential
// naming, and set_optimizer for training an imported model on (docs/interop.md). File access releases the GIL and
// holds the network's shared lock meanwhile (object_lock.hpp).
#include "bindings.hpp"
#include "object_lock.hpp"

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <optional>
#include <vector>

namespace brain::python {
namespace {

using Paths = std::vector<std::filesystem::path>;

InputLimits limits_or_default(const std::optional<InputLimits>& limits) { return limits ? *limits : InputLimits{}; }

} // namespace

void bind_interop(py::module_& m) {
    auto network = py::reinterpret_borrow<py::class_<Network>>(m.attr("Network"));
    network
        .def(
            "set_optimizer",
            [](Network& n, const Optimizer& optimizer) {
                const ExclusiveObjectLock lock(&n);
                n.set_optimizer(optimizer);
            },
            py::arg("optimizer"), "Train on with another optimizer; the optimizer state restarts at zero.")
        .def(
            "save_onnx",
            [](const Network& n, const std::filesystem::path& path, const Paths& inputs) {
                const SharedObjectLock lock(&n);
                n.save_onnx(path, inputs);
            },
            py::arg("path"), py::arg("inputs") = Paths{},
            "Write the model as an ONNX graph (opset 17) that ONNX Runtime serves, checked before it is written.")
        .def_static(
            "load_onnx",
            [](const std::filesystem::path& path, std::optional<InputLimits> limits) {
                py::gil_scoped_release release;
                return Network::load_onnx(path, limits_or_default(limits));
            },
            py::arg("path"), py::arg("limits") = py::none(),
            "Read a multilayer perceptron from an ONNX file (torch.onnx.export of an nn.Sequential, tf2onnx, "
            "save_onnx); anything else is brain.InvalidModelFile naming the node at fault.")
        .def(
            "save_safetensors",
            [](const Network& n, const std::filesystem::path& path, const Paths& inputs) {
                const SharedObjectLock lock(&n);
                n.save_safetensors(path, inputs);
            },
            py::arg("path"), py::arg("inputs") = Paths{},
            "Write the parameters as safetensors named as nn.Sequential names them ('0.weight', '0.bias', ...).")
        .def_static(
            "load_safetensors",
            [](const std::filesystem::path& path, const Network& architecture, std::optional<InputLimits> limits) {
                const SharedObjectLock lock(&architecture);
                return Network::load_safetensors(path, architecture, limits_or_default(limits));
            },
            py::arg("path"), py::arg("architecture"), py::arg("limits") = py::none(),
            "A copy of `architecture` with the parameters of a safetensors file in nn.Sequential naming.")
        .def_static(
            "load_safetensors",
            [](const std::filesystem::path& path, const std::vector<Activation>& activations,
               std::optional<InputLimits> limits) {
                py::gil_scoped_release release;
                return Network::load_safetensors(path, activations, limits_or_default(limits));
            },
            py::arg("path"), py::arg("activations") = std::vector<Activation>{}, py::arg("limits") = py::none(),
            "A network whose widths come from the file, with one activation per layer (empty: those the file "
            "records).")
        .def_static(
            "safetensors_layers",
            [](const std::filesystem::path& path, std::optional<InputLimits> limits) {
                py::gil_scoped_release release;
                return Network::safetensors_layers(path, limits_or_default(limits));
            },
            py::arg("path"), py::arg("limits") = py::none(),
            "The layers a safetensors file in nn.Sequential naming holds (widths only).");
}

} // namespace brain::python
