// brain-conformance <path/to/libbrain_x.so | backend name> [--device N] [--budget MiB] [--timeout S]
// [--in-process]: runs the conformance kit and prints a PASS/FAIL table, each row as soon as its check finishes
// (each check runs in a process of its own, so a crash fails that check, naming the signal). Exit status: 0 when
// the plugin conforms, 1 when a check failed, 2 on bad usage.
#include <CLI/CLI.hpp>
#include <brain/conformance.hpp>
#include <brain/error.hpp>
#include <brain/plugins.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

namespace {

// A file is named by a path; anything else without a slash and without ".so" is a backend name.
bool names_a_file(const std::string& target) {
    return target.find('/') != std::string::npos ||
           (target.size() > 3 && target.compare(target.size() - 3, 3, ".so") == 0);
}

// Sessions resolve the backend by name, so the file under test must come first on the search path. Done before
// anything loads a plugin, while the process is still single-threaded.
void put_first_on_search_path(const std::filesystem::path& file) {
    std::error_code ec;
    const auto dir = std::filesystem::absolute(file, ec).parent_path();
    std::string value = dir.string();
    if (const char* old = std::getenv("BRAIN_PLUGIN_PATH"); old && *old) value += std::string(":") + old;
    ::setenv("BRAIN_PLUGIN_PATH", value.c_str(), 1);
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"Run the brain conformance kit against a backend plugin and print a PASS/FAIL table"};
    std::string target;
    brain::ConformanceOptions options;
    app.add_option("plugin", target, "path to libbrain_<name>.so, or a backend name on the plugin search path")
        ->required();
    app.add_option("--device", options.device, "device index to test")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    app.add_option("--budget", options.budget_mib, "memory budget in MiB for sessions and the doctor probe")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    app.add_option("--timeout", options.check_timeout_s, "seconds one check may run before it is killed and failed")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    bool in_process = false;
    app.add_flag(
        "--in-process", in_process,
        "run every check in this process, one after the other (for a debugger); a crash then ends the run");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }

    options.isolate = !in_process;
    // Each row as soon as it is known: a run that dies still shows how far it got.
    options.on_check = [](const brain::ConformanceCheck& check) {
        std::cout << brain::format_conformance_row(check) << std::flush;
    };
    try {
        brain::ConformanceReport report;
        const bool file = names_a_file(target);
        std::cout << "brain conformance kit: plugin \"" << (file ? brain::plugin_name_from_file(target) : target)
                  << "\"";
        if (file) std::cout << " (" << target << ")";
        std::cout << "\n" << std::flush;
        if (file) {
            put_first_on_search_path(target);
            report = brain::run_conformance_file(target, options);
        } else {
            report = brain::run_conformance(target, options);
        }
        std::cout << brain::format_conformance_summary(report);
        return report.passed() ? 0 : 1;
    } catch (const brain::Error& e) {
        std::cerr << "brain-conformance: " << brain::to_string(e.code()) << ": " << e.what() << "\n";
        return 2;
    }
}
