// Data on disk: NumPy .npy / .npz files (Dataset.from_npy, from_npz, save_npz; load_npy, save_npy and the .npz
// feature files) and StreamingDataset, rows read from .npy files in chunks while they train. File access releases
// the GIL; save_npz and StreamingDataset.read_rows hold the data set's shared lock meanwhile, and the setters take
// the exclusive lock (object_lock.hpp).
#include "bindings.hpp"
#include "object_lock.hpp"

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace brain::python {
namespace {

using Paths = std::vector<std::filesystem::path>;

NpyOptions npy_options(std::vector<std::string> target_columns, const std::optional<InputLimits>& limits) {
    NpyOptions options;
    options.target_columns = std::move(target_columns);
    if (limits) options.limits = *limits;
    return options;
}

} // namespace

void bind_files(py::module_& m) {
    auto dataset = py::reinterpret_borrow<py::class_<Dataset>>(m.attr("Dataset"));
    dataset
        .def_static(
            "from_npy",
            [](const std::filesystem::path& features, const std::filesystem::path& targets,
               std::optional<InputLimits> limits) {
                const NpyOptions options = npy_options({}, limits);
                py::gil_scoped_release release;
                return Dataset::from_npy(features, targets, options);
            },
            py::arg("features"), py::arg("targets"), py::arg("limits") = py::none(),
            "From two NumPy .npy files of the same number of rows (any plain numeric dtype, every value finite).")
        .def_static(
            "from_npz",
            [](const std::filesystem::path& path, std::vector<std::string> target_columns,
               std::optional<InputLimits> limits) {
                const NpyOptions options = npy_options(std::move(target_columns), limits);
                py::gil_scoped_release release;
                return Dataset::from_npz(path, options);
            },
            py::arg("path"), py::arg("target_columns") = std::vector<std::string>{}, py::arg("limits") = py::none(),
            "From a NumPy .npz archive (arrays 'features' and 'targets', optional names and class labels).")
        .def(
            "save_npz",
            [](const Dataset& d, const std::filesystem::path& path, const Paths& inputs) {
                const SharedObjectLock lock(&d);
                d.save_npz(path, inputs);
            },
            py::arg("path"), py::arg("inputs") = Paths{},
            "Write the data set as an .npz archive, whole or not at all.");

    m.def("npz_supported", &npz_supported,
          "True when this build reads and writes .npz archives (built with libzip); without, they raise Error.");
    m.def(
        "load_npy",
        [](const std::filesystem::path& path, std::optional<InputLimits> limits) {
            Matrix out;
            {
                py::gil_scoped_release release;
                out = load_npy(path, limits ? *limits : InputLimits{});
            }
            return to_array(std::move(out));
        },
        py::arg("path"), py::arg("limits") = py::none(), "A .npy file as a float32 (rows x columns) array.");
    m.def(
        "save_npy",
        [](const std::filesystem::path& path, const py::handle& matrix, const Paths& inputs) {
            const MatrixArg x(matrix, "matrix", true);
            py::gil_scoped_release release;
            save_npy(path, x.get(), inputs);
        },
        py::arg("path"), py::arg("matrix"), py::arg("inputs") = Paths{},
        "Write a matrix as a '<f4' C-order .npy file, whole or not at all.");

    py::class_<StreamOptions>(m, "StreamOptions", "How a StreamingDataset reads and shuffles.")
        .def(py::init([](std::uint64_t chunk_rows, std::uint32_t window_chunks, std::optional<InputLimits> limits) {
                 StreamOptions options;
                 options.chunk_rows = chunk_rows;
                 options.window_chunks = window_chunks;
                 if (limits) options.limits = *limits;
                 return options;
             }),
             py::kw_only(), py::arg("chunk_rows") = 8192, py::arg("window_chunks") = 16, py::arg("limits") = py::none())
        .def_readwrite("chunk_rows", &StreamOptions::chunk_rows)
        .def_readwrite("window_chunks", &StreamOptions::window_chunks)
        .def_readwrite("limits", &StreamOptions::limits);

    py::class_<StreamingDataset>(
        m, "StreamingDataset",
        "Feature and target rows that stay on disk (.npy files), read in chunks while they "
        "train; pass it to TrainingSession.")
        .def_static("from_npy", &StreamingDataset::from_npy, py::arg("features"), py::arg("targets"),
                    py::arg("options") = StreamOptions{}, py::call_guard<py::gil_scoped_release>())
        .def_property_readonly("size", &StreamingDataset::size)
        .def("__len__", &StreamingDataset::size)
        .def_property_readonly("input_width", &StreamingDataset::input_width)
        .def_property_readonly("target_width", &StreamingDataset::target_width)
        .def_property_readonly("feature_names", &StreamingDataset::feature_names)
        .def_property_readonly("target_names", &StreamingDataset::target_names)
        .def_property_readonly("options", &StreamingDataset::options)
        .def(
            "standardize",
            [](StreamingDataset& d) -> StreamingDataset& {
                // The pass over the files runs without the GIL on a copy (copies share the open files, which are
                // read with pread); the result is attached as every writer writes, with the GIL and the
                // exclusive lock, so neither a reader without the GIL nor one with it sees it half-attached.
                StreamingDataset pass = d;
                {
                    py::gil_scoped_release release;
                    pass.standardize();
                }
                const ExclusiveObjectLock lock(&d);
                d.set_standardization(pass.standardization());
                return d;
            },
            py::return_value_policy::reference_internal,
            "Per-feature mean and deviation in one pass over the files (the GIL released), attached to the data "
            "set.")
        // A copy, as Dataset's: a reference would dangle once the standardisation is replaced or removed.
        .def_property(
            "standardization", [](const StreamingDataset& d) { return d.standardization(); },
            [](StreamingDataset& d, std::optional<Standardization> s) {
                const ExclusiveObjectLock lock(&d);
                d.set_standardization(std::move(s));
            })
        .def(
            "read_rows",
            [](const StreamingDataset& d, std::uint64_t begin, std::uint64_t end) {
                const SharedObjectLock lock(&d);
                return d.read_rows(begin, end);
            },
            py::arg("begin"), py::arg("end"),
            "Rows [begin, end) in file order as an in-memory Dataset (with the data set's standardisation).")
        .def_property_readonly("buffer_bytes", &StreamingDataset::buffer_bytes);
}

} // namespace brain::python
