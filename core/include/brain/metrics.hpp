// Classification and regression metrics (scikit-learn's classification_report, confusion_matrix, r2_score): what
// Network::evaluate returns beside the loss, and what `brain evaluate` and `brain predict --compare` print.
#pragma once

#include <brain/export.hpp>
#include <brain/matrix.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace brain {

// Precision, recall and F1 of one class (or an average of them). A ratio whose denominator is zero is 0, as
// scikit-learn's zero_division=0.
struct ClassScores {
    double precision = 0.0;
    double recall = 0.0;
    double f1 = 0.0;
    std::uint64_t support = 0; // rows whose true class it is (for an average: every row)
};

// A single-label classification's metrics over n rows and K classes.
struct ClassificationMetrics {
    std::vector<std::string> labels;                   // class k's name (the model's class labels, or "0".."K-1")
    double accuracy = 0.0;                             // rows predicted right / rows
    std::vector<ClassScores> per_class;                // K entries
    ClassScores macro;                                 // unweighted mean over the classes
    ClassScores weighted;                              // mean weighted by support
    std::vector<std::vector<std::uint64_t>> confusion; // K x K: confusion[true][predicted] row counts; empty for
                                                       // more than max_confusion_classes classes
    std::uint64_t rows = 0;
};

// Per output of a regression: root mean squared error, mean absolute error and the coefficient of determination
// R^2 = 1 - SS_res / SS_tot (scikit-learn's r2_score: 1 when SS_tot is 0 and the fit is exact, else 0 then).
struct RegressionMetrics {
    std::vector<std::string> names; // output k's name (target names, or "y0".."y{K-1}")
    std::vector<double> rmse;
    std::vector<double> mae;
    std::vector<double> r2;
    std::uint64_t rows = 0;
};

// The most classes whose K x K confusion matrix the metrics keep (32 MiB of counts); past it, memory stays
// proportional to K.
inline constexpr std::size_t max_confusion_classes = 2048;

// The metrics of class predictions against the true classes (each < labels.size()). InvalidArgument when the
// sizes differ, a class index is out of range, there are no rows or fewer than two labels.
BRAIN_API ClassificationMetrics classification_metrics(const std::vector<std::size_t>& truth,
                                                       const std::vector<std::size_t>& predicted,
                                                       std::vector<std::string> labels);

// The metrics of predicted values against the true ones (same shape, at least one row); `names` may be empty.
BRAIN_API RegressionMetrics regression_metrics(MatrixView truth, MatrixView predicted,
                                               std::vector<std::string> names = {});

// Loss over a data set and, for classifiers, accuracy and the classification metrics; for regressors the
// regression metrics (Network::evaluate).
struct BRAIN_API Evaluation {
    float loss = 0.0f;
    std::optional<float> accuracy;                       // classifiers (sigmoid or softmax output)
    std::optional<ClassificationMetrics> classification; // classifiers with one label per row
    std::optional<RegressionMetrics> regression;         // every other output layer
    // A monitored quantity by its name without the "val_" prefix: "loss", "accuracy", "macro_f1",
    // "weighted_f1", "macro_precision", "macro_recall", "rmse", "mae", "r2" (the last three averaged over the
    // outputs); nullopt when this evaluation has no such value.
    std::optional<double> value(std::string_view name) const;
};

// The names Evaluation::value knows, comma-separated (for messages).
BRAIN_API std::string evaluation_value_names();

} // namespace brain
