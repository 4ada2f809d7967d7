#include "npy_format.hpp"

#include "host_memory.hpp"

#include <algorithm>
#include <bit>
#include <brain/error.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

namespace brain::detail::npy {

namespace {

constexpr std::string_view magic = "\x93NUMPY";
// NumPy itself refuses headers past 10,000 bytes unless told otherwise; brain reads up to 64 KiB.
constexpr std::size_t max_header_bytes = 64 * 1024;

template <class... Parts>
[[noreturn]] void bad(const std::string& origin, const Parts&... parts) {
    BRAIN_THROW(ErrorCode::InvalidData, origin, ": ", parts...);
}

// A reader of the header's Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
class DictReader {
public:
    DictReader(std::string_view text, const std::string& origin) : m_text(text), m_origin(origin) {}

    void skip_space() {
        while (m_pos < m_text.size() && (m_text[m_pos] == ' ' || m_text[m_pos] == '\n' || m_text[m_pos] == '\t'))
            ++m_pos;
    }
    bool take(char c) {
        skip_space();
        if (m_pos < m_text.size() && m_text[m_pos] == c) {
            ++m_pos;
            return true;
        }
        return false;
    }
    void expect(char c, const char* what) {
        if (!take(c)) fail(std::string("expected ") + what);
    }
    std::string string_literal() {
        skip_space();
        if (m_pos >= m_text.size() || (m_text[m_pos] != '\'' && m_text[m_pos] != '"')) fail("expected a quoted name");
        const char quote = m_text[m_pos++];
        const std::size_t end = m_text.find(quote, m_pos);
        if (end == std::string_view::npos) fail("a quoted name is not closed");
        std::string out(m_text.substr(m_pos, end - m_pos));
        m_pos = end + 1;
        return out;
    }
    bool boolean() {
        skip_space();
        if (m_text.substr(m_pos).starts_with("True")) {
            m_pos += 4;
            return true;
        }
        if (m_text.substr(m_pos).starts_with("False")) {
            m_pos += 5;
            return false;
        }
        fail("expected True or False for 'fortran_order'");
    }
    std::vector<std::uint64_t> tuple() {
        expect('(', "'(' opening 'shape'");
        std::vector<std::uint64_t> out;
        while (!take(')')) {
            skip_space();
            std::uint64_t value = 0;
            std::size_t digits = 0;
            while (m_pos < m_text.size() && m_text[m_pos] >= '0' && m_text[m_pos] <= '9') {
                if (value > (std::numeric_limits<std::uint64_t>::max() >> 4)) fail("a dimension of 'shape' is too large");
                value = value * 10 + static_cast<std::uint64_t>(m_text[m_pos++] - '0');
                ++digits;
            }
            if (digits == 0) fail("expected a whole number in 'shape'");
            if (out.size() >= 32) fail("'shape' has more than 32 dimensions");
            out.push_back(value);
            if (!take(',')) {
                expect(')', "')' closing 'shape'");
                break;
            }
        }
        return out;
    }
    bool at_end() {
        skip_space();
        return m_pos == m_text.size();
    }
    [[noreturn]] void fail(const std::string& what) const {
        bad(m_origin, "the .npy header ", quote_excerpt(m_text, 120), " is not one NumPy writes (", what,
            " at offset ", m_pos, "); save the array with numpy.save");
    }

private:
    std::string_view m_text;
    const std::string& m_origin;
    std::size_t m_pos = 0;
};

template <class T>
T load(const char* src, bool swap) noexcept {
    T value;
    std::memcpy(&value, src, sizeof value);
    if (swap) {
        unsigned char bytes[sizeof(T)];
        std::memcpy(bytes, &value, sizeof value);
        for (std::size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(bytes[i], bytes[sizeof(T) - 1 - i]);
        std::memcpy(&value, bytes, sizeof value);
    }
    return value;
}

float half_to_float(std::uint16_t h) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1fu;
    std::uint32_t mantissa = h & 0x3ffu;
    std::uint32_t bits;
    if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13); // infinity or NaN
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else { // subnormal: normalise
        std::uint32_t e = 113;
        while ((mantissa & 0x400u) == 0) {
            mantissa <<= 1;
            --e;
        }
        bits = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
    }
    return std::bit_cast<float>(bits);
}

// Value i of a numeric array as a double (exact for every dtype but the widest integers).
double value_at(const Header& h, const char* src) noexcept {
    const bool swap = h.big_endian;
    switch (h.kind) {
    case 'f':
        if (h.itemsize == 2) return half_to_float(load<std::uint16_t>(src, swap));
        if (h.itemsize == 4) return load<float>(src, swap);
        return load<double>(src, swap);
    case 'i':
        if (h.itemsize == 1) return static_cast<std::int8_t>(*src);
        if (h.itemsize == 2) return load<std::int16_t>(src, swap);
        if (h.itemsize == 4) return load<std::int32_t>(src, swap);
        return static_cast<double>(load<std::int64_t>(src, swap));
    case 'u':
        if (h.itemsize == 1) return static_cast<unsigned char>(*src);
        if (h.itemsize == 2) return load<std::uint16_t>(src, swap);
        if (h.itemsize == 4) return load<std::uint32_t>(src, swap);
        return static_cast<double>(load<std::uint64_t>(src, swap));
    default: // 'b'
        return *src != 0 ? 1.0 : 0.0;
    }
}

void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// Code points of valid UTF-8 (names come from checked CSV headers or from our own arrays).
std::vector<std::uint32_t> code_points(std::string_view text) {
    std::vector<std::uint32_t> out;
    for (std::size_t i = 0; i < text.size();) {
        const auto b = static_cast<unsigned char>(text[i]);
        std::uint32_t cp = b;
        std::size_t n = 1;
        if (b >= 0xF0) {
            cp = b & 0x07u;
            n = 4;
        } else if (b >= 0xE0) {
            cp = b & 0x0Fu;
            n = 3;
        } else if (b >= 0xC0) {
            cp = b & 0x1Fu;
            n = 2;
        }
        for (std::size_t k = 1; k < n && i + k < text.size(); ++k)
            cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3Fu);
        out.push_back(cp);
        i += n;
    }
    return out;
}

std::string padded_header(const std::string& dict) {
    // magic (6) + version (2) + length (2) + dict + padding + '\n', a multiple of 64 bytes.
    std::string header = dict;
    const std::size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    std::string out(magic);
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>((header.size() >> 8) & 0xff);
    return out + header;
}

} // namespace

std::string Header::dtype_name() const {
    switch (kind) {
    case 'f':
        return "float" + std::to_string(itemsize * 8);
    case 'i':
        return "int" + std::to_string(itemsize * 8);
    case 'u':
        return "uint" + std::to_string(itemsize * 8);
    case 'b':
        return "bool";
    default:
        return "str" + std::to_string(itemsize / 4);
    }
}

std::size_t header_size(std::string_view prefix, const std::string& origin) {
    if (prefix.size() < 12 || !prefix.starts_with(magic)) return 0;
    const auto byte = [&](std::size_t i) { return static_cast<std::uint64_t>(static_cast<unsigned char>(prefix[i])); };
    const unsigned major = static_cast<unsigned char>(prefix[6]);
    if (major < 1 || major > 3) return 0; // parse_header names the version
    std::uint64_t size = 0;
    if (major == 1)
        size = 10 + (byte(8) | byte(9) << 8);
    else
        size = 12 + (byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24);
    if (size > max_header_bytes)
        bad(origin, "the .npy header is ", size, " bytes long, more than the ", max_header_bytes,
            " brain reads; the file is damaged or not an array NumPy saved");
    return static_cast<std::size_t>(size);
}

Header parse_header(std::string_view bytes, const std::string& origin, const InputLimits& limits) {
    if (bytes.size() < 10 || !bytes.starts_with(magic))
        bad(origin, "is not a NumPy .npy array (it does not start with the bytes \\x93NUMPY); save arrays with "
                    "numpy.save, or convert a CSV file with `brain convert`");
    const unsigned major = static_cast<unsigned char>(bytes[6]);
    if (major < 1 || major > 3)
        bad(origin, "is .npy format version ", major, ".", static_cast<unsigned>(static_cast<unsigned char>(bytes[7])),
            "; brain reads versions 1.0 to 3.0");
    if (bytes.size() < 12) bad(origin, "is shorter than an .npy header; the file is truncated");
    const std::size_t size = header_size(bytes, origin);
    if (size < 12) bad(origin, "has an .npy header too short to hold its description; the file is damaged");
    if (bytes.size() < size) bad(origin, "ends inside its .npy header; the file is truncated");
    const std::size_t start = major == 1 ? 10 : 12;
    const std::string_view dict = bytes.substr(start, size - start);
    for (char c : dict)
        if (c == '\0' || (static_cast<unsigned char>(c) >= 0x80 && major < 3))
            bad(origin, "the .npy header holds a byte that is not text; the file is damaged");

    Header h;
    h.data_offset = size;
    DictReader reader(dict, origin);
    bool have_descr = false, have_order = false, have_shape = false, fortran = false;
    reader.expect('{', "'{'");
    while (!reader.take('}')) {
        const std::string key = reader.string_literal();
        reader.expect(':', "':' after a key");
        if (key == "descr" && !have_descr) {
            if (reader.take('['))
                bad(origin, "holds a structured array (a dtype with named fields); brain reads plain numeric "
                            "arrays: convert it with numpy.lib.recfunctions.structured_to_unstructured(array)");
            h.descr = reader.string_literal();
            have_descr = true;
        } else if (key == "fortran_order" && !have_order) {
            fortran = reader.boolean();
            have_order = true;
        } else if (key == "shape" && !have_shape) {
            h.shape = reader.tuple();
            have_shape = true;
        } else {
            reader.fail("unexpected key " + quote_excerpt(key));
        }
        if (!reader.take(',')) {
            reader.expect('}', "'}' closing the header");
            break;
        }
    }
    if (!reader.at_end()) reader.fail("text after the closing '}'");
    if (!have_descr || !have_order || !have_shape) reader.fail("a missing key ('descr', 'fortran_order', 'shape')");

    // The dtype: byte order, kind, size.
    const std::string& d = h.descr;
    const auto unsupported = [&](const char* why) {
        bad(origin, "holds values of dtype ", quote_excerpt(d), ", ", why,
            "; brain reads float16/32/64, int8-64, uint8-64 and bool arrays (convert with "
            "array.astype(numpy.float32))");
    };
    if (d.size() < 3 || (d[0] != '<' && d[0] != '>' && d[0] != '|' && d[0] != '='))
        unsupported("which is not a plain numeric type");
    h.big_endian = d[0] == '>';
    h.kind = d[1];
    std::uint64_t count = 0;
    for (std::size_t i = 2; i < d.size(); ++i) {
        if (d[i] < '0' || d[i] > '9' || count > 1'000'000) unsupported("which is not a plain numeric type");
        count = count * 10 + static_cast<std::uint64_t>(d[i] - '0');
    }
    if (h.kind == '?') h.kind = 'b';
    if (h.kind == 'U') {
        if (count == 0) unsupported("a string type of no characters");
        h.itemsize = static_cast<unsigned>(count * 4);
    } else {
        h.itemsize = static_cast<unsigned>(count);
        const bool ok = (h.kind == 'f' && (count == 2 || count == 4 || count == 8)) ||
                        ((h.kind == 'i' || h.kind == 'u') && (count == 1 || count == 2 || count == 4 || count == 8)) ||
                        (h.kind == 'b' && count == 1);
        if (h.kind == 'S')
            bad(origin, "holds byte strings (dtype ", quote_excerpt(d),
                "); brain reads numbers as float16/32/64, "
                "int8-64, uint8-64 or bool, and names and labels as unicode strings: convert with "
                "array.astype(numpy.float32) for numbers or array.astype(str) for names");
        if (!ok) unsupported(h.kind == 'c' ? "complex numbers" : h.kind == 'O' ? "Python objects" : "which is not numeric");
    }

    if (h.shape.size() > 2)
        bad(origin, "holds a ", h.shape.size(), "-dimensional array; brain reads 1-D arrays (one column) and 2-D "
                    "arrays (rows x columns): reshape it to (rows, columns)");
    if (fortran && h.shape.size() == 2 && h.shape[0] > 1 && h.shape[1] > 1)
        bad(origin, "is stored in Fortran (column-major) order; save it in C order: numpy.save(path, "
                    "numpy.ascontiguousarray(array))");
    h.rows = h.shape.empty() ? 1 : h.shape[0];
    h.columns = h.shape.size() == 2 ? h.shape[1] : 1;
    if (h.kind != 'U' && h.columns > limits.max_columns)
        bad(origin, "has ", h.columns, " columns, more than the limit of ", limits.max_columns,
            "; raise the limit (the brain command's --max-columns, InputLimits::max_columns)");
    h.data_bytes = saturating_mul(saturating_mul(h.rows, h.columns), h.itemsize);
    if (h.data_bytes == std::numeric_limits<std::uint64_t>::max())
        bad(origin, "declares a shape whose size overflows; the header is damaged");
    return h;
}

std::size_t to_float(const Header& h, const char* src, std::size_t count, float* dst) noexcept {
    if (h.kind == 'f' && h.itemsize == 4 && !h.big_endian) {
        std::memcpy(dst, src, count * 4);
        for (std::size_t i = 0; i < count; ++i)
            if (!std::isfinite(dst[i])) return i;
        return count;
    }
    for (std::size_t i = 0; i < count; ++i) {
        const double v = value_at(h, src + i * h.itemsize);
        const auto f = static_cast<float>(v);
        if (!std::isfinite(f)) return i;
        dst[i] = f;
    }
    return count;
}

std::string value_text(const Header& h, const char* src) {
    char text[64];
    const double v = value_at(h, src);
    std::snprintf(text, sizeof text, "%.9g", v);
    return text;
}

std::string float32_header(std::uint64_t rows, std::uint64_t columns, bool one_dimensional) {
    // Appended piece by piece: GCC 12 misreports "literal" + std::string chains under -Wrestrict (bug 105329).
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
    dict.append(std::to_string(rows));
    if (one_dimensional) {
        dict.append(",)");
    } else {
        dict.append(", ");
        dict.append(std::to_string(columns));
        dict.append(")");
    }
    dict.append(", }");
    return padded_header(dict);
}

std::string text_array(const std::vector<std::string>& texts) {
    std::vector<std::vector<std::uint32_t>> points;
    std::size_t width = 1;
    for (const auto& text : texts) {
        points.push_back(code_points(text));
        width = std::max(width, points.back().size());
    }
    std::string dict = "{'descr': '<U";
    dict.append(std::to_string(width));
    dict.append("', 'fortran_order': False, 'shape': (");
    dict.append(std::to_string(texts.size()));
    dict.append(",), }");
    std::string out = padded_header(dict);
    for (const auto& cps : points)
        for (std::size_t k = 0; k < width; ++k) {
            const std::uint32_t cp = k < cps.size() ? cps[k] : 0;
            for (int b = 0; b < 4; ++b) out += static_cast<char>((cp >> (8 * b)) & 0xff);
        }
    return out;
}

std::vector<std::string> read_texts(const Header& h, std::string_view data, const std::string& origin) {
    if (h.kind != 'U' || h.shape.size() > 1)
        bad(origin, "holds ", h.dtype_name(), " values where a 1-D array of names (dtype '<U') was expected");
    const std::size_t width = h.itemsize / 4;
    std::vector<std::string> out;
    for (std::uint64_t r = 0; r < h.rows; ++r) {
        std::string text;
        std::size_t used = width;
        while (used > 0 && load<std::uint32_t>(data.data() + (r * width + used - 1) * 4, h.big_endian) == 0) --used;
        for (std::size_t k = 0; k < used; ++k) {
            const auto cp = load<std::uint32_t>(data.data() + (r * width + k) * 4, h.big_endian);
            if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                bad(origin, "name ", r, " holds code point ", cp, ", which is not a character");
            append_utf8(text, cp);
        }
        out.push_back(std::move(text));
    }
    return out;
}

} // namespace brain::detail::npy
