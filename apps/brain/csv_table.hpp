// brain::app::CsvTable: a CSV file read as text cells with line numbers, for `brain predict`, which selects
// feature columns by name (Dataset::from_csv needs target columns; a file to predict on has none).
#pragma once

#include <brain/matrix.hpp>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace brain::app {

// A CSV file with a header row. Cells are kept as text; quoted fields ("a,b", "say ""hi""") are supported.
class CsvTable {
public:
    // Read the whole file. Throws Error(IoError) when it cannot be opened and Error(InvalidData) naming the
    // file and line for an empty file, an empty or duplicate header name, or a row whose cell count differs
    // from the header's.
    static CsvTable read(const std::filesystem::path& path, char delimiter = ',');

    const std::filesystem::path& path() const noexcept { return m_path; }
    const std::vector<std::string>& header() const noexcept { return m_header; }
    std::size_t rows() const noexcept { return m_cells.size(); }
    // Cell (row, column) as text; row 0 is the first data row.
    const std::string& cell(std::size_t row, std::size_t column) const { return m_cells[row][column]; }
    // The 1-based line of the file on which data row `row` starts.
    std::size_t line_of(std::size_t row) const { return m_lines[row]; }
    // The index of a header name, if present.
    std::optional<std::size_t> column_index(const std::string& name) const;

    // The named columns, in the given order, as a rows x names.size() matrix. Throws Error(InvalidData)
    // naming every missing column (and the columns the file has), or the file, line and column of the first
    // cell that is not a finite number.
    Matrix numeric_columns(const std::vector<std::string>& names) const;

private:
    std::filesystem::path m_path;
    std::vector<std::string> m_header;
    std::vector<std::vector<std::string>> m_cells;
    std::vector<std::size_t> m_lines;
};

// A cell escaped for CSV output (quoted when it holds the delimiter, a quote or a line break).
std::string csv_escape(const std::string& cell, char delimiter = ',');

// Parse a whole cell as a finite float; nullopt for anything else (empty, text, trailing junk, NaN, inf).
std::optional<float> parse_finite_float(const std::string& text);

} // namespace brain::app
