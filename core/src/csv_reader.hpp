// brain::detail::CsvReader: a small RFC 4180 reader (header row, quoted fields, doubled quotes, CRLF) that
// keeps the line number of every record so that data errors can name file:line.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace brain::detail {

// One record (row) of a CSV file.
struct CsvRecord {
    std::size_t line = 0;            // 1-based physical line on which the record starts
    std::vector<std::string> fields; // unquoted fields are trimmed of blanks; quoted ones are kept verbatim
};

// Parses CSV text into records. Blank lines are skipped; a UTF-8 byte-order mark is ignored.
class CsvReader {
public:
    // Reads and parses a file; IoError naming the path when it cannot be read.
    static std::vector<CsvRecord> read_file(const std::filesystem::path& path, char delimiter);
    // Parses text; `origin` (usually the file name) prefixes error messages (InvalidData, naming origin:line).
    static std::vector<CsvRecord> parse(std::string_view text, char delimiter, const std::string& origin);
};

} // namespace brain::detail
