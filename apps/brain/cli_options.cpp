#include "cli_options.hpp"

#include <brain/error.hpp>
#include <charconv>
#include <cmath>
#include <string>

namespace brain::app {

namespace {
// 16 TiB: far above any file this program can hold, and small enough that the byte count cannot overflow.
constexpr std::uint64_t k_max_input_mib = std::uint64_t{1} << 24;
} // namespace

CLI::Validator whole_number(std::uint64_t max) {
    return whole_number_in(0, max);
}

CLI::Validator whole_number_in(std::uint64_t min, std::uint64_t max) {
    return CLI::Validator(
        [min, max](std::string& text) -> std::string {
            const char* first = text.data();
            const char* last = first + text.size();
            if (first != last && *first == '+') ++first;
            std::uint64_t value = 0;
            const auto [end, ec] = std::from_chars(first, last, value);
            if (first == last || end != last || ec != std::errc() || value < min || value > max)
                return "expected a whole number from " + std::to_string(min) + " to " + std::to_string(max) +
                       ", found '" + text + "'";
            return {};
        },
        std::to_string(min) + ".." + std::to_string(max));
}

CLI::Validator finite_above(double low, bool or_equal) {
    const std::string range = std::string(or_equal ? ">= " : "> ") + CLI::detail::to_string(low);
    return CLI::Validator(
        [low, or_equal, range](std::string& text) -> std::string {
            double value = 0.0;
            const char* first = text.data();
            const char* last = first + text.size();
            if (first != last && *first == '+') ++first;
            const auto [end, ec] = std::from_chars(first, last, value);
            const float as_float = static_cast<float>(value);
            if (first == last || end != last || ec != std::errc() || !std::isfinite(as_float) ||
                !(or_equal ? as_float >= low : as_float > low))
                return "expected a finite number " + range + " (in float32), found '" + text + "'";
            return {};
        },
        "NUMBER " + range);
}

CLI::Validator fraction() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            double value = 0.0;
            const char* first = text.data();
            const char* last = first + text.size();
            if (first != last && *first == '+') ++first;
            const auto [end, ec] = std::from_chars(first, last, value);
            if (first == last || end != last || ec != std::errc() || !(value >= 0.0 && value < 1.0))
                return "expected a fraction from 0 up to (not including) 1, found '" + text + "'";
            return {};
        },
        "FRACTION in [0, 1)");
}

void refuse_option_without(const std::string& message) {
    throw CLI::RequiresError(message, CLI::ExitCodes::RequiresError);
}

CLI::Validator file_name() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            return text.empty() ? "expected a file name, found an empty string (an unset variable?); name the file "
                                  "or leave the option out"
                                : std::string();
        },
        "FILE");
}

std::string empty_list_item_error(const std::string& option, const std::string& value, char delimiter) {
    return option + ": expected " +
           (delimiter == ',' ? std::string("comma") : "'" + std::string(1, delimiter) + "'") +
           "-separated values, none of them empty, found " + quote_excerpt(value);
}

CLI::Option* add_column_list_option(CLI::App& cmd, const std::string& name, std::vector<std::string>& names,
                                    const std::string& help) {
    // CLI11's own delimiter cannot keep a comma inside a name, and CSV headers hold such names ("width, cm").
    const auto split = [&names, name](const CLI::results_t& given) {
        names.clear();
        for (const std::string& text : given) {
            std::string current;
            bool empty_item = text.empty();
            for (std::size_t i = 0; i < text.size(); ++i) {
                const char c = text[i];
                if (c == '\\' && i + 1 < text.size() && (text[i + 1] == ',' || text[i + 1] == '\\')) {
                    current += text[++i];
                } else if (c == ',') {
                    empty_item = empty_item || current.empty();
                    names.push_back(std::move(current));
                    current.clear();
                } else {
                    current += c;
                }
            }
            empty_item = empty_item || current.empty();
            names.push_back(std::move(current));
            if (empty_item)
                throw CLI::ValidationError(empty_list_item_error(name, text) +
                                           " (a comma inside a column's name is written \\,)");
        }
        return true;
    };
    CLI::Option* option = cmd.add_option(name, split, help);
    // As CLI11 registers a std::vector<std::string>: one name per value, any number of values and repeats.
    option->type_name("TEXT");
    option->type_size(1, 1);
    option->expected(CLI::detail::expected_max_vector_size);
    return option;
}

InputLimits InputOptions::limits() const {
    InputLimits limits;
    limits.max_file_bytes = max_input_mib << 20;
    limits.max_columns = max_columns;
    limits.max_classes = max_classes;
    limits.max_cell_bytes = max_cell_bytes;
    return limits;
}

void add_input_options(CLI::App& cmd, InputOptions& options, bool csv) {
    cmd.add_option("--max-input-mib", options.max_input_mib,
                   "largest input file read, in MiB (a larger file is refused before it is read)")
        ->capture_default_str()
        ->check(whole_number_in(1, k_max_input_mib));
    if (!csv) return;
    cmd.add_option("--max-columns", options.max_columns, "most columns a CSV header may have")
        ->capture_default_str()
        ->check(whole_number_in(1, std::uint64_t{1} << 32));
    cmd.add_option("--max-classes", options.max_classes,
                   "most distinct labels a class-label target column may hold (one output unit each)")
        ->capture_default_str()
        ->check(whole_number_in(2, std::uint64_t{1} << 32));
    cmd.add_option("--max-cell-bytes", options.max_cell_bytes, "longest CSV cell, in bytes")
        ->capture_default_str()
        ->check(whole_number_in(1, std::uint64_t{1} << 40));
}

} // namespace brain::app
