// Classification and regression metrics: what Network.evaluate returns beside the loss.
#include "bindings.hpp"

#include <pybind11/stl.h>

#include <string>

namespace brain::python {

void bind_metrics(py::module_& m) {
    py::class_<ClassScores>(m, "ClassScores", "Precision, recall and F1 of one class (or an average), with support.")
        .def_readonly("precision", &ClassScores::precision)
        .def_readonly("recall", &ClassScores::recall)
        .def_readonly("f1", &ClassScores::f1)
        .def_readonly("support", &ClassScores::support);
    py::class_<ClassificationMetrics>(m, "ClassificationMetrics", "A single-label classification's metrics.")
        .def_readonly("labels", &ClassificationMetrics::labels)
        .def_readonly("accuracy", &ClassificationMetrics::accuracy)
        .def_readonly("per_class", &ClassificationMetrics::per_class)
        .def_readonly("macro", &ClassificationMetrics::macro)
        .def_readonly("weighted", &ClassificationMetrics::weighted)
        .def_readonly("confusion", &ClassificationMetrics::confusion, "confusion[true][predicted] row counts")
        .def_readonly("rows", &ClassificationMetrics::rows);
    py::class_<RegressionMetrics>(m, "RegressionMetrics", "RMSE, MAE and R^2 per output of a regression.")
        .def_readonly("names", &RegressionMetrics::names)
        .def_readonly("rmse", &RegressionMetrics::rmse)
        .def_readonly("mae", &RegressionMetrics::mae)
        .def_readonly("r2", &RegressionMetrics::r2)
        .def_readonly("rows", &RegressionMetrics::rows);
    m.def("classification_metrics", &classification_metrics, py::arg("truth"), py::arg("predicted"),
          py::arg("labels"), "The metrics of class predictions against the true classes.");
    m.def(
        "regression_metrics",
        [](const py::handle& truth, const py::handle& predicted, std::vector<std::string> names) {
            const MatrixArg t(truth, "truth", true);
            const MatrixArg p(predicted, "predicted", true);
            py::gil_scoped_release release; // the arrays are held by t and p, read in place
            return regression_metrics(t.get(), p.get(), std::move(names));
        },
        py::arg("truth"), py::arg("predicted"), py::arg("names") = std::vector<std::string>{},
        "The metrics of predicted values against the true ones (same shape).");
    m.def("evaluation_value_names", &evaluation_value_names, "The names Evaluation.value knows.");

    auto evaluation = py::reinterpret_borrow<py::class_<Evaluation>>(m.attr("Evaluation"));
    evaluation.def_readonly("classification", &Evaluation::classification)
        .def_readonly("regression", &Evaluation::regression)
        .def("value", &Evaluation::value, py::arg("name"),
             "A monitored quantity by name ('loss', 'accuracy', 'macro_f1', 'r2', ...); None when absent.");
}

} // namespace brain::python
