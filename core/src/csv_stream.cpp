// CsvRowStream: csv_region.hpp's two passes over one chunk of the text at a time.
#include "csv_input.hpp"
#include "csv_region.hpp"
#include "csv_targets.hpp"
#include "parallel.hpp"

#include <brain/csv_stream.hpp>
#include <brain/error.hpp>
#include <new>

namespace brain {

namespace {} // namespace

struct CsvRowStream::Impl {
    std::string origin;
    detail::CsvInput input;
    detail::csv::Rules rules;
    detail::csv::Header header;
    detail::csv::ColumnPlan plan;
    detail::csv::RecordBound bound; // a pipe's record refused once it is longer than the header allows
    std::size_t chunk_bytes;
    std::uint64_t position = 0; // file offset of the next record
    std::uint64_t line = 0;     // its line
    std::uint64_t rows = 0;
    bool done = false;

    Impl(const std::filesystem::path& path, char delimiter, const InputLimits& limits, std::size_t chunk)
        : origin(path.string()), input(path, limits), rules{delimiter, limits},
          header(detail::csv::read_header(input, rules, origin)), plan(header.names.size()),
          bound(rules, header.names, plan), chunk_bytes(std::max<std::size_t>(chunk, 1)),
          position(header.data_offset), line(header.data_line) {}
};

CsvRowStream::CsvRowStream(const std::filesystem::path& path, const std::vector<std::string>& columns,
                           char delimiter, const InputLimits& limits, std::size_t chunk_bytes, std::string role) {
    BRAIN_CHECK_ARG(delimiter != '"' && delimiter != '\n' && delimiter != '\r' && delimiter != '\0',
                    "CSV delimiter must not be a quote, a line break or NUL; use ',', ';' or '\\t'");
    m_impl = std::make_unique<Impl>(path, delimiter, limits, chunk_bytes);
    const auto& names = m_impl->header.names;
    std::vector<std::string> missing;
    std::vector<std::size_t> index;
    for (const auto& name : columns) {
        std::size_t c = 0;
        while (c < names.size() && names[c] != name) ++c;
        if (c == names.size())
            missing.push_back(name);
        else
            index.push_back(c);
    }
    BRAIN_CHECK(missing.empty(), ErrorCode::InvalidData, m_impl->origin, " has no column",
                missing.size() > 1 ? "s " : " ", detail::csv::quoted_names(missing),
                " (needed: ", detail::csv::quoted_names(columns), "; the file has ",
                detail::csv::quoted_names(names), "); add the missing column", missing.size() > 1 ? "s" : "",
                " to the header");
    for (const std::size_t c : index) m_impl->plan.number(c, role);
    m_impl->plan.lines = true;
}

CsvRowStream::~CsvRowStream() = default;

const std::vector<std::string>& CsvRowStream::header() const noexcept {
    return m_impl->header.names;
}

std::uint64_t CsvRowStream::rows_read() const noexcept {
    return m_impl->rows;
}

bool CsvRowStream::next(Matrix& values, std::vector<std::uint64_t>& lines) {
    Impl& s = *m_impl;
    values = Matrix();
    lines.clear();
    if (s.done) return false;
    namespace csv = detail::csv;
    csv::Region region(s.input, s.rules, s.header.names, s.plan, detail::load_threads());
    // A pipe: buffer at least a chunk past the position (more while one record runs past the buffer's end).
    std::size_t want = s.chunk_bytes;
    while (true) {
        s.input.read_more(s.position, want);
        const std::size_t begin = static_cast<std::size_t>(s.position - s.input.offset());
        if (region.count(begin, begin + s.chunk_bytes)) break;
        if (s.input.at_end()) break; // counted again below with the whole rest
        s.bound.check(s.input, begin, s.line, s.origin);
        want *= 2;
    }
    const std::uint64_t rows = region.rows();
    if (rows == 0) {
        s.done = true;
        return false;
    }
    std::vector<float> numbers;
    try {
        numbers.resize(static_cast<std::size_t>(rows * s.plan.numbers));
        lines.assign(static_cast<std::size_t>(rows), 0);
    } catch (const std::bad_alloc&) {
        BRAIN_THROW(ErrorCode::AllocationFailed, "not enough host memory for ", rows, " rows of ", s.origin,
                    "; free memory or read smaller chunks");
    }
    region.parse(csv::RowOutputs{numbers.data(), nullptr, nullptr, lines.data(), nullptr}, s.line, s.origin);
    s.line += region.lines();
    s.position = s.input.offset() + region.end();
    s.rows += rows;
    values = Matrix(static_cast<std::size_t>(rows), s.plan.numbers, std::move(numbers));
    return true;
}

} // namespace brain
