// brain predict: apply a saved model to the rows of a CSV file. Runs on the host (no plugin, no GPU) unless
// --backend names a backend, whose predictor then computes the outputs (brain::Predictor).
#include "app_support.hpp"
#include "cli_options.hpp"
#include "commands.hpp"
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
    std::string csv;
    std::string out;
    std::string compare;
    InputOptions input;
    std::optional<std::string> backend; // none: the host's Network::predict
    std::optional<std::uint64_t> budget_mib;
    std::string precision = "float32";
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
// error naming its line in the file.
Matrix predict_rows(const Network& network, const Matrix& x, const CsvTable& table, Predictor* predictor) {
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
        BRAIN_THROW(ErrorCode::NumericalError, table.origin(), ":", table.line_of(begin),
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
                       const std::function<void(std::string_view)>& sink) {
    std::string text;
    if (network.is_classifier()) {
        text += "label";
        // A single sigmoid output is the probability of class "1" (or of the second label).
        if (outputs.cols() == 1)
            text += ",p_" + csv_escape(label_of(network, 1));
        else
            for (std::size_t k = 0; k < outputs.cols(); ++k) text += ",p_" + csv_escape(label_of(network, k));
    } else {
        const auto& names = network.target_names();
        for (std::size_t k = 0; k < outputs.cols(); ++k)
            text += (k ? "," : "") + csv_escape(k < names.size() ? names[k] : str("y", k));
    }
    text += "\n";
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

int run_predict(const PredictOptions& o) {
    // Every check that can fail runs before anything is written: the output path, both inputs, the feature
    // columns, the --compare column and the predictions themselves.
    const std::vector<std::filesystem::path> inputs{o.model, o.csv};
    if (!o.out.empty()) check_output_path(o.out, inputs);
    const InputLimits limits = o.input.limits();
    const Network network = Network::load_json(o.model, limits);
    const CsvTable table = CsvTable::read(o.csv, ',', limits);

    std::vector<std::string> features = network.feature_names();
    if (features.empty())
        for (std::size_t i = 0; i < network.input_size(); ++i) features.push_back(str("x", i));
    BRAIN_CHECK(features.size() == network.input_size(), ErrorCode::InvalidModelFile, o.model, ": the model names ",
                features.size(), " features but its first layer takes ", network.input_size(),
                " inputs; the file is inconsistent, retrain or restore it");
    const Matrix x = table.numeric_columns(features);

    std::optional<std::size_t> compare;
    Matrix truth;
    if (!o.compare.empty()) {
        compare = table.column_index(o.compare);
        BRAIN_CHECK(compare.has_value(), ErrorCode::InvalidData, o.csv, " has no column ", quote_excerpt(o.compare),
                    " to compare the predictions with (--compare); name one of its columns");
        if (!network.is_classifier()) truth = table.numbers({*compare}, "the --compare column");
        // The classes of the column are read before anything is written, so that a bad cell fails first.
        if (network.is_classifier()) (void)read_truth(network, table, {o.compare}, true);
    }

    // --backend: the backend's predictor, opened once the inputs are known to be usable (nothing falls back to the
    // host: a backend that cannot predict is an error).
    BRAIN_CHECK_ARG(
        o.backend || (!o.budget_mib && o.precision == "float32"),
        "--budget and --precision choose how a backend predicts; add --backend (e.g. --backend cuda:0), "
        "or drop them to predict on the host");
    std::optional<Predictor> predictor;
    if (o.backend) {
        const bool cpu = o.backend->substr(0, o.backend->find(':')) == "cpu";
        const TrainingBackend backend = TrainingBackend::parse(*o.backend, o.budget_mib.value_or(cpu ? 0 : 8192))
                                            .with_precision(parse_precision(o.precision));
        predictor.emplace(network, backend, std::clamp<std::size_t>(x.rows(), 1, Predictor::default_batch_rows));
    }
    const Matrix outputs = predict_rows(network, x, table, predictor ? &*predictor : nullptr);
    const std::vector<std::size_t> classes =
        network.is_classifier() ? classes_of(outputs) : std::vector<std::size_t>{};
    if (o.out.empty()) {
        write_predictions(network, outputs, classes, [](std::string_view part) { std::cout << part; });
    } else {
        OutputFile file(o.out, inputs);
        write_predictions(network, outputs, classes, [&file](std::string_view part) { file.write(part); });
        file.commit();
        std::cout << "wrote " << outputs.rows() << " predictions to " << o.out << "\n";
    }

    if (compare && network.is_classifier()) {
        print_accuracy(network, table, o.compare, classes);
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
    cmd->add_option("--csv", o->csv, "rows to predict, with a header row")->required();
    cmd->add_option("--out", o->out,
                    "write the predictions here (whole or not at all) instead of to standard output; a symbolic "
                    "link, directory, device, FIFO, socket, --model or --csv is refused");
    cmd->add_option("--compare", o->compare,
                    "a column of true values in --csv: print accuracy (classifiers) or RMSE/MAE (regressors)");
    add_input_options(*cmd, o->input, true);
    cmd->add_option("--backend", o->backend,
                    "predict on this backend instead of the host: cpu, cuda:<device>, metal:<device> or "
                    "<plugin>:<device>; the rows stream through it in batches that fit --budget");
    cmd->add_option("--budget", o->budget_mib,
                    "with --backend: memory budget in MiB (default 8192 for a device, none for cpu)")
        ->check(whole_number(UINT64_MAX));
    cmd->add_option("--precision", o->precision, "with --backend: float32, tf32 or bf16 (accelerators)")
        ->capture_default_str();
    cmd->callback([o, &exit_code] { exit_code = run_predict(*o); });
}

} // namespace brain::app
