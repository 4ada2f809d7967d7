// brain::Dataset and brain::Standardization: validation, splitting and standardisation (CSV loading is
// dataset_csv.cpp, NumPy files dataset_npy.cpp). Every data error names where the bad value is (row/column, or file:line and column).
#include "host_memory.hpp"
#include "interop_common.hpp"

#include <algorithm>
#include <brain/dataset.hpp>
#include <brain/error.hpp>
#include <brain/random.hpp>
#include <cmath>

namespace brain {

namespace {

// Stream id separating split shuffles from weight initialisation for the same seed.
constexpr std::uint64_t kSplitStream = 2;

std::vector<std::string> default_names(const char* prefix, std::size_t n) {
    std::vector<std::string> names;
    names.reserve(n);
    for (std::size_t i = 0; i < n; ++i) names.push_back(prefix + std::to_string(i));
    return names;
}

void check_finite(const Matrix& m, const char* what) {
    for (std::size_t r = 0; r < m.rows(); ++r)
        for (std::size_t c = 0; c < m.cols(); ++c) {
            const float v = m(r, c);
            BRAIN_CHECK(std::isfinite(v), ErrorCode::InvalidData, "Dataset: ", what, " row ", r, ", column ", c,
                        " is ", v, "; every value must be finite (remove or impute missing/invalid values)");
        }
}

} // namespace

void Standardization::apply(Matrix& x) const {
    (void)MatrixView(x); // the storage holds rows * cols values
    BRAIN_CHECK_ARG(mean.size() == x.cols() && stddev.size() == x.cols(), "Standardization: expected ", mean.size(),
                    " feature columns (mean) and ", stddev.size(), " (stddev), found ", x.cols(),
                    " columns in the input");
    for (std::size_t r = 0; r < x.rows(); ++r) {
        auto row = x.row(r);
        for (std::size_t c = 0; c < row.size(); ++c) row[c] = (row[c] - mean[c]) / stddev[c];
    }
}

Dataset::Dataset(Matrix features, Matrix targets) : m_features(std::move(features)), m_targets(std::move(targets)) {
    (void)MatrixView(m_features); // each storage holds rows * cols values
    (void)MatrixView(m_targets);
    BRAIN_CHECK_ARG(m_features.rows() == m_targets.rows(), "Dataset: features have ", m_features.rows(),
                    " rows but targets have ", m_targets.rows(), "; give one target row per feature row");
    BRAIN_CHECK_ARG(m_features.rows() > 0, "Dataset: no rows; a data set needs at least one row");
    BRAIN_CHECK_ARG(m_features.cols() > 0, "Dataset: features have no columns; at least one is needed");
    BRAIN_CHECK_ARG(m_targets.cols() > 0, "Dataset: targets have no columns; at least one is needed");
    check_finite(m_features, "features");
    check_finite(m_targets, "targets");
    m_feature_names = default_names("x", m_features.cols());
    m_target_names = default_names("y", m_targets.cols());
}

void Dataset::set_names(std::vector<std::string> feature_names, std::vector<std::string> target_names) {
    BRAIN_CHECK_ARG(feature_names.size() == input_width(), "Dataset::set_names: expected ", input_width(),
                    " feature names (one per feature column), found ", feature_names.size());
    BRAIN_CHECK_ARG(target_names.size() == target_width(), "Dataset::set_names: expected ", target_width(),
                    " target names (one per target column), found ", target_names.size());
    m_feature_names = std::move(feature_names);
    m_target_names = std::move(target_names);
}

void Dataset::set_class_labels(std::vector<std::string> labels) {
    // A single sigmoid target may carry two labels: (negative, positive).
    const bool ok =
        labels.empty() || labels.size() == target_width() || (target_width() == 1 && labels.size() == 2);
    BRAIN_CHECK_ARG(ok, "Dataset::set_class_labels: expected ", detail::count_of(target_width(), "label"),
                    " (one per target column", target_width() == 1 ? ", or 2 for a 0/1 target" : "", "), found ",
                    labels.size());
    m_class_labels = std::move(labels);
}

void Dataset::set_standardization(std::optional<Standardization> s) {
    if (s) {
        BRAIN_CHECK_ARG(s->mean.size() == input_width() && s->stddev.size() == input_width(),
                        "Dataset::set_standardization: expected ", detail::count_of(input_width(), "mean"), " and ",
                        detail::count_of(input_width(), "deviation"), " (one per feature column), found ",
                        s->mean.size(), " and ", s->stddev.size());
        for (std::size_t c = 0; c < s->mean.size(); ++c) {
            BRAIN_CHECK_ARG(std::isfinite(s->mean[c]), "Dataset::set_standardization: the mean of column ", c,
                            " is ", s->mean[c], "; expected a finite number");
            // Inputs are divided by it: zero, subnormal, negative or infinite deviations give infinities or NaN.
            BRAIN_CHECK_ARG(std::isnormal(s->stddev[c]) && s->stddev[c] > 0.0f,
                            "Dataset::set_standardization: the standard deviation of column ", c, " is ",
                            s->stddev[c], "; expected a positive normal float32 (at least 1.17549435e-38)");
        }
    }
    m_standardization = std::move(s);
}

Dataset& Dataset::standardize() {
    BRAIN_CHECK(size() > 0, ErrorCode::InvalidState, "Dataset::standardize: the data set is empty");
    const std::size_t n = size(), k = input_width();
    Standardization s;
    s.mean.assign(k, 0.0f);
    s.stddev.assign(k, 1.0f);
    for (std::size_t c = 0; c < k; ++c) {
        double sum = 0.0;
        float lo = m_features(0, c), hi = lo;
        for (std::size_t r = 0; r < n; ++r) {
            const float v = m_features(r, c);
            sum += v;
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
        if (lo == hi) {
            // Constant column: exact mean and unit scale map it to 0 instead of dividing by ~0.
            s.mean[c] = lo;
            continue;
        }
        const double mean = sum / static_cast<double>(n);
        double sq = 0.0;
        for (std::size_t r = 0; r < n; ++r) {
            const double d = m_features(r, c) - mean;
            sq += d * d;
        }
        const float sd = static_cast<float>(std::sqrt(sq / static_cast<double>(n)));
        s.mean[c] = static_cast<float>(mean);
        // A deviation that is zero, subnormal or infinite would turn inputs into infinities: unit scale instead.
        s.stddev[c] = std::isnormal(sd) ? sd : 1.0f;
    }
    m_standardization = std::move(s);
    return *this;
}

Dataset Dataset::slice(std::size_t begin, std::size_t end) const {
    BRAIN_CHECK_ARG(begin <= end && end <= size(), "Dataset::slice: rows [", begin, ", ", end,
                    ") are not within the data set's ", size(), " rows");
    Dataset out;
    const std::size_t rows = end - begin;
    out.m_features =
        Matrix(rows, input_width(),
               std::vector<float>(m_features.data().begin() + static_cast<std::ptrdiff_t>(begin * input_width()),
                                  m_features.data().begin() + static_cast<std::ptrdiff_t>(end * input_width())));
    out.m_targets =
        Matrix(rows, target_width(),
               std::vector<float>(m_targets.data().begin() + static_cast<std::ptrdiff_t>(begin * target_width()),
                                  m_targets.data().begin() + static_cast<std::ptrdiff_t>(end * target_width())));
    out.m_feature_names = m_feature_names;
    out.m_target_names = m_target_names;
    out.m_class_labels = m_class_labels;
    out.m_standardization = m_standardization;
    return out;
}

std::pair<Dataset, Dataset> Dataset::split(double validation_fraction, std::uint64_t seed) const {
    BRAIN_CHECK_ARG(validation_fraction >= 0.0 && validation_fraction < 1.0, "Dataset::split: validation_fraction ",
                    validation_fraction, " is not in [0, 1); use e.g. 0.2 for a 20% validation set");
    BRAIN_CHECK(size() > 0, ErrorCode::InvalidState, "Dataset::split: the data set is empty");
    const std::size_t n = size();
    // floor, nudged so that 0.29 * 100 gives 29 despite binary rounding; always < n since fraction < 1.
    auto n_val = static_cast<std::size_t>(std::floor(validation_fraction * static_cast<double>(n) + 1e-9));
    n_val = std::min(n_val, n - 1);

    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = i;
    Random rng(seed, kSplitStream);
    rng.shuffle(order);

    auto gather = [this, &order](std::size_t from, std::size_t to) {
        Dataset out;
        const std::size_t rows = to - from, in = input_width(), tw = target_width();
        std::vector<float> f(rows * in), t(rows * tw);
        for (std::size_t i = 0; i < rows; ++i) {
            const std::size_t src = order[from + i];
            std::copy_n(m_features.data().begin() + static_cast<std::ptrdiff_t>(src * in), in,
                        f.begin() + static_cast<std::ptrdiff_t>(i * in));
            std::copy_n(m_targets.data().begin() + static_cast<std::ptrdiff_t>(src * tw), tw,
                        t.begin() + static_cast<std::ptrdiff_t>(i * tw));
        }
        out.m_features = Matrix(rows, in, std::move(f));
        out.m_targets = Matrix(rows, tw, std::move(t));
        out.m_feature_names = m_feature_names;
        out.m_target_names = m_target_names;
        out.m_class_labels = m_class_labels;
        out.m_standardization = m_standardization;
        return out;
    };
    return {gather(0, n - n_val), gather(n - n_val, n)};
}

} // namespace brain
