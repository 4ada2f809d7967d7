// Internal: the rule a backend name follows (the x of libbrain_x.so), shared by every place that takes one.
#pragma once

#include <brain/error.hpp>
#include <cstddef>
#include <string>
#include <string_view>

namespace brain::detail {

// The longest backend name: the core reads at most this many bytes of the name a plugin's table declares.
constexpr std::size_t k_max_plugin_name_bytes = 64;

// The rule, as messages state it.
constexpr const char* k_plugin_name_rule = "a backend name is 1 to 64 lower-case letters, digits, '_' and '-'";

// Empty when `name` can name a backend; otherwise what is wrong with it, in the user's terms.
inline std::string plugin_name_problem(std::string_view name) {
    if (name.empty()) return "it is empty";
    if (name.size() > k_max_plugin_name_bytes) return "it is " + std::to_string(name.size()) + " bytes long";
    for (const char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok) return "it has the character " + quote_excerpt(std::string_view(&c, 1));
    }
    return {};
}

} // namespace brain::detail
