// brain::CsvRowStream: named numeric columns of a CSV file read a chunk of rows at a time, on every core, so a file
// of any size is read in bounded memory (brain predict --out reads its input this way).
#pragma once

#include <brain/export.hpp>
#include <brain/limits.hpp>
#include <brain/matrix.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace brain {

// CsvTable's rules and messages (file:line:column for every defect); memory is about chunk_bytes of text plus the
// chunk's numbers, whatever the file's size (a regular file is memory-mapped and its pages released as they are
// parsed; a pipe is read chunk by chunk).
class BRAIN_API CsvRowStream {
public:
    // Opens `path` and reads its header; `columns` are the header names to read (InvalidData naming the missing
    // ones), each cell of which must be a finite number (`role` names them in messages: "a feature").
    CsvRowStream(const std::filesystem::path& path, const std::vector<std::string>& columns, char delimiter = ',',
                 const InputLimits& limits = {}, std::size_t chunk_bytes = std::size_t{8} << 20,
                 std::string role = "a feature");
    ~CsvRowStream();
    CsvRowStream(const CsvRowStream&) = delete;
    CsvRowStream& operator=(const CsvRowStream&) = delete;

    const std::vector<std::string>& header() const noexcept;
    // The next rows (rows x columns, in `columns`' order) and each one's line in the file; false, with both empty,
    // once every row has been read.
    bool next(Matrix& values, std::vector<std::uint64_t>& lines);
    // Data rows read so far.
    std::uint64_t rows_read() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace brain
