// brain evaluate: a saved model's loss and metrics on the rows of a CSV file (Network::evaluate), as tables or
// JSON. Runs on the host; needs no plugin and no GPU.
#include "app_support.hpp"
#include "cli_options.hpp"
#include "commands.hpp"
#include "metrics_report.hpp"

#include <brain/brain.hpp>
#include <iostream>
#include <memory>

namespace brain::app {

namespace {

struct EvaluateOptions {
    std::string model;
    std::string csv;
    std::vector<std::string> targets;
    bool json = false;
    InputOptions input;
};

int run_evaluate(const EvaluateOptions& o) {
    const InputLimits limits = o.input.limits();
    const Network network = Network::load_json(o.model, limits);
    const CsvTable table = CsvTable::read(o.csv, ',', limits);

    std::vector<std::string> features = network.feature_names();
    if (features.empty())
        for (std::size_t i = 0; i < network.input_size(); ++i) features.push_back(str("x", i));
    std::vector<std::string> columns = o.targets.empty() ? target_columns_of(network) : o.targets;
    BRAIN_CHECK(!columns.empty(), ErrorCode::InvalidArgument, o.model,
                " names no target columns (it was not trained from a CSV file); name the columns of true values "
                "with --target");
    const Truth truth = read_truth(network, table, columns, false);
    Dataset data(table.numeric_columns(features), truth.targets);
    const Evaluation evaluation = network.evaluate(data);

    std::string kind =
        network.is_classifier()
            ? str(to_string(network.layers().back().activation), " classifier, ",
                  network.output_size() == 1 ? 2 : network.output_size(), " classes")
            : str("regressor, ", network.output_size(), " output", network.output_size() == 1 ? "" : "s");
    if (o.json) {
        std::string names = "[";
        for (std::size_t i = 0; i < columns.size(); ++i) names += (i ? "," : "") + json_string(columns[i]);
        std::cout << metrics_json(evaluation, true,
                                  {{"model", json_string(o.model)},
                                   {"data", json_string(o.csv)},
                                   {"kind", json_string(kind)},
                                   {"targets", names + "]"}})
                  << "\n";
        return exit_ok;
    }
    std::cout << "model: " << o.model << " (" << kind << "); data: " << o.csv << ", " << table.rows() << " rows\n";
    print_metrics(std::cout, evaluation, true);
    return exit_ok;
}

} // namespace

void add_evaluate_command(CLI::App& app, int& exit_code) {
    auto o = std::make_shared<EvaluateOptions>();
    auto* cmd = app.add_subcommand(
        "evaluate",
        "Evaluate a saved model on a CSV file with true values: the loss and, for classifiers, accuracy, "
        "per-class precision, recall and F1 with macro and weighted averages and the confusion matrix; "
        "for regressors RMSE, MAE and R^2 per output. Features are found by the model's feature names, "
        "true values by its target column(s). Runs on the host, no GPU needed.");
    cmd->add_option("--model", o->model, "a model file written by brain train (save_json)")->required();
    cmd->add_option("--csv", o->csv, "rows with their true values, with a header row")->required();
    add_column_list_option(*cmd, "--target", o->targets,
                           "the column(s) of true values, as brain train's --target (default: the column the model "
                           "was trained on)");
    cmd->add_flag("--json", o->json, "print one JSON object instead of tables");
    add_input_options(*cmd, o->input, true);
    cmd->callback([o, &exit_code] { exit_code = run_evaluate(*o); });
}

} // namespace brain::app
