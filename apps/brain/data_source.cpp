#include "data_source.hpp"

#include "app_support.hpp"

#include <cstdio>
#include <iostream>
#include <unistd.h>

namespace brain::app {

std::vector<std::filesystem::path> DataSource::files() const {
    std::vector<std::filesystem::path> out;
    for (const auto* f : {&csv, &npz, &npy_features, &npy_targets})
        if (!f->empty()) out.emplace_back(*f);
    return out;
}

std::string DataSource::name() const {
    return !csv.empty() ? csv : !npz.empty() ? npz : npy_features;
}

void add_data_source_options(CLI::App& cmd, DataSource& source, bool targets, const std::string& csv_help) {
    cmd.add_option("--csv", source.csv, csv_help);
    cmd.add_option("--npz", source.npz,
                   targets ? "or: a NumPy .npz archive with arrays 'features' and 'targets' (what `brain convert` "
                             "writes; names and class labels are kept), or 'features' only with --target naming "
                             "its target columns"
                           : "or: a NumPy .npz archive; its 'features' array (and 'feature_names', matched to the "
                             "model's features when present) holds the rows");
    cmd.add_option("--npy-features", source.npy_features,
                   targets ? "or: a NumPy .npy file of feature rows (rows x features), with --npy-targets"
                           : "or: a NumPy .npy file of feature rows (rows x the model's inputs, in its order)");
    if (targets)
        cmd.add_option("--npy-targets", source.npy_targets,
                       "with --npy-features: a NumPy .npy file of target rows (rows x outputs)");
}

void check_data_source(const DataSource& source, bool targets, const std::vector<std::string>& target_columns) {
    // Usage errors, with the exit statuses of CLI11's own checks (docs/cli.md, "Exit status").
    const int given = !source.csv.empty() + !source.npz.empty() + !source.npy_features.empty();
    if (given == 0) throw CLI::RequiredError("--csv (or --npz, or --npy-features)");
    if (given > 1)
        throw CLI::ExcludesError(!source.csv.empty() ? "--csv" : "--npz",
                                 !source.npy_features.empty() ? "--npy-features" : "--npz");
    if (!targets) return;
    if (!source.npy_features.empty() && source.npy_targets.empty())
        throw CLI::RequiresError("--npy-features", "--npy-targets");
    if (source.npy_features.empty() && !source.npy_targets.empty())
        throw CLI::RequiresError("--npy-targets", "--npy-features");
    if (!source.csv.empty() && target_columns.empty()) throw CLI::RequiredError("--target");
    if (!source.npy_features.empty() && !target_columns.empty())
        throw CLI::ExcludesError("--target", "--npy-features");
}

Dataset load_data_source(const DataSource& source, const std::vector<std::string>& target_columns,
                         const InputLimits& limits, const std::string& class_column) {
    if (!source.csv.empty()) {
        LoadProgressLine line(source.csv);
        CsvOptions options;
        options.target_columns = target_columns;
        if (!class_column.empty()) options.class_columns = {class_column};
        options.limits = limits;
        options.progress = line.callback();
        Dataset data = Dataset::from_csv(source.csv, options);
        line.finish();
        return data;
    }
    NpyOptions options;
    options.limits = limits;
    if (!source.npz.empty()) {
        options.target_columns = target_columns;
        return Dataset::from_npz(source.npz, options);
    }
    return Dataset::from_npy(source.npy_features, source.npy_targets, options);
}

LoadProgressLine::LoadProgressLine(std::string file, double after_s)
    : m_file(std::move(file)), m_after_s(after_s), m_interactive(::isatty(STDERR_FILENO) == 1) {}

LoadProgressLine::~LoadProgressLine() {
    finish();
}

std::function<void(const LoadProgress&)> LoadProgressLine::callback() {
    return [this](const LoadProgress& p) { update(p); };
}

void LoadProgressLine::update(const LoadProgress& p) {
    if (p.seconds < m_after_s) return;
    // A log (not a terminal) gets a line every 5 s rather than a redraw every quarter second.
    if (!m_interactive && p.seconds - m_last_print < 5.0) return;
    m_last_print = p.seconds;
    const double mb = 1e6;
    char text[256];
    int n = std::snprintf(text, sizeof text, "reading %s: %.0f MB", printable(m_file).c_str(),
                          static_cast<double>(p.bytes_done) / mb);
    if (p.bytes_total > 0 && n > 0 && n < static_cast<int>(sizeof text))
        n += std::snprintf(text + n, sizeof text - static_cast<std::size_t>(n), " of %.0f MB (%.0f%%)",
                           static_cast<double>(p.bytes_total) / mb,
                           100.0 * static_cast<double>(p.bytes_done) / static_cast<double>(p.bytes_total));
    if (n > 0 && n < static_cast<int>(sizeof text))
        std::snprintf(text + n, sizeof text - static_cast<std::size_t>(n), ", %.0f MB/s, %.0f rows/s, %.1fs",
                      static_cast<double>(p.bytes_done) / mb / p.seconds,
                      static_cast<double>(p.rows_done) / p.seconds, p.seconds);
    if (m_interactive) {
        std::cerr << "\r" << text << "    " << std::flush;
        m_line_open = true;
    } else {
        std::cerr << text << "\n" << std::flush;
    }
}

void LoadProgressLine::finish() {
    if (m_line_open) std::cerr << "\n" << std::flush;
    m_line_open = false;
}

} // namespace brain::app
