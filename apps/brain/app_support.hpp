// Helpers shared by the brain command and the examples: error names, atomic file output, durations.
#pragma once

#include <brain/brain.hpp>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace brain::app {

// Streamable parts joined into one string. Used instead of chains of "literal" + std::string, which GCC 12
// misreports under -Wrestrict (GCC bug 105329).
template <class... Parts>
std::string str(const Parts&... parts) {
    std::ostringstream out;
    (out << ... << parts);
    return out.str();
}

// The name printed for an error's code. ErrorCode::FeatureDisabled is the Metal backend's
// MetalFeatureDisabled (the chapter's name) whenever the message is about Metal.
std::string error_name(const Error& error);

// "<code name>: <message>" (the name once, even when the message already opens with it).
std::string error_text(const Error& error);

// "error: <code name>: <message>", the one line every app prints for a brain::Error.
std::string error_line(const Error& error);

// Flushes standard output and throws Error(IoError) if anything written to it could not be (a full disk, a closed
// pipe): called before an output file is committed, so that a command that fails this way replaces nothing.
// `kept` completes the message ("'model.json' is left as it was").
void require_standard_output(const std::string& kept);

// True for the errors that mean "this machine cannot run that backend" (no plugin, no driver, no device,
// Metal off Apple systems), as opposed to a failure of a run that could have worked.
bool is_backend_unavailable(ErrorCode code) noexcept;

// Write `content` to `path` through brain::write_file_safely (safe_file.hpp): whole or not at all, never over a
// symbolic link, directory, device, FIFO, socket or one of `inputs`; throws Error(IoError).
void write_file_atomically(const std::filesystem::path& path, const std::string& content,
                           const std::vector<std::filesystem::path>& inputs = {});

// A value from a file for a terminal: as it is when short and printable, otherwise quote_excerpt's form (at most
// 40 bytes, control characters as \xNN), so a hostile label can neither flood nor garble the output.
std::string printable(const std::string& text);

// A duration as "412ms", "3.10s" or "2m05s" (the chapter's style).
std::string format_duration(std::chrono::nanoseconds d);

// Seconds elapsed since `start` as a double.
double seconds_since(std::chrono::steady_clock::time_point start);

} // namespace brain::app
