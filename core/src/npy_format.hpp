// Internal: NumPy's .npy format (numpy.lib.format, versions 1.0 to 3.0): the header read and checked, values of any
// plain numeric dtype converted to float32, and the header brain writes ('<f4', C order, or '<U' for names).
#pragma once

#include <brain/limits.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace brain::detail::npy {

// An array's header, checked: a numeric dtype ('f' 2/4/8, 'i' and 'u' 1/2/4/8, 'b' 1) or, for names only, 'U'.
struct Header {
    char kind = 'f';           // 'f' float, 'i' signed, 'u' unsigned, 'b' bool, 'U' UTF-32 text
    unsigned itemsize = 4;     // bytes per value ('U': 4 per character)
    bool big_endian = false;   // '>' (converted on reading)
    std::string descr;         // as written, e.g. "<f4"
    std::vector<std::uint64_t> shape;
    std::uint64_t rows = 0;    // shape[0] (1 for a 0-d array)
    std::uint64_t columns = 1; // shape[1] for 2-D arrays; 1 for 1-D ones
    std::size_t data_offset = 0;
    std::uint64_t data_bytes = 0; // rows x columns x itemsize

    // "float32", "int64", ... for messages.
    std::string dtype_name() const;
};

// Bytes needed to read the header of an array that starts with `prefix` (at least 12 bytes): 0 when `prefix` is
// not the start of an .npy array. Throws InvalidData naming `origin` for a header length past the limit.
std::size_t header_size(std::string_view prefix, const std::string& origin);

// Parses and checks the header at the start of `bytes` (its first header_size() bytes at least). Throws
// InvalidData naming `origin` and what is wrong: not an .npy file, an unsupported version, dtype (structured,
// complex, object, strings outside 'U'), Fortran order, more than two dimensions, a size that overflows.
Header parse_header(std::string_view bytes, const std::string& origin, const InputLimits& limits);

// Converts `count` values of `header`'s numeric dtype at `src` to float32 at `dst`. Returns the index of the first
// value that is not finite in float32 (NaN, infinite, or a float64 beyond float32's range), or `count`.
std::size_t to_float(const Header& header, const char* src, std::size_t count, float* dst) noexcept;

// The value at `src` (header's dtype) as text, for a message about it.
std::string value_text(const Header& header, const char* src);

// The header of a C-order float32 array (version 1.0, padded to a multiple of 64 bytes as NumPy pads it). A 1-D
// array when `one_dimensional` (columns must then be 1).
std::string float32_header(std::uint64_t rows, std::uint64_t columns, bool one_dimensional = false);

// A 1-D '<U' array of `texts` (UTF-8 in, UTF-32 little-endian out): header and data.
std::string text_array(const std::vector<std::string>& texts);
// The texts of a 1-D 'U' array's data (UTF-8); InvalidData naming `origin` for a code point that is not one.
std::vector<std::string> read_texts(const Header& header, std::string_view data, const std::string& origin);

} // namespace brain::detail::npy
