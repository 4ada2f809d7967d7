// Where `brain train`, `brain predict` and `brain convert` read their rows: a CSV file, a NumPy .npz archive or a
// pair of .npy files, and the progress line of a long load.
#pragma once

#include <CLI/CLI.hpp>
#include <brain/brain.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace brain::app {

// One of --csv FILE, --npz FILE or --npy-features X.npy (with --npy-targets Y.npy for training).
struct DataSource {
    std::string csv;
    std::string npz;
    std::string npy_features;
    std::string npy_targets;

    // The files named (for the output-path checks and messages).
    std::vector<std::filesystem::path> files() const;
    // The one file that names the source in messages ("data.csv", "X.npy").
    std::string name() const;
    bool is_csv() const noexcept { return !csv.empty(); }
};

// Registers --csv, --npz, --npy-features and (when `targets`) --npy-targets on `cmd`, with `csv_help` for --csv.
void add_data_source_options(CLI::App& cmd, DataSource& source, bool targets, const std::string& csv_help);

// A usage error (CLI11's RequiredError, ExcludesError or RequiresError: exit 106-108) unless exactly one source is
// given and, when `targets`, --npy-features comes with --npy-targets and a CSV file with `target_columns`.
void check_data_source(const DataSource& source, bool targets, const std::vector<std::string>& target_columns);

// The data set of `source`, parsed on every core (CSV) or read as it lies (.npy, .npz), with a progress line on
// standard error for a CSV load that lasts more than two seconds.
Dataset load_data_source(const DataSource& source, const std::vector<std::string>& target_columns,
                         const InputLimits& limits, const std::string& class_column = {});

// A CsvOptions::progress that draws "reading FILE: 120 MB of 190 MB, 62%, 95 MB/s, 510k rows/s" on standard error
// once the load has taken `after_s` seconds: redrawn in place on a terminal, one line every 5 s otherwise. The line
// is ended when the returned object's finish() runs (or it is destroyed).
class LoadProgressLine {
public:
    LoadProgressLine(std::string file, double after_s = 2.0);
    ~LoadProgressLine();
    LoadProgressLine(const LoadProgressLine&) = delete;
    LoadProgressLine& operator=(const LoadProgressLine&) = delete;
    // The callback for CsvOptions::progress (valid while this object lives).
    std::function<void(const LoadProgress&)> callback();
    void finish();

private:
    void update(const LoadProgress& p);

    std::string m_file;
    double m_after_s;
    bool m_interactive;
    bool m_line_open = false;
    double m_last_print = -1e9;
};

} // namespace brain::app
