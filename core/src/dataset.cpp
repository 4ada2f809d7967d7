// brain::Dataset and brain::Standardization: validation, CSV loading (with one-hot class columns), splitting
// and standardisation. Every data error names where the bad value is (row/column, or file:line and column).
#include "host_memory.hpp"

#include <algorithm>
#include <brain/csv_table.hpp>
#include <brain/dataset.hpp>
#include <brain/error.hpp>
#include <brain/random.hpp>
#include <cmath>
#include <map>
#include <set>

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

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (std::size_t i = 0; i < names.size() && i < 12; ++i) out += (i ? ", " : "") + quote_excerpt(names[i], 40);
    if (names.size() > 12) out += ", ... (" + std::to_string(names.size()) + " in all)";
    return out;
}

} // namespace

void Standardization::apply(Matrix& x) const {
    BRAIN_CHECK_ARG(mean.size() == x.cols() && stddev.size() == x.cols(), "Standardization: expected ", mean.size(),
                    " feature columns (mean) and ", stddev.size(), " (stddev), found ", x.cols(),
                    " columns in the input");
    for (std::size_t r = 0; r < x.rows(); ++r) {
        auto row = x.row(r);
        for (std::size_t c = 0; c < row.size(); ++c) row[c] = (row[c] - mean[c]) / stddev[c];
    }
}

Dataset::Dataset(Matrix features, Matrix targets) : m_features(std::move(features)), m_targets(std::move(targets)) {
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
    BRAIN_CHECK_ARG(ok, "Dataset::set_class_labels: expected ", target_width(), " labels (one per target column",
                    target_width() == 1 ? ", or 2 for a 0/1 target" : "", "), found ", labels.size());
    m_class_labels = std::move(labels);
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

Dataset Dataset::from_csv(const std::filesystem::path& path, const CsvOptions& options) {
    const std::string file = path.string();
    BRAIN_CHECK_ARG(!options.target_columns.empty(), "Dataset::from_csv('", file,
                    "'): no target columns given; name at least one column of the header as the target");
    const CsvTable table = CsvTable::read(path, options.delimiter, options.limits);
    const auto& header = table.header();
    const std::size_t width = header.size();
    const std::size_t rows = table.rows();

    // Resolve the target columns by name (the reader has made header names unique).
    std::vector<std::size_t> target_index;
    std::set<std::size_t> is_target;
    for (const auto& name : options.target_columns) {
        const auto hit = table.column_index(name);
        BRAIN_CHECK_ARG(hit.has_value(), "Dataset::from_csv: target column ", quote_excerpt(name),
                        " is not in the header of '", file, "'; available columns: ", join(header));
        BRAIN_CHECK_ARG(is_target.insert(*hit).second, "Dataset::from_csv: target column ", quote_excerpt(name),
                        " is listed twice in the options; list each target column once");
        target_index.push_back(*hit);
    }
    std::vector<std::size_t> feature_index;
    for (std::size_t c = 0; c < width; ++c)
        if (!is_target.count(c)) feature_index.push_back(c);
    BRAIN_CHECK_ARG(!feature_index.empty(), "Dataset::from_csv('", file,
                    "'): every column is a target, so there are no feature columns left");

    for (const auto& name : options.class_columns)
        BRAIN_CHECK_ARG(std::find(options.target_columns.begin(), options.target_columns.end(), name) !=
                            options.target_columns.end(),
                        "Dataset::from_csv: class column ", quote_excerpt(name),
                        " is not one of the target columns; name it as a target too");
    // Targets: a column whose cells are all numbers is numeric (unless named a class column); any other text makes
    // it a class-label column.
    struct TargetColumn {
        std::size_t index;
        bool labels;
        std::map<std::string_view, std::size_t> classes; // cell text -> class position
        bool numeric = true;                             // every cell is a number
        std::vector<std::string_view> names;             // the classes in position order
    };
    std::vector<TargetColumn> targets;
    for (const std::size_t c : target_index) {
        TargetColumn col{c, false, {}, true, {}};
        col.labels = std::find(options.class_columns.begin(), options.class_columns.end(), header[c]) !=
                     options.class_columns.end();
        for (std::size_t r = 0; r < rows; ++r) {
            const CsvNumber number = parse_csv_number(table.cell(r, c));
            if (number.kind == CsvCellKind::Empty) table.fail_cell(r, c, number, "a target");
            if (number.kind != CsvCellKind::Number) col.numeric = false;
            if (number.kind == CsvCellKind::NotNumeric) col.labels = true;
        }
        if (col.labels) {
            // A class column of numbers: one class per value, in numeric order, named by the value's first cell.
            std::map<float, std::string_view> by_value;
            // Bounded as it grows: one output unit per class, so a column of unique strings must stop here.
            for (std::size_t r = 0; r < rows; ++r) {
                if (col.numeric) {
                    const float value = parse_csv_number(table.cell(r, c)).value;
                    const auto [at, fresh] = by_value.emplace(value == 0.0f ? 0.0f : value, table.cell(r, c));
                    if (fresh) col.classes.emplace(at->second, 0);
                } else {
                    col.classes.emplace(table.cell(r, c), 0);
                }
                if (col.classes.size() > options.limits.max_classes)
                    BRAIN_THROW(ErrorCode::InvalidData, file, ":", table.line_of(r), ": target ",
                                table.column_label(c), " holds more than ", options.limits.max_classes,
                                " distinct class labels, the limit (one output unit per class); check that it is "
                                "the column you meant, or raise the limit (the brain command's --max-classes, "
                                "InputLimits::max_classes)");
            }
            if (col.classes.size() < 2)
                BRAIN_THROW(ErrorCode::InvalidData, file, ": target ", table.column_label(c),
                            " holds only one class, ", quote_excerpt(col.classes.begin()->first), ", in its ", rows,
                            " rows; a classifier needs at least two classes: check the file or choose another "
                            "target column");
            if (col.numeric) {
                std::map<float, std::size_t> position;
                for (const auto& [value, label] : by_value) {
                    position.emplace(value, col.names.size());
                    col.names.push_back(label);
                }
                // Every cell finds its class by its text; other texts of a value ("1.0") join its class.
                for (std::size_t r = 0; r < rows; ++r) {
                    const float value = parse_csv_number(table.cell(r, c)).value;
                    col.classes[table.cell(r, c)] = position.at(value == 0.0f ? 0.0f : value);
                }
            } else {
                for (auto& [label, position] : col.classes) {
                    position = col.names.size();
                    col.names.push_back(label);
                }
            }
        }
        targets.push_back(std::move(col));
    }
    const auto label_columns =
        std::count_if(targets.begin(), targets.end(), [](const auto& t) { return t.labels; });
    BRAIN_CHECK_ARG(
        label_columns == 0 || targets.size() == 1, "Dataset::from_csv('", file, "'): target ",
        [&] {
            for (const auto& t : targets)
                if (t.labels) return table.column_label(t.index);
            return std::string();
        }(),
        " holds class labels, which must be the only target column (", targets.size(),
        " were given); train one classifier per label column");

    std::vector<std::string> target_names;
    std::vector<std::string> class_labels;
    std::size_t target_width = 0;
    for (const auto& t : targets) {
        if (t.labels) {
            for (const std::string_view label : t.names) {
                target_names.push_back(header[t.index] + "=" + std::string(label));
                class_labels.emplace_back(label);
            }
            target_width += t.names.size();
        } else {
            target_names.push_back(header[t.index]);
            ++target_width;
        }
    }

    // Both matrices are checked against the memory available before either is allocated.
    const std::uint64_t bytes = detail::saturating_mul(
        detail::saturating_mul(rows, detail::saturating_add(feature_index.size(), target_width)), sizeof(float));
    detail::require_host_memory(bytes,
                                "the data set of " + file + " (" + std::to_string(rows) + " rows of " +
                                    std::to_string(feature_index.size()) + " features and " +
                                    std::to_string(target_width) + " targets)",
                                "use fewer rows, columns or classes, or free memory");
    Matrix features = table.numbers(feature_index, "a feature");
    std::vector<float> target_values(rows * target_width, 0.0f);
    for (std::size_t r = 0; r < rows; ++r) {
        std::size_t offset = 0;
        for (const auto& t : targets) {
            if (t.labels) {
                target_values[r * target_width + offset + t.classes.at(table.cell(r, t.index))] = 1.0f;
                offset += t.names.size();
            } else {
                const CsvNumber number = parse_csv_number(table.cell(r, t.index));
                if (number.kind != CsvCellKind::Number) table.fail_cell(r, t.index, number, "a target");
                target_values[r * target_width + offset] = number.value;
                ++offset;
            }
        }
    }

    Dataset data(std::move(features), Matrix(rows, target_width, std::move(target_values)));
    std::vector<std::string> feature_names;
    for (const std::size_t c : feature_index) feature_names.push_back(header[c]);
    data.m_feature_names = std::move(feature_names);
    data.m_target_names = std::move(target_names);
    data.m_class_labels = std::move(class_labels);
    return data;
}

} // namespace brain
