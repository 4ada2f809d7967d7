// CsvTable's lookups and its one number syntax (parse_csv_number), used for features, numeric targets and
// brain predict's columns alike.
#include "host_memory.hpp"

#include <brain/csv_table.hpp>
#include <brain/error.hpp>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace brain {

namespace {

std::string quoted_list(const std::vector<std::string>& names, std::size_t limit = 12) {
    std::string out;
    for (std::size_t i = 0; i < names.size() && i < limit; ++i) {
        if (i) out += ", ";
        out += quote_excerpt(names[i], 40);
    }
    if (names.size() > limit) out += ", ... (" + std::to_string(names.size()) + " in all)";
    return out;
}

} // namespace

CsvNumber parse_csv_number(std::string_view cell) noexcept {
    const char* first = cell.data();
    const char* last = cell.data() + cell.size();
    // Quoted cells keep their blanks (they may be labels); numbers ignore them.
    while (first < last && (*first == ' ' || *first == '\t')) ++first;
    while (last > first && (last[-1] == ' ' || last[-1] == '\t')) --last;
    if (first == last) return {CsvCellKind::Empty, 0.0f};
    // from_chars rejects a leading '+', which spreadsheets do write.
    if (*first == '+' && last - first > 1 && first[1] != '-' && first[1] != '+') ++first;
    float value = 0.0f;
    const auto [ptr, ec] = std::from_chars(first, last, value);
    if (ptr != last || ec == std::errc::invalid_argument) return {CsvCellKind::NotNumeric, 0.0f};
    if (ec == std::errc::result_out_of_range) {
        // Underflow means "tiny": keep strtod's (possibly zero) value; overflow is not representable. The cell is
        // short here: from_chars consumed all of it as a number.
        char copy[512];
        const auto length = static_cast<std::size_t>(last - first);
        if (length >= sizeof copy) return {CsvCellKind::NotFinite, 0.0f};
        std::copy(first, last, copy);
        copy[length] = '\0';
        const auto f = static_cast<float>(std::strtod(copy, nullptr));
        if (!std::isfinite(f)) return {CsvCellKind::NotFinite, f};
        return {CsvCellKind::Number, f};
    }
    if (!std::isfinite(value)) return {CsvCellKind::NotFinite, value};
    return {CsvCellKind::Number, value};
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
    const std::string at = m_origin + ":" + std::to_string(m_lines[row]) + ": " + column_label(column) + " (" +
                           std::string(role) + ")";
    const std::string_view text = cell(row, column);
    switch (number.kind) {
    case CsvCellKind::Empty:
        BRAIN_THROW(ErrorCode::InvalidData, at, " is empty; fill in or drop rows with missing values");
    case CsvCellKind::NotFinite:
        BRAIN_THROW(ErrorCode::InvalidData, at, " is ", quote_excerpt(text),
                    ", which is not a finite float32 value; NaN, infinity and values beyond +-3.4e38 are not "
                    "allowed, remove or impute them");
    default:
        BRAIN_THROW(ErrorCode::InvalidData, at, ": expected a number, found ", quote_excerpt(text),
                    "; fix or remove that row");
    }
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
                missing.size() > 1 ? "s " : " ", quoted_list(missing), " (needed: ", quoted_list(names),
                "; the file has ", quoted_list(m_header), "); add the missing column",
                missing.size() > 1 ? "s" : "", " to the header");
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
