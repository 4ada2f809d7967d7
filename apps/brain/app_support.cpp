#include "app_support.hpp"

#include <cstdio>
#include <iostream>

namespace brain::app {

std::string error_name(const Error& error) {
    std::string name(to_string(error.code()));
    // FeatureDisabled and MetalFeatureDisabled share one value; users of the Metal backend know the
    // chapter's name, so print that one when the message is about Metal.
    if (error.code() == ErrorCode::FeatureDisabled && name.find("Metal") == std::string::npos) {
        const std::string what = error.what();
        if (what.find("Metal") != std::string::npos || what.find("metal") != std::string::npos)
            name = "MetalFeatureDisabled";
    }
    return name;
}

std::string error_text(const Error& error) {
    const std::string name = error_name(error);
    const std::string what = error.what();
    // Some plugin messages already open with the code's name; do not print it twice.
    if (what.rfind(name + ":", 0) == 0) return what;
    return str(name, ": ", what);
}

std::string error_line(const Error& error) {
    return str("error: ", error_text(error));
}

bool is_backend_unavailable(ErrorCode code) noexcept {
    switch (code) {
    case ErrorCode::PluginNotFound:
    case ErrorCode::PluginLoadFailed:
    case ErrorCode::FeatureDisabled:
    case ErrorCode::DriverUnavailable:
    case ErrorCode::DeviceNotFound:
        return true;
    default:
        return false;
    }
}

void require_standard_output(const std::string& kept) {
    std::cout.flush();
    if (std::cout && std::fflush(stdout) == 0) return;
    BRAIN_THROW(ErrorCode::IoError, "writing to standard output failed (the disk is full or the pipe was closed); ",
                kept);
}

void write_file_atomically(const std::filesystem::path& path, const std::string& content,
                           const std::vector<std::filesystem::path>& inputs) {
    write_file_safely(path, content, inputs);
}

std::string printable(const std::string& text) {
    bool plain = text.size() <= 40 && !text.empty();
    for (char c : text) plain = plain && static_cast<unsigned char>(c) >= 0x20 && c != 0x7F && c != ' ';
    return plain ? text : quote_excerpt(text, 40);
}

std::string format_duration(std::chrono::nanoseconds d) {
    const double s = std::chrono::duration<double>(d).count();
    char buf[64];
    if (s < 1.0)
        std::snprintf(buf, sizeof buf, "%.0fms", s * 1e3);
    else if (s < 60.0)
        std::snprintf(buf, sizeof buf, "%.2fs", s);
    else
        std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s / 60), static_cast<int>(s) % 60);
    return buf;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace brain::app
