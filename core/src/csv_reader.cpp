// CsvTable::read and CsvTable::parse: a CSV file as text cells, scanned by the one scanner (csv_scan.hpp) that
// every reader of brain uses, so that every error names file:line and column and the limits hold while the text
// is scanned (a 100 MB cell or a header of ten million commas is refused when it passes the limit).
#include "csv_input.hpp"
#include "csv_region.hpp"
#include "csv_scan.hpp"

#include <brain/csv_table.hpp>
#include <brain/error.hpp>
#include <new>

namespace brain {

namespace {

// Keeps every data cell, one after another.
struct TableSink {
    std::string& cells;
    std::vector<std::size_t>& ends;
    void header_cell(std::size_t, std::string_view, std::uint64_t) {}
    void cell(std::size_t, std::string_view value, std::uint64_t) {
        cells.append(value);
        ends.push_back(cells.size());
    }
};

} // namespace

CsvTable CsvTable::read(const std::filesystem::path& path, char delimiter, const InputLimits& limits) {
    BRAIN_CHECK_ARG(delimiter != '"' && delimiter != '\n' && delimiter != '\r' && delimiter != '\0',
                    "CSV delimiter must not be a quote, a line break or NUL; use ',', ';' or '\\t'");
    // Through CsvInput: a pipe's records are held to RecordBound while it is read (a regular file is mapped).
    detail::CsvInput input(path, limits);
    const detail::csv::Rules rules{delimiter, limits};
    const detail::csv::Header header = detail::csv::read_header(input, rules, path.string());
    const detail::csv::ColumnPlan plan(header.names.size());
    detail::csv::read_all_bounded(input, header, rules, plan, path.string());
    return parse(input.text(), path.string(), delimiter, limits);
}

std::vector<std::string> CsvTable::read_header(const std::filesystem::path& path, char delimiter,
                                               const InputLimits& limits) {
    BRAIN_CHECK_ARG(delimiter != '"' && delimiter != '\n' && delimiter != '\r' && delimiter != '\0',
                    "CSV delimiter must not be a quote, a line break or NUL; use ',', ';' or '\\t'");
    detail::CsvInput input(path, limits);
    const detail::csv::Rules rules{delimiter, limits};
    return detail::csv::read_header(input, rules, path.string()).names;
}

CsvTable CsvTable::parse(std::string_view text, const std::string& origin, char delimiter,
                         const InputLimits& limits) {
    BRAIN_CHECK_ARG(delimiter != '"' && delimiter != '\n' && delimiter != '\r' && delimiter != '\0',
                    "CSV delimiter must not be a quote, a line break or NUL; use ',', ';' or '\\t'");
    namespace csv = detail::csv;
    CsvTable table;
    table.m_origin = origin;
    const csv::Rules rules{delimiter, limits};
    try {
        csv::Header header = csv::read_header(text, rules, origin);
        table.m_header = std::move(header.names);
        table.m_text.reserve(text.size() - header.data_offset);
        TableSink sink{table.m_text, table.m_ends};
        csv::RecordScanner<TableSink> scanner(text, header.data_offset, rules, &table.m_header,
                                              table.m_header.size(), sink);
        try {
            while (true) {
                const auto step = scanner.next();
                if (step == csv::RecordScanner<TableSink>::Step::End) break;
                if (step == csv::RecordScanner<TableSink>::Step::Record)
                    table.m_lines.push_back(header.data_line + scanner.record_line());
            }
        } catch (const csv::FaultThrown& f) {
            csv::raise(f.fault, origin, header.data_line);
        }
        BRAIN_CHECK(!table.m_lines.empty(), ErrorCode::InvalidData, origin, ":", header.line,
                    ": the file has a header but no data rows; add at least one row of values");
    } catch (const std::bad_alloc&) {
        BRAIN_THROW(ErrorCode::AllocationFailed, "not enough host memory to hold the cells of ", origin, " (",
                    text.size(), " bytes); free memory, raise the process's memory limit or use a smaller file");
    }
    return table;
}

} // namespace brain
