// Internal: the bytes of a CSV (or other text) input. A regular file is memory-mapped whole (address space only:
// pages come in as they are read and leave again through release()), so a load holds no copy of the file; a pipe,
// or a file that reports no size (/proc), is read into a buffer that keeps only what is still needed.
#pragma once

#include "input_file.hpp"

#include <brain/limits.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace brain::detail {

class CsvInput {
public:
    // Opens and checks the file (as read_input_file: type, InputLimits::max_file_bytes). `kind` names it in
    // messages ("CSV file").
    CsvInput(const std::filesystem::path& path, const InputLimits& limits, std::string_view kind = "CSV file");
    ~CsvInput();
    CsvInput(const CsvInput&) = delete;
    CsvInput& operator=(const CsvInput&) = delete;

    // The bytes available: the whole file when mapped; a pipe's buffered part.
    std::string_view text() const noexcept { return {m_data + m_begin, m_end - m_begin}; }
    // The file offset of text()'s first byte.
    std::uint64_t offset() const noexcept { return m_offset; }
    // text() reaches the end of the input.
    bool at_end() const noexcept { return m_at_end; }
    // The file's size in bytes; 0 when unknown (a pipe).
    std::uint64_t size() const noexcept { return m_size; }
    bool mapped() const noexcept { return m_mapping != nullptr; }

    // A pipe: keep the bytes from file offset `keep` on and read until `want` more bytes follow text()'s end, or
    // the input ends. Nothing to do for a mapping.
    void read_more(std::uint64_t keep, std::size_t want);
    // A pipe: read to the end of the input.
    void read_all();
    // The mapped pages wholly inside file offsets [begin, end) leave this process's memory (touched again, they
    // come back from the page cache). Nothing to do for a pipe.
    void release(std::uint64_t begin, std::uint64_t end) const noexcept;

private:
    InputFile m_file;
    void* m_mapping = nullptr;
    std::uint64_t m_size = 0;
    std::string m_buffer;         // a pipe's bytes, from m_offset on
    const char* m_data = nullptr; // the mapping or m_buffer
    std::size_t m_begin = 0;      // text() is m_data[m_begin, m_end)
    std::size_t m_end = 0;
    std::uint64_t m_offset = 0;
    bool m_at_end = false;
};

} // namespace brain::detail
