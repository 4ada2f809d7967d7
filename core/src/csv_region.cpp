#include "csv_region.hpp"

#include "parallel.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <unordered_map>

namespace brain::detail::csv {

namespace {

// Collects the header's names, bounded by the column limit as they come.
struct HeaderSink {
    const Rules& rules;
    std::vector<std::string> names;
    void header_cell(std::size_t, std::string_view value, std::uint64_t line) {
        if (names.size() >= rules.limits.max_columns)
            fault_at(line, "the header has more than ", rules.limits.max_columns,
                     " columns, the limit; check the delimiter, or raise the limit (the brain command's "
                     "--max-columns, InputLimits::max_columns)");
        names.emplace_back(value);
    }
    void cell(std::size_t, std::string_view, std::uint64_t) {}
};

// RecordBound's scan: every defect the whole parse (RowSink) finds in a cell, nothing kept.
struct CheckSink {
    const ColumnPlan& plan;
    const std::vector<std::string>& header;
    void header_cell(std::size_t, std::string_view, std::uint64_t) {}
    void cell(std::size_t column, std::string_view value, std::uint64_t line) const {
        const Use use = plan.use[column];
        if (use != Use::Number && use != Use::Target) return;
        const Number n = parse_number(value);
        if (use == Use::Number && n.kind != NumberKind::Number)
            fault_at(line, number_fault_text(column_words(column, &header), plan.number_roles[plan.slot[column]],
                                             n.kind, value));
        if (use == Use::Target && n.kind == NumberKind::Empty)
            fault_at(line, number_fault_text(column_words(column, &header), "a target", n.kind, value));
    }
};

void check_names(const std::vector<std::string>& names, std::uint64_t line) {
    std::unordered_map<std::string_view, std::size_t> seen;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (names[i].empty()) fault_at(line, "header column ", i + 1, " has no name; every column needs a name");
        const auto [at, fresh] = seen.emplace(names[i], i);
        if (!fresh)
            fault_at(line, "the column name ", quote_excerpt(names[i]), " appears twice (columns ", at->second + 1,
                     " and ", i + 1, "); names must be unique");
    }
}

// Where a piece after `from` may start: just past the next line feed (a cut that a quoted cell hides is found and
// moved by the check after pass 1).
std::size_t cut_after(std::string_view text, std::size_t from) {
    if (from >= text.size()) return text.size();
    const void* hit = std::memchr(text.data() + from, '\n', text.size() - from);
    return hit ? static_cast<std::size_t>(static_cast<const char*>(hit) - text.data()) + 1 : text.size();
}

// Pass 2's view of one piece: every cell of a data record lands in the row it belongs to.
struct RowSink {
    const ColumnPlan& plan;
    const RowOutputs& out;
    Piece& piece;
    const std::vector<std::string>& header;
    std::uint64_t row;
    std::uint64_t row_end;

    void header_cell(std::size_t, std::string_view, std::uint64_t) {}

    [[noreturn]] void number_fault(std::size_t column, std::string_view role, NumberKind kind,
                                   std::string_view value, std::uint64_t line) const {
        fault_at(line, number_fault_text(column_words(column, &header), role, kind, value));
    }

    void cell(std::size_t column, std::string_view value, std::uint64_t line) {
        if (row >= row_end)
            throw FaultThrown{Fault{ErrorCode::InvalidState, line,
                                    "the CSV reader found more rows here than it counted; please report this file"}};
        const std::uint32_t slot = plan.slot[column];
        switch (plan.use[column]) {
        case Use::Skip:
            return;
        case Use::Number: {
            const Number n = parse_number(value);
            if (n.kind != NumberKind::Number) number_fault(column, plan.number_roles[slot], n.kind, value, line);
            out.numbers[row * plan.numbers + slot] = n.value;
            return;
        }
        case Use::Target: {
            const Number n = parse_number(value);
            if (n.kind == NumberKind::Empty) number_fault(column, "a target", n.kind, value, line);
            PieceTarget& target = piece.targets[slot];
            if (out.targets)
                out.targets[row * plan.targets + slot] =
                    n.kind == NumberKind::Number ? n.value : std::numeric_limits<float>::quiet_NaN();
            if (n.kind == NumberKind::NotNumeric)
                target.labels = true;
            else if (n.kind == NumberKind::NotFinite && !target.not_finite)
                target.not_finite = Fault{ErrorCode::InvalidData, line,
                                          number_fault_text(column_words(column, &header), "a target", n.kind, value)};
            if (out.label_ids) out.label_ids[row * plan.targets + slot] = intern(target.labels_seen, value, line);
            return;
        }
        case Use::Text: {
            PieceText& text = piece.texts[slot];
            text.bytes.append(value);
            text.ends.push_back(text.bytes.size());
            return;
        }
        }
    }

    std::uint32_t intern(PieceLabels& labels, std::string_view value, std::uint64_t line) const {
        if (labels.full) return std::numeric_limits<std::uint32_t>::max();
        if (const auto it = labels.ids.find(value); it != labels.ids.end()) return it->second;
        if (labels.ids.size() > plan.max_labels) {
            labels.full = true;
            return std::numeric_limits<std::uint32_t>::max();
        }
        const auto id = static_cast<std::uint32_t>(labels.order.size());
        const auto [it, fresh] = labels.ids.emplace(std::string(value), id);
        labels.order.emplace_back(&it->first, line);
        return id;
    }

    void end_row(std::uint64_t line, std::uint64_t offset) {
        if (out.lines) out.lines[row] = line; // relative to the piece's first line until parse() adds it
        if (out.offsets) out.offsets[row] = offset;
        ++row;
    }
};

} // namespace

void ColumnPlan::number(std::size_t column, std::string role) {
    use[column] = Use::Number;
    slot[column] = static_cast<std::uint32_t>(numbers++);
    number_roles.push_back(std::move(role));
}

void ColumnPlan::target(std::size_t column) {
    use[column] = Use::Target;
    slot[column] = static_cast<std::uint32_t>(targets++);
}

void ColumnPlan::text(std::size_t column) {
    use[column] = Use::Text;
    slot[column] = static_cast<std::uint32_t>(texts++);
}

void raise(const Fault& fault, const std::string& origin, std::uint64_t first_line) {
    throw Error(fault.code, origin + ":" + std::to_string(first_line + fault.line) + ": " + fault.text);
}

namespace {

// The header at the start of `text`; with `partial` (a pipe's first bytes) nothing when its record is not whole
// yet, though a limit it already breaks (a cell too long, too many columns) is refused at once.
std::optional<Header> scan_header(std::string_view text, const Rules& rules, const std::string& origin,
                                  bool partial) {
    const std::size_t start = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;
    HeaderSink sink{rules, {}};
    RecordScanner<HeaderSink> scanner(text, start, rules, nullptr, 0, sink);
    if (partial) scanner.set_partial();
    Header header;
    try {
        while (true) {
            const auto step = scanner.next();
            if (step == RecordScanner<HeaderSink>::Step::Incomplete) return std::nullopt;
            if (step == RecordScanner<HeaderSink>::Step::End) {
                if (partial) return std::nullopt;
                fault_at(0, "the file is empty; expected a header row naming the columns, then one row per sample");
            }
            if (step == RecordScanner<HeaderSink>::Step::Record) break;
        }
        check_names(sink.names, scanner.record_line());
    } catch (const FaultThrown& f) {
        raise(f.fault, origin, 1);
    }
    header.names = std::move(sink.names);
    header.line = 1 + scanner.record_line();
    header.data_offset = scanner.pos();
    header.data_line = 1 + scanner.line();
    return header;
}

} // namespace

Header read_header(CsvInput& input, const Rules& rules, const std::string& origin) {
    // A pipe: buffer until the first record that is not a blank line is whole (or the input ends).
    while (!input.at_end()) {
        const std::string_view text = input.text();
        if (text.size() >= 3)
            if (std::optional<Header> header = scan_header(text, rules, origin, true)) {
                header->data_offset += input.offset();
                return std::move(*header);
            }
        input.read_more(input.offset(), std::max<std::size_t>(text.size(), 64 * 1024));
    }
    Header header = read_header(input.text(), rules, origin);
    header.data_offset += input.offset();
    return header;
}

Header read_header(std::string_view text, const Rules& rules, const std::string& origin) {
    return *scan_header(text, rules, origin, false);
}

RecordBound::RecordBound(const Rules& rules, const std::vector<std::string>& header, const ColumnPlan& plan)
    : m_rules(rules), m_header(header), m_plan(plan) {
    // Per cell: leading blanks, two quotes around up to twice the limit (doubled quotes), trailing blanks, and
    // the delimiter; then a CRLF.
    const std::uint64_t cell = 4 * std::uint64_t{rules.limits.max_cell_bytes} + 3;
    const std::uint64_t row = cell > UINT64_MAX / std::max<std::size_t>(header.size(), 1)
                                  ? UINT64_MAX
                                  : cell * std::max<std::size_t>(header.size(), 1);
    m_bound = row > UINT64_MAX - 2 ? UINT64_MAX : row + 2;
}

void RecordBound::check(const CsvInput& input, std::size_t begin, std::uint64_t first_line,
                        const std::string& origin) {
    if (input.mapped() || input.at_end()) return; // the whole text is there: the parse reports what it holds
    const std::string_view text = input.text();
    // Counting resumes where the last check found the record that was not whole yet.
    const std::size_t from = std::max<std::uint64_t>(begin, m_whole - std::min(m_whole, input.offset()));
    const RecordCount count =
        count_records(text, std::min(from, text.size()), text.size(), m_rules.delimiter, false);
    m_whole = input.offset() + count.end;
    if (!count.incomplete || text.size() - count.end <= m_bound) return;
    // The last record is longer than a whole one can be: it holds a fault (or an earlier record does), found by
    // scanning in file order as the parse would.
    CheckSink sink{m_plan, m_header};
    RecordScanner<CheckSink> scanner(text, begin, m_rules, &m_header, m_header.size(), sink);
    scanner.set_partial();
    try {
        while (true) {
            const auto step = scanner.next();
            if (step == RecordScanner<CheckSink>::Step::End) return;
            if (step == RecordScanner<CheckSink>::Step::Incomplete) break;
        }
    } catch (const FaultThrown& f) {
        raise(f.fault, origin, first_line);
    }
    // Each of its cells is within the limit, so it has a field past the header's width.
    if (scanner.fields() >= m_header.size())
        raise(Fault{ErrorCode::InvalidData, scanner.record_line(),
                    concat("expected ", m_header.size(), " fields (as in the header), found at least ",
                           scanner.fields() + 1, " in a record already longer than ", text.size() - count.end,
                           " bytes; every row needs one value per header column")},
              origin, first_line);
}

void read_all_bounded(CsvInput& input, const Header& header, const Rules& rules, const ColumnPlan& plan,
                      const std::string& origin) {
    RecordBound bound(rules, header.names, plan);
    while (!input.at_end()) {
        input.read_more(input.offset(), std::max<std::size_t>(input.text().size(), std::size_t{1} << 20));
        bound.check(input, static_cast<std::size_t>(header.data_offset - input.offset()), header.data_line, origin);
    }
}

Region::Region(const CsvInput& input, const Rules& rules, const std::vector<std::string>& header,
               const ColumnPlan& plan, unsigned threads)
    : m_input(input), m_rules(rules), m_header(header), m_plan(plan), m_threads(std::max(threads, 1u)) {}

bool Region::count(std::size_t begin, std::size_t limit) {
    const std::string_view text = m_input.text();
    const bool at_end = m_input.at_end();
    limit = std::min(limit, text.size());
    if (!at_end) {
        // A pipe's buffer ends inside a record: the region stops at its last line feed or, in text with none (old
        // Mac line ends), its last carriage return with the next byte buffered, so that it is known to end the
        // record alone. Without the second, such a stream would be buffered to its end before its first chunk.
        const void* last = limit > begin ? ::memrchr(text.data() + begin, '\n', limit - begin) : nullptr;
        if (!last && limit > begin + 1) last = ::memrchr(text.data() + begin, '\r', limit - 1 - begin);
        if (!last) return false;
        limit = static_cast<std::size_t>(static_cast<const char*>(last) - text.data()) + 1;
    }
    const std::size_t bytes = limit > begin ? limit - begin : 0;
    // Pieces of 1 to 4 MiB, a few per thread: the threads stay busy to the end, and the mapped pages in use at
    // once stay a few MiB.
    const std::size_t piece_bytes =
        std::clamp<std::size_t>(bytes / (std::size_t{4} * m_threads), std::size_t{1} << 20, std::size_t{4} << 20);
    m_pieces.clear();
    for (std::size_t start = begin;;) {
        Piece piece;
        piece.start = start;
        piece.limit = start + piece_bytes < limit ? std::min(cut_after(text, start + piece_bytes - 1), limit) : limit;
        m_pieces.push_back(std::move(piece));
        if (m_pieces.back().limit >= limit) break;
        start = m_pieces.back().limit;
    }
    const char delimiter = m_rules.delimiter;
    parallel_jobs(
        m_pieces.size(), m_threads,
        [&](std::size_t i) {
            Piece& p = m_pieces[i];
            p.count = count_records(text, p.start, p.limit, delimiter, at_end);
            m_input.release(m_input.offset() + p.start, m_input.offset() + p.count.end);
        },
        [] {});
    // Each cut must be where the piece before really ended: a line feed inside a quoted cell is no record start.
    std::size_t expected = begin;
    m_rows = 0;
    for (Piece& p : m_pieces) {
        if (p.start != expected) {
            p.start = expected;
            p.count = expected >= p.limit ? RecordCount{0, expected, false}
                                          : count_records(text, p.start, p.limit, delimiter, at_end);
        }
        if (p.count.incomplete) return false;
        p.first_row = m_rows;
        m_rows += p.count.records;
        expected = p.count.end;
    }
    m_end = expected;
    return true;
}

void Region::parse_piece(Piece& piece, const RowOutputs& out) {
    piece.targets.assign(m_plan.targets, PieceTarget{});
    piece.texts.assign(m_plan.texts, PieceText{});
    const std::string_view text = m_input.text();
    RowSink sink{m_plan, out, piece, m_header, piece.first_row, piece.first_row + piece.count.records};
    RecordScanner<RowSink> scanner(text, piece.start, m_rules, &m_header, m_header.size(), sink);
    try {
        while (scanner.pos() < piece.limit) {
            const std::size_t record_start = scanner.pos();
            const auto step = scanner.next();
            if (step == RecordScanner<RowSink>::Step::End) break;
            if (step == RecordScanner<RowSink>::Step::Record) {
                if (sink.row >= sink.row_end)
                    throw FaultThrown{Fault{ErrorCode::InvalidState, scanner.record_line(),
                                            "the CSV reader found more rows here than it counted; please report "
                                            "this file"}};
                sink.end_row(scanner.record_line(), m_input.offset() + record_start);
            }
        }
        if (sink.row != sink.row_end)
            throw FaultThrown{Fault{ErrorCode::InvalidState, scanner.line(),
                                    "the CSV reader found fewer rows here than it counted; please report this file"}};
    } catch (const FaultThrown& f) {
        piece.fault = f.fault;
    }
    piece.lines = scanner.line();
}

void Region::parse(const RowOutputs& out, std::uint64_t first_line, const std::string& origin,
                   const ProgressFn& progress) {
    using Clock = std::chrono::steady_clock;
    std::atomic<std::size_t> first_fault{m_pieces.size()};
    std::atomic<std::uint64_t> bytes_done{0}, rows_done{0};
    auto last_report = Clock::now();
    const std::uint64_t offset = m_input.offset();
    parallel_jobs(
        m_pieces.size(), m_threads,
        [&](std::size_t i) {
            // Pieces after one with a defect are not needed: that defect is reported (or an earlier one).
            if (i > first_fault.load(std::memory_order_relaxed)) return;
            Piece& piece = m_pieces[i];
            parse_piece(piece, out);
            if (piece.fault) {
                std::size_t seen = first_fault.load();
                while (i < seen && !first_fault.compare_exchange_weak(seen, i)) {
                }
            }
            m_input.release(offset + piece.start, offset + piece.count.end);
            bytes_done.fetch_add(piece.count.end - piece.start, std::memory_order_relaxed);
            rows_done.fetch_add(piece.count.records, std::memory_order_relaxed);
        },
        [&] {
            if (!progress) return;
            const auto now = Clock::now();
            if (now - last_report < std::chrono::milliseconds(250)) return;
            last_report = now;
            progress(bytes_done.load(), rows_done.load());
        });
    std::uint64_t line = first_line;
    for (std::size_t i = 0; i < m_pieces.size(); ++i) {
        const Piece& piece = m_pieces[i];
        if (piece.fault) raise(*piece.fault, origin, line);
        if (out.lines)
            for (std::uint64_t r = piece.first_row; r < piece.first_row + piece.count.records; ++r) out.lines[r] += line;
        line += piece.lines;
    }
    if (progress) progress(bytes_done.load(), rows_done.load());
}

std::uint64_t Region::lines() const noexcept {
    std::uint64_t total = 0;
    for (const Piece& piece : m_pieces) total += piece.lines;
    return total;
}

std::uint64_t Region::piece_line(std::size_t p, std::uint64_t first_line) const noexcept {
    for (std::size_t i = 0; i < p && i < m_pieces.size(); ++i) first_line += m_pieces[i].lines;
    return first_line;
}

std::vector<std::uint32_t> LabelMerge::add(const PieceLabels& labels, std::uint64_t piece_line) {
    std::vector<std::uint32_t> ids(labels.order.size(), std::numeric_limits<std::uint32_t>::max());
    for (std::size_t i = 0; i < labels.order.size() && m_over_line == 0; ++i) {
        const std::string& label = *labels.order[i].first;
        if (const auto it = m_ids.find(label); it != m_ids.end()) {
            ids[i] = it->second;
            continue;
        }
        if (m_labels.size() >= m_max) {
            m_over_line = piece_line + labels.order[i].second;
            break;
        }
        const auto id = static_cast<std::uint32_t>(m_labels.size());
        m_ids.emplace(label, id);
        m_labels.push_back(label);
        ids[i] = id;
    }
    return ids;
}

std::vector<std::uint32_t> LabelMerge::sorted_positions() const {
    std::vector<std::uint32_t> order(m_labels.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return m_labels[a] < m_labels[b]; });
    std::vector<std::uint32_t> position(m_labels.size());
    for (std::size_t k = 0; k < order.size(); ++k) position[order[k]] = static_cast<std::uint32_t>(k);
    return position;
}

} // namespace brain::detail::csv
