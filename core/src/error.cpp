#include "utf8.hpp"

#include <array>
#include <brain/error.hpp>
#include <brain/version.hpp>
#include <cstdio>

namespace brain {

namespace {
constexpr std::array<ErrorCode, 19> k_all_codes = {
    ErrorCode::InvalidArgument, ErrorCode::InvalidData,       ErrorCode::InvalidModelFile,
    ErrorCode::PluginNotFound,  ErrorCode::PluginLoadFailed,  ErrorCode::PluginAbiMismatch,
    ErrorCode::FeatureDisabled, ErrorCode::DriverUnavailable, ErrorCode::DeviceNotFound,
    ErrorCode::BudgetExceeded,  ErrorCode::AllocationFailed,  ErrorCode::KernelCompileFailed,
    ErrorCode::GemmFailed,      ErrorCode::NumericalError,    ErrorCode::Unsupported,
    ErrorCode::InvalidState,    ErrorCode::PluginFailure,     ErrorCode::IoError,
    ErrorCode::DeviceFailure,
};
} // namespace

std::string_view to_string(ErrorCode code) noexcept {
    switch (code) {
    case ErrorCode::InvalidArgument:
        return "InvalidArgument";
    case ErrorCode::InvalidData:
        return "InvalidData";
    case ErrorCode::InvalidModelFile:
        return "InvalidModelFile";
    case ErrorCode::PluginNotFound:
        return "PluginNotFound";
    case ErrorCode::PluginLoadFailed:
        return "PluginLoadFailed";
    case ErrorCode::PluginAbiMismatch:
        return "PluginAbiMismatch";
    case ErrorCode::FeatureDisabled:
        return "FeatureDisabled";
    case ErrorCode::DriverUnavailable:
        return "DriverUnavailable";
    case ErrorCode::DeviceNotFound:
        return "DeviceNotFound";
    case ErrorCode::BudgetExceeded:
        return "BudgetExceeded";
    case ErrorCode::AllocationFailed:
        return "AllocationFailed";
    case ErrorCode::KernelCompileFailed:
        return "KernelCompileFailed";
    case ErrorCode::GemmFailed:
        return "GemmFailed";
    case ErrorCode::NumericalError:
        return "NumericalError";
    case ErrorCode::Unsupported:
        return "Unsupported";
    case ErrorCode::InvalidState:
        return "InvalidState";
    case ErrorCode::PluginFailure:
        return "PluginFailure";
    case ErrorCode::IoError:
        return "IoError";
    case ErrorCode::DeviceFailure:
        return "DeviceFailure";
    }
    return "UnknownError";
}

const ErrorCode* all_error_codes(std::size_t* count) noexcept {
    if (count) *count = k_all_codes.size();
    return k_all_codes.data();
}

std::string quote_excerpt(std::string_view text, std::size_t max_bytes) {
    std::string out = "'";
    std::size_t i = 0;
    while (i < text.size() && i < max_bytes) {
        const auto c = static_cast<unsigned char>(text[i]);
        const std::size_t n = detail::utf8_sequence_length(text, i);
        if (n > 1) {
            if (i + n > max_bytes) break; // never cut a character in two
            out.append(text.substr(i, n));
            i += n;
            continue;
        }
        if (n == 0 || c < 0x20 || c == 0x7F) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02X", c);
            out += hex;
        } else {
            out += static_cast<char>(c);
        }
        ++i;
    }
    out += "'";
    if (i < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
    return out;
}

Error::Error(ErrorCode code, const std::string& message) : std::runtime_error(message), m_code(code) {}

const char* version() noexcept {
    return BRAIN_VERSION_STRING;
}

} // namespace brain
