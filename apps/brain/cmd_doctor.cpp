// brain doctor: ask a backend's device what it can do before committing a run to it (chapter 11.3).
#include "app_support.hpp"
#include "cli_options.hpp"
#include "commands.hpp"

#include <brain/brain.hpp>
#include <iostream>
#include <optional>

namespace brain::app {

namespace {

struct DoctorOptions {
    std::string backend = "cuda:0";
    std::optional<std::uint64_t> budget_mib;
};

int run_doctor(const DoctorOptions& options) {
    // As in train: without --budget a device is probed under 8192 MiB and the CPU has nothing to probe; a budget
    // given for the CPU is probed too (the host memory can, or cannot, hold it).
    const bool cpu = options.backend.substr(0, options.backend.find(':')) == "cpu";
    const TrainingBackend backend =
        TrainingBackend::parse(options.backend, options.budget_mib.value_or(cpu ? 0 : 8192));
    std::optional<AcceleratorReport> report;
    try {
        report = accelerator_doctor(backend);
    } catch (const Error& e) {
        // The precise reason is the answer the user asked for; it goes to stdout too, so it shows in logs
        // that keep only stdout, but the exit status still says it failed.
        std::cout << "Doctor for " << backend.describe() << ":\n";
        std::cout.flush();
        std::cerr << error_line(e) << std::endl;
        return exit_error;
    }
    if (!report) {
        std::cout << "CPU backend; nothing to probe\n";
        return exit_ok;
    }
    // operator<< prints the chapter's four lines, plus "notes:" when a check failed.
    std::cout << *report << "\n";
    const bool all_ok = report->gemm_available && report->kernel_available && report->allocation_test;
    if (!all_ok)
        std::cout << "doctor: at least one check failed for " << backend.describe()
                  << "; a run with this budget would fail (see the notes above)\n";
    return all_ok ? exit_ok : exit_check_failed;
}

} // namespace

void add_doctor_command(CLI::App& app, int& exit_code) {
    auto options = std::make_shared<DoctorOptions>();
    auto* cmd = app.add_subcommand(
        "doctor", "Probe a backend's device under a memory budget (accelerator_doctor): name, revision, total "
                  "and free memory, and real GEMM, kernel and allocation tests, each followed by what the plugin "
                  "says it ran (a device backend allocates the whole budget, a host backend a small block of at "
                  "most 64 MiB). Prints the chapter's report, "
                  "\"CPU backend; nothing to probe\" for cpu, or \"error: <ErrorCode>: <reason>\" (exit 2) "
                  "when the device cannot be probed. Exit 1 when a check fails.");
    cmd->add_option("--backend", options->backend, "cpu, cuda:<device>, metal:<device> or <plugin>:<device>")
        ->capture_default_str();
    cmd->add_option("--budget", options->budget_mib,
                    "memory budget in MiB; a device backend's allocation test really allocates and frees it "
                    "(default: 8192 for a device; for cpu, none)")
        ->check(whole_number_in(1, UINT64_MAX));
    cmd->callback([options, &exit_code] { exit_code = run_doctor(*options); });
}

} // namespace brain::app
