// Internal: reading an untrusted input file whole, with its size bounded before and during the read.
#pragma once

#include <brain/error.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace brain::detail {

// The contents of `path`, a regular file or a pipe (FIFO, `<(command)`, /dev/stdin on a pipe). A directory, a
// device (/dev/zero) or a socket is refused at once with IoError naming what it is; a file larger than
// max_bytes is refused with `limit_code` before it is read (regular files) or as soon as the read passes the
// limit (pipes). `kind` ("CSV file", "model file") names the file in messages.
std::string read_input_file(const std::filesystem::path& path, std::string_view kind, std::uint64_t max_bytes,
                            ErrorCode limit_code);

// What a file's type is, in words: "a directory", "a character device", ... ("a regular file" for one).
std::string describe_file_type(unsigned mode);

} // namespace brain::detail
