// brain convert: a CSV file (or an .npz archive, or a pair of .npy files) written as a NumPy .npz archive or a pair
// of .npy files, so later runs read the numbers as they lie instead of parsing text.
#include "app_support.hpp"
#include "cli_options.hpp"
#include "commands.hpp"
#include "data_source.hpp"

#include <brain/brain.hpp>
#include <iostream>
#include <memory>

namespace brain::app {

namespace {

struct ConvertOptions {
    std::string input;
    std::vector<std::string> outputs;
    std::vector<std::string> targets;
    InputOptions limits;
};

bool has_suffix(const std::string& path, const std::string& suffix) {
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Every column of the CSV file as numbers, in header order: a data set whose first column is the target puts the
// header back together (features keep their order after it).
std::pair<Matrix, std::vector<std::string>> all_columns(const std::string& csv, const InputLimits& limits) {
    CsvOptions options;
    options.limits = limits;
    options.target_columns = {CsvTable::read_header(csv, ',', limits).front()};
    LoadProgressLine line(csv);
    options.progress = line.callback();
    Dataset data;
    try {
        data = Dataset::from_csv(csv, options);
    } catch (const Error& e) {
        if (e.code() != ErrorCode::InvalidData) throw;
        BRAIN_THROW(ErrorCode::InvalidData, e.what(),
                    " (without --target, brain convert stores every column as numbers: name text columns such as "
                    "class labels with --target)");
    }
    line.finish();
    BRAIN_CHECK(
        data.class_labels().empty(), ErrorCode::InvalidData, csv, ": column ",
        quote_excerpt(options.target_columns.front()),
        " holds text (class labels); name the target column(s) with --target so labels are one-hot encoded");
    Matrix all(data.size(), 1 + data.input_width());
    for (std::size_t r = 0; r < data.size(); ++r) {
        all(r, 0) = data.targets()(r, 0);
        for (std::size_t c = 0; c < data.input_width(); ++c) all(r, c + 1) = data.features()(r, c);
    }
    std::vector<std::string> names = data.target_names();
    names.insert(names.end(), data.feature_names().begin(), data.feature_names().end());
    return {std::move(all), std::move(names)};
}

int run_convert(const ConvertOptions& o) {
    const bool npz_out = o.outputs.size() == 1 && has_suffix(o.outputs[0], ".npz");
    const bool npy_out =
        o.outputs.size() == 2 && has_suffix(o.outputs[0], ".npy") && has_suffix(o.outputs[1], ".npy");
    BRAIN_CHECK_ARG(npz_out || npy_out,
                    "brain convert writes one .npz archive (OUT.npz) or two .npy files "
                    "(FEATURES.npy TARGETS.npy); found ",
                    o.outputs.size(), " output name(s) ending otherwise");
    DataSource source;
    if (has_suffix(o.input, ".npz"))
        source.npz = o.input;
    else
        source.csv = o.input;
    const std::vector<std::filesystem::path> inputs{o.input};
    check_output_paths({o.outputs.begin(), o.outputs.end()}, inputs);
    const InputLimits limits = o.limits.limits();
    if (source.is_csv() && o.targets.empty()) {
        BRAIN_CHECK_ARG(npz_out, "two .npy files hold features and targets apart: name the target column(s) with "
                                 "--target");
        auto [all, names] = all_columns(o.input, limits);
        save_npz_features(o.outputs[0], all, names, inputs);
        std::cout << "wrote " << all.rows() << " rows x " << all.cols() << " columns (array 'features', names in "
                  << "'feature_names') to " << o.outputs[0] << "; train with --npz " << o.outputs[0]
                  << " --target COLUMN\n";
        return exit_ok;
    }
    const Dataset data = load_data_source(source, o.targets, limits);
    // Replaced together (a failure leaves the previous pair, never one file of each), and only once the summary
    // has reached standard output (docs/cli.md, "Output files").
    OutputGroup group;
    if (npz_out) {
        data.save_npz(o.outputs[0], inputs);
        std::cout << "wrote " << data.size() << " rows, " << data.input_width() << " features and "
                  << data.target_width() << " targets to " << o.outputs[0] << "\n";
    } else {
        save_npy(o.outputs[0], data.features(), inputs);
        save_npy(o.outputs[1], data.targets(), inputs);
        std::cout << "wrote " << data.size() << " rows: " << data.input_width() << " features to " << o.outputs[0]
                  << ", " << data.target_width() << " targets to " << o.outputs[1]
                  << " (column names and class labels are kept only in an .npz archive)\n";
    }
    require_standard_output("the output files are left as they were");
    group.commit();
    return exit_ok;
}

} // namespace

void add_convert_command(CLI::App& app, int& exit_code) {
    auto o = std::make_shared<ConvertOptions>();
    auto* cmd = app.add_subcommand(
        "convert", "Convert a CSV file (or an .npz archive) to a NumPy .npz archive or to two .npy files, read "
                   "later without parsing (train/predict --npz or --npy-features). With --target the archive holds "
                   "'features' and 'targets' (class labels one-hot, names and labels kept); without it, every "
                   "column as 'features' with its names, targets chosen at training time. float32, exact: the "
                   "values read back are the values parsed. Whole or not at all.");
    cmd->add_option("input", o->input, "a CSV file with a header row, or an .npz archive")->required();
    cmd->add_option("outputs", o->outputs, "OUT.npz, or FEATURES.npy TARGETS.npy")
        ->required()
        ->expected(1, 2)
        ->check(file_name());
    add_column_list_option(*cmd, "--target", o->targets, "target column(s), as brain train's --target");
    add_input_options(*cmd, o->limits, true);
    cmd->callback([o, &exit_code] { exit_code = run_convert(*o); });
}

} // namespace brain::app
