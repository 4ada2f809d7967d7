// brain predict: apply a saved model to the rows of a CSV file (or a NumPy .npz archive or .npy file). Runs on the
// host (no plugin, no GPU) unless --backend names a backend, whose predictor then computes the outputs
// (brain::Predictor).
#include "app_support.hpp"
#include "cli_options.hpp"
#include "commands.hpp"
#include "data_source.hpp"
#include "metrics_report.hpp"

#include <algorithm>
#include <brain/brain.hpp>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

namespace brain::app {

namespace {

struct PredictOptions {
    std::string model;
    DataSource source;
    std::string out;
    std::string compare;
    InputOptions input;
    std::optional<std::string> backend; // none: the host's Network::predict
    std::optional<std::uint64_t> budget_mib;
    std::optional<std::string> precision; // --precision, given or not (float32 by default)
};

std::string fmt(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

// The label text of class index `k`: the model's class label, or the index for numeric 0/1 targets.
std::string label_of(const Network& network, std::size_t k) {
    const auto& labels = network.class_labels();
    return k < labels.size() ? labels[k] : std::to_string(k);
}

// The rows [begin, end) of x.
Matrix rows_of(const Matrix& x, std::size_t begin, std::size_t end) {
    const auto first = x.data().begin() + static_cast<std::ptrdiff_t>(begin * x.cols());
    return Matrix(end - begin, x.cols(),
                  std::vector<float>(first, first + static_cast<std::ptrdiff_t>((end - begin) * x.cols())));
}

// The network's outputs, on the host or through a predictor on the backend; a row whose output is not finite is an
// error naming its place in the file (`where(row)`: "data.csv:12" or "X.npy: row 11").
Matrix predict_rows(const Network& network, const Matrix& x, const std::function<std::string(std::size_t)>& where,
                    Predictor* predictor) {
    const auto predict = [&](const Matrix& rows) {
        return predictor ? predictor->predict(rows) : network.predict(rows);
    };
    try {
        return predict(x);
    } catch (const Error& e) {
        if (e.code() != ErrorCode::NumericalError) throw;
        // Which row, on this error path only: halve the rows that hold the first bad one until one is left.
        std::size_t begin = 0, end = x.rows();
        while (end - begin > 1) {
            const std::size_t middle = begin + (end - begin) / 2;
            try {
                (void)predict(rows_of(x, begin, middle));
                begin = middle;
            } catch (const Error& half) {
                if (half.code() != ErrorCode::NumericalError) throw;
                end = middle;
            }
        }
        BRAIN_THROW(ErrorCode::NumericalError, where(begin),
                    ": the model's output for this row is not finite (NaN or infinity): its values overflow "
                    "the model's ",
                    predictor ? to_string(predictor->backend().precision()) : "float32",
                    " arithmetic (values near +-3.4e38, or far outside the data the model was trained on); fix or "
                    "remove that row. Nothing was written");
    }
}

// The predicted class of each row (argmax; a single sigmoid output thresholds 0.5, as predict_classes does).
std::vector<std::size_t> classes_of(const Matrix& outputs) {
    std::vector<std::size_t> classes(outputs.rows());
    for (std::size_t r = 0; r < outputs.rows(); ++r) {
        if (outputs.cols() == 1) {
            classes[r] = outputs(r, 0) >= 0.5f ? 1 : 0;
            continue;
        }
        std::size_t best = 0;
        for (std::size_t k = 1; k < outputs.cols(); ++k)
            if (outputs(r, k) > outputs(r, best)) best = k;
        classes[r] = best;
    }
    return classes;
}

// The predictions as CSV, handed to `sink` in pieces of about 1 MiB.
void write_predictions(const Network& network, const Matrix& outputs, const std::vector<std::size_t>& classes,
                       const std::function<void(std::string_view)>& sink, bool with_header = true) {
    std::string text;
    if (!with_header) {
    } else if (network.is_classifier()) {
        text += "label";
        // A single sigmoid output is the probability of class "1" (or of the second label).
        if (outputs.cols() == 1)
            text += "," + csv_escape("p_" + label_of(network, 1));
        else
            for (std::size_t k = 0; k < outputs.cols(); ++k) text += "," + csv_escape("p_" + label_of(network, k));
    } else {
        const auto& names = network.target_names();
        for (std::size_t k = 0; k < outputs.cols(); ++k)
            text += (k ? "," : "") + csv_escape(k < names.size() ? names[k] : str("y", k));
    }
    if (with_header) text += "\n";
    for (std::size_t r = 0; r < outputs.rows(); ++r) {
        if (!classes.empty()) text += csv_escape(label_of(network, classes[r])) + ",";
        for (std::size_t k = 0; k < outputs.cols(); ++k) {
            if (k) text += ',';
            text += fmt(outputs(r, k));
        }
        text += "\n";
        if (text.size() >= (1u << 20)) {
            sink(text);
            text.clear();
        }
    }
    sink(text);
}

// Accuracy over every row (a value that is none of the model's classes counts as wrong), then the metrics of
// the rows whose class the model knows, printed as `brain evaluate` prints them.
void print_accuracy(const Network& network, const CsvTable& table, const std::string& name,
                    const std::vector<std::size_t>& classes) {
    const Truth truth = read_truth(network, table, {name}, true);
    std::vector<std::size_t> want, got;
    for (std::size_t i = 0; i < truth.rows.size(); ++i) {
        const auto row = truth.targets.row(i);
        want.push_back(row.size() == 1
                           ? (row[0] >= 0.5f ? 1 : 0)
                           : static_cast<std::size_t>(std::max_element(row.begin(), row.end()) - row.begin()));
        got.push_back(classes[truth.rows[i]]);
    }
    std::size_t right = 0;
    for (std::size_t i = 0; i < want.size(); ++i) right += want[i] == got[i] ? 1 : 0;
    std::cout << "accuracy against '" << name
              << "': " << fmt(static_cast<double>(right) / static_cast<double>(table.rows())) << " (" << right
              << "/" << table.rows() << ")\n";
    if (!truth.unknown_rows.empty())
        std::cout << truth.unknown_rows.size()
                  << " of the rows hold a value that is none of the model's classes (counted as wrong, and left "
                     "out of the metrics below)\n";
    const std::size_t k = network.output_size() == 1 ? 2 : network.output_size();
    if (want.empty() || (network.output_size() > 1 && network.layers().back().activation != Activation::Softmax))
        return;
    std::vector<std::string> labels = network.class_labels();
    if (labels.size() != k) {
        labels.clear();
        for (std::size_t c = 0; c < k; ++c) labels.push_back(std::to_string(c));
    }
    Evaluation evaluation;
    evaluation.classification = classification_metrics(want, got, std::move(labels));
    std::cout << "\n";
    print_metrics(std::cout, evaluation, false);
}

// The feature rows of an .npz archive or .npy file: an archive's columns matched to the model's features by
// 'feature_names' when it has them, otherwise taken in order (their count must be the model's input size).
Matrix binary_features(const DataSource& source, const Network& network, const std::vector<std::string>& features,
                       const InputLimits& limits) {
    Matrix all;
    std::vector<std::string> names;
    if (!source.npz.empty()) {
        NpzFeatures archive = load_npz_features(source.npz, limits);
        all = std::move(archive.features);
        names = std::move(archive.names);
    } else {
        all = load_npy(source.npy_features, limits);
    }
    BRAIN_CHECK(all.rows() > 0, ErrorCode::InvalidData, source.name(), " has no rows to predict");
    if (names.empty()) {
        BRAIN_CHECK(all.cols() == network.input_size(), ErrorCode::InvalidData, source.name(), " has ", all.cols(),
                    " columns but the model takes ", network.input_size(),
                    " inputs; give one column per model input, in the model's order");
        return all;
    }
    std::vector<std::size_t> index;
    for (const auto& feature : features) {
        const auto it = std::find(names.begin(), names.end(), feature);
        BRAIN_CHECK(it != names.end(), ErrorCode::InvalidData, source.name(), " has no feature named ",
                    quote_excerpt(feature),
                    " (the model's feature); its 'feature_names' must include every one of "
                    "the model's features");
        index.push_back(static_cast<std::size_t>(it - names.begin()));
    }
    Matrix x(all.rows(), index.size());
    for (std::size_t r = 0; r < all.rows(); ++r)
        for (std::size_t j = 0; j < index.size(); ++j) x(r, j) = all(r, index[j]);
    return x;
}

// The predictor of --backend, or none (the host predicts) without it. Nothing falls back to the host: a backend
// that cannot predict is an error, and --budget or --precision without --backend is refused.
std::optional<Predictor> backend_predictor(const PredictOptions& o, const Network& network, std::size_t batch_rows) {
    BRAIN_CHECK_ARG(
        o.backend || (!o.budget_mib && !o.precision),
        "--budget and --precision choose how a backend predicts; add --backend (e.g. --backend cuda:0), "
        "or drop them to predict on the host");
    if (!o.backend) return std::nullopt;
    const bool cpu = o.backend->substr(0, o.backend->find(':')) == "cpu";
    const TrainingBackend backend = TrainingBackend::parse(*o.backend, o.budget_mib.value_or(cpu ? 0 : 8192))
                                        .with_precision(parse_precision(o.precision.value_or("float32")));
    return std::optional<Predictor>(std::in_place, network, backend, batch_rows);
}

// --out with a CSV input and no --compare: the rows stream through a chunk at a time (CsvRowStream), their
// predictions into the output file, which is committed only once every row has been predicted; memory is one chunk
// whatever the file's size.
int predict_streamed(const PredictOptions& o, const Network& network, CsvRowStream& rows,
                     const std::vector<std::filesystem::path>& inputs, Predictor* predictor) {
    OutputFile file(o.out, inputs);
    const auto sink = [&file](std::string_view part) { file.write(part); };
    Matrix x;
    std::vector<std::uint64_t> lines;
    std::uint64_t count = 0;
    while (rows.next(x, lines)) {
        const Matrix outputs = predict_rows(
            network, x, [&](std::size_t row) { return str(o.source.csv, ":", lines[row]); }, predictor);
        const std::vector<std::size_t> classes =
            network.is_classifier() ? classes_of(outputs) : std::vector<std::size_t>{};
        write_predictions(network, outputs, classes, sink, count == 0);
        count += x.rows();
    }
    BRAIN_CHECK(count > 0, ErrorCode::InvalidData, o.source.csv,
                ": the file has a header but no data rows; add at least one row of values");
    std::cout << "wrote " << count << " predictions to " << o.out << "\n";
    require_standard_output(str("'", o.out, "' is left as it was"));
    file.commit();
    return exit_ok;
}

int run_predict(const PredictOptions& o) {
    // Every check that can fail runs before anything is written: the output path, both inputs, the feature
    // columns, the --compare column and the predictions themselves.
    check_data_source(o.source, false, {});
    BRAIN_CHECK_ARG(
        o.compare.empty() || o.source.is_csv(),
        "--compare names a column of --csv; with --npz or --npy-features there is none to compare with");
    std::vector<std::filesystem::path> inputs = o.source.files();
    inputs.emplace_back(o.model);
    if (!o.out.empty()) check_output_path(o.out, inputs);
    const InputLimits limits = o.input.limits();
    const Network network = Network::load_json(o.model, limits);

    std::vector<std::string> features = network.feature_names();
    if (features.empty())
        for (std::size_t i = 0; i < network.input_size(); ++i) features.push_back(str("x", i));
    BRAIN_CHECK(features.size() == network.input_size(), ErrorCode::InvalidModelFile, o.model, ": the model names ",
                features.size(), " features but its first layer takes ", network.input_size(),
                " inputs; the file is inconsistent, retrain or restore it");
    if (!o.out.empty() && o.compare.empty() && o.source.is_csv()) {
        CsvRowStream rows(o.source.csv, features, ',', limits);
        std::optional<Predictor> predictor = backend_predictor(o, network, Predictor::default_batch_rows);
        return predict_streamed(o, network, rows, inputs, predictor ? &*predictor : nullptr);
    }
    std::optional<CsvTable> table;
    Matrix x;
    std::function<std::string(std::size_t)> where;
    std::vector<std::uint64_t> lines;
    if (o.source.is_csv() && o.compare.empty()) {
        // Only the feature numbers and each row's line are kept (no cell text): the whole file is checked before
        // anything is written, in the memory of its numbers.
        CsvRowStream rows(o.source.csv, features, ',', limits);
        std::vector<float> values;
        Matrix chunk;
        std::vector<std::uint64_t> chunk_lines;
        while (rows.next(chunk, chunk_lines)) {
            values.insert(values.end(), chunk.data().begin(), chunk.data().end());
            lines.insert(lines.end(), chunk_lines.begin(), chunk_lines.end());
        }
        BRAIN_CHECK(!lines.empty(), ErrorCode::InvalidData, o.source.csv,
                    ": the file has a header but no data rows; add at least one row of values");
        x = Matrix(lines.size(), features.size(), std::move(values));
        where = [&](std::size_t row) { return str(o.source.csv, ":", lines[row]); };
    } else if (o.source.is_csv()) {
        table = CsvTable::read(o.source.csv, ',', limits);
        x = table->numeric_columns(features);
        where = [&table](std::size_t row) { return str(table->origin(), ":", table->line_of(row)); };
    } else {
        x = binary_features(o.source, network, features, limits);
        where = [&o](std::size_t row) { return str(o.source.name(), ": row ", row); };
    }

    std::optional<std::size_t> compare;
    Matrix truth;
    if (!o.compare.empty()) {
        compare = table->column_index(o.compare);
        BRAIN_CHECK(compare.has_value(), ErrorCode::InvalidData, o.source.csv, " has no column ",
                    quote_excerpt(o.compare),
                    " to compare the predictions with (--compare); name one of its columns");
        if (!network.is_classifier()) truth = table->numbers({*compare}, "the --compare column");
        // The classes of the column are read before anything is written, so that a bad cell fails first.
        if (network.is_classifier()) (void)read_truth(network, *table, {o.compare}, true);
    }

    // The backend's predictor is opened once the inputs are known to be usable.
    std::optional<Predictor> predictor =
        backend_predictor(o, network, std::clamp<std::size_t>(x.rows(), 1, Predictor::default_batch_rows));
    const Matrix outputs = predict_rows(network, x, where, predictor ? &*predictor : nullptr);
    const std::vector<std::size_t> classes =
        network.is_classifier() ? classes_of(outputs) : std::vector<std::size_t>{};
    if (o.out.empty()) {
        write_predictions(network, outputs, classes, [](std::string_view part) { std::cout << part; });
    } else {
        OutputFile file(o.out, inputs);
        write_predictions(network, outputs, classes, [&file](std::string_view part) { file.write(part); });
        std::cout << "wrote " << outputs.rows() << " predictions to " << o.out << "\n";
        require_standard_output(str("'", o.out, "' is left as it was"));
        file.commit();
    }

    if (compare && network.is_classifier()) {
        print_accuracy(network, *table, o.compare, classes);
    } else if (compare) {
        Matrix first(outputs.rows(), 1);
        for (std::size_t r = 0; r < outputs.rows(); ++r) first(r, 0) = outputs(r, 0);
        const RegressionMetrics m = regression_metrics(truth, first, {o.compare});
        std::cout << "against '" << o.compare << "' (first output): rmse " << fmt(m.rmse[0]) << ", mae "
                  << fmt(m.mae[0]) << ", r2 " << fmt(m.r2[0]) << " over " << truth.rows() << " rows\n";
    }
    return exit_ok;
}

} // namespace

void add_predict_command(CLI::App& app, int& exit_code) {
    auto o = std::make_shared<PredictOptions>();
    auto* cmd = app.add_subcommand(
        "predict", "Apply a saved model to a CSV file. Feature columns are found by the model's feature names "
                   "(extra columns are ignored; missing ones are an error naming them). Classifiers get a "
                   "\"label\" column plus one probability column per class. Runs on the host, no GPU needed, "
                   "unless --backend names a backend to predict on. A "
                   "row whose prediction is not finite is an error naming its line; on any error nothing is "
                   "written.");
    cmd->add_option("--model", o->model, "a model file written by brain train (save_json)")->required();
    add_data_source_options(*cmd, o->source, false, "rows to predict: a CSV file with a header row");
    cmd->add_option("--out", o->out,
                    "write the predictions here (whole or not at all) instead of to standard output; a symbolic "
                    "link, directory, device, FIFO, socket, --model or --csv is refused")
        ->check(file_name());
    cmd->add_option("--compare", o->compare,
                    "a column of true values in --csv: print accuracy (classifiers) or RMSE/MAE (regressors)");
    add_input_options(*cmd, o->input, true);
    cmd->add_option("--backend", o->backend,
                    "predict on this backend instead of the host: cpu, cuda:<device>, metal:<device> or "
                    "<plugin>:<device>; the rows stream through it in batches that fit --budget");
    cmd->add_option("--budget", o->budget_mib,
                    "with --backend: memory budget in MiB (default 8192 for a device, none for cpu)")
        ->check(whole_number_in(1, UINT64_MAX));
    cmd->add_option("--precision", o->precision,
                    "with --backend: float32 (the default), tf32 or bf16 (accelerators)");
    cmd->callback([o, &exit_code] { exit_code = run_predict(*o); });
}

} // namespace brain::app
