// The true values of a CSV table as a model's targets, and the metrics printed by `brain evaluate` and
// `brain predict --compare` (one code for both: a table for people, JSON for machines).
#pragma once

#include <brain/brain.hpp>
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace brain::app {

// The class index of a cell for a classifier: its label as written, else, when the model's labels are numbers, the
// label of equal value ("1.0" for "1"), else for a model without labels a 0/1 number. nullopt: none of the classes.
std::optional<std::size_t> class_of(const Network& network, std::string_view cell);

// The CSV column a model's targets came from: its class column for a classifier trained on labels, else its
// target names. Empty when the model names none.
std::vector<std::string> target_columns_of(const Network& network);

// The true values of `table` in the model's target layout: one-hot rows for a classifier with labels (one column),
// 0/1 for a single sigmoid output, the numbers of `columns` otherwise.
struct Truth {
    Matrix targets;
    std::vector<std::size_t> rows;         // the table's rows the targets hold (all but the unknown ones)
    std::vector<std::size_t> unknown_rows; // a classifier's rows whose label is none of the model's classes
};
// Throws InvalidData naming the file, line and column of a bad cell; an unknown class is an error unless
// allow_unknown (then listed in unknown_rows).
Truth read_truth(const Network& network, const CsvTable& table, const std::vector<std::string>& columns,
                 bool allow_unknown);

// The metrics as aligned tables: loss (when known), accuracy, per class precision/recall/F1/support with macro and
// weighted averages and the confusion matrix (up to 20 classes; --json has it always), or per output RMSE/MAE/R^2.
void print_metrics(std::ostream& out, const Evaluation& evaluation, bool with_loss);

// The same as one JSON object (with `extra` fields first: already-serialised "key": value pairs).
std::string metrics_json(const Evaluation& evaluation, bool with_loss,
                         const std::vector<std::pair<std::string, std::string>>& extra);

// A JSON string literal of `text`.
std::string json_string(std::string_view text);

} // namespace brain::app
