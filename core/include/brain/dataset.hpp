// brain::Dataset: training rows and targets, loaded from memory or CSV, with splitting and standardisation.
#pragma once

#include <brain/export.hpp>
#include <brain/limits.hpp>
#include <brain/matrix.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace brain {

// Per-feature mean and standard deviation; applied as (x - mean) / std. Saved with a trained model.
struct BRAIN_API Standardization {
    std::vector<float> mean;
    std::vector<float> stddev;
    // x standardised in place (x.cols() must equal mean.size()).
    void apply(Matrix& x) const;
};

// How far a data load has got, for a progress display (CsvOptions::progress).
struct LoadProgress {
    std::uint64_t bytes_done = 0;
    std::uint64_t bytes_total = 0; // 0 when unknown (a pipe)
    std::uint64_t rows_done = 0;
    double seconds = 0.0; // since the load began
};

// Options for Dataset::from_csv (and StreamingDataset::from_csv).
struct CsvOptions {
    std::vector<std::string> target_columns; // by header name; at least one
    char delimiter = ',';
    InputLimits limits; // file size, columns, cell length and classes
    // Target columns read as class labels even when every cell is a number (digits 0-9, codes): one-hot encoded,
    // one output per distinct value. Each must also be in target_columns.
    std::vector<std::string> class_columns{};
    // Called on the loading thread about every quarter second while rows are parsed; empty: no reports.
    std::function<void(const LoadProgress&)> progress;
};

// Options for Dataset::from_npy and Dataset::from_npz.
struct NpyOptions {
    // An .npz archive without a "targets" array: the columns of its "features" array (named by its "feature_names"
    // array) to use as targets. Must be empty when the archive has "targets".
    std::vector<std::string> target_columns;
    InputLimits limits; // each file's size (and each array's, unpacked) and columns
};

// Features (rows x inputs) and targets (rows x outputs), always in the user's raw units. Copyable.
class BRAIN_API Dataset {
public:
    Dataset() = default;
    // From in-memory rows; features.rows() must equal targets.rows() and both must be finite.
    Dataset(Matrix features, Matrix targets);
    // From a CSV file, under CsvTable's rules and limits, parsed on every core straight into the matrices (a
    // regular file is memory-mapped; the peak is the data set plus a few MiB per core). Numeric target columns are
    // used as they are; a target column with any non-numeric cell, or named in class_columns, is a class label,
    // one-hot encoded, with at least two and at most limits.max_classes classes. Text labels are sorted byte-wise; a
    // class column of numbers is sorted by value, cells of equal value ("1", "1.0") being one class named as its
    // first cell reads. Errors name the file, line and column (the first defect in the file); a data set larger than
    // the host memory available is AllocationFailed before it is allocated.
    static Dataset from_csv(const std::filesystem::path& path, const CsvOptions& options);

    // From two NumPy .npy files of the same number of rows (load_npy's rules: any plain numeric dtype, every value
    // finite). Column names are x0.. and y0...
    static Dataset from_npy(const std::filesystem::path& features, const std::filesystem::path& targets,
                            const NpyOptions& options = {});
    // From a NumPy .npz archive (numpy.savez or savez_compressed; what save_npz and `brain convert` write): arrays
    // "features" and "targets", and optionally "feature_names", "target_names" and "class_labels" (1-D string
    // arrays). Errors name the archive, the array and, for a value, its row and column.
    static Dataset from_npz(const std::filesystem::path& path, const NpyOptions& options = {});
    // Writes the data set as an .npz archive (stored, readable by numpy.load and from_npz): features and targets as
    // float32, the names and class labels as string arrays. Through OutputFile: whole or not at all.
    void save_npz(const std::filesystem::path& path, const std::vector<std::filesystem::path>& inputs = {}) const;

    const Matrix& features() const noexcept { return m_features; }
    const Matrix& targets() const noexcept { return m_targets; }
    std::size_t size() const noexcept { return m_features.rows(); }
    std::size_t input_width() const noexcept { return m_features.cols(); }
    std::size_t target_width() const noexcept { return m_targets.cols(); }
    // Feature column names (from the CSV header; "x0".. for in-memory data).
    const std::vector<std::string>& feature_names() const noexcept { return m_feature_names; }
    // Target column names; for a one-hot class column, one entry per class label.
    const std::vector<std::string>& target_names() const noexcept { return m_target_names; }
    // Class labels when the targets are a one-hot encoded class column; empty otherwise.
    const std::vector<std::string>& class_labels() const noexcept { return m_class_labels; }
    void set_names(std::vector<std::string> feature_names, std::vector<std::string> target_names);
    void set_class_labels(std::vector<std::string> labels);

    // Computes standardisation parameters from these rows and attaches them; the rows stay raw. fit() copies
    // them into the network, which applies them in training, predict and evaluate.
    Dataset& standardize();
    const std::optional<Standardization>& standardization() const noexcept { return m_standardization; }
    // Record a standardisation (or none): one finite mean and one positive normal deviation per feature column,
    // else InvalidArgument naming the value.
    void set_standardization(std::optional<Standardization> s);

    // Shuffles (seeded) and splits into (train, validation) with validation_fraction in [0, 1).
    std::pair<Dataset, Dataset> split(double validation_fraction, std::uint64_t seed) const;
    // Rows [begin, end) as a new data set (names, labels and standardisation carried along).
    Dataset slice(std::size_t begin, std::size_t end) const;

private:
    Matrix m_features;
    Matrix m_targets;
    std::vector<std::string> m_feature_names;
    std::vector<std::string> m_target_names;
    std::vector<std::string> m_class_labels;
    std::optional<Standardization> m_standardization;
};

} // namespace brain
