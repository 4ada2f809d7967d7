// brain::Dataset and brain::Standardization: validation, CSV loading (with one-hot class columns), splitting
// and standardisation. Every data error names where the bad value is (row/column, or file:line and column).
#include "csv_reader.hpp"

#include <algorithm>
#include <brain/dataset.hpp>
#include <brain/error.hpp>
#include <brain/random.hpp>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <sstream>

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
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i) out += ", ";
        out += "'" + names[i] + "'";
    }
    return out;
}

// How one CSV cell reads as a number.
enum class CellKind { Number, Empty, NotNumeric, NotFinite };

struct Cell {
    CellKind kind = CellKind::NotNumeric;
    float value = 0.0f;
};

Cell parse_cell(const std::string& text) {
    const char* first = text.data();
    const char* last = text.data() + text.size();
    // Quoted cells keep their blanks (they may be labels); numbers ignore them.
    while (first < last && (*first == ' ' || *first == '\t')) ++first;
    while (last > first && (last[-1] == ' ' || last[-1] == '\t')) --last;
    if (first == last) return {CellKind::Empty, 0.0f};
    // from_chars rejects a leading '+', which spreadsheets do write.
    if (*first == '+' && last - first > 1 && first[1] != '-' && first[1] != '+') ++first;
    float value = 0.0f;
    const auto [ptr, ec] = std::from_chars(first, last, value);
    if (ptr != last || ec == std::errc::invalid_argument) return {CellKind::NotNumeric, 0.0f};
    if (ec == std::errc::result_out_of_range) {
        // Underflow means "tiny": keep strtod's (possibly zero) value; overflow is not representable.
        const std::string copy(first, last);
        const double d = std::strtod(copy.c_str(), nullptr);
        const float f = static_cast<float>(d);
        if (!std::isfinite(f)) return {CellKind::NotFinite, f};
        return {CellKind::Number, f};
    }
    if (!std::isfinite(value)) return {CellKind::NotFinite, value};
    return {CellKind::Number, value};
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
        s.stddev[c] = (sd > 0.0f && std::isfinite(sd)) ? sd : 1.0f;
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
    const auto records = detail::CsvReader::read_file(path, options.delimiter);
    BRAIN_CHECK(!records.empty(), ErrorCode::InvalidData, file,
                ":1: the file is empty; expected a header row naming the columns, then data rows");
    const auto& header = records.front().fields;
    const std::size_t width = header.size();
    BRAIN_CHECK(records.size() > 1, ErrorCode::InvalidData, file, ":", records.front().line,
                ": the file has a header but no data rows");

    // Resolve the target columns by name.
    std::vector<std::size_t> target_index;
    std::set<std::size_t> is_target;
    for (const auto& name : options.target_columns) {
        std::vector<std::size_t> hits;
        for (std::size_t c = 0; c < width; ++c)
            if (header[c] == name) hits.push_back(c);
        BRAIN_CHECK_ARG(!hits.empty(), "Dataset::from_csv: target column '", name, "' is not in the header of '",
                        file, "'; available columns: ", join(header));
        BRAIN_CHECK_ARG(hits.size() == 1, "Dataset::from_csv: target column '", name, "' appears ", hits.size(),
                        " times in the header of '", file, "'; rename the duplicate columns");
        BRAIN_CHECK_ARG(is_target.insert(hits[0]).second, "Dataset::from_csv: target column '", name,
                        "' is listed twice in the options; list each target column once");
        target_index.push_back(hits[0]);
    }
    std::vector<std::size_t> feature_index;
    for (std::size_t c = 0; c < width; ++c)
        if (!is_target.count(c)) feature_index.push_back(c);
    BRAIN_CHECK_ARG(!feature_index.empty(), "Dataset::from_csv('", file,
                    "'): every column is a target, so there are no feature columns left");

    auto column_name = [&](std::size_t c) {
        std::ostringstream s;
        s << "column " << (c + 1) << " '" << header[c] << "'";
        return s.str();
    };

    const std::size_t rows = records.size() - 1;
    for (std::size_t r = 1; r < records.size(); ++r) {
        const auto& rec = records[r];
        BRAIN_CHECK(rec.fields.size() == width, ErrorCode::InvalidData, file, ":", rec.line, ": expected ", width,
                    " fields (as in the header), found ", rec.fields.size(),
                    "; every row needs one value per header column");
    }

    auto bad_cell = [&](const detail::CsvRecord& rec, std::size_t c, const Cell& cell, const char* role) {
        const std::string& text = rec.fields[c];
        switch (cell.kind) {
        case CellKind::Empty:
            BRAIN_THROW(ErrorCode::InvalidData, file, ":", rec.line, ": ", column_name(c), " (", role,
                        ") is empty; fill in or drop rows with missing values");
        case CellKind::NotFinite:
            BRAIN_THROW(ErrorCode::InvalidData, file, ":", rec.line, ": ", column_name(c), " (", role, ") is '",
                        text, "', which is not a finite float32 value; every value must be finite");
        default:
            BRAIN_THROW(ErrorCode::InvalidData, file, ":", rec.line, ": ", column_name(c), " (", role,
                        "): expected a number, found '", text, "'");
        }
    };

    // Features: numeric and finite, always.
    std::vector<float> features(rows * feature_index.size());
    for (std::size_t r = 0; r < rows; ++r) {
        const auto& rec = records[r + 1];
        for (std::size_t j = 0; j < feature_index.size(); ++j) {
            const std::size_t c = feature_index[j];
            const Cell cell = parse_cell(rec.fields[c]);
            if (cell.kind != CellKind::Number) bad_cell(rec, c, cell, "a feature");
            features[r * feature_index.size() + j] = cell.value;
        }
    }

    // Targets: a column whose cells are all numbers is numeric; any other text makes it a class-label column.
    struct TargetColumn {
        std::size_t index;
        bool labels;
        std::vector<std::string> classes; // sorted
    };
    std::vector<TargetColumn> targets;
    for (const std::size_t c : target_index) {
        TargetColumn col{c, false, {}};
        for (std::size_t r = 0; r < rows; ++r) {
            const auto& rec = records[r + 1];
            const Cell cell = parse_cell(rec.fields[c]);
            if (cell.kind == CellKind::Empty) bad_cell(rec, c, cell, "a target");
            if (cell.kind == CellKind::NotNumeric) col.labels = true;
        }
        if (col.labels) {
            std::set<std::string> classes;
            for (std::size_t r = 0; r < rows; ++r) classes.insert(records[r + 1].fields[c]);
            col.classes.assign(classes.begin(), classes.end());
        }
        targets.push_back(std::move(col));
    }
    const auto label_columns =
        std::count_if(targets.begin(), targets.end(), [](const auto& t) { return t.labels; });
    BRAIN_CHECK_ARG(
        label_columns == 0 || targets.size() == 1, "Dataset::from_csv('", file, "'): target ",
        [&] {
            for (const auto& t : targets)
                if (t.labels) return column_name(t.index);
            return std::string();
        }(),
        " holds class labels, which must be the only target column (", targets.size(),
        " were given); train one classifier per label column");

    std::vector<std::string> target_names;
    std::vector<std::string> class_labels;
    std::size_t target_width = 0;
    for (const auto& t : targets) {
        if (t.labels) {
            for (const auto& label : t.classes) target_names.push_back(header[t.index] + "=" + label);
            class_labels = t.classes;
            target_width += t.classes.size();
        } else {
            target_names.push_back(header[t.index]);
            ++target_width;
        }
    }

    std::vector<float> target_values(rows * target_width, 0.0f);
    for (std::size_t r = 0; r < rows; ++r) {
        const auto& rec = records[r + 1];
        std::size_t offset = 0;
        for (const auto& t : targets) {
            if (t.labels) {
                const auto it = std::lower_bound(t.classes.begin(), t.classes.end(), rec.fields[t.index]);
                target_values[r * target_width + offset + static_cast<std::size_t>(it - t.classes.begin())] = 1.0f;
                offset += t.classes.size();
            } else {
                const Cell cell = parse_cell(rec.fields[t.index]);
                if (cell.kind != CellKind::Number) bad_cell(rec, t.index, cell, "a target");
                target_values[r * target_width + offset] = cell.value;
                ++offset;
            }
        }
    }

    Dataset data(Matrix(rows, feature_index.size(), std::move(features)),
                 Matrix(rows, target_width, std::move(target_values)));
    std::vector<std::string> feature_names;
    for (const std::size_t c : feature_index) feature_names.push_back(header[c]);
    data.m_feature_names = std::move(feature_names);
    data.m_target_names = std::move(target_names);
    data.m_class_labels = std::move(class_labels);
    return data;
}

} // namespace brain
