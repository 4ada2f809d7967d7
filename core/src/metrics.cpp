// Classification and regression metrics, computed in double from counts and sums (scikit-learn's definitions).
#include <brain/error.hpp>
#include <brain/metrics.hpp>
#include <cmath>

namespace brain {

namespace {

double ratio(double numerator, double denominator) {
    return denominator > 0.0 ? numerator / denominator : 0.0;
}

ClassScores scores(std::uint64_t true_positive, std::uint64_t predicted, std::uint64_t actual) {
    ClassScores s;
    s.precision = ratio(static_cast<double>(true_positive), static_cast<double>(predicted));
    s.recall = ratio(static_cast<double>(true_positive), static_cast<double>(actual));
    s.f1 = ratio(2.0 * s.precision * s.recall, s.precision + s.recall);
    s.support = actual;
    return s;
}

double mean(const std::vector<double>& values) {
    double sum = 0.0;
    for (double v : values) sum += v;
    return values.empty() ? 0.0 : sum / static_cast<double>(values.size());
}

} // namespace

ClassificationMetrics classification_metrics(const std::vector<std::size_t>& truth,
                                             const std::vector<std::size_t>& predicted,
                                             std::vector<std::string> labels) {
    const std::size_t k = labels.size();
    BRAIN_CHECK_ARG(k >= 2, "classification metrics need at least two classes; found ", k, " labels");
    BRAIN_CHECK_ARG(truth.size() == predicted.size(), "classification metrics: ", truth.size(),
                    " true classes but ", predicted.size(), " predictions; give one prediction per row");
    BRAIN_CHECK_ARG(!truth.empty(), "classification metrics need at least one row");
    ClassificationMetrics m;
    m.labels = std::move(labels);
    m.rows = truth.size();
    // The scores need only each class's hits, predictions and rows; the K x K matrix is kept while it is small.
    const bool keep_confusion = k <= max_confusion_classes;
    if (keep_confusion) m.confusion.assign(k, std::vector<std::uint64_t>(k, 0));
    std::vector<std::uint64_t> hits(k, 0), predicted_as(k, 0), actual(k, 0);
    std::uint64_t right = 0;
    for (std::size_t r = 0; r < truth.size(); ++r) {
        BRAIN_CHECK_ARG(truth[r] < k && predicted[r] < k, "classification metrics: row ", r, " has true class ",
                        truth[r], " and predicted class ", predicted[r], "; classes are 0 to ", k - 1);
        if (keep_confusion) ++m.confusion[truth[r]][predicted[r]];
        ++predicted_as[predicted[r]];
        ++actual[truth[r]];
        if (truth[r] == predicted[r]) {
            ++hits[truth[r]];
            ++right;
        }
    }
    m.accuracy = static_cast<double>(right) / static_cast<double>(m.rows);
    for (std::size_t c = 0; c < k; ++c) m.per_class.push_back(scores(hits[c], predicted_as[c], actual[c]));
    for (const ClassScores& s : m.per_class) {
        const double weight = static_cast<double>(s.support) / static_cast<double>(m.rows);
        m.macro.precision += s.precision / static_cast<double>(k);
        m.macro.recall += s.recall / static_cast<double>(k);
        m.macro.f1 += s.f1 / static_cast<double>(k);
        m.weighted.precision += s.precision * weight;
        m.weighted.recall += s.recall * weight;
        m.weighted.f1 += s.f1 * weight;
    }
    m.macro.support = m.rows;
    m.weighted.support = m.rows;
    return m;
}

RegressionMetrics regression_metrics(MatrixView truth, MatrixView predicted, std::vector<std::string> names) {
    BRAIN_CHECK_ARG(truth.rows() == predicted.rows() && truth.cols() == predicted.cols(),
                    "regression metrics: the true values are ", truth.rows(), " x ", truth.cols(),
                    " but the predictions are ", predicted.rows(), " x ", predicted.cols(),
                    "; give one prediction per true value");
    BRAIN_CHECK_ARG(truth.rows() > 0 && truth.cols() > 0, "regression metrics need at least one row and output");
    BRAIN_CHECK_ARG(names.empty() || names.size() == truth.cols(), "regression metrics: ", names.size(),
                    " names for ", truth.cols(), " outputs");
    RegressionMetrics m;
    m.rows = truth.rows();
    const std::size_t k = truth.cols();
    const auto n = static_cast<double>(truth.rows());
    for (std::size_t j = 0; j < k; ++j) {
        double mean_truth = 0.0;
        for (std::size_t r = 0; r < truth.rows(); ++r) mean_truth += truth(r, j);
        mean_truth /= n;
        double squared = 0.0, absolute = 0.0, total = 0.0;
        for (std::size_t r = 0; r < truth.rows(); ++r) {
            const double t = truth(r, j);
            const double d = static_cast<double>(predicted(r, j)) - t;
            squared += d * d;
            absolute += std::fabs(d);
            total += (t - mean_truth) * (t - mean_truth);
        }
        m.rmse.push_back(std::sqrt(squared / n));
        m.mae.push_back(absolute / n);
        m.r2.push_back(total > 0.0 ? 1.0 - squared / total : (squared == 0.0 ? 1.0 : 0.0));
        std::string name = "y"; // (GCC 12 misreports "y" + std::to_string under -Wrestrict: bug 105329)
        name += std::to_string(j);
        m.names.push_back(names.empty() ? name : names[j]);
    }
    return m;
}

std::optional<double> Evaluation::value(std::string_view name) const {
    if (name == "loss") return loss;
    if (name == "accuracy") return accuracy ? std::optional<double>(*accuracy) : std::nullopt;
    if (classification) {
        if (name == "macro_f1") return classification->macro.f1;
        if (name == "weighted_f1") return classification->weighted.f1;
        if (name == "macro_precision") return classification->macro.precision;
        if (name == "macro_recall") return classification->macro.recall;
    }
    if (regression) {
        if (name == "rmse") return mean(regression->rmse);
        if (name == "mae") return mean(regression->mae);
        if (name == "r2") return mean(regression->r2);
    }
    return std::nullopt;
}

std::string evaluation_value_names() {
    return "loss, accuracy, macro_f1, weighted_f1, macro_precision, macro_recall (classifiers), rmse, mae, r2 "
           "(regressors)";
}

} // namespace brain
