#include "csv_table.hpp"

#include <brain/error.hpp>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace brain::app {

namespace {

std::string trim(const std::string& s) {
    const auto begin = s.find_first_not_of(" \t");
    if (begin == std::string::npos) return {};
    const auto end = s.find_last_not_of(" \t");
    return s.substr(begin, end - begin + 1);
}

std::string quoted_list(const std::vector<std::string>& names, std::size_t limit = 12) {
    std::string out;
    for (std::size_t i = 0; i < names.size() && i < limit; ++i) {
        out += i ? ", '" : "'";
        out += names[i];
        out += "'";
    }
    if (names.size() > limit) {
        out += ", ... (";
        out += std::to_string(names.size());
        out += " in all)";
    }
    return out;
}

// Splits one record starting at `pos`; a quoted field may span lines, so `line` advances with them.
bool next_record(const std::string& text, std::size_t& pos, std::size_t& line, char delimiter,
                 std::vector<std::string>& fields, const std::filesystem::path& path) {
    fields.clear();
    if (pos >= text.size()) return false;
    const std::size_t start_line = line;
    std::string field;
    bool quoted = false;
    bool was_quoted = false;
    while (pos < text.size()) {
        const char c = text[pos++];
        if (quoted) {
            if (c == '"') {
                if (pos < text.size() && text[pos] == '"') {
                    field += '"';
                    ++pos;
                } else {
                    quoted = false;
                }
            } else {
                if (c == '\n') ++line;
                field += c;
            }
        } else if (c == '"' && trim(field).empty()) {
            quoted = true;
            was_quoted = true;
            field.clear();
        } else if (c == delimiter) {
            fields.push_back(was_quoted ? field : trim(field));
            field.clear();
            was_quoted = false;
        } else if (c == '\n' || c == '\r') {
            if (c == '\r' && pos < text.size() && text[pos] == '\n') ++pos;
            ++line;
            fields.push_back(was_quoted ? field : trim(field));
            return true;
        } else {
            field += c;
        }
    }
    BRAIN_CHECK(!quoted, ErrorCode::InvalidData, path.string(), ":", start_line,
                ": a quoted field is not closed before the end of the file; add the closing '\"'");
    fields.push_back(was_quoted ? field : trim(field));
    return true;
}

} // namespace

CsvTable CsvTable::read(const std::filesystem::path& path, char delimiter) {
    std::ifstream in(path, std::ios::binary);
    BRAIN_CHECK(in.good(), ErrorCode::IoError, "cannot open CSV file '", path.string(),
                "': it does not exist or is not readable");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();

    CsvTable table;
    table.m_path = path;
    std::size_t pos = 0;
    std::size_t line = 1;
    std::vector<std::string> fields;
    // Leading blank lines carry no header; skip them but keep counting lines.
    while (pos < text.size() && (text[pos] == '\n' || text[pos] == '\r')) {
        if (text[pos] == '\n') ++line;
        ++pos;
    }
    BRAIN_CHECK(next_record(text, pos, line, delimiter, fields, path), ErrorCode::InvalidData, path.string(),
                ": the file is empty; expected a header row naming the columns, then one row per sample");
    for (std::size_t i = 0; i < fields.size(); ++i) {
        BRAIN_CHECK(!fields[i].empty(), ErrorCode::InvalidData, path.string(), ":1: header column ", i + 1,
                    " has no name; every column needs a name");
        for (std::size_t j = 0; j < i; ++j)
            BRAIN_CHECK(fields[j] != fields[i], ErrorCode::InvalidData, path.string(), ":1: the column name '",
                        fields[i], "' appears twice (columns ", j + 1, " and ", i + 1, "); names must be unique");
    }
    table.m_header = fields;

    while (true) {
        const std::size_t record_line = line;
        if (!next_record(text, pos, line, delimiter, fields, path)) break;
        if (fields.size() == 1 && fields[0].empty()) continue; // blank line
        BRAIN_CHECK(fields.size() == table.m_header.size(), ErrorCode::InvalidData, path.string(), ":", record_line,
                    ": expected ", table.m_header.size(), " fields (as in the header), found ", fields.size(),
                    "; every row needs one value per header column");
        table.m_cells.push_back(fields);
        table.m_lines.push_back(record_line);
    }
    return table;
}

std::optional<std::size_t> CsvTable::column_index(const std::string& name) const {
    for (std::size_t i = 0; i < m_header.size(); ++i)
        if (m_header[i] == name) return i;
    return std::nullopt;
}

std::optional<float> parse_finite_float(const std::string& text) {
    if (text.empty()) return std::nullopt;
    // strtof accepts "nan", "inf" and hex; we accept only what it fully consumes, then reject non-finite values.
    const char* begin = text.c_str();
    char* end = nullptr;
    errno = 0;
    const float value = std::strtof(begin, &end);
    if (end != begin + text.size() || errno == ERANGE) return std::nullopt;
    if (!std::isfinite(value)) return std::nullopt;
    return value;
}

Matrix CsvTable::numeric_columns(const std::vector<std::string>& names) const {
    std::vector<std::size_t> index;
    std::vector<std::string> missing;
    for (const auto& name : names) {
        const auto i = column_index(name);
        if (i)
            index.push_back(*i);
        else
            missing.push_back(name);
    }
    BRAIN_CHECK(missing.empty(), ErrorCode::InvalidData, m_path.string(), " has no column",
                missing.size() > 1 ? "s " : " ", quoted_list(missing), " (needed: ", quoted_list(names),
                "; the file has ", quoted_list(m_header), "); add the missing column",
                missing.size() > 1 ? "s" : "", " to the header");
    Matrix out(m_cells.size(), names.size());
    for (std::size_t r = 0; r < m_cells.size(); ++r) {
        for (std::size_t c = 0; c < index.size(); ++c) {
            const std::string& text = m_cells[r][index[c]];
            const auto value = parse_finite_float(text);
            if (!value) {
                const std::string lower = [&] {
                    std::string s;
                    for (char ch : text) s += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
                    return s;
                }();
                const bool non_finite =
                    lower.find("nan") != std::string::npos || lower.find("inf") != std::string::npos;
                BRAIN_THROW(ErrorCode::InvalidData, m_path.string(), ":", m_lines[r], ": column ", index[c] + 1,
                            " '", names[c], "': expected a finite number, found '", text, "'",
                            non_finite ? "; NaN and infinite values are not allowed, remove or impute them"
                                       : "; fix or remove that row");
            }
            out(r, c) = *value;
        }
    }
    return out;
}

std::string csv_escape(const std::string& cell, char delimiter) {
    if (cell.find_first_of(std::string{delimiter, '"', '\n', '\r'}) == std::string::npos) return cell;
    std::string out = "\"";
    for (char c : cell) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

} // namespace brain::app
