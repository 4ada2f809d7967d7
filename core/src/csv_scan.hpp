// Internal: the one CSV scanner. Every reader of brain (CsvTable, the parallel loader behind Dataset::from_csv, the
// streaming CsvReader and StreamingDataset) scans records with RecordScanner, so the rules (RFC 4180 plus: blanks
// trimmed from unquoted cells, blank lines skipped, UTF-8 only, no NUL, the InputLimits) and the messages that name
// a defect are the same everywhere. A scan may start at any record boundary of the text: lines are counted from
// there, and whoever knows the lines before it adds them when the message is made (Fault).
#pragma once

#include "utf8.hpp"

#include <algorithm>
#include <array>
#include <brain/error.hpp>
#include <brain/limits.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <fast_float/fast_float.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace brain::detail::csv {

// A defect found by a scan. `line` counts from the line the scan started on (0 there); the message is `text`
// after "<origin>:<line>: ".
struct Fault {
    ErrorCode code = ErrorCode::InvalidData;
    std::uint64_t line = 0;
    std::string text;
};

// Thrown by the scanner and the sinks; readers catch it and turn it into brain::Error with the absolute line.
struct FaultThrown {
    Fault fault;
};

template <class... Parts>
[[noreturn]] void fault_at(std::uint64_t line, const Parts&... parts) {
    throw FaultThrown{Fault{ErrorCode::InvalidData, line, concat(parts...)}};
}

inline bool is_blank(char c) noexcept {
    return c == ' ' || c == '\t';
}

// The settings a scan follows.
struct Rules {
    char delimiter = ',';
    InputLimits limits;
};

// "column 3" or "column 3 'price'" when the header names it.
inline std::string column_words(std::size_t column, const std::vector<std::string>* header) {
    std::string s = "column " + std::to_string(column + 1);
    if (header && column < header->size()) {
        s += ' ';
        s += quote_excerpt((*header)[column]);
    }
    return s;
}

// How a cell reads as a number (brain::CsvCellKind's values).
enum class NumberKind { Number, Empty, NotNumeric, NotFinite };

struct Number {
    NumberKind kind = NumberKind::NotNumeric;
    float value = 0.0f;
};

// The one number syntax: blanks around the number ignored, one optional leading '+', then std::from_chars' float
// syntax (decimal or scientific; "inf" and "nan" read, and refused as not finite), correctly rounded to float32
// by fast_float. A value beyond float32's range is not finite; one below its smallest subnormal is 0.
inline Number parse_number(const char* first, const char* last) noexcept {
    while (first < last && is_blank(*first)) ++first;
    while (last > first && is_blank(last[-1])) --last;
    if (first == last) return {NumberKind::Empty, 0.0f};
    // from_chars rejects a leading '+', which spreadsheets do write.
    if (*first == '+' && last - first > 1 && first[1] != '-' && first[1] != '+') ++first;
    float value = 0.0f;
    const auto result = fast_float::from_chars(first, last, value);
    if (result.ptr != last || result.ec == std::errc::invalid_argument) return {NumberKind::NotNumeric, 0.0f};
    if (!std::isfinite(value)) return {NumberKind::NotFinite, value};
    return {NumberKind::Number, value};
}

inline Number parse_number(std::string_view cell) noexcept {
    return parse_number(cell.data(), cell.data() + cell.size());
}

// The sentence for a cell that is not a finite number, after "<origin>:<line>: ".
inline std::string number_fault_text(const std::string& column, std::string_view role, NumberKind kind,
                                     std::string_view cell) {
    const std::string at = column + " (" + std::string(role) + ")";
    switch (kind) {
    case NumberKind::Empty:
        return at + " is empty; fill in or drop rows with missing values";
    case NumberKind::NotFinite:
        return at + " is " + quote_excerpt(cell) +
               ", which is not a finite float32 value; NaN, infinity and values beyond +-3.4e38 are not allowed, "
               "remove or impute them";
    default:
        return at + ": expected a number, found " + quote_excerpt(cell) + "; fix or remove that row";
    }
}

// Scans records of `text`, one per next() call, delivering each cell of a data record to the sink:
//   sink.cell(column, value, record_line)  (column < width; value unquoted and trimmed, or a quoted cell's text)
// A record is a header record (width 0: cells are delivered as they come, the sink checks the column limit) or
// a data record of exactly `width` fields. Faults are thrown as FaultThrown.
template <class Sink>
class RecordScanner {
public:
    // Incomplete: only in partial mode, the record runs to the end of the text and may go on past it.
    enum class Step { Record, Blank, End, Incomplete };

    // `header` names the columns in messages (null while the header itself is read). `at_end`: the text reaches
    // the end of the input (otherwise a record that runs to the end of the text is incomplete: NeedMore).
    RecordScanner(std::string_view text, std::size_t pos, const Rules& rules,
                  const std::vector<std::string>* header, std::size_t width, Sink& sink)
        : m_text(text), m_pos(pos), m_rules(rules), m_header(header), m_width(width), m_sink(sink) {
        for (int c = 0; c < 256; ++c) {
            std::uint8_t v = 0;
            if (c == '\n' || c == '\r' || c == '\0' || c == static_cast<unsigned char>(rules.delimiter)) v |= stop;
            if (c >= 0x80) v |= high;
            m_class[static_cast<std::size_t>(c)] = v;
        }
    }

    std::size_t pos() const noexcept { return m_pos; }
    std::uint64_t line() const noexcept { return m_line; }
    // The line on which the last record returned by next() started.
    std::uint64_t record_line() const noexcept { return m_record_line; }
    // The fields of the last record.
    std::size_t fields() const noexcept { return m_field_count; }
    // The text is a prefix of the input (a pipe still being read): a record that reaches its end is Incomplete
    // rather than cut there, so every fault the scan throws is one the whole input has too.
    void set_partial() noexcept { m_partial = true; }

    // Scan the record at pos(): a data (or header) record, a blank line (skipped, nothing delivered), or the end.
    Step next() {
        const std::size_t n = m_text.size();
        if (m_pos >= n) return Step::End;
        m_record_line = m_line;
        m_field_line = m_line;
        m_field_count = 0;
        bool has_text = false;
        const char delimiter = m_rules.delimiter;
        const std::size_t max_cell = m_rules.limits.max_cell_bytes;
        const char* const text = m_text.data();
        while (true) {
            std::size_t p = m_pos;
            // Leading blanks: pushed into the cell as any other byte, so they count towards its length.
            while (p < n && is_blank(text[p]) && text[p] != delimiter) ++p;
            if (p - m_pos > max_cell) cell_too_long(std::string_view(text + m_pos, max_cell));
            if (m_partial && p >= n) return Step::Incomplete;
            std::string_view value;
            if (p < n && text[p] == '"') {
                has_text = true;
                p = read_quoted(p, value);
                if (p == cut) return Step::Incomplete;
            } else {
                std::uint8_t seen = 0;
                const std::size_t q = find_stop(p, seen);
                if (q - m_pos > max_cell) cell_too_long(std::string_view(text + m_pos, max_cell));
                if (m_partial && q >= n) return Step::Incomplete;
                if (q < n && text[q] == '\0') nul_byte(m_line);
                std::size_t e = q;
                while (e > p && is_blank(text[e - 1]) && text[e - 1] != delimiter) --e;
                value = std::string_view(text + p, e - p);
                if (!value.empty()) has_text = true;
                if (seen & high) check_utf8(value);
                p = q;
            }
            const bool more = p < n && text[p] == delimiter;
            // A line of blanks alone is a blank line: nothing is delivered for it.
            if (m_field_count == 0 && !more && !has_text) {
                if (cut_in_line_break(p)) return Step::Incomplete;
                end_line(p);
                return Step::Blank;
            }
            if (m_width == 0)
                m_sink.header_cell(m_field_count, value, m_record_line);
            else if (m_field_count < m_width)
                m_sink.cell(m_field_count, value, m_record_line);
            ++m_field_count;
            if (more) {
                m_pos = p + 1;
                m_field_line = m_line;
                continue;
            }
            if (cut_in_line_break(p)) return Step::Incomplete;
            end_line(p);
            if (m_width != 0 && m_field_count != m_width)
                fault_at(m_record_line, "expected ", m_width, " fields (as in the header), found ", m_field_count,
                         "; every row needs one value per header column");
            return Step::Record;
        }
    }

private:
    static constexpr std::uint8_t stop = 1; // delimiter, line break or NUL: the end of an unquoted cell
    static constexpr std::uint8_t high = 2; // not ASCII: the cell needs the UTF-8 check
    static constexpr std::size_t cut = std::string_view::npos; // read_quoted: the partial text ends in the cell

    // Partial mode, a carriage return that ends the text: a line feed may follow it, part of the same break.
    bool cut_in_line_break(std::size_t p) const noexcept {
        return m_partial && p + 1 == m_text.size() && m_text[p] == '\r';
    }

    // The first delimiter, line break or NUL at or after q (or the end); `seen` gets `high` when a byte before it
    // is not ASCII. Sixteen bytes at a time where SSE2 is there (every x86-64), then byte by byte.
    std::size_t find_stop(std::size_t q, std::uint8_t& seen) const noexcept {
        const std::size_t n = m_text.size();
        const char* const text = m_text.data();
#if defined(__SSE2__)
        const __m128i delimiter = _mm_set1_epi8(m_rules.delimiter);
        const __m128i lf = _mm_set1_epi8('\n');
        const __m128i cr = _mm_set1_epi8('\r');
        const __m128i zero = _mm_setzero_si128();
        while (q + 16 <= n) {
            const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text + q));
            const __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, delimiter), _mm_cmpeq_epi8(v, lf)),
                                             _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, zero)));
            const auto stops = static_cast<unsigned>(_mm_movemask_epi8(hit));
            const auto highs = static_cast<unsigned>(_mm_movemask_epi8(v));
            if (stops != 0) {
                const unsigned k = static_cast<unsigned>(__builtin_ctz(stops));
                if (highs & ((1u << k) - 1u)) seen |= high;
                return q + k;
            }
            if (highs) seen |= high;
            q += 16;
        }
#endif
        while (q < n) {
            const std::uint8_t k = m_class[static_cast<unsigned char>(text[q])];
            if (k & stop) break;
            seen |= k;
            ++q;
        }
        return q;
    }

    // Past the line break at p (CRLF is one), or the end of the text.
    void end_line(std::size_t p) noexcept {
        const std::size_t n = m_text.size();
        if (p < n) {
            if (m_text[p] == '\r' && p + 1 < n && m_text[p + 1] == '\n') ++p;
            ++p;
            ++m_line;
        }
        m_pos = p;
    }

    std::string where() const { return column_words(m_field_count, m_header); }

    [[noreturn]] void nul_byte(std::uint64_t line) const {
        fault_at(line, where(),
                 ": the cell holds a NUL byte; a CSV file is text (is this a binary file, or text saved as UTF-16? "
                 "save it as UTF-8)");
    }

    [[noreturn]] void cell_too_long(std::string_view start) const {
        fault_at(m_field_line, where(), ": the cell is longer than the limit of ", m_rules.limits.max_cell_bytes,
                 " bytes (it starts ", quote_excerpt(start),
                 "); check the quoting, or raise the limit (the brain command's --max-cell-bytes, "
                 "InputLimits::max_cell_bytes)");
    }

    void check_utf8(std::string_view value) const {
        const std::size_t bad = utf8_invalid_offset(value);
        if (bad == value.size()) return;
        char byte[8];
        std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(value[bad]));
        fault_at(m_field_line, where(), ": the cell is not valid UTF-8 (byte ", byte, " at offset ", bad, " in ",
                 quote_excerpt(value), "); save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)");
    }

    // The quoted field whose opening quote is at `open`: its text (a view of the input, or of m_unescaped when it
    // holds doubled quotes) into `value`; returns the position after it and the blanks that may follow.
    std::size_t read_quoted(std::size_t open, std::string_view& value) {
        const std::size_t n = m_text.size();
        const char* const text = m_text.data();
        const std::uint64_t opened_on = m_line;
        const std::size_t max_cell = m_rules.limits.max_cell_bytes;
        std::size_t q = open + 1;
        const std::size_t first = q;
        bool escaped = false; // the text has a doubled quote: it is copied into m_unescaped
        bool any_high = false;
        std::size_t length = 0; // bytes of the cell's text so far
        while (true) {
            if (q >= n && m_partial) return cut;
            if (q >= n)
                fault_at(opened_on, where(),
                         ": unterminated quoted field (the opening quote has no closing quote before the end of the "
                         "file); close the quote or write a literal quote as \"\"");
            const char c = text[q];
            if (c == '"') {
                if (q + 1 >= n && m_partial) return cut; // a doubled quote, or the closing one?
                if (q + 1 < n && text[q + 1] == '"') {
                    if (!escaped) {
                        m_unescaped.assign(text + first, q - first);
                        escaped = true;
                    }
                    if (length >= max_cell) cell_too_long(m_unescaped);
                    m_unescaped.push_back('"');
                    ++length;
                    q += 2;
                    continue;
                }
                value = escaped ? std::string_view(m_unescaped) : std::string_view(text + first, q - first);
                ++q;
                break;
            }
            if (c == '\n') ++m_line;
            if (c == '\0') nul_byte(m_line);
            if (length >= max_cell)
                cell_too_long(escaped ? std::string_view(m_unescaped) : std::string_view(text + first, length));
            if (escaped) m_unescaped.push_back(c);
            if (static_cast<unsigned char>(c) >= 0x80) any_high = true;
            ++length;
            ++q;
        }
        // Only blanks may follow the closing quote before the delimiter or the end of the line; no more of them
        // than a cell may hold, so that a record's length is bounded by its cells' (RecordBound).
        const char delimiter = m_rules.delimiter;
        const std::size_t closed = q;
        while (q < n && is_blank(text[q]) && text[q] != delimiter) ++q;
        if (q - closed > max_cell) cell_too_long(value);
        if (q >= n && m_partial) return cut;
        if (q < n && text[q] != delimiter && text[q] != '\n' && text[q] != '\r')
            fault_at(m_line, where(), ": unexpected character ", quote_excerpt(std::string_view(text + q, 1)),
                     " after a closing quote; quote the whole field and write a literal quote as \"\"");
        if (any_high) check_utf8(value);
        return q;
    }

    std::string_view m_text;
    std::size_t m_pos;
    const Rules& m_rules;
    const std::vector<std::string>* m_header;
    std::size_t m_width;
    Sink& m_sink;
    std::array<std::uint8_t, 256> m_class{};
    std::uint64_t m_line = 0;
    std::uint64_t m_record_line = 0;
    std::uint64_t m_field_line = 0;
    std::size_t m_field_count = 0;
    std::string m_unescaped; // a quoted cell with doubled quotes, unescaped (reused: no allocation per cell)
    bool m_partial = false;  // set_partial()
};

// Where the records of a piece of text start and end, found without reading their cells.
struct RecordCount {
    std::uint64_t records = 0; // records that are not blank lines
    std::size_t end = 0;       // where the first record starting at or after the limit starts (or the text ends)
    bool incomplete = false;   // a record runs to the end of the text, which is not the end of the input
};

// Counts the records starting in [start, limit) of `text` (start is a record start), as RecordScanner would see
// them: quotes open only at a cell's start (after blanks), "" inside quotes is a quote, line breaks inside quotes
// belong to the cell, CRLF is one break, lines of blanks are not records. Malformed records (which the scanner
// refuses) are counted somehow; the scan that follows reports them. `at_end`: the text ends where the input does.
inline RecordCount count_records(std::string_view text, std::size_t start, std::size_t limit, char delimiter,
                                 bool at_end) {
    RecordCount out;
    const std::size_t n = text.size();
    const char* const t = text.data();
    std::size_t p = start;
    const auto find = [&](std::size_t from, char c) -> std::size_t {
        if (from >= n) return n;
        const void* hit = std::memchr(t + from, c, n - from);
        return hit ? static_cast<std::size_t>(static_cast<const char*>(hit) - t) : n;
    };
    // The next quote and carriage return, searched 64 KiB at a time: `at` is the byte's position when `found`,
    // else the end of what was searched. Lines before both take the fast path (memchr for the line feed, a look
    // at the line's first bytes for blankness).
    struct Next {
        char c;
        std::size_t at = 0;
        bool found = false;
    };
    const auto search = [&](Next& next, std::size_t from) {
        const std::size_t to = std::min(n, from + (std::size_t{1} << 16));
        const void* hit = from < to ? std::memchr(t + from, next.c, to - from) : nullptr;
        next.found = hit != nullptr;
        next.at = hit ? static_cast<std::size_t>(static_cast<const char*>(hit) - t) : to;
    };
    // True when [p, end] holds no `next.c`, searching on as far as needed.
    const auto clear_through = [&](Next& next, std::size_t end) {
        if (next.at < p) search(next, p);
        while (!next.found && next.at <= end && next.at < n) search(next, next.at);
        return next.at > end || (!next.found && next.at >= n);
    };
    Next quote{'"'}, cr{'\r'};
    search(quote, p);
    search(cr, p);
    const auto blank = [delimiter](char c) { return is_blank(c) && c != delimiter; };
    while (p < limit && p < n) {
        const std::size_t lf = find(p, '\n');
        if (lf < n && clear_through(quote, lf) && clear_through(cr, lf)) {
            std::size_t q = p;
            while (q < lf && blank(t[q])) ++q;
            if (q < lf) ++out.records;
            p = lf + 1;
            continue;
        }
        // The careful way, for a record with a quote or a carriage return.
        const std::size_t record_start = p;
        bool has_text = false;
        while (true) {
            std::size_t q = p;
            while (q < n && blank(t[q])) ++q;
            if (q < n && t[q] == '"') {
                has_text = true;
                ++q;
                while (q < n) {
                    if (t[q] == '"') {
                        if (q + 1 < n && t[q + 1] == '"') {
                            q += 2;
                            continue;
                        }
                        ++q;
                        break;
                    }
                    ++q;
                }
            }
            while (q < n && t[q] != delimiter && t[q] != '\n' && t[q] != '\r') {
                if (!blank(t[q])) has_text = true;
                ++q;
            }
            if (q < n && t[q] == delimiter) {
                has_text = true;
                p = q + 1;
                continue;
            }
            if (q >= n && !at_end) {
                out.incomplete = true;
                out.end = record_start;
                return out;
            }
            if (q < n) {
                if (t[q] == '\r' && q + 1 < n && t[q + 1] == '\n') ++q;
                ++q;
            }
            p = q;
            break;
        }
        if (has_text) ++out.records;
    }
    out.end = std::min(p, n);
    return out;
}

} // namespace brain::detail::csv
