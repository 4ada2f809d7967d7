// Matrix, Standardization and Dataset. brain.Matrix exposes its storage through the buffer protocol, so
// numpy.asarray(matrix) is a view (no copy) and filling that view fills the matrix the library reads. A Dataset's
// views are read-only: its values were checked finite when it was built, and save_npz may be reading them without
// the GIL; its setters take its exclusive lock (object_lock.hpp) for the same reason.
#include "bindings.hpp"
#include "object_lock.hpp"

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <string>

namespace brain::python {

void bind_data(py::module_& m) {
    py::class_<Matrix>(m, "Matrix", py::buffer_protocol(),
                       "Dense row-major float32 matrix owned by the library. numpy.asarray(m) views its storage "
                       "without a copy; passing a Matrix to fit, predict or Dataset avoids any conversion.")
        .def(py::init<std::size_t, std::size_t, float>(), py::arg("rows"), py::arg("cols"), py::arg("value") = 0.0f,
             "rows x cols, filled with value.")
        .def(py::init([](const py::handle& array) { return to_matrix(array, "Matrix", false); }), py::arg("array"),
             "A copy of a 2-D array-like (converted once to float32).")
        .def_property_readonly("rows", &Matrix::rows)
        .def_property_readonly("cols", &Matrix::cols)
        .def_property_readonly("shape", [](const Matrix& x) { return py::make_tuple(x.rows(), x.cols()); })
        .def_property_readonly(
            "address", [](const Matrix& x) { return reinterpret_cast<std::uintptr_t>(x.data().data()); },
            "The address of the storage (numpy.asarray(m).ctypes.data is the same).")
        .def("__len__", &Matrix::rows)
        .def("__repr__",
             [](const Matrix& x) {
                 return "Matrix(rows=" + std::to_string(x.rows()) + ", cols=" + std::to_string(x.cols()) + ")";
             })
        .def_buffer([](Matrix& x) {
            return py::buffer_info(x.data().data(), static_cast<py::ssize_t>(sizeof(float)),
                                   py::format_descriptor<float>::format(), 2,
                                   {static_cast<py::ssize_t>(x.rows()), static_cast<py::ssize_t>(x.cols())},
                                   {static_cast<py::ssize_t>(x.cols() * sizeof(float)),
                                    static_cast<py::ssize_t>(sizeof(float))});
        });

    py::class_<Standardization>(m, "Standardization", "Per-feature mean and standard deviation: (x - mean) / std.")
        .def(py::init<>())
        .def_readwrite("mean", &Standardization::mean)
        .def_readwrite("stddev", &Standardization::stddev);

    py::class_<Dataset>(m, "Dataset",
                        "Features (rows x inputs) and targets (rows x outputs) in the user's raw units. Built from "
                        "arrays (copied once into the library) or read from CSV.")
        .def(py::init([](const py::handle& features, const py::handle& targets) {
                 return to_dataset(features, targets, "Dataset");
             }),
             py::arg("features"), py::arg("targets"),
             "From rows and targets (2-D; a 1-D target array is one column). Both must be finite.")
        .def_static(
            "from_csv",
            [](const std::filesystem::path& path, std::vector<std::string> target_columns, char delimiter,
               std::optional<InputLimits> limits) {
                CsvOptions options;
                options.target_columns = std::move(target_columns);
                options.delimiter = delimiter;
                if (limits) options.limits = *limits;
                py::gil_scoped_release release;
                return Dataset::from_csv(path, options);
            },
            py::arg("path"), py::arg("target_columns"), py::arg("delimiter") = ',', py::arg("limits") = py::none(),
            "Read a CSV file; a target column with non-numeric cells is a class label, one-hot encoded.")
        .def_property_readonly(
            "features",
            [](py::object self) {
                const auto& d = self.cast<const Dataset&>();
                return view_array(d.features().data().data(), d.features().rows(), d.features().cols(), self,
                                  false);
            },
            "The feature rows as a read-only NumPy view (no copy) of the data set's storage (its values were "
            "checked finite once; change them through a new Dataset).")
        .def_property_readonly(
            "targets",
            [](py::object self) {
                const auto& d = self.cast<const Dataset&>();
                return view_array(d.targets().data().data(), d.targets().rows(), d.targets().cols(), self, false);
            },
            "The targets as a read-only NumPy view (no copy) of the data set's storage.")
        .def_property_readonly("size", &Dataset::size)
        .def("__len__", &Dataset::size)
        .def_property_readonly("input_width", &Dataset::input_width)
        .def_property_readonly("target_width", &Dataset::target_width)
        .def_property_readonly("feature_names", &Dataset::feature_names)
        .def_property_readonly("target_names", &Dataset::target_names)
        .def_property("class_labels", &Dataset::class_labels,
                      [](Dataset& d, std::vector<std::string> labels) {
                          const ExclusiveObjectLock lock(&d);
                          d.set_class_labels(std::move(labels));
                      })
        .def(
            "set_names",
            [](Dataset& d, std::vector<std::string> feature_names, std::vector<std::string> target_names) {
                const ExclusiveObjectLock lock(&d);
                d.set_names(std::move(feature_names), std::move(target_names));
            },
            py::arg("feature_names"), py::arg("target_names"))
        .def(
            "standardize",
            [](Dataset& d) -> Dataset& {
                const ExclusiveObjectLock lock(&d);
                return d.standardize();
            },
            py::return_value_policy::reference_internal,
            "Compute standardisation parameters from these rows and attach them (the rows stay raw).")
        // A copy: a reference into the data set would dangle once its standardisation is replaced or removed.
        .def_property(
            "standardization", [](const Dataset& d) { return d.standardization(); },
            [](Dataset& d, std::optional<Standardization> s) {
                const ExclusiveObjectLock lock(&d);
                d.set_standardization(std::move(s));
            })
        .def("split", &Dataset::split, py::arg("validation_fraction"), py::arg("seed"),
             "Shuffle (seeded) and split into (train, validation).")
        .def("slice", &Dataset::slice, py::arg("begin"), py::arg("end"), "Rows [begin, end) as a new data set.");

    py::class_<InputLimits>(m, "InputLimits", "Bounds checked while a CSV or model file is read.")
        .def(py::init<>())
        .def_readwrite("max_file_bytes", &InputLimits::max_file_bytes)
        .def_readwrite("max_columns", &InputLimits::max_columns)
        .def_readwrite("max_classes", &InputLimits::max_classes)
        .def_readwrite("max_cell_bytes", &InputLimits::max_cell_bytes);
}

} // namespace brain::python
