// The bytes of a NumPy .npy file (format 1.0) with a given header dict, for tests that write files NumPy would
// write, or damaged ones.
#pragma once

#include <string>

namespace brain::test {

// `dict` (e.g. "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") padded as NumPy pads it, then `data`.
inline std::string npy_file_bytes(const std::string& dict, const std::string& data) {
    std::string header = dict;
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string out = "\x93NUMPY";
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    return out + header + data;
}

} // namespace brain::test
