// brain::Error as Python exceptions: brain.Error (with .code, a brain.ErrorCode, and .message, the C++ text) and
// one subclass per ErrorCode, named like it. Codes that mean bad input also derive from the built-in type Python
// code expects for them (InvalidArgument and InvalidData: ValueError; IoError: OSError; AllocationFailed:
// MemoryError), so `except ValueError` and scikit-learn's input checks see them as such. A wait on a pipe that
// Ctrl-C ends raises KeyboardInterrupt (or whatever the signal's handler raised), not the IoError the library
// throws for it.
#include "bindings.hpp"

#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace brain::python {
namespace {

// The exception classes by code; created once at import and kept for the life of the interpreter.
std::map<int, PyObject*>& classes() {
    static std::map<int, PyObject*> by_code;
    return by_code;
}

PyObject* builtin_base(ErrorCode code) {
    switch (code) {
    case ErrorCode::InvalidArgument:
    case ErrorCode::InvalidData: return PyExc_ValueError;
    case ErrorCode::IoError: return PyExc_OSError;
    case ErrorCode::AllocationFailed: return PyExc_MemoryError;
    default: return nullptr;
    }
}

// A message as a Python str. Messages quote paths, file contents and plugin text, which need not be UTF-8 (a path
// from os.fsencode, a model file with a stray byte): such bytes appear as \xNN rather than turning the error into
// a UnicodeDecodeError that hides its class and code. Null, with Python's error set, only if decoding failed.
py::object message_text(const char* what) {
    const std::string_view text(what);
    return py::reinterpret_steal<py::object>(
        PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "backslashreplace"));
}

// The exception a signal handler raised while the library waited on a pipe on this thread (interrupt_check),
// raised in place of the IoError that ended the wait.
thread_local std::unique_ptr<py::error_already_set> t_signal_error;

// brain::InterruptCheck: runs Python's signal handlers (the main thread's; elsewhere nothing runs) and ends the
// wait when one raised, keeping its exception.
bool interrupt_check() noexcept {
    try {
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() == 0) return false;
        t_signal_error = std::make_unique<py::error_already_set>();
        return true;
    } catch (...) {
        return false;
    }
}

} // namespace

void bind_errors(py::module_& m) {
    py::enum_<ErrorCode> codes(m, "ErrorCode", "Why an operation failed (equal to the plugin ABI's brain_status).");
    std::size_t count = 0;
    const ErrorCode* all = all_error_codes(&count);
    for (std::size_t i = 0; i < count; ++i) codes.value(std::string(to_string(all[i])).c_str(), all[i]);
    codes.value("MetalFeatureDisabled", ErrorCode::MetalFeatureDisabled);

    PyObject* base = PyErr_NewExceptionWithDoc(
        "brain.Error",
        "The library's error: .code (brain.ErrorCode) says why, .message is the library's exact text.",
        PyExc_Exception, nullptr);
    if (!base) throw py::error_already_set();
    m.attr("Error") = py::handle(base);
    for (std::size_t i = 0; i < count; ++i) {
        const ErrorCode code = all[i];
        const std::string name(to_string(code));
        // Each branch made a py::tuple first: pybind11 3 types make_tuple's result by its arity.
        py::tuple bases = builtin_base(code)
                              ? py::tuple(py::make_tuple(py::handle(base), py::handle(builtin_base(code))))
                              : py::tuple(py::make_tuple(py::handle(base)));
        const std::string qualified = "brain." + name;
        const std::string doc = "brain::Error with code ErrorCode." + name + ".";
        PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc.c_str(), bases.ptr(), nullptr);
        if (!cls) throw py::error_already_set();
        m.attr(name.c_str()) = py::handle(cls);
        classes()[static_cast<int>(code)] = cls;
    }
    // The chapter's name for the Metal backend off Apple systems: the same class as FeatureDisabled.
    m.attr("MetalFeatureDisabled") = m.attr("FeatureDisabled");

    set_interrupt_check(&interrupt_check);
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const Error& e) {
            if (auto signal_error = std::move(t_signal_error); signal_error && e.code() == ErrorCode::IoError) {
                signal_error->restore();
                return;
            }
            const auto found = classes().find(static_cast<int>(e.code()));
            PyObject* cls = found != classes().end() ? found->second : nullptr;
            const py::object text = message_text(e.what());
            if (!text) return; // decoding failed (out of memory): its error stands
            if (!cls) {
                PyErr_SetObject(PyExc_RuntimeError, text.ptr());
                return;
            }
            py::object instance =
                py::reinterpret_steal<py::object>(PyObject_CallFunctionObjArgs(cls, text.ptr(), nullptr));
            if (!instance) return; // the call set its own error
            instance.attr("code") = py::cast(e.code());
            instance.attr("message") = text;
            PyErr_SetObject(cls, instance.ptr());
        }
    });
}

} // namespace brain::python
