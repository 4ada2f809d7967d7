#include "plugin_text.hpp"

#include "utf8.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sys/uio.h>
#include <unistd.h>
#include <vector>

namespace brain::detail {

namespace {

// Copies at most `max_bytes` bytes starting at `text` into `out`, stopping early where the memory stops being
// readable, and returns how many were copied. A plugin's text is NUL-terminated by contract, but one that is not
// may end right before an unmapped page: strnlen would fault there, so the bytes are copied by the kernel, which
// reports the fault instead of raising SIGSEGV. Where the system call is not allowed (a seccomp filter), the text
// is read directly, still bounded by max_bytes.
std::size_t copy_readable(const char* text, std::size_t max_bytes, char* out) {
    static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    // One remote piece per page, so that a fault in a later page still returns the earlier pages' bytes.
    std::vector<iovec> remote;
    auto at = reinterpret_cast<std::uintptr_t>(text);
    std::size_t left = max_bytes;
    while (left > 0) {
        const std::size_t in_page = page - (at % page);
        const std::size_t n = left < in_page ? left : in_page;
        remote.push_back({reinterpret_cast<void*>(at), n});
        at += n;
        left -= n;
    }
    iovec local{out, max_bytes};
    const ssize_t copied = ::process_vm_readv(::getpid(), &local, 1, remote.data(), remote.size(), 0);
    if (copied >= 0) return static_cast<std::size_t>(copied);
    if (errno == EFAULT) return 0; // not even the first byte is readable
    const std::size_t n = ::strnlen(text, max_bytes);
    std::memcpy(out, text, n);
    return n;
}

} // namespace

std::string plugin_text(const char* text, std::size_t max_bytes) {
    if (!text || max_bytes == 0) return {};
    std::vector<char> buffer(max_bytes);
    const std::size_t readable = copy_readable(text, max_bytes, buffer.data());
    const std::size_t length = ::strnlen(buffer.data(), readable);
    std::string out = printable_plugin_text(std::string_view(buffer.data(), length));
    if (length == max_bytes) {
        out += "... (cut at " + std::to_string(max_bytes) + " bytes)";
    } else if (readable == 0) {
        out += "(unreadable: the plugin's pointer does not lead to readable memory)";
    } else if (length == readable) {
        out += "... (cut: the plugin's text has no terminating NUL before unreadable memory)";
    }
    return out;
}

std::string printable_plugin_text(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    const auto escape = [&out](unsigned char c) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02X", c);
        out += hex;
    };
    std::size_t i = 0;
    while (i < bytes.size()) {
        const auto c = static_cast<unsigned char>(bytes[i]);
        const std::size_t n = utf8_sequence_length(bytes, i);
        if (n > 1) {
            // U+0080 to U+009F are C1 controls: some terminals take U+009B as the start of an escape sequence.
            if (c == 0xC2 && static_cast<unsigned char>(bytes[i + 1]) < 0xA0) {
                escape(c);
                escape(static_cast<unsigned char>(bytes[i + 1]));
            } else {
                out.append(bytes.substr(i, n));
            }
            i += n;
            continue;
        }
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (n == 0 || c < 0x20 || c == 0x7F) {
            escape(c);
        } else {
            out += static_cast<char>(c);
        }
        ++i;
    }
    return out;
}

} // namespace brain::detail
