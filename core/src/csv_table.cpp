// CsvTable's lookups and the one number syntax (parse_csv_number, csv_scan.hpp's parse_number), used for
// features, numeric targets and brain predict's columns alike.
#include "csv_scan.hpp"
#include "csv_targets.hpp"
#include "host_memory.hpp"

#include <brain/csv_table.hpp>
#include <brain/error.hpp>
#include <string>

namespace brain {

namespace {} // namespace

CsvNumber parse_csv_number(std::string_view cell) noexcept {
    const detail::csv::Number n = detail::csv::parse_number(cell);
    return {static_cast<CsvCellKind>(n.kind), n.value};
}

std::string_view CsvTable::cell(std::size_t row, std::size_t column) const noexcept {
    const std::size_t i = row * m_header.size() + column;
    const std::size_t begin = i == 0 ? 0 : m_ends[i - 1];
    return std::string_view(m_text).substr(begin, m_ends[i] - begin);
}

std::optional<std::size_t> CsvTable::column_index(std::string_view name) const {
    for (std::size_t i = 0; i < m_header.size(); ++i)
        if (m_header[i] == name) return i;
    return std::nullopt;
}

std::string CsvTable::column_label(std::size_t column) const {
    return "column " + std::to_string(column + 1) + " " + quote_excerpt(m_header[column]);
}

void CsvTable::fail_cell(std::size_t row, std::size_t column, const CsvNumber& number,
                         std::string_view role) const {
    BRAIN_THROW(ErrorCode::InvalidData, m_origin, ":", m_lines[row], ": ",
                detail::csv::number_fault_text(column_label(column), role,
                                               static_cast<detail::csv::NumberKind>(number.kind),
                                               cell(row, column)));
}

Matrix CsvTable::numbers(const std::vector<std::size_t>& columns, std::string_view role) const {
    for (const std::size_t c : columns)
        BRAIN_CHECK_ARG(c < m_header.size(), "CsvTable::numbers: column index ", c, " is out of range; ", m_origin,
                        " has ", m_header.size(), " columns");
    const std::uint64_t bytes =
        detail::saturating_mul(detail::saturating_mul(rows(), columns.size()), sizeof(float));
    detail::require_host_memory(
        bytes, "the " + std::to_string(rows()) + " x " + std::to_string(columns.size()) + " matrix of " + m_origin,
        "use fewer rows or columns, or free memory");
    Matrix out(rows(), columns.size());
    for (std::size_t r = 0; r < rows(); ++r)
        for (std::size_t j = 0; j < columns.size(); ++j) {
            const CsvNumber number = parse_csv_number(cell(r, columns[j]));
            if (number.kind != CsvCellKind::Number) fail_cell(r, columns[j], number, role);
            out(r, j) = number.value;
        }
    return out;
}

Matrix CsvTable::numeric_columns(const std::vector<std::string>& names, std::string_view role) const {
    std::vector<std::size_t> index;
    std::vector<std::string> missing;
    for (const auto& name : names) {
        if (const auto i = column_index(name))
            index.push_back(*i);
        else
            missing.push_back(name);
    }
    BRAIN_CHECK(missing.empty(), ErrorCode::InvalidData, m_origin, " has no column",
                missing.size() > 1 ? "s " : " ", detail::csv::quoted_names(missing),
                " (needed: ", detail::csv::quoted_names(names), "; the file has ",
                detail::csv::quoted_names(m_header), "); add the missing column", missing.size() > 1 ? "s" : "",
                " to the header");
    return numbers(index, role);
}

std::string csv_escape(std::string_view cell, char delimiter) {
    const bool edge_blank =
        !cell.empty() && (cell.front() == ' ' || cell.front() == '\t' || cell.back() == ' ' || cell.back() == '\t');
    if (!edge_blank && cell.find_first_of(std::string{delimiter, '"', '\n', '\r'}) == std::string_view::npos)
        return std::string(cell);
    std::string out = "\"";
    for (char c : cell) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

} // namespace brain
