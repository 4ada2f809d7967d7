// Internal: CSV rows read on every core. A region of the text (whole records, from one record start to where the
// records starting before a limit end) is cut into pieces at line breaks; pass 1 counts each piece's records in
// parallel and checks every cut against where the piece before it really ended (a quoted cell can hide a line
// break), pass 2 parses each piece straight into its rows of the caller's arrays. Each defect keeps its exact
// file:line:column: a piece counts its own lines, and the first defect in file order is the one reported.
#pragma once

#include "csv_input.hpp"
#include "csv_scan.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace brain::detail::csv {

// A CSV file's header record, read and checked (names non-empty and unique, the column limit).
struct Header {
    std::vector<std::string> names;
    std::uint64_t line = 1;        // the header's line
    std::uint64_t data_offset = 0; // file offset just after the header record
    std::uint64_t data_line = 2;   // the line there
};

// Reads the header at the start of `text` (a byte-order mark skipped, blank lines before it skipped). Throws
// InvalidData "<origin>:<line>: ..." for a defect, or for a file with no header at all. data_offset is a
// position in `text`.
Header read_header(std::string_view text, const Rules& rules, const std::string& origin);
// The same for an input, a pipe's first bytes buffered as needed; data_offset is a file offset.
Header read_header(CsvInput& input, const Rules& rules, const std::string& origin);

// Throws brain::Error for `fault`, whose line counts from `first_line` (the absolute line where its scan began).
[[noreturn]] void raise(const Fault& fault, const std::string& origin, std::uint64_t first_line);

// What each column of a data record becomes.
enum class Use : std::uint8_t {
    Skip,   // scanned and checked, not kept
    Number, // a finite number, into `numbers` (a defect otherwise, named with its role)
    Target, // a target: its number (NaN when it has none) into `targets`, and its text as a label id
    Text,   // its text, kept
};

struct ColumnPlan {
    std::vector<Use> use;                  // per header column
    std::vector<std::uint32_t> slot;       // per header column: its place among the numbers, targets or texts
    std::vector<std::string> number_roles; // per number slot: "a feature"
    std::size_t numbers = 0;
    std::size_t targets = 0;
    std::size_t texts = 0;
    std::size_t max_labels = 1000; // distinct labels a target column may hold (InputLimits::max_classes)
    bool lines = false;            // keep each row's line
    bool offsets = false;          // keep each row's file offset

    explicit ColumnPlan(std::size_t columns) : use(columns, Use::Skip), slot(columns, 0) {}
    void number(std::size_t column, std::string role);
    void target(std::size_t column);
    void text(std::size_t column);
};

// Bounds what a pipe's reader buffers for one record. A record of the header's width is at most bytes() long (each
// cell at most max_cell_bytes of text, with its blanks, quotes, doubled quotes and delimiter); one already longer
// is refused as soon as the buffer passes that length, with the fault the whole parse would report (the cell
// limit, or too many fields), not once its end arrives or the input limit trips.
class RecordBound {
public:
    RecordBound(const Rules& rules, const std::vector<std::string>& header, const ColumnPlan& plan);
    std::uint64_t bytes() const noexcept { return m_bound; }
    // After more of a pipe is buffered: `begin` is a record start in input.text(), on line `first_line`, from
    // where records are checked. Nothing to do for a mapped file or a pipe read to its end.
    void check(const CsvInput& input, std::size_t begin, std::uint64_t first_line, const std::string& origin);

private:
    const Rules& m_rules;
    const std::vector<std::string>& m_header;
    const ColumnPlan& m_plan;
    std::uint64_t m_bound;
    std::uint64_t m_whole = 0; // file offset before which the buffered records are known to be whole
};

// A pipe read to its end (a mapped file has it already), with `header` read from it and its records held to
// RecordBound on the way.
void read_all_bounded(CsvInput& input, const Header& header, const Rules& rules, const ColumnPlan& plan,
                      const std::string& origin);

// Where pass 2 writes a region's rows (rows x numbers, rows x targets, ...); null for what the plan has none of.
struct RowOutputs {
    float* numbers = nullptr;
    float* targets = nullptr;
    std::uint32_t* label_ids = nullptr; // rows x targets: each target cell's id among its piece's labels
    std::uint64_t* lines = nullptr;
    std::uint64_t* offsets = nullptr;
};

// A heterogeneous-lookup hash for string keys.
struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// The distinct labels of one target column in one piece, in order of first appearance, at most max + 1 of them:
// past that the column cannot be a label column, and nothing more is kept.
struct PieceLabels {
    std::unordered_map<std::string, std::uint32_t, StringHash, std::equal_to<>> ids;
    std::vector<std::pair<const std::string*, std::uint64_t>> order; // label, relative line of first appearance
    bool full = false; // more distinct labels than the limit: ids past that row are not kept
};

// What one target column held in one piece.
struct PieceTarget {
    bool labels = false;             // a cell that is not a number: the column is a label column
    std::optional<Fault> not_finite; // the first cell that is NaN, infinite or out of range
    PieceLabels labels_seen;
};

// A text column of one piece: its cells one after another.
struct PieceText {
    std::string bytes;
    std::vector<std::size_t> ends;
};

struct Piece {
    std::size_t start = 0; // the text position of its first record
    std::size_t limit = 0; // its records start before this
    RecordCount count;
    std::uint64_t first_row = 0; // its first row among the region's
    std::uint64_t lines = 0;     // line breaks in it (pass 2)
    std::optional<Fault> fault;  // the first defect (pass 2); relative to its own first line
    std::vector<PieceTarget> targets;
    std::vector<PieceText> texts;
};

// Progress of a load: called on the calling thread, about every quarter second.
using ProgressFn = std::function<void(std::uint64_t bytes_done, std::uint64_t rows_done)>;

// One region of an input, counted then parsed.
class Region {
public:
    Region(const CsvInput& input, const Rules& rules, const std::vector<std::string>& header, const ColumnPlan& plan,
           unsigned threads);

    // Pass 1 over the records starting in text positions [begin, limit). False when the last record runs past
    // the buffered text of a pipe (read more, then count again).
    bool count(std::size_t begin, std::size_t limit);
    std::uint64_t rows() const noexcept { return m_rows; }
    // The text position after the region's last record.
    std::size_t end() const noexcept { return m_end; }

    // Pass 2 into `out` (rows() rows each). The first defect in file order (first_line: the region's first line)
    // is thrown as brain::Error, except a target's non-finite number, which waits for the column to be known as
    // numbers (first_not_finite). The mapped pages of each piece are released as it is done.
    void parse(const RowOutputs& out, std::uint64_t first_line, const std::string& origin,
               const ProgressFn& progress = {});
    // Line breaks in the region (after parse).
    std::uint64_t lines() const noexcept;
    const std::vector<Piece>& pieces() const noexcept { return m_pieces; }
    // The absolute line of piece p's first record (after parse).
    std::uint64_t piece_line(std::size_t p, std::uint64_t first_line) const noexcept;

private:
    void parse_piece(Piece& piece, const RowOutputs& out);

    const CsvInput& m_input;
    const Rules& m_rules;
    const std::vector<std::string>& m_header;
    const ColumnPlan& m_plan;
    unsigned m_threads;
    std::vector<Piece> m_pieces;
    std::uint64_t m_rows = 0;
    std::size_t m_end = 0;
};

// The labels of one target column over a whole input: every piece's labels merged in file order, bounded by the
// limit (merging stops at the first label past it, whose line is kept for the error).
class LabelMerge {
public:
    explicit LabelMerge(std::size_t max_labels) : m_max(max_labels) {}
    // Adds a piece's labels; returns each piece id's merged id (or UINT32_MAX once past the limit).
    std::vector<std::uint32_t> add(const PieceLabels& labels, std::uint64_t piece_line);
    bool over_limit() const noexcept { return m_over_line != 0; }
    std::uint64_t over_limit_line() const noexcept { return m_over_line; }
    // The labels in order of first appearance (merged ids index them).
    const std::vector<std::string>& labels() const noexcept { return m_labels; }
    // For each merged id, its position among the labels sorted byte-wise.
    std::vector<std::uint32_t> sorted_positions() const;

private:
    std::size_t m_max;
    std::unordered_map<std::string, std::uint32_t, StringHash, std::equal_to<>> m_ids;
    std::vector<std::string> m_labels;
    std::uint64_t m_over_line = 0;
};

} // namespace brain::detail::csv
