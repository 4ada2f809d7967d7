// NumPy files: load_npy / save_npy, and Dataset::from_npy, from_npz and save_npz (npy_format.hpp, npz_archive.hpp).
#include "csv_input.hpp"
#include "csv_targets.hpp"
#include "host_memory.hpp"
#include "interop_common.hpp"
#include "npy_format.hpp"
#include "npz_archive.hpp"

#include <algorithm>
#include <brain/dataset.hpp>
#include <brain/error.hpp>
#include <brain/npy_file.hpp>
#include <brain/safe_file.hpp>
#include <new>

namespace brain {

namespace {

// Room for a rows x columns matrix of `what`, checked first and reserved, not touched: the values are appended
// as they are read, so the memory in use follows the bytes an input really holds, not the shape it claims.
std::vector<float> reserve_matrix(std::uint64_t rows, std::uint64_t columns, const std::string& what) {
    detail::require_host_memory(detail::saturating_mul(detail::saturating_mul(rows, columns), 4),
                                "the " + std::to_string(rows) + " x " + std::to_string(columns) + " matrix of " + what,
                                "use a smaller file, or free memory");
    try {
        std::vector<float> values;
        values.reserve(static_cast<std::size_t>(rows * columns));
        return values;
    } catch (const std::exception&) { // bad_alloc, or length_error past the vector's largest size
        BRAIN_THROW(ErrorCode::AllocationFailed, "not enough host memory for the ", rows, " x ", columns,
                    " matrix of ", what, "; free memory or use a smaller file");
    }
}

[[noreturn]] void not_finite(const std::string& origin, const detail::npy::Header& h, std::uint64_t index,
                             const char* raw) {
    BRAIN_THROW(ErrorCode::InvalidData, origin, ": row ", index / h.columns, ", column ", index % h.columns, " is ",
                detail::npy::value_text(h, raw),
                ", which is not a finite float32 value; NaN, infinity and values beyond +-3.4e38 are not allowed, "
                "remove or impute them");
}

// The array's values as a matrix, converted `step` values at a time from what `read(bytes, into)` delivers.
template <class Read>
Matrix read_matrix(const detail::npy::Header& h, const std::string& origin, Read&& read) {
    if (h.kind == 'U')
        BRAIN_THROW(ErrorCode::InvalidData, origin, ": holds text (dtype ", quote_excerpt(h.descr),
                    ") where numbers were expected");
    std::vector<float> values = reserve_matrix(h.rows, h.columns, origin);
    const std::uint64_t count = h.rows * h.columns;
    constexpr std::uint64_t step = 1 << 18;
    std::string raw;
    for (std::uint64_t done = 0; done < count; done += step) {
        const auto n = static_cast<std::size_t>(std::min(step, count - done));
        const char* src = read(done * h.itemsize, n * h.itemsize, raw);
        values.resize(static_cast<std::size_t>(done) + n); // within the reservation: no copy
        const std::size_t bad = detail::npy::to_float(h, src, n, values.data() + done);
        if (bad != n) not_finite(origin, h, done + bad, src + bad * h.itemsize);
    }
    return Matrix(static_cast<std::size_t>(h.rows), static_cast<std::size_t>(h.columns), std::move(values));
}

Matrix read_member(detail::npz::Member& member) {
    return read_matrix(member.header(), member.origin(), [&](std::uint64_t, std::size_t bytes, std::string& raw) {
        raw.resize(bytes);
        member.read(raw.data(), bytes);
        return static_cast<const char*>(raw.data());
    });
}

// The texts of array `array`, held to the rules a model holds them to when it is saved: valid UTF-8 (read_texts)
// and, when `unique` (feature names, class labels), non-empty and unique, since a CSV header cannot hold others
// and a model would fail to save only after training. Read in steps: memory follows the bytes the member holds,
// not the size its header claims.
std::vector<std::string> read_names(detail::npz::Reader& archive, const std::string& array, bool unique) {
    detail::npz::Member member = archive.open(array);
    const auto& h = member.header();
    constexpr std::uint64_t step = 1 << 20;
    std::string data;
    for (std::uint64_t done = 0; done < h.data_bytes; done += step) {
        const auto n = static_cast<std::size_t>(std::min(step, h.data_bytes - done));
        data.resize(static_cast<std::size_t>(done) + n);
        member.read(data.data() + done, n);
    }
    std::vector<std::string> names = detail::npy::read_texts(h, data, member.origin());
    if (const auto problem = detail::names_problem(names, unique))
        BRAIN_THROW(ErrorCode::InvalidData, member.origin(), ": ", *problem,
                    unique
                        ? "; feature names and class labels must be non-empty and unique (a model keeps them and "
                          "predict finds its columns by them); fix the names in the archive"
                        : "; fix the names in the archive");
    return names;
}

std::vector<std::string> default_names(const char* prefix, std::size_t n) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < n; ++i) names.push_back(prefix + std::to_string(i));
    return names;
}

} // namespace

Matrix load_npy(const std::filesystem::path& path, const InputLimits& limits) {
    const std::string origin = path.string();
    detail::CsvInput input(path, limits, "NumPy file");
    input.read_all();
    const std::string_view bytes = input.text();
    const std::size_t head = detail::npy::header_size(bytes, origin);
    const detail::npy::Header h = detail::npy::parse_header(bytes.substr(0, std::max<std::size_t>(head, 10)), origin, limits);
    const std::uint64_t have = bytes.size() - std::min<std::uint64_t>(bytes.size(), h.data_offset);
    if (have != h.data_bytes)
        BRAIN_THROW(ErrorCode::InvalidData, origin, ": the file holds ", have, " bytes of data, but its shape and dtype (",
                    h.dtype_name(), ") need ", h.data_bytes, "; the file is ",
                    have < h.data_bytes ? "truncated" : "damaged (bytes after the array)");
    Matrix out = read_matrix(h, origin, [&](std::uint64_t offset, std::size_t, std::string&) {
        return bytes.data() + h.data_offset + offset;
    });
    input.release(0, input.size());
    return out;
}

void save_npy(const std::filesystem::path& path, MatrixView matrix,
              const std::vector<std::filesystem::path>& inputs) {
    OutputFile file(path, inputs);
    file.write(detail::npy::float32_header(matrix.rows(), matrix.cols()));
    file.write(std::string_view(reinterpret_cast<const char*>(matrix.data()), matrix.size() * sizeof(float)));
    file.commit();
}

Dataset Dataset::from_npy(const std::filesystem::path& features, const std::filesystem::path& targets,
                          const NpyOptions& options) {
    BRAIN_CHECK_ARG(options.target_columns.empty(), "Dataset::from_npy: target columns name columns of an .npz "
                                                    "archive's features; with .npy files the targets are their own file");
    Matrix x = load_npy(features, options.limits);
    Matrix y = load_npy(targets, options.limits);
    BRAIN_CHECK(x.rows() == y.rows(), ErrorCode::InvalidData, "the features '", features.string(), "' have ", x.rows(),
                " rows but the targets '", targets.string(), "' have ", y.rows(), "; give one target row per feature row");
    BRAIN_CHECK(x.rows() > 0, ErrorCode::InvalidData, "'", features.string(), "' has no rows; a data set needs at least one");
    Dataset data;
    data.m_feature_names = default_names("x", x.cols());
    data.m_target_names = default_names("y", y.cols());
    data.m_features = std::move(x);
    data.m_targets = std::move(y);
    return data;
}

Dataset Dataset::from_npz(const std::filesystem::path& path, const NpyOptions& options) {
    const std::string origin = path.string();
    detail::npz::Reader archive(path, options.limits);
    detail::npz::Member features_member = archive.open("features");
    Matrix x = read_member(features_member);
    BRAIN_CHECK(x.rows() > 0 && x.cols() > 0, ErrorCode::InvalidData, origin,
                ": the array 'features' is empty; a data set needs at least one row and column");
    std::vector<std::string> feature_names =
        archive.has("feature_names") ? read_names(archive, "feature_names", true) : default_names("x", x.cols());
    BRAIN_CHECK(feature_names.size() == x.cols(), ErrorCode::InvalidData, origin, ": 'feature_names' holds ",
                feature_names.size(), " names for the ", x.cols(), " columns of 'features'; the archive is inconsistent");
    Dataset data;
    if (archive.has("targets")) {
        BRAIN_CHECK_ARG(options.target_columns.empty(), "'", origin,
                        "' has a 'targets' array; target columns can be named only for an archive without one");
        detail::npz::Member targets_member = archive.open("targets");
        Matrix y = read_member(targets_member);
        BRAIN_CHECK(y.rows() == x.rows(), ErrorCode::InvalidData, origin, ": 'features' has ", x.rows(),
                    " rows but 'targets' has ", y.rows(), "; give one target row per feature row");
        data.m_target_names =
            archive.has("target_names") ? read_names(archive, "target_names", false) : default_names("y", y.cols());
        BRAIN_CHECK(data.m_target_names.size() == y.cols(), ErrorCode::InvalidData, origin, ": 'target_names' holds ",
                    data.m_target_names.size(), " names for the ", y.cols(), " columns of 'targets'");
        data.m_features = std::move(x);
        data.m_targets = std::move(y);
        data.m_feature_names = std::move(feature_names);
    } else {
        BRAIN_CHECK_ARG(!options.target_columns.empty(), "'", origin, "' has no 'targets' array (it has: ",
                        detail::csv::quoted_names(archive.arrays()),
                        "); name the columns of 'features' to train on as targets (--target), or save the targets "
                        "as an array named 'targets'");
        const auto [target_index, feature_index] =
            detail::csv::split_columns(feature_names, options.target_columns, origin, "Dataset::from_npz");
        Matrix f(x.rows(), feature_index.size()), t(x.rows(), target_index.size());
        for (std::size_t r = 0; r < x.rows(); ++r) {
            for (std::size_t j = 0; j < feature_index.size(); ++j) f(r, j) = x(r, feature_index[j]);
            for (std::size_t j = 0; j < target_index.size(); ++j) t(r, j) = x(r, target_index[j]);
        }
        for (const std::size_t c : feature_index) data.m_feature_names.push_back(feature_names[c]);
        for (const std::size_t c : target_index) data.m_target_names.push_back(feature_names[c]);
        data.m_features = std::move(f);
        data.m_targets = std::move(t);
    }
    if (archive.has("class_labels")) {
        std::vector<std::string> labels = read_names(archive, "class_labels", true);
        const std::size_t columns = data.m_targets.cols();
        BRAIN_CHECK(labels.size() == columns || (columns == 1 && labels.size() == 2), ErrorCode::InvalidData,
                    origin, ": 'class_labels' holds ", detail::count_of(labels.size(), "label"), " for the ",
                    detail::count_of(columns, "column"), " of the targets; expected one label per target column",
                    columns == 1 ? " (or 2 for a single 0/1 column)" : "", "; the archive is inconsistent");
        data.set_class_labels(std::move(labels));
    }
    return data;
}

NpzFeatures load_npz_features(const std::filesystem::path& path, const InputLimits& limits) {
    detail::npz::Reader archive(path, limits);
    detail::npz::Member member = archive.open("features");
    NpzFeatures out;
    out.features = read_member(member);
    if (archive.has("feature_names")) {
        out.names = read_names(archive, "feature_names", true);
        BRAIN_CHECK(out.names.size() == out.features.cols(), ErrorCode::InvalidData, path.string(),
                    ": 'feature_names' holds ", out.names.size(), " names for the ", out.features.cols(),
                    " columns of 'features'; the archive is inconsistent");
    }
    return out;
}

void save_npz_features(const std::filesystem::path& path, const Matrix& features,
                       const std::vector<std::string>& names, const std::vector<std::filesystem::path>& inputs) {
    BRAIN_CHECK_ARG(names.size() == features.cols(), "save_npz_features: ", names.size(), " names for ",
                    features.cols(), " columns; give one name per column");
    detail::npz::Writer writer(path, inputs);
    const std::string header = detail::npy::float32_header(features.rows(), features.cols());
    const auto& data = features.data();
    writer.begin("features.npy", header.size() + data.size() * sizeof(float));
    writer.write(header);
    writer.write(std::string_view(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float)));
    writer.end();
    const std::string array = detail::npy::text_array(names);
    writer.begin("feature_names.npy", array.size());
    writer.write(array);
    writer.end();
    writer.commit();
}

void Dataset::save_npz(const std::filesystem::path& path, const std::vector<std::filesystem::path>& inputs) const {
    // from_npz refuses an archive without rows: one is never written.
    BRAIN_CHECK(size() > 0, ErrorCode::InvalidState,
                "Dataset::save_npz: the data set is empty (it has no rows); "
                "there is nothing to write to ",
                quote_excerpt(path.string()));
    detail::npz::Writer writer(path, inputs);
    const auto matrix = [&](const std::string& name, const Matrix& m) {
        const std::string header = detail::npy::float32_header(m.rows(), m.cols());
        const auto& data = m.data();
        writer.begin(name, header.size() + data.size() * sizeof(float));
        writer.write(header);
        writer.write(std::string_view(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float)));
        writer.end();
    };
    const auto texts = [&](const std::string& name, const std::vector<std::string>& values) {
        const std::string array = detail::npy::text_array(values);
        writer.begin(name, array.size());
        writer.write(array);
        writer.end();
    };
    matrix("features.npy", m_features);
    matrix("targets.npy", m_targets);
    texts("feature_names.npy", m_feature_names);
    texts("target_names.npy", m_target_names);
    if (!m_class_labels.empty()) texts("class_labels.npy", m_class_labels);
    writer.commit();
}

} // namespace brain
