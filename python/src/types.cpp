// Enumerations and small value types: Activation, Loss, Precision, Optimizer, TrainConfig, TrainingBackend. The
// enumerations also accept their names as strings wherever they are expected ("relu", "mse", "bf16"); an unknown
// name raises brain.InvalidArgument listing the accepted ones (NamedEnumCaster, bindings.hpp).
#include "bindings.hpp"

#include <cctype>
#include <pybind11/stl.h>
#include <string>
#include <string_view>

namespace brain::python {
namespace {

// The enumeration's constructor from a name: brain.Activation("relu") is Activation.Relu. The caster in
// bindings.hpp reads a str given for an argument the same way.
template <class Enum>
void accept_names(py::enum_<Enum>& e) {
    e.def(py::init([](const std::string& text) { return parse_enum_name<Enum>(text); }), py::arg("name"),
          "The member with this name, as brain's to_string prints it or as the member is called "
          "(case-insensitive).");
}

// The library's error for an unknown name, with the Python enumeration it was given for in front.
template <class Enum, class Parse>
Enum parse_as(std::string_view text, const char* python_name, Parse parse) {
    try {
        return parse(text);
    } catch (const Error& e) {
        throw Error(e.code(), std::string(python_name) + ": " + e.what());
    }
}

} // namespace

template <>
Activation parse_enum_name<Activation>(std::string_view text) {
    return parse_as<Activation>(text, "brain.Activation", parse_activation);
}

template <>
Loss parse_enum_name<Loss>(std::string_view text) {
    return parse_as<Loss>(text, "brain.Loss", parse_loss);
}

template <>
Precision parse_enum_name<Precision>(std::string_view text) {
    return parse_as<Precision>(text, "brain.Precision", parse_precision);
}

template <>
Optimizer::Kind parse_enum_name<Optimizer::Kind>(std::string_view text) {
    std::string key;
    for (char c : text)
        if (c != '_' && c != '-' && c != ' ') key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (Optimizer::Kind kind : {Optimizer::Kind::Sgd, Optimizer::Kind::Adam, Optimizer::Kind::AdamW})
        if (key == to_string(kind)) return kind;
    throw Error(ErrorCode::InvalidArgument, "brain.Optimizer.Kind: unknown optimizer " + quote_excerpt(text) +
                                                "; accepted names: sgd, adam, adamw (case-insensitive)");
}

void bind_types(py::module_& m) {
    py::enum_<Activation> activation(m, "Activation", "Activation of a dense layer (Softmax: output layer only).");
    activation.value("Linear", Activation::Linear)
        .value("Relu", Activation::Relu)
        .value("LeakyRelu", Activation::LeakyRelu)
        .value("Sigmoid", Activation::Sigmoid)
        .value("Tanh", Activation::Tanh)
        .value("Softmax", Activation::Softmax)
        .value("Gelu", Activation::Gelu);
    accept_names(activation);

    py::enum_<Loss> loss(m, "Loss", "Training loss; by default it follows the output activation.");
    loss.value("MeanSquaredError", Loss::MeanSquaredError)
        .value("BinaryCrossEntropy", Loss::BinaryCrossEntropy)
        .value("CategoricalCrossEntropy", Loss::CategoricalCrossEntropy);
    accept_names(loss);

    py::enum_<Precision> precision(m, "Precision", "Arithmetic of matrix products on accelerators.");
    precision.value("Float32", Precision::Float32).value("Tf32", Precision::Tf32).value("Bf16", Precision::Bf16);
    accept_names(precision);

    py::class_<Optimizer> optimizer(m, "Optimizer", "Optimizer and its hyper-parameters (PyTorch's update rules).");
    py::enum_<Optimizer::Kind> kind(optimizer, "Kind", "The update rule.");
    kind.value("Sgd", Optimizer::Kind::Sgd).value("Adam", Optimizer::Kind::Adam).value("AdamW", Optimizer::Kind::AdamW);
    accept_names(kind);
    m.attr("OptimizerKind") = kind;
    optimizer.def(py::init<>(), "Adam with learning rate 0.001.")
        .def_static("sgd", &Optimizer::sgd, py::arg("learning_rate"), py::arg("momentum") = 0.0f,
                    "Stochastic gradient descent with optional momentum.")
        .def_static("adam", &Optimizer::adam, py::arg("learning_rate"), "Adam with the usual betas and epsilon.")
        .def_static("adamw", &Optimizer::adamw, py::arg("learning_rate"), py::arg("weight_decay") = 0.01f,
                    "AdamW with decoupled weight decay.")
        .def_readwrite("kind", &Optimizer::kind)
        .def_readwrite("learning_rate", &Optimizer::learning_rate)
        .def_readwrite("momentum", &Optimizer::momentum)
        .def_readwrite("beta1", &Optimizer::beta1)
        .def_readwrite("beta2", &Optimizer::beta2)
        .def_readwrite("epsilon", &Optimizer::epsilon)
        .def_readwrite("weight_decay", &Optimizer::weight_decay)
        .def("state_per_parameter", &Optimizer::state_per_parameter,
             "Floats of optimizer state per parameter (SGD 1, Adam/AdamW 2).")
        .def("__repr__", [](const Optimizer& o) {
            return "Optimizer(kind=" + std::string(to_string(o.kind)) +
                   ", learning_rate=" + std::to_string(o.learning_rate) + ")";
        });

    py::class_<TrainConfig>(m, "TrainConfig", "One training run's shape: epochs, batch size, shuffling, seed.")
        .def(py::init([](std::uint32_t epochs, std::uint32_t batch_size, bool shuffle,
                         std::optional<std::uint64_t> seed) {
                 return TrainConfig{epochs, batch_size, shuffle, seed};
             }),
             py::kw_only(), py::arg("epochs") = 10, py::arg("batch_size") = 32, py::arg("shuffle") = true,
             py::arg("seed") = py::none())
        .def_readwrite("epochs", &TrainConfig::epochs)
        .def_readwrite("batch_size", &TrainConfig::batch_size)
        .def_readwrite("shuffle", &TrainConfig::shuffle)
        .def_readwrite("seed", &TrainConfig::seed, "Batch-order seed; None: the network's seed.")
        .def("__repr__", [](const TrainConfig& c) {
            return "TrainConfig(epochs=" + std::to_string(c.epochs) + ", batch_size=" +
                   std::to_string(c.batch_size) + ", shuffle=" + (c.shuffle ? "True" : "False") + ")";
        });

    py::class_<TrainingBackend>(m, "TrainingBackend",
                                "Which plugin trains, on which device, under which memory budget. A request that "
                                "cannot be met is an error, never a silent switch to the CPU.")
        .def_static("cpu", py::overload_cast<>(&TrainingBackend::cpu), "The reference CPU plugin, without a budget.")
        .def_static("cpu", py::overload_cast<std::uint64_t>(&TrainingBackend::cpu), py::arg("memory_budget_mib"),
                    "The CPU plugin with its session's tensors capped at memory_budget_mib MiB (0: no cap).")
        .def_static("cuda", py::overload_cast<int, std::uint64_t>(&TrainingBackend::cuda), py::arg("device"),
                    py::arg("memory_budget_mib"),
                    "The CUDA plugin on device index `device`, using at most memory_budget_mib MiB.")
        .def_static("cuda", py::overload_cast<std::vector<int>, std::uint64_t>(&TrainingBackend::cuda),
                    py::arg("devices"), py::arg("budget_per_device_mib"),
                    "The CUDA plugin on several devices of this process (data parallelism over NCCL).")
        .def_static("cuda_all", &TrainingBackend::cuda_all, py::arg("budget_per_device_mib"),
                    "The CUDA plugin on every device the process sees (resolved when a session opens).")
        .def_static("metal", &TrainingBackend::metal, py::arg("device"), py::arg("memory_budget_mib"),
                    "The Metal plugin; off Apple systems every call raises brain.MetalFeatureDisabled.")
        .def_static("plugin", &TrainingBackend::plugin, py::arg("name"), py::arg("device"),
                    py::arg("memory_budget_mib"), "A third-party plugin (libbrain_<name>.so on the search path).")
        .def_static("parse", &TrainingBackend::parse, py::arg("spec"), py::arg("memory_budget_mib") = 0,
                    "Parse 'cpu', 'cuda:0', 'metal:0' or '<name>:<device>' (the CLI's --backend).")
        .def("with_precision", &TrainingBackend::with_precision, py::arg("precision"),
             "This request with matrix products in the given precision.")
        .def("with_devices", &TrainingBackend::with_devices, py::arg("devices"),
             "This request on the given devices (distinct indices, at least one).")
        .def("with_processes", &TrainingBackend::with_processes, py::arg("rank"), py::arg("world_size"),
             py::arg("rendezvous"),
             "This request as rank `rank` of `world_size` processes meeting at 'file:<path>' or 'tcp:<host>:<port>'.")
        .def_property_readonly("plugin_name", &TrainingBackend::plugin_name)
        .def_property_readonly("device", &TrainingBackend::device, "The first device.")
        .def_property_readonly("devices", &TrainingBackend::devices)
        .def_property_readonly("all_devices", &TrainingBackend::all_devices)
        .def_property_readonly("rank", &TrainingBackend::rank)
        .def_property_readonly("world_size", &TrainingBackend::world_size)
        .def_property_readonly("rendezvous", &TrainingBackend::rendezvous)
        .def_property_readonly("memory_budget_mib", &TrainingBackend::memory_budget_mib)
        .def_property_readonly("precision", &TrainingBackend::precision)
        .def_property_readonly("is_cpu", &TrainingBackend::is_cpu)
        .def("describe", &TrainingBackend::describe)
        .def("__repr__", [](const TrainingBackend& b) { return "TrainingBackend(" + b.describe() + ")"; })
        .def(py::pickle(
            [](const TrainingBackend& b) {
                return py::make_tuple(b.plugin_name(), b.devices(), b.all_devices(), b.memory_budget_mib(),
                                      static_cast<int>(b.precision()), b.rank(), b.world_size(), b.rendezvous());
            },
            [](const py::tuple& t) {
                const auto name = t[0].cast<std::string>();
                const auto devices = t[1].cast<std::vector<int>>();
                const bool all = t[2].cast<bool>();
                const auto budget = t[3].cast<std::uint64_t>();
                const int first = devices.empty() ? 0 : devices.front();
                TrainingBackend b = name == "cpu"    ? TrainingBackend::cpu(budget)
                                    : name == "cuda" ? (all ? TrainingBackend::cuda_all(budget)
                                                            : TrainingBackend::cuda(first, budget))
                                    : name == "metal" ? TrainingBackend::metal(first, budget)
                                                      : TrainingBackend::plugin(name, first, budget);
                if (devices.size() > 1) b = b.with_devices(devices);
                if (t[6].cast<int>() > 1) b = b.with_processes(t[5].cast<int>(), t[6].cast<int>(), t[7].cast<std::string>());
                return b.with_precision(static_cast<Precision>(t[4].cast<int>()));
            }));
}

} // namespace brain::python
