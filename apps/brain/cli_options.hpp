// Options shared by the brain command's subcommands: the bounds on untrusted input (brain::InputLimits) and the
// check that every whole-number option is one.
#pragma once

#include <CLI/CLI.hpp>
#include <brain/limits.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace brain::app {

// A whole number from 0 to `max`, written in decimal digits. CLI11 alone would read "-1" as 2^64 - 1 and clamp a
// number too large for its type; this refuses both (exit 105, naming the option and the range).
CLI::Validator whole_number(std::uint64_t max);

// As whole_number, from `min` to `max`: "--inputs 0" is "expected a whole number from 1 to ..., found '0'" (exit
// 105).
CLI::Validator whole_number_in(std::uint64_t min, std::uint64_t max);

// A number that is finite as a float32 and above `low` (at least `low` when `or_equal`): "--lr 0", "--lr nan" or
// "--lr 1e-50" (0 in float32) are usage errors naming the option (exit 105), not a library message.
CLI::Validator finite_above(double low, bool or_equal);

// A fraction in [0, 1): "--validation 1.5" or "--validation abc" is a usage error naming the option (exit 105).
CLI::Validator fraction();

// A usage error for an option given without the one that makes it act (exit 107, as CLI11's own "requires"):
// `message` names both options and says what to add or what to leave out. Never a setting silently unused.
[[noreturn]] void refuse_option_without(const std::string& message);

// A file name that is not empty: an unset shell variable ("--out $OUT") must not mean "no file" (exit 105).
CLI::Validator file_name();

// The usage error of a list option holding an empty item: "--layers: expected comma-separated values, none of them
// empty, found '4,,4'".
std::string empty_list_item_error(const std::string& option, const std::string& value, char delimiter = ',');

// Adds a list of column names (--target): split at commas, each occurrence and repeats added in order, where "\,"
// is a comma inside a name and "\\" a backslash ("--target 'width\, cm'" names the column "width, cm"); an empty
// name is a usage error naming the option (exit 105).
CLI::Option* add_column_list_option(CLI::App& cmd, const std::string& name, std::vector<std::string>& names,
                                    const std::string& help);

// The values behind --max-input-mib, --max-columns, --max-classes and --max-cell-bytes.
struct InputOptions {
    std::uint64_t max_input_mib = InputLimits{}.max_file_bytes >> 20;
    std::size_t max_columns = InputLimits{}.max_columns;
    std::size_t max_classes = InputLimits{}.max_classes;
    std::size_t max_cell_bytes = InputLimits{}.max_cell_bytes;

    // As brain::InputLimits.
    InputLimits limits() const;
};

// Registers the options on `cmd`; `csv` adds the CSV-only ones (columns, classes, cell length).
void add_input_options(CLI::App& cmd, InputOptions& options, bool csv);

} // namespace brain::app
