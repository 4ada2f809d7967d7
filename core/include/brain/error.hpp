// brain::Error and brain::ErrorCode: the one exception type the library throws, and the check macros that
// raise it. Codes equal the plugin ABI's brain_status values.
#pragma once

#include <brain/export.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace brain {

// Why an operation failed. Values are stable and equal brain_status in <brain/plugin_abi.h>.
enum class ErrorCode : int {
    InvalidArgument = 1,
    InvalidData = 2,
    InvalidModelFile = 3,
    PluginNotFound = 4,
    PluginLoadFailed = 5,
    PluginAbiMismatch = 6,
    FeatureDisabled = 7,
    MetalFeatureDisabled = FeatureDisabled, // the chapter's name for the Metal backend off Apple systems
    DriverUnavailable = 8,
    DeviceNotFound = 9,
    BudgetExceeded = 10,
    AllocationFailed = 11,
    KernelCompileFailed = 12,
    GemmFailed = 13,
    NumericalError = 14,
    Unsupported = 15,
    InvalidState = 16,
    PluginFailure = 17,
    IoError = 18,
    DeviceFailure = 19,
};

// The code's name, e.g. "BudgetExceeded".
BRAIN_API std::string_view to_string(ErrorCode code) noexcept;

// Every code, in numeric order (for documentation and tests).
BRAIN_API const ErrorCode* all_error_codes(std::size_t* count) noexcept;

// `text` quoted for an error message ('like this'): at most max_bytes bytes, cut at a character boundary and
// followed by "... (N bytes)" when longer; control characters and bytes that are not UTF-8 appear as \xNN. A
// hostile value can neither flood nor garble the message.
BRAIN_API std::string quote_excerpt(std::string_view text, std::size_t max_bytes = 80);

// The library's exception: a code and one message saying what was expected, what was found and what to do.
class BRAIN_API Error : public std::runtime_error {
public:
    Error(ErrorCode code, const std::string& message);
    // Why it failed.
    ErrorCode code() const noexcept { return m_code; }

private:
    ErrorCode m_code;
};

namespace detail {
// Builds a message from streamable parts; used by the BRAIN_* macros only.
template <class... Parts>
std::string concat(const Parts&... parts) {
    std::ostringstream out;
    (out << ... << parts);
    return out.str();
}
} // namespace detail

} // namespace brain

// Throw brain::Error(code, message parts...) unconditionally.
#define BRAIN_THROW(code, ...) throw ::brain::Error((code), ::brain::detail::concat(__VA_ARGS__))

// Throw brain::Error(code, message parts...) unless cond holds.
#define BRAIN_CHECK(cond, code, ...)                                                                               \
    do {                                                                                                           \
        if (!(cond)) BRAIN_THROW(code, __VA_ARGS__);                                                               \
    } while (false)

// Shorthand for argument checks.
#define BRAIN_CHECK_ARG(cond, ...) BRAIN_CHECK(cond, ::brain::ErrorCode::InvalidArgument, __VA_ARGS__)
