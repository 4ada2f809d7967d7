// brain: the command-line front end of the library (docs/cli.md).
#include "app_support.hpp"
#include "cli_options.hpp"
#include "commands.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <brain/brain.hpp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// CLI11's exit codes folded into the documented range 105-110 (docs/cli.md, "Exit status").
int usage_exit_code(const CLI::ParseError& e) {
    using Code = CLI::ExitCodes;
    switch (static_cast<Code>(e.get_exit_code())) {
    case Code::Success:
        return brain::app::exit_ok; // --help, --version
    case Code::ConversionError:
    case Code::ValidationError:
        return brain::app::exit_bad_value;
    case Code::RequiredError:
        return brain::app::exit_missing_option;
    case Code::RequiresError:
        return brain::app::exit_option_needs_another;
    case Code::ExcludesError:
        return brain::app::exit_options_exclude;
    case Code::ExtrasError:
    case Code::OptionNotFound:
        return brain::app::exit_unknown_argument;
    default:
        return brain::app::exit_other_usage;
    }
}

// Ctrl-C or a kill during a long write (generate, predict --out) removes the temporary file, then ends the process
// as the signal would have.
extern "C" void on_termination_signal(int signal) {
    brain::remove_temporary_output_files();
    std::signal(signal, SIG_DFL);
    std::raise(signal);
}

void remove_temporaries_on_termination() {
    for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
        struct sigaction current {};
        // A signal the caller chose to ignore (nohup) stays ignored.
        if (::sigaction(signal, nullptr, &current) != 0 || current.sa_handler == SIG_IGN) continue;
        struct sigaction handler {};
        handler.sa_handler = on_termination_signal;
        sigemptyset(&handler.sa_mask);
        ::sigaction(signal, &handler, nullptr);
    }
}

// Edits (insertions, deletions, substitutions) between two words, for "did you mean".
std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

// CLI11 answers a misspelt command ("brain trian") with "A subcommand is required": name the word, the closest
// command and the list instead. Empty when the first argument is an option or a command.
std::string unknown_command_message(const CLI::App& app, int argc, char** argv) {
    if (argc < 2 || argv[1][0] == '-') return {};
    const std::string word = argv[1];
    std::string names, closest;
    std::size_t best = SIZE_MAX;
    for (const CLI::App* command : app.get_subcommands({})) {
        if (command->get_name() == word) return {};
        names += (names.empty() ? "" : ", ") + command->get_name();
        if (const std::size_t d = edit_distance(word, command->get_name()); d < best) {
            best = d;
            closest = command->get_name();
        }
    }
    return "unknown command " + brain::quote_excerpt(word) +
           (best <= 2 ? " (did you mean '" + closest + "'?)" : std::string()) + "; the commands are: " + names;
}

// CLI11 drops the empty items of a comma-separated value, so "--layers 4,,4" would build two layers and
// "--layers ," would be "1 required ... missing": refuse an empty item in the value as given, naming the option.
// Empty when every list value is whole.
std::string empty_list_item_message(const CLI::App& app, int argc, char** argv) {
    if (argc < 3) return {};
    const CLI::App* command = nullptr;
    for (const CLI::App* c : app.get_subcommands({}))
        if (c->get_name() == argv[1]) command = c;
    if (command == nullptr) return {};
    for (int i = 2; i < argc; ++i) {
        const std::string token = argv[i];
        if (token == "--") break;
        if (token.rfind("--", 0) != 0) continue;
        const auto equals = token.find('=');
        const std::string name = token.substr(0, equals);
        const CLI::Option* option = command->get_option_no_throw(name);
        if (option == nullptr || option->get_delimiter() == '\0' || option->get_type_size_max() == 0) continue;
        if (equals == std::string::npos && i + 1 >= argc) continue;
        const std::string value = equals != std::string::npos ? token.substr(equals + 1) : std::string(argv[i + 1]);
        const char d = option->get_delimiter();
        const std::string twice(2, d);
        if (value.empty() || value.front() == d || value.back() == d || value.find(twice) != std::string::npos)
            return brain::app::empty_list_item_error(name, value, d);
    }
    return {};
}

// CLI11's "Could not convert: --rank = abc" in the style of the other usage errors: "--rank: expected a whole
// number, found 'abc'", the expected kind read from the option's type.
std::string conversion_message(const CLI::App& app, const CLI::ConversionError& e) {
    const std::string what = e.what();
    const std::string prefix = "Could not convert: ";
    const auto equals = what.find(" = ");
    if (what.rfind(prefix, 0) != 0 || equals == std::string::npos) return what;
    const std::string name = what.substr(prefix.size(), equals - prefix.size());
    const std::string value = what.substr(equals + 3);
    std::string type;
    for (const CLI::App* command : app.get_subcommands())
        if (const CLI::Option* option = command->get_option_no_throw(name)) type = option->get_type_name();
    const std::string expected = type.find("FLOAT") != std::string::npos  ? "a number"
                                 : type.find("UINT") != std::string::npos ? "a whole number of at least 0"
                                 : type.find("INT") != std::string::npos  ? "a whole number"
                                                                          : "a value of its kind";
    return name + ": expected " + expected + ", found " + brain::quote_excerpt(value);
}

int report(const brain::Error& e) {
    std::cout.flush();
    std::cerr << brain::app::error_line(e) << std::endl;
    return brain::app::exit_error;
}

} // namespace

int main(int argc, char** argv) {
    // A write past the file-size limit (ulimit -f) must be an error with a message, not a silent kill.
    std::signal(SIGXFSZ, SIG_IGN);
    // Likewise a closed pipe (`brain predict ... | head`): exit 2 with IoError, not a silent SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    remove_temporaries_on_termination();

    CLI::App app{"brain " + std::string(brain::version()) +
                 ": train dense neural networks on the CPU or on GPUs through run-time backend plugins.\n"
                 "Backends: cpu, cuda:<device>, metal:<device>, <plugin-name>:<device>. Nothing ever falls back "
                 "to the CPU silently.\nRun `brain <command> --help` for a command's options; docs/cli.md has "
                 "examples."};
    app.name("brain");
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("brain ") + brain::version());
    app.footer("Exit status: 0 success; 1 a reported check failed (doctor); 2 an error, printed as \"error: "
               "<ErrorCode>: <message>\"; 105-110 bad command-line usage: 105 a value that is not valid, 106 a "
               "required option missing, 107 an option given without one it needs, 108 options that exclude each "
               "other, 109 an unknown option or extra argument, 110 an option given the wrong number of values (or "
               "any other usage "
               "error).");

    int exit_code = brain::app::exit_ok;
    brain::app::add_generate_command(app, exit_code);
    brain::app::add_train_command(app, exit_code);
    brain::app::add_predict_command(app, exit_code);
    brain::app::add_export_command(app, exit_code);
    brain::app::add_import_command(app, exit_code);
    brain::app::add_convert_command(app, exit_code);
    brain::app::add_evaluate_command(app, exit_code);
    brain::app::add_estimate_command(app, exit_code);
    brain::app::add_doctor_command(app, exit_code);
    brain::app::add_plugins_command(app, exit_code);

    // Every failure ends as one line naming a documented ErrorCode, in the user's terms: no standard-library
    // exception text reaches the terminal.
    if (const std::string unknown = unknown_command_message(app, argc, argv); !unknown.empty()) {
        std::cerr << unknown << "\nRun with --help for more information." << std::endl;
        return brain::app::exit_unknown_argument;
    }
    if (const std::string empty = empty_list_item_message(app, argc, argv); !empty.empty()) {
        std::cerr << empty << "\nRun with --help for more information." << std::endl;
        return brain::app::exit_bad_value;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ConversionError& e) {
        std::cout.flush();
        std::cerr << conversion_message(app, e) << "\nRun with --help for more information." << std::endl;
        return usage_exit_code(e);
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        // --help and --version succeed only if what they print arrives.
        if (usage_exit_code(e) == brain::app::exit_ok && (!std::cout.flush() || std::fflush(stdout) != 0))
            return report(
                brain::Error(brain::ErrorCode::IoError,
                             "writing to standard output failed (the disk is full or the pipe was closed)"));
        return usage_exit_code(e);
    } catch (const brain::Error& e) {
        return report(e);
    } catch (const std::bad_alloc&) {
        return report(brain::Error(brain::ErrorCode::AllocationFailed,
                                   "the command ran out of host memory; use smaller inputs or a smaller network, "
                                   "or raise the process's memory limit"));
    } catch (const std::length_error&) {
        return report(brain::Error(brain::ErrorCode::AllocationFailed,
                                   "an input is too large to hold in memory; use smaller inputs or a smaller "
                                   "network"));
    } catch (const std::exception&) {
        return report(brain::Error(brain::ErrorCode::InvalidState,
                                   "the command stopped on an unexpected internal failure; please report it with "
                                   "the command line that caused it"));
    }
    // Output that could not be written (a full disk behind a pipe, /dev/full) is an error, not a success.
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0)
        return report(brain::Error(brain::ErrorCode::IoError,
                                   "writing to standard output failed (the disk is full or the pipe was closed); "
                                   "the output is incomplete"));
    return exit_code;
}
