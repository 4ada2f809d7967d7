// brain: the command-line front end of the library (docs/cli.md).
#include "app_support.hpp"
#include "commands.hpp"

#include <CLI/CLI.hpp>
#include <brain/brain.hpp>
#include <cstdio>
#include <iostream>

int main(int argc, char** argv) {
    CLI::App app{"brain " + std::string(brain::version()) +
                 ": train dense neural networks on the CPU or on GPUs through run-time backend plugins.\n"
                 "Backends: cpu, cuda:<device>, metal:<device>, <plugin-name>:<device>. Nothing ever falls back "
                 "to the CPU silently.\nRun `brain <command> --help` for a command's options; docs/cli.md has "
                 "examples."};
    app.name("brain");
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("brain ") + brain::version());
    app.footer("Exit status: 0 success, 1 a reported check failed (doctor), 2 an error (printed as "
               "\"error: <ErrorCode>: <message>\"), 105-110 bad command-line usage.");

    int exit_code = brain::app::exit_ok;
    brain::app::add_generate_command(app, exit_code);
    brain::app::add_train_command(app, exit_code);
    brain::app::add_predict_command(app, exit_code);
    brain::app::add_estimate_command(app, exit_code);
    brain::app::add_doctor_command(app, exit_code);
    brain::app::add_plugins_command(app, exit_code);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const brain::Error& e) {
        std::cout.flush();
        std::cerr << brain::app::error_line(e) << std::endl;
        return brain::app::exit_error;
    } catch (const std::exception& e) {
        // Not a brain::Error (e.g. std::bad_alloc): still one line, still non-zero.
        std::cout.flush();
        std::cerr << "error: " << e.what() << std::endl;
        return brain::app::exit_error;
    }
    return exit_code;
}
