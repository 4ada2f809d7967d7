// The metrics report of `brain evaluate` and `brain predict --compare`: the truth read from a CSV table in the
// model's terms, and the tables and JSON printed from a brain::Evaluation.
#include "metrics_report.hpp"

#include "app_support.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

namespace brain::app {

namespace {

std::string fixed(double value, int decimals = 4) {
    char text[48];
    // A value far from 1 (the R^2 of a model whose outputs overflow) in exponent form: a table column, not 78
    // digits.
    if (std::isfinite(value) && std::abs(value) >= 1e6)
        std::snprintf(text, sizeof text, "%.4g", value);
    else
        std::snprintf(text, sizeof text, "%.*f", decimals, value);
    return text;
}

// A JSON number: the shortest text that reads back as the same float32 (the library's values are float32, so
// 0.3f prints 0.3, not 0.300000012) or, for a double that is not one, the same double; null where the value is
// not finite (a loss that overflowed), since JSON has no infinity.
std::string json_number(double value) {
    if (!std::isfinite(value)) return "null";
    char text[48];
    const auto single = static_cast<float>(value);
    const auto end = static_cast<double>(single) == value ? std::to_chars(text, text + sizeof text, single).ptr
                                                          : std::to_chars(text, text + sizeof text, value).ptr;
    return std::string(text, end);
}

std::string number(double value) {
    char text[48];
    std::snprintf(text, sizeof text, "%.9g", value);
    return text;
}

// Rows of cells printed with each column as wide as its widest cell (the first column left-aligned).
void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> width;
    for (const auto& row : rows)
        for (std::size_t c = 0; c < row.size(); ++c) {
            if (width.size() <= c) width.push_back(0);
            width[c] = std::max(width[c], row[c].size());
        }
    for (const auto& row : rows) {
        std::string line;
        for (std::size_t c = 0; c < row.size(); ++c) {
            const std::string pad(width[c] - row[c].size(), ' ');
            line += c == 0 ? row[c] + pad : "  " + pad + row[c];
        }
        out << line << "\n";
    }
}

bool labels_are_numbers(const std::vector<std::string>& labels) {
    return !labels.empty() && std::all_of(labels.begin(), labels.end(), [](const std::string& l) {
        return parse_csv_number(l).kind == CsvCellKind::Number;
    });
}

} // namespace

std::optional<std::size_t> class_of(const Network& network, std::string_view cell) {
    const auto& labels = network.class_labels();
    for (std::size_t k = 0; k < labels.size(); ++k)
        if (labels[k] == cell) return k;
    const CsvNumber n = parse_csv_number(cell);
    if (n.kind != CsvCellKind::Number) return std::nullopt;
    if (labels_are_numbers(labels)) {
        for (std::size_t k = 0; k < labels.size(); ++k)
            if (parse_csv_number(labels[k]).value == n.value) return k;
        return std::nullopt;
    }
    // A model without labels: a single sigmoid output's 0/1 ("1.0" is class 1).
    if (labels.empty() && network.output_size() == 1 && (n.value == 0.0f || n.value == 1.0f))
        return static_cast<std::size_t>(n.value);
    return std::nullopt;
}

std::vector<std::string> target_columns_of(const Network& network) {
    const auto& labels = network.class_labels();
    const auto& names = network.target_names();
    if (network.is_classifier() && !labels.empty() && names.size() == labels.size()) {
        // One-hot outputs are named "<column>=<label>".
        const std::string suffix = "=" + labels.front();
        const std::string& first = names.front();
        if (first.size() > suffix.size() && first.ends_with(suffix))
            return {first.substr(0, first.size() - suffix.size())};
    }
    return names;
}

Truth read_truth(const Network& network, const CsvTable& table, const std::vector<std::string>& columns,
                 bool allow_unknown) {
    Truth truth;
    const std::size_t k = network.output_size();
    const bool labelled = network.is_classifier() && (!network.class_labels().empty() || k == 1);
    if (!labelled) {
        BRAIN_CHECK(columns.size() == k, ErrorCode::InvalidArgument, "the model has ", k, " outputs but ",
                    columns.size(), " true-value columns were named; name one column per output (--target)");
        truth.targets = table.numeric_columns(columns, "a target");
        for (std::size_t r = 0; r < table.rows(); ++r) truth.rows.push_back(r);
        return truth;
    }
    BRAIN_CHECK(columns.size() == 1, ErrorCode::InvalidArgument,
                "a classifier's true classes come from one column; ", columns.size(), " were named");
    const auto column = table.column_index(columns.front());
    BRAIN_CHECK(column.has_value(), ErrorCode::InvalidData, table.origin(), " has no column ",
                quote_excerpt(columns.front()), " of true classes; name one of its columns (--target)");
    std::vector<float> values;
    for (std::size_t r = 0; r < table.rows(); ++r) {
        const std::string_view cell = table.cell(r, *column);
        const std::optional<std::size_t> c = class_of(network, cell);
        if (!c) {
            if (allow_unknown) {
                truth.unknown_rows.push_back(r);
                continue;
            }
            std::string known;
            const auto& labels = network.class_labels();
            for (std::size_t i = 0; i < labels.size() && i < 12; ++i)
                known += str(i ? ", " : "", printable(labels[i]));
            if (labels.size() > 12) known += ", ...";
            BRAIN_THROW(ErrorCode::InvalidData, table.origin(), ":", table.line_of(r), ": ",
                        table.column_label(*column), " holds ", quote_excerpt(cell),
                        ", which is none of the model's classes (", labels.empty() ? std::string("0, 1") : known,
                        "); fix the row or evaluate on rows of the classes the model knows");
        }
        truth.rows.push_back(r);
        if (k == 1) {
            values.push_back(static_cast<float>(*c));
        } else {
            const std::size_t at = values.size();
            values.resize(at + k, 0.0f);
            values[at + *c] = 1.0f;
        }
    }
    truth.targets = Matrix(truth.rows.size(), k, std::move(values));
    return truth;
}

void print_metrics(std::ostream& out, const Evaluation& e, bool with_loss) {
    if (with_loss) out << "loss      " << number(e.loss) << "\n";
    if (const auto& c = e.classification) {
        const auto right = static_cast<std::uint64_t>(std::llround(c->accuracy * static_cast<double>(c->rows)));
        out << "accuracy  " << fixed(c->accuracy) << " (" << right << "/" << c->rows << ")\n\n";
        std::vector<std::vector<std::string>> rows{{"class", "precision", "recall", "f1", "support"}};
        for (std::size_t i = 0; i < c->labels.size(); ++i) {
            const ClassScores& s = c->per_class[i];
            rows.push_back({printable(c->labels[i]), fixed(s.precision), fixed(s.recall), fixed(s.f1),
                            std::to_string(s.support)});
        }
        for (const auto& [name, s] : {std::pair{"macro avg", c->macro}, std::pair{"weighted avg", c->weighted}})
            rows.push_back({name, fixed(s.precision), fixed(s.recall), fixed(s.f1), std::to_string(s.support)});
        print_table(out, rows);
        const std::size_t k = c->labels.size();
        if (k <= 20) {
            out << "\nconfusion matrix (rows: true class, columns: predicted class)\n";
            std::vector<std::vector<std::string>> matrix{{""}};
            for (const auto& label : c->labels) matrix[0].push_back(printable(label));
            for (std::size_t i = 0; i < k; ++i) {
                matrix.push_back({printable(c->labels[i])});
                for (std::size_t j = 0; j < k; ++j) matrix.back().push_back(std::to_string(c->confusion[i][j]));
            }
            print_table(out, matrix);
        } else if (!c->confusion.empty()) {
            out << "\nconfusion matrix: " << k << " x " << k << " classes (in --json)\n";
        } else {
            out << "\nconfusion matrix: not kept for " << k << " classes (more than " << max_confusion_classes
                << ")\n";
        }
    } else if (e.accuracy) {
        out << "accuracy  " << fixed(*e.accuracy) << "\n";
    }
    if (const auto& r = e.regression) {
        if (with_loss) out << "\n";
        std::vector<std::vector<std::string>> rows{{"output", "rmse", "mae", "r2"}};
        for (std::size_t j = 0; j < r->names.size(); ++j)
            rows.push_back({printable(r->names[j]), number(r->rmse[j]), number(r->mae[j]), fixed(r->r2[j])});
        print_table(out, rows);
    }
}

std::string json_string(std::string_view text) {
    std::string out = "\"";
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c < 0x20) {
            char escape[8];
            std::snprintf(escape, sizeof escape, "\\u%04x", c);
            out += escape;
        } else {
            out += ch;
        }
    }
    return out + "\"";
}

std::string metrics_json(const Evaluation& e, bool with_loss,
                         const std::vector<std::pair<std::string, std::string>>& extra) {
    std::vector<std::pair<std::string, std::string>> fields = extra;
    if (with_loss) fields.emplace_back("loss", json_number(e.loss));
    if (e.accuracy) fields.emplace_back("accuracy", json_number(*e.accuracy));
    auto scores = [](const ClassScores& s) {
        return "{\"precision\":" + json_number(s.precision) + ",\"recall\":" + json_number(s.recall) +
               ",\"f1\":" + json_number(s.f1) + ",\"support\":" + std::to_string(s.support) + "}";
    };
    if (const auto& c = e.classification) {
        fields.emplace_back("rows", std::to_string(c->rows));
        std::string classes = "[";
        for (std::size_t i = 0; i < c->labels.size(); ++i) {
            std::string item = scores(c->per_class[i]);
            classes += str(i ? "," : "", "{\"label\":", json_string(c->labels[i]), ",", item.substr(1));
        }
        fields.emplace_back("classes", classes + "]");
        fields.emplace_back("macro_avg", scores(c->macro));
        fields.emplace_back("weighted_avg", scores(c->weighted));
        std::string confusion = "[";
        for (std::size_t i = 0; i < c->confusion.size(); ++i) {
            confusion += i ? ",[" : "[";
            for (std::size_t j = 0; j < c->confusion[i].size(); ++j)
                confusion += str(j ? "," : "", c->confusion[i][j]);
            confusion += "]";
        }
        fields.emplace_back("confusion_matrix", confusion + "]");
    }
    if (const auto& r = e.regression) {
        fields.emplace_back("rows", std::to_string(r->rows));
        std::string outputs = "[";
        for (std::size_t j = 0; j < r->names.size(); ++j)
            outputs +=
                str(j ? "," : "", "{\"name\":", json_string(r->names[j]), ",\"rmse\":", json_number(r->rmse[j]),
                    ",\"mae\":", json_number(r->mae[j]), ",\"r2\":", json_number(r->r2[j]), "}");
        fields.emplace_back("outputs", outputs + "]");
    }
    std::string out = "{";
    for (std::size_t i = 0; i < fields.size(); ++i)
        out += str(i ? "," : "", json_string(fields[i].first), ":", fields[i].second);
    return out + "}";
}

} // namespace brain::app
