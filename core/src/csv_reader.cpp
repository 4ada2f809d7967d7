// CSV parsing for Dataset::from_csv. Hand-written rather than a library so that every error can name file:line.
#include "csv_reader.hpp"

#include <brain/error.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace brain::detail {

namespace {

bool is_blank(char c) noexcept {
    return c == ' ' || c == '\t';
}

std::string trim(std::string_view s, char delimiter) {
    // A tab delimiter must not be trimmed away as if it were padding.
    auto blank = [delimiter](char c) { return is_blank(c) && c != delimiter; };
    std::size_t b = 0, e = s.size();
    while (b < e && blank(s[b])) ++b;
    while (e > b && blank(s[e - 1])) --e;
    return std::string(s.substr(b, e - b));
}

} // namespace

std::vector<CsvRecord> CsvReader::read_file(const std::filesystem::path& path, char delimiter) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        const int err = errno;
        BRAIN_THROW(ErrorCode::IoError, "cannot open CSV file '", path.string(),
                    "': ", err != 0 ? std::strerror(err) : "open failed", "; check the path and its permissions");
    }
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (in.bad()) BRAIN_THROW(ErrorCode::IoError, "cannot read CSV file '", path.string(), "': read error");
    return parse(buffer.str(), delimiter, path.string());
}

std::vector<CsvRecord> CsvReader::parse(std::string_view text, char delimiter, const std::string& origin) {
    BRAIN_CHECK_ARG(delimiter != '"' && delimiter != '\n' && delimiter != '\r',
                    "CSV delimiter must not be a quote or a line break; use ',', ';' or '\\t'");
    if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);

    std::vector<CsvRecord> records;
    CsvRecord current;
    std::string field;
    bool field_quoted = false;    // the current field began with a quote
    bool record_has_text = false; // anything but blanks seen on this record (blank lines are skipped)
    std::size_t line = 1;
    current.line = 1;

    auto end_field = [&] {
        current.fields.push_back(field_quoted ? field : trim(field, delimiter));
        field.clear();
        field_quoted = false;
    };
    auto end_record = [&] {
        end_field();
        if (record_has_text) records.push_back(std::move(current));
        current = CsvRecord{};
        record_has_text = false;
    };

    std::size_t i = 0;
    const std::size_t n = text.size();
    while (i < n) {
        const char c = text[i];
        if (c == '"' && !field_quoted && trim(field, delimiter).empty()) {
            // Opening quote: read up to the closing quote; "" inside stands for one quote, and line breaks
            // inside are part of the field.
            const std::size_t opened_on = line;
            field.clear();
            field_quoted = true;
            record_has_text = true;
            ++i;
            bool closed = false;
            while (i < n) {
                const char q = text[i];
                if (q == '"') {
                    if (i + 1 < n && text[i + 1] == '"') {
                        field.push_back('"');
                        i += 2;
                        continue;
                    }
                    closed = true;
                    ++i;
                    break;
                }
                if (q == '\n') ++line;
                field.push_back(q);
                ++i;
            }
            if (!closed)
                BRAIN_THROW(ErrorCode::InvalidData, origin, ":", opened_on,
                            ": unterminated quoted field (the opening quote has no closing quote before the end "
                            "of the file); close the quote or write a literal quote as \"\"");
            // Only blanks may follow the closing quote before the delimiter or the end of the line.
            while (i < n && is_blank(text[i]) && text[i] != delimiter) ++i;
            if (i < n && text[i] != delimiter && text[i] != '\n' && text[i] != '\r')
                BRAIN_THROW(ErrorCode::InvalidData, origin, ":", line, ": unexpected character '", text[i],
                            "' after a closing quote; quote the whole field and write a literal quote as \"\"");
            continue;
        }
        if (c == delimiter) {
            record_has_text = true; // ",," is a record of empty cells, not a blank line
            end_field();
            ++i;
            continue;
        }
        if (c == '\r' || c == '\n') {
            end_record();
            if (c == '\r' && i + 1 < n && text[i + 1] == '\n') ++i;
            ++i;
            ++line;
            current.line = line;
            continue;
        }
        if (!is_blank(c)) record_has_text = true;
        field.push_back(c);
        ++i;
    }
    if (record_has_text || !current.fields.empty()) end_record();
    return records;
}

} // namespace brain::detail
