#include "csv_targets.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace brain::detail::csv {

std::string quoted_names(const std::vector<std::string>& names) {
    std::string out;
    for (std::size_t i = 0; i < names.size() && i < 12; ++i) out += (i ? ", " : "") + quote_excerpt(names[i], 40);
    if (names.size() > 12) out += ", ... (" + std::to_string(names.size()) + " in all)";
    return out;
}

// The file columns of the targets named in `options` (in that order) and of the features (the others, in file
// order). InvalidArgument naming a missing or repeated target, or a file left with no feature.
std::pair<std::vector<std::size_t>, std::vector<std::size_t>> split_columns(const std::vector<std::string>& header,
                                                                            const std::vector<std::string>& targets,
                                                                            const std::string& file,
                                                                            std::string_view caller) {
    std::vector<std::size_t> target_index;
    std::set<std::size_t> is_target;
    for (std::size_t k = 0; k < targets.size(); ++k) {
        const std::string& name = targets[k];
        const auto hit = std::find(header.begin(), header.end(), name);
        if (hit == header.end()) {
            // A list split at commas (the command line's --target) cuts a name such as "width, cm" in two: when
            // this name and the next ones, joined by commas again, are a column, say so and how to write it.
            std::string joined = name, split_hint;
            for (std::size_t j = k + 1; j < targets.size() && split_hint.empty(); ++j) {
                joined += "," + targets[j];
                if (std::find(header.begin(), header.end(), joined) != header.end())
                    split_hint = "; joined by commas, the names " + quote_excerpt(name) + " to " +
                                 quote_excerpt(targets[j]) + " make the column " + quote_excerpt(joined) +
                                 ": name it as one item (on brain's command line, write a comma inside a name as "
                                 "\\,)";
            }
            BRAIN_THROW(ErrorCode::InvalidArgument, caller, ": target column ", quote_excerpt(name),
                        " is not in the header of '", file, "'", split_hint,
                        "; available columns: ", quoted_names(header));
        }
        const auto c = static_cast<std::size_t>(hit - header.begin());
        BRAIN_CHECK_ARG(is_target.insert(c).second, caller, ": target column ", quote_excerpt(name),
                        " is listed twice in the options; list each target column once");
        target_index.push_back(c);
    }
    std::vector<std::size_t> feature_index;
    for (std::size_t c = 0; c < header.size(); ++c)
        if (!is_target.count(c)) feature_index.push_back(c);
    BRAIN_CHECK_ARG(!feature_index.empty(), caller, "('", file,
                    "'): every column is a target, so there are no feature columns left");
    return {std::move(target_index), std::move(feature_index)};
}

TargetColumns::TargetColumns(const std::vector<std::string>& header, std::vector<std::size_t> columns,
                             std::size_t max_classes, std::string origin,
                             const std::vector<std::string>& class_columns)
    : m_header(header), m_origin(std::move(origin)), m_max_classes(max_classes) {
    for (const auto& name : class_columns)
        BRAIN_CHECK_ARG(
            std::any_of(columns.begin(), columns.end(), [&](std::size_t c) { return header[c] == name; }),
            "Dataset::from_csv: class column ", quote_excerpt(name),
            " is not one of the target columns; name it as a target too");
    for (const std::size_t c : columns) {
        Column column(max_classes);
        column.file_column = c;
        column.labels = std::find(class_columns.begin(), class_columns.end(), header[c]) != class_columns.end();
        m_columns.push_back(std::move(column));
    }
}

std::vector<std::vector<std::vector<std::uint32_t>>> TargetColumns::add(const Region& region,
                                                                        std::uint64_t first_line) {
    const auto& pieces = region.pieces();
    std::vector<std::vector<std::vector<std::uint32_t>>> merged(pieces.size());
    std::uint64_t line = first_line;
    for (std::size_t p = 0; p < pieces.size(); ++p) {
        const Piece& piece = pieces[p];
        merged[p].resize(m_columns.size());
        for (std::size_t t = 0; t < m_columns.size() && t < piece.targets.size(); ++t) {
            Column& column = m_columns[t];
            const PieceTarget& seen = piece.targets[t];
            column.labels = column.labels || seen.labels;
            column.text = column.text || seen.labels;
            if (seen.not_finite && !column.not_finite) {
                column.not_finite = seen.not_finite;
                column.not_finite_line = line;
            }
            merged[p][t] = column.merge.add(seen.labels_seen, line);
        }
        line += piece.lines;
    }
    return merged;
}

void TargetColumns::finish(std::uint64_t rows) {
    const auto label = [&](const Column& c) {
        return "column " + std::to_string(c.file_column + 1) + " " + quote_excerpt(m_header[c.file_column]);
    };
    for (const Column& column : m_columns) {
        if (!column.labels) continue;
        if (column.merge.over_limit())
            BRAIN_THROW(ErrorCode::InvalidData, m_origin, ":", column.merge.over_limit_line(), ": target ",
                        label(column), " holds more than ", m_max_classes,
                        " distinct class labels, the limit (one output unit per class); check that it is the "
                        "column you meant, or raise the limit (the brain command's --max-classes, "
                        "InputLimits::max_classes)");
        if (column.merge.labels().size() < 2)
            BRAIN_THROW(ErrorCode::InvalidData, m_origin, ": target ", label(column), " holds only one class, ",
                        quote_excerpt(column.merge.labels().front()), ", in its ", rows,
                        " rows; a classifier needs at least two classes: check the file or choose another target "
                        "column");
    }
    if (any_labels() && m_columns.size() > 1) {
        const auto it = std::find_if(m_columns.begin(), m_columns.end(), [](const Column& c) { return c.labels; });
        BRAIN_THROW(ErrorCode::InvalidArgument, "Dataset::from_csv('", m_origin, "'): target ", label(*it),
                    " holds class labels, which must be the only target column (", m_columns.size(),
                    " were given); train one classifier per label column");
    }
    for (const Column& column : m_columns)
        if (!column.labels && column.not_finite) raise(*column.not_finite, m_origin, column.not_finite_line);
    for (Column& column : m_columns) {
        if (!column.labels) continue;
        if (!column.text) {
            // A class column of numbers: one class per value, in numeric order, named by the value's first cell
            // (the merged labels are in file order), so "1" and "1.0" are one class.
            if (column.not_finite) raise(*column.not_finite, m_origin, column.not_finite_line);
            const auto& labels = column.merge.labels();
            std::map<float, std::uint32_t> value_class;
            std::vector<float> value_of(labels.size());
            for (std::size_t id = 0; id < labels.size(); ++id) {
                const float v = parse_number(labels[id]).value;
                value_of[id] = v == 0.0f ? 0.0f : v; // -0 and 0 are one class
                value_class.emplace(value_of[id], static_cast<std::uint32_t>(id));
            }
            if (value_class.size() < 2)
                BRAIN_THROW(ErrorCode::InvalidData, m_origin, ": target ", label(column), " holds only one class, ",
                            quote_excerpt(labels.front()), ", in its ", rows,
                            " rows; a classifier needs at least two classes: check the file or choose another "
                            "target column");
            std::map<float, std::uint32_t> position_of;
            for (const auto& [value, first_id] : value_class) {
                position_of.emplace(value, static_cast<std::uint32_t>(column.sorted.size()));
                column.sorted.push_back(labels[first_id]);
            }
            column.position.resize(labels.size());
            for (std::size_t id = 0; id < labels.size(); ++id) {
                column.position[id] = position_of.at(value_of[id]);
                column.index.emplace(labels[id], column.position[id]);
            }
            continue;
        }
        column.position = column.merge.sorted_positions();
        column.sorted.assign(column.merge.labels().size(), std::string());
        for (std::size_t id = 0; id < column.position.size(); ++id)
            column.sorted[column.position[id]] = column.merge.labels()[id];
        for (std::size_t k = 0; k < column.sorted.size(); ++k)
            column.index.emplace(column.sorted[k], static_cast<std::uint32_t>(k));
    }
}

bool TargetColumns::any_labels() const noexcept {
    return std::any_of(m_columns.begin(), m_columns.end(), [](const Column& c) { return c.labels; });
}

std::size_t TargetColumns::width(std::size_t t) const noexcept {
    return m_columns[t].labels ? m_columns[t].sorted.size() : 1;
}

std::size_t TargetColumns::width() const noexcept {
    std::size_t total = 0;
    for (std::size_t t = 0; t < m_columns.size(); ++t) total += width(t);
    return total;
}

std::size_t TargetColumns::offset(std::size_t t) const noexcept {
    std::size_t total = 0;
    for (std::size_t i = 0; i < t; ++i) total += width(i);
    return total;
}

std::optional<std::uint32_t> TargetColumns::class_of(std::size_t t, std::string_view label) const {
    const auto& index = m_columns[t].index;
    if (const auto it = index.find(label); it != index.end()) return it->second;
    return std::nullopt;
}

std::vector<std::string> TargetColumns::target_names() const {
    std::vector<std::string> names;
    for (const Column& column : m_columns) {
        const std::string& name = m_header[column.file_column];
        if (!column.labels) {
            names.push_back(name);
            continue;
        }
        for (const std::string& label : column.sorted) names.push_back(name + "=" + label);
    }
    return names;
}

std::vector<std::string> TargetColumns::class_labels() const {
    std::vector<std::string> labels;
    for (const Column& column : m_columns)
        if (column.labels) labels.insert(labels.end(), column.sorted.begin(), column.sorted.end());
    return labels;
}

} // namespace brain::detail::csv
