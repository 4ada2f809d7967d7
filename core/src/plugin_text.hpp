// Internal: text a plugin hands the core (error messages, version, description, notes, device report fields, log
// lines), read with a bound and made safe to print.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace brain::detail {

// Longest plugin error message or log line the core keeps, in bytes; a longer one is cut, saying so.
constexpr std::size_t k_plugin_message_bytes = 4096;

// The NUL-terminated text at `text` (null: empty), read up to `max_bytes` without touching memory past the first
// unreadable byte, then escaped like printable_plugin_text.
std::string plugin_text(const char* text, std::size_t max_bytes);

// `bytes` with every control character (C0, DEL, C1) and invalid UTF-8 byte written as an escape (\n, \t, \r,
// \xNN), so that it prints on one line and cannot move the cursor or recolour a terminal.
std::string printable_plugin_text(std::string_view bytes);

// The text of a fixed char array of a plugin-filled struct: up to its first NUL or its end, escaped.
template <std::size_t N>
std::string plugin_array_text(const char (&array)[N]) {
    std::size_t n = 0;
    while (n < N && array[n] != '\0') ++n;
    return printable_plugin_text(std::string_view(array, n));
}

} // namespace brain::detail
