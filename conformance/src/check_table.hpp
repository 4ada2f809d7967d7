// The conformance kit's vocabulary: a table that runs named checks (each in a process of its own) and records
// PASS/FAIL rows, the assertions a check makes, and raw outcomes of calls made straight into a plugin's table.
#pragma once

#include <brain/conformance.hpp>
#include <brain/error.hpp>
#include <brain/plugin_abi.h>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace brain::conformance {

class KitContext;
using Fact = std::pair<std::string, std::string>;

// A check that did not hold; detail says what was expected, what was found and what to do.
struct CheckFailed {
    std::string detail;
};

// Fails the running check with `detail`.
[[noreturn]] void fail_check(std::string detail);
// Fails the running check with `detail` unless `condition` holds.
void require(bool condition, const std::string& detail);
// "<ErrorCode>: <message>" of a brain::Error.
std::string error_text(const Error& e);
// The name of an error code, e.g. "InvalidArgument".
std::string code_name(ErrorCode code);
// True when `code` is one of the ABI's brain_status values.
bool is_abi_code(std::int32_t code);
// A value in scientific notation with two decimals, e.g. "3.10e-07".
std::string sci(double value);
// Norm-wise relative error of two float vectors; infinity when their sizes differ.
double relative_error(const std::vector<float>& a, const std::vector<float>& b);
// True when `text` names `name` as a word or a run of words, ignoring case, '_', '-' and blanks: "leaky_relu"
// is named by "LeakyReLU" and "leaky relu", "adam" is not named by "AdamW".
bool names(const std::string& text, const std::string& name);

// Runs fn, which must throw brain::Error(code) with a message holding every fragment; returns the message.
std::string expect_error(ErrorCode code, const std::function<void()>& fn,
                         std::initializer_list<const char*> fragments, const std::string& what);

// An error read straight from the plugin's table, before the core translates it.
struct RawOutcome {
    bool ok = true;
    std::int32_t code = 0;
    std::string message;
};

// Reads and releases a plugin error (nullptr: success).
RawOutcome take(const brain_plugin_api& api, brain_error* error);
// "success", or the code's name and the message.
std::string describe(const RawOutcome& outcome);
// The outcome must be the given error, with a known code and a message the user can act on; returns the message.
std::string require_raw_error(const RawOutcome& outcome, ErrorCode code, const std::string& what);

// What one check found: its row, and the findings it passes back to the report.
struct CheckOutcome {
    bool passed = false;
    std::string detail;
    std::vector<Fact> facts;
};

// A check: returns the success detail, or throws CheckFailed / brain::Error.
using Check = std::function<std::string(KitContext&)>;

// Runs a check in this process, turning what it throws into a failed outcome.
CheckOutcome run_here(const Check& check, KitContext& context);
// Runs a check in a child process (fork) and reads its outcome back through a pipe; a crash, an exit without an
// outcome or a run past `timeout_s` fails it, naming the signal, the status or the time.
CheckOutcome run_isolated(const Check& check, KitContext& context, unsigned timeout_s);

// The rows of one report, in the kit's fixed order.
class CheckTable {
public:
    CheckTable(ConformanceReport& report, KitContext& context);

    // Runs one check (isolated unless the options say otherwise) and records its row.
    CheckOutcome run(const char* name, const Check& check);
    // Lists every check not yet in the table as failed: not run, for `reason`.
    void skip_rest(const std::string& reason);

private:
    void add(const std::string& name, bool passed, std::string detail);

    ConformanceReport& m_report;
    KitContext& m_context;
};

} // namespace brain::conformance
