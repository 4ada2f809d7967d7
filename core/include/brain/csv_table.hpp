// brain::CsvTable: a CSV file read under the project's one set of rules, shared by Dataset::from_csv (brain train)
// and brain predict, so that both accept exactly the same files, headers and numbers.
#pragma once

#include <brain/export.hpp>
#include <brain/limits.hpp>
#include <brain/matrix.hpp>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace brain {

// How one CSV cell reads as a number.
enum class CsvCellKind { Number, Empty, NotNumeric, NotFinite };

// A cell read as a number: blanks around it ignored, an optional leading '+', decimal or scientific notation
// (std::from_chars' float syntax); NaN, infinity and values beyond float32's range are NotFinite.
struct CsvNumber {
    CsvCellKind kind = CsvCellKind::NotNumeric;
    float value = 0.0f;
};
BRAIN_API CsvNumber parse_csv_number(std::string_view cell) noexcept;

// A CSV file with a header row and at least one data row, as text cells with line numbers. The rules (RFC 4180
// plus): a UTF-8 byte-order mark is skipped; blank lines are skipped; unquoted cells are trimmed of spaces and
// tabs, quoted cells ("a,b", "say ""hi""", line breaks inside) are kept verbatim; every cell must be valid UTF-8
// without NUL bytes; header names must be non-empty and unique; every row has one cell per header column. The
// InputLimits bound the file size, the column count and the cell length. Errors are InvalidData naming the file,
// line and column (IoError when the file cannot be read).
class BRAIN_API CsvTable {
public:
    // Read and parse a file (a regular file or a pipe; a directory, device or socket is refused).
    static CsvTable read(const std::filesystem::path& path, char delimiter = ',', const InputLimits& limits = {});
    // Only the header row's names (the file's first bytes are read: a pipe's, or a mapped file's first pages).
    static std::vector<std::string> read_header(const std::filesystem::path& path, char delimiter = ',',
                                                const InputLimits& limits = {});
    // Parse text; `origin` (usually the file name) prefixes error messages.
    static CsvTable parse(std::string_view text, const std::string& origin, char delimiter = ',',
                          const InputLimits& limits = {});

    // The file name (or origin) the table was read from.
    const std::string& origin() const noexcept { return m_origin; }
    const std::vector<std::string>& header() const noexcept { return m_header; }
    std::size_t rows() const noexcept { return m_lines.size(); }
    std::size_t columns() const noexcept { return m_header.size(); }
    // Cell (row, column) as text; row 0 is the first data row. Unchecked.
    std::string_view cell(std::size_t row, std::size_t column) const noexcept;
    // The 1-based line of the file on which data row `row` starts.
    std::size_t line_of(std::size_t row) const noexcept { return m_lines[row]; }
    // The index of a header name, if present.
    std::optional<std::size_t> column_index(std::string_view name) const;
    // "column 3 'price'", for messages.
    std::string column_label(std::size_t column) const;

    // The given columns as a rows x columns.size() matrix. Throws InvalidData naming the file, line and column of
    // the first cell that is not a finite number; `role` ("a feature", "a target") says what the column is for.
    Matrix numbers(const std::vector<std::size_t>& columns, std::string_view role) const;
    // The named columns, in the given order. Throws InvalidData naming every missing column (and the columns the
    // file has), or as numbers() does.
    Matrix numeric_columns(const std::vector<std::string>& names, std::string_view role = "a feature") const;
    // Throws the InvalidData error for cell (row, column), read as `number`, in the role `role`.
    [[noreturn]] void fail_cell(std::size_t row, std::size_t column, const CsvNumber& number,
                                std::string_view role) const;

private:
    std::string m_origin;
    std::vector<std::string> m_header;
    std::string m_text;              // every data cell, concatenated
    std::vector<std::size_t> m_ends; // end offset of each cell in m_text, row-major
    std::vector<std::size_t> m_lines;
};

// A cell escaped for CSV output (quoted when it holds the delimiter, a quote, a line break or edge blanks).
BRAIN_API std::string csv_escape(std::string_view cell, char delimiter = ',');

} // namespace brain
