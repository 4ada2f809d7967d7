// brain::conformance: the whole plugin contract checked against one plugin, for plugin authors' own test suites,
// brain-conformance and brain's tests. Its own library (libbrain_conformance.so, CMake target brain::conformance,
// find_package(brain COMPONENTS conformance)) on top of brain::core.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#if defined(_WIN32)
#if defined(BRAIN_CONFORMANCE_BUILDING)
#define BRAIN_CONFORMANCE_API __declspec(dllexport)
#else
#define BRAIN_CONFORMANCE_API __declspec(dllimport)
#endif
#else
#define BRAIN_CONFORMANCE_API __attribute__((visibility("default")))
#endif

namespace brain {

// One row of the conformance table: what was checked, whether it held, and the evidence or the reason.
struct ConformanceCheck {
    std::string name; // short check name, e.g. "budget refusal"
    bool passed = false;
    std::string detail; // measured values on success; expected, found and what to do on failure
};

// Where and how hard to test.
struct ConformanceOptions {
    int device = 0;                 // device index under test
    std::uint64_t budget_mib = 256; // memory budget of the sessions and of the doctor probe
    // Each check in a child process of its own (fork), its row passed back through a pipe: a crash or a hang
    // inside the plugin fails that one check, naming the signal, and the kit goes on. The calling process never
    // loads the plugin, so a device runtime that does not survive fork (CUDA) starts fresh in each check. false
    // runs every check in this process (for a debugger); a crash then ends the kit.
    bool isolate = true;
    unsigned check_timeout_s = 300; // an isolated check still running after this is killed and failed
    // Called with each row as soon as it is known, in table order (e.g. to print rows as they finish).
    std::function<void(const ConformanceCheck&)> on_check;
};

// Every check run against one plugin, in order. A check that could not run (the plugin did not load, no
// device) is listed as failed with the reason, so the table always covers the whole contract.
struct ConformanceReport {
    std::string plugin;         // backend name
    std::filesystem::path path; // the file tested (empty if it was not found)
    std::vector<ConformanceCheck> checks;
    std::string capabilities;             // what the plugin runs, as brain::describe prints it (empty: unknown)
    std::vector<std::string> unsupported; // what its capabilities exclude ("gelu", "bf16"); empty: nothing
    // True when every check passed.
    bool passed() const noexcept {
        for (const auto& c : checks)
            if (!c.passed) return false;
        return !checks.empty();
    }
};

// The kit's checks by name, in table order.
BRAIN_CONFORMANCE_API const std::vector<std::string>& conformance_check_names();

// Run the kit against backend `name` as the plugin search path resolves it (the CPU plugin is the reference).
BRAIN_CONFORMANCE_API ConformanceReport run_conformance(const std::string& name,
                                                        const ConformanceOptions& options = {});

// Run the kit against an explicit libbrain_<name>.so. Sessions resolve the backend by name, so the file must be
// the one the search path finds first: with isolate (the default) each check's process puts the file's directory
// first in BRAIN_PLUGIN_PATH; without it the caller does (brain-conformance does either way).
BRAIN_CONFORMANCE_API ConformanceReport run_conformance_file(const std::filesystem::path& plugin_file,
                                                             const ConformanceOptions& options = {});

// One row, "  PASS  name      detail", names padded to the widest of conformance_check_names().
BRAIN_CONFORMANCE_API std::string format_conformance_row(const ConformanceCheck& check);
// The report as an aligned PASS/FAIL table with what the plugin declares it lacks and a summary line.
BRAIN_CONFORMANCE_API std::string format_conformance_table(const ConformanceReport& report);
// The table's closing lines alone: what the plugin declares it lacks, and the summary.
BRAIN_CONFORMANCE_API std::string format_conformance_summary(const ConformanceReport& report);

} // namespace brain
