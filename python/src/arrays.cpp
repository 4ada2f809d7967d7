// NumPy <-> brain::Matrix. Arguments that are only read (predict's rows, save_npy's matrix, metrics' values) are
// viewed in place when they are C-contiguous float32 and converted once otherwise; data kept by the library (a
// Dataset, parameters) is copied once into a Matrix, which owns its storage. Data going out is never copied: the
// returned array views the Matrix, which the array keeps alive.
#include "bindings.hpp"

#include <cstring>
#include <memory>
#include <string>

namespace brain::python {

std::string describe(const py::handle& obj) {
    const py::handle type = py::type::of(obj);
    const std::string module = py::str(type.attr("__module__"));
    std::string out = "a " + (module == "builtins" ? std::string() : module + ".") +
                      std::string(py::str(type.attr("__qualname__")));
    if (py::isinstance<py::array>(obj)) out += " of dtype " + std::string(py::str(obj.attr("dtype")));
    return out;
}

namespace {

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

// `obj` as a C-contiguous float32 array: the object itself when it is one (no copy), else one conversion; its
// shape as rows x cols. InvalidArgument naming `what` for anything that is not a 1-D or 2-D array of numbers
// (NumPy's TypeError or ValueError); any other error of the conversion (MemoryError, KeyboardInterrupt, whatever an
// object's __array__ raises) propagates as it is, since it says nothing about the argument's type.
FloatArray float_rows(const py::handle& obj, const char* what, bool vector_is_column, std::size_t& rows,
                      std::size_t& cols) {
    if (obj.is_none())
        throw Error(ErrorCode::InvalidArgument, std::string(what) + " is None; expected a 2-D array of numbers");
    FloatArray array;
    try {
        // The converting constructor, not FloatArray::ensure, which clears every error it meets.
        array = FloatArray(py::reinterpret_borrow<py::object>(obj));
    } catch (py::error_already_set& error) {
        if (!error.matches(PyExc_TypeError) && !error.matches(PyExc_ValueError)) throw;
        throw Error(ErrorCode::InvalidArgument, std::string(what) + ": expected a 2-D array of numbers, found " +
                                                    describe(obj) + " that does not convert to float32 (" +
                                                    std::string(py::str(error.value())) +
                                                    "); pass numbers, e.g. numpy.asarray(x, dtype=numpy.float32)");
    }
    if (array.ndim() == 2) {
        rows = static_cast<std::size_t>(array.shape(0));
        cols = static_cast<std::size_t>(array.shape(1));
    } else if (array.ndim() == 1) {
        const auto n = static_cast<std::size_t>(array.shape(0));
        rows = vector_is_column ? n : 1;
        cols = vector_is_column ? 1 : n;
    } else {
        throw Error(ErrorCode::InvalidArgument, std::string(what) + ": expected a 2-D array (rows x columns), found " +
                                                    std::to_string(array.ndim()) + " dimensions");
    }
    return array;
}

} // namespace

Matrix to_matrix(const py::handle& obj, const char* what, bool vector_is_column) {
    if (py::isinstance<Matrix>(obj)) return obj.cast<Matrix>();
    std::size_t rows = 0;
    std::size_t cols = 0;
    const FloatArray array = float_rows(obj, what, vector_is_column, rows, cols);
    Matrix out(rows, cols);
    if (rows * cols > 0) std::memcpy(out.data().data(), array.data(), rows * cols * sizeof(float));
    return out;
}

MatrixArg::MatrixArg(const py::handle& obj, const char* what, bool vector_is_column) {
    if (py::isinstance<Matrix>(obj)) {
        m_view = obj.cast<const Matrix&>();
        return;
    }
    std::size_t rows = 0;
    std::size_t cols = 0;
    FloatArray array = float_rows(obj, what, vector_is_column, rows, cols);
    m_view = MatrixView(array.data(), rows, cols);
    // An ndarray subclass (numpy.memmap) comes back as a base-class view of the same memory: compare addresses.
    m_in_place = py::isinstance<py::array>(obj) && py::reinterpret_borrow<py::array>(obj).data() == array.data();
    m_array = std::move(array);
}

py::array_t<float> to_array(Matrix&& matrix) {
    auto owned = std::make_unique<Matrix>(std::move(matrix));
    const Matrix* raw = owned.get();
    py::capsule owner(owned.release(), [](void* p) { delete static_cast<Matrix*>(p); });
    return view_array(raw->data().data(), raw->rows(), raw->cols(), owner);
}

py::array_t<float> view_array(const float* data, std::size_t rows, std::size_t cols, const py::handle& owner,
                              bool writeable) {
    const auto r = static_cast<py::ssize_t>(rows);
    const auto c = static_cast<py::ssize_t>(cols);
    const auto item = static_cast<py::ssize_t>(sizeof(float));
    py::array_t<float> out({r, c}, {c * item, item}, data, owner);
    if (!writeable) out.attr("flags").attr("writeable") = false;
    return out;
}

Dataset to_dataset(const py::handle& data, const py::handle& targets, const char* what) {
    if (py::isinstance<Dataset>(data)) {
        if (!targets.is_none())
            throw Error(ErrorCode::InvalidArgument, std::string(what) +
                                                        ": targets were given with a brain.Dataset, which has its own; "
                                                        "pass either a Dataset or (features, targets)");
        return data.cast<Dataset>();
    }
    if (targets.is_none())
        throw Error(ErrorCode::InvalidArgument,
                    std::string(what) + ": features were given without targets; pass fit(x, y) or a brain.Dataset");
    Matrix x = to_matrix(data, "features", false);
    Matrix y = to_matrix(targets, "targets", true);
    return Dataset(std::move(x), std::move(y));
}

} // namespace brain::python
