// Optional header-only C++ helper for plugin authors: error objects, the exception guard every entry point
// needs, and struct-size-aware copying. Include it in exactly the plugin's own translation units; nothing in it
// is exported, so two plugins that both use it never clash.
#pragma once

#include <algorithm>
#include <brain/plugin_abi.h>
#include <cstring>
#include <exception>
#include <new>
#include <sstream>
#include <string>
#include <utility>

// The plugin-side definition of the opaque error. Each plugin has its own (hidden visibility).
struct brain_error {
    int32_t code;
    std::string message;
};

namespace brain::sdk {

// Exception a plugin throws internally; guard() turns it into a brain_error at the ABI boundary.
class Failure : public std::exception {
public:
    Failure(brain_status code, std::string message) : m_code(code), m_message(std::move(message)) {}
    // The ABI code this failure crosses as.
    brain_status code() const noexcept { return m_code; }
    // The sentence the user will see.
    const char* what() const noexcept override { return m_message.c_str(); }

private:
    brain_status m_code;
    std::string m_message;
};

// Throw Failure(code, message) with the parts streamed into one message: fail(code, "got ", n, " rows").
template <class... Parts>
[[noreturn]] void fail(brain_status code, const Parts&... parts) {
    std::ostringstream message;
    (message << ... << parts);
    throw Failure(code, message.str());
}

// Allocate an error for the core; the core releases it through the table's error_destroy. Never throws:
// when even that allocation fails it returns a static out-of-memory error that error_destroy ignores.
inline brain_error* out_of_memory_error() noexcept {
    static brain_error error{BRAIN_ERR_ALLOCATION_FAILED, "host memory ran out while reporting an error"};
    return &error;
}

inline brain_error* make_error(brain_status code, const std::string& message) noexcept {
    try {
        return new brain_error{static_cast<int32_t>(code), message};
    } catch (...) {
        return out_of_memory_error();
    }
}

// Run fn and convert anything it throws into a brain_error*; nullptr on success. Wrap every entry point in it.
template <class Fn>
brain_error* guard(Fn&& fn) noexcept {
    try {
        std::forward<Fn>(fn)();
        return nullptr;
    } catch (const Failure& failure) {
        return make_error(failure.code(), failure.what());
    } catch (const std::bad_alloc&) {
        return make_error(BRAIN_ERR_ALLOCATION_FAILED, "host memory allocation failed inside the plugin");
    } catch (const std::exception& e) {
        return make_error(BRAIN_ERR_PLUGIN_FAILURE, std::string("unexpected plugin failure: ") + e.what());
    } catch (...) {
        return make_error(BRAIN_ERR_PLUGIN_FAILURE, "unexpected plugin failure (non-standard exception)");
    }
}

// Table entries for errors made by make_error.
inline int32_t error_code(const brain_error* error) { return error ? error->code : BRAIN_OK; }
inline const char* error_message(const brain_error* error) { return error ? error->message.c_str() : ""; }
inline void error_destroy(brain_error* error) {
    if (error != out_of_memory_error()) delete error;
}

// Copy a string into a fixed-size char array of a report, always NUL-terminated.
template <std::size_t N>
void copy_string(char (&dst)[N], const std::string& src) noexcept {
    const std::size_t n = std::min(src.size(), N - 1);
    std::memcpy(dst, src.data(), n);
    dst[n] = '\0';
}

// Read a caller's struct of possibly older (smaller) size into a zero-initialised current one.
template <class T>
T read_struct(const T* src) {
    T out{};
    if (!src) throw Failure(BRAIN_ERR_INVALID_ARGUMENT, "a required descriptor pointer was null");
    const std::size_t n = std::min(src->struct_size, sizeof(T));
    if (n < sizeof(std::size_t)) throw Failure(BRAIN_ERR_INVALID_ARGUMENT, "a descriptor has struct_size 0");
    std::memcpy(&out, src, n);
    out.struct_size = sizeof(T);
    return out;
}

// Fill a caller-owned struct whose struct_size may be smaller than ours: copy only what both know.
template <class T>
void write_struct(T* dst, const T& value) {
    if (!dst) throw Failure(BRAIN_ERR_INVALID_ARGUMENT, "a required output pointer was null");
    const std::size_t n = std::min(dst->struct_size, sizeof(T));
    const std::size_t caller_size = dst->struct_size;
    std::memcpy(dst, &value, n);
    dst->struct_size = caller_size;
}

} // namespace brain::sdk
