// brain generate: synthetic data sets, so the project ships its own data.
#include "app_support.hpp"
#include "cli_options.hpp"
#include "commands.hpp"
#include "synthetic.hpp"

#include <brain/brain.hpp>
#include <iostream>
#include <memory>

namespace brain::app {

namespace {

struct GenerateOptions {
    std::string kind = "regression";
    std::size_t rows = 1000;
    std::string out;
    std::uint64_t seed = 42;
};

int run_generate(const GenerateOptions& o) {
    const SyntheticKind kind = parse_synthetic_kind(o.kind);
    BRAIN_CHECK_ARG(o.rows > 0, "a data set needs at least one row, found --rows 0");
    // Streamed in pieces through one OutputFile: memory stays bounded for any --rows, and a full disk or the
    // file-size limit leaves no partial file behind.
    OutputFile file(o.out);
    std::string header;
    generate_csv(kind, o.rows, o.seed, [&](std::string_view part) {
        if (header.empty()) header = std::string(part.substr(0, part.find('\n')));
        file.write(part);
    });
    std::cout << "wrote " << o.rows << " rows of " << o.kind << " data to " << o.out << " (columns: " << header
              << ")\n";
    require_standard_output(str("'", o.out, "' is left as it was"));
    file.commit();
    return exit_ok;
}

} // namespace

void add_generate_command(CLI::App& app, int& exit_code) {
    auto o = std::make_shared<GenerateOptions>();
    auto* cmd = app.add_subcommand(
        "generate",
        "Write a synthetic CSV data set, fully determined by --seed. regression: x0..x5 and y, a smooth "
        "nonlinear function plus noise; churn: a customer table (tenure_months, monthly_charges, total_charges, "
        "support_calls, contract_months, paperless_billing, senior, num_services) with label column "
        "\"churned\" (yes/no); xor: x0, x1 and y = 1 when exactly one is positive.");
    cmd->add_option("--kind", o->kind, "regression, churn or xor")
        ->capture_default_str()
        ->check(CLI::IsMember({"regression", "churn", "xor"}));
    cmd->add_option("--rows", o->rows, "number of rows")
        ->capture_default_str()
        ->check(whole_number_in(1, UINT64_MAX));
    cmd->add_option("--out", o->out,
                    "the CSV file to write (whole or not at all; a symbolic link, directory, device, FIFO or "
                    "socket is refused)")
        ->required()
        ->check(file_name());
    cmd->add_option("--seed", o->seed, "random seed")->capture_default_str()->check(whole_number(UINT64_MAX));
    cmd->callback([o, &exit_code] { exit_code = run_generate(*o); });
}

} // namespace brain::app
