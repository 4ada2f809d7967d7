// Internal: reading an untrusted input file whole, with its size bounded before and during the read.
#pragma once

#include <brain/error.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace brain::detail {

// A size the file's format cannot exceed (an ONNX file is one protobuf message of at most 2 GiB): checked as the
// user's limit is, before a regular file is read and while a pipe is, and explained by `why` when it is the
// smaller of the two.
struct FormatLimit {
    std::uint64_t bytes = UINT64_MAX;
    std::string why; // completes "the ONNX file 'm.onnx' is 2.5 GiB, more than 2.0 GiB: ..."
};

// The contents of `path`, a regular file or a pipe (FIFO, `<(command)`, /dev/stdin on a pipe). A directory, a
// device (/dev/zero) or a socket is refused at once with IoError naming what it is; a file larger than
// max_bytes is refused with `limit_code` before it is read (regular files) or as soon as the read passes the
// limit (pipes). `kind` ("CSV file", "model file") names the file in messages.
std::string read_input_file(const std::filesystem::path& path, std::string_view kind, std::uint64_t max_bytes,
                            ErrorCode limit_code, const FormatLimit& format = {});

// An input file opened and checked as read_input_file checks it (type, size against max_bytes), not yet read.
// Owns the descriptor; a pipe's is blocking again. Move-only.
class InputFile {
public:
    // What opening a FIFO does: wait for a writer, as `cat fifo` does (a FIFO opened before its writer would
    // otherwise read as empty), or return at once, for readers that need a regular file and refuse a FIFO.
    enum class Fifo { Wait, NoWait };

    InputFile(const std::filesystem::path& path, std::string_view kind, std::uint64_t max_bytes,
              ErrorCode limit_code, Fifo fifo = Fifo::Wait, FormatLimit format = {});
    ~InputFile();
    InputFile(InputFile&& other) noexcept;
    InputFile& operator=(InputFile&&) = delete;
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;

    int descriptor() const noexcept { return m_fd; }
    // A regular file whose size is known (a pipe, or a file in /proc that says 0, is read to its end instead).
    bool sized() const noexcept { return m_regular && m_size > 0; }
    std::uint64_t size() const noexcept { return m_size; }
    // The most bytes the file may hold: the smaller of the user's limit and the format's.
    std::uint64_t max_bytes() const noexcept { return m_max_bytes; }
    // Reads up to `capacity` bytes at buffer; 0 at the end. Counts what it read against the limit (pipes).
    std::size_t read_some(char* buffer, std::size_t capacity);
    // Throws limit_code: the file goes on past the limit (for readers that count bytes themselves).
    [[noreturn]] void too_large() const;

private:
    // Throws limit_code: "the <kind> '<path>' is <size>, more than <limit>..." or, without a size, "goes on past
    // <limit>" (the format's reason when its limit is the one).
    [[noreturn]] void too_large_with(std::optional<std::uint64_t> size) const;

    std::filesystem::path m_path;
    std::string m_kind;
    std::uint64_t m_max_bytes; // the smaller of the user's limit and the format's
    ErrorCode m_limit_code;
    FormatLimit m_format;
    int m_fd = -1;
    bool m_regular = false;
    std::uint64_t m_size = 0;
    std::uint64_t m_read = 0;
};

// What a file's type is, in words: "a directory", "a character device", ... ("a regular file" for one).
std::string describe_file_type(unsigned mode);

} // namespace brain::detail
