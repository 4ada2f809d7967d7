// brain predict: apply a saved model to the rows of a CSV file. Runs on the host; needs no plugin and no GPU.
#include "app_support.hpp"
#include "commands.hpp"
#include "csv_table.hpp"

#include <brain/brain.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

namespace brain::app {

namespace {

struct PredictOptions {
    std::string model;
    std::string csv;
    std::string out;
    std::string compare;
};

std::string fmt(float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", static_cast<double>(v));
    return buf;
}

// The label text of class index `k`: the model's class label, or the index for numeric 0/1 targets.
std::string label_of(const Network& network, std::size_t k) {
    const auto& labels = network.class_labels();
    return k < labels.size() ? labels[k] : std::to_string(k);
}

// Whether a true-value cell names class `k`: by label text, or by value for numeric 0/1 targets ("1.0" is 1).
bool same_label(const Network& network, const std::string& cell, std::size_t k) {
    if (!network.class_labels().empty()) return cell == label_of(network, k);
    const auto value = parse_finite_float(cell);
    return value && *value == static_cast<float>(k);
}

int run_predict(const PredictOptions& o) {
    const Network network = Network::load_json(o.model);
    const CsvTable table = CsvTable::read(o.csv);

    std::vector<std::string> features = network.feature_names();
    if (features.empty())
        for (std::size_t i = 0; i < network.input_size(); ++i) features.push_back(str("x", i));
    BRAIN_CHECK(features.size() == network.input_size(), ErrorCode::InvalidModelFile, o.model, ": the model names ",
                features.size(), " features but its first layer takes ", network.input_size(),
                " inputs; the file is inconsistent, retrain or restore it");
    const Matrix inputs = table.numeric_columns(features);
    const Matrix outputs = network.predict(inputs);

    const bool classifier = network.is_classifier();
    std::vector<std::size_t> classes;
    std::string csv_text;
    if (classifier) {
        classes = network.predict_classes(inputs);
        csv_text += "label";
        // A single sigmoid output is the probability of class "1" (or of the second label).
        if (outputs.cols() == 1)
            csv_text += str(",p_", csv_escape(label_of(network, 1)));
        else
            for (std::size_t k = 0; k < outputs.cols(); ++k)
                csv_text += str(",p_", csv_escape(label_of(network, k)));
    } else {
        const auto& names = network.target_names();
        for (std::size_t k = 0; k < outputs.cols(); ++k)
            csv_text += str(k ? "," : "", csv_escape(k < names.size() ? names[k] : str("y", k)));
    }
    csv_text += "\n";
    for (std::size_t r = 0; r < outputs.rows(); ++r) {
        if (classifier) {
            csv_text += csv_escape(label_of(network, classes[r]));
            csv_text += ',';
        }
        for (std::size_t k = 0; k < outputs.cols(); ++k) {
            if (k) csv_text += ',';
            csv_text += fmt(outputs(r, k));
        }
        csv_text += "\n";
    }

    if (o.out.empty()) {
        std::cout << csv_text;
    } else {
        write_file_atomically(o.out, csv_text);
        std::cout << "wrote " << outputs.rows() << " predictions to " << o.out << "\n";
    }

    if (!o.compare.empty()) {
        const auto column = table.column_index(o.compare);
        BRAIN_CHECK(column.has_value(), ErrorCode::InvalidData, o.csv, " has no column '", o.compare,
                    "' to compare the predictions with (--compare)");
        if (classifier) {
            std::size_t right = 0;
            for (std::size_t r = 0; r < table.rows(); ++r)
                if (same_label(network, table.cell(r, *column), classes[r])) ++right;
            std::cout << "accuracy against '" << o.compare
                      << "': " << fmt(static_cast<float>(right) / static_cast<float>(table.rows())) << " (" << right
                      << "/" << table.rows() << ")\n";
        } else {
            const Matrix truth = table.numeric_columns({o.compare});
            double sq = 0.0, abs = 0.0;
            for (std::size_t r = 0; r < truth.rows(); ++r) {
                const double d = static_cast<double>(outputs(r, 0)) - truth(r, 0);
                sq += d * d;
                abs += std::fabs(d);
            }
            const double n = static_cast<double>(std::max<std::size_t>(truth.rows(), 1));
            std::cout << "against '" << o.compare << "' (first output): rmse "
                      << fmt(static_cast<float>(std::sqrt(sq / n))) << ", mae " << fmt(static_cast<float>(abs / n))
                      << " over " << truth.rows() << " rows\n";
        }
    }
    return exit_ok;
}

} // namespace

void add_predict_command(CLI::App& app, int& exit_code) {
    auto o = std::make_shared<PredictOptions>();
    auto* cmd = app.add_subcommand(
        "predict", "Apply a saved model to a CSV file. Feature columns are found by the model's feature names "
                   "(extra columns are ignored; missing ones are an error naming them). Classifiers get a "
                   "\"label\" column plus one probability column per class. Runs on the host, no GPU needed.");
    cmd->add_option("--model", o->model, "a model file written by brain train (save_json)")->required();
    cmd->add_option("--csv", o->csv, "rows to predict, with a header row")->required();
    cmd->add_option("--out", o->out, "write the predictions here (atomically) instead of to standard output");
    cmd->add_option("--compare", o->compare,
                    "a column of true values in --csv: print accuracy (classifiers) or RMSE/MAE (regressors)");
    cmd->callback([o, &exit_code] { exit_code = run_predict(*o); });
}

} // namespace brain::app
