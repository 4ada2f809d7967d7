// CsvTable::read and CsvTable::parse: the one CSV reader. Hand-written rather than a library so that every error
// names file:line and column, and so that the limits hold while the text is scanned (a 100 MB cell or a header of
// ten million commas is refused when it passes the limit, not after it was stored).
#include "input_file.hpp"
#include "utf8.hpp"

#include <brain/csv_table.hpp>
#include <brain/error.hpp>
#include <cstdio>
#include <new>
#include <unordered_map>

namespace brain {

namespace {

bool is_blank(char c) noexcept {
    return c == ' ' || c == '\t';
}

// Scans CSV text into a CsvTable's storage, one record at a time, checking every rule as it goes.
class Scanner {
public:
    Scanner(std::string_view text, const std::string& origin, char delimiter, const InputLimits& limits,
            std::vector<std::string>& header, std::string& cells, std::vector<std::size_t>& ends,
            std::vector<std::size_t>& lines)
        : m_text(text), m_origin(origin), m_delimiter(delimiter), m_limits(limits), m_header(header),
          m_cells(cells), m_ends(ends), m_lines(lines) {}

    void run() {
        if (m_text.starts_with("\xEF\xBB\xBF")) m_text.remove_prefix(3);
        start_record();
        const std::size_t n = m_text.size();
        while (m_pos < n) {
            const char c = m_text[m_pos];
            if (c == '"' && !m_quoted && only_blanks(m_field)) {
                read_quoted();
                continue;
            }
            if (c == m_delimiter) {
                m_has_text = true; // ",," is a record of empty cells, not a blank line
                end_field();
                ++m_pos;
                m_field_line = m_line;
                continue;
            }
            if (c == '\r' || c == '\n') {
                end_record();
                if (c == '\r' && m_pos + 1 < n && m_text[m_pos + 1] == '\n') ++m_pos;
                ++m_pos;
                ++m_line;
                start_record();
                continue;
            }
            if (c == '\0') nul_byte();
            if (!is_blank(c)) m_has_text = true;
            push(c);
            ++m_pos;
        }
        if (m_has_text || m_field_count > 0) end_record();
        if (!m_header_done)
            fail(1, "the file is empty; expected a header row naming the columns, then one row per sample");
        if (m_lines.empty())
            fail(m_header_line, "the file has a header but no data rows; add at least one row of values");
    }

private:
    template <class... Parts>
    [[noreturn]] void fail(std::size_t line, const Parts&... parts) const {
        BRAIN_THROW(ErrorCode::InvalidData, m_origin, ":", line, ": ", parts...);
    }

    // "column 3" in the header, "column 3 'name'" in data rows.
    std::string where() const {
        std::string s = "column " + std::to_string(m_field_count + 1);
        if (m_header_done && m_field_count < m_header.size()) {
            s += ' ';
            s += quote_excerpt(m_header[m_field_count]);
        }
        return s;
    }

    bool only_blanks(const std::string& s) const {
        for (char c : s)
            if (!is_blank(c) || c == m_delimiter) return false;
        return true;
    }

    void nul_byte() const {
        fail(m_line, where(),
             ": the cell holds a NUL byte; a CSV file is text (is this a binary file, or text "
             "saved as UTF-16? save it as UTF-8)");
    }

    void push(char c) {
        if (m_field.size() >= m_limits.max_cell_bytes)
            fail(m_field_line, where(), ": the cell is longer than the limit of ", m_limits.max_cell_bytes,
                 " bytes (it starts ", quote_excerpt(m_field),
                 "); check the quoting, or raise the limit (the "
                 "brain command's --max-cell-bytes, InputLimits::max_cell_bytes)");
        m_field.push_back(c);
    }

    void read_quoted() {
        // Opening quote: read up to the closing quote; "" inside stands for one quote, and line breaks inside
        // are part of the field.
        const std::size_t opened_on = m_line;
        const std::size_t n = m_text.size();
        m_field.clear();
        m_quoted = true;
        m_has_text = true;
        ++m_pos;
        while (m_pos < n) {
            const char q = m_text[m_pos];
            if (q == '"') {
                if (m_pos + 1 < n && m_text[m_pos + 1] == '"') {
                    push('"');
                    m_pos += 2;
                    continue;
                }
                ++m_pos;
                // Only blanks may follow the closing quote before the delimiter or the end of the line.
                while (m_pos < n && is_blank(m_text[m_pos]) && m_text[m_pos] != m_delimiter) ++m_pos;
                if (m_pos < n && m_text[m_pos] != m_delimiter && m_text[m_pos] != '\n' && m_text[m_pos] != '\r')
                    fail(m_line, where(), ": unexpected character ", quote_excerpt(m_text.substr(m_pos, 1)),
                         " after a closing quote; quote the whole field and write a literal quote as \"\"");
                return;
            }
            if (q == '\n') ++m_line;
            if (q == '\0') nul_byte();
            push(q);
            ++m_pos;
        }
        fail(opened_on, where(),
             ": unterminated quoted field (the opening quote has no closing quote before the "
             "end of the file); close the quote or write a literal quote as \"\"");
    }

    void start_record() {
        m_field.clear();
        m_quoted = false;
        m_has_text = false;
        m_field_count = 0;
        m_record_line = m_line;
        m_field_line = m_line;
        m_record_start = m_ends.size();
        m_record_text = m_cells.size();
    }

    std::string_view finished_field() {
        std::string_view f = m_field;
        if (!m_quoted) {
            const auto blank = [this](char c) { return is_blank(c) && c != m_delimiter; };
            while (!f.empty() && blank(f.front())) f.remove_prefix(1);
            while (!f.empty() && blank(f.back())) f.remove_suffix(1);
        }
        return f;
    }

    void end_field() {
        const std::string_view f = finished_field();
        if (const std::size_t bad = detail::utf8_invalid_offset(f); bad != f.size()) {
            char byte[8];
            std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(f[bad]));
            fail(m_field_line, where(), ": the cell is not valid UTF-8 (byte ", byte, " at offset ", bad, " in ",
                 quote_excerpt(f), "); save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)");
        }
        if (!m_header_done) {
            if (m_header.size() >= m_limits.max_columns)
                fail(m_record_line, "the header has more than ", m_limits.max_columns,
                     " columns, the limit; check the delimiter, or raise the limit (the brain command's "
                     "--max-columns, InputLimits::max_columns)");
            m_header.emplace_back(f);
        } else if (m_field_count < m_header.size()) {
            m_cells.append(f);
            m_ends.push_back(m_cells.size());
        }
        ++m_field_count;
        m_field.clear();
        m_quoted = false;
    }

    void end_record() {
        end_field();
        if (!m_has_text) { // a blank line
            m_ends.resize(m_record_start);
            m_cells.resize(m_record_text);
            if (!m_header_done) m_header.clear();
            return;
        }
        if (!m_header_done) {
            check_header();
            m_header_done = true;
            m_header_line = m_record_line;
            return;
        }
        if (m_field_count != m_header.size())
            fail(m_record_line, "expected ", m_header.size(), " fields (as in the header), found ", m_field_count,
                 "; every row needs one value per header column");
        m_lines.push_back(m_record_line);
    }

    void check_header() const {
        std::unordered_map<std::string_view, std::size_t> seen;
        for (std::size_t i = 0; i < m_header.size(); ++i) {
            if (m_header[i].empty())
                fail(m_record_line, "header column ", i + 1, " has no name; every column needs a name");
            const auto [at, fresh] = seen.emplace(m_header[i], i);
            if (!fresh)
                fail(m_record_line, "the column name ", quote_excerpt(m_header[i]), " appears twice (columns ",
                     at->second + 1, " and ", i + 1, "); names must be unique");
        }
    }

    std::string_view m_text;
    const std::string& m_origin;
    char m_delimiter;
    const InputLimits& m_limits;
    std::vector<std::string>& m_header;
    std::string& m_cells;
    std::vector<std::size_t>& m_ends;
    std::vector<std::size_t>& m_lines;

    std::size_t m_pos = 0;
    std::size_t m_line = 1;
    std::string m_field;
    bool m_quoted = false;   // the current field was quoted
    bool m_has_text = false; // anything but blanks on this record
    std::size_t m_field_count = 0;
    std::size_t m_record_line = 1;
    std::size_t m_field_line = 1;
    std::size_t m_record_start = 0;
    std::size_t m_record_text = 0;
    bool m_header_done = false;
    std::size_t m_header_line = 1;
};

} // namespace

CsvTable CsvTable::read(const std::filesystem::path& path, char delimiter, const InputLimits& limits) {
    const std::string text =
        detail::read_input_file(path, "CSV file", limits.max_file_bytes, ErrorCode::InvalidData);
    return parse(text, path.string(), delimiter, limits);
}

CsvTable CsvTable::parse(std::string_view text, const std::string& origin, char delimiter,
                         const InputLimits& limits) {
    BRAIN_CHECK_ARG(delimiter != '"' && delimiter != '\n' && delimiter != '\r' && delimiter != '\0',
                    "CSV delimiter must not be a quote, a line break or NUL; use ',', ';' or '\\t'");
    CsvTable table;
    table.m_origin = origin;
    try {
        table.m_text.reserve(text.size());
        Scanner(text, table.m_origin, delimiter, limits, table.m_header, table.m_text, table.m_ends, table.m_lines)
            .run();
    } catch (const std::bad_alloc&) {
        BRAIN_THROW(ErrorCode::AllocationFailed, "not enough host memory to hold the cells of ", origin, " (",
                    text.size(), " bytes); free memory, raise the process's memory limit or use a smaller file");
    }
    return table;
}

} // namespace brain
