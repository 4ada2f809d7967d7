// NetworkBuilder, LayerSpec, Network (predict, evaluate, model files) and Predictor. Prediction releases the GIL
// and holds the network's shared lock meanwhile (object_lock.hpp: another thread's fit may replace the weights);
// its result is a NumPy array viewing the library's output matrix (no copy).
#include "bindings.hpp"
#include "object_lock.hpp"

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <string>

namespace brain::python {

void bind_network(py::module_& m) {
    py::class_<LayerSpec>(m, "LayerSpec", "One dense layer: outputs = activation(inputs W^T + b).")
        .def_readonly("inputs", &LayerSpec::inputs)
        .def_readonly("outputs", &LayerSpec::outputs)
        .def_readonly("activation", &LayerSpec::activation)
        .def("__repr__", [](const LayerSpec& l) {
            return "LayerSpec(" + std::to_string(l.inputs) + " -> " + std::to_string(l.outputs) + ", " +
                   std::string(to_string(l.activation)) + ")";
        });

    py::class_<Evaluation>(m, "Evaluation", "Loss and, for classifiers, accuracy over a data set.")
        .def_readonly("loss", &Evaluation::loss)
        .def_readonly("accuracy", &Evaluation::accuracy)
        .def("__repr__", [](const Evaluation& e) {
            return "Evaluation(loss=" + std::to_string(e.loss) +
                   (e.accuracy ? ", accuracy=" + std::to_string(*e.accuracy) : std::string()) + ")";
        });

    py::class_<NetworkBuilder>(m, "NetworkBuilder",
                               "Fluent description of a Network: "
                               "Network.builder().input_size(16).dense(256, 'relu').dense(1, 'linear').build().")
        .def(py::init<>())
        .def("input_size", &NetworkBuilder::input_size, py::arg("n"), py::return_value_policy::reference_internal)
        .def("dense", &NetworkBuilder::dense, py::arg("units"), py::arg("activation"),
             py::return_value_policy::reference_internal)
        .def("loss", &NetworkBuilder::loss, py::arg("loss"), py::return_value_policy::reference_internal)
        .def("optimizer", &NetworkBuilder::optimizer, py::arg("optimizer"),
             py::return_value_policy::reference_internal)
        .def("seed", &NetworkBuilder::seed, py::arg("seed"), py::return_value_policy::reference_internal)
        .def("build", &NetworkBuilder::build,
             "Validate and initialise (fully determined by the seed); raises brain.InvalidArgument naming the "
             "layer and value at fault.");

    py::class_<Network>(m, "Network",
                        "A dense network with its weights, optimizer state and input standardisation. Copies "
                        "(copy.copy, copy.deepcopy) are independent and keep everything; pickling goes through the "
                        "JSON model file, which keeps the weights, standardisation and names but not the optimizer "
                        "state (moments, optimizer_step).")
        .def_static("builder", &Network::builder, "Start describing a network.")
        .def_property_readonly("layers", &Network::layers)
        .def_property_readonly("input_size", &Network::input_size)
        .def_property_readonly("output_size", &Network::output_size)
        .def_property_readonly("loss", &Network::loss)
        .def_property_readonly("optimizer", &Network::optimizer)
        .def_property_readonly("seed", &Network::seed)
        .def_property_readonly("parameter_count", &Network::parameter_count)
        .def_property_readonly(
            "parameters",
            [](const Network& n) {
                const auto& p = n.parameters();
                return py::array_t<float>(static_cast<py::ssize_t>(p.size()), p.data());
            },
            "A copy of the flat parameters in the ABI's layout (per layer W, out x in row-major, then b).")
        .def(
            "set_parameters",
            [](Network& n, const py::handle& values) {
                Matrix flat = to_matrix(values, "parameters", false);
                const ExclusiveObjectLock lock(&n);
                n.set_parameters(std::move(flat.data()));
            },
            py::arg("parameters"), "Replace the parameters (size must equal parameter_count).")
        .def_property_readonly("optimizer_step", &Network::optimizer_step)
        .def_property_readonly("epochs_trained", &Network::epochs_trained)
        // A copy, as the data set's: fit or restore_checkpoint may replace what a reference would point into.
        .def_property_readonly("standardization", [](const Network& n) { return n.standardization(); })
        .def_property_readonly("class_labels", &Network::class_labels)
        .def_property_readonly("feature_names", &Network::feature_names)
        .def_property_readonly("target_names", &Network::target_names)
        .def_property_readonly("is_classifier", &Network::is_classifier)
        .def(
            "predict",
            [](const Network& n, const py::handle& inputs) {
                const MatrixArg x(inputs, "inputs", false);
                Matrix out;
                {
                    const SharedObjectLock lock(&n);
                    out = n.predict(x.get());
                }
                return to_array(std::move(out));
            },
            py::arg("inputs"),
            "Outputs for raw input rows on the host, as a (rows x outputs) float32 array. The GIL is released.")
        .def(
            "predict_with_backend",
            [](const Network& n, const py::handle& inputs, const TrainingBackend& backend) {
                const MatrixArg x(inputs, "inputs", false);
                Matrix out;
                {
                    const SharedObjectLock lock(&n);
                    out = n.predict_with_backend(x.get(), backend);
                }
                return to_array(std::move(out));
            },
            py::arg("inputs"), py::arg("backend"),
            "Outputs computed on `backend` by its plugin's predictor; never falls back to the host.")
        .def(
            "predict_classes",
            [](const Network& n, const py::handle& inputs) {
                const MatrixArg x(inputs, "inputs", false);
                std::vector<std::size_t> classes;
                {
                    const SharedObjectLock lock(&n);
                    classes = n.predict_classes(x.get());
                }
                py::array_t<std::int64_t> out(static_cast<py::ssize_t>(classes.size()));
                auto view = out.mutable_unchecked<1>();
                for (std::size_t i = 0; i < classes.size(); ++i)
                    view(static_cast<py::ssize_t>(i)) = static_cast<std::int64_t>(classes[i]);
                return out;
            },
            py::arg("inputs"), "For classifiers: the predicted class index of each row.")
        .def(
            "evaluate",
            [](const Network& n, const py::handle& data, const py::handle& targets) {
                Dataset d = to_dataset(data, targets, "evaluate");
                const SharedObjectLock lock(&n);
                return n.evaluate(d);
            },
            py::arg("data"), py::arg("targets") = py::none(),
            "Loss (the training loss) and accuracy for classifiers over a Dataset or (features, targets).")
        .def(
            "restore_checkpoint",
            [](Network& n, const Checkpoint& checkpoint) {
                const ExclusiveObjectLock lock(&n);
                n.restore_checkpoint(checkpoint);
            },
            py::arg("checkpoint"), "Adopt a session's checkpoint; its sizes must match this network.")
        .def(
            "adopt_dataset_metadata",
            [](Network& n, const Dataset& data) {
                const ExclusiveObjectLock lock(&n);
                n.adopt_dataset_metadata(data);
            },
            py::arg("data"),
            "Record a data set's standardisation, names and class labels in the model; fit does this.")
        .def(
            "save_json",
            [](const Network& n, const std::filesystem::path& path,
               const std::vector<std::filesystem::path>& inputs) {
                const SharedObjectLock lock(&n);
                n.save_json(path, inputs);
            },
            py::arg("path"), py::arg("inputs") = std::vector<std::filesystem::path>{},
            "Write the model file, whole or not at all, refusing a path that is one of `inputs`.")
        .def_static(
            "load_json",
            [](const std::filesystem::path& path, std::optional<InputLimits> limits) {
                py::gil_scoped_release release;
                return limits ? Network::load_json(path, *limits) : Network::load_json(path);
            },
            py::arg("path"), py::arg("limits") = py::none(),
            "Read a model file; errors name the file and JSON path.")
        .def("to_json_string", &Network::to_json_string, "The model as a JSON text.")
        .def_static("from_json_string", &Network::from_json_string, py::arg("text"), py::arg("origin") = "<string>",
                    "A model from a JSON text.")
        .def("__copy__", [](const Network& n) { return Network(n); })
        .def(
            "__deepcopy__", [](const Network& n, const py::dict&) { return Network(n); }, py::arg("memo"))
        .def(py::pickle([](const Network& n) { return n.to_json_string(); },
                        [](const std::string& text) { return Network::from_json_string(text, "<pickle>"); }))
        .def("__repr__", [](const Network& n) {
            std::string s = "Network(";
            for (std::size_t i = 0; i < n.layers().size(); ++i)
                s += (i ? " -> " : std::to_string(n.input_size()) + " -> ") +
                     std::to_string(n.layers()[i].outputs) + " " + std::string(to_string(n.layers()[i].activation));
            return s + ", " + std::to_string(n.parameter_count()) + " parameters)";
        });
    m.def(
        "save",
        [](const Network& n, const std::filesystem::path& path) {
            const SharedObjectLock lock(&n);
            n.save_json(path);
        },
        py::arg("network"), py::arg("path"), "Network.save_json(path).");
    m.def(
        "load",
        [](const std::filesystem::path& path) {
            py::gil_scoped_release release;
            return Network::load_json(path);
        },
        py::arg("path"), "Network.load_json(path).");

    py::class_<PinnedRows>(
        m, "PinnedRows",
        "Rows (a brain.Matrix or a float32 array) page-locked for a backend's transfers (Predictor.pin); a context "
        "manager that unpins on exit.")
        .def_property_readonly("pinned", &PinnedRows::pinned)
        .def("release", &PinnedRows::release)
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](PinnedRows& pin, const py::args&) { pin.release(); });

    py::class_<Predictor>(m, "Predictor",
                          "A network's weights held on a backend; predict() streams rows through it in batches. "
                          "Use as a context manager to release the backend's resources promptly.")
        .def(py::init([](const Network& n, const TrainingBackend& backend, std::size_t max_batch_rows) {
                 const SharedObjectLock lock(&n);
                 return std::make_unique<Predictor>(n, backend, max_batch_rows);
             }),
             py::arg("network"), py::arg("backend"), py::arg("max_batch_rows") = 0)
        .def(
            "predict",
            [](Predictor& p, const py::handle& inputs) {
                const MatrixArg x(inputs, "inputs", false);
                Matrix out;
                {
                    py::gil_scoped_release release;
                    out = p.predict(x.get());
                }
                return to_array(std::move(out));
            },
            py::arg("inputs"))
        .def(
            "pin",
            [](Predictor& p, const py::handle& rows) {
                const MatrixArg x(rows, "rows", false);
                // Pinning a conversion would pin memory that is freed on return, and predict(rows) would not
                // read it: only memory the caller holds can be pinned.
                if (!x.in_place())
                    throw Error(
                        ErrorCode::InvalidArgument,
                        "Predictor.pin: rows must be a brain.Matrix or a C-contiguous float32 array, found " +
                            std::string(py::str(py::type::of(rows))) +
                            " that would need a converted copy; pin numpy.ascontiguousarray(rows, "
                            "dtype=numpy.float32) and pass that same array to predict");
                py::gil_scoped_release release;
                return p.pin(x.get());
            },
            py::arg("rows"), py::keep_alive<0, 2>(),
            "Page-lock a brain.Matrix's or a C-contiguous float32 array's rows so that predict(rows) hands them to "
            "the device without a host copy.")
        .def_property_readonly("batch_rows", &Predictor::batch_rows)
        .def_property_readonly("backend", &Predictor::backend)
        .def("close", &Predictor::close)
        .def_property_readonly("is_open", &Predictor::is_open)
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](Predictor& p, const py::args&) { p.close(); });
}

} // namespace brain::python
